"""blind10 CUDA C++ workloads for kprof (blind gallery, group ``blind10``): one source construct each.

    python3 kernels.py NAME              set up NAME's data, check its kernel's result once, launch it 2 more
                                         times (warm-up), then once more (the launch ncu profiles)
    python3 kernels.py --plain NAME...   the same, then time the kernel and its controls (the fix, and any
                                         other control): median of REPS CUDA-event times, no profiler

Each workload builds a list of variants: the first is the kernel generate.sh captures with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``;
the others are plain-timing controls (never captured), each compiled from its own .cu file (one kernel per
module), except dist_nocap, which is dist_tile.cu built without the register cap.
"""

from __future__ import annotations

import statistics
import sys

import cupy as cp
import numpy as np

from _common import WARMUP, load_module

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]
REPS = 20
PLAIN = False


class V:  # one variant: a kernel launch, its check, its compulsory bytes / FLOP
    def __init__(self, label, fn, grid, block, args, check, nbytes=None, flops=None, before=None):
        self.label, self.fn, self.grid, self.block, self.args = label, fn, grid, block, args
        self.check, self.nbytes, self.flops, self.before = check, nbytes, flops, before

    def launch(self):
        if self.before is not None:
            self.before()
        self.fn(self.grid, self.block, self.args)


def _time(v: V) -> float:
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(REPS):
        if v.before is not None:
            v.before()
        start.record()
        v.fn(v.grid, v.block, v.args)
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(ts)


def run(variants: list[V]) -> None:
    for k, v in enumerate(variants if PLAIN else variants[:1]):
        v.launch()
        cp.cuda.Device().synchronize()
        msg = v.check()
        for _ in range(WARMUP - 1):
            v.launch()
        v.launch()  # the launch ncu profiles (the 4th)
        cp.cuda.Device().synchronize()
        line = f"{'control ' if k else ''}{v.label}: grid={v.grid} block={v.block} check: {msg}"
        if PLAIN:
            ms = _time(v)
            line += f"; plain median of {REPS} {ms * 1e3:.1f} us"
            if v.nbytes:
                line += f", {v.nbytes / ms / 1e6:.0f} GB/s of compulsory bytes"
            if v.flops:
                line += f", {v.flops / ms / 1e9:.2f} TFLOP/s"
        print(line, flush=True)


