"""warp_divergence: an 8-way switch on threadIdx.x % 8, each case a 256-step loop of different math."""
import cupy as cp

from _common import load_kernel, run

N, ITERS = 1 << 20, 256
k = load_kernel("warp_divergence.cu", "lane_dependent_math")
src = cp.full(N, 0.5, dtype=cp.float32)
dst = cp.empty(N, dtype=cp.float32)
run(k, ((N + 255) // 256,), (256,), (src, dst, cp.int64(N), cp.int32(ITERS)))
