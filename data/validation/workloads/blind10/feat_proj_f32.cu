// Project each row of 64 float features onto 32 outputs with weights in constant memory; features and
// outputs are feature-major: x[d * nrows + r], y[p * nrows + r]. Float accumulator (fix).
__constant__ float W[32][64];
extern "C" __global__ void feat_proj_f32(const float* __restrict__ x, float* __restrict__ y, int nrows) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= nrows) return;
  float xv[64];
#pragma unroll
  for (int d = 0; d < 64; ++d) xv[d] = x[d * nrows + r];
#pragma unroll 1
  for (int p = 0; p < 32; ++p) {
    float acc = 0.f;
#pragma unroll
    for (int d = 0; d < 64; ++d) acc += xv[d] * W[p][d];
    y[p * nrows + r] = acc;
  }
}
