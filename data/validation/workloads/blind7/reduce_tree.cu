// Block partial sums of x: one element per thread, then a shared-memory tree (sequential addressing) with a
// __syncthreads() at every level down to 1. partial[b] = sum of x[b*256 .. b*256+255].
#define BS 256
extern "C" __global__ void reduce_tree(const float* __restrict__ x, float* __restrict__ partial, long long n) {
  __shared__ float s[BS];
  const unsigned t = threadIdx.x;
  const long long i = (long long)blockIdx.x * BS + t;
  s[t] = (i < n) ? x[i] : 0.f;
  __syncthreads();
  for (unsigned stride = BS / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}
