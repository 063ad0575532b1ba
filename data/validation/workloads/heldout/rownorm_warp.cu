// L2 norm of every row of a row-major [rows x COLS] FP32 matrix: one warp per row, each lane reads
// COLS/128 float4 (all independent loads, unrolled), sums squares, then a 5-step __shfl_xor_sync
// butterfly; lane 0 writes the row's norm. Reads the matrix exactly once.
#ifndef COLS
#define COLS 2048
#endif
extern "C" __global__ void rownorm_warp(const float4* __restrict__ x, float* __restrict__ norm, int rows) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= rows) return;
    const float4* row = x + (long long)warp * (COLS / 4);
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < COLS / 128; ++k) {
        const float4 v = row[k * 32 + lane];
        acc = fmaf(v.x, v.x, acc);
        acc = fmaf(v.y, v.y, acc);
        acc = fmaf(v.z, v.z, acc);
        acc = fmaf(v.w, v.w, acc);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) norm[warp] = sqrtf(acc);
}
