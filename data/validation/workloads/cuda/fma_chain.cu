// One dependent FMA chain per element (x = x * a + b, CHAIN times; each FMA needs the previous
// result), launched with 128 threads per SM (one block of 4 warps per SM, one warp per scheduler)
// over a grid-stride loop. Each warp waits the FMA latency between instructions and nothing else
// is ready to issue: few warps, no instruction-level parallelism.
#ifndef CHAIN
#define CHAIN 256
#endif
extern "C" __global__ void fma_chain(const float* __restrict__ x, float* __restrict__ y, long n,
                                     float a, float b) {
#pragma unroll 1
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        float v = x[i];
#pragma unroll
        for (int k = 0; k < CHAIN; ++k) v = fmaf(v, a, b);
        y[i] = v;
    }
}
