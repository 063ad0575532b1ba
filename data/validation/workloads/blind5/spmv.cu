// CSR sparse matrix-vector product y = A x, irregular row lengths (1..63 non-zeros, uniform, mean 32).
// spmv_csr_scalar: one thread per row (the first version everyone writes). Lane r walks row r's
// segment of val/col: at each step the 32 lanes of a warp read 32 addresses that are ~32 elements apart.
// spmv_csr_vector: one warp per row (the control): lanes read consecutive elements, shuffle-reduce.
extern "C" __global__ void spmv_csr_scalar(int nrows, const int* __restrict__ rowptr, const int* __restrict__ col,
                                           const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows) return;
    float s = 0.0f;
    for (int j = rowptr[r]; j < rowptr[r + 1]; ++j)
        s += val[j] * x[col[j]];
    y[r] = s;
}

extern "C" __global__ void spmv_csr_vector(int nrows, const int* __restrict__ rowptr, const int* __restrict__ col,
                                           const float* __restrict__ val, const float* __restrict__ x, float* __restrict__ y) {
    int r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (r >= nrows) return;
    float s = 0.0f;
    for (int j = rowptr[r] + lane; j < rowptr[r + 1]; j += 32)
        s += val[j] * x[col[j]];
    for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) y[r] = s;
}
