// Dilated 16-tap sum over a 16 MB vector: y[i] = sum_r x[(i + r * dil) mod n], float4 elements,
// dil = 65,584 vectors. Every x element is read by 16 different outputs that live in different
// blocks far apart in the grid, so it is fetched 16 times from L2 (the vector stays L2-resident,
// DRAM sees it about once). Viewing i = q * dil + p, each output is a 16-row sliding-window sum
// down a column: a block walking down the column with a running sum would read x once.
#define TAPS 16
extern "C" __global__ void dilated_sum(const float4* __restrict__ x, float4* __restrict__ y, unsigned n4,
                                       unsigned dil) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int r = 0; r < TAPS; ++r) {
        const float4 v = x[(i + r * dil) & (n4 - 1)];
        acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    y[i] = acc;
}
