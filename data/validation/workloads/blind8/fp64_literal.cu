// An iterated map on FP32 data: v = (v * v + c) * 0.999 for `steps` steps per element.
// As captured, 0.999 is a double literal: each step converts v to double (F2F.F64.F32), multiplies in
// FP64 (DMUL) and converts back to float on the assignment (F2F.F32.F64).
// Control (-DFLOAT_LITERAL=1): 0.999f, so the step is one FFMA and one FMUL.
#ifdef FLOAT_LITERAL
#define DAMP 0.999f
#else
#define DAMP 0.999
#endif
extern "C" __global__ void fp64_literal(const float* __restrict__ x, float* __restrict__ y, float c, int steps) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int k = 0; k < steps; ++k) v = fmaf(v, v, c) * DAMP;
    y[i] = v;
}
