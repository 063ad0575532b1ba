// Block partial sums of x (n4 float4s): grid-stride loop, four independent float4 loads per iteration, then
// warp shuffles and one shared-memory step; partial[b] = this block's sum (gridDim.x partials in all).
extern "C" __global__ void __launch_bounds__(256)
reduce_shfl(const float4* __restrict__ x, float* __restrict__ partial, long long n4) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.f;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    const float4 a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    acc += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w)) + ((c.x + c.y) + (c.z + c.w)) +
           ((d.x + d.y) + (d.z + d.w));
  }
  for (; i < n4; i += stride) {
    const float4 a = x[i];
    acc += (a.x + a.y) + (a.z + a.w);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  __shared__ float w[32];
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0) w[wid] = acc;
  __syncthreads();
  if (wid == 0) {
    acc = (lane < (int)(blockDim.x >> 5)) ? w[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) partial[blockIdx.x] = acc;
  }
}
