// All-pairs gravitational accelerations (softened), FP32, one body per thread, the j-bodies staged
// through shared memory one block-sized tile at a time (GPU Gems 3, ch. 31). pos[i] = (x, y, z, mass).
extern "C" __global__ void nbody_acc(const float4* __restrict__ pos, float4* __restrict__ acc, int n, float eps2) {
  extern __shared__ float4 sh[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 p = pos[i];
  float ax = 0.f, ay = 0.f, az = 0.f;
  for (int tile = 0; tile < n; tile += blockDim.x) {
    sh[threadIdx.x] = pos[tile + threadIdx.x];
    __syncthreads();
#pragma unroll 8
    for (int j = 0; j < blockDim.x; ++j) {
      float4 q = sh[j];
      float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
      float r2 = dx * dx + dy * dy + dz * dz + eps2;
      float inv = rsqrtf(r2);
      float s = q.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  acc[i] = make_float4(ax, ay, az, 0.f);
}
