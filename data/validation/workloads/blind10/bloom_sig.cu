// Per-thread Bloom signature of a key stream: 8 double-hashing probes per key, probe slot modulo a
// runtime table size (nbuckets, an int argument), folded into a 32-bit register signature.
extern "C" __global__ void bloom_sig(const unsigned int* keys, unsigned int* sig, int n, int nbuckets) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int bits = 0;
  for (int i = tid; i < n; i += gridDim.x * blockDim.x) {
    unsigned int key = keys[i];
    unsigned int h1 = key * 0x9E3779B1u, h2 = (key ^ (key >> 15)) * 0x85EBCA77u | 1u;
    for (int j = 0; j < 8; ++j) {
      unsigned int bucket = (h1 + j * h2) % nbuckets;
      bits |= 1u << (bucket & 31);
    }
  }
  sig[tid] = bits;
}
