// Horner evaluation of one degree-`deg` polynomial at 8 points per thread (y = p(x), FP32).
// The coefficients are staged in dynamic shared memory (lines 8-9). The caller sizes that buffer for the
// largest degree the routine supports (MAX_DEG = 40959: 160 KB), not for this call's deg + 1 = 513
// coefficients, so only one 256-thread block fits per SM (8 warps: 12.5% occupancy).
// Each thread keeps 8 independent Horner chains (lines 15-18): 8 FFMA per shared load.
extern "C" __global__ void poly_eval(const float* __restrict__ coef, int deg, const float* __restrict__ x,
                                     float* __restrict__ y) {
    extern __shared__ float c[];
    for (int k = threadIdx.x; k <= deg; k += blockDim.x) c[k] = coef[k];
    __syncthreads();
    const long long base = (long long)blockIdx.x * blockDim.x * 8 + threadIdx.x;
    float v[8], a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) { v[j] = x[base + j * blockDim.x]; a[j] = c[deg]; }
    for (int k = deg - 1; k >= 0; --k) {
        const float ck = c[k];
#pragma unroll
        for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], v[j], ck);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) y[base + j * blockDim.x] = a[j];
}
