"""CLI benchmark: ``kprof diagnose REPORT.ncu-rep`` against a process that only reads the report.

    python benchmarks/bench_cli.py [REPORT.ncu-rep ...] [--repeats 5] [--many N]

For each report (default: every ``.ncu-rep`` and ``.ncu-rep.gz`` of ``data/samples/ncu``, where the samples are
stored gzip-compressed; a ``.gz`` is decompressed into a temporary folder first, untimed, so that both sides
read the same plain report) it times, each in a fresh process and alternating so that a busy machine slows
both alike:

- ``kprof`` (cold): ``python -m kprof diagnose REPORT`` (what the ``kprof`` command runs) with the cache of
  read reports off (``KPROF_CACHE=0``), end to end: interpreter start, imports, the reader process, the
  SASS, the diagnosis, the printed text: the first time kprof sees a report;
- ``kprof`` (cached): the same with the cache on, in a temporary cache folder that the unmeasured warm-up
  run filled (kprof/io/ncu_cache.py): every later run on the same report;
- baseline: ``python -c ...`` that imports NVIDIA's ``ncu_report``, opens the same report and
  reads the value of every metric of every launch, nothing else.

- the floor: the baseline plus one ``sass_by_pc`` per launch (its function's first instruction):
  ``ncu_report`` disassembles the report's code on the first such call (0.24-0.48 s per process), a
  cost that any reader of the SASS pays and the plain baseline does not;

and prints the median of each and their ratios: first read / floor (goal, issue 26: within 1.2x) and
cached / baseline (issue 16: within 3x). ``--in-process`` also times ``KPROF_NCU_ISOLATE=0`` (the
report read in kprof's own process: what the crash isolation costs is the difference). ``--many N
[N ...]`` also builds reports of N-fold launches from the first report (each launch's result block
repeated N times, as a long profiling session of the same kernels writes them; the copies go into a
temporary folder) and, for them, measures the peak RSS (once, untimed) of kprof's own process and of
its largest reader process, and prints the ratio of the largest N to the smallest (goal: flat).
ncu_report keeps every action it hands out until its process ends (16 MB per launch of
atomic_contention), so the floor process itself grows with N: ``--floor-max-gb`` (default 6) skips
timing a floor that would need more than that (its time is then extrapolated, linearly in N, from
the floors measured at the smaller N of the run, and marked so). The machine's load (``os.getloadavg``)
is printed before and after.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

BASELINE = r"""
import sys
import ncu_report
ctx = ncu_report.load_report(sys.argv[1])
n = 0
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        action = rng.action_by_idx(a)
        for name in action.metric_names():
            m = action.metric_by_name(name)
            if m is not None:
                m.value()
                n += 1
print(n)
"""

BASELINE_SASS = BASELINE.replace(
    "                n += 1\n",
    "                n += 1\n"
    "        pcs = action.metric_by_name('launch__function_pcs')\n"
    "        if pcs is not None:\n"
    "            action.sass_by_pc(int(pcs.value(0)))\n",
)
"""The baseline, and the first instruction of each launch's function read as SASS."""


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, KPROF_CACHE="0")
    tree = extra.pop("TREE", str(REPO))
    env.update(extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, not at every start
    env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [env.get("PYTHONPATH")])])
    return env


CPU: dict[str, list[float]] = {}
"""CPU seconds (user + system) of each timed command and its processes, by command kind: load-proof where
wall time is not (on a shared machine the floor's one process and kprof's several get other shares)."""


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _time(argv: list[str], kind: str = "", **env: str) -> float:
    c0 = _cpu()
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(**env), cwd=REPO)
    dt = time.perf_counter() - t0
    if kind:
        CPU.setdefault(kind, []).append(_cpu() - c0)
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])} ... failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return dt


