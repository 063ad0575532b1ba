// Dot product of two float vectors with a grid-stride loop.
// As captured: every iteration does atomicAdd(out, a[i] * b[i]): one RED.ADD.F32 per element, all to
// ONE address, so they serialize in the L2 slice that holds it.
// Control (-DPER_WARP=1): accumulate in a register, reduce the warp with shuffles, one atomicAdd per warp.
extern "C" __global__ void atomic_loop(const float* __restrict__ a, const float* __restrict__ b,
                                       float* __restrict__ out, int n) {
    const int stride = gridDim.x * blockDim.x;
#ifdef PER_WARP
    float acc = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc = fmaf(a[i], b[i], acc);
    for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) atomicAdd(out, acc);
#else
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) atomicAdd(out, a[i] * b[i]);
#endif
}
