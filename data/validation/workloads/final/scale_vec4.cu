// y = a * x, 4 consecutive floats per thread. The float4 path is taken only when both pointers are
// 16-byte aligned (as PyTorch's vectorized kernels check); otherwise the same 4 floats are read and
// written one at a time (lines 19 and 21). The workload passes x and y offset by ONE float from their
// allocations (a view such as t[1:]), so every thread takes the scalar path.
extern "C" __global__ void scale_vec4(const float* __restrict__ x, float* __restrict__ y, float a,
                                      long long n4) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    const bool aligned = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15ull) == 0;
    if (aligned) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x *= a; v.y *= a; v.z *= a; v.w *= a;
        reinterpret_cast<float4*>(y)[i] = v;
    } else {
        const float* p = x + 4 * i;
        float* q = y + 4 * i;
        float v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = p[k];
#pragma unroll
        for (int k = 0; k < 4; ++k) q[k] = a * v[k];
    }
}
