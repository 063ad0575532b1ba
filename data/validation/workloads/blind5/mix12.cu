// y_v = W x_v for 2^24 independent 12-vectors (SoA layout: x[k * nvec + v]), W a 12 x 12 matrix shared by all.
// mix12: W is passed as a global pointer. It is loop-invariant in the grid-stride loop, so the compiler
// loads all 144 weights once into registers (no __launch_bounds__, nothing caps the register count).
// mix12_const (the control): the same code reading W from __constant__ memory (FFMA takes it from the
// constant bank, no registers held).
__constant__ float Wc[144];

extern "C" __global__ void mix12(const float* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int nvec) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += gridDim.x * blockDim.x) {
        float in[12];
#pragma unroll
        for (int k = 0; k < 12; ++k) in[k] = x[k * nvec + v];
#pragma unroll
        for (int i = 0; i < 12; ++i) {
            float a = 0.0f;
#pragma unroll
            for (int k = 0; k < 12; ++k) a = fmaf(W[i * 12 + k], in[k], a);
            y[i * nvec + v] = a;
        }
    }
}

extern "C" __global__ void mix12_const(const float* __restrict__ W, const float* __restrict__ x, float* __restrict__ y, int nvec) {
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += gridDim.x * blockDim.x) {
        float in[12];
#pragma unroll
        for (int k = 0; k < 12; ++k) in[k] = x[k * nvec + v];
#pragma unroll
        for (int i = 0; i < 12; ++i) {
            float a = 0.0f;
#pragma unroll
            for (int k = 0; k < 12; ++k) a = fmaf(Wc[i * 12 + k], in[k], a);
            y[i * nvec + v] = a;
        }
    }
}
