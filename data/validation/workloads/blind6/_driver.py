"""Whole-process PyTorch-profiler (Kineto) driver for the blind6 timeline programs (Kineto and nsys).

A program defines ``setup() -> state`` and ``step(state, i)`` and calls ``run(setup, step, steps=N)``.
``python3 PROG.py --trace OUT.json``: torch.profiler.profile(activities=[CPU, CUDA]) is entered right
after ``import torch``, before any CUDA work (so context creation, lazy module loading and the first
iterations are in the trace), with record_shapes off, no schedule (so no ProfilerStep# markers), no
stack, no memory; the loop runs; torch.cuda.synchronize(); the profiler exits and writes the Chrome
trace. Without --trace the same program runs without a profiler. Prints wall-clock phase durations
and the host time of every step (time.perf_counter, i.e. when the host returned from the step).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

T_START = time.perf_counter()
import torch  # noqa: E402

T_TORCH = time.perf_counter()


def run(setup: Callable[[], Any], step: Callable[[Any, int], None], *, steps: int) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default=None)
    args, _ = ap.parse_known_args()
    prof = None
    if args.trace:
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False)
        prof.__enter__()
    t0 = time.perf_counter()
    state = setup()
    t1 = time.perf_counter()
    marks = [t1]
    for i in range(steps):
        step(state, i)
        marks.append(time.perf_counter())
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    if prof is not None:
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(args.trace)
    t3 = time.perf_counter()
    per = [(b - a) * 1e3 for a, b in zip(marks, marks[1:])]
    print(f"import torch {T_TORCH - T_START:.3f} s, setup {t1 - t0:.3f} s, loop {t2 - t1:.4f} s "
          f"({steps} steps, host returned from the steps after {', '.join(f'{p:.2f}' for p in per)} ms; "
          f"final synchronize {1e3 * (t2 - marks[-1]):.2f} ms), profiler exit + export {t3 - t2:.2f} s", flush=True)
