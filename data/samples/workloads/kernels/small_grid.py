"""small_grid: a 16M-float reduction launched as 8 blocks x 128 threads on a 132-SM GPU."""
import cupy as cp

from _common import load_kernel, run

N = 1 << 24
k = load_kernel("small_grid.cu", "few_blocks_reduce")
src = cp.ones(N, dtype=cp.float32)
out = cp.zeros(1, dtype=cp.float32)
run(k, (8,), (128,), (src, out, cp.int64(N // 4)))
