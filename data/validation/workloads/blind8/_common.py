"""Shared helpers for the blind8 CUDA C++ workloads (CuPy RawKernel); adapted from ../blind6/_common.py.

Each program compiles ONE .cu file of this folder into its own module (one kernel per module keeps the
cubin that a report embeds small) with ``-lineinfo``; a ``#line 1`` directive names the real file so that
``ncu --import-source yes`` embeds the source. The controls (the one-change fixes) compile the same file
with a ``#define`` put in front of the ``#line`` directive, so line numbers are the same in both variants.
The program launches the kernel once (checked) and WARMUP-1 more times, then once more: that last launch
is the one ``ncu --launch-skip 3 --launch-count 1`` profiles.
"""

from __future__ import annotations

import os

import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP = 3  # data/validation/blind8/generate.sh profiles with --launch-skip 3: keep the two in step


def load_kernel(cu_file: str, name: str, defines: dict[str, object] | None = None,
                options: tuple[str, ...] = ()) -> cp.RawKernel:
    """Compile kernel ``name`` from ``cu_file`` (next to this module) with -lineinfo."""
    path = os.path.join(HERE, cu_file)
    with open(path) as f:
        body = f.read()
    head = "".join(f"#define {k} {v}\n" for k, v in (defines or {}).items())
    src = f'{head}#line 1 "{path}"\n{body}'
    return cp.RawKernel(src, name, options=("-lineinfo",) + tuple(options))
