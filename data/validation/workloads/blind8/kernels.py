"""blind8 CUDA C++ workloads for kprof (blind gallery, group ``blind8``): one slow source construct per kernel,
each with its one-change control.

    python3 kernels.py NAME              set up NAME's data, check the kernel's result once, launch it 2 more
                                         times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --plain NAME...   the same, then time REPS more launches (median of CUDA-event times,
                                         no profiler)
    python3 kernels.py --list            the workload names

NAME is a captured workload (e.g. ``idiv_index``) or a control (``idiv_index@fix``, ``div_data@sorted``, ...).
Each workload compiles one .cu file of this folder into its own CuPy module with -lineinfo (see _common.py);
a control compiles the same file with one ``#define`` (same line numbers) or runs the same kernel on other data.
data/validation/blind8/generate.sh profiles the 4th launch with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``.
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp
import numpy as np

from _common import WARMUP, load_kernel

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]
PLAIN = False
REPS = 20


def _run(label, kernel, grid, block, args, check, shared_mem=0, work=None):
    kernel(grid, block, args, shared_mem=shared_mem)
    cp.cuda.Device().synchronize()
    try:
        msg = check()
    except AssertionError as e:  # keep going: the capture and the timing are still wanted; the log says so
        msg = f"CHECK FAILED {e!r}"
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
        for _ in range(REPS):
            start.record()
            kernel(grid, block, args, shared_mem=shared_mem)
            stop.record()
            stop.synchronize()
            ts.append(cp.cuda.get_elapsed_time(start, stop))
        ms = statistics.median(ts)
        extra = f" (min {min(ts):.4f}, max {max(ts):.4f})"
    else:
        extra = " (under ncu this is a replayed, serialized time)"
    line = (f"{label}: grid={grid} block={block} smem={shared_mem} check: {msg}; "
            f"{'plain median of %d' % REPS if PLAIN else 'last launch'} {ms:.4f} ms{extra}")
    if work:
        line += ", " + work(ms)
    print(line, flush=True)
    return ms


def _close(got, ref, tol, what=""):
    got = cp.asarray(got, dtype=cp.float64)
    ref = cp.asarray(ref, dtype=cp.float64)
    assert bool(cp.isfinite(got).all()), "non-finite output"
    err = float(cp.abs(got - ref).max() / max(float(cp.abs(ref).max()), 1e-30))
    assert err < tol, (what, err)
    return f"{what}max |err| / max |ref| {err:.1e} (< {tol:g})"


# ----------------------------------------------------------------------------- 1. integer division by a run-time W
def idiv_index(variant: str = "") -> None:
    W, per_thread, block = 1000, 512, 256
    grid = SMS * 16
    k = load_kernel("idiv_index.cu", "idiv_index", {"W_CONST": W} if variant == "fix" else None)
    out = cp.zeros(grid * block, dtype=cp.uint32)
    nthreads = grid * block

    def check():
        tid = cp.arange(4096, dtype=cp.int64)[:, None]
        i = tid + cp.arange(per_thread, dtype=cp.int64)[None, :] * nthreads
        ref = (((i // W) ^ (i % W)).sum(axis=1) % (1 << 32)).astype(cp.uint32)
        assert bool((out[:4096] == ref).all())
        return "threads 0-4095 equal to CuPy's int64 // and %"

    _run(f"idiv_index{'@fix (W a compile-time constant)' if variant else ' (W a kernel argument)'}", k,
         (grid,), (block,), (out, cp.int32(W), cp.int32(per_thread)), check,
         work=lambda ms: f"{nthreads * per_thread / ms / 1e6:.1f} G index splits/s")


# ----------------------------------------------------------------------------- 2./3. divergent branch, two heavy paths
DIV_N = 1 << 23
DIV_STEPS = 256


def _paths_ref(v, odd):
    a = v.astype(cp.float64)
    b = a.copy()
    for _ in range(DIV_STEPS):
        a = a * (a * 0.5) - 0.25
        b = b * 0.75 + 0.125
        b = b * b - 0.375
    return cp.where(odd, a, b)


def div_tid(variant: str = "") -> None:
    k = load_kernel("div_tid.cu", "div_tid", {"PER_WARP": 1} if variant == "fix" else None)
    cp.random.seed(11)
    x = cp.random.uniform(-1, 1, DIV_N, dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        sl = slice(0, 1 << 16)
        return _close(y[sl], _paths_ref(x[sl], (cp.arange(1 << 16) & 1) == 1), 1e-4, "elements 0-65535 (odd: path_a): ")

    _run(f"div_tid{'@fix (branch on (threadIdx.x / 32) & 1, elements remapped)' if variant else ' (branch on threadIdx.x & 1)'}",
         k, (DIV_N // 256,), (256,), (x, y), check,
         work=lambda ms: f"{DIV_N * DIV_STEPS * 2 / ms / 1e9:.2f} T path-FLOP-instr/s")


def div_data(variant: str = "") -> None:
    k = load_kernel("div_data.cu", "div_data")
    cp.random.seed(12)
    x = cp.random.uniform(-1, 1, DIV_N, dtype=cp.float32)
    flag = (cp.random.random(DIV_N) < 0.5).astype(cp.uint8)
    if variant == "sorted":  # the control: elements binned by flag first (a stable partition), same work
        zero = flag == 0
        x, flag = cp.concatenate([x[zero], x[~zero]]), cp.concatenate([flag[zero], flag[~zero]])
    y = cp.zeros_like(x)
    frac = float(flag.astype(cp.float32).mean())

    def check():
        sl = slice(0, 1 << 16)
        if variant == "sorted":  # the first 2^16 are all flag 0; check the boundary region too
            mid = int((flag == 0).sum())
            sl = slice(mid - (1 << 15), mid + (1 << 15))
        return _close(y[sl], _paths_ref(x[sl], flag[sl] == 1), 1e-4, f"flag mean {frac:.4f}; ")

    _run(f"div_data{'@sorted (flags and elements binned by flag)' if variant else ' (random 0/1 flags)'}",
         k, (DIV_N // 256,), (256,), (x, flag, y), check,
         work=lambda ms: f"{DIV_N * DIV_STEPS * 2 / ms / 1e9:.2f} T path-FLOP-instr/s")


# ----------------------------------------------------------------------------- 4. register cap -> spills
def spill_cap(variant: str = "") -> None:
    n, K = SMS * 4 * 256, 256  # one wave of 4 blocks of 256 per SM as captured
    k = load_kernel("spill_cap.cu", "spill_cap", {"MIN_BLOCKS": 1} if variant == "fix" else None)
    cp.random.seed(4)
    x = cp.random.uniform(-0.9, 0.9, K, dtype=cp.float32)
    w = cp.random.uniform(-1, 1, 32 * n, dtype=cp.float32)
    y = cp.zeros(32 * n, dtype=cp.float32)

    def check():
        m = 1024
        wr = w.reshape(32, n)[:, :m].astype(cp.float64)
        acc = cp.zeros_like(wr)
        for kk in range(K):
            acc = acc * float(x[kk]) + wr
        return _close(y.reshape(32, n)[:, :m], acc, 1e-5, "threads 0-1023, 32 outputs each: ")

    _run(f"spill_cap{'@fix (__launch_bounds__(256, 1))' if variant else ' (__launch_bounds__(256, 4): <= 64 registers)'}",
         k, (n // 256,), (256,), (x, w, y, cp.int32(n), cp.int32(K)), check,
         work=lambda ms: f"{2.0 * n * K * 32 / ms / 1e9:.2f} TFLOP/s")


# ----------------------------------------------------------------------------- 6. FP64 promotion by a double literal
def fp64_literal(variant: str = "") -> None:
    N, steps, c = 1 << 21, 256, -0.5
    k = load_kernel("fp64_literal.cu", "fp64_literal", {"FLOAT_LITERAL": 1} if variant == "fix" else None)
    cp.random.seed(6)
    x = cp.random.uniform(-1, 1, N, dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        v = x[:1 << 16].astype(cp.float64)
        for _ in range(steps):
            v = (v * v + c) * 0.999
        return _close(y[:1 << 16], v, 1e-5, "elements 0-65535: ")

    _run(f"fp64_literal{'@fix (0.999f)' if variant else ' (double literal 0.999)'}", k, (N // 256,), (256,),
         (x, y, cp.float32(c), cp.int32(steps)), check,
         work=lambda ms: f"{N * steps / ms / 1e9:.2f} G steps/s")


# ----------------------------------------------------------------------------- 7. half <-> float conversions per op
def half_convert(variant: str = "") -> None:
    N2, steps, a, b = 1 << 22, 256, 0.9, 0.05
    k = load_kernel("half_convert.cu", "half_convert", {"NATIVE": 1} if variant == "fix" else None)
    cp.random.seed(7)
    xh = cp.random.uniform(-2, 2, 2 * N2).astype(cp.float16)
    x = xh.view(cp.uint32)
    y = cp.zeros_like(x)
    a2 = int(np.array([a, a], dtype=np.float16).view(np.uint32)[0])
    b2 = int(np.array([b, b], dtype=np.float16).view(np.uint32)[0])

    def check():
        v = xh[:1 << 16].astype(cp.float64)
        for _ in range(steps):
            v = float(np.float16(a)) * v + float(np.float16(b))
        # rounding to half every step: the iteration settles within ~10 half-ulps of the float64 fixed point
        return _close(y.view(cp.float16)[:1 << 16], v, 1e-2, "halves 0-65535 vs float64: ")

    _run(f"half_convert{'@fix (fma.rn.f16x2 on the pair)' if variant else ' (cvt to float, FFMA, cvt back per element)'}",
         k, (N2 // 256,), (256,), (x, y, cp.uint32(a2), cp.uint32(b2), cp.int32(steps)), check,
         work=lambda ms: f"{2 * N2 * steps / ms / 1e9:.1f} G half-updates/s")


# ----------------------------------------------------------------------------- 8. sinf slow path
def sinf_large(variant: str = "") -> None:
    N, steps = 1 << 21, 16
    k = load_kernel("sinf_large.cu", "sinf_large", {"FAST_SIN": 1} if variant == "fast" else None)
    cp.random.seed(8)
    if variant == "reduced":  # arguments v * k below 105615: sinf's fast path
        x = cp.random.uniform(0.0, 105615.0 / steps * 0.999, N, dtype=cp.float32)
    else:
        x = cp.random.uniform(1.0e5, 2.0e5, N, dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        v = x[:1 << 16]
        ref = cp.zeros(v.shape, dtype=cp.float64)
        for kk in range(1, steps + 1):
            ref += cp.sin((v * cp.float32(kk)).astype(cp.float64))
        err = float(cp.abs(y[:1 << 16].astype(cp.float64) - ref).max())
        if variant != "fast":
            assert err < 1e-4 * steps, err
        return (f"args {float(v.min()):.0f}..{float(v.max()) * steps:.0f}; max |err| vs float64 sin of the float32 "
                f"arguments {err:.1e}{' (__sinf: not accurate at these arguments)' if variant == 'fast' else ''}")

    label = {"": " (sinf, all arguments > 105615)", "reduced": "@reduced (sinf, arguments < 105615)",
             "fast": "@fast (__sinf)"}[variant]
    _run(f"sinf_large{label}", k, (N // 256,), (256,), (x, y, cp.int32(steps)), check,
         work=lambda ms: f"{N * steps / ms / 1e6:.0f} M sinf/s")


# ----------------------------------------------------------------------------- 9. dynamically indexed local array
def local_index(variant: str = "") -> None:
    n, lookups = SMS * 8 * 256 * 2, 2048
    k = load_kernel("local_index.cu", "local_index", {"fix": {"SELECT": 1}, "shared": {"SHARED": 1}}.get(variant))
    cp.random.seed(9)
    x = cp.random.uniform(-1, 1, 16 * n, dtype=cp.float32)
    y = cp.zeros(n, dtype=cp.float32)

    def check():
        m = 4096
        t = x.reshape(16, n)[:, :m].T  # (m, 16)
        h = t[:, 0].copy().view(cp.uint32)
        acc = cp.zeros(m, dtype=cp.float32)
        rows = cp.arange(m)
        for _ in range(lookups):
            h = h * cp.uint32(1664525) + cp.uint32(1013904223)
            acc = acc + t[rows, (h >> cp.uint32(28)).astype(cp.int64)]
        return _close(y[:m], acc, 1e-5, "threads 0-4095 vs the same LCG in CuPy: ")

    label = {"": " (t[idx], idx from data)", "fix": "@fix (4-level select tree, t[] in registers)",
             "shared": "@shared (ts[idx][threadIdx.x] in shared memory)"}[variant]
    _run(f"local_index{label}",
         k, (n // 256,), (256,), (x, y, cp.int32(n), cp.int32(lookups)), check,
         work=lambda ms: f"{n * lookups / ms / 1e6:.0f} M lookups/s")


# ----------------------------------------------------------------------------- 10. atomics in a loop
def atomic_loop(variant: str = "") -> None:
    n = 1 << 18
    grid = SMS * 2  # 67584 threads, ~3.9 loop iterations each
    k = load_kernel("atomic_loop.cu", "atomic_loop", {"PER_WARP": 1} if variant == "fix" else None)
    cp.random.seed(10)
    a = cp.random.uniform(0, 1, n, dtype=cp.float32)
    b = cp.random.uniform(0, 1, n, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)

    def check():
        # one float32 accumulator: serial rounding (as captured) costs ~1e-4 relative; the warp tree far less
        return _close(out, cp.dot(a.astype(cp.float64), b.astype(cp.float64)), 1e-3, "dot of 2^18 (one launch): ")

    _run(f"atomic_loop{'@fix (register sum, warp shuffle reduce, 1 atomic per warp)' if variant else ' (atomicAdd(out, a[i]*b[i]) per element)'}",
         k, (grid,), (256,), (a, b, out, cp.int32(n)), check,
         work=lambda ms: f"{n / ms / 1e3:.1f} M elements/s")


# ----------------------------------------------------------------------------- 11. __syncthreads() per element
def sync_loop(variant: str = "") -> None:
    block = 1024
    nx, ny = SMS * 2 * block * 2, 2048
    k = load_kernel("sync_loop.cu", "sync_loop", {"TILE": block} if variant == "fix" else None)
    cp.random.seed(111)
    x = cp.random.uniform(-1, 1, nx, dtype=cp.float32)
    yv = cp.random.uniform(-1, 1, ny, dtype=cp.float32)
    out = cp.zeros_like(x)

    def check():
        xs = x[:4096].astype(cp.float64)[:, None]
        ref = ((xs - yv.astype(cp.float64)[None, :]) ** 2).sum(axis=1)
        return _close(out[:4096], ref, 1e-5, "x 0-4095: ")

    _run(f"sync_loop{'@fix (TILE = blockDim.x = 1024: one barrier pair per 1024 values)' if variant else ' (TILE 1: two barriers per value)'}",
         k, (nx // block,), (block,), (x, yv, out, cp.int32(ny)), check,
         work=lambda ms: f"{nx * ny / ms / 1e9:.1f} G pairs/s")


# ----------------------------------------------------------------------------- 12. aliasing: reloads in the loop
def alias_reload(variant: str = "") -> None:
    n, m = SMS * 8 * 256 * 4, 64
    k = load_kernel("alias_reload.cu", "alias_reload", {"RESTRICT": "__restrict__"} if variant == "fix" else None)
    cp.random.seed(12)
    x = cp.random.uniform(-1, 1, m * n, dtype=cp.float32)
    alpha = cp.random.uniform(0.5, 1.5, n, dtype=cp.float32)
    beta = cp.random.uniform(-1, 1, n, dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        rows = slice(0, 8 * n)
        ref = alpha.astype(cp.float64)[None, :] * x[rows].reshape(8, n).astype(cp.float64) + beta[None, :]
        return _close(y[rows].reshape(8, n), ref, 1e-6, "rows 0-7: ")

    _run(f"alias_reload{'@fix (__restrict__ pointers)' if variant else ' (plain pointers)'}", k, (n // 256,), (256,),
         (y, x, alpha, beta, cp.int32(n), cp.int32(m)), check,
         work=lambda ms: f"{8.0 * m * n / ms / 1e6:.0f} GB/s of compulsory bytes (x read + y written)")


# ----------------------------------------------------------------------------- 5. 64-bit index arithmetic
def idx64(variant: str = "") -> None:
    rows, ld, iters, block = 256, 1024, 1024, 256
    grid = SMS * 16
    k = load_kernel("idx64.cu", "idx64", {"INDEX32": 1} if variant == "fix" else None)
    cp.random.seed(5)
    a = cp.random.uniform(-1, 1, rows * ld, dtype=cp.float32)
    out = cp.zeros(grid * block, dtype=cp.float32)
    it = cp.int32 if variant == "fix" else cp.int64

    def check():
        warps = cp.arange(128, dtype=cp.int64)[:, None]
        kk = cp.arange(iters, dtype=cp.int64)[None, :]
        r = (kk * 97 + warps * 13) & (rows - 1)  # (128 warps, iters)
        tab = a.reshape(rows, ld)[:, :32].astype(cp.float64)
        ref = tab[r].sum(axis=1)  # (128, 32)
        return _close(out[:128 * 32].reshape(128, 32), ref, 1e-5, "warps 0-127: ")

    _run(f"idx64{'@fix (int index_t)' if variant else ' (long long index_t)'}", k, (grid,), (block,),
         (a, out, it(ld), it(rows - 1), cp.int32(iters)), check,
         work=lambda ms: f"{grid * block * iters / ms / 1e6:.0f} M loads/s")


# ----------------------------------------------------------------------------- 13. predicated-off loads
def pred_load(variant: str = "") -> None:
    n = 1 << 27
    grid = SMS * 8
    k = load_kernel("pred_load.cu", "pred_load", {"COMPACT": 1} if variant == "fix" else None)
    cp.random.seed(13)
    x = cp.random.uniform(0, 1, n, dtype=cp.float32)
    out = cp.zeros(grid * 256, dtype=cp.float32)

    def check():
        return _close(out.astype(cp.float64).sum(), x[::8].astype(cp.float64).sum(), 1e-5, "sum of x[::8]: ")

    _run(f"pred_load{'@fix (x[8 * j], every lane useful)' if variant else ' (if ((i & 7) == 0) acc += x[i])'}",
         k, (grid,), (256,), (x, out, cp.int32(n)), check,
         work=lambda ms: f"{4.0 * n / ms / 1e6:.0f} GB/s over the whole array (every sector is needed)")


BASE = {f.__name__: f for f in (idiv_index, div_tid, div_data, spill_cap, fp64_literal, half_convert, sinf_large,
                                local_index, atomic_loop, sync_loop, alias_reload, idx64, pred_load)}
VARIANTS = {"div_data": ("sorted",), "sinf_large": ("reduced", "fast"), "local_index": ("fix", "shared")}


def names() -> list[str]:
    out = []
    for b in BASE:
        out.append(b)
        out += [f"{b}@{v}" for v in VARIANTS.get(b, ("fix",))]
    return out


def main(argv: list[str]) -> int:
    global PLAIN
    if not argv or argv[0] == "--list":
        print("\n".join(names()))
        return 0
    if argv[0] == "--plain":
        PLAIN = True
    bad = 0
    for name in [a for a in argv if a != "--plain"]:
        base, _, variant = name.partition("@")
        try:
            if name not in names():
                raise KeyError(name)
            BASE[base](variant)
        except Exception as e:  # noqa: BLE001 - report and go on
            bad += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
