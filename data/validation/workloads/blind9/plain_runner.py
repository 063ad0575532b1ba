"""Plain (unprofiled) multi-process timings of the blind9 timeline programs: one fresh process per value.

The parent imports torch (and never touches CUDA), then for each measurement forks a child that loads the
program file, runs its setup (tensors + warm-up) and _b9.plain(): the median over 5 chunks of 40 steps of
(chunk time between two torch.cuda.synchronize() calls) / 40. Each child has its own CUDA context, caching
allocator and cuBLAS handle; the parent waits for it before the next one starts (one process on the GPU at a
time). Programs are interleaved round by round (before, after, ... then again), so slow drifts hit both
sides of a pair alike. For a pair the value is median over its processes; the noise is the processes'
spread (min..max, and the half-range as a % of the median).

P3 (the null pair) is p1_sync_pairs_after.py run twice per round, the two runs of a round given to groups A
and B alternately; P3's "speedup" is median(A) / median(B).

Usage: python3 plain_runner.py [--rounds R] [--single-rounds S] [--json OUT.json]
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _b9  # noqa: E402  (imports torch; no CUDA call)

PAIR_ROUND = [  # (label, program, which step function)
    ("p1_before", "p1_sync_pairs_before.py", "step"),
    ("p3_A", "p1_sync_pairs_after.py", "step"),
    ("p2_before", "p2_mask_before.py", "step"),
    ("p2_after", "p2_where_after.py", "step"),
    ("p4_after", "p4_d2h_pageable_after.py", "step"),
    ("p3_B", "p1_sync_pairs_after.py", "step"),
]
SINGLE_ROUND = [
    ("s1_as_captured", "s1_item_branch.py", "step"),
    ("s1_fixed", "s1_item_branch.py", "step_fixed"),
    ("s2_as_captured", "s2_mask_index.py", "step"),
    ("s2_fixed", "s2_mask_index.py", "step_fixed"),
    ("s3_as_captured", "s3_gemm_item_end.py", "step"),
    ("s3_fixed", "s3_gemm_item_end.py", "step_fixed"),
]


def child(prog, which, out_path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(prog)[0], os.path.join(HERE, prog))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    setup = mod.setup_fixed if which == "step_fixed" else mod.setup
    t0 = time.perf_counter()
    r = _b9.plain(setup, getattr(mod, which))
    r["child_s"] = round(time.perf_counter() - t0, 3)
    r["pid"] = os.getpid()
    with open(out_path, "w") as f:
        json.dump(r, f)


def one(label, prog, which):
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            child(prog, which, path)
        except BaseException as e:  # noqa: BLE001
            with open(path, "w") as f:
                json.dump({"error": f"{type(e).__name__}: {e}"}, f)
            code = 1
        os._exit(code)
    os.waitpid(pid, 0)
    with open(path) as f:
        txt = f.read()
    os.unlink(path)
    r = json.loads(txt) if txt else {"error": "child wrote nothing"}
    r.update({"label": label, "program": prog, "variant": which})
    return r


def stats(xs):
    m = statistics.median(xs)
    return {"n": len(xs), "median_ms": m, "min_ms": min(xs), "max_ms": max(xs),
            "half_range_pct": 100 * (max(xs) - min(xs)) / 2 / m,
            "stdev_pct": 100 * statistics.stdev(xs) / m if len(xs) > 1 else 0.0, "values_ms": xs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--single-rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for r in range(max(a.rounds, a.single_rounds)):
        order = []
        if r < a.rounds:
            order += PAIR_ROUND if r % 2 == 0 else [  # swap the two null-pair slots every other round
                (("p3_B" if lab == "p3_A" else "p3_A" if lab == "p3_B" else lab), p, w) for lab, p, w in PAIR_ROUND]
        if r < a.single_rounds:
            order += SINGLE_ROUND
        for lab, prog, which in order:
            res = one(lab, prog, which)
            res["round"] = r
            rows.append(res)
            print(json.dumps(res), flush=True)
    by = {}
    for res in rows:
        if "ms_per_step" in res:
            by.setdefault(res["label"], []).append(res["ms_per_step"])
    summ = {k: stats(v) for k, v in by.items()}
    by["p1_after"] = by.get("p3_A", []) + by.get("p3_B", [])
    if by["p1_after"]:
        summ["p1_after"] = stats(by["p1_after"])
    pairs = {"P1": ("p1_before", "p1_after"), "P2": ("p2_before", "p2_after"), "P3": ("p3_A", "p3_B"),
             "P4": ("p1_after", "p4_after"), "S1": ("s1_as_captured", "s1_fixed"),
             "S2": ("s2_as_captured", "s2_fixed"), "S3": ("s3_as_captured", "s3_fixed")}
    comp = {}
    for k, (b, f) in pairs.items():
        if b in summ and f in summ:
            sb, sf = summ[b], summ[f]
            comp[k] = {"before": b, "after": f, "speedup_before_over_after": sb["median_ms"] / sf["median_ms"],
                       "noise_half_range_pct": max(sb["half_range_pct"], sf["half_range_pct"]),
                       "ranges_overlap": not (sb["min_ms"] > sf["max_ms"] or sf["min_ms"] > sb["max_ms"])}
    print("== summary per program (ms per step; one value per process)")
    for k, v in summ.items():
        print(f"{k:16s} n={v['n']:2d} median {v['median_ms']:.5f}  min {v['min_ms']:.5f}  max {v['max_ms']:.5f}  "
              f"half-range {v['half_range_pct']:.2f}%  stdev {v['stdev_pct']:.2f}%")
    print("== comparisons (speedup = median before / median after)")
    for k, v in comp.items():
        print(f"{k}: {v['before']} -> {v['after']}: {v['speedup_before_over_after']:.4f}x, noise (larger half-range) "
              f"+-{v['noise_half_range_pct']:.2f}%, ranges overlap: {v['ranges_overlap']}")
    print(f"plain_runner total {time.perf_counter() - t0:.1f} s, {len(rows)} processes", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"processes": rows, "summary": summ, "comparisons": comp}, f, indent=1)


if __name__ == "__main__":
    main()
