// Joint intensity histogram of two 8-bit images (16 x 16 bins, as in mutual-information registration):
// every pixel pair adds one count to the global table. Four pixels per thread per step (uchar4).
extern "C" __global__ void joint_hist(const uchar4* a, const uchar4* b, unsigned int* hist, int n4) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    uchar4 p = a[i], q = b[i];
    atomicAdd(&hist[(p.x >> 4) * 16 + (q.x >> 4)], 1u);
    atomicAdd(&hist[(p.y >> 4) * 16 + (q.y >> 4)], 1u);
    atomicAdd(&hist[(p.z >> 4) * 16 + (q.z >> 4)], 1u);
    atomicAdd(&hist[(p.w >> 4) * 16 + (q.w >> 4)], 1u);
  }
}
