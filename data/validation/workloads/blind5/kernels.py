"""blind5 CUDA C++ workloads for kprof (blind gallery, group ``blind5``).

    python3 kernels.py NAME        set up NAME's data, check the kernel's result once, launch it 2 more
                                   times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --list      print the names
    python3 kernels.py --plain NAME...   the same, then time 10 more launches (median of CUDA-event times,
                                   no profiler)

Each workload compiles one .cu file of this folder with -lineinfo (see _common.py) and launches one
kernel; data/validation/blind5/generate.sh profiles the 4th launch with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``
(skip 3 = the checked launch + 2 warm-ups). hist_uniform, hist_v16, spmv_vector and mix12_const are plain-timing
controls (not captured).
"""

from __future__ import annotations

import os
import statistics
import sys

import cupy as cp

from _common import HERE, WARMUP, load_kernel

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]
PLAIN = False


def _checked_run(kernel, grid, block, args, check, shared_mem: int = 0, bytes_moved: int | None = None,
                 flops: float | None = None, label: str | None = None, before=None) -> float:
    """One launch + check (the first of the WARMUP skipped launches), WARMUP-1 more, then the profiled
    launch, timed with CUDA events. ``before`` (if given) runs before every launch (e.g. zero an output)."""
    def launch():
        if before is not None:
            before()
        kernel(grid, block, args, shared_mem=shared_mem)

    launch()
    cp.cuda.Device().synchronize()
    msg = check()
    for _ in range(WARMUP - 1):
        launch()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    if before is not None:
        before()
    start.record()
    kernel(grid, block, args, shared_mem=shared_mem)
    stop.record()
    stop.synchronize()
    ms = cp.cuda.get_elapsed_time(start, stop)
    if PLAIN:
        ts = []
        for _ in range(10):
            if before is not None:
                before()
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


# ----------------------------------------------------------------------------- byte histogram, shared atomics
HIST_N = 1 << 29  # 512 MiB of bytes


def _hist(skewed: bool, label: str, name: str = "hist256") -> None:
    k = load_kernel("hist.cu", name)
    cp.random.seed(1)
    data = cp.random.randint(0, 256, HIST_N, dtype=cp.uint8)
    if skewed:  # 90% of the bytes are 0 (a mostly-black image)
        zero = cp.random.random(HIST_N, dtype=cp.float32) < 0.9
        data[zero] = 0
        del zero
    hist = cp.zeros(256, dtype=cp.uint32)

    def check():
        ref = cp.bincount(data[:1 << 26].astype(cp.int32), minlength=256)
        # the kernel ran over all 2^29 bytes: compare bin shares with the first 2^26 bytes' counts
        tot = int(hist.sum())
        assert tot == HIST_N, tot
        share = hist.astype(cp.float64) / HIST_N
        share_ref = ref.astype(cp.float64) / (1 << 26)
        err = float(cp.abs(share - share_ref).max())
        assert err < 1e-3, err
        return f"sum of bins = {tot} = n; bin 0 holds {float(share[0]):.3f} of the bytes; max |share - ref share| {err:.1e}"

    _checked_run(k, (SMS * 8,), (256,), (data, cp.int64(HIST_N), hist), check, bytes_moved=HIST_N,
                 label=label, before=lambda: hist.fill(0))


def hist_skewed() -> None:
    _hist(True, "hist256 (90% of bytes in bin 0)")


def hist_uniform() -> None:  # control: the same kernel on uniform random bytes
    _hist(False, "hist256 (uniform bytes)")


def hist_v16() -> None:  # control: 16 bytes per thread per step (uint4), same skewed data
    _hist(True, "hist256_v16 (16 B per thread per step; 90% of bytes in bin 0)", "hist256_v16")


# ----------------------------------------------------------------------------- CSR SpMV, irregular rows
SP_ROWS = 1 << 21


