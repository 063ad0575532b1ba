#!/usr/bin/env python3
"""Re-check the blind9 timeline labels: the numbers labels.json quotes, computed from the files.

Its entries are this gallery's nine nsys exports (the K1 ncu reports are read with ncu / ncu_report).
Stdlib only (sqlite3, json, gzip); it never imports kprof. Usage:
    python3 data/validation/blind9/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, gaps after a sync, ...) and the code are shared by every
gallery: see ../measure_common.py. This file adds, per entry ("blocking" block):
  d2h_memcpy_calls      memcpy API calls in the window whose copy (correlationId) is device -> host,
                        with their host time (union) and the copies' destination memory kind
  blocking_calls        cuda*/cu*Synchronize calls + those D2H memcpy calls (what makes the host wait)
  blocking_host_ms/pct  the union of the blocking calls' host intervals, ms and % of the window
  idle_after_blocking_pct_of_idle
                        GPU-idle time in gaps that begin within 50 us after a blocking call returned
                        (same rule as measure_common's idle_in_gaps_after_sync, with D2H copies added)
  nvtx_step_host_ms     median host duration of the NVTX "step N" ranges in the window
  kernel_us_per_iteration_by_short_name
                        kernel time of the kernels that start in the window, by CUPTI short name, / iterations
and, for each comparison (COMPARE below), the captured speedup: before's ms_per_iteration / after's.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import measure_common as mc  # noqa: E402
from measure_common import K, _entry  # noqa: E402

# each anchor happens exactly once per loop step (README.md); skip = the 5 (P2: 3) unmarked warm-up steps
# of setup() + 2 more
_entry("p1_sync_pairs_before", "p1_sync_pairs_before.sqlite.gz", K(r"sin", 2), skip=7)  # 2 sin kernels per step
_entry("p1_sync_pairs_after", "p1_sync_pairs_after.sqlite.gz", K(r"sin", 2), skip=7)
_entry("p3_null_b", "p3_null_b.sqlite.gz", K(r"sin", 2), skip=7)
_entry("p4_d2h_pageable_after", "p4_d2h_pageable_after.sqlite.gz", K(r"sin", 2), skip=7)
_entry("p2_mask_before", "p2_mask_before.sqlite.gz", K(r"^nvjet", 2), skip=5)  # 2 GEMMs (2 layers) per step
_entry("p2_where_after", "p2_where_after.sqlite.gz", K(r"^nvjet", 2), skip=5)
_entry("s1_item_branch", "s1_item_branch.sqlite.gz", K(r"^nvjet", 1), skip=7)  # 1 GEMM per step
# (s2_mask_index.py was captured in call 2 too; its file is not kept: see README.md)
_entry("s3_gemm_item_end", "s3_gemm_item_end.sqlite.gz", K(r"^nvjet", 1), skip=7)

COMPARE = {  # id -> (before entry, after entry)
    "P1_remove_sync_per_pair": ("p1_sync_pairs_before", "p1_sync_pairs_after"),
    "P2_mask_to_where": ("p2_mask_before", "p2_where_after"),
    "P3_null_same_program": ("p1_sync_pairs_after", "p3_null_b"),
    "P4_add_pageable_d2h": ("p1_sync_pairs_after", "p4_d2h_pageable_after"),
}


def blocking(eid, r):
    """The extra 'blocking' numbers of one entry (see the module docstring)."""
    fname = mc.WINDOWS[eid][0]
    con, tmp = mc._open_sqlite(os.path.join(HERE, fname))
    try:
        strings = dict(con.execute("select id, value from StringIds"))
        w0 = r["window"]["start_ms"] * 1e6
        w1 = r["window"]["end_ms"] * 1e6
        tables = {n for (n,) in con.execute("select name from sqlite_master where type='table'")}
        # capture start as measure_common defines it: the earliest recorded event of any kind
        t = mc.load_nsys(os.path.join(HERE, fname))
        c0 = t.span[0]
        w0, w1 = c0 + w0, c0 + w1
        copies = {}
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            copies = {cid: (k, mc.MEMKIND.get(dk, str(dk)), b) for cid, k, dk, b in con.execute(
                "select correlationId, copyKind, dstKind, bytes from CUPTI_ACTIVITY_KIND_MEMCPY")}
        api = [(s, e, re.sub(r"_v\d+$", "", strings.get(n, str(n))), cid) for s, e, n, cid in con.execute(
            "select start, end, nameId, correlationId from CUPTI_ACTIVITY_KIND_RUNTIME where end > ? and start < ?",
            (w0, w1))]
        short = [(s, e, strings.get(n, str(n))) for s, e, n in con.execute(
            "select start, end, shortName from CUPTI_ACTIVITY_KIND_KERNEL where start >= ? and start < ?", (w0, w1))]
        nvtx = [(s, e, txt) for s, e, txt in con.execute(
            "select start, end, text from NVTX_EVENTS where end is not null and start >= ? and start < ?", (w0, w1))]
    finally:
        con.close()
        if tmp:
            os.unlink(tmp)
    d2h = [(s, e) for s, e, n, cid in api if mc.COPY_RE.search(n) and copies.get(cid, (0,))[0] == 2]
    d2h_dst = sorted({copies[cid][1] for s, e, n, cid in api if mc.COPY_RE.search(n) and copies.get(cid, (0,))[0] == 2})
    d2h_bytes = sorted({copies[cid][2] for s, e, n, cid in api if mc.COPY_RE.search(n) and copies.get(cid, (0,))[0] == 2})
    sync = [(s, e) for s, e, n, _ in api if mc.SYNC_RE.search(n)]
    block = sync + d2h
    W = w1 - w0
    out = {
        "d2h_memcpy_calls": len(d2h),
        "d2h_memcpy_host_ms": mc.length(mc.union(mc.clip(d2h, w0, w1))) * 1e-6,
        "d2h_dst_kinds": d2h_dst,
        "d2h_bytes": d2h_bytes[:4],
        "sync_calls": len(sync),
        "blocking_calls": len(block),
        "blocking_host_ms": mc.length(mc.union(mc.clip(block, w0, w1))) * 1e-6,
        "blocking_host_pct": 100 * mc.length(mc.union(mc.clip(block, w0, w1))) / W,
        "blocking_calls_per_step": len(block) / r["window"]["iterations"],
    }
    gpu = [(s, e) for s, e, _ in t.kernels] + [(s, e) for s, e, *_ in t.copies] + list(t.memsets) + list(t.graphs)
    idle = mc.complement(mc.union(mc.clip(gpu, w0, w1)), w0, w1)
    idle_len = mc.length(idle)
    ends = sorted(e for _, e in block)
    after = 0
    for gs, ge in idle:
        j = bisect.bisect_left(ends, gs - 50_000)
        if j < len(ends) and ends[j] <= ge:
            after += ge - gs
    out["idle_after_blocking_pct_of_idle"] = round(100 * after / idle_len, 1) if idle_len else 0.0
    out["idle_after_blocking_pct_of_window"] = round(100 * after / W, 1)
    by = {}  # kernel time in the window by CUPTI short name (kernels that start in the window)
    for s, e, n in short:
        by[n] = by.get(n, 0) + (e - s)
    it = r["window"]["iterations"]
    out["kernel_us_per_iteration_by_short_name"] = {
        k: round(v / it * 1e-3, 1) for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:10]}
    steps = [e - s for s, e, txt in nvtx if txt and txt.startswith("step ")]
    out["nvtx_steps_in_window"] = len(steps)
    out["nvtx_step_host_ms_median"] = statistics.median(steps) * 1e-6 if steps else None
    out["gpu_busy_ms_per_iteration"] = r["gpu_busy_pct"] / 100 * r["window"]["ms_per_iteration"]
    return out


def main(argv):
    mc.HERE = HERE
    as_json = "--json" in argv
    ids = [a for a in argv if not a.startswith("--")] or list(mc.WINDOWS)
    res = {}
    for eid in ids:
        if eid in COMPARE:
            continue
        if not os.path.exists(os.path.join(HERE, mc.WINDOWS[eid][0])):
            print(f"{eid}: {mc.WINDOWS[eid][0]} missing", file=sys.stderr)
            continue
        r = mc.measure(eid)
        if r.get("window"):
            r["blocking"] = blocking(eid, r)
        res[eid] = r
        if not as_json:
            print(mc._fmt(r))
            if "blocking" in r:
                print(f"  blocking: {r['blocking']}")
    comp = {}
    for cid, (b, a) in COMPARE.items():
        if b in res and a in res and res[b].get("window") and res[a].get("window"):
            tb, ta = res[b]["window"]["ms_per_iteration"], res[a]["window"]["ms_per_iteration"]
            comp[cid] = {"before": b, "after": a, "before_ms_per_iteration": tb, "after_ms_per_iteration": ta,
                         "captured_speedup": tb / ta}
            if not as_json:
                print(f"== {cid}: {b} {tb:.4f} ms -> {a} {ta:.4f} ms per step: captured speedup {tb / ta:.4f}x")
    if as_json:
        print(json.dumps({"entries": list(res.values()), "comparisons": comp}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
