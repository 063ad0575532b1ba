"""Whole-process driver for the timeline samples captured without a capture range
(whole_process_launch_bound, teardown_after_loop); _harness.py is the steady-state driver.

A program defines ``setup() -> state``, ``step(state, i)`` and optionally ``teardown(state)``, and
calls ``run(setup, step, steps=N, ...)``. Nothing is cut out of the capture: this is how most
people profile (``nsys profile python3 app.py``).

--mode nsys | plain  run in order: setup (the start-up), N loop steps, one torch.cuda.synchronize(),
                     teardown. Under ``nsys profile`` with no capture range the capture holds the whole
                     process: interpreter and imports, context creation, lazy module loading, the loop,
                     teardown and exit.
--mode torch         the same inside one torch.profiler.profile(CPU + CUDA), opened before the first
                     CUDA call (right after ``import torch``) and closed after teardown. With
                     ``profiler_steps=True`` prof.step() is called before every loop step (a schedule
                     that always records), so ProfilerStep#0 covers the start-up and ProfilerStep#1..N
                     the steps, the last one running on to the end of teardown. Chrome trace to --trace.
``nvtx=True`` wraps every step in an NVTX range "step N" (nsys only); False leaves no NVTX at all.
Prints the phases' wall-clock durations (time.perf_counter).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable

T_DRIVER = time.perf_counter()
import torch  # noqa: E402

T_TORCH = time.perf_counter()


def run(
    setup: Callable[[], Any],
    step: Callable[[Any, int], None],
    *,
    steps: int,
    teardown: Callable[[Any], None] | None = None,
    nvtx: bool = False,
    profiler_steps: bool = True,
) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["plain", "nsys", "torch"], default="plain")
    ap.add_argument("--trace", default="trace.json.gz")
    args, _ = ap.parse_known_args()

    prof = None
    if args.mode == "torch":
        from torch.profiler import ProfilerAction, ProfilerActivity, profile

        prof = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
            schedule=(lambda _step: ProfilerAction.RECORD) if profiler_steps else None,
            on_trace_ready=lambda p: p.export_chrome_trace(args.trace),
        )
        prof.__enter__()

    t0 = time.perf_counter()
    state = setup()
    t1 = time.perf_counter()
    for i in range(steps):
        if prof is not None and profiler_steps:
            prof.step()
        if nvtx:
            torch.cuda.nvtx.range_push(f"step {i}")
        step(state, i)
        if nvtx:
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    if teardown is not None:
        teardown(state)
    t3 = time.perf_counter()
    if prof is not None:
        prof.__exit__(None, None, None)
        if not os.path.exists(args.trace):
            prof.export_chrome_trace(args.trace)
        print(f"wrote {args.trace}")
    print(
        f"import torch {T_TORCH - T_DRIVER:.3f} s, setup {t1 - t0:.3f} s, loop {t2 - t1:.4f} s "
        f"({steps} steps, {(t2 - t1) / max(steps, 1) * 1e3:.3f} ms/step), teardown {t3 - t2:.4f} s",
        flush=True,
    )
