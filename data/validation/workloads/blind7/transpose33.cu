// The fix for transpose32.cu: the same transpose with the tile padded to 33 columns, so the column read
// tile[threadIdx.x][...] walks 32 different banks.
#define TILE 32
extern "C" __global__ void transpose33(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += 8) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
