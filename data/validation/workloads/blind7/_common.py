"""Shared helpers for the blind7 CUDA C++ workloads (CuPy RawKernel); adapted from ../blind6/_common.py.

Each .cu file of this folder holds one kernel and is compiled into its own module with ``-lineinfo`` (a ``#line``
directive names the real file so that ``ncu --import-source yes`` can embed the source). A program launches the
kernel once (checked) and WARMUP-1 more times, then once more: that last launch is the one
``ncu --launch-skip 3 --launch-count 1`` profiles.
"""

from __future__ import annotations

import os

import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP = 3  # data/validation/blind7/generate.sh profiles with --launch-skip 3: keep the two in step


def load_kernel(cu_file: str, name: str, defines: dict[str, int] | None = None,
                options: tuple[str, ...] = ()) -> cp.RawKernel:
    """Compile kernel ``name`` from ``cu_file`` (next to this module) with -lineinfo, one module per kernel."""
    path = os.path.join(HERE, cu_file)
    with open(path) as f:
        body = f.read()
    head = "".join(f"#define {k} {v}\n" for k, v in (defines or {}).items())
    src = f'{head}#line 1 "{path}"\n{body}'
    return cp.RawKernel(src, name, options=("-lineinfo",) + tuple(options))
