"""no_tensor_cores: 2048^3 FP32 matmul with a 16x16 shared-memory tiled kernel (FFMA only)."""
import cupy as cp

from _common import load_kernel, run

N = 2048
k = load_kernel("no_tensor_cores.cu", "sgemm_smem_tiled")
rng = cp.random.default_rng(0)
A = rng.standard_normal((N, N), dtype=cp.float32)
B = rng.standard_normal((N, N), dtype=cp.float32)
C = cp.empty((N, N), dtype=cp.float32)
ms = run(k, (N // 16, N // 16), (16, 16), (A, B, C, cp.int32(N)))
print(f"{2 * N**3 / ms / 1e9:.1f} TFLOP/s")
