"""local_memory_spill: a dynamically indexed 64-float per-thread array lives in local memory."""
import cupy as cp

from _common import load_kernel, run

N, BLOCK = 1 << 22, 256
k = load_kernel("local_memory_spill.cu", "per_thread_table")
seed = cp.arange(N // BLOCK, dtype=cp.int32)
src = cp.ones(N, dtype=cp.float32)
dst = cp.empty(N, dtype=cp.float32)
run(k, (N // BLOCK,), (BLOCK,), (seed, src, dst, cp.int64(N)))
