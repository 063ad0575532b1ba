// Evaluate a degree-DEG polynomial at every input value with Horner's rule (p = p * x + c_k).
// Coefficients are compile-time constants (FFMA immediates); each thread evaluates 4 values
// (one float4) as 4 independent chains. 2 * DEG FLOPs per 8 bytes moved: FMA-bound by design.
// There is no matrix structure here: no operand is reused across a k-loop.
#ifndef DEG
#define DEG 128
#endif
extern "C" __global__ void horner_poly(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n4) return;
    const float4 v = x[i];
    float p0 = 1.0f, p1 = 1.0f, p2 = 1.0f, p3 = 1.0f;
#pragma unroll
    for (int k = 1; k <= DEG; ++k) {
        const float c = 1.0f / (float)(k + 1) - 0.25f;
        p0 = fmaf(p0, v.x, c);
        p1 = fmaf(p1, v.y, c);
        p2 = fmaf(p2, v.z, c);
        p3 = fmaf(p3, v.w, c);
    }
    y[i] = make_float4(p0, p1, p2, p3);
}
