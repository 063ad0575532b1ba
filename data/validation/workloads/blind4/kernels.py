"""blind4 CUDA C++ workloads for kprof (blind gallery, group ``blind4``).

    python3 kernels.py NAME        set up NAME's data, check the kernel's result once, launch it 2 more
                                   times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --list      print the names
    python3 kernels.py --all       run every workload one after the other, then time each one 10 more times
                                   (plain timings: median of CUDA-event times, no profiler)
    python3 kernels.py --plain NAME...   the same for the named workloads

Each workload compiles one .cu file of this folder with -lineinfo (see _common.py) and launches one
kernel; data/validation/blind4/generate.sh profiles the 4th launch with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``
(skip 3 = the checked launch + 2 warm-ups). The *_fp32 / *_fit / *_reversed / embag_sum_fit... workloads are
plain-timing controls (not captured).
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp

from _common import WARMUP, load_kernel

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]
PLAIN = False  # --all: also time 10 more launches


def _checked_run(kernel, grid, block, args, check, shared_mem: int = 0, bytes_moved: int | None = None,
                 flops: float | None = None, label: str | None = None) -> float:
    """One launch + check (the first of the WARMUP skipped launches), WARMUP-1 more, then the profiled
    launch, timed with CUDA events."""
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
    if bytes_moved:
        line += f", {bytes_moved / ms / 1e6:.0f} GB/s of compulsory bytes"
    if flops:
        line += f", {flops / ms / 1e9:.2f} TFLOP/s"
    print(line + ("" if PLAIN else " (under ncu this is a replayed, serialized time)"), flush=True)
    return ms


# ----------------------------------------------------------------------------- Mish with a double beta
def _mish(name: str) -> None:
    n = 1 << 26  # 268 MB in, 268 MB out
    k = load_kernel("mish_fp64.cu", name)
    cp.random.seed(1)
    x = cp.random.standard_normal(n, dtype=cp.float32) * 3
    y = cp.zeros_like(x)

    def check():
        xs = x[:1 << 20].astype(cp.float64)
        ref = xs * cp.tanh(cp.log1p(cp.exp(xs)))
        err = float(cp.abs(y[:1 << 20] - ref).max())
        assert err < 1e-4, err
        return f"max |err| vs float64 cupy {err:.1e} (first 2^20)"

    _checked_run(k, ((n + 255) // 256,), (256,), (x, y, cp.int64(n)), check, bytes_moved=8 * n)


def mish_fp64() -> None:
    _mish("mish_fp64")


def mish_fp32() -> None:  # control: plain timing only
    _mish("mish_fp32")


# ----------------------------------------------------------------------------- Horner, coefficients in shared memory
POLY_DEG, POLY_MAX_DEG, POLY_N = 512, 40959, 1 << 24


def _poly(smem_floats: int, label: str, cu: str = "poly_smem.cu", name: str = "poly_eval") -> None:
    k = load_kernel(cu, name)
    smem = 4 * smem_floats
    k.max_dynamic_shared_size_bytes = smem
    cp.random.seed(2)
    coef = cp.random.uniform(-1.0, 1.0, POLY_DEG + 1, dtype=cp.float32) / cp.arange(1, POLY_DEG + 2, dtype=cp.float32)
    x = cp.random.uniform(-1.0, 1.0, POLY_N, dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        xs = x[:4096].astype(cp.float64)
        c64 = coef.astype(cp.float64)
        ref = cp.zeros_like(xs) + c64[POLY_DEG]
        for kk in range(POLY_DEG - 1, -1, -1):
            ref = ref * xs + c64[kk]
        err = float(cp.abs(y[:4096] - ref).max())
        assert err < 1e-3, err
        return f"max |err| vs float64 Horner {err:.1e} (first 4096 points)"

    _checked_run(k, (POLY_N // (256 * 8),), (256,), (coef, cp.int32(POLY_DEG), x, y), check, shared_mem=smem,
                 flops=2.0 * POLY_DEG * POLY_N, label=label)


def poly_smem_lowocc() -> None:
    _poly(POLY_MAX_DEG + 1, "poly_eval (smem for MAX_DEG: 160 KB)")


def poly_smem_fit() -> None:  # control: the buffer sized for deg + 1
    _poly(POLY_DEG + 1, "poly_eval (smem for deg + 1: 2 KB)")


def poly_x8_lowocc() -> None:  # the k loop unrolled by 8, coefficients read ahead (poly_smem_x8.cu)
    _poly(POLY_MAX_DEG + 1, "poly_eval_x8 (smem for MAX_DEG: 160 KB)", "poly_smem_x8.cu", "poly_eval_x8")


def poly_x8_fit() -> None:  # control
    _poly(POLY_DEG + 1, "poly_eval_x8 (smem for deg + 1: 2 KB)", "poly_smem_x8.cu", "poly_eval_x8")


# ----------------------------------------------------------------------------- EmbeddingBag sum, random rows
EB_ROWS, EB_D, EB_BAGS, EB_L = 1 << 21, 128, 65536, 32


def _embag(max_bag: int, label: str) -> None:
    k = load_kernel("embag.cu", "embag_sum")
    smem = 4 * 4 * max_bag  # 4 warps per block
    k.max_dynamic_shared_size_bytes = max(smem, 48 * 1024)
    cp.random.seed(3)
    tf = cp.random.standard_normal((EB_ROWS, EB_D), dtype=cp.float32)
    table = (tf.view(cp.uint32) >> 16).astype(cp.uint16)  # bf16 by truncation
    del tf
    idx = cp.random.randint(0, EB_ROWS, size=EB_BAGS * EB_L, dtype=cp.int32)
    out = cp.zeros((EB_BAGS, EB_D), dtype=cp.float32)

    def check():
        nb = 512
        rows = table[idx[:nb * EB_L]].astype(cp.uint32) << 16
        ref = rows.view(cp.float32).reshape(nb, EB_L, EB_D).astype(cp.float64).sum(axis=1)
        err = float(cp.abs(out[:nb] - ref).max())
        assert err < 1e-3, err
        return f"max |err| vs float64 sums {err:.1e} (first {nb} bags)"

    _checked_run(k, (EB_BAGS // 4,), (128,), (table, idx, out, cp.int32(EB_BAGS), cp.int32(EB_L), cp.int32(max_bag)),
                 check, shared_mem=smem, bytes_moved=EB_BAGS * EB_L * (2 * EB_D + 4) + EB_BAGS * EB_D * 4, label=label)


def embag_fit() -> None:
    _embag(EB_L, "embag_sum (max_bag = L = 32: 512 B smem per block)")


def embag_lowocc() -> None:
    _embag(6144, "embag_sum (max_bag = 6144: 96 KB smem per block)")


# ----------------------------------------------------------------------------- causal decayed sum, triangular work
CD_T, CD_D, CD_W = 2112, 256, 0.999


def _causal(reverse: int, label: str) -> None:
    k = load_kernel("causal_decay.cu", "causal_decay")
    cp.random.seed(4)
    x = cp.random.standard_normal((CD_T, CD_D), dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        x64 = x.astype(cp.float64)
        errs = []
        for i in (0, 777, CD_T - 1):
            wts = CD_W ** cp.arange(i, -1, -1, dtype=cp.float64)
            ref = (wts[:, None] * x64[:i + 1]).sum(axis=0)
            errs.append(float(cp.abs(y[i] - ref).max()))
        assert max(errs) < 1e-2, errs
        return f"rows 0, 777, {CD_T - 1}: max |err| vs float64 {max(errs):.1e}"

    _checked_run(k, (CD_T,), (CD_D,), (x, y, cp.int32(CD_T), cp.float32(CD_W), cp.int32(reverse)), check,
                 flops=2.0 * CD_D * CD_T * (CD_T + 1) / 2, label=label)


def causal_tail() -> None:
    _causal(0, "causal_decay (row = blockIdx: heaviest blocks last)")


def causal_reversed() -> None:  # control: heaviest rows first
    _causal(1, "causal_decay (reverse: heaviest blocks first)")


WORKLOADS = {f.__name__: f for f in (
    mish_fp64, poly_smem_lowocc, embag_lowocc, embag_fit, causal_tail,
    mish_fp32, poly_smem_fit, causal_reversed, poly_x8_lowocc, poly_x8_fit,
)}


def main(argv: list[str]) -> int:
    global PLAIN
    if not argv or argv[0] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    if argv[0] in ("--all", "--plain"):
        PLAIN = True
    names = list(WORKLOADS) if argv[0] == "--all" else [a for a in argv if a != "--plain"]
    bad = 0
    for name in names:
        try:
            WORKLOADS[name]()
        except Exception as e:  # noqa: BLE001 - report and go on in --all
            bad += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
