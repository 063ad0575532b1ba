// "Persistent" sum: exactly one block of 1024 threads per SM, each thread walking a grid-stride loop
// over the whole array with one scalar load per iteration (the loop is not unrolled, and the add
// needs the load, so each warp has one 128-byte request in flight at a time). Per-thread partials
// are written out; a second pass would add them.
extern "C" __global__ void persistent_sum(const float* __restrict__ x, float* __restrict__ partial, long long n) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
#pragma unroll 1
    for (long long i = tid; i < n; i += stride) {
        acc += x[i];
    }
    partial[tid] = acc;
}
