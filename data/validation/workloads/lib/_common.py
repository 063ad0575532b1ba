"""Shared harness for the `lib` validation workloads (Triton, PyTorch eager, library kernels).

Every program builds its tensors, runs the operation WARMUP times (Triton JIT compilation, cuBLAS /
cuDNN heuristics and handle creation, lazy kernel loading all happen here), then runs it ONCE MORE
between cudaProfilerStart and cudaProfilerStop. generate.sh captures with
``ncu --profile-from-start off -k regex:NAME --launch-count 1``: the first matching kernel inside that
window is the one profiled, whatever the library launched during warm-up.

``python3 PROG.py [ARGS]``          capture mode (what ncu runs)
``python3 _sanity.py``              times every workload without a profiler and lists its kernels
"""

from __future__ import annotations

import sys
from typing import Callable

import torch

WARMUP = 3


def profiled_call(fn: Callable[[], object], label: str) -> None:
    """WARMUP calls, then one call inside cudaProfilerStart/Stop (the one ncu profiles)."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{label}: {WARMUP} warm-up calls, then 1 call inside cudaProfilerStart/Stop")


def main(make: Callable[[list[str]], tuple[Callable[[], object], dict]]) -> None:
    fn, info = make(sys.argv[1:])
    profiled_call(fn, info["label"])
