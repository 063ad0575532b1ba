"""K1: one copy kernel before and after a rewrite under a new name (CuPy RawKernel, -lineinfo).

copy_strided_v1 (copy_strided_v1.cu): each thread copies PER=64 consecutive floats (lanes 256 B apart).
copy_coalesced_v2 (copy_coalesced_v2.cu): the same threads and work, element t + j*T (lanes 4 B apart).
n = 2^26 floats (256 MiB in, 256 MiB out), 2^20 threads = 4096 blocks of 256. Each kernel is in its own
module (its own .cu file), so each ncu report embeds one small cubin.

``python3 k1_copy.py v1|v2``: compile, launch once and check out == in (poisoned output first), launch
WARMUP-1 = 2 more times, then once more: the launch ``ncu --launch-skip 3 --launch-count 1`` profiles.
``python3 k1_copy.py --plain``: both kernels, checked, then 30 interleaved timed launches each (CUDA events),
median / min / max and the GB/s of the compulsory 512 MiB.
"""

import os
import statistics
import sys

import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
N, PER, BLOCK, WARMUP = 1 << 26, 64, 256, 3
FILES = {"v1": ("copy_strided_v1.cu", "copy_strided_v1"), "v2": ("copy_coalesced_v2.cu", "copy_coalesced_v2")}


def load(which):
    fname, name = FILES[which]
    path = os.path.join(HERE, fname)
    with open(path) as f:
        body = f.read()
    src = f'#define PER {PER}\n#line 1 "{path}"\n{body}'
    return cp.RawKernel(src, name, options=("-lineinfo",))


def launch(k, x, y):
    k(((N // PER) // BLOCK,), (BLOCK,), (x, y))


def setup():
    x = cp.random.random(N, dtype=cp.float32)
    y = cp.full(N, cp.nan, dtype=cp.float32)
    return x, y


def checked(k, x, y):
    y.fill(cp.nan)
    launch(k, x, y)
    cp.cuda.Device().synchronize()
    assert bool((y == x).all()), "copy differs"


def main():
    if "--plain" in sys.argv:
        x, y = setup()
        ks = {w: load(w) for w in FILES}
        for w, k in ks.items():
            checked(k, x, y)
            for _ in range(WARMUP):
                launch(k, x, y)
        cp.cuda.Device().synchronize()
        times = {w: [] for w in ks}
        for _ in range(30):
            for w, k in ks.items():
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                launch(k, x, y)
                b.record()
                b.synchronize()
                times[w].append(cp.cuda.get_elapsed_time(a, b))
        med = {}
        for w, ts in times.items():
            med[w] = statistics.median(ts)
            print(f"{FILES[w][1]} (n=2^26 fp32, {PER} floats per thread, grid {(N // PER) // BLOCK} x {BLOCK}): check out == in: ok; "
                  f"plain median of 30 {med[w]:.4f} ms (min {min(ts):.4f}, max {max(ts):.4f}), "
                  f"{2 * 4 * N / med[w] / 1e6:.0f} GB/s of compulsory bytes", flush=True)
        print(f"K1 plain speedup copy_strided_v1 / copy_coalesced_v2 = {med['v1'] / med['v2']:.3f}x", flush=True)
        return
    w = sys.argv[1]
    k = load(w)
    x, y = setup()
    checked(k, x, y)
    for _ in range(WARMUP - 1):
        launch(k, x, y)
    launch(k, x, y)  # launch number 4: the profiled one
    cp.cuda.Device().synchronize()
    assert bool((y == x).all())
    print(f"{FILES[w][1]}: check ok; {WARMUP + 1} launches", flush=True)


if __name__ == "__main__":
    main()
