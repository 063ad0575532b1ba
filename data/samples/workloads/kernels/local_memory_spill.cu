// Per-thread lookup table indexed with data-dependent indices. An array indexed by a value only
// known at run time cannot be kept in registers, so ptxas places it in LOCAL memory (the thread's
// stack frame, backed by L1/L2/DRAM): every table[j] read or write below is an LDL/STL.
// (This is local memory from dynamic indexing, not a register-pressure spill; the effect on
// traffic - local load/store sectors through L1 - is the same.)
extern "C" __global__ void per_thread_table(const int* __restrict__ seed, const float* __restrict__ in,
                                            float* __restrict__ out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    float table[64];
    const float v = in[i];
#pragma unroll 4
    for (int k = 0; k < 64; ++k) table[k] = v * k + 1.0f;
    int j = seed[blockIdx.x];                // same for the whole block: accesses stay coalesced
    float acc = 0.0f;
#pragma unroll 1
    for (int k = 0; k < 128; ++k) {
        j = (j * 1103515245 + 12345) & 63;   // data-dependent index
        acc += table[j];
        table[(j + 7) & 63] = acc;
    }
    out[i] = acc;
}
