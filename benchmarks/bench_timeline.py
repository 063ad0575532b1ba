"""Timeline benchmark: kprof's load + diagnosis against bare baselines, in one run.

    python benchmarks/bench_timeline.py [--kernels 1000000 10000000] [--kineto-mb 500] [--no-hta]

For each size it writes (once, into ``--data-dir``, default ``$KPROF_BENCH_DIR`` or
``/tmp/kprof-bench``) a synthetic nsys 2025.3 export (``benchmarks/synth.py``) and a Kineto
trace, then measures, each in a fresh Python process (so peak RSS is that task's own):

- ``kprof``: ``kprof.diagnose(path)``: load + timeline diagnosis, end to end;
- nsys baseline: read the columns kprof needs (kernels, API calls, syncs, NVTX) with ``sqlite3``
  into numpy (cursor ``fetchmany`` -> ``np.array``), nothing else;
- Kineto baseline: ``json.load`` of the file, nothing else;
- HTA: Meta's HolisticTraceAnalysis ``TraceAnalysis(trace_dir=...)`` parsing the same Kineto trace
  (it is not a kprof dependency: give its interpreter with ``--hta-python`` if it lives in another
  environment; ``pip install holistictraceanalysis``).

Goals (issue 3): diagnosis within 3x of the baseline's time; peak RSS under 1.5 GB at 10M kernels;
Kineto load peak RSS under 3x the file size.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

WORKER = r"""
import json, resource, sys, time
task, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
extra = {}
if task == "kprof":
    import kprof.api
    ds = kprof.api.diagnose(path)
    extra = {"bottleneck": ds[0].bottleneck.value if ds[0].bottleneck else None, "headline": ds[0].headline}
elif task == "kprof-load":
    from kprof.io import load
    tl = load(path)
    extra = {"kernels": tl.kernel_count}
elif task == "sqlite-numpy":
    import sqlite3
    import numpy as np
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    queries = {
        "kernels": 'SELECT start, "end", deviceId, streamId, correlationId, demangledName, shortName, gridX, gridY, '
                   'gridZ, blockX, blockY, blockZ, launchType FROM CUPTI_ACTIVITY_KIND_KERNEL',
        "api": 'SELECT start, "end", globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME',
        "syncs": 'SELECT start, "end", deviceId, streamId, correlationId, syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION',
        "nvtx": 'SELECT start, "end", globalTid, textId FROM NVTX_EVENTS WHERE eventType IN (59, 60)',
    }
    for k, q in queries.items():
        cur = con.execute(q)
        parts = []
        while True:
            rows = cur.fetchmany(200_000)
            if not rows:
                break
            parts.append(np.array([[(-1 if v is None else v) for v in r] for r in rows], dtype=np.int64)
                         if k == "nvtx" else np.array(rows, dtype=np.int64))
        extra[k] = sum(len(p) for p in parts)
        arr = np.concatenate(parts) if parts else None
        extra[k + "_cols"] = 0 if arr is None else arr.shape[1]
elif task == "json-load":
    with open(path, "rb") as f:
        d = json.load(f)
    extra = {"events": len(d.get("traceEvents", []))}
elif task == "hta":
    import logging, os, shutil, tempfile
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    ta = TraceAnalysis(trace_dir=os.path.dirname(path))
    df = ta.t.get_trace(0)
    extra = {"events": int(len(df))}
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("RESULT " + json.dumps({"seconds": dt, "peak_rss": rss, **extra}))
"""


def run(task: str, path: Path, python: str = sys.executable, timeout: int = 1800) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([python, "-c", WORKER, task, str(path)], capture_output=True, text=True, env=env,
                         timeout=timeout, check=False)
    for line in res.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (res.stderr.strip().splitlines() or ["no output"])[-1]}


def fmt_row(name: str, r: dict, base: dict | None, size: int | None = None) -> str:
    if "error" in r:
        return f"| {name} | failed: {r['error']} | | | |"
    ratio = f"{r['seconds'] / base['seconds']:.2f}x" if base and "seconds" in base else ""
    rss = r["peak_rss"] / 2**20
    rss_ratio = f"{r['peak_rss'] / size:.2f}x file" if size else ""
    return f"| {name} | {r['seconds']:.2f} s | {ratio} | {rss:,.0f} MiB | {rss_ratio} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, nargs="*", default=[1_000_000, 10_000_000])
    ap.add_argument("--kineto-mb", type=float, default=500)
    ap.add_argument("--data-dir", default=os.environ.get("KPROF_BENCH_DIR", "/tmp/kprof-bench"))
    ap.add_argument("--hta-python", default=None, help="interpreter that has holistictraceanalysis installed")
    ap.add_argument("--no-hta", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    import synth

    data = Path(args.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    print("| task | time | vs baseline | peak RSS | RSS vs file |")
    print("|---|---|---|---|---|")
    for n in args.kernels:
        path = data / f"nsys_{n}.sqlite"
        if not path.exists():
            synth.make_nsys(path, n)
        base = run("sqlite-numpy", path)
        print(fmt_row(f"nsys {n:,} kernels: baseline sqlite3 -> numpy", base, None), flush=True)
        load = run("kprof-load", path)
        print(fmt_row(f"nsys {n:,} kernels: kprof load", load, base), flush=True)
        k = run("kprof", path)
        print(fmt_row(f"nsys {n:,} kernels: kprof load + diagnose", k, base), flush=True)
    if args.kineto_mb:
        mb = args.kineto_mb
        kdir = data / f"kineto_{int(mb)}mb"
        kdir.mkdir(exist_ok=True)
        path = kdir / "rank0.pt.trace.json"
        if not path.exists():
            synth.make_kineto(path, mb)
        size = path.stat().st_size
        base = run("json-load", path)
        print(fmt_row(f"Kineto {size / 1e6:,.0f} MB: baseline json.load", base, None, size), flush=True)
        k = run("kprof", path)
        print(fmt_row(f"Kineto {size / 1e6:,.0f} MB: kprof load + diagnose", k, base, size), flush=True)
        if not args.no_hta:
            hta_py = args.hta_python or sys.executable
            h = run("hta", path, python=hta_py)
            print(fmt_row(f"Kineto {size / 1e6:,.0f} MB: HTA TraceAnalysis", h, base, size), flush=True)
            if "seconds" in h and "seconds" in k:
                print(f"\nHTA / kprof time: {h['seconds'] / k['seconds']:.2f}x; "
                      f"HTA / kprof peak RSS: {h['peak_rss'] / k['peak_rss']:.2f}x")


if __name__ == "__main__":
    main()