def measure(
    report: Path, repeats: int, in_process: bool, floor: bool, cache: Path, before: Path | None = None
) -> tuple[float, float, float, float | None, float | None, float | None]:
    """Median seconds of kprof (cold), of kprof (cached, in the folder ``cache``), of the baseline,
    (``in_process``) of cold kprof reading in-process and (``floor``) of the baseline that also reads
    each launch's SASS."""
    kprof_cmd = [sys.executable, "-m", "kprof", "diagnose", str(report)]
    base_cmd = [sys.executable, "-c", BASELINE, str(report)]
    sass_cmd = [sys.executable, "-c", BASELINE_SASS, str(report)]
    cached = {
        "KPROF_CACHE": "1",
        "KPROF_CACHE_DIR": str(cache),
        "KPROF_CACHE_MAX_MB": "8192",
    }  # a long copy fits
    if floor:  # (a report whose floor would not fit: the baseline would not either, same reads)
        _time(base_cmd)  # warm the page cache and the .pyc files once, unmeasured
    _time(kprof_cmd, **cached)  # ... and fill the cache
    if before is not None:
        _time(kprof_cmd, TREE=str(before))  # its .pyc files
    k, c, b, i, s, o = [], [], [], [], [], []
    CPU.clear()
    for _ in range(repeats):
        if floor:
            b.append(_time(base_cmd))
        k.append(_time(kprof_cmd, "kprof"))
        c.append(_time(kprof_cmd, **cached))
        if in_process:
            i.append(_time(kprof_cmd, KPROF_NCU_ISOLATE="0"))
        if floor:
            s.append(_time(sass_cmd, "floor"))
        if before is not None:
            o.append(_time(kprof_cmd, "before", TREE=str(before)))
    med = statistics.median
    return (
        med(k),
        med(c),
        med(b) if b else 0.0,
        med(i) if i else None,
        med(s) if s else None,
        med(o) if o else None,
    )


MEMORY = r"""
import json, os, resource, sys
argv = ["diagnose", *sys.argv[1:]]
from kprof.io import ncu
ncu.prestart(argv)  # what `kprof diagnose` does as it starts (kprof/__init__.py)
from kprof.cli import main
with open(os.devnull, "w") as out:
    sys.stdout = out
    rc = main(argv)
sys.stdout = sys.__stdout__
if ncu._READER is not None:
    ncu._READER.stop()  # the readers end and are waited for: their peak is in RUSAGE_CHILDREN
# this process's own high-water mark (ru_maxrss of RUSAGE_SELF keeps the forking parent's across exec)
me = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
readers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": rc, "parent_mb": me / 1024, "reader_mb": readers / 1024}))
"""
"""``kprof diagnose REPORT`` (cold) in this process, then the peak RSS of this process and of its largest
reader process (the readers and their forked children, once all have ended)."""


