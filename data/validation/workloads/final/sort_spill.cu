// Sort K = 128 floats per thread with a fully unrolled bitonic network (every index is a compile-time
// constant, so v[] is meant to live in registers: ~130+ live values). Thread t owns column t of a
// K x n matrix (element k at in[k*n + t]: coalesced loads and stores). The kernel is declared for
// 1024-thread blocks (__launch_bounds__(1024)), which caps it at 65536 / 1024 = 64 registers per
// thread: the rest of v[] goes to local memory for the whole network.
#ifndef K
#define K 128
#endif
extern "C" __global__ void __launch_bounds__(1024) sort_cols_1024(const float* __restrict__ in,
                                                                  float* __restrict__ out, int n) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = in[(size_t)k * n + t];
#pragma unroll
    for (int size = 2; size <= K; size <<= 1) {
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
#pragma unroll
            for (int i = 0; i < K; ++i) {
                const int j = i ^ stride;
                if (j > i) {
                    const float a = v[i], b = v[j];
                    const float lo = fminf(a, b), hi = fmaxf(a, b);
                    const bool up = (i & size) == 0;
                    v[i] = up ? lo : hi;
                    v[j] = up ? hi : lo;
                }
            }
        }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) out[(size_t)k * n + t] = v[k];
}
