// y = half(a * x + b): FP16 in, FP16 out, FP32 math (an input normalisation in half precision).
// half_scale: one element (2 bytes) per thread.  half_scale_v8: eight elements (16 bytes) per thread.
__device__ __forceinline__ float h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short f2h(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

extern "C" __global__ void half_scale(const unsigned short* __restrict__ x, unsigned short* __restrict__ y,
                                      float a, float b, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = f2h(a * h2f(x[i]) + b);
}

extern "C" __global__ void half_scale_v8(const uint4* __restrict__ x, uint4* __restrict__ y,
                                         float a, float b, long long n8) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n8) {
    uint4 v = x[i];
    unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      unsigned int lo = f2h(a * h2f((unsigned short)(w[k] & 0xffffu)) + b);
      unsigned int hi = f2h(a * h2f((unsigned short)(w[k] >> 16)) + b);
      w[k] = lo | (hi << 16);
    }
    y[i] = make_uint4(w[0], w[1], w[2], w[3]);
  }
}
