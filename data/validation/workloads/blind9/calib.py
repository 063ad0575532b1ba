"""Pick the sizes of the blind9 programs on the device, before any capture; writes calib.json beside this file.

Plain timings in one process (no profiler), each the median of 3 chunks of 20 steps after 5 warm-up steps:
  p1_n      floats per P1 vector: the candidate whose before/after step-time ratio is closest to 1.25
  p4_bytes  P4's pageable dump size (with that p1_n): P4-after / P1-after ratio closest to 1.20
  p2_rows   P2 activation rows: P2 before/after ratio closest to 1.30
  s1_rows   S1 activation rows: GPU time per step / step time closest to 0.66, where the GPU time per step
            is measured with CUDA events around 20 steps' kernels enqueued behind a 50 ms torch.cuda._sleep
            (so they run back to back) and the step time is S1's own plain step time.
Every candidate's numbers are kept in calib.json ("candidates") for the record.
"""

import json
import math
import os
import statistics
import sys
import time

import _b9
from _b9 import HERE, torch

import p1_sync_pairs_after as p1a
import p1_sync_pairs_before as p1b
import p2_mask_before as p2b
import p2_where_after as p2a
import p4_d2h_pageable_after as p4a
import s1_item_branch as s1
from _p1 import make as make_p1
from _p2 import make as make_p2


def per_step(s, step, n=20, chunks=3, warm=5):
    for i in range(warm):
        step(s, i)
    torch.cuda.synchronize()
    xs = []
    for _ in range(chunks):
        t0 = time.perf_counter()
        for i in range(n):
            step(s, i)
        torch.cuda.synchronize()
        xs.append((time.perf_counter() - t0) / n * 1e3)
    return statistics.median(xs)


def gpu_per_step(s, work, n=20):
    work(s)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(100_000_000)
    a.record()
    for _ in range(n):
        work(s)
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / n


def closest(cands, key, target):
    return min(cands, key=lambda c: abs(math.log(c[key] / target)))


def main():
    out = {"candidates": {}}
    t0 = time.perf_counter()
    # P1
    c = []
    for n in [1 << 21, 1 << 22, 1 << 23, 1 << 24, 1 << 25, 1 << 26]:
        _b9.OVERRIDE["p1_n"] = n
        s = make_p1()
        tb, ta = per_step(s, p1b.step), per_step(s, p1a.step)
        c.append({"p1_n": n, "before_ms": tb, "after_ms": ta, "ratio": tb / ta})
        del s
    out["candidates"]["p1"] = c
    out["p1_n"] = closest(c, "ratio", 1.25)["p1_n"]
    _b9.OVERRIDE["p1_n"] = out["p1_n"]
    # P4 (on the chosen p1_n)
    c = []
    s = make_p1()
    ta = per_step(s, p1a.step)
    for nb in [4096, 16384, 65536, 262144, 1 << 20, 1 << 22]:
        _b9.OVERRIDE["p4_bytes"] = nb
        s["p"] = _b9.params()
        tw = per_step(s, p4a.step)
        c.append({"p4_bytes": nb, "after_ms": tw, "before_ms": ta, "ratio": tw / ta})
    del s
    out["candidates"]["p4"] = c
    out["p4_bytes"] = closest(c, "ratio", 1.20)["p4_bytes"]
    # P2
    c = []
    for rows in [1024, 2048, 3072, 4096, 6144, 8192]:
        _b9.OVERRIDE["p2_rows"] = rows
        s = make_p2()
        tb, ta = per_step(s, p2b.step), per_step(s, p2a.step)
        c.append({"p2_rows": rows, "before_ms": tb, "after_ms": ta, "ratio": tb / ta})
        del s
    out["candidates"]["p2"] = c
    out["p2_rows"] = closest(c, "ratio", 1.30)["p2_rows"]
    # S1
    c = []
    for rows in [256, 512, 768, 1024, 1536, 2048, 3072, 4096]:
        _b9.OVERRIDE["s1_rows"] = rows
        s = s1.make()
        t = per_step(s, s1.step)
        g = gpu_per_step(s, lambda s: (s["x"] @ s["w"]).amax())
        c.append({"s1_rows": rows, "step_ms": t, "gpu_ms": g, "busy": g / t})
        del s
    out["candidates"]["s1"] = c
    out["s1_rows"] = closest(c, "busy", 0.66)["s1_rows"]
    out["calib_s"] = time.perf_counter() - t0
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "calib.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    for k, v in out["candidates"].items():
        for r in v:
            print(k, {a: (round(b, 4) if isinstance(b, float) else b) for a, b in r.items()}, flush=True)
    print("chosen:", {k: v for k, v in out.items() if k != "candidates"}, flush=True)


if __name__ == "__main__":
    main()
