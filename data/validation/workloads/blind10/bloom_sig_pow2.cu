// Fix of bloom_sig.cu: a power-of-two table (nbuckets = 2^k), so the probe slot is a mask.
extern "C" __global__ void bloom_sig_pow2(const unsigned int* keys, unsigned int* sig, int n, int nbuckets) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int bits = 0;
  for (int i = tid; i < n; i += gridDim.x * blockDim.x) {
    unsigned int key = keys[i];
    unsigned int h1 = key * 0x9E3779B1u, h2 = (key ^ (key >> 15)) * 0x85EBCA77u | 1u;
    for (int j = 0; j < 8; ++j) {
      unsigned int bucket = (h1 + j * h2) & (nbuckets - 1);
      bits |= 1u << (bucket & 31);
    }
  }
  sig[tid] = bits;
}
