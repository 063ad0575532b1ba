// Per-thread 16-entry table, loaded once from memory, then `lookups` data-dependent reads of it: the
// index comes from a hash of the element's value (an LCG seeded by its bits).
// As captured, t[idx] with a run-time idx forces t[] into local memory (STL.128 to fill it, one LDL per
// lookup; the lanes of a warp read different entries, so one LDL touches up to 16 different lines).
// Control 1 (-DSELECT=1): select by the bits of idx (a 4-level tree of 15 FSELs), so every index into t[]
// is a compile-time constant and t[] stays in registers.
// Control 2 (-DSHARED=1): the table in shared memory, entry j of thread t at ts[j][t] (no bank conflicts).
extern "C" __global__ void local_index(const float* __restrict__ x, float* __restrict__ y, int n, int lookups) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef SHARED
    __shared__ float ts[16][256];
#define T(j) ts[j][threadIdx.x]
#else
    float t[16];
#define T(j) t[j]
#endif
#pragma unroll
    for (int j = 0; j < 16; ++j) T(j) = x[j * n + i];
    unsigned h = __float_as_uint(T(0));
    float acc = 0.0f;
    for (int k = 0; k < lookups; ++k) {
        h = h * 1664525u + 1013904223u;
        const int idx = h >> 28;
#ifdef SELECT
        float s8[8], s4[4], s2[2];
#pragma unroll
        for (int j = 0; j < 8; ++j) s8[j] = (idx & 8) ? T(j + 8) : T(j);
#pragma unroll
        for (int j = 0; j < 4; ++j) s4[j] = (idx & 4) ? s8[j + 4] : s8[j];
#pragma unroll
        for (int j = 0; j < 2; ++j) s2[j] = (idx & 2) ? s4[j + 2] : s4[j];
        const float tv = (idx & 1) ? s2[1] : s2[0];
#else
        const float tv = T(idx);
#endif
        acc += tv;
    }
    y[i] = acc;
}
