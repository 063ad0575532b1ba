// Linked-list walk: each thread follows its own list through a 64 MB "next" array (a random
// single-cycle permutation), STEPS hops. The address of every load is the value returned by the
// previous load, so each thread has exactly one load in flight and neighbouring lanes touch
// unrelated 32-byte sectors by nature of the data structure.
extern "C" __global__ void list_walk(const int* __restrict__ next, const int* __restrict__ heads,
                                     int* __restrict__ out, int steps) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    int p = heads[t];
#pragma unroll 1
    for (int s = 0; s < steps; ++s) p = next[p];
    out[t] = p;
}
