"""Critical path (issue 18): kprof's against Holistic Trace Analysis's on the same PyTorch profiler traces.

    python benchmarks/bench_critical_path.py [--json OUT] [SAMPLE.json.gz ...]

HTA (``pip install HolisticTraceAnalysis==0.5.0``; it needs pandas < 3, so run this from an
environment that has both: ``python -m venv v && v/bin/pip install HolisticTraceAnalysis==0.5.0
'pandas<3' matplotlib jinja2 && PYTHONPATH=. v/bin/python benchmarks/bench_critical_path.py``).
Without HTA only kprof's side is printed.

For each trace (default: the Kineto traces in data/samples/timeline, and from ../shared/corpus when
present HTA's own critical-path test traces and the DataLoader-starved ResNet-50 trace) and each
steady-state profiler step that kprof walks (steps 2..N), HTA's ``critical_path_analysis(rank=0,
annotation="ProfilerStep", instance_id=j)`` is run on the same step; a trace without two steps is
analysed whole by both (kprof's ``window_path``, HTA's ``annotation=""``). Reported:

- time: kprof's load + all steps' critical paths; HTA's ``TraceAnalysis`` load, and its critical
  path analysis summed over the same steps (graph construction + longest path);
- shares in HTA's buckets (``CPGraph.summary()``: cpu_bound, gpu_compute_bound,
  gpu_kernel_kernel_overhead, gpu_kernel_launch_overhead), summed over the steps, for both tools,
  and their agreement = 1 - total variation distance (1: the same breakdown);
- GPU items on both paths: the share of kprof's on-path GPU time whose item (by correlation id) is
  also on HTA's path, and the other way round;
- path length per step (median): kprof's runs from the end of the previous step's GPU work to the end
  of this step's (the step time of ``kprof compare``); HTA's is the sum of its path's edge weights
  inside the annotation's window (dependency edges weigh 0).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

import kprof  # noqa: E402
from kprof.diagnose.critical_path import HTA_KIND, agreement, critical_paths, window_path  # noqa: E402

BUCKETS = ("cpu_bound", "gpu_compute_bound", "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead")
GPU_KINDS = ("kernel", "copy", "memset", "graph")


def kprof_side(path: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    tl = kprof.load(path)
    t1 = time.perf_counter()
    s = critical_paths(tl)
    if not s.paths:  # no steps: the whole capture, as HTA's annotation="" does
        s = window_path(tl)
    t2 = time.perf_counter()
    steps = []
    for p in s.paths:
        buckets: dict[str, float] = dict.fromkeys(BUCKETS, 0.0)
        gpu: dict[int, int] = {}
        for seg in p.segments:
            buckets[HTA_KIND[seg.kind]] = buckets.get(HTA_KIND[seg.kind], 0.0) + seg.duration_ns
            if seg.kind in GPU_KINDS and seg.correlation is not None:
                gpu[seg.correlation] = gpu.get(seg.correlation, 0) + seg.duration_ns
        steps.append({"step": p.step, "ns": p.duration_ns, "buckets_ns": buckets, "gpu_ns": gpu})
    return {"load_s": t1 - t0, "cp_s": t2 - t1, "steps": steps, "summary": s}


def hta_side(path: Path, steps: list[int]) -> dict[str, Any] | None:
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        return None
    logging.disable(logging.CRITICAL)
    tmp = Path(tempfile.mkdtemp(prefix="kprof-hta-"))
    try:
        shutil.copy(path, tmp / path.name)
        quiet = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            ta = TraceAnalysis(trace_dir=str(tmp))
        t1 = time.perf_counter()
        trace = ta.t.get_trace(0)
        out = []
        cp_s = 0.0
        for j in steps:
            a = time.perf_counter()
            err = ""
            df = None
            try:
                with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                    if j < 0:  # the whole trace
                        res = ta.critical_path_analysis(rank=0, annotation="", instance_id=None)
                    else:
                        res = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=j)
                    ok = bool(res and res[1])
                    df = res[0].get_critical_path_breakdown() if ok else None
            except Exception as exc:  # HTA's own failure on this trace: counted, not hidden
                err = f"{type(exc).__name__}: {exc}"
            cp_s += time.perf_counter() - a
            if df is None:
                out.append({"step": j, "ok": False, "error": err or "no path"})
                continue
            buckets = {
                b: float(df.loc[df.bound_by == b, "duration"].sum()) * 1e3 for b in BUCKETS
            }  # us -> ns
            on_gpu = df[(df.stream >= 0) & (df.type == "critical_path_operator")]
            corr = trace.loc[on_gpu.event_idx.astype(int), "correlation"].astype(int).tolist()
            gpu: dict[int, float] = {}
            for c, d in zip(corr, on_gpu.duration.tolist(), strict=True):
                gpu[c] = gpu.get(c, 0.0) + d * 1e3
            out.append(
                {
                    "step": j,
                    "ok": True,
                    "ns": float(df.duration.sum()) * 1e3,
                    "buckets_ns": buckets,
                    "gpu_ns": gpu,
                }
            )
        return {"load_s": t1 - t0, "cp_s": cp_s, "steps": out}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        logging.disable(logging.NOTSET)


def _shares(steps: list[dict[str, Any]]) -> dict[str, float]:
    tot: dict[str, float] = dict.fromkeys(BUCKETS, 0.0)
    for s in steps:
        for b, v in s["buckets_ns"].items():
            if b in tot:
                tot[b] += v
    n = sum(tot.values())
    return {b: (v / n if n else 0.0) for b, v in tot.items()}


def _gpu_overlap(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float | None:
    """Share of a's on-path GPU time whose item is also on b's path (same steps)."""
    num = den = 0.0
    for sa, sb in zip(a, b, strict=True):
        for c, d in sa["gpu_ns"].items():
            den += d
            if c in sb["gpu_ns"]:
                num += d
    return num / den if den else None


def compare(path: Path) -> dict[str, Any]:
    k = kprof_side(path)
    steps = [s["step"] for s in k["steps"]]
    h = hta_side(path, steps)
    row: dict[str, Any] = {
        "trace": path.name,
        "steps": len(steps),
        "kprof_load_s": round(k["load_s"], 3),
        "kprof_cp_s": round(k["cp_s"], 4),
        "kprof_shares": _shares(k["steps"]),
        "kprof_median_path_ms": statistics.median(s["ns"] for s in k["steps"]) / 1e6 if steps else None,
        "kprof_text": k["summary"].to_text(),
    }
    if h is None:
        row["hta"] = "not installed"
        return row
    ok = [(ks, hs) for ks, hs in zip(k["steps"], h["steps"], strict=True) if hs.get("ok")]
    ks_ok, hs_ok = [x for x, _ in ok], [y for _, y in ok]
    row.update(
        {
            "hta_load_s": round(h["load_s"], 3),
            "hta_cp_s": round(h["cp_s"], 3),
            "hta_failed_steps": len(steps) - len(ok),
            "hta_errors": sorted({s.get("error", "") for s in h["steps"] if not s.get("ok")}),
            "hta_shares": _shares(hs_ok),
            "hta_median_path_ms": statistics.median(s["ns"] for s in hs_ok) / 1e6 if hs_ok else None,
        }
    )
    row["kprof_shares_same_steps"] = _shares(ks_ok)
    row["agreement"] = agreement(row["kprof_shares_same_steps"], row["hta_shares"]) if hs_ok else None
    row["kprof_gpu_on_hta_path"] = _gpu_overlap(ks_ok, hs_ok)
    row["hta_gpu_on_kprof_path"] = _gpu_overlap(hs_ok, ks_ok)
    return row


def _pct(d: dict[str, float]) -> str:
    short = {"cpu_bound": "cpu", "gpu_compute_bound": "gpu", "gpu_kernel_kernel_overhead": "k-k",
             "gpu_kernel_launch_overhead": "launch"}  # fmt: skip
    return " ".join(f"{short[b]} {100 * d.get(b, 0.0):.1f}" for b in BUCKETS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    corpus = REPO.parent / "shared" / "corpus"
    traces = args.traces or [
        *sorted((REPO / "data" / "samples" / "timeline").glob("*.json.gz")),
        *sorted((corpus / "HolisticTraceAnalysis").glob("critical_path__*.json.gz")),
        *sorted((corpus / "kineto").glob("resnet50_num_workers_0*.json.gz")),
    ]
    rows = [compare(p) for p in traces]
    print(
        "| trace | steps | kprof load / cp | HTA load / cp | kprof shares % | HTA shares % | agreement | GPU items on both paths (kprof / HTA) | median path ms (kprof / HTA) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "hta_shares" not in r:
            print(f"| {r['trace']} | {r['steps']} | {r['kprof_load_s']:.2f} s / {1e3 * r['kprof_cp_s']:.0f} ms | "
                  f"(HTA not installed) | {_pct(r['kprof_shares'])} | | | | {r['kprof_median_path_ms']:.3f} / |")  # fmt: skip
            continue
        ov = " / ".join(
            "-" if x is None else f"{100 * x:.0f}%"
            for x in (r["kprof_gpu_on_hta_path"], r["hta_gpu_on_kprof_path"])
        )
        hm = "-" if r["hta_median_path_ms"] is None else f"{r['hta_median_path_ms']:.3f}"
        ag = "-" if r["agreement"] is None else f"{r['agreement']:.2f}"
        fail = f" ({r['hta_failed_steps']} failed)" if r["hta_failed_steps"] else ""
        print(f"| {r['trace']} | {r['steps']}{fail} | {r['kprof_load_s']:.2f} s / {1e3 * r['kprof_cp_s']:.0f} ms | "
              f"{r['hta_load_s']:.2f} s / {r['hta_cp_s']:.2f} s | {_pct(r['kprof_shares_same_steps'])} | "
              f"{_pct(r['hta_shares'])} | {ag} | {ov} | {r['kprof_median_path_ms']:.3f} / {hm} |")  # fmt: skip
    print()
    for r in rows:
        print(f"{r['trace']}: kprof {r['kprof_text']}")
        for e in r.get("hta_errors", []):
            print(f"  HTA failed: {e[:200]}")
    if args.json:
        for r in rows:
            r.pop("kprof_text", None)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
