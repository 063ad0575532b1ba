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
  environment; ``pip install holistictraceanalysis``). It runs under a time limit
  (``--hta-timeout``, default 20 min) and a memory limit (``--hta-max-rss-gb``); a run stopped by
  either is reported as ``> N s`` with the peak RSS it had reached. Without an interpreter that
  can import ``hta``, HTA is skipped and the reason printed.

Peak RSS is the worker's own ``ru_maxrss``, or the sampled RSS of its process tree when that is
larger (HTA may fork workers).

Goals (issue 3): diagnosis within 3x of the baseline's time; peak RSS under 1.5 GB at 10M kernels;
Kineto load peak RSS under 3x the file size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
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


def _tree_rss(pid: int) -> int:
    """Resident memory of a process and all its descendants, from /proc (0 when it is gone)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def run(
    task: str, path: Path, python: str = sys.executable, timeout: float = 1800, max_rss: float | None = None
) -> dict:
    """Run one task in a fresh process; sample its (process-tree) RSS while it runs.

    Returns the worker's result, or ``{"stopped": why, "seconds": elapsed, "peak_rss": sampled}``
    when it ran past ``timeout`` seconds or ``max_rss`` bytes and was killed, or ``{"error": ...}``.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-c", WORKER, task, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    peak = 0
    stopped = None
    out: list[str] = []
    err: list[str] = []
    readers = [
        threading.Thread(target=lambda s=s, b=b: b.extend(s), daemon=True)
        for s, b in ((proc.stdout, out), (proc.stderr, err))
    ]
    for r in readers:
        r.start()
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid))
        elapsed = time.perf_counter() - t0
        if elapsed > timeout:
            stopped = f"time limit {timeout:.0f} s"
        elif max_rss is not None and peak > max_rss:
            stopped = f"memory limit {max_rss / 2**30:.0f} GiB"
        if stopped:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        time.sleep(0.2)
    elapsed = time.perf_counter() - t0
    for r in readers:
        r.join(timeout=5)
    if stopped:
        return {"stopped": stopped, "seconds": elapsed, "peak_rss": peak}
    for line in out:
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            res["peak_rss"] = max(res["peak_rss"], peak)  # children (multiprocessing) count too
            return res
    return {
        "error": ([x.strip() for x in err if x.strip()] or [f"exit status {proc.returncode}, no output"])[-1]
    }


def hta_python(requested: str | None) -> tuple[str | None, str]:
    """The interpreter to run HTA with, or None and the reason to skip it."""
    py = requested or sys.executable
    if requested and not (Path(requested).exists() or shutil.which(requested)):
        return None, f"--hta-python {requested} does not exist"
    res = subprocess.run([py, "-c", "import hta.trace_analysis"], capture_output=True, text=True, check=False)
    if res.returncode != 0:
        where = f"--hta-python {requested}" if requested else f"this interpreter ({sys.executable})"
        return None, (
            f"holistictraceanalysis is not importable from {where}; install it "
            "(pip install holistictraceanalysis) or pass --hta-python PATH"
        )
    return py, ""


def fmt_row(name: str, r: dict, base: dict | None, size: int | None = None) -> str:
    if "error" in r:
        return f"| {name} | failed: {r['error']} | | | |"
    rss = r["peak_rss"] / 2**20
    rss_ratio = f"{r['peak_rss'] / size:.2f}x file" if size else ""
    if "stopped" in r:
        ratio = f"> {r['seconds'] / base['seconds']:.1f}x" if base and "seconds" in base else ""
        return (
            f"| {name} | > {r['seconds']:.0f} s (stopped: {r['stopped']}) | {ratio} | "
            f"{rss:,.0f} MiB so far | {rss_ratio} |"
        )
    ratio = f"{r['seconds'] / base['seconds']:.2f}x" if base and "seconds" in base else ""
    return f"| {name} | {r['seconds']:.2f} s | {ratio} | {rss:,.0f} MiB | {rss_ratio} |"


TASKS = ("baseline", "load", "diagnose", "hta")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--kernels",
        type=int,
        nargs="*",
        default=[1_000_000, 10_000_000],
        help="nsys sizes to run (none: skip nsys)",
    )
    ap.add_argument("--kineto-mb", type=float, default=500, help="Kineto trace size (0: skip Kineto)")
    ap.add_argument("--data-dir", default=os.environ.get("KPROF_BENCH_DIR", "/tmp/kprof-bench"))
    ap.add_argument(
        "--tasks",
        nargs="+",
        choices=TASKS,
        default=list(TASKS),
        help="what to measure (default: all); 'load' is nsys only",
    )
    ap.add_argument(
        "--hta-python",
        default=None,
        help="interpreter that has holistictraceanalysis installed (default: this one)",
    )
    ap.add_argument(
        "--hta-timeout",
        type=float,
        default=1200,
        help="seconds after which HTA is stopped and reported as '> N s' (default 1200)",
    )
    ap.add_argument(
        "--hta-max-rss-gb",
        type=float,
        default=16,
        help="GiB of process-tree RSS at which HTA is stopped (protects a shared machine)",
    )
    ap.add_argument("--no-hta", action="store_true", help="same as leaving hta out of --tasks")
    args = ap.parse_args()
    tasks = set(args.tasks) - ({"hta"} if args.no_hta else set())
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
        base = None
        if "baseline" in tasks:
            base = run("sqlite-numpy", path)
            print(fmt_row(f"nsys {n:,} kernels: baseline sqlite3 -> numpy", base, None), flush=True)
        if "load" in tasks:
            load = run("kprof-load", path)
            print(fmt_row(f"nsys {n:,} kernels: kprof load", load, base), flush=True)
        if "diagnose" in tasks:
            k = run("kprof", path)
            print(fmt_row(f"nsys {n:,} kernels: kprof load + diagnose", k, base), flush=True)
    notes: list[str] = []
    if args.kineto_mb:
        mb = args.kineto_mb
        kdir = data / f"kineto_{int(mb)}mb"
        kdir.mkdir(exist_ok=True)
        path = kdir / "rank0.pt.trace.json"
        if not path.exists():
            synth.make_kineto(path, mb)
        size = path.stat().st_size
        label = f"Kineto {size / 1e6:,.0f} MB"
        base = k = None
        if "baseline" in tasks:
            base = run("json-load", path)
            print(fmt_row(f"{label}: baseline json.load", base, None, size), flush=True)
        if "diagnose" in tasks:
            k = run("kprof", path)
            print(fmt_row(f"{label}: kprof load + diagnose", k, base, size), flush=True)
        if "hta" in tasks:
            hta_py, why = hta_python(args.hta_python)
            if hta_py is None:
                notes.append(f"HTA skipped: {why}.")
            else:
                h = run(
                    "hta", path, python=hta_py, timeout=args.hta_timeout, max_rss=args.hta_max_rss_gb * 2**30
                )
                print(fmt_row(f"{label}: HTA TraceAnalysis (load)", h, base, size), flush=True)
                if "events" in h:
                    notes.append(f"HTA parsed {h['events']:,} events into its trace DataFrame.")
                if k and "seconds" in h and "seconds" in k and "error" not in h:
                    more = "> " if "stopped" in h else ""
                    notes.append(
                        f"HTA / kprof time: {more}{h['seconds'] / k['seconds']:.1f}x; HTA / kprof peak RSS: "
                        f"{more}{h['peak_rss'] / k['peak_rss']:.1f}x"
                        + (f" (HTA stopped at its {h['stopped']})" if "stopped" in h else "")
                    )
    if notes:
        print()
        for line in notes:
            print(line, flush=True)


if __name__ == "__main__":
    main()
