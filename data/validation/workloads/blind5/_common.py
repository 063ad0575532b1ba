"""Shared helpers for the blind5 CUDA C++ workloads (CuPy RawKernel); a copy of
data/validation/workloads/final/_common.py kept here so the galleries can change independently.

Each program compiles its .cu file with ``-lineinfo`` (a ``#line`` directive names the real file so
that ``ncu --import-source yes`` can embed the source), launches the kernel ``WARMUP`` times, then
launches it once more: that last launch is the one ``ncu --launch-skip 3 --launch-count 1`` profiles.
"""

from __future__ import annotations

import os

import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP = 3  # data/validation/blind5/generate.sh profiles with --launch-skip 3: keep the two in step


def load_kernel(cu_file: str, name: str, defines: dict[str, int] | None = None,
                options: tuple[str, ...] = ()) -> cp.RawKernel:
    """Compile kernel ``name`` from ``cu_file`` (next to this module) with -lineinfo."""
    path = os.path.join(HERE, cu_file)
    with open(path) as f:
        body = f.read()
    head = "".join(f"#define {k} {v}\n" for k, v in (defines or {}).items())
    src = f'{head}#line 1 "{path}"\n{body}'
    return cp.RawKernel(src, name, options=("-lineinfo",) + tuple(options))


def run(kernel: cp.RawKernel, grid, block, args, shared_mem: int = 0) -> float:
    """Launch WARMUP times, then once more (the profiled launch); return its time in ms."""
    for _ in range(WARMUP):
        kernel(grid, block, args, shared_mem=shared_mem)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    kernel(grid, block, args, shared_mem=shared_mem)
    stop.record()
    stop.synchronize()
    ms = cp.cuda.get_elapsed_time(start, stop)
    print(f"{kernel.name}: grid={grid} block={block} last launch {ms:.3f} ms "
          "(under ncu this is a replayed, serialized time)")
    return ms
