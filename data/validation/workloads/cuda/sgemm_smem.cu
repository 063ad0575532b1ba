// FP32 matrix multiply C = A * B (row-major, n x n) with 32x32 shared-memory tiles and ONE output
// per thread (1024-thread blocks). Global traffic is cut 32x, but the inner loop still reads both
// operands of every FFMA from shared memory (As[ty][k] broadcast, Bs[k][tx]): about one shared
// load per FFMA, so the shared-memory pipe, not the FMA pipe, sets the pace.
#define TS 32
extern "C" __global__ void sgemm_smem(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int n) {
    __shared__ float As[TS][TS];
    __shared__ float Bs[TS][TS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TS) {
        As[ty][tx] = A[(long)row * n + t + tx];
        Bs[ty][tx] = B[(long)(t + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(long)row * n + col] = acc;
}
