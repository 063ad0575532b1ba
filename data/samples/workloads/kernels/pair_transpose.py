"""pair transpose: naive transpose (before) vs shared-memory tiled transpose (after, --after).

Same kernel name `transpose`, same grid and block, 8192 x 8192 floats (256 MB in, 256 MB out).
"""
import sys

import cupy as cp

from _common import load_kernel, run

after = "--after" in sys.argv
N = 8192
k = load_kernel("pair_transpose.cu", "transpose", defines={"TILED": int(after)})
src = cp.arange(N * N, dtype=cp.float32).reshape(N, N)
dst = cp.empty((N, N), dtype=cp.float32)
ms = run(k, (N // 32, N // 32), (32, 8), (src, dst, cp.int32(N)))
assert bool((dst[:64, :64] == src[:64, :64].T).all())
print(f"{'after' if after else 'before'}: {2 * 4 * N * N / ms / 1e9:.0f} GB/s")
