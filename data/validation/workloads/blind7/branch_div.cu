// y[i] = f(x[i]) with a branch on the sign of the data: positive values take a 256-step FMA recurrence,
// the others a 64-step __sinf recurrence. On random data both signs occur in every warp, so each warp runs
// both paths one after the other (half its lanes idle in each).
extern "C" __global__ void branch_div(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float r = v;
  if (v > 0.f) {
    const float c = 0.001f * v;
#pragma unroll 8
    for (int k = 0; k < 256; ++k) r = fmaf(r, 0.999f, c);
  } else {
#pragma unroll 4
    for (int k = 0; k < 64; ++k) r = __sinf(r) + v;
  }
  y[i] = r;
}
