// y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w, FP32, rows of D floats (D a multiple of 2048).
// One pass: a 512-thread block per row holds the whole row in registers (D / 2048 float4 per thread),
// reduces the sum of squares, then scales and writes from registers: the row is read from DRAM once.
#define THREADS 512
#define PER (D / 4 / THREADS)
extern "C" __global__ void __launch_bounds__(THREADS, 2)
rmsnorm_1pass(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, float eps) {
  const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * D);
  float4* yr = reinterpret_cast<float4*>(y + (size_t)blockIdx.x * D);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  float4 v[PER];
#pragma unroll
  for (int k = 0; k < PER; ++k) v[k] = xr[threadIdx.x + k * THREADS];  // the only read of the row
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < PER; ++k) ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __shared__ float red[THREADS / 32];
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  float tot = 0.f;
#pragma unroll
  for (int k = 0; k < THREADS / 32; ++k) tot += red[k];
  const float r = rsqrtf(tot / D + eps);
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const float4 g = w4[threadIdx.x + k * THREADS];
    yr[threadIdx.x + k * THREADS] =
        make_float4(v[k].x * r * g.x, v[k].y * r * g.y, v[k].z * r * g.z, v[k].w * r * g.w);
  }
}
