// y = A x for a tall row-major FP32 matrix A (M rows of N floats, N % 128 == 0) and a vector x of N floats.
// matvec_rows: one warp per row; lanes read consecutive float4s of the row (line 16), a shuffle
//              butterfly sums the 32 partial dot products. Each row is 1 KB read once.
// matvec_cols: one thread per row; at step j every lane of a warp reads A[row][j] (line 31), i.e. one
//              column of 32 consecutive rows: 32 addresses N*4 bytes apart per load instruction.
extern "C" __global__ void matvec_rows(const float* __restrict__ A, const float* __restrict__ x,
                                       float* __restrict__ y, int M, int N) {
    const int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (row >= M) return;
    const float4* a = reinterpret_cast<const float4*>(A + (size_t)row * N);
    const float4* xv = reinterpret_cast<const float4*>(x);
    float acc = 0.0f;
#pragma unroll 2
    for (int j = lane; j < N / 4; j += 32) {
        const float4 av = a[j];
        const float4 xx = xv[j];
        acc += av.x * xx.x + av.y * xx.y + av.z * xx.z + av.w * xx.w;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

extern "C" __global__ void matvec_cols(const float* __restrict__ A, const float* __restrict__ x,
                                       float* __restrict__ y, int M, int N) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M) return;
    const float* a = A + (size_t)row * N;
    float acc = 0.0f;
    for (int j = 0; j < N; ++j) acc += a[j] * x[j];
    y[row] = acc;
}
