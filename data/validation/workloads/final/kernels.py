"""Final held-out CUDA C++ workloads for kprof (blind gallery, group ``final``).

    python3 kernels.py NAME        set up NAME's data, check the kernel's result once, launch it 2 more
                                   times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --list      print the names
    python3 kernels.py --all       run every workload after the other (sanity run, plain timings)

Each workload compiles one .cu file of this folder with -lineinfo (see _common.py) and launches one
kernel; data/validation/final/generate.sh profiles the 4th launch with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``
(skip 3 = the checked launch + 2 warm-ups).
"""

from __future__ import annotations

import sys

import cupy as cp

from _common import WARMUP, load_kernel

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]


def _checked_run(kernel, grid, block, args, check, shared_mem: int = 0, bytes_moved: int | None = None) -> float:
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
    line = f"{kernel.name}: grid={grid} block={block} check: {msg}; last launch {ms:.3f} ms"
    if bytes_moved:
        line += f", {bytes_moved / ms / 1e6:.0f} GB/s of compulsory bytes"
    print(line + " (under ncu this is a replayed, serialized time)", flush=True)
    return ms


# ----------------------------------------------------------------------------- matrix-vector product
MV_M, MV_N = 262144, 256  # a tall FP32 matrix: 268 MB, rows of 1 KB


def _matvec(name: str) -> None:
    k = load_kernel("matvec.cu", name)
    cp.random.seed(2)
    A = cp.random.standard_normal((MV_M, MV_N), dtype=cp.float32)
    x = cp.random.standard_normal(MV_N, dtype=cp.float32)
    y = cp.zeros(MV_M, dtype=cp.float32)

    def check():
        ref = A @ x
        err = float(cp.abs(y - ref).max())
        assert err < 1e-3, err
        return f"max |err| vs cupy {err:.1e}"

    if name == "matvec_rows":
        grid, block = (MV_M * 32 // 256,), (256,)  # one warp per row, 8 rows per block
    else:
        grid, block = (MV_M // 256,), (256,)  # one thread per row
    _checked_run(k, grid, block, (A, x, y, cp.int32(MV_M), cp.int32(MV_N)), check, bytes_moved=4 * MV_M * MV_N)


def matvec_rows() -> None:
    _matvec("matvec_rows")


def matvec_cols() -> None:
    _matvec("matvec_cols")


# ----------------------------------------------------------------------------- per-thread sort, 1024-thread blocks
def sort_cols_1024() -> None:
    kk = 128
    n = 2 * SMS * 1024  # 2 blocks of 1024 threads per SM
    k = load_kernel("sort_spill.cu", "sort_cols_1024", {"K": kk})
    cp.random.seed(3)
    a = cp.random.standard_normal((kk, n), dtype=cp.float32)
    out = cp.empty_like(a)

    def check():
        assert bool((out == cp.sort(a, axis=0)).all()), "columns not sorted like cp.sort"
        return f"{n} columns of {kk} equal to cp.sort(axis=0)"

    _checked_run(k, (n // 1024,), (1024,), (a, out, cp.int32(n)), check, bytes_moved=8 * kk * n)


# ----------------------------------------------------------------------------- float4 kernel, pointers offset by one float
def _scale(offset: int) -> None:
    n4 = 1 << 24  # 2^26 floats = 268 MB per vector
    k = load_kernel("scale_vec4.cu", "scale_vec4")
    cp.random.seed(4)
    xbuf = cp.random.uniform(-1.0, 1.0, size=4 * n4 + 4, dtype=cp.float32)
    ybuf = cp.zeros(4 * n4 + 4, dtype=cp.float32)
    x, y = xbuf[offset:offset + 4 * n4], ybuf[offset:offset + 4 * n4]  # views: data pointer + 4*offset bytes
    a = cp.float32(1.5)

    def check():
        assert bool((y == a * x).all())
        return f"y == 1.5 * x; x.data.ptr % 16 = {x.data.ptr % 16}, y.data.ptr % 16 = {y.data.ptr % 16}"

    _checked_run(k, (n4 // 256,), (256,), (x, y, a, cp.int64(n4)), check, bytes_moved=8 * 4 * n4)


def scale_vec4_offset1() -> None:
    _scale(1)


def scale_vec4_aligned() -> None:  # the control: same kernel, aligned views (plain timing; not captured by default)
    _scale(0)


# ----------------------------------------------------------------------------- per-class sums with global atomics
def class_sum_atomic() -> None:
    n, classes = 1 << 25, 320
    k = load_kernel("class_sum_atomic.cu", "class_sum_atomic")
    cp.random.seed(5)
    label = cp.random.randint(0, classes, size=n, dtype=cp.int32)
    val = cp.random.uniform(0.0, 1.0, size=n, dtype=cp.float32)
    out = cp.zeros(classes, dtype=cp.float32)
    ref = cp.bincount(label, weights=val.astype(cp.float64), minlength=classes)

    def check():
        rel = float((cp.abs(out - ref) / ref).max())
        assert rel < 1e-3, rel
        out[...] = 0  # later launches accumulate again; only the first is checked
        return f"{classes} class sums within {rel:.1e} (relative) of bincount"

    _checked_run(k, (SMS * 16,), (256,), (label, val, out, cp.int64(n)), check, bytes_moved=8 * n)


WORKLOADS = {f.__name__: f for f in (
    matvec_rows, matvec_cols, sort_cols_1024, scale_vec4_offset1, scale_vec4_aligned, class_sum_atomic,
)}


def main(argv: list[str]) -> int:
    if not argv or argv[0] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    names = list(WORKLOADS) if argv[0] == "--all" else argv
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
