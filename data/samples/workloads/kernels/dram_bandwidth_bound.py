"""dram_bandwidth_bound (healthy): float4 STREAM triad over three 512 MB arrays (1.5 GB moved)."""
import cupy as cp

from _common import load_kernel, run

N = 1 << 27  # floats per array
k = load_kernel("dram_bandwidth_bound.cu", "stream_triad")
a = cp.empty(N, dtype=cp.float32)
b = cp.ones(N, dtype=cp.float32)
c = cp.ones(N, dtype=cp.float32)
n4 = N // 4
ms = run(k, ((n4 + 255) // 256,), (256,), (a, b, c, cp.float32(3.0), cp.int64(n4)))
print(f"{3 * 4 * N / ms / 1e9:.0f} GB/s")
