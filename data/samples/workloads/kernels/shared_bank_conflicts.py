"""shared_bank_conflicts: batched 32x32 mat-vec reading a shared tile by column (32-way conflicts)."""
import cupy as cp

from _common import load_kernel, run

NMAT = 1 << 15  # 32768 matrices of 32x32 floats = 128 MB
k = load_kernel("shared_bank_conflicts.cu", "batched_matvec_smem")
A = cp.ones(NMAT * 1024, dtype=cp.float32)
x = cp.ones(NMAT * 8 * 32, dtype=cp.float32)
y = cp.empty(NMAT * 8 * 32, dtype=cp.float32)
run(k, (NMAT,), (32, 8), (A, x, y))
