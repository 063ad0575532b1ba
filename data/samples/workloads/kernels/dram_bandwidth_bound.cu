// STREAM triad a = b + s * c over 3 x 512 MB with 16-byte (float4) loads and stores:
// one coalesced load per operand, no reuse, nothing to do but move bytes. Near peak DRAM bandwidth
// is the best this kernel can do (verdict: healthy; the advice is to move fewer bytes).
extern "C" __global__ void stream_triad(float4* __restrict__ a, const float4* __restrict__ b,
                                        const float4* __restrict__ c, float s, long n4) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 x = b[i], y = c[i];
        a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
    }
}
