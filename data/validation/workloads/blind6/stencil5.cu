// 5-point Jacobi step on an FP32 nx x ny grid (zero outside), one output per thread, the block's tile
// plus a one-cell halo staged in shared memory.  copy_f4: the same bytes moved by a float4 copy (control).
#define BX 32
#define BY 16

extern "C" __global__ void stencil5(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
  __shared__ float t[BY + 2][BX + 2];
  int gx = blockIdx.x * BX + threadIdx.x, gy = blockIdx.y * BY + threadIdx.y;
  int lx = threadIdx.x + 1, ly = threadIdx.y + 1;
  bool inside = gx < nx && gy < ny;
  size_t c = (size_t)gy * nx + gx;
  t[ly][lx] = inside ? in[c] : 0.f;
  if (threadIdx.x == 0) t[ly][0] = (inside && gx > 0) ? in[c - 1] : 0.f;
  if (threadIdx.x == BX - 1) t[ly][BX + 1] = (inside && gx + 1 < nx) ? in[c + 1] : 0.f;
  if (threadIdx.y == 0) t[0][lx] = (inside && gy > 0) ? in[c - nx] : 0.f;
  if (threadIdx.y == BY - 1) t[BY + 1][lx] = (inside && gy + 1 < ny) ? in[c + nx] : 0.f;
  __syncthreads();
  if (inside)
    out[c] = 0.2f * (t[ly][lx] + t[ly][lx - 1] + t[ly][lx + 1] + t[ly - 1][lx] + t[ly + 1][lx]);
}

extern "C" __global__ void copy_f4(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) out[i] = in[i];
}
