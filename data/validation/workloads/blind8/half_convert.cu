// An iterated affine update y = a * y + b on FP16 data stored as half2 pairs (one 32-bit word, two
// elements, per thread), `steps` steps. The helpers are the PTX that cuda_fp16.h's __half2float /
// __float2half_rn / __hfma2 compile to (written out so NVRTC needs no header).
// As captured: each element of each step is converted to float (cvt.f32.f16), updated with an FP32 FMA
// and rounded back to half (cvt.rn.f16.f32): HADD2.F32 x2, FFMA x2, F2FP.PACK_AB per step for the two elements.
// Control (-DNATIVE=1): the same update on the packed pair with one fma.rn.f16x2 (HFMA2) per step.
__device__ __forceinline__ float h2f(unsigned short h) {          // __half2float
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short f2h(float f) {          // __float2half_rn
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ unsigned hfma2(unsigned a, unsigned b, unsigned c) {   // __hfma2
    unsigned d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
extern "C" __global__ void half_convert(const unsigned* __restrict__ x, unsigned* __restrict__ y,
                                        unsigned ab2_a, unsigned ab2_b, int steps) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = x[i];                                   // two halves
#ifdef NATIVE
    for (int k = 0; k < steps; ++k) v = hfma2(v, ab2_a, ab2_b);
#else
    const float a = h2f((unsigned short)(ab2_a & 0xffffu)), b = h2f((unsigned short)(ab2_b & 0xffffu));
    unsigned short lo = (unsigned short)(v & 0xffffu), hi = (unsigned short)(v >> 16);
    for (int k = 0; k < steps; ++k) {
        lo = f2h(fmaf(a, h2f(lo), b));
        hi = f2h(fmaf(a, h2f(hi), b));
    }
    v = (unsigned)lo | ((unsigned)hi << 16);
#endif
    y[i] = v;
}
