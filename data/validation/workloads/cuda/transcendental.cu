// Special-function-heavy map: each element goes through ITERS rounds of sin, exp, log and rsqrt
// (the fast intrinsics: MUFU.SIN, MUFU.EX2, MUFU.LG2, MUFU.RSQ on the XU pipe, a few FMULs
// around them). Little memory traffic, no matrix structure.
#ifndef ITERS
#define ITERS 16
#endif
extern "C" __global__ void special_functions(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
#pragma unroll 4
    for (int k = 0; k < ITERS; ++k) {
        const float s = __sinf(v);
        const float e = __expf(-0.5f * s);
        const float l = __logf(1.0f + e);
        v = rsqrtf(l + 0.75f) + s;
    }
    y[i] = v;
}
