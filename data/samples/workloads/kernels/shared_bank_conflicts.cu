// Batched 32x32 matrix-vector products. Each block stages one 32x32 matrix in shared memory
// (row-major tile[32][32], no padding) and its 8 warps multiply it by 8 different vectors.
// Lane r computes row r, so at each step the warp reads one COLUMN of the tile: 32 addresses
// 128 bytes apart that all fall in the same bank -> a 32-way bank conflict on every load
// (32 shared-memory wavefronts where 1 would do).
extern "C" __global__ void batched_matvec_smem(const float* __restrict__ A, const float* __restrict__ x,
                                               float* __restrict__ y) {
    __shared__ float tile[32][32];
    __shared__ float xs[8][32];
    const int lane = threadIdx.x, w = threadIdx.y;           // block = 32 x 8
    const long b = blockIdx.x;
    for (int r = w; r < 32; r += 8) tile[r][lane] = A[b * 1024 + r * 32 + lane];
    xs[w][lane] = x[(b * 8 + w) * 32 + lane];
    __syncthreads();
    float acc = 0.0f;
#pragma unroll 8
    for (int k = 0; k < 32; ++k) {
        const int c = (k + w) & 31;                          // warp-uniform column index
        acc += tile[lane][c] * xs[w][c];                     // column read: 32-way conflict
    }
    y[(b * 8 + w) * 32 + lane] = acc;
}
