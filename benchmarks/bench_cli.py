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

and prints the median of each and their ratios (goal, issue 16: within 3x). ``--in-process`` also
times ``KPROF_NCU_ISOLATE=0`` (the report read in kprof's own process: what the crash isolation
costs is the difference). ``--sass`` also times the baseline plus one ``sass_by_pc`` per launch (its
function's first instruction): ``ncu_report`` disassembles the report's code on the first such call,
a cost that any reader of the SASS pays and the plain baseline does not. ``--many N`` also
builds a report of N-fold launches from the first report (each launch's result block repeated N
times, as a long profiling session of the same kernels writes them; the copy goes into a temporary
folder) to time the cost per launch.
"""

from __future__ import annotations

import argparse
import gzip
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
    env.update(extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, not at every start
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _time(argv: list[str], **env: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(**env), cwd=REPO)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv[:4])} ... failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return dt


def measure(
    report: Path, repeats: int, in_process: bool, sass: bool, cache: Path
) -> tuple[float, float, float, float | None, float | None]:
    """Median seconds of kprof (cold), of kprof (cached, in the folder ``cache``), of the baseline,
    (``in_process``) of cold kprof reading in-process and (``sass``) of the baseline that also reads
    each launch's SASS."""
    kprof_cmd = [sys.executable, "-m", "kprof", "diagnose", str(report)]
    base_cmd = [sys.executable, "-c", BASELINE, str(report)]
    sass_cmd = [sys.executable, "-c", BASELINE_SASS, str(report)]
    cached = {"KPROF_CACHE": "1", "KPROF_CACHE_DIR": str(cache)}
    _time(base_cmd)  # warm the page cache and the .pyc files once, unmeasured
    _time(kprof_cmd, **cached)  # ... and fill the cache
    k, c, b, i, s = [], [], [], [], []
    for _ in range(repeats):
        b.append(_time(base_cmd))
        k.append(_time(kprof_cmd))
        c.append(_time(kprof_cmd, **cached))
        if in_process:
            i.append(_time(kprof_cmd, KPROF_NCU_ISOLATE="0"))
        if sass:
            s.append(_time(sass_cmd))
    med = statistics.median
    return med(k), med(c), med(b), med(i) if i else None, med(s) if s else None


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
    out = [data[:pos]]
    while pos < len(data):
        start = pos
        (n,) = struct.unpack("<I", data[pos : pos + 4])
        fields = _protobuf_ints(data[pos + 4 : pos + 4 + n])
        end = pos + 4 + n + fields.get(5, 0)
        out.append(data[start:end] * (copies if fields.get(2, 0) else 1))
        pos = end
    dst = folder / f"{report.stem}.x{copies}.ncu-rep"
    dst.write_bytes(b"".join(out))
    return dst


def plain_report(report: Path, folder: Path) -> Path:
    """``report`` itself, or for a ``NAME.ncu-rep.gz`` its content as ``folder/NAME.ncu-rep`` (the
    baseline's ``ncu_report`` reads only plain reports)."""
    if not report.name.endswith(".gz"):
        return report
    dst = folder / report.name.removesuffix(".gz")
    dst.write_bytes(gzip.decompress(report.read_bytes()))
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--in-process", action="store_true", help="also time KPROF_NCU_ISOLATE=0")
    ap.add_argument("--sass", action="store_true", help="also time the baseline reading each launch's SASS")
    ap.add_argument("--many", type=int, default=0, metavar="N", help="also time N-fold launches of the first")
    args = ap.parse_args()
    samples = REPO / "data/samples/ncu"
    reports = args.reports or sorted([*samples.glob("*.ncu-rep"), *samples.glob("*.ncu-rep.gz")])
    with tempfile.TemporaryDirectory(prefix="kprof-bench-cli-") as tmp:
        (Path(tmp) / "plain").mkdir()
        reports = [plain_report(r, Path(tmp) / "plain") for r in reports]
        if args.many:
            reports = [*reports, many_launches(reports[0], args.many, Path(tmp))]
        extra = (f" {'in-process s':>12}" if args.in_process else "") + (
            f" {'base+SASS s':>11}" if args.sass else ""
        )
        print(
            f"{'report':<44} {'baseline s':>10} {'cold s':>7} {'ratio':>6} {'cached s':>8} {'ratio':>6}{extra}"
        )
        cold, warm = [], []
        for rep in reports:
            k, c, b, i, sa = measure(rep, args.repeats, args.in_process, args.sass, Path(tmp) / "cache")
            cold.append(k / b)
            warm.append(c / b)
            tail = (f" {i:12.3f}" if i is not None else "") + (f" {sa:11.3f}" if sa is not None else "")
            print(
                f"{rep.name[:44]:<44} {b:10.3f} {k:7.3f} {k / b:6.2f} {c:8.3f} {c / b:6.2f}{tail}", flush=True
            )
    med = statistics.median
    print(
        f"median ratio over {len(cold)} report(s), {args.repeats} runs each (medians), goal within 3x: "
        f"first run (cold) {med(cold):.2f} (max {max(cold):.2f}); "
        f"later runs (cached) {med(warm):.2f} (max {max(warm):.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
