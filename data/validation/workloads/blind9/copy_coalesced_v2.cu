// K1 after: the same copy (same threads, same PER floats per thread), rewritten so that lane k of a warp
// handles element t + j*T (T = total threads): at each load instruction the warp reads 32 consecutive
// floats = 128 contiguous bytes = 4 full sectors (coalesced), and the store likewise.
extern "C" __global__ void copy_coalesced_v2(const float* __restrict__ in, float* __restrict__ out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const long long T = (long long)gridDim.x * blockDim.x;
#pragma unroll 8
    for (int j = 0; j < PER; ++j) {
        out[t + j * T] = in[t + j * T];  // coalesced: consecutive lanes, consecutive addresses
    }
}