def _spmv(vector: bool, label: str) -> None:
    import cupyx.scipy.sparse as sps

    name = "spmv_csr_vector" if vector else "spmv_csr_scalar"
    k = load_kernel("spmv.cu", name)
    cp.random.seed(2)
    lens = cp.random.randint(1, 64, SP_ROWS, dtype=cp.int32)
    rowptr = cp.zeros(SP_ROWS + 1, dtype=cp.int32)
    rowptr[1:] = cp.cumsum(lens)
    nnz = int(rowptr[-1])
    col = cp.random.randint(0, SP_ROWS, nnz, dtype=cp.int32)
    val = cp.random.standard_normal(nnz, dtype=cp.float32)
    x = cp.random.standard_normal(SP_ROWS, dtype=cp.float32)
    y = cp.zeros(SP_ROWS, dtype=cp.float32)

    def check():
        a = sps.csr_matrix((val, col, rowptr), shape=(SP_ROWS, SP_ROWS))
        ref = a @ x
        err = float(cp.abs(y - ref).max())
        assert err < 1e-3, err
        return f"nnz {nnz} (mean {nnz / SP_ROWS:.1f} per row); max |err| vs cupyx csr_matrix @ x {err:.1e}"

    threads = SP_ROWS * (32 if vector else 1)
    _checked_run(k, ((threads + 255) // 256,), (256,), (cp.int32(SP_ROWS), rowptr, col, val, x, y), check,
                 bytes_moved=8 * nnz + 4 * (2 * SP_ROWS + 1) + 4 * SP_ROWS, flops=2.0 * nnz, label=label)


def spmv_scalar() -> None:
    _spmv(False, "spmv_csr_scalar (thread per row)")


def spmv_vector() -> None:  # control: warp per row
    _spmv(True, "spmv_csr_vector (warp per row)")


# ----------------------------------------------------------------------------- 12 x 12 mix, weights in registers
MX_N = 1 << 24


def _mix(const: bool, label: str) -> None:
    path = os.path.join(HERE, "mix12.cu")
    with open(path) as f:
        src = f'#line 1 "{path}"\n' + f.read()
    mod = cp.RawModule(code=src, options=("-lineinfo",))
    k = mod.get_function("mix12_const" if const else "mix12")
    cp.random.seed(3)
    w = cp.random.standard_normal(144, dtype=cp.float32) / 12
    wc = mod.get_global("Wc")
    cp.ndarray((144,), cp.float32, wc).set(cp.asnumpy(w))
    x = cp.random.standard_normal(12 * MX_N, dtype=cp.float32)
    y = cp.zeros_like(x)

    def check():
        ref = w.reshape(12, 12).astype(cp.float64) @ x.reshape(12, MX_N)[:, :65536].astype(cp.float64)
        err = float(cp.abs(y.reshape(12, MX_N)[:, :65536] - ref).max())
        assert err < 1e-4, err
        return f"max |err| vs float64 W @ X {err:.1e} (first 65536 vectors)"

    _checked_run(k, (SMS * 8,), (256,), (w, x, y, cp.int32(MX_N)), check, bytes_moved=2 * 48 * MX_N,
                 flops=2.0 * 144 * MX_N, label=label)


def mix12_regs() -> None:
    _mix(False, "mix12 (W through a global pointer, 144 weights hoisted into registers)")


def mix12_const() -> None:  # control
    _mix(True, "mix12_const (W in __constant__)")


# ----------------------------------------------------------------------------- integer hash
HASH_N = 1 << 26


def hash_rounds() -> None:
    k = load_kernel("hash.cu", "hash_rounds")
    cp.random.seed(4)
    x = cp.random.randint(0, 2**31 - 1, HASH_N, dtype=cp.int64).astype(cp.uint32)
    y = cp.zeros_like(x)

    def check():
        import numpy as np

        h = cp.asnumpy(x[:4096]).astype(np.uint64)
        m = np.uint64(0xFFFFFFFF)
        for r in range(32):
            h ^= h >> np.uint64(16)
            h = (h * np.uint64(0x85EBCA6B)) & m
            h ^= h >> np.uint64(13)
            h = (h * np.uint64(0xC2B2AE35)) & m
            h ^= h >> np.uint64(16)
            h = (h + np.uint64((0x9E3779B9 * (r + 1)) & 0xFFFFFFFF)) & m
        bad = int((cp.asnumpy(y[:4096]).astype(np.uint64) != h).sum())
        assert bad == 0, bad
        return "first 4096 hashes equal to a numpy reference"

    # 32 rounds x (3 shifts, 3 xors, 2 multiplies, 1 add) = 288 integer operations per element
    _checked_run(k, ((HASH_N + 255) // 256,), (256,), (x, y, cp.int64(HASH_N)), check, bytes_moved=8 * HASH_N,
                 flops=288.0 * HASH_N, label="hash_rounds (32 rounds; the 'TFLOP/s' is T integer ops/s)")


WORKLOADS = {f.__name__: f for f in (
    hist_skewed, hist_uniform, hist_v16, spmv_scalar, spmv_vector, mix12_regs, mix12_const, hash_rounds,
)}


def main(argv: list[str]) -> int:
    global PLAIN
    if not argv or argv[0] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    if argv[0] == "--plain":
        PLAIN = True
    names = [a for a in argv if a != "--plain"]
    bad = 0
    for name in names:
        try:
            WORKLOADS[name]()
        except Exception as e:  # noqa: BLE001 - report and go on
            bad += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
