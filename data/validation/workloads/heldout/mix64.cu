// ROUNDS rounds of the splitmix64 finaliser on every 64-bit key (e.g. to derive hash-table seeds):
// 64-bit adds, xor-shifts and two 64-bit multiplies per round, all integer, one dependent chain
// per thread. The hardware has no 64-bit integer multiplier: each 64x64 multiply is several
// 32-bit IMADs, each 64-bit shift two funnel shifts.
extern "C" __global__ void mix64_rounds(const unsigned long long* __restrict__ in,
                                        unsigned long long* __restrict__ out, long long n, int rounds) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long z = in[i];
#pragma unroll 4
    for (int r = 0; r < rounds; ++r) {
        z += 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
    }
    out[i] = z;
}
