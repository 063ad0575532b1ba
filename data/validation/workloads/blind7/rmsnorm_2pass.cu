// y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w, FP32, rows of D floats (D a multiple of 512).
// Two passes over the row: pass 1 reads it for the sum of squares, pass 2 reads it again to scale.
// One 128-thread block per row.
#define THREADS 128
extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm_2pass(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, float eps) {
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * D);
  float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * D);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  float ss = 0.f;
#pragma unroll 4
  for (int i = threadIdx.x; i < D / 4; i += THREADS) {  // pass 1: read the row
    const float4 v = xr[i];
    ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __shared__ float red[THREADS / 32];
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  float tot = 0.f;
#pragma unroll
  for (int k = 0; k < THREADS / 32; ++k) tot += red[k];
  const float r = rsqrtf(tot / D + eps);
#pragma unroll 4
  for (int i = threadIdx.x; i < D / 4; i += THREADS) {  // pass 2: read the row again, scale, write
    const float4 v = xr[i];
    const float4 g = w4[i];
    yr[i] = make_float4(v.x * r * g.x, v.y * r * g.y, v.z * r * g.z, v.w * r * g.w);
  }
}
