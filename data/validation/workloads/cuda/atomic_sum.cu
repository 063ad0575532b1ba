// Sum of a float array into ONE accumulator. sum_atomic_each: every thread does atomicAdd(out, x[i]),
// so all reductions serialize on one address in one L2 slice. sum_atomic_per_warp: float4 loads, a
// per-thread grid-stride sum, a warp shuffle reduction, then one atomicAdd per warp.
extern "C" __global__ void sum_atomic_each(const float* __restrict__ x, float* out, long n) {
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

extern "C" __global__ void sum_atomic_per_warp(const float4* __restrict__ x, float* out, long n4) {
    float acc = 0.0f;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += (long)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}
