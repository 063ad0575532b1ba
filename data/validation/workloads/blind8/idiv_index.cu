// Sum of a coordinate function over a flat index space of rows of width W: each flat index i is split
// into (row, col) with / and % by W. As captured, W is a kernel argument (known only at run time), so
// every i / W is a signed 32-bit division sequence (IABS, IMAD.HI.U32, IMAD, compare-and-correct, sign fix,
// SEL for W == 0; its reciprocal I2F.RP / MUFU.RCP / F2I.FTZ.U32.TRUNC.NTZ) and the rest of the body is two ops.
// Control (-DW_CONST=1000): the same divisor as a compile-time constant (multiply-high and shift).
#ifdef W_CONST
#define DIVISOR W_CONST
#else
#define DIVISOR W
#endif
extern "C" __global__ void idiv_index(unsigned* __restrict__ out, int W, int per_thread) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    unsigned acc = 0;
    for (int k = 0; k < per_thread; ++k) {
        const int i = tid + k * stride;
        const int row = i / DIVISOR;
        const int col = i % DIVISOR;
        acc += (unsigned)(row ^ col);
    }
    out[tid] = acc;
}
