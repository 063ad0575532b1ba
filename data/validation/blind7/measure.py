#!/usr/bin/env python3
"""Re-check the blind7 timeline labels: the numbers labels.json quotes, computed from the files.

Its timeline entries are three nsys exports: two one-shot programs (no loop, so measure_common reports no
steady-state window) and one program with a 200-step loop. Besides measure_common's numbers (capture span,
first CUDA call, GPU busy, counts, and for the loop its window), this prints, per NVTX range the programs
push ("setup", "compile + first call", "step"), its wall time, its share of the capture span and the kernels
launched inside it (kernels matched to their launch call by correlationId), and the longest CUDA API calls.
Stdlib only (sqlite3, gzip); it never imports kprof. Usage:
    python3 data/validation/blind7/measure.py [ENTRY_ID ...] [--json]
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import measure_common as mc  # noqa: E402
from measure_common import C, _entry  # noqa: E402

_entry("tl_compile_oneshot", "tl_compile_oneshot.sqlite.gz", None)  # one-shot: no loop
_entry("tl_managed_oneshot", "tl_managed_oneshot.sqlite.gz", None)  # one-shot: no loop
_entry("tl_compile_steps", "tl_compile_steps.sqlite.gz", C("HtoD", 12, 1))  # the 12-byte step-number marker
# (tl_compile_steps was not captured in this gallery's run: the entry stays so a regeneration can be measured)


def ranges(eid: str) -> dict:
    """NVTX ranges, kernels per range (by launch correlation) and the longest CUDA API calls."""
    path = os.path.join(HERE, mc.WINDOWS[eid][0])
    t = mc.load_nsys(path)
    c0, c1 = t.span
    span = c1 - c0
    con, tmp = mc._open_sqlite(path)
    try:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        strings = dict(con.execute("select id, value from StringIds"))
        api = [(s, e, re.sub(r"_v\d+$", "", strings.get(n, str(n))), cid) for s, e, n, cid in
               con.execute("select start, end, nameId, correlationId from CUPTI_ACTIVITY_KIND_RUNTIME")]
        kern = []
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            kern = list(con.execute("select start, end, correlationId, demangledName from CUPTI_ACTIVITY_KIND_KERNEL"))
    finally:
        con.close()
        if tmp:
            os.unlink(tmp)
    launch_at = {cid: s for s, e, n, cid in api}
    out = {"capture_span_ms": span * 1e-6, "ranges": {}, "longest_api": []}
    by = defaultdict(list)
    for s, e, n, _ in t.host_ranges.get("nvtx", []):
        by[n].append((s, e))
    for n, iv in by.items():
        ks = [(ks_, ke) for ks_, ke, cid, _ in kern if any(a <= launch_at.get(cid, -1) <= b for a, b in iv)]
        wall = sum(b - a for a, b in iv)
        out["ranges"][n] = {
            "count": len(iv),
            "first_start_ms": (min(a for a, _ in iv) - c0) * 1e-6,
            "last_end_ms": (max(b for _, b in iv) - c0) * 1e-6,
            "wall_ms": wall * 1e-6,
            "share_of_capture_pct": 100.0 * wall / span,
            "kernels_launched": len(ks),
            "kernel_busy_ms": mc.length(mc.union([list(k) for k in ks])) * 1e-6,
        }
    agg = defaultdict(lambda: [0, 0])
    for s, e, n, _ in api:
        agg[n][0] += 1
        agg[n][1] += e - s
    out["longest_api"] = [{"name": n, "count": c, "ms": round(d * 1e-6, 3)}
                          for n, (c, d) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:8]]
    longest = max(api, key=lambda r: r[1] - r[0])
    out["longest_single_api_call"] = {"name": longest[2], "ms": (longest[1] - longest[0]) * 1e-6,
                                      "starts_ms": (longest[0] - c0) * 1e-6}
    names = defaultdict(int)
    for *_, n in kern:
        names[re.sub(r"\(.*", "", strings.get(n, str(n)))[:60]] += 1
    out["kernel_names"] = dict(sorted(names.items(), key=lambda kv: -kv[1])[:12])
    return out


def main(argv: list[str]) -> int:
    ids = [a for a in argv if not a.startswith("--")] or list(mc.WINDOWS)
    rc = mc.main(argv, HERE)
    extra = {}
    for eid in ids:
        if os.path.exists(os.path.join(HERE, mc.WINDOWS[eid][0])):
            extra[eid] = ranges(eid)
    if "--json" in argv:
        print(json.dumps({"ranges": extra}, indent=1, default=float))
    else:
        for eid, r in extra.items():
            print(f"== {eid}: NVTX ranges and API calls (capture span {r['capture_span_ms']:.1f} ms)")
            for n, v in r["ranges"].items():
                print(f"  range {n!r}: x{v['count']}, first at {v['first_start_ms']:.1f} ms, last ends at {v['last_end_ms']:.1f} ms, wall {v['wall_ms']:.1f} ms "
                      f"= {v['share_of_capture_pct']:.1f}% of the capture, {v['kernels_launched']} kernels launched "
                      f"inside ({v['kernel_busy_ms']:.3f} ms of kernel time)")
            print(f"  longest API (total): {r['longest_api']}")
            print(f"  longest single API call: {r['longest_single_api_call']}")
            print(f"  kernels by name: {r['kernel_names']}")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
