"""Job benchmark (issue 9): 64 synthetic ranks built from the real 2-rank captures, one injected straggler.

    python benchmarks/bench_jobs.py [--ranks 64] [--kernels 200000] [--straggler 37] [--keep]

Data. Each rank is an nsys 2025.3 SQLite export in the real schema: a copy of
``data/samples/multirank/ddp_straggler_rank0.sqlite`` (a rank that waits in the all-reduce)
whose steady steps 2-5 are tiled inside SQLite (``INSERT ... SELECT`` with time and correlation
offsets, NVTX ``step N`` renumbered) until the rank holds about ``--kernels`` kernels, with the
launcher environment set to ``RANK=r WORLD_SIZE=N``. The straggler is tiled the same way from
``ddp_straggler_rank1.sqlite`` (the rank that does ~1.8 ms more compute per step), with the same
number of steps, so it holds ~35% more kernels. The two templates are built once; the ranks are
file copies with their ``RANK`` changed (written to ``--data-dir``, default a temp dir, removed
at the end unless ``--keep``).

Measured, each in a fresh Python process so that its peak RSS is its own
(``resource.getrusage(RUSAGE_SELF)``, the gathering process only, not its workers):

- ``job, 1 worker`` / ``job, 2 workers``: ``kprof.diagnose_job(files, workers=W)``, end to end
  (per-rank load + reduction + the rank's own diagnosis in the pool, then the job diagnosis);
- ``job, Dask LocalCluster of W worker processes`` (``--dask W``, default 2): the same on a
  ``distributed.LocalCluster`` (one thread per worker process) started in the measured process; its
  start is included in the time and printed apart;
- ``loop``: ``kprof.diagnose(path)`` for each of the files in turn, in one process (what one
  would do without the job view; it gives no job verdict).

The ratio columns are the loop's time over the row's time, and the row's time over the loop's divided
by the row's workers (goal, issue 26: at most 1.1). The machine's load average is printed with each row.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SAMPLES = REPO / "data" / "samples" / "multirank"
WAITING = SAMPLES / "ddp_straggler_rank0.sqlite"
SLOW = SAMPLES / "ddp_straggler_rank1.sqlite"
FIRST_TILED_STEP = 2
LAST_TILED_STEP = 5
HOST_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _cols(con: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in con.execute(f'PRAGMA table_info("{table}")')]


def tile(src: Path, dst: Path, reps: int) -> dict[str, int]:
    """Copy ``src`` to ``dst`` and append ``reps`` copies of its steps 2-5 (all done inside SQLite)."""
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    steps = con.execute(
        "SELECT start, end, text FROM NVTX_EVENTS WHERE text LIKE 'step %' ORDER BY start"
    ).fetchall()
    by_num = {int(t.split()[1]): (s, e) for s, e, t in steps}
    t0 = by_num[FIRST_TILED_STEP][0]
    h1 = by_num[LAST_TILED_STEP][1]
    n_steps = LAST_TILED_STEP - FIRST_TILED_STEP + 1
    corr_host = "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= :t0 AND start < :h1"
    g1 = max(
        con.execute(
            f'SELECT max("end") FROM {t} WHERE correlationId IN ({corr_host})', {"t0": t0, "h1": h1}
        ).fetchone()[0]
        or 0
        for t in GPU_TABLES
    )
    period = max(h1, g1) - t0 + 20_000
    corr_span = (
        int(con.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]) + 1
    )
    params = {"t0": t0, "h1": h1, "p": period, "c": corr_span, "reps": reps, "n": n_steps}
    reps_cte = "WITH RECURSIVE reps(r) AS (SELECT 1 UNION ALL SELECT r + 1 FROM reps WHERE r < :reps) "

    def shifted(table: str) -> str:
        out = []
        for c in _cols(con, table):
            q = f'"{c}"'
            if c in ("start", "end"):
                out.append(f"{q} + r * :p")
            elif c == "correlationId":
                out.append(f"{q} + r * :c")
            elif table == "NVTX_EVENTS" and c == "text":
                out.append(
                    "CASE WHEN text LIKE 'step %' THEN 'step ' || (CAST(substr(text, 6) AS INTEGER) + r * :n) "
                    "ELSE text END"
                )
            else:
                out.append(q)
        return ", ".join(out)

    con.execute("CREATE TEMP TABLE win_corr AS " + corr_host, {"t0": t0, "h1": h1})
    for t in (*HOST_TABLES, "NVTX_EVENTS"):
        con.execute(
            reps_cte
            + f"INSERT INTO {t} SELECT {shifted(t)} FROM {t}, reps WHERE start >= :t0 AND start < :h1",
            params,
        )
    for t in GPU_TABLES:
        con.execute(
            reps_cte + f"INSERT INTO {t} SELECT {shifted(t)} FROM {t}, reps "
            "WHERE correlationId IN (SELECT correlationId FROM win_corr)",
            params,
        )
    con.commit()
    kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    api = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
    con.execute("VACUUM")
    con.close()
    return {"kernels": int(kernels), "api": int(api), "steps": len(steps) + reps * n_steps}


def set_rank(path: Path, rank: int, world: int) -> None:
    con = sqlite3.connect(path)
    for var, val in (("RANK", rank), ("WORLD_SIZE", world)):
        con.execute(
            "UPDATE META_DATA_CAPTURE SET value = ? WHERE name = 'PROCESS_0:ENVIRONMENT_VARIABLE' AND value LIKE ?",
            (f'{var}="{val}"', f"{var}=%"),
        )
    con.commit()
    con.close()


def build(data_dir: Path, n_ranks: int, n_kernels: int, straggler: int) -> tuple[list[str], dict[str, int]]:
    con = sqlite3.connect(WAITING)
    per_block = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] / 6 * 4
    base = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    reps = max(1, round((n_kernels - base) / per_block))
    t = time.perf_counter()
    waiting = data_dir / "template_waiting.sqlite"
    slow = data_dir / "template_slow.sqlite"
    info = tile(WAITING, waiting, reps)
    info_slow = tile(SLOW, slow, reps)
    files = []
    for r in range(n_ranks):
        f = data_dir / f"job_rank{r:03d}.sqlite"
        shutil.copyfile(slow if r == straggler else waiting, f)
        set_rank(f, r, n_ranks)
        files.append(str(f))
    waiting.unlink()
    slow.unlink()
    info["slow_kernels"] = info_slow["kernels"]
    info["build_s"] = round(time.perf_counter() - t, 1)
    info["bytes"] = Path(files[0]).stat().st_size
    return files, info


WORKER = r"""
import json, resource, sys, time
mode, arg, files = sys.argv[1], sys.argv[2], sys.argv[3:]
import kprof
t0 = time.perf_counter()
out = {}
if mode == "job":
    ds = kprof.diagnose_job(files, workers=int(arg), progress=False)
    d = ds[0]
    out = {"bottleneck": d.bottleneck.value if d.bottleneck else None, "headline": d.headline, "n": len(ds)}
