// Sum of every 8th element of a float array (x[0], x[8], x[16], ...), grid-stride over all n elements.
// As captured: if ((i & 7) == 0) acc += x[i]: 7 of 8 lanes are predicated off at the load, a warp's load
// touches 4 floats, one in each of 4 different 32-byte sectors.
// Control (-DCOMPACT=1): each thread takes useful elements only, x[8 * j]: 8x fewer threads' worth of
// iterations, every lane loads (the same sectors are still needed: 4 of every 32 bytes are used).
extern "C" __global__ void pred_load(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;
#ifdef COMPACT
    for (int j = tid; j < n / 8; j += stride) acc += x[8 * j];
#else
    for (int i = tid; i < n; i += stride)
        if ((i & 7) == 0) acc += x[i];
#endif
    out[tid] = acc;
}
