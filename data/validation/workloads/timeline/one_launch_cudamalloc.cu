// One launch and exit: nothing is repeated.
// The first CUDA call is cudaMalloc, which creates the context; then one kernel fills 64 MiB, one
// cudaMemcpy reads 4 bytes back, cudaFree, exit. Everything in the capture is one-time work.
// Build: nvcc -O2 -lineinfo -arch=sm_90 -o one_launch_cudamalloc one_launch_cudamalloc.cu
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float* p, size_t n, float v) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] = v * (float)(i % 1024);
}

int main() {
  const size_t n = size_t(16) << 20;  // 64 MiB of float
  float* d = nullptr;
  cudaError_t e = cudaMalloc(&d, n * sizeof(float));  // first CUDA call: context creation happens here
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc: %s\n", cudaGetErrorString(e));
    return 1;
  }
  fill<<<(unsigned)((n + 255) / 256), 256>>>(d, n, 0.5f);
  float h = 0.f;
  e = cudaMemcpy(&h, d + 12345, sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d);
  std::printf("value %f (%s)\n", h, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
