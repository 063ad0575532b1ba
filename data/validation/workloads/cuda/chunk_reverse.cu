// Reverse fixed-size chunks of an array, staging each chunk in shared memory. The chunk is sized to
// 96 KB of dynamic shared memory per 128-thread block, so only 2 blocks (8 warps, 12.5% of the
// warp slots) fit on an SM. The load loop keeps one 4-byte global load in flight per thread
// (each load feeds a shared store before the next is issued), so with 8 warps per SM the DRAM
// latency is exposed and little bandwidth is used.
extern "C" __global__ void chunk_reverse(const float* __restrict__ in, float* __restrict__ out, int chunk) {
    extern __shared__ float buf[];
    const long base = (long)blockIdx.x * chunk;
#pragma unroll 1
    for (int j = threadIdx.x; j < chunk; j += blockDim.x) buf[j] = in[base + j];
    __syncthreads();
#pragma unroll 1
    for (int j = threadIdx.x; j < chunk; j += blockDim.x) out[base + j] = buf[chunk - 1 - j];
}
