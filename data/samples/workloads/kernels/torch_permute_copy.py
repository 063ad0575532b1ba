"""PyTorch eager x.t().contiguous() of an 8192 x 8192 FP32 matrix (256 MB in, 256 MB out).

The transposed view is copied by TensorIterator's generic copy (elementwise_kernel, not the
vectorized one): the output is written contiguously, so the 32 lanes of a warp read 32 input elements
8192 floats (32 KB) apart. The input comes from torch.randn (a distribution kernel, not matched by the
regex); three warm-up copies, then the profiled one (ncu --launch-skip 3).
"""
import torch

N = 8192
x = torch.randn(N, N, device="cuda")
for _ in range(3):
    y = x.t().contiguous()
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
y = x.t().contiguous()
stop.record()
torch.cuda.synchronize()
ms = start.elapsed_time(stop)
assert torch.equal(y, x.t())
print(f"x.t().contiguous() {N}x{N} fp32: {ms:.3f} ms, {2 * N * N * 4 / ms / 1e6:.0f} GB/s "
      "(under ncu this is a replayed, serialized time)")
