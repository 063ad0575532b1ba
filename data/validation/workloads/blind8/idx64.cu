// Each warp sums `iters` rows of a row-major table (row pitch ld floats), lane l reading column l of
// each row; the row number is a hash of the warp and iteration: a gather from an L1-resident table.
// As captured, index_t is long long: the row hash, row * ld + col and the address are 64-bit integer
// math (IMAD.WIDE.U32 + IMAD for the product, IADD3/IADD3.X, LEA/LEA.HI.X) in every iteration.
// Control (-DINDEX32=1): index_t is int (the table is 1 MB: 32-bit offsets suffice).
#ifdef INDEX32
typedef int index_t;
#else
typedef long long index_t;
#endif
extern "C" __global__ void idx64(const float* __restrict__ a, float* __restrict__ out, index_t ld,
                                 index_t row_mask, int iters) {
    const index_t warp = (blockIdx.x * (index_t)blockDim.x + threadIdx.x) / 32;
    const index_t col = threadIdx.x % 32;
    float acc = 0.0f;
    for (index_t k = 0; k < iters; ++k) {
        const index_t row = (k * 97 + warp * 13) & row_mask;
        acc += a[row * ld + col];
    }
    out[warp * 32 + col] = acc;
}
