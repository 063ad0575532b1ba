// Fix of mix_apply.cu: accumulate each output in a register and store it once; __restrict__ lets the
// compiler keep loads in flight across the stores.
extern "C" __global__ void mix_apply_reg(const float* __restrict__ A, const float* __restrict__ x,
                                         float* __restrict__ y, int n, int nvec) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= nvec) return;
  x += v; y += v;
  for (int r = 0; r < n; ++r) {
    float acc = 0.f;
    for (int c = 0; c < n; ++c) acc += A[r * n + c] * x[c * nvec];
    y[r * nvec] = acc;
  }
}
