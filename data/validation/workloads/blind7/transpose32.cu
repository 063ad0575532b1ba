// out = in^T for an n x n FP32 matrix (n a multiple of 32), through a 32x32 shared-memory tile, block 32x8.
// The tile is written row-wise and read column-wise: tile[threadIdx.x][...] has a stride of 32 floats between
// the lanes of a warp, so all 32 lanes hit the same bank (32-way conflict on every shared load).
#define TILE 32
extern "C" __global__ void transpose32(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[TILE][TILE];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
