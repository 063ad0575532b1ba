// Textbook FP32 matrix multiply C = A * B (row-major, n x n) with 16x16 shared-memory tiles.
// All multiply-adds run as FFMA on the FP32 pipes; the tensor cores (HMMA/HGMMA, TF32 or bf16)
// are never used, so the kernel reaches a small fraction of what the GPU can do for matmul.
#define TS 16
extern "C" __global__ void sgemm_smem_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                            float* __restrict__ C, int n) {
    __shared__ float As[TS][TS];
    __shared__ float Bs[TS][TS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TS + ty, col = blockIdx.x * TS + tx;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TS) {
        As[ty][tx] = A[(long)row * n + t + tx];
        Bs[ty][tx] = B[(long)(t + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TS; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(long)row * n + col] = acc;
}
