"""Harness for the blind5 PyTorch / Triton / cuBLAS kernel workloads (not the timeline programs).

``python3 PROG.py [--sanity]``: build the tensors, check the result once, run the operation WARMUP times (Triton
JIT, cuBLAS heuristics, lazy loading), then ONCE MORE between cudaProfilerStart and cudaProfilerStop.
generate.sh captures with ``ncu --profile-from-start off -k regex:NAME --launch-count 1``: the first
matching kernel inside that window is profiled. With --sanity (a plain run, never under ncu) the
program also prints the kernels that one call launches (torch.profiler) and its median CUDA-event time
over 10 calls.
"""

from __future__ import annotations

import statistics
import sys
from typing import Callable

import torch

WARMUP = 3


def _kernels_of(fn: Callable[[], object]) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for e in prof.events():
        if "CUDA" in str(getattr(e, "device_type", "")):
            t = getattr(e, "device_time", None)
            if t is None:
                t = getattr(e, "cuda_time", 0.0)
            out.append(f"{e.name[:160]} ({t:.1f} us)")
    return out


def main(fn: Callable[[], object], label: str, check: Callable[[], str] | None = None,
         bytes_moved: int | None = None, flops: int | None = None) -> None:
    if check is not None:
        print(f"{label}: check: {check()}", flush=True)
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    if "--sanity" in sys.argv:  # timings and kernel names, never under ncu (torch.profiler uses CUPTI too)
        times = []
        for _ in range(10):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        med = statistics.median(times)
        line = f"{label}: median {med:.1f} us over 10 calls (min {min(times):.1f})"
        if bytes_moved:
            line += f", {bytes_moved / med / 1e3:.0f} GB/s of compulsory bytes"
        if flops:
            line += f", {flops / med / 1e6:.1f} TFLOP/s"
        print(line)
        for k in _kernels_of(fn):
            print(f"  kernel: {k}")
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{label}: {WARMUP} warm-up calls, then 1 call inside cudaProfilerStart/Stop", flush=True)
