// 32 rounds of a murmur3-style integer finalizer per element (e.g. for hashing keys into buckets):
// xor-shifts, two 32-bit multiplies and an add per round, all of it the algorithm's own work.
extern "C" __global__ void hash_rounds(const unsigned int* __restrict__ in, unsigned int* __restrict__ out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int h = in[i];
#pragma unroll 4
    for (int r = 0; r < 32; ++r) {
        h ^= h >> 16;
        h *= 0x85ebca6bu;
        h ^= h >> 13;
        h *= 0xc2b2ae35u;
        h ^= h >> 16;
        h += 0x9e3779b9u * (unsigned)(r + 1);
    }
    out[i] = h;
}
