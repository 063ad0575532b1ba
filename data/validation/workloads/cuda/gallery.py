"""CUDA C++ validation workloads for kprof (blind gallery, group ``cuda``).

    python3 gallery.py NAME        set up NAME's data, launch its kernel 3 times (warm-up), then once more
    python3 gallery.py --list      print the names
    python3 gallery.py --all       run every workload once after the other (sanity run, plain timings)

Each workload compiles one .cu file of this folder with -lineinfo (see _common.py) and launches one
kernel; data/validation/cuda/generate.sh profiles the 4th launch with
``ncu --set full --import-source yes --clock-control none -k regex:^KERNEL$ --launch-skip 3 --launch-count 1``.
Sizes are chosen so that each kernel runs >= 20 us on an H200 and fills the GPU, except where the point is
the launch shape (small grid, few warps, tail).
"""

from __future__ import annotations

import sys

import cupy as cp

from _common import load_kernel, run

SMS = cp.cuda.Device().attributes["MultiProcessorCount"]


def _bf16_pairs(n: int) -> cp.ndarray:
    """n uint32 words, each two bf16 values in [0.5, 1.5) (no NaN/Inf bit patterns)."""
    f = cp.random.uniform(0.5, 1.5, size=2 * n).astype(cp.float32)
    bits = f.view(cp.uint32) >> 16
    return (bits[0::2] | (bits[1::2] << 16)).astype(cp.uint32)


def _mma(blocks: int, iters: int) -> None:
    k = load_kernel("mma_bf16_loop.cu", "mma_bf16_loop")
    a, b = _bf16_pairs(4 * 32), _bf16_pairs(16 * 32)
    c = cp.empty(blocks * 256, dtype=cp.float32)
    run(k, (blocks,), (256,), (a, b, c, cp.int32(iters)))


def mma_small_grid() -> None:
    """8 blocks of 8 warps on a 132-SM GPU: tensor pipe busy on 8 SMs only."""
    _mma(8, 1024)


def mma_full_grid() -> None:
    """The same kernel on 4 blocks per SM (one full wave at 60 registers/thread)."""
    _mma(SMS * 4, 256)


