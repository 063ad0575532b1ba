"""Shared helpers for the blind10 CUDA C++ workloads (CuPy RawModule); adapted from ../blind6/_common.py.

Each .cu file of this folder holds ONE kernel and is compiled as its own module (so a report embeds
one small cubin), with ``-lineinfo`` and a ``#line`` directive naming the real file, so that
``ncu --import-source yes`` embeds the source. A program launches the kernel once (checked) and
WARMUP-1 more times, then once more: that last launch is the one ``ncu --launch-skip 3
--launch-count 1`` profiles.
"""

from __future__ import annotations

import os

import cupy as cp

HERE = os.path.dirname(os.path.abspath(__file__))
WARMUP = 3  # data/validation/blind10/generate.sh profiles with --launch-skip 3: keep the two in step


def load_module(cu_file: str, options: tuple[str, ...] = ()) -> cp.RawModule:
    """Compile ``cu_file`` (next to this module) with -lineinfo plus ``options``."""
    path = os.path.join(HERE, cu_file)
    with open(path) as f:
        body = f.read()
    return cp.RawModule(code=f'#line 1 "{path}"\n{body}', options=("-lineinfo",) + tuple(options))
