"""pair smem_column_sum: shared tile[32][32] (before, 32-way store conflicts) vs tile[32][33] (after, --after).

Same kernel name, same grid (256 x 256 blocks of 32 x 32) over an 8192 x 8192 float matrix (256 MB).
"""
import sys

import cupy as cp

from _common import load_kernel, run

after = "--after" in sys.argv
N = 8192
k = load_kernel("pair_smem_column_sum.cu", "smem_column_sum", defines={"PAD": int(after)})
src = cp.ones((N, N), dtype=cp.float32)
dst = cp.empty((N // 32, N), dtype=cp.float32)
ms = run(k, (N // 32, N // 32), (32, 32), (src, dst, cp.int32(N)))
assert bool((dst == 32).all())
print(f"{'after' if after else 'before'}: {4 * N * N / ms / 1e9:.0f} GB/s read")
