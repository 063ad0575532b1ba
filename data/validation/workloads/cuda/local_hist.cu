// Per-thread histogram of the eight 4-bit digits of each 32-bit input word. The 16-bin array is
// indexed by data (the digit), so ptxas cannot keep it in registers: it lives in local memory and
// every increment is a local load plus a local store (LDL/STL) through L1.
extern "C" __global__ void digit_histogram(const unsigned* __restrict__ in, unsigned* __restrict__ out,
                                           long n) {
    unsigned h[16];
#pragma unroll
    for (int b = 0; b < 16; ++b) h[b] = 0;
    const long tid = blockIdx.x * (long)blockDim.x + threadIdx.x;
    const long nthreads = (long)gridDim.x * blockDim.x;
    for (long i = tid; i < n; i += nthreads) {
        const unsigned v = in[i];
#pragma unroll
        for (int d = 0; d < 8; ++d) h[(v >> (4 * d)) & 15u] += 1;
    }
#pragma unroll
    for (int b = 0; b < 16; ++b) out[b * nthreads + tid] = h[b];
}
