// 256-bin byte histogram. Each block keeps a private histogram in shared memory and adds every byte
// of its grid-stride share with atomicAdd on SHARED memory (4 per 32-bit word), then merges its 256
// bins into the global histogram (256 global atomics per block). Global atomics are few; when the
// bytes are skewed (mostly one value) the lanes of a warp hit the same shared address.
extern "C" __global__ void hist_smem(const unsigned int* __restrict__ words, unsigned int* __restrict__ hist,
                                     long long nwords) {
    __shared__ unsigned int h[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
    __syncthreads();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += stride) {
        const unsigned int w = words[i];
        atomicAdd(&h[w & 0xFFu], 1u);
        atomicAdd(&h[(w >> 8) & 0xFFu], 1u);
        atomicAdd(&h[(w >> 16) & 0xFFu], 1u);
        atomicAdd(&h[w >> 24], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&hist[b], h[b]);
}
