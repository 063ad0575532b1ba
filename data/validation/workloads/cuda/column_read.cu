// Read one column of a row-major [rows x ld] float matrix (ld = 32 at run time): thread r reads
// m[r * ld + col]. Neighbouring lanes read addresses 128 bytes apart, so each warp-wide 4-byte load
// touches 32 different sectors and uses 4 bytes of each 32-byte sector.
extern "C" __global__ void column_read(const float* __restrict__ m, float* __restrict__ out, long rows,
                                       int ld, int col) {
    const long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (r < rows) out[r] = m[r * ld + col] * 0.5f;
}
