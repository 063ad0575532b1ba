// Two heavy per-element paths chosen by a per-element flag loaded from memory: flag 1 iterates a
// quadratic map (path_a), flag 0 an affine+square map (path_b), STEPS steps each, the same cost per path.
// With random 0/1 flags every warp holds both kinds of lanes and runs both loops one after the other,
// half of its lanes masked off in each (about: the split is random, not exactly half).
// Control: the same kernel on data binned by flag first (elements and flags sorted by flag), so all
// lanes of a warp agree.
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
extern "C" __global__ void div_data(const float* __restrict__ x, const unsigned char* __restrict__ flag,
                                    float* __restrict__ y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (flag[i]) v = path_a(v);
    else         v = path_b(v);
    y[i] = v;
}
