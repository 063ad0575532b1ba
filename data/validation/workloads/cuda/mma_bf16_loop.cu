// Tensor-core throughput loop: every warp loads one bf16 A fragment and eight B fragments once, then
// issues ITERS x 8 independent mma.sync.m16n8k16 (bf16 in, fp32 accumulate) on register operands.
// No memory traffic inside the loop: the only unit it can saturate is the tensor (HMMA) pipe.
// The same kernel is launched on a tiny grid (8 blocks on a 132-SM GPU) and on a full grid.
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

extern "C" __global__ void mma_bf16_loop(const unsigned* __restrict__ A, const unsigned* __restrict__ B,
                                         float* __restrict__ C, int iters) {
    const int lane = threadIdx.x & 31;
    const long warp = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
    unsigned a[4], b[16];
    for (int i = 0; i < 4; ++i) a[i] = A[i * 32 + lane];           // packed bf16 pairs
    for (int j = 0; j < 16; ++j) b[j] = B[j * 32 + lane];
    float acc[8][4];
    for (int t = 0; t < 8; ++t)
        for (int r = 0; r < 4; ++r) acc[t][r] = 0.0f;
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int t = 0; t < 8; ++t) mma16816(acc[t], a, b[2 * t], b[2 * t + 1]);   // 8 independent MMAs
    }
    float s = 0.0f;
    for (int t = 0; t < 8; ++t) s += acc[t][0] + acc[t][1] + acc[t][2] + acc[t][3];
    C[warp * 32 + lane] = s;
}