elif mode == "dask":
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=int(arg), threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        out["cluster_start_s"] = time.perf_counter() - t0
        ds = kprof.diagnose_job(files, engine="dask", scheduler=client, progress=False)
    d = ds[0]
    out.update({"bottleneck": d.bottleneck.value if d.bottleneck else None, "headline": d.headline, "n": len(ds)})
else:
    n = 0
    for f in files:
        n += len(kprof.diagnose(f))
    out = {"n": n}
out["seconds"] = time.perf_counter() - t0
import os as _os
_t = _os.times()  # this process and its workers, once they have ended (the pool's and the cluster's)
out["cpu_s"] = _t.user + _t.system + _t.children_user + _t.children_system
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["children_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(out))
"""


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} (1 / 5 min), {os.cpu_count()} CPUs"


def measure(mode: str, arg: str, files: list[str]) -> dict[str, object]:
    r = subprocess.run(
        [sys.executable, "-c", WORKER, mode, arg, *files],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    if r.returncode != 0:
        raise SystemExit(f"{mode} {arg} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--kernels", type=int, default=200_000, help="kernels per (non-straggler) rank")
    ap.add_argument("--straggler", type=int, default=37, help="the rank made slow")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument(
        "--dask",
        type=int,
        nargs="*",
        default=[2],
        help="also run on a Dask LocalCluster of this many workers",
    )
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--no-loop", action="store_true", help="skip the single-rank loop")
    ap.add_argument(
        "--loop-sample",
        type=int,
        default=0,
        help="time the loop on this many ranks (the straggler included) and scale to all ranks "
        "(the ranks are copies of two templates, so each costs the same); 0: all ranks",
    )
    args = ap.parse_args()
    tmp = args.data_dir or Path(tempfile.mkdtemp(prefix="kprof-bench-jobs-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        args.straggler = min(args.straggler, args.ranks - 1)
        files, info = build(tmp, args.ranks, args.kernels, args.straggler)
        print(
            f"{args.ranks} ranks: {info['kernels']:,} kernels, {info['api']:,} API calls, {info['steps']:,} steps per "
            f"rank ({info['slow_kernels']:,} kernels on the straggler, rank {args.straggler}); "
            f"{info['bytes'] / 1e6:.0f} MB per file; built in {info['build_s']} s",
            flush=True,
        )
        rows: list[tuple[str, dict[str, object]]] = []
        print(f"  {_load()}", flush=True)
        for w in args.workers:
            rows.append((f"job, {w} worker{'s' if w != 1 else ''}", measure("job", str(w), files)))
            print(f"  {rows[-1][0]}: {rows[-1][1]['seconds']:.1f} s ({_load()})", flush=True)
        for w in args.dask:
            rows.append((f"job, Dask LocalCluster of {w} worker processes", measure("dask", str(w), files)))
            m = rows[-1][1]
            print(
                f"  {rows[-1][0]}: {m['seconds']:.1f} s, cluster start {m['cluster_start_s']:.1f} s ({_load()})",
                flush=True,
            )
        loop = None
        if not args.no_loop:
            k = args.loop_sample or args.ranks
            straggler = min(args.straggler, args.ranks - 1)
            sample = files[:k] if straggler < k else [*files[: k - 1], files[straggler]]
            loop = measure("loop", "", sample)
            loop["seconds"] = float(loop["seconds"]) * args.ranks / len(sample)  # type: ignore[arg-type]
            loop["cpu_s"] = float(loop["cpu_s"]) * args.ranks / len(sample)  # type: ignore[arg-type]
            label = f"loop: kprof.diagnose x {args.ranks}"
            if len(sample) < args.ranks:
                label += f" (timed on {len(sample)}, scaled)"
            rows.append((label, loop))
            print(f"  loop: {loop['seconds']:.1f} s", flush=True)
        print()
        print(
            "| run | time (s) | per rank (s) | CPU (s) | peak RSS, gathering process (MB) | loop time / this | "
            "this / (loop time / workers), goal <= 1.1 |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, m in rows:
            secs = float(m["seconds"])  # type: ignore[arg-type]
            ratio = f"{float(loop['seconds']) / secs:.2f}x" if loop else "-"  # type: ignore[arg-type]
            w = int(name.split(" worker")[0].split()[-1]) if "worker" in name else 1
            ideal = f"{secs / (float(loop['seconds']) / w):.2f}" if loop else "-"  # type: ignore[arg-type]
            print(
                f"| {name} | {secs:.1f} | {secs / args.ranks:.2f} | {float(m['cpu_s']):.1f} | "
                f"{float(m['peak_rss_mb']):.0f} | {ratio} | {ideal} |"
            )  # type: ignore[arg-type]
        print(f"\n{_load()}")
        job = next((m for n, m in rows if n.startswith("job")), None)
        if job:
            print(f"\njob verdict: [{job['bottleneck']}] {job['headline']}")
    finally:
        if not args.keep and args.data_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
