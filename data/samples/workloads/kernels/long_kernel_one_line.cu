// Fused epilogue of a transformer layer over a row-major [rows x cols] activation matrix:
//   h   = x * scale[col] + bias[col]                 (per-column affine)
//   g   = gelu(h), dropped out by a byte mask        (tanh approximation)
//   out = g + residual + pos[row][col]               (positional table stored transposed: pos_t[col][row])
// and per-block partial sums of out and out^2 for a following normalization.
// One thread per element, one block row of 256 columns per block.
extern "C" __global__ void fused_epilogue(const float* __restrict__ x, const float* __restrict__ residual,
                                          const float* __restrict__ scale, const float* __restrict__ bias,
                                          const float* __restrict__ pos_t, const unsigned char* __restrict__ keep,
                                          float* __restrict__ y, float* __restrict__ stats,
                                          int rows, int cols, float keep_scale) {
    __shared__ float part_s[8], part_q[8];
    const int row = blockIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const long idx = (long)row * cols + col;
    float s = 0.0f, q = 0.0f;
    if (col < cols) {
        const float xv = x[idx];
        const float rv = residual[idx];
        const float sc = scale[col];
        const float bi = bias[col];
        const float pe = pos_t[(long)col * rows + row];
        const unsigned char m = keep[idx];
        const float h = fmaf(xv, sc, bi);
        const float inner = 0.7978845608f * (h + 0.044715f * h * h * h);
        float g = 0.5f * h * (1.0f + tanhf(inner));
        g = m ? g * keep_scale : 0.0f;
        const float o = g + rv + pe;
        y[idx] = o;
        s = o;
        q = o * o;
    }
    for (int off = 16; off > 0; off >>= 1) {
        s += __shfl_down_sync(0xffffffffu, s, off);
        q += __shfl_down_sync(0xffffffffu, q, off);
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) {
        part_s[warp] = s;
        part_q[warp] = q;
    }
    __syncthreads();
    if (warp == 0) {
        s = lane < (blockDim.x >> 5) ? part_s[lane] : 0.0f;
        q = lane < (blockDim.x >> 5) ? part_q[lane] : 0.0f;
        for (int off = 4; off > 0; off >>= 1) {
            s += __shfl_down_sync(0xffffffffu, s, off);
            q += __shfl_down_sync(0xffffffffu, q, off);
        }
        if (lane == 0) {
            const long b = (long)row * gridDim.x + blockIdx.x;
            stats[2 * b] = s;
            stats[2 * b + 1] = q;
        }
    }
}