def _triad(kernel: str, vec: int) -> None:
    n = 1 << 25  # floats per array: 3 x 128 MB
    k = load_kernel(f"{kernel}.cu", kernel)
    a = cp.empty(n, dtype=cp.float32)
    b = cp.ones(n, dtype=cp.float32)
    c = cp.ones(n, dtype=cp.float32)
    nv = n // vec
    ms = run(k, ((nv + 255) // 256,), (256,), (a, b, c, cp.float32(3.0), cp.int64(nv)))
    print(f"{12 * n / ms / 1e6:.0f} GB/s")


def triad_f4() -> None:
    _triad("triad_f4", 4)


def triad_f2() -> None:
    _triad("triad_f2", 2)


def triad_tail() -> None:
    n = (1 << 25) + 3  # 3 elements for the scalar remainder loop
    k = load_kernel("triad_tail.cu", "triad_tail")
    a = cp.empty(n, dtype=cp.float32)
    b = cp.ones(n, dtype=cp.float32)
    c = cp.ones(n, dtype=cp.float32)
    n4 = n // 4
    ms = run(k, ((n4 + 255) // 256,), (256,), (a, b, c, cp.float32(3.0), cp.int64(n)))
    assert float(a[-1]) == 4.0 and float(a[0]) == 4.0
    print(f"{12 * n / ms / 1e6:.0f} GB/s")


def horner_poly() -> None:
    n4 = 1 << 22  # 16M floats in, 16M out
    k = load_kernel("horner_poly.cu", "horner_poly")
    x = cp.random.uniform(-0.9, 0.9, size=4 * n4).astype(cp.float32)
    y = cp.empty_like(x)
    ms = run(k, (n4 // 256,), (256,), (x, y, cp.int64(n4)))
    print(f"{2 * 128 * 4 * n4 / ms / 1e9:.1f} TFLOP/s (FP32, 2 per FMA)")


def special_functions() -> None:
    n = 1 << 22
    k = load_kernel("transcendental.cu", "special_functions")
    x = cp.random.uniform(0.0, 1.0, size=n).astype(cp.float32)
    y = cp.empty_like(x)
    run(k, (n // 256,), (256,), (x, y, cp.int64(n)))


def fma_chain() -> None:
    n = 1 << 21
    k = load_kernel("fma_chain.cu", "fma_chain")
    x = cp.random.uniform(0.0, 1.0, size=n).astype(cp.float32)
    y = cp.empty_like(x)
    run(k, (SMS,), (128,), (x, y, cp.int64(n), cp.float32(0.999), cp.float32(0.001)))


def _square(n: int):
    rng = cp.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=cp.float32)
    b = rng.standard_normal((n, n), dtype=cp.float32)
    return a, b, cp.empty((n, n), dtype=cp.float32)


def sgemm_naive() -> None:
    n = 768
    k = load_kernel("sgemm_naive.cu", "sgemm_naive")
    a, b, c = _square(n)
    ms = run(k, (n // 32, n // 8), (32, 8), (a, b, c, cp.int32(n)))
    print(f"{2 * n**3 / ms / 1e9:.2f} TFLOP/s")


def sgemm_smem() -> None:
    n = 1024
    k = load_kernel("sgemm_smem.cu", "sgemm_smem")
    a, b, c = _square(n)
    ms = run(k, (n // 32, n // 32), (32, 32), (a, b, c, cp.int32(n)))
    print(f"{2 * n**3 / ms / 1e9:.2f} TFLOP/s")


def sgemm_regtile() -> None:
    n = 2048
    k = load_kernel("sgemm_regtile.cu", "sgemm_regtile")
    a, b, c = _square(n)
    ms = run(k, (n // 128, n // 128), (256,), (a, b, c, cp.int32(n)))
    ref = a[:64] @ b
    err = float(cp.abs(c[:64] - ref).max())
    print(f"{2 * n**3 / ms / 1e9:.2f} TFLOP/s, max |err| vs cupy on 64 rows {err:.2e}")


def list_walk() -> None:
    m = 1 << 24  # 64 MB "next" array
    nthreads = SMS * 2 * 128
    k = load_kernel("pointer_chase.cu", "list_walk")
    perm = cp.random.permutation(m).astype(cp.int32)
    nxt = cp.empty(m, dtype=cp.int32)
    nxt[perm] = cp.roll(perm, -1)  # one cycle through all m slots
    heads = perm[cp.arange(nthreads) * (m // nthreads)]
    out = cp.empty(nthreads, dtype=cp.int32)
    del perm
    run(k, (nthreads // 128,), (128,), (nxt, heads, out, cp.int32(256)))


def hash_probe() -> None:
    cap, n = 1 << 23, 1 << 22  # 8M int2 slots (64 MB), 4M keys: load factor 0.5
    ins = load_kernel("hash_lookup.cu", "hash_insert")
    k = load_kernel("hash_lookup.cu", "hash_probe")
    keys = ((cp.arange(n, dtype=cp.uint64) * 2654435761 + 1) & 0xFFFFFFFF).astype(cp.uint32).view(cp.int32)
    assert int((keys == 0).sum()) == 0
    table = cp.zeros(2 * cap, dtype=cp.int32)
    ins((n // 256,), (256,), (table, keys, cp.int32(n), cp.uint32(cap - 1)))
    queries = keys[cp.random.permutation(n)]
    out = cp.empty(n, dtype=cp.int32)
    run(k, (n // 256,), (256,), (table, queries, out, cp.int32(n), cp.uint32(cap - 1)))
    assert int((out < 0).sum()) == 0


def column_read() -> None:
    rows, ld = 1 << 22, 32  # a 4M x 32 float matrix (512 MB), one column read
    k = load_kernel("column_read.cu", "column_read")
    m = cp.ones(rows * ld, dtype=cp.float32)
    out = cp.empty(rows, dtype=cp.float32)
    run(k, (rows // 256,), (256,), (m, out, cp.int64(rows), cp.int32(ld), cp.int32(5)))


def particle_charge_density() -> None:
    n = 1 << 22  # 4M particles x 32 bytes = 128 MB
    k = load_kernel("aos_fields.cu", "particle_charge_density")
    p = cp.ones(n * 8, dtype=cp.float32)
    rho = cp.empty(n, dtype=cp.float32)
    run(k, (n // 256,), (256,), (p, rho, cp.int64(n), cp.float32(0.5)))


def smem_transpose(pad: int) -> None:
    rows, cols = 8192, 4096  # 128 MB in, 128 MB out
    k = load_kernel("smem_transpose.cu", "smem_transpose", defines={"PAD": pad})
    a = cp.arange(rows * cols, dtype=cp.float32)
    out = cp.empty(rows * cols, dtype=cp.float32)
    run(k, (cols // 32, rows // 32), (32, 8), (a, out, cp.int32(rows), cp.int32(cols)))
    assert bool((out.reshape(cols, rows)[:64, :64] == a.reshape(rows, cols)[:64, :64].T).all())


def digit_histogram() -> None:
    n = 1 << 24  # 64 MB of 32-bit words
    k = load_kernel("local_hist.cu", "digit_histogram")
    x = cp.random.randint(0, 2**31 - 1, size=n, dtype=cp.int64).astype(cp.uint32)
    grid, block = SMS * 8, 256
    out = cp.empty(16 * grid * block, dtype=cp.uint32)
    run(k, (grid,), (block,), (x, out, cp.int64(n)))
    assert int(out.sum()) == 8 * n


def sum_atomic_each() -> None:
    n = 1 << 19
    k = load_kernel("atomic_sum.cu", "sum_atomic_each")
    x = cp.ones(n, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)
    run(k, (n // 256,), (256,), (x, out, cp.int64(n)))


def sum_atomic_per_warp() -> None:
    n = 1 << 26  # 256 MB
    k = load_kernel("atomic_sum.cu", "sum_atomic_per_warp")
    x = cp.ones(n, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)
    ms = run(k, (SMS * 8,), (256,), (x, out, cp.int64(n // 4)))
    print(f"{4 * n / ms / 1e6:.0f} GB/s")


def even_odd_paths() -> None:
    n = 1 << 22
    k = load_kernel("even_odd.cu", "even_odd_paths")
    x = cp.random.uniform(0.0, 1.0, size=n).astype(cp.float32)
    y = cp.empty_like(x)
    run(k, (n // 256,), (256,), (x, y, cp.int64(n)))


def strided_copy_6d() -> None:
    sizes = (16, 16, 16, 8, 16, 64)  # 2^25 elements, 128 MB in + 128 MB out
    n = 1
    for s in sizes:
        n *= s
    strides = [1] * 6  # contiguous input strides (the kernel does not know)
    for d in range(4, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    k = load_kernel("strided_copy_6d.cu", "strided_copy_6d")
    x = cp.arange(n, dtype=cp.float32)
    y = cp.empty_like(x)
    args = [x, y, cp.uint32(n)] + [cp.uint32(s) for s in sizes[1:]] + [cp.uint32(t) for t in strides]
    run(k, (n // 256,), (256,), tuple(args))
    assert bool((y[:4096] == x[:4096]).all()) and float(y[-1]) == float(x[-1])


def chunk_reverse() -> None:
    chunk, block = 24576, 128  # 96 KB of dynamic shared memory per block: 2 blocks per SM
    grid = SMS * 2
    k = load_kernel("chunk_reverse.cu", "chunk_reverse")
    k.max_dynamic_shared_size_bytes = chunk * 4
    x = cp.arange(grid * chunk, dtype=cp.float32)
    y = cp.empty_like(x)
    run(k, (grid,), (block,), (x, y, cp.int32(chunk)), shared_mem=chunk * 4)
    assert float(y[0]) == float(chunk - 1)


def block_fma_work() -> None:
    grid = SMS + SMS // 10  # 145 blocks, one 1024-thread block per SM: 1.1 waves
    k = load_kernel("block_fma_work.cu", "block_fma_work")
    coef = cp.concatenate([cp.full(64, 0.999, dtype=cp.float32), cp.full(64, 0.001, dtype=cp.float32)])
    out = cp.empty(grid * 1024, dtype=cp.float32)
    run(k, (grid,), (1024,), (coef, out, cp.int32(768)))


def dilated_sum() -> None:
    n4 = 1 << 20  # 16 MB of float4, L2-resident
    k = load_kernel("dilated_sum.cu", "dilated_sum")
    x = cp.ones(4 * n4, dtype=cp.float32)
    y = cp.empty_like(x)
    run(k, (n4 // 256,), (256,), (x, y, cp.uint32(n4), cp.uint32(65584)))


def fused_epilogue() -> None:
    rows, cols = 4096, 4096
    k = load_kernel("fused_epilogue.cu", "fused_epilogue")
    x = cp.random.standard_normal(rows * cols, dtype=cp.float32)
    res = cp.random.standard_normal(rows * cols, dtype=cp.float32)
    scale = cp.ones(cols, dtype=cp.float32)
    bias = cp.zeros(cols, dtype=cp.float32)
    pos_t = cp.random.standard_normal(cols * rows, dtype=cp.float32)
    keep = (cp.random.uniform(size=rows * cols) > 0.1).astype(cp.uint8)
    y = cp.empty(rows * cols, dtype=cp.float32)
    stats = cp.empty(2 * rows * (cols // 256), dtype=cp.float32)
    run(k, (cols // 256, rows), (256,), (x, res, scale, bias, pos_t, keep, y, stats, cp.int32(rows),
                                          cp.int32(cols), cp.float32(1.0 / 0.9)))


WORKLOADS = {
    "mma_small_grid": mma_small_grid,
    "mma_full_grid": mma_full_grid,
    "triad_f4": triad_f4,
    "triad_f2": triad_f2,
    "triad_tail": triad_tail,
    "horner_poly": horner_poly,
    "special_functions": special_functions,
    "fma_chain": fma_chain,
    "sgemm_naive": sgemm_naive,
    "sgemm_smem": sgemm_smem,
    "sgemm_regtile": sgemm_regtile,
    "list_walk": list_walk,
    "hash_probe": hash_probe,
    "column_read": column_read,
    "particle_charge_density": particle_charge_density,
    "smem_transpose_conflict": lambda: smem_transpose(0),
    "smem_transpose_padded": lambda: smem_transpose(1),
    "digit_histogram": digit_histogram,
    "sum_atomic_each": sum_atomic_each,
    "sum_atomic_per_warp": sum_atomic_per_warp,
    "even_odd_paths": even_odd_paths,
    "strided_copy_6d": strided_copy_6d,
    "chunk_reverse": chunk_reverse,
    "block_fma_work": block_fma_work,
    "dilated_sum": dilated_sum,
    "fused_epilogue": fused_epilogue,
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--list":
        print("\n".join(WORKLOADS))
        return 0
    names = list(WORKLOADS) if argv[0] == "--all" else argv
    failed = []
    for name in names:
        if name not in WORKLOADS:
            print(f"gallery.py: unknown workload {name!r} (see --list)", file=sys.stderr)
            return 2
        try:
            WORKLOADS[name]()
        except Exception as e:  # noqa: BLE001 - in --all, one failure must not hide the others
            if len(names) == 1:
                raise
            failed.append(name)
            print(f"FAILED {name}: {type(e).__name__}: {e}", file=sys.stderr)
        cp.cuda.Device().synchronize()
        cp.get_default_memory_pool().free_all_blocks()
    if failed:
        print(f"failed: {' '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
