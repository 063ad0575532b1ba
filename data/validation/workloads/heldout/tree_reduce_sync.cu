// Block-level sum by a shared-memory tree: each thread loads ONE float, then log2(blockDim) halving
// steps, each followed by __syncthreads() (sequential addressing, so no bank conflicts, and the
// branch `tid < stride` is warp-uniform until stride < 32). One partial sum per block.
// Every thread has exactly one global load in flight, and then the block spends 9 barrier
// steps in which fewer and fewer warps do anything: few bytes in flight per SM.
extern "C" __global__ void tree_reduce_sync(const float* __restrict__ x, float* __restrict__ partial,
                                            long long n) {
    extern __shared__ float s[];
    const unsigned tid = threadIdx.x;
    const long long i = (long long)blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}
