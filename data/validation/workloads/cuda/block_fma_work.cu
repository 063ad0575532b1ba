// Long compute-bound blocks: 1024 threads, 12 independent FMA chains per thread (enough ILP to keep
// the FMA pipe busy with one block per SM). The kernel needs more than 32 registers per thread,
// so one 1024-thread block fits per SM; the grid has 145 blocks on 132 SMs (1.1 waves): the last
// 13 blocks run alone as a second wave while 119 SMs idle, as long as the whole first wave.
#ifndef CHAINS
#define CHAINS 12
#endif
extern "C" __global__ void __launch_bounds__(1024, 1) block_fma_work(const float* __restrict__ coef,
                                                                     float* __restrict__ out, int iters) {
    float a[CHAINS], c[CHAINS], v[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) {
        a[j] = coef[(threadIdx.x + j) & 63];
        c[j] = coef[64 + ((threadIdx.x + 3 * j) & 63)];
        v[j] = (float)j * 0.01f + threadIdx.x * 1e-4f;
    }
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) v[j] = fmaf(v[j], a[j], c[j]);
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) s += v[j];
    out[blockIdx.x * (long)blockDim.x + threadIdx.x] = s;
}
