// Per-class sums: out[label[i]] += val[i] for n samples whose labels are uniform over C = 320 classes
// (a loss or metric accumulated per class). One global atomicAdd per element (line 8): 320 hot
// addresses = 1280 bytes = 10 cache lines of 128 B, shared by every thread of the grid.
extern "C" __global__ void class_sum_atomic(const int* __restrict__ label, const float* __restrict__ val,
                                            float* __restrict__ out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&out[label[i]], val[i]);
    }
}