# ----------------------------------------------------------------------------- 1. bucket by a runtime modulus
def bloom_mod():
    n, threads = 1 << 25, 1 << 18  # 128 keys per thread
    nb_mod, nb_pow2 = 3000017, 1 << 22
    cp.random.seed(1)
    keys = (cp.random.random(n) * 2.0**32).astype(cp.uint64).astype(cp.uint32)
    sig = cp.zeros(threads, dtype=cp.uint32)
    k_mod = load_module("bloom_sig.cu").get_function("bloom_sig")
    k_pow2 = load_module("bloom_sig_pow2.cu").get_function("bloom_sig_pow2")

    def check(nb, pow2):
        def f():
            t = 4096
            kk = keys.reshape(n // threads, threads)[:, :t]
            h1 = kk * cp.uint32(0x9E3779B1)
            h2 = ((kk ^ (kk >> cp.uint32(15))) * cp.uint32(0x85EBCA77)) | cp.uint32(1)
            bits = cp.zeros_like(kk)
            for j in range(8):
                s = h1 + cp.uint32(j) * h2
                b = (s & cp.uint32(nb - 1)) if pow2 else (s % cp.uint32(nb))
                bits |= cp.uint32(1) << (b & cp.uint32(31))
            while bits.shape[0] > 1:
                bits = bits[0::2] | bits[1::2]
            ok = bool((bits[0] == sig[:t]).all())
            assert ok
            return f"signatures of threads 0-4095 equal to CuPy's ({n // threads} keys per thread, nbuckets={nb})"
        return f

    g, b = (threads // 256,), (256,)
    return [V(f"bloom_sig (8 probes per key, % nbuckets={nb_mod} at run time)", k_mod, g, b,
              (keys, sig, cp.int32(n), cp.int32(nb_mod)), check(nb_mod, False), nbytes=4 * n),
            V(f"bloom_sig_pow2 (& (nbuckets - 1), nbuckets=2^22)", k_pow2, g, b,
              (keys, sig, cp.int32(n), cp.int32(nb_pow2)), check(nb_pow2, True), nbytes=4 * n)]


# ----------------------------------------------------------------------------- 2. branch on threadIdx.x % 3
def lane_branch():
    n, kk = 3 * (1 << 21), 0.35
    cp.random.seed(2)
    x = cp.random.uniform(0.0, 2.0, n, dtype=cp.float32)
    y = cp.zeros_like(x)
    ref = cp.zeros_like(x)
    k_lane = load_module("rgb_tone.cu").get_function("rgb_tone")
    k_warp = load_module("rgb_tone_warp.cu").get_function("rgb_tone_warp")
    g, b = (n // 384,), (384,)

    def check_lane():
        r, gb = x[0::3].get().astype(np.float64), x[1::3].get().astype(np.float64)
        r0, g0 = r[:4096], gb[:4096]
        for _ in range(32):
            r0 = (r0 * r0 + kk) / (r0 + 1.5)
            g0 = np.exp(-g0 * kk) * 0.75 + g0 * 0.5
        e1 = float(np.abs(y[0::3][:4096].get() - r0).max())
        e2 = float(np.abs(y[1::3][:4096].get() - g0).max())
        assert e1 < 1e-4 and e2 < 1e-4, (e1, e2)
        ref[:] = y
        y.fill(0)
        return f"R and G of pixels 0-4095 vs float64: max |err| {e1:.1e} / {e2:.1e}"

    def check_warp():
        ok = bool((y == ref).all())
        assert ok
        return "bit-equal to rgb_tone"

    return [V("rgb_tone (channel = threadIdx.x % 3: 11 lanes rational, 21 lanes exp per warp)", k_lane, g, b,
              (x, y, cp.int32(n), cp.float32(kk)), check_lane, nbytes=8 * n),
            V("rgb_tone_warp (channel = warp % 3)", k_warp, g, b, (x, y, cp.int32(n), cp.float32(kk)), check_warp,
              nbytes=8 * n)]


# ----------------------------------------------------------------------------- 3. register cap from the build
def reg_cap():
    D, N, K = 64, 1 << 18, 32
    n4, k4 = N // 4, K // 4
    cp.random.seed(3)
    P = cp.random.standard_normal((D, N), dtype=cp.float32)
    C = cp.random.standard_normal((D, K), dtype=cp.float32)
    out = cp.zeros((K, N), dtype=cp.float32)
    k_cap = load_module("dist_tile.cu", options=("-maxrregcount=32",)).get_function("dist_tile")
    k_free = load_module("dist_tile.cu").get_function("dist_tile")
    g, b = (n4 // 128, K // 16), (128,)

    def check():
        p = P[:, :1024].astype(cp.float64)
        ref = ((p[:, None, :] - C.astype(cp.float64)[:, :, None]) ** 2).sum(axis=0)
        err = float(cp.abs(out[:, :1024] - ref).max() / cp.abs(ref).max())
        assert err < 1e-5, err
        out.fill(0)
        return f"points 0-1023 x {K} centroids: max relative err vs float64 {err:.1e}"

    args = (P, C, out, cp.int32(D), cp.int32(n4), cp.int32(k4))
    flops = 3.0 * D * N * K
    return [V("dist_tile built with -maxrregcount=32", k_cap, g, b, args, check, nbytes=4 * (D * N + K * N),
              flops=flops),
            V("dist_nocap (the same dist_tile.cu built without -maxrregcount)", k_free, g, b, args, check,
              nbytes=4 * (D * N + K * N), flops=flops)]


# ----------------------------------------------------------------------------- 4. double accumulator over float data
def fp64_acc():
    nrows = 1 << 19
    cp.random.seed(4)
    X = cp.random.standard_normal((64, nrows), dtype=cp.float32)
    Y = cp.zeros((32, nrows), dtype=cp.float32)
    W = (cp.random.standard_normal((32, 64), dtype=cp.float32) / 8).astype(cp.float32)
    variants = []
    for cu, name in (("feat_proj.cu", "feat_proj"), ("feat_proj_f32.cu", "feat_proj_f32")):
        mod = load_module(cu)
        cp.ndarray(W.shape, cp.float32, mod.get_global("W"))[...] = W  # the __constant__ weights
        variants.append((name, mod.get_function(name)))

    def check():
        ref = W.astype(cp.float64) @ X[:, :4096].astype(cp.float64)
        err = float(cp.abs(Y[:, :4096] - ref).max() / cp.abs(ref).max())
        assert err < 1e-5, err
        Y.fill(0)
        return f"rows 0-4095: max relative err vs float64 {err:.1e}"

    g, b = (nrows // 256,), (256,)
    args = (X, Y, cp.int32(nrows))
    flops = 2.0 * 64 * 32 * nrows
    return [V("feat_proj (double acc over float x * float w, 64 -> 32 per row)", variants[0][1], g, b, args, check,
              nbytes=4 * 96 * nrows, flops=flops),
            V("feat_proj_f32 (float acc)", variants[1][1], g, b, args, check, nbytes=4 * 96 * nrows, flops=flops)]


# ----------------------------------------------------------------------------- 5. global atomics into 256 bins
def joint_hist():
    n = 1 << 24
    cp.random.seed(5)
    a = cp.random.randint(0, 256, n, dtype=cp.int32)
    bimg = cp.clip(a + cp.random.randint(-12, 13, n, dtype=cp.int32), 0, 255)  # a second, similar image
    a8, b8 = a.astype(cp.uint8), bimg.astype(cp.uint8)
    u8 = cp.random.randint(0, 256, n, dtype=cp.int32).astype(cp.uint8)  # an unrelated image (control)
    ref = cp.bincount((a // 16) * 16 + bimg // 16, minlength=256).astype(cp.uint32)
    ref_u = cp.bincount((a // 16) * 16 + u8.astype(cp.int32) // 16, minlength=256).astype(cp.uint32)
    del a, bimg
    hist = cp.zeros(256, dtype=cp.uint32)
    k_glob = load_module("joint_hist.cu").get_function("joint_hist")
    k_smem = load_module("joint_hist_smem.cu").get_function("joint_hist_smem")
    g, b = (SMS * 8,), (256,)
    zero = lambda: hist.fill(0)  # noqa: E731

    def check(r):
        def f():
            assert bool((hist == r).all())
            return (f"equal to cp.bincount; sum {int(hist.sum())} = n; top bin holds {float(r.max()) / n:.3f}, "
                    f"{int((r > n // 512).sum())} bins hold > 1/512 of the pixels")
        return f

    args = (a8, b8, hist, cp.int32(n // 4))
    return [V("joint_hist (16x16 bins, similar images, global atomicAdd per pixel)", k_glob, g, b, args, check(ref),
              nbytes=2 * n, before=zero),
            V("joint_hist_smem (per-block shared bins, one global atomic per bin per block)", k_smem, g, b, args,
              check(ref), nbytes=2 * n, before=zero),
            V("joint_hist on two unrelated images (bins spread evenly)", k_glob, g, b, (a8, u8, hist, cp.int32(n // 4)),
              check(ref_u), nbytes=2 * n, before=zero)]


# ----------------------------------------------------------------------------- 6. accumulate into y through the pointer
def alias_acc():
    n, nvec = 16, 1 << 21
    cp.random.seed(6)
    A = (cp.random.standard_normal((n, n), dtype=cp.float32) / 4).astype(cp.float32)
    X = cp.random.standard_normal((n, nvec), dtype=cp.float32)
    Y = cp.zeros((n, nvec), dtype=cp.float32)
    k_ptr = load_module("mix_apply.cu").get_function("mix_apply")
    k_reg = load_module("mix_apply_reg.cu").get_function("mix_apply_reg")
    g, b = (nvec // 256,), (256,)

    def check():
        ref = A.astype(cp.float64) @ X[:, :8192].astype(cp.float64)
        err = float(cp.abs(Y[:, :8192] - ref).max())
        assert err < 1e-5, err
        Y.fill(0)
        return f"vectors 0-8191: max |err| vs float64 {err:.1e}"

    args = (A, X, Y, cp.int32(n), cp.int32(nvec))
    return [V(f"mix_apply (y[r * nvec] += A[r * n + c] * x[c * nvec], n={n})", k_ptr, g, b, args, check,
              nbytes=8 * n * nvec, flops=2.0 * n * n * nvec),
            V("mix_apply_reg (register accumulator, __restrict__)", k_reg, g, b, args, check, nbytes=8 * n * nvec,
              flops=2.0 * n * n * nvec)]


# ----------------------------------------------------------------------------- 8. size_t loop counter and index math
def size_t_loop():
    width, height, pitch = 6000, 8000, 6144
    cp.random.seed(8)
    src = cp.random.randint(0, 256, width * height, dtype=cp.int32).astype(cp.uint8)
    dst = cp.zeros(height * pitch, dtype=cp.uint8)
    k64 = load_module("pitch_copy.cu").get_function("pitch_copy")
    k32 = load_module("pitch_copy_u32.cu").get_function("pitch_copy_u32")
    g, b = (SMS * 8,), (256,)

    def check():
        ok = bool((dst.reshape(height, pitch)[:, :width] == src.reshape(height, width)).all())
        assert ok
        dst.fill(0)
        return f"{height} rows of {width} bytes equal to the source (pitch {pitch})"

    assert width * height < 2**32 and height * pitch < 2**32  # the 32-bit kernel's range check
    return [V(f"pitch_copy (size_t counter, i / width, i % width, y * pitch; {width}x{height} u8)", k64, g, b,
              (src, dst, cp.uint64(width), cp.uint64(height), cp.uint64(pitch)), check, nbytes=2 * width * height),
            V("pitch_copy_u32 (unsigned int counter and index math)", k32, g, b,
              (src, dst, cp.uint32(width), cp.uint32(height), cp.uint32(pitch)), check, nbytes=2 * width * height)]


WORKLOADS = {f.__name__: f for f in (bloom_mod, lane_branch, reg_cap, fp64_acc, joint_hist, alias_acc, size_t_loop)}


def main(argv: list[str]) -> int:
    global PLAIN
    if not argv or argv[0] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    PLAIN = "--plain" in argv
    bad = 0
    for name in [a for a in argv if a != "--plain"]:
        try:
            run(WORKLOADS[name]())
        except Exception as e:  # noqa: BLE001 - report and go on
            bad += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
