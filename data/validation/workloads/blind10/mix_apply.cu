// Apply one n x n mixing matrix A to every vector; vectors are interleaved (element c of vector v at
// c * nvec + v), so each thread offsets its pointers to its own vector and walks a stride of nvec.
extern "C" __global__ void mix_apply(const float* A, const float* x, float* y, int n, int nvec) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= nvec) return;
  x += v; y += v;
  for (int r = 0; r < n; ++r) {
    y[r * nvec] = 0.f;
    for (int c = 0; c < n; ++c) y[r * nvec] += A[r * n + c] * x[c * nvec];
  }
}
