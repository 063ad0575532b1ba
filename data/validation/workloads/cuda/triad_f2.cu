// STREAM triad a = b + s * c with 8-byte (float2) loads and stores, one vector per thread.
// A warp-wide 8-byte access covers 256 contiguous bytes (8 sectors), all of them used.
extern "C" __global__ void triad_f2(float2* __restrict__ a, const float2* __restrict__ b,
                                    const float2* __restrict__ c, float s, long n2) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n2) {
        const float2 x = b[i], y = c[i];
        a[i] = make_float2(x.x + s * y.x, x.y + s * y.y);
    }
}
