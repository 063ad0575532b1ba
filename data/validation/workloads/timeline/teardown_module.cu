// A small module that teardown_after_gpu_loop loads many times with cuModuleLoadData (as a plugin
// system or a JIT cache would) and unloads at exit.
// Build: nvcc -cubin -arch=sm_90 -o teardown_module.cubin teardown_module.cu
extern "C" __global__ void plugin_scale(float* p, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= s;
}
