// Partial column sums of an n-column float matrix over 32-row strips; block = 32 x 32.
// The warp with threadIdx.y = r reads row r of the 32x32 block coalesced and stores it TRANSPOSED
// into shared memory (tile[col][row], i.e. down a column of the tile) so that afterwards warp c can
// read column c of the input as one contiguous row of the tile and reduce it with shuffles.
// PAD=0 (before): tile[32][32]; the column store puts 32 lanes 128 bytes apart in one bank:
//                 a 32-way conflict on every shared store.
// PAD=1 (after):  tile[32][33]; the extra column shifts each row by one bank: conflict-free.
extern "C" __global__ void smem_column_sum(const float* __restrict__ in, float* __restrict__ out, int ncols) {
    __shared__ float tile[32][32 + PAD];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long row = blockIdx.y * 32 + ty;
    const int col = blockIdx.x * 32 + tx;
    tile[tx][ty] = in[row * ncols + col];          // column write into the tile
    __syncthreads();
    float v = tile[ty][tx];                        // row read: conflict-free either way
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (tx == 0) out[(long)blockIdx.y * ncols + blockIdx.x * 32 + ty] = v;
}
