"""blind7 CUDA C++ workloads for kprof (blind gallery, group ``blind7``).

    python3 kernels.py NAME              set up NAME's data, check the kernel's result once, launch it 2 more
                                         times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --plain NAME...   the same, then time 10 more launches (median of CUDA-event times,
                                         no profiler)

Each workload compiles one .cu file of this folder (one kernel per module, -lineinfo; see _common.py);
data/validation/blind7/generate.sh profiles the 4th launch with ``ncu ... -k regex:^KERNEL$ --launch-skip 3
--launch-count 1`` (``--set full`` for the cuda_* entries, a section or metric subset for the part_* entries).
Controls that are only timed: transpose33 (padded tile), stride1 / stride2 (packed / half-used loads),
branch_sorted (the same kernel on sorted data: every warp uniform).
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp

from _common import WARMUP, load_kernel

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]
PLAIN = False


def _checked_run(kernel, grid, block, args, check, shared_mem: int = 0, bytes_moved: int | None = None,
                 flops: float | None = None, label: str | None = None, reset=None) -> float:
    """Launch once and check, WARMUP-1 more launches, then the profiled launch; --plain: 10 more, timed."""
    kernel(grid, block, args, shared_mem=shared_mem)
    cp.cuda.Device().synchronize()
    msg = check()
    for _ in range(WARMUP - 1):
        kernel(grid, block, args, shared_mem=shared_mem)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    kernel(grid, block, args, shared_mem=shared_mem)
    stop.record()
    stop.synchronize()
    ms = cp.cuda.get_elapsed_time(start, stop)
    if PLAIN:
        ts = []
        for _ in range(10):
            start.record()
            kernel(grid, block, args, shared_mem=shared_mem)
            stop.record()
            stop.synchronize()
            ts.append(cp.cuda.get_elapsed_time(start, stop))
        ms = statistics.median(ts)
    line = (f"{label or kernel.name}: grid={grid} block={block} smem={shared_mem} check: {msg}; "
            f"{'plain median of 10' if PLAIN else 'last launch'} {ms:.4f} ms")
    if PLAIN:
        line += f" (min {min(ts):.4f}, max {max(ts):.4f})"
    if bytes_moved:
        line += f", {bytes_moved / ms / 1e6:.0f} GB/s of compulsory bytes"
    if flops:
        line += f", {flops / ms / 1e9:.2f} TFLOP/s"
    print(line + ("" if PLAIN else " (under ncu this is a replayed, serialized time)"), flush=True)
    return ms


def _relerr(got, ref) -> float:
    return float(cp.linalg.norm(got.astype(cp.float64) - ref) / cp.linalg.norm(ref))


# ----------------------------------------------------------------------------- SGEMM 4096^3 FP32
GM = GN = GK = 4096


def _gemm_data():
    cp.random.seed(1)
    a = cp.random.standard_normal((GM, GK), dtype=cp.float32)
    b = cp.random.standard_normal((GK, GN), dtype=cp.float32)
    c = cp.full((GM, GN), cp.nan, dtype=cp.float32)  # poisoned: every element must be written
    return a, b, c


def _gemm_check(a, b, c):
    def check():
        assert not bool(cp.isnan(c).any()), "unwritten outputs"
        rows = cp.arange(0, GM, 37)[:96]
        ref = a[rows].astype(cp.float64) @ b.astype(cp.float64)
        err = _relerr(c[rows], ref)
        assert err < 1e-4, err
        return f"96 rows vs float64: rel err {err:.1e}, no NaN left"
    return check


def sgemm16() -> None:
    k = load_kernel("sgemm16.cu", "sgemm_tiled16")
    a, b, c = _gemm_data()
    _checked_run(k, (GN // 16, GM // 16), (16, 16), (a, b, c, cp.int32(GM), cp.int32(GN), cp.int32(GK)),
                 _gemm_check(a, b, c), flops=2.0 * GM * GN * GK, label="sgemm_tiled16 (16x16 tiles, 1 output/thread)")


def sgemm_reg() -> None:  # the register-tiled twin
    k = load_kernel("sgemm_reg8x8.cu", "sgemm_reg8x8")
    a, b, c = _gemm_data()
    _checked_run(k, (GN // 128, GM // 128), (256,), (a, b, c, cp.int32(GM), cp.int32(GN), cp.int32(GK)),
                 _gemm_check(a, b, c), flops=2.0 * GM * GN * GK,
                 label="sgemm_reg8x8 (128x128x8 block tile, 8x8 per thread, float4 LDS)")


# ----------------------------------------------------------------------------- sum of 2^28 floats
RN = 1 << 28  # 1 GiB


def _red_data():
    cp.random.seed(2)
    return cp.random.uniform(-1.0, 1.0, RN, dtype=cp.float32)


def reduce_tree() -> None:
    k = load_kernel("reduce_tree.cu", "reduce_tree")
    x = _red_data()
    nb = RN // 256
    part = cp.full(nb, cp.nan, dtype=cp.float32)

    def check():
        ref = x[:1 << 24].reshape(-1, 256).astype(cp.float64).sum(axis=1)
        err = float(cp.abs(part[:1 << 16] - ref).max())
        assert err < 1e-4, err
        tot, reft = float(part.astype(cp.float64).sum()), float(x.astype(cp.float64).sum())
        assert abs(tot - reft) < 1e-3 * max(1.0, abs(reft)) + 1.0, (tot, reft)
        return f"first 65536 partials max |err| {err:.1e} vs float64; sum of partials {tot:.3f} vs {reft:.3f}"

    _checked_run(k, (nb,), (256,), (x, part, cp.int64(RN)), check, bytes_moved=4 * RN + 4 * nb,
                 label="reduce_tree (1 element/thread, smem tree, 8 __syncthreads levels)")


def reduce_shfl() -> None:  # the control / twin
    k = load_kernel("reduce_shfl.cu", "reduce_shfl")
    x = _red_data()
    nb = SMS * 8
    part = cp.full(nb, cp.nan, dtype=cp.float32)

    def check():
        tot, reft = float(part.astype(cp.float64).sum()), float(x.astype(cp.float64).sum())
        assert abs(tot - reft) < 1e-3 * max(1.0, abs(reft)) + 1.0, (tot, reft)
        return f"sum of {nb} partials {tot:.3f} vs float64 {reft:.3f}"

    _checked_run(k, (nb,), (256,), (x.view(cp.float32), part, cp.int64(RN // 4)), check, bytes_moved=4 * RN,
                 label=f"reduce_shfl (grid-stride, 4 float4 in flight/thread, {nb} blocks, warp shuffles)")


# ----------------------------------------------------------------------------- RMSNorm 8192 x 16384 FP32
RR, RD = 8192, 16384  # 512 MiB in, 512 MiB out; 64 KB per row


def _rms_data():
    cp.random.seed(3)
    x = cp.random.standard_normal((RR, RD), dtype=cp.float32)
    w = cp.random.uniform(0.5, 1.5, RD, dtype=cp.float32)
    y = cp.full_like(x, cp.nan)
    return x, w, y


def _rms_check(x, w, y, eps):
    def check():
        assert not bool(cp.isnan(y).any()), "unwritten outputs"
        xs = x[::64].astype(cp.float64)
        ref = xs / cp.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps) * w.astype(cp.float64)
        err = _relerr(y[::64], ref)
        assert err < 1e-5, err
        return f"every 64th row vs float64: rel err {err:.1e}, no NaN left"
    return check


def rms2pass() -> None:
    k = load_kernel("rmsnorm_2pass.cu", "rmsnorm_2pass", {"D": RD})
    x, w, y = _rms_data()
    eps = 1e-6
    _checked_run(k, (RR,), (128,), (x, w, y, cp.float32(eps)), _rms_check(x, w, y, eps), bytes_moved=8 * RR * RD,
                 label="rmsnorm_2pass (128 threads/row, row read twice)")


def rms1pass() -> None:  # the control / twin
    k = load_kernel("rmsnorm_1pass.cu", "rmsnorm_1pass", {"D": RD})
    x, w, y = _rms_data()
    eps = 1e-6
    _checked_run(k, (RR,), (512,), (x, w, y, cp.float32(eps)), _rms_check(x, w, y, eps), bytes_moved=8 * RR * RD,
                 label="rmsnorm_1pass (512 threads/row, row kept in registers)")


# ----------------------------------------------------------------------------- transpose 8192^2 FP32
TN = 8192


def _transpose(pad: bool) -> None:
    name = "transpose33" if pad else "transpose32"
    k = load_kernel(f"{name}.cu", name)
    cp.random.seed(4)
    a = cp.random.standard_normal((TN, TN), dtype=cp.float32)
    o = cp.full_like(a, cp.nan)

    def check():
        assert bool((o == a.T).all())
        return "equal to a.T"

    _checked_run(k, (TN // 32, TN // 32), (32, 8), (a, o, cp.int32(TN)), check, bytes_moved=8 * TN * TN,
                 label=f"{name} ({'tile[32][33], conflict-free' if pad else 'tile[32][32], column read 32-way conflict'})")


def transpose32() -> None:
    _transpose(False)


def transpose33() -> None:  # control (fix)
    _transpose(True)


# ----------------------------------------------------------------------------- strided loads
SN = 1 << 26  # outputs (256 MiB)


def _strided(stride: int) -> None:
    k = load_kernel("strided_scale.cu", "strided_scale")
    cp.random.seed(5)
    src = cp.random.standard_normal(SN * stride, dtype=cp.float32)  # stride 4: a 1 GiB array, 1/4 of it used
    out = cp.full(SN, cp.nan, dtype=cp.float32)
    a = 1.5

    def check():
        assert bool((out == cp.float32(a) * src[::stride]).all())
        return f"equal to a * src[::{stride}]"

    _checked_run(k, ((SN + 255) // 256,), (256,), (src, out, cp.int32(stride), cp.float32(a), cp.int64(SN)), check,
                 bytes_moved=8 * SN, label=f"strided_scale stride={stride} ({SN} outputs)")


def stride4() -> None:
    _strided(4)


def stride2() -> None:  # control (50% of each sector)
    _strided(2)


def stride1() -> None:  # control (packed)
    _strided(1)


# ----------------------------------------------------------------------------- divergent branch
BN_ = 1 << 24


def _branch(sort: bool) -> None:
    k = load_kernel("branch_div.cu", "branch_div")
    cp.random.seed(6)
    x = cp.random.standard_normal(BN_, dtype=cp.float32)
    if sort:
        x = cp.sort(x)  # the same values, grouped by sign: every warp but one takes one path
    y = cp.full_like(x, cp.nan)

    def check():
        import numpy as np
        xs = x[:8192].get().astype(np.float64)
        pos = xs > 0
        ref = xs.copy()
        for _ in range(256):
            ref[pos] = ref[pos] * 0.999 + 0.001 * xs[pos]
        for _ in range(64):
            ref[~pos] = np.sin(ref[~pos]) + xs[~pos]
        err = float(np.abs(y[:8192].get() - ref).max())
        assert err < 1e-3, err
        frac = float((x > 0).mean())
        return f"first 8192 vs float64 max |err| {err:.1e}; {100 * frac:.1f}% positive"

    _checked_run(k, ((BN_ + 255) // 256,), (256,), (x, y, cp.int64(BN_)), check,
                 label=f"branch_div ({'sorted data: uniform warps' if sort else 'random signs: both paths in every warp'})")


def branch_div() -> None:
    _branch(False)


def branch_sorted() -> None:  # control (fix)
    _branch(True)


# ----------------------------------------------------------------------------- DAXPY FP64 2^26
DN = 1 << 26  # 512 MiB per vector


def daxpy() -> None:
    k = load_kernel("daxpy.cu", "daxpy")
    cp.random.seed(7)
    x = cp.random.standard_normal(DN, dtype=cp.float64)
    y = cp.random.standard_normal(DN, dtype=cp.float64)
    y0 = y[:1 << 20].copy()
    a = 0.5

    def check():
        assert bool(cp.allclose(y[:1 << 20], y0 + a * x[:1 << 20], rtol=0, atol=1e-12))
        return "first 2^20 equal to y0 + a*x"

    _checked_run(k, ((DN // 2 + 255) // 256,), (256,), (cp.float64(a), x, y, cp.int64(DN // 2)), check,
                 bytes_moved=24 * DN, label="daxpy fp64 (2 doubles/thread, 1.5 GiB of traffic)")


WORKLOADS = {f.__name__: f for f in (sgemm16, sgemm_reg, reduce_tree, reduce_shfl, rms2pass, rms1pass, transpose32,
                                     transpose33, stride4, stride2, stride1, branch_div, branch_sorted, daxpy)}


def main(argv: list[str]) -> int:
    global PLAIN
    if not argv or argv[0] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    if argv[0] == "--plain":
        PLAIN = True
    bad = 0
    for name in [a for a in argv if a != "--plain"]:
        try:
            WORKLOADS[name]()
        except Exception as e:  # noqa: BLE001 - report and go on
            bad += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
