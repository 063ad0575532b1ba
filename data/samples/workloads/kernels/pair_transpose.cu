// Out-of-place transpose of an n x n float matrix; block = 32 x 8, each block moves a 32x32 tile.
// TILED=0 (before): reads are coalesced but each warp's 32 writes go to 32 different rows of out
//                   (stride n floats): 32 sectors per store request instead of 4.
// TILED=1 (after):  the tile is staged through shared memory (padded to 33 columns so the
//                   column read is conflict-free) and written back row by row: coalesced both ways.
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n) {
#if TILED
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(long)(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) out[(long)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
#else
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) out[(long)x * n + (y + j)] = in[(long)(y + j) * n + x];
#endif
}