def memory(report: Path) -> dict[str, float]:
    r = subprocess.run(
        [sys.executable, "-c", MEMORY, str(report)], capture_output=True, text=True, env=_env(), cwd=REPO
    )
    if r.returncode != 0:
        sys.exit(f"memory run of {report} failed: {r.stderr[-800:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {"parent_mb": float(out["parent_mb"]), "reader_mb": float(out["reader_mb"])}


FLOOR_MB_PER_LAUNCH = 16
"""ncu_report's memory per action handed out (atomic_contention, ncu-report 2026.3.1): what a floor process
of N launches holds at its end, about N x this."""


def many_launches(report: Path, copies: int, folder: Path) -> Path:
    """A copy of ``report`` with each result block (one launch) repeated ``copies`` times.

    An ``.ncu-rep`` is ``NVR\\0``, a u32-prefixed file header, then blocks (u32 header size, a
    protobuf header whose field 2 counts result entries and field 5 is the payload size, the
    payload); see :func:`kprof.io.ncu.check_report_structure`.
    """
    from kprof.io.ncu import _protobuf_ints

    data = report.read_bytes()
    (n,) = struct.unpack("<I", data[4:8])
    pos = 8 + n
    dst = folder / f"{report.stem}.x{copies}.ncu-rep"
    with open(dst, "wb") as out:  # written block by block: this process stays small (its children inherit
        out.write(data[:pos])  # its peak RSS as theirs)
        while pos < len(data):
            start = pos
            (n,) = struct.unpack("<I", data[pos : pos + 4])
            fields = _protobuf_ints(data[pos + 4 : pos + 4 + n])
            end = pos + 4 + n + fields.get(5, 0)
            for _ in range(copies if fields.get(2, 0) else 1):
                out.write(data[start:end])
            pos = end
    return dst


def plain_report(report: Path, folder: Path) -> Path:
    """``report`` itself, or for a ``NAME.ncu-rep.gz`` its content as ``folder/NAME.ncu-rep`` (the
    baseline's ``ncu_report`` reads only plain reports)."""
    if not report.name.endswith(".gz"):
        return report
    dst = folder / report.name.removesuffix(".gz")
    dst.write_bytes(gzip.decompress(report.read_bytes()))
    return dst


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--in-process", action="store_true", help="also time KPROF_NCU_ISOLATE=0")
    ap.add_argument(
        "--sass", action="store_true", help="(the floor is always timed now; kept for old commands)"
    )
    ap.add_argument(
        "--many", type=int, nargs="+", default=[], metavar="N", help="also time N-fold launches of the first"
    )
    ap.add_argument(
        "--floor-max-gb", type=float, default=6.0, help="time no floor that would need more memory"
    )
    ap.add_argument(
        "--only-many", action="store_true", help="time only the first report and the N-fold copies"
    )
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        metavar="TREE",
        help="also time the first read of another kprof checkout (e.g. main), alternating with this one",
    )
    args = ap.parse_args()
    samples = REPO / "data/samples/ncu"
    reports = args.reports or sorted([*samples.glob("*.ncu-rep"), *samples.glob("*.ncu-rep.gz")])
    print(_load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="kprof-bench-cli-") as tmp:
        (Path(tmp) / "plain").mkdir()
        reports = [plain_report(r, Path(tmp) / "plain") for r in reports]
        many = {n: many_launches(reports[0], n, Path(tmp)) for n in sorted(args.many)}
        if args.only_many:
            reports = reports[:1]
        extra = (f" {'in-process s':>12}" if args.in_process else "") + (
            f" {'before s':>9} {'/floor':>6}" if args.before else ""
        )
        print(
            f"{'report':<34} {'baseline s':>10} {'floor s':>8} {'first read s':>12} {'/floor':>6} "
            f"{'cached s':>8} {'/base':>6}{extra}"
        )
        cold, warm, floors, bases = [], [], {}, {}
        for rep in [*reports, *many.values()]:
            n = next((k for k, v in many.items() if v == rep), 1)
            fits = n * FLOOR_MB_PER_LAUNCH <= args.floor_max_gb * 1024
            k, c, b, i, sa, o = measure(  # a kprof before streaming would hold what the floor holds
                rep, args.repeats, args.in_process, fits, Path(tmp) / "cache", args.before if fits else None
            )
            note = ""
            if sa is None:  # extrapolated from the floors of this run, linear in the launches
                (n0, f0), (n1, f1) = sorted(floors.items())[:1][0], sorted(floors.items())[-1]
                sa = f1 + (n - n1) * (f1 - f0) / max(1, n1 - n0)
                b = bases[n1] + (n - n1) * (bases[n1] - bases[n0]) / max(1, n1 - n0)
                note = (
                    f"  (baseline and floor extrapolated from N={n0} and N={n1}: their process would hold "
                    f"~{n * FLOOR_MB_PER_LAUNCH / 1024:.0f} GB)"
                )
            elif rep == reports[0] or n > 1:
                floors[n], bases[n] = sa, b
            cold.append(k / sa)
            warm.append(c / b)
            tail = (f" {i:12.3f}" if i is not None else "") + (
                f" {o:9.3f} {o / sa:6.2f}" if o is not None else ""
            )
            print(
                f"{rep.name[:34]:<34} {b:10.3f} {sa:8.3f} {k:12.3f} {k / sa:6.2f} {c:8.3f} {c / b:6.2f}{tail}{note}",
                flush=True,
            )
            cpu = ", ".join(f"{kind} {statistics.median(v):.2f}" for kind, v in CPU.items())
            print(f"{'':<34} CPU s (median, all processes): {cpu}; {_load()}", flush=True)
        if many:
            mem = {n: memory(rep) for n, rep in many.items()}
            for n, m in mem.items():
                print(
                    f"peak RSS, N={n}: kprof process {m['parent_mb']:.0f} MB, largest reader {m['reader_mb']:.0f} MB"
                )
            lo, hi = min(mem), max(mem)
            if lo != hi:
                print(
                    f"peak RSS ratio N={hi} / N={lo} (goal: flat, 1.0): kprof process "
                    f"{mem[hi]['parent_mb'] / mem[lo]['parent_mb']:.2f}, largest reader "
                    f"{mem[hi]['reader_mb'] / mem[lo]['reader_mb']:.2f}"
                )
    med = statistics.median
    print(
        f"median over {len(cold)} report(s), {args.repeats} runs each (medians): first read / floor "
        f"{med(cold):.2f} (max {max(cold):.2f}; goal within 1.2x); cached / baseline {med(warm):.2f} "
        f"(max {max(warm):.2f}; goal within 3x)"
    )
    print(_load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
