// K1 before: copy n floats, each thread copying PER consecutive floats of its own chunk.
// At one load instruction the 32 threads of a warp touch 32 addresses PER*4 bytes apart (one 4-byte word per
// 128-byte line when PER >= 32): every request touches 32 sectors and uses 4 of each sector's 32 bytes; the
// rest of the line is only used if it is still in L1 when the same thread comes back for the next word.
extern "C" __global__ void copy_strided_v1(const float* __restrict__ in, float* __restrict__ out)
{
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const float* src = in + t * PER;
    float* dst = out + t * PER;
#pragma unroll 8
    for (int j = 0; j < PER; ++j) {
        dst[j] = src[j];  // strided across the warp: lane k reads src base + k*PER*4 bytes
    }
}
