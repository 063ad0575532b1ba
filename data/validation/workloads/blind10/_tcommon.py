"""Harness for the blind10 PyTorch / Triton kernel workloads (not the timeline programs); adapted from ../blind6.

A workload module builds ``WORKLOADS = {name: make}``; ``make()`` returns a dict with ``fn`` (the call), ``label``,
``check`` (returns a message, asserts), optionally ``bytes``/``flops`` (compulsory work) and ``controls``
(a list of (label, fn, bytes or None) timed beside it, never captured).

``python3 PROG.py NAME``: build, check once, run the call WARMUP times, then ONCE MORE between
cudaProfilerStart and cudaProfilerStop. generate.sh captures with
``ncu --profile-from-start off -k regex:... --launch-count 1``: the first matching kernel in that window.
``python3 PROG.py --sanity NAME...`` (plain, never under ncu): check, median CUDA-event time over 20 calls of
the call and of each control, and the kernels one call launches (torch.profiler).
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


def _median_us(fn: Callable[[], object]) -> tuple[float, float]:
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times), min(times)


def _line(label, med, mn, nbytes=None, flops=None):
    line = f"{label}: median {med:.1f} us over 20 calls (min {mn:.1f})"
    if nbytes:
        line += f", {nbytes / med / 1e3:.0f} GB/s of compulsory bytes"
    if flops:
        line += f", {flops / med / 1e6:.2f} TFLOP/s"
    return line


def run_one(w: dict, sanity: bool) -> None:
    print(f"{w['label']}: check: {w['check']()}", flush=True)
    if sanity:
        med, mn = _median_us(w["fn"])
        print(_line(w["label"], med, mn, w.get("bytes"), w.get("flops")), flush=True)
        for k in _kernels_of(w["fn"]):
            print(f"  kernel: {k}")
        for lab, fn, nb in w.get("controls", []):
            try:
                med, mn = _median_us(fn)
                print("  control " + _line(lab, med, mn, nb), flush=True)
                for k in _kernels_of(fn):
                    print(f"    kernel: {k}")
            except Exception as e:  # noqa: BLE001
                print(f"  control {lab}: FAIL {type(e).__name__}: {e}", flush=True)
        return
    for _ in range(WARMUP):
        w["fn"]()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    w["fn"]()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{w['label']}: {WARMUP} warm-up calls, then 1 call inside cudaProfilerStart/Stop", flush=True)


def main(workloads: dict[str, Callable[[], dict]], argv: list[str]) -> int:
    sanity = "--sanity" in argv
    names = [a for a in argv if not a.startswith("--")]
    bad = 0
    for name in names:
        try:
            run_one(workloads[name](), sanity)
        except Exception as e:  # noqa: BLE001 - report and go on
            bad += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return 1 if bad else 0
