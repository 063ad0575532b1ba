"""uncoalesced_global_access: strided gather, 4M outputs read 128 bytes apart (stride 32 floats)."""
import cupy as cp

from _common import load_kernel, run

N, STRIDE = 1 << 22, 32
k = load_kernel("uncoalesced_global_access.cu", "strided_gather")
src = cp.ones(N * STRIDE, dtype=cp.float32)  # 512 MB, 32x what is actually used
dst = cp.empty(N, dtype=cp.float32)
run(k, ((N + 255) // 256,), (256,), (src, dst, cp.int64(N), cp.int32(STRIDE)))
