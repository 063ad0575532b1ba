"""tensor_core_bound (healthy): cuBLAS bf16 GEMM 8192^3 through torch.matmul.

On Hopper cuBLAS runs this as an nvjet_* (or sm90_xmma_*) kernel on the tensor cores (HGMMA) at a
large fraction of peak: the counters may look odd (low occupancy, many registers) but the kernel is
near its roofline. Three warm-up products, then the profiled one (ncu --launch-skip 3).
"""
import torch

N = 8192
a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    c = torch.matmul(a, b)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
c = torch.matmul(a, b)
stop.record()
torch.cuda.synchronize()
ms = start.elapsed_time(stop)
print(f"bf16 GEMM {N}^3: {ms:.3f} ms, {2 * N**3 / ms / 1e9:.0f} TFLOP/s (serialized/replayed under ncu)")
