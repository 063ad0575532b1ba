// FP32 matrix multiply C = A * B (row-major, n x n, n a multiple of 128) with register tiling:
// a 128x128 block tile, BK = 8, 256 threads, each thread computing an 8x8 outer product per k
// from two float4 pairs of shared loads (4 LDS.128 feed 64 FFMA). The operands are reused from
// registers; the math still runs as FFMA on the FP32 pipes (no tensor cores).
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
extern "C" __global__ void __launch_bounds__(256) sgemm_regtile(const float* __restrict__ A,
                                                                const float* __restrict__ B,
                                                                float* __restrict__ C, int n) {
    __shared__ __align__(16) float As[BK][BM];   // A tile stored transposed: As[k][m]
    __shared__ __align__(16) float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;      // 16 x 16 threads, 8 x 8 outputs each
    const long brow = (long)blockIdx.y * BM, bcol = (long)blockIdx.x * BN;
    const int a_r = tid / 2, a_c = (tid % 2) * 4;      // A tile 128 x 8: one float4 per thread
    const int b_r = tid / 32, b_c = (tid % 32) * 4;    // B tile 8 x 128: one float4 per thread
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < n; k0 += BK) {
        const float4 av = *reinterpret_cast<const float4*>(&A[(brow + a_r) * n + k0 + a_c]);
        As[a_c + 0][a_r] = av.x;
        As[a_c + 1][a_r] = av.y;
        As[a_c + 2][a_r] = av.z;
        As[a_c + 3][a_r] = av.w;
        *reinterpret_cast<float4*>(&Bs[b_r][b_c]) =
            *reinterpret_cast<const float4*>(&B[(long)(k0 + b_r) * n + bcol + b_c]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[TM], rb[TN];
            *reinterpret_cast<float4*>(&ra[0]) = *reinterpret_cast<const float4*>(&As[k][ty * TM]);
            *reinterpret_cast<float4*>(&ra[4]) = *reinterpret_cast<const float4*>(&As[k][ty * TM + 4]);
            *reinterpret_cast<float4*>(&rb[0]) = *reinterpret_cast<const float4*>(&Bs[k][tx * TN]);
            *reinterpret_cast<float4*>(&rb[4]) = *reinterpret_cast<const float4*>(&Bs[k][tx * TN + 4]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        float* crow = &C[(brow + ty * TM + i) * n + bcol + tx * TN];
        *reinterpret_cast<float4*>(&crow[0]) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(&crow[4]) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
