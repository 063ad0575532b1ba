"""long_kernel_one_line: a 56-line fused epilogue whose one problem is ONE load (line 22) among many.

fused_epilogue reads x, residual, the keep mask, scale and bias coalesced, writes y coalesced, and reduces
per-block sums through shuffles and shared memory; the positional table is stored transposed, so
pos_t[col * rows + row] (line 22) puts neighbouring lanes 16 KB apart: 32 sectors per request for that
load alone. rows = cols = 4096 (64 MB per float tensor).
"""
import cupy as cp

from _common import load_kernel, run

ROWS, COLS = 4096, 4096
k = load_kernel("long_kernel_one_line.cu", "fused_epilogue")
x = cp.random.standard_normal(ROWS * COLS, dtype=cp.float32)
res = cp.random.standard_normal(ROWS * COLS, dtype=cp.float32)
scale = cp.ones(COLS, dtype=cp.float32)
bias = cp.zeros(COLS, dtype=cp.float32)
pos_t = cp.random.standard_normal(COLS * ROWS, dtype=cp.float32)
keep = (cp.random.uniform(size=ROWS * COLS) > 0.1).astype(cp.uint8)
y = cp.empty(ROWS * COLS, dtype=cp.float32)
stats = cp.empty(2 * ROWS * (COLS // 256), dtype=cp.float32)
run(k, (COLS // 256, ROWS), (256,), (x, res, scale, bias, pos_t, keep, y, stats, cp.int32(ROWS),
                                     cp.int32(COLS), cp.float32(1.0 / 0.9)))
