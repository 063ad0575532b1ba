// Fix of pitch_copy.cu: 32-bit counter and index math (the host checks width * height and
// height * pitch < 2^32 before choosing this kernel).
extern "C" __global__ void pitch_copy_u32(const unsigned char* src, unsigned char* dst, unsigned int width,
                                          unsigned int height, unsigned int pitch) {
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < width * height; i += gridDim.x * blockDim.x) {
    unsigned int y = i / width, x = i % width;
    dst[y * pitch + x] = src[i];
  }
}
