// Horner evaluation of one degree-`deg` polynomial at 8 points per thread (y = p(x), FP32), deg % 8 == 0.
// The same routine as poly_smem.cu (coefficients staged in dynamic shared memory sized by the caller,
// lines 7-8), but the k loop is unrolled by 8 with the 8 coefficients read ahead (line 16): 64 independent
// FFMA (8 chains x 8 steps, lines 18-20) per 8 shared loads, enough independent work to cover the shared-load latency.
extern "C" __global__ void poly_eval_x8(const float* __restrict__ coef, int deg, const float* __restrict__ x,
                                        float* __restrict__ y) {
    extern __shared__ float c[];
    for (int k = threadIdx.x; k <= deg; k += blockDim.x) c[k] = coef[k];
    __syncthreads();
    const long long base = (long long)blockIdx.x * blockDim.x * 8 + threadIdx.x;
    float v[8], a[8], ck[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) { v[j] = x[base + j * blockDim.x]; a[j] = c[deg]; }
    for (int k0 = deg - 8; k0 >= 0; k0 -= 8) {
#pragma unroll
        for (int u = 0; u < 8; ++u) ck[u] = c[k0 + 7 - u];
#pragma unroll
        for (int u = 0; u < 8; ++u)
#pragma unroll
            for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], v[j], ck[u]);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) y[base + j * blockDim.x] = a[j];
}
