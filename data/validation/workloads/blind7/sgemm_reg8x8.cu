// C = A @ B, FP32, row-major, M, N multiples of 128, K a multiple of 8. Register-tiled: a 256-thread block
// computes a 128x128 tile of C from 128x8 / 8x128 tiles of A / B in shared memory; each thread owns an 8x8
// micro-tile (rows ty*4+{0..3} and 64+ty*4+{0..3}, columns tx*4+{0..3} and 64+tx*4+{0..3}) and reads its
// operands with four float4 shared loads per k: 64 FFMA per 4 LDS.128.
#define BM 128
#define BN 128
#define BK 8
extern "C" __global__ void __launch_bounds__(256, 2)
sgemm_reg8x8(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];  // A tile, transposed (k-major)
  __shared__ __align__(16) float Bs[BK][BN];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const float* Ab = A + (size_t)blockIdx.y * BM * K;
  const float* Bb = B + (size_t)blockIdx.x * BN;
  const int a_row = tid >> 1, a_col = (tid & 1) << 2;   // one float4 of the 128x8 A tile per thread
  const int b_row = tid >> 5, b_col = (tid & 31) << 2;  // one float4 of the 8x128 B tile per thread
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 av = *reinterpret_cast<const float4*>(Ab + (size_t)a_row * K + k0 + a_col);
    As[a_col + 0][a_row] = av.x;
    As[a_col + 1][a_row] = av.y;
    As[a_col + 2][a_row] = av.z;
    As[a_col + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) =
        *reinterpret_cast<const float4*>(Bb + (size_t)(k0 + b_row) * N + b_col);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[k][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = blockIdx.y * BM + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    float* c = C + (size_t)r * N + blockIdx.x * BN;
    *reinterpret_cast<float4*>(c + tx * 4) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(c + 64 + tx * 4) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}
