// Fix of joint_hist.cu: a per-block copy of the 256 bins in shared memory, merged with one global
// atomic per bin per block.
extern "C" __global__ void joint_hist_smem(const uchar4* a, const uchar4* b, unsigned int* hist, int n4) {
  __shared__ unsigned int h[256];
  for (int k = threadIdx.x; k < 256; k += blockDim.x) h[k] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
    uchar4 p = a[i], q = b[i];
    atomicAdd(&h[(p.x >> 4) * 16 + (q.x >> 4)], 1u);
    atomicAdd(&h[(p.y >> 4) * 16 + (q.y >> 4)], 1u);
    atomicAdd(&h[(p.z >> 4) * 16 + (q.z >> 4)], 1u);
    atomicAdd(&h[(p.w >> 4) * 16 + (q.w >> 4)], 1u);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < 256; k += blockDim.x) if (h[k]) atomicAdd(&hist[k], h[k]);
}
