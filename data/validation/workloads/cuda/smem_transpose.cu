// Tiled matrix transpose through shared memory (32x32 tiles, 32x8 threads). Loads and stores to
// global memory are coalesced; the tile is written by rows and read back by columns. With PAD=0 a
// column of tile[32][32] lies in one bank (32-way conflict on every shared load); PAD=1 pads each
// row to 33 floats so a column spreads over all 32 banks.
#ifndef PAD
#define PAD 0
#endif
#define TILE 32
extern "C" __global__ void smem_transpose(const float* __restrict__ in, float* __restrict__ out,
                                          int rows, int cols) {
    __shared__ float tile[TILE][TILE + PAD];
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8)
        tile[threadIdx.y + j][threadIdx.x] = in[(long)(y + j) * cols + x];
    __syncthreads();
    const int tx = blockIdx.y * TILE + threadIdx.x;
    const int ty = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += 8)
        out[(long)(ty + j) * rows + tx] = tile[threadIdx.x][threadIdx.y + j];
}
