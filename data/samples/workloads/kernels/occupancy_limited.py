"""occupancy_limited: 48 KB shared memory per 64-thread block caps an SM at 8 warps; latency-bound stream."""
import cupy as cp

from _common import load_kernel, run

N = 1 << 25  # 128 MB in, 128 MB out
k = load_kernel("occupancy_limited.cu", "lut_scale_stream")
src = cp.ones(N, dtype=cp.float32)
lut = cp.linspace(0.5, 1.5, 12288, dtype=cp.float32)
dst = cp.empty(N, dtype=cp.float32)
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
run(k, (sms * 4,), (64,), (src, lut, dst, cp.int64(N)))  # one full wave at 4 blocks/SM
