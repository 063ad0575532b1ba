// Strided gather: thread i reads in[i * stride] with stride = 32 floats (128 bytes).
// Neighbouring lanes of a warp hit different 32-byte sectors, so one warp-wide 4-byte load needs
// 32 sectors instead of the 4 a contiguous read needs: 8x the memory traffic for the same data.
extern "C" __global__ void strided_gather(const float* __restrict__ in, float* __restrict__ out,
                                          long n, int stride) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i * stride] * 2.0f + 1.0f;
}
