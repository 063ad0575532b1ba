// Two heavy per-element paths chosen by the parity of the element: odd elements iterate a quadratic
// map (path_a), even elements an affine+square map (path_b), STEPS steps each, the same cost per path.
// As captured the condition is threadIdx.x & 1: every warp holds both kinds of lanes and runs both
// loops one after the other, half of its lanes masked off in each.
// Control (-DPER_WARP=1): decide per warp, (threadIdx.x / 32) & 1, and let each warp take 32 elements of
// its own parity (index remapped), so the branch is warp-uniform; same elements, same results.
#define STEPS 256
__device__ __forceinline__ float path_a(float v) {
#pragma unroll 4
    for (int k = 0; k < STEPS; ++k) v = fmaf(v, v * 0.5f, -0.25f);
    return v;
}
__device__ __forceinline__ float path_b(float v) {
#pragma unroll 4
    for (int k = 0; k < STEPS; ++k) {
        v = fmaf(v, 0.75f, 0.125f);
        v = fmaf(v, v, -0.375f);
    }
    return v;
}
extern "C" __global__ void div_tid(const float* __restrict__ x, float* __restrict__ y) {
#ifdef PER_WARP
    const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int i = blockIdx.x * blockDim.x + (w / 2) * 64 + lane * 2 + (w & 1);
    const bool odd = (threadIdx.x / 32) & 1;
#else
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool odd = threadIdx.x & 1;
#endif
    float v = x[i];
    if (odd) v = path_a(v);
    else     v = path_b(v);
    y[i] = v;
}
