// Even and odd lanes take different compute loops: odd threads iterate a quadratic map, even
// threads a different affine+square map. Every warp holds both kinds of lanes, so it executes both
// loops one after the other with half of its lanes masked off each time.
#ifndef STEPS
#define STEPS 128
#endif
extern "C" __global__ void even_odd_paths(const float* __restrict__ x, float* __restrict__ y, long n) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (threadIdx.x & 1) {
#pragma unroll 4
        for (int k = 0; k < STEPS; ++k) v = fmaf(v, v, -0.25f) * 0.5f;
    } else {
#pragma unroll 4
        for (int k = 0; k < STEPS; ++k) {
            v = fmaf(v, 0.75f, 0.125f);
            v = fmaf(v, v, -0.375f);
            v = v * 0.9f;
        }
    }
    y[i] = v;
}
