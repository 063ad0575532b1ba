// Squared distances of 4 points to 16 centroids per thread (a 4x16 tile: 64 accumulators), summed
// over D dimensions. Points and centroids are dimension-major float4 rows: pts[d][n4], cen[d][k4].
extern "C" __global__ void dist_tile(const float4* pts, const float4* cen, float4* out, int D, int n4, int k4) {
  int t = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;   // points 4t..4t+3, centroids 16g..
  if (t >= n4) return;
  float acc[4][16] = {};
#pragma unroll 1
  for (int d = 0; d < D; ++d) {
    float4 p = pts[d * n4 + t];
    float pv[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      float4 c = cen[d * k4 + 4 * g + q];
      float cv[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) { float e = pv[i] - cv[j]; acc[i][4 * q + j] += e * e; }
    }
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) out[(16 * g + j) * n4 + t] = make_float4(acc[0][j], acc[1][j], acc[2][j], acc[3][j]);
}
