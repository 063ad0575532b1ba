// A bank of 32 Horner recurrences per thread: acc[j] = acc[j] * x[k] + w[j] over a broadcast input
// stream x[k] (k < K), with 32 per-thread coefficients w[j] (64 live floats: ~70 registers needed).
// As captured, __launch_bounds__(256, 4) asks for 4 blocks of 256 threads (1024 threads) per SM, which
// caps the kernel at 65536 / 1024 = 64 registers (the cap __launch_bounds__(1024) gives): the compiler
// spills part of acc[] / wr[] to local memory (STL/LDL in the loop, beside the FFMAs).
// Control (-DMIN_BLOCKS=1): __launch_bounds__(256, 1), no register cap below what the code needs.
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 4
#endif
extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS)
spill_cap(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n, int K) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float wr[32], acc[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) { wr[j] = w[j * n + i]; acc[j] = 0.0f; }
    for (int k = 0; k < K; ++k) {
        const float v = x[k];
#pragma unroll
        for (int j = 0; j < 32; ++j) acc[j] = fmaf(acc[j], v, wr[j]);
    }
#pragma unroll
    for (int j = 0; j < 32; ++j) y[j * n + i] = acc[j];
}
