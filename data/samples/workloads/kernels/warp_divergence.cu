// Per-element math chosen by lane: threadIdx.x % 8 selects one of 8 different iterative functions.
// The 8 paths of a warp run one after another with 4 of 32 lanes active in each, so the warp does
// 8x the instruction issues for the same results (about 4 active threads per executed instruction).
extern "C" __global__ void lane_dependent_math(const float* __restrict__ in, float* __restrict__ out,
                                               long n, int iters) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
    switch (threadIdx.x % 8) {
        case 0: for (int k = 0; k < iters; ++k) x = __sinf(x) + 1.0f; break;
        case 1: for (int k = 0; k < iters; ++k) x = __cosf(x) * 0.5f + 0.25f; break;
        case 2: for (int k = 0; k < iters; ++k) x = __expf(-x * x); break;
        case 3: for (int k = 0; k < iters; ++k) x = sqrtf(fabsf(x) + 1.0f); break;
        case 4: for (int k = 0; k < iters; ++k) x = __logf(fabsf(x) + 2.0f); break;
        case 5: for (int k = 0; k < iters; ++k) x = rsqrtf(x * x + 1.0f); break;
        case 6: for (int k = 0; k < iters; ++k) x = x * x * 0.25f - 0.5f; break;
        default: for (int k = 0; k < iters; ++k) x = __fdividef(1.0f, x + 3.0f); break;
    }
    out[i] = x;
}
