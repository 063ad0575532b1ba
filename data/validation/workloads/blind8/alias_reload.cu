// Per-column scale and shift of an m x n row-major matrix: y[j][i] = alpha[i] * x[j][i] + beta[i].
// As captured the pointers are plain (no __restrict__): the store to y may alias alpha, beta or x, so
// alpha[i] and beta[i] are reloaded after every store and the next row's x load cannot move above it
// (one load in flight per thread, each waiting on the previous store).
// Control (-DRESTRICT=__restrict__): the same code with __restrict__ pointers (alpha[i], beta[i] hoisted
// into registers, loads of several rows batched).
#ifndef RESTRICT
#define RESTRICT
#endif
extern "C" __global__ void alias_reload(float* RESTRICT y, const float* RESTRICT x, const float* RESTRICT alpha,
                                        const float* RESTRICT beta, int n, int m) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int j = 0; j < m; ++j) y[j * n + i] = alpha[i] * x[j * n + i] + beta[i];
}
