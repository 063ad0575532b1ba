// A sum of harmonics per element: acc = sum over k = 1..steps of sinf(v * k).
// As captured with v in [1e5, 2e5], every argument is above 105615, so sinf takes its slow
// Payne-Hanek range reduction (a 6-step loop of LDG + IMAD.WIDE.U32 over the 2/pi bits table, then FP64 scaling).
// Controls: the same kernel on arguments reduced first (v * k < 105615: the fast Cody-Waite path), and
// -DFAST_SIN=1 (__sinf: one MUFU.SIN, low accuracy at large arguments).
#ifdef FAST_SIN
#define SIN __sinf
#else
#define SIN sinf
#endif
extern "C" __global__ void sinf_large(const float* __restrict__ x, float* __restrict__ y, int steps) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = x[i];
    float acc = 0.0f;
    for (int k = 1; k <= steps; ++k) acc += SIN(v * (float)k);
    y[i] = acc;
}
