// Integrate an unforced Duffing oscillator x'' + d x' + a x + b x^3 = 0 in FP64 with classic RK4,
// STEPS steps per trajectory, one trajectory per thread (initial x from the input, v = 0). Every
// operation is a double add/multiply/FMA on the FP64 pipe; no loads inside the loop, no matrix
// structure (nothing is reused across a k-loop).
#ifndef STEPS
#define STEPS 256
#endif
__device__ __forceinline__ double accel(double x, double v) {
    const double d = 0.05, a = -1.0, b = 1.0;
    return -fma(d, v, x * fma(b, x * x, a));
}

extern "C" __global__ void duffing_rk4(const double* __restrict__ x0, double* __restrict__ xt, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double h = 0.01;
    double x = x0[i], v = 0.0;
#pragma unroll 2
    for (int s = 0; s < STEPS; ++s) {
        const double k1x = v, k1v = accel(x, v);
        const double k2x = fma(0.5 * h, k1v, v), k2v = accel(fma(0.5 * h, k1x, x), k2x);
        const double k3x = fma(0.5 * h, k2v, v), k3v = accel(fma(0.5 * h, k2x, x), k3x);
        const double k4x = fma(h, k3v, v), k4v = accel(fma(h, k3x, x), k4x);
        x = fma(h / 6.0, k1x + 2.0 * (k2x + k3x) + k4x, x);
        v = fma(h / 6.0, k1v + 2.0 * (k2v + k3v) + k4v, v);
    }
    xt[i] = x;
}
