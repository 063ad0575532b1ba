// One-shot program: one cudaMallocManaged of 1 GiB (the card has ~141 GB), one kernel that writes every
// element (first touch on the GPU: the pages are populated on demand by GPU page faults), one host read of
// a single element, cudaFree, exit. `--device`: the control, the same with cudaMalloc (no faults).
// Prints the host time of each phase (std::chrono).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

__global__ void touch(float* p, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = 0.5f * (float)(i & 1023);
}

static double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main(int argc, char** argv) {
  const bool device = argc > 1 && std::strcmp(argv[1], "--device") == 0;
  const size_t n = (1ull << 30) / sizeof(float);  // 1 GiB
  float* p = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  if (device) CHECK(cudaMalloc(&p, n * sizeof(float)));
  else CHECK(cudaMallocManaged(&p, n * sizeof(float)));  // the first CUDA call: context creation happens here
  const double t_alloc = ms_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  touch<<<132 * 8, 256>>>(p, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const double t_kernel = ms_since(t1);
  auto t2 = std::chrono::steady_clock::now();
  float v = 0.f;
  if (device) CHECK(cudaMemcpy(&v, p + 123457, sizeof(float), cudaMemcpyDeviceToHost));
  else v = p[123457];  // one host read of managed memory
  const double t_read = ms_since(t2);
  auto t3 = std::chrono::steady_clock::now();
  CHECK(cudaFree(p));
  const double t_free = ms_since(t3);
  const float want = 0.5f * (float)(123457 & 1023);
  std::printf("managed_touch (%s, 1 GiB): alloc (incl. context creation) %.2f ms, touch kernel + sync %.2f ms, "
              "host read %.3f ms, free %.2f ms; value %.1f (want %.1f) %s\n",
              device ? "cudaMalloc" : "cudaMallocManaged", t_alloc, t_kernel, t_read, t_free, v, want,
              v == want ? "ok" : "WRONG");
  return v == want ? 0 : 1;
}
