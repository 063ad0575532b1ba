"""blind6 CUDA C++ workloads for kprof (blind gallery, group ``blind6``).

    python3 kernels.py NAME              set up NAME's data, check the kernel's result once, launch it 2 more
                                         times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --plain NAME...   the same, then time 10 more launches (median of CUDA-event times,
                                         no profiler)

Each workload compiles one .cu file of this folder with -lineinfo (see _common.py) and launches one kernel;
data/validation/blind6/generate.sh profiles the 4th launch with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``.
half_v8 and stencil_copy are plain-timing controls (not captured).
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp

from _common import WARMUP, load_kernel

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]
PLAIN = False


def _checked_run(kernel, grid, block, args, check, shared_mem: int = 0, bytes_moved: int | None = None,
                 flops: float | None = None, label: str | None = None) -> float:
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


# ----------------------------------------------------------------------------- FP16 scale, 2 B vs 16 B per thread
HALF_N = 1 << 28  # 512 MiB in, 512 MiB out


def _half(v8: bool) -> None:
    k = load_kernel("half_scale.cu", "half_scale_v8" if v8 else "half_scale")
    cp.random.seed(1)
    x = cp.random.standard_normal(HALF_N, dtype=cp.float32).astype(cp.float16)
    y = cp.zeros_like(x)
    a, b = 0.5, -0.25

    def check():
        ref = (cp.float32(a) * x[:1 << 22].astype(cp.float32) + cp.float32(b)).astype(cp.float16)
        bad = int((ref.view(cp.uint16) != y[:1 << 22].view(cp.uint16)).sum())
        assert bad == 0, bad
        return "first 2^22 outputs bit-equal to CuPy's float32 math rounded to fp16"

    if v8:
        n8 = HALF_N // 8
        _checked_run(k, ((n8 + 255) // 256,), (256,), (x, y, cp.float32(a), cp.float32(b), cp.int64(n8)), check,
                     bytes_moved=4 * HALF_N, label="half_scale_v8 (16 B per thread)")
    else:
        _checked_run(k, ((HALF_N + 255) // 256,), (256,), (x, y, cp.float32(a), cp.float32(b), cp.int64(HALF_N)),
                     check, bytes_moved=4 * HALF_N, label="half_scale (2 B per thread)")


def half_scalar() -> None:
    _half(False)


def half_v8() -> None:  # control
    _half(True)


# ----------------------------------------------------------------------------- 5-point stencil, shared-memory halo
ST_NX, ST_NY = 16384, 8192  # 512 MiB per grid


def _stencil_data():
    cp.random.seed(2)
    inp = cp.random.standard_normal((ST_NY, ST_NX), dtype=cp.float32)
    return inp, cp.zeros_like(inp)


def stencil_halo() -> None:
    k = load_kernel("stencil5.cu", "stencil5")
    inp, out = _stencil_data()

    def check():
        xp = cp.pad(inp[:2048], ((1, 0), (1, 1)))  # rows 0..2047 (+ the zero row above, the real row below)
        xp = cp.concatenate([xp, cp.pad(inp[2048:2049], ((0, 0), (1, 1)))], axis=0)
        ref = 0.2 * (xp[1:-1, 1:-1] + xp[1:-1, :-2] + xp[1:-1, 2:] + xp[:-2, 1:-1] + xp[2:, 1:-1])
        err = float(cp.abs(out[:2048] - ref).max())
        assert err < 1e-5, err
        return f"rows 0-2047: max |err| vs CuPy slices {err:.1e}"

    _checked_run(k, (ST_NX // 32, ST_NY // 16), (32, 16), (inp, out, cp.int32(ST_NX), cp.int32(ST_NY)), check,
                 bytes_moved=8 * ST_NX * ST_NY, flops=5.0 * ST_NX * ST_NY, label="stencil5 (32x16 tile + halo in smem)")


def stencil_copy() -> None:  # control: the same 1 GiB of traffic as a float4 copy
    k = load_kernel("stencil5.cu", "copy_f4")
    inp, out = _stencil_data()
    n4 = ST_NX * ST_NY // 4

    def check():
        assert bool((out[:64] == inp[:64]).all())
        return "copy equal"

    _checked_run(k, ((n4 + 255) // 256,), (256,), (inp, out, cp.int64(n4)), check, bytes_moved=8 * ST_NX * ST_NY,
                 label="copy_f4 (the stencil's compulsory bytes as a float4 copy)")


# ----------------------------------------------------------------------------- all-pairs n-body
NB_BLOCK = 256
NB_N = SMS * 2 * NB_BLOCK  # 2 blocks of 256 per SM: 67584 bodies on 132 SMs


def nbody_tile() -> None:
    k = load_kernel("nbody.cu", "nbody_acc")
    cp.random.seed(3)
    pos = cp.empty((NB_N, 4), dtype=cp.float32)
    pos[:, :3] = cp.random.uniform(-1, 1, (NB_N, 3), dtype=cp.float32)
    pos[:, 3] = cp.random.uniform(0.5, 1.0, NB_N, dtype=cp.float32) / NB_N
    acc = cp.zeros_like(pos)
    eps2 = 1e-4

    def check():
        p = pos.astype(cp.float64)
        worst = 0.0
        for i in range(16):
            d = p[:, :3] - p[i, :3]
            s = p[:, 3] / (cp.sum(d * d, axis=1) + eps2) ** 1.5
            ref = (d * s[:, None]).sum(axis=0)
            worst = max(worst, float(cp.abs(acc[i, :3] - ref).max() / cp.abs(ref).max()))
        assert worst < 1e-3, worst
        return f"bodies 0-15: max relative err vs float64 {worst:.1e}"

    # 20 FLOP per interaction (the usual n-body convention: rsqrt counted as 4)
    _checked_run(k, (NB_N // NB_BLOCK,), (NB_BLOCK,), (pos, acc, cp.int32(NB_N), cp.float32(eps2)), check,
                 shared_mem=16 * NB_BLOCK, flops=20.0 * NB_N * NB_N,
                 label=f"nbody_acc (n={NB_N}, 20 FLOP per interaction)")


WORKLOADS = {f.__name__: f for f in (half_scalar, half_v8, stencil_halo, stencil_copy, nbody_tile)}


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
