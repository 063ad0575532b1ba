// Fix of rgb_tone.cu: each warp takes one channel (warp w of the block: channel w % 3), so the branch is
// uniform per warp; lane l of warp w handles pixel (w / 3) * 32 + l of the block's 128 pixels.
extern "C" __global__ void rgb_tone_warp(const float* in, float* out, int n, float k) {
  int w = threadIdx.x >> 5, c = w % 3;
  int i = blockIdx.x * blockDim.x + ((w / 3) * 32 + (threadIdx.x & 31)) * 3 + c;
  if (i >= n) return;
  float v = in[i];
  if (c == 0) {
#pragma unroll 4
    for (int s = 0; s < 32; ++s) v = __fdividef(v * v + k, v + 1.5f);
  } else {
#pragma unroll 4
    for (int s = 0; s < 32; ++s) v = __expf(-v * k) * 0.75f + v * 0.5f;
  }
  out[i] = v;
}
