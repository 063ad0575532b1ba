// Generic strided copy of a 6-D tensor (the kind of kernel a framework uses for .contiguous()):
// the output index is decomposed into 6 coordinates with 32-bit division and modulo by the sizes,
// which are kernel arguments (run-time divisors), and recombined with the input strides. Here the
// input strides happen to be contiguous, so both the loads and the stores are fully coalesced;
// what remains per element is 5 integer divisions by run-time values.
extern "C" __global__ void strided_copy_6d(const float* __restrict__ in, float* __restrict__ out,
                                           unsigned n, unsigned s1, unsigned s2, unsigned s3,
                                           unsigned s4, unsigned s5, unsigned t0, unsigned t1,
                                           unsigned t2, unsigned t3, unsigned t4, unsigned t5) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned r = i, off = 0;
    off += (r % s5) * t5; r /= s5;
    off += (r % s4) * t4; r /= s4;
    off += (r % s3) * t3; r /= s3;
    off += (r % s2) * t2; r /= s2;
    off += (r % s1) * t1; r /= s1;
    off += r * t0;
    out[i] = in[off];
}
