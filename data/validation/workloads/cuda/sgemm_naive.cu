// Naive FP32 matrix multiply C = A * B (row-major, n x n): one output per thread, each thread
// reads a full row of A and a full column of B straight from global memory, no tiling, so every
// FFMA needs two global loads (A[row][k] is a warp-wide broadcast, B[k][col] a 128-byte row piece).
extern "C" __global__ void sgemm_naive(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int n) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += A[(long)row * n + k] * B[(long)k * n + col];
    C[(long)row * n + col] = acc;
}
