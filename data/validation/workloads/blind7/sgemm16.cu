// C = A @ B, FP32, row-major, M, N, K multiples of 16. 16x16 shared-memory tiles, one output per thread,
// no register tiling: every FFMA of the inner loop reads its two operands from shared memory.
#define TS 16
extern "C" __global__ void sgemm_tiled16(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[TS][TS];
  __shared__ float Bs[TS][TS];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    As[ty][tx] = A[(size_t)row * K + k0 + tx];
    Bs[ty][tx] = B[(size_t)(k0 + ty) * N + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TS; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[(size_t)row * N + col] = acc;
}
