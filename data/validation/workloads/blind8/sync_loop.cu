// Sum of squared distances from each x[i] to all ny values y[j], y staged through shared memory.
// As captured (TILE 1): thread 0 stages ONE y value per iteration, so every y value costs two
// __syncthreads() for one FADD + one FFMA of work per thread (blocks of 1024 threads).
// Control (-DTILE=1024, = blockDim.x): every thread stages one value, one pair of barriers per 1024 values.
#ifndef TILE
#define TILE 1
#endif
extern "C" __global__ void sync_loop(const float* __restrict__ x, const float* __restrict__ y,
                                     float* __restrict__ out, int ny) {
    __shared__ float s[TILE];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float xi = x[i];
    float acc = 0.0f;
    for (int j0 = 0; j0 < ny; j0 += TILE) {
        if (threadIdx.x < TILE) s[threadIdx.x] = y[j0 + threadIdx.x];
        __syncthreads();
#pragma unroll 8
        for (int t = 0; t < TILE; ++t) {
            const float d = xi - s[t];
            acc = fmaf(d, d, acc);
        }
        __syncthreads();
    }
    out[i] = acc;
}
