// Copy a packed width x height 8-bit image into a buffer whose rows are padded to a pitch (bytes),
// one pixel per step of a grid-stride loop whose counter and index math are size_t.
extern "C" __global__ void pitch_copy(const unsigned char* src, unsigned char* dst, size_t width, size_t height,
                                      size_t pitch) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < width * height;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t y = i / width, x = i % width;
    dst[y * pitch + x] = src[i];
  }
}
