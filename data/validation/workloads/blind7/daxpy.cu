// y = a * x + y in FP64, two doubles (16 bytes) per thread: a pure stream (read x, read y, write y).
extern "C" __global__ void daxpy(double a, const double2* __restrict__ x, double2* __restrict__ y, long long n2) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n2) {
    const double2 xv = x[i];
    double2 yv = y[i];
    yv.x = fma(a, xv.x, yv.x);
    yv.y = fma(a, xv.y, yv.y);
    y[i] = yv;
  }
}
