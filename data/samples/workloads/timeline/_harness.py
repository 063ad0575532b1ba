"""Shared driver for the timeline sample programs.

A program defines ``step(i)`` (one iteration of its loop) and calls ``main(step, ...)``. The driver runs
``warmup`` un-recorded steps (lazy kernel loading, cuBLAS handles, allocator growth), then the
recorded steady state, with an NVTX range per step (``torch.cuda.nvtx.range_push/pop``):

--mode nsys   wrap the recorded steps in cudaProfilerStart/Stop (``torch.cuda.profiler``); run under
              ``nsys profile --capture-range=cudaProfilerApi`` so only the steady state is captured.
--mode torch  torch.profiler with schedule(wait=0, warmup=2, active=steps) and ``prof.step()`` per
              step (ProfilerStep#N in the trace); writes a Chrome trace to --trace (.json.gz).
--mode plain  just run and print the time per step.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import torch

PROFILER_WARMUP = 2


def main(step: Callable[[int], None], *, warmup: int, steps: int) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["plain", "nsys", "torch"], default="plain")
    ap.add_argument("--trace", default="trace.json.gz")
    args = ap.parse_args()

    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()

    if args.mode == "torch":
        from torch.profiler import ProfilerActivity, profile, schedule

        total = PROFILER_WARMUP + steps
        with profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            schedule=schedule(wait=0, warmup=PROFILER_WARMUP, active=steps, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(args.trace),
        ) as prof:
            for i in range(total):
                torch.cuda.nvtx.range_push(f"step {i}")
                step(i)
                torch.cuda.nvtx.range_pop()
                if i == total - 1:
                    torch.cuda.synchronize()  # let the last step's kernels finish inside the trace
                prof.step()
        print(f"wrote {args.trace}")
        return

    if args.mode == "nsys":
        torch.cuda.profiler.start()
    t0 = time.perf_counter()
    for i in range(steps):
        torch.cuda.nvtx.range_push(f"step {i}")
        step(i)
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if args.mode == "nsys":
        torch.cuda.profiler.stop()
    print(f"{steps} steps, {dt / steps * 1e3:.3f} ms per step")
