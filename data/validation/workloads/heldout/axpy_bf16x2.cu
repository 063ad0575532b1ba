// y = a * x + y on BF16 vectors stored as bf16x2 pairs: each thread reads one 32-bit word of x and
// one of y (two bf16 elements each) and computes both with one packed fma.rn.bf16x2 (HFMA2.BF16).
// 4-byte accesses, consecutive across lanes: 128 bytes per warp request.
extern "C" __global__ void axpy_bf16x2(const unsigned int* __restrict__ x, unsigned int* __restrict__ y,
                                       unsigned int a2, long long n2) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n2) return;
    unsigned int d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a2), "r"(x[i]), "r"(y[i]));
    y[i] = d;
}
