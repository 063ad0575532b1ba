// Triad a = b + s * c over n floats, n not a multiple of 4: the body moves float4 vectors, and a
// scalar remainder loop handles the last n % 4 elements. The remainder loop is in the binary (4-byte
// LDG/STG) but only 3 threads of the whole grid execute it once: the executed access width is 16 bytes.
extern "C" __global__ void triad_tail(float* __restrict__ a, const float* __restrict__ b,
                                      const float* __restrict__ c, float s, long n) {
    const long n4 = n / 4;
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 x = reinterpret_cast<const float4*>(b)[i];
        const float4 y = reinterpret_cast<const float4*>(c)[i];
        reinterpret_cast<float4*>(a)[i] =
            make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
    }
    // scalar remainder: elements [4 * n4, n), one per thread of the first threads of the grid
    for (long j = 4 * n4 + i; j < n; j += (long)gridDim.x * blockDim.x) {
        a[j] = b[j] + s * c[j];
    }
}
