// A GPU-bound loop followed by a long teardown (whole process).
// Start-up: context (cudaFree(0)), 64 copies of a module loaded with cuModuleLoadData, 1500 buffers of
//   12 MiB (cudaMalloc each), three 256 MiB arrays.
// Loop: 200 launches of a float4 STREAM triad over the three arrays (768 MiB moved per launch),
//   enqueued back to back with no sync until the end (cudaDeviceSynchronize once).
// Teardown: 1503 cudaFree (each one synchronizes and unmaps), 64 cuModuleUnload, cudaDeviceReset.
// Build: nvcc -O2 -lineinfo -arch=sm_90 -o teardown_after_gpu_loop teardown_after_gpu_loop.cu
// (the two driver-API calls are looked up in libcuda.so.1 with dlsym, so no -lcuda is needed to link)
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <dlfcn.h>
#include <cuda.h>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)
#define CKD(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
  std::fprintf(stderr, "%s:%d %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)r_); std::exit(1); } } while (0)

__global__ void triad(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                      float s, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
    float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

int main(int argc, char** argv) {
  const char* cubin_path = argc > 1 ? argv[1] : "teardown_module.cubin";
  std::FILE* f = std::fopen(cubin_path, "rb");
  if (!f) { std::fprintf(stderr, "cannot open %s\n", cubin_path); return 1; }
  std::fseek(f, 0, SEEK_END);
  long size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  std::vector<char> image(size);
  if (std::fread(image.data(), 1, size, f) != (size_t)size) { std::fprintf(stderr, "short read\n"); return 1; }
  std::fclose(f);

  CK(cudaFree(0));  // context
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!libcuda) libcuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!libcuda) { std::fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror()); return 1; }
  auto moduleLoadData = (CUresult(*)(CUmodule*, const void*))dlsym(libcuda, "cuModuleLoadData");
  auto moduleUnload = (CUresult(*)(CUmodule))dlsym(libcuda, "cuModuleUnload");
  if (!moduleLoadData || !moduleUnload) { std::fprintf(stderr, "dlsym: %s\n", dlerror()); return 1; }
  std::vector<CUmodule> mods(64);
  for (auto& m : mods) CKD(moduleLoadData(&m, image.data()));
  std::vector<void*> bufs(1500);
  for (auto& p : bufs) CK(cudaMalloc(&p, size_t(12) << 20));
  const size_t n = size_t(64) << 20;  // floats per array (256 MiB)
  float *a, *b, *c;
  CK(cudaMalloc(&a, n * 4));
  CK(cudaMalloc(&b, n * 4));
  CK(cudaMalloc(&c, n * 4));
  CK(cudaMemset(b, 0, n * 4));
  CK(cudaMemset(c, 0, n * 4));

  for (int it = 0; it < 200; ++it)
    triad<<<132 * 8, 256>>>((float4*)a, (const float4*)b, (const float4*)c, 1.5f, n / 4);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());

  for (auto p : bufs) CK(cudaFree(p));
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  for (auto m : mods) CKD(moduleUnload(m));
  CK(cudaDeviceReset());
  std::printf("done\n");
  return 0;
}
