// Mish activation y = x * tanh(softplus(x)) over FP32 tensors (n floats in, n floats out).
// mish_fp64: the softplus "beta" is a double (line 7), so beta * x[i] is a double and exp, log1p, tanh are the
//            FP64 library functions (lines 10-11): every element runs the FP64 versions on float data.
// mish_fp32: the same code with a float beta (expf, log1pf, tanhf); the plain-timing control.
extern "C" __global__ void mish_fp64(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const double beta = 1.0;
    if (i >= n) return;
    const float v = x[i];
    const double sp = log1p(exp(beta * v)) / beta;
    y[i] = v * tanh(sp);
}

extern "C" __global__ void mish_fp32(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float beta = 1.0f;
    if (i >= n) return;
    const float v = x[i];
    const float sp = log1pf(expf(beta * v)) / beta;
    y[i] = v * tanhf(sp);
}
