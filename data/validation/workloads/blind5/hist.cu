// 256-bin byte histogram with per-block shared-memory sub-histograms (the textbook version).
// Each thread reads 4 bytes (uchar4, coalesced) per grid-stride step and does 4 shared-memory atomicAdds,
// then each block adds its 256 bins to the global histogram. The input is skewed (most bytes are 0, like a
// mostly-black image), so most lanes of a warp add to the SAME shared address at the same time.
extern "C" __global__ void hist256(const unsigned char* __restrict__ data, long long n, unsigned int* __restrict__ hist) {
    __shared__ unsigned int bins[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    const uchar4* d4 = reinterpret_cast<const uchar4*>(data);
    long long n4 = n / 4;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
        uchar4 v = d4[i];
        atomicAdd(&bins[v.x], 1u);
        atomicAdd(&bins[v.y], 1u);
        atomicAdd(&bins[v.z], 1u);
        atomicAdd(&bins[v.w], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&hist[i], bins[i]);
}

// hist256_v16 (a plain-timing control, not captured): the same kernel with 16 bytes (uint4) per thread per
// grid-stride step, i.e. 4x the bytes in flight per warp; the same 16 shared atomicAdds per 16 bytes.
extern "C" __global__ void hist256_v16(const unsigned char* __restrict__ data, long long n, unsigned int* __restrict__ hist) {
    __shared__ unsigned int bins[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    const uint4* d16 = reinterpret_cast<const uint4*>(data);
    long long n16 = n / 16;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) {
        uint4 v = d16[i];
        unsigned int w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            atomicAdd(&bins[w[k] & 255u], 1u);
            atomicAdd(&bins[(w[k] >> 8) & 255u], 1u);
            atomicAdd(&bins[(w[k] >> 16) & 255u], 1u);
            atomicAdd(&bins[w[k] >> 24], 1u);
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&hist[i], bins[i]);
}
