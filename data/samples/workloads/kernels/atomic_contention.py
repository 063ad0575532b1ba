"""atomic_contention: every thread atomicAdds its element into one of 4 global accumulators."""
import cupy as cp

from _common import load_kernel, run

N = 1 << 22
k = load_kernel("atomic_contention.cu", "global_sum_4bins")
src = cp.ones(N, dtype=cp.float32)
sums = cp.zeros(4, dtype=cp.float32)
run(k, ((N + 255) // 256,), (256,), (src, sums, cp.int64(N)))
