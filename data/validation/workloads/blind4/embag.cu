// EmbeddingBag(mode="sum"): out[b, :] = sum over j < L of table[idx[b * L + j], :]; table rows of D = 128 BF16
// (256 bytes), FP32 output. One warp per bag, 4 bags per 128-thread block; lane l reads bf16 elements
// 4l..4l+3 of a row (8 bytes, line 17), so each row is one coalesced 256-byte request; rows are random.
// The block first copies its bags' indices into dynamic shared memory, max_bag slots per warp (lines 8, 13):
// embag_sum with max_bag = L (512 bytes per block) or max_bag = 6144 (96 KB per block: 2 blocks per SM).
extern "C" __global__ void embag_sum(const unsigned short* __restrict__ table, const int* __restrict__ idx,
                                     float* __restrict__ out, int nbags, int L, int max_bag) {
    extern __shared__ int sidx[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int bag = blockIdx.x * (blockDim.x >> 5) + warp;
    if (bag >= nbags) return;
    int* my = sidx + warp * max_bag;
    for (int j = lane; j < L; j += 32) my[j] = idx[(size_t)bag * L + j];
    __syncwarp();
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    for (int j = 0; j < L; ++j) {
        const uint2 r = reinterpret_cast<const uint2*>(table + (size_t)my[j] * 128)[lane];
        a0 += __uint_as_float(r.x << 16);
        a1 += __uint_as_float(r.x & 0xffff0000u);
        a2 += __uint_as_float(r.y << 16);
        a3 += __uint_as_float(r.y & 0xffff0000u);
    }
    reinterpret_cast<float4*>(out + (size_t)bag * 128)[lane] = make_float4(a0, a1, a2, a3);
}
