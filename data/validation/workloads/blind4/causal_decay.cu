// Causal decayed sum over a sequence: y[i][t] = sum over j <= i of w^(i-j) * x[j][t], T rows of D = 256 features.
// One 256-thread block per output row i (one thread per feature) runs the recurrence acc = acc * w + x[j][t]
// for j = 0..i (line 12): block i does i + 1 steps, so the work grows with the row index.
// reverse = 0: block b computes row b (the heaviest rows are the last blocks the GPU schedules);
// reverse = 1: block b computes row T - 1 - b (heaviest first); the plain-timing control.
extern "C" __global__ void __launch_bounds__(256, 8) causal_decay(const float* __restrict__ x, float* __restrict__ y, int T, float w,
                                        int reverse) {
    const int i = reverse ? T - 1 - (int)blockIdx.x : (int)blockIdx.x;
    const int t = threadIdx.x;
    const int D = blockDim.x;
    float acc = 0.0f;
    for (int j = 0; j <= i; ++j) acc = fmaf(acc, w, x[(size_t)j * D + t]);
    y[(size_t)i * D + t] = acc;
}
