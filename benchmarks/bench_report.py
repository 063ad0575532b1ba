"""Benchmark of ``kprof report`` on the shipped samples: total time and where it goes.

    python benchmarks/bench_report.py [-o /tmp/report.html] [--top 8] [--no-breakdown]

First runs :func:`kprof.report.build_report` as ``kprof report`` does (the notebooks in
parallel, one process and kernel each): that is the headline time, with the target of 60 s
on the development machine (2 cores shared with other work). Then, for the breakdown, runs
the same steps one after the other (papermill per template, merge, nbconvert export, atomic
write) and prints, as markdown, the wall time of each step and the slowest cells of each
notebook (papermill records every cell's duration). Loading and diagnosing the inputs is in
each notebook's first code cell; kernel start-up is what the cells do not account for.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kprof import report  # noqa: E402


def _first_line(src: str) -> str:
    for line in src.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and not line.startswith("%"):
            return line[:70]
    return src.strip().splitlines()[0][:70] if src.strip() else "(empty)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=None, help="report file (default: a temporary file)")
    ap.add_argument("--top", type=int, default=6, help="slowest cells listed per notebook")
    ap.add_argument("--no-breakdown", action="store_true", help="only the end-to-end run")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="kprof-bench-") as tmp:
        t0 = time.perf_counter()
        out = report.build_report(None, Path(args.output or Path(tmp) / "report.html"), log=None)
        end_to_end = time.perf_counter() - t0
        size = out.stat().st_size
    print(f"## `kprof report` on the samples, end to end: {end_to_end:.1f} s ({size / 1e6:.2f} MB)\n")
    if args.no_breakdown:
        return 0 if end_to_end <= 60 else 1

    t_all = time.perf_counter()
    t0 = time.perf_counter()
    inputs = report.sort_inputs(report.sample_paths())
    inputs = report.Inputs(inputs.timelines, inputs.kernels, tuple(report.find_pairs(inputs.kernels)))
    t_inputs = time.perf_counter() - t0
    rows: list[tuple[str, float]] = [("find and check inputs", t_inputs)]
    cells: list[tuple[str, list[tuple[float, str]]]] = []
    parts = []
    with tempfile.TemporaryDirectory(prefix="kprof-bench-") as tmp:
        for stage in inputs.stages():
            t0 = time.perf_counter()
            nb = report.execute_template(stage, report.stage_parameters(stage, inputs), Path(tmp))
            dt = time.perf_counter() - t0
            rows.append((f"execute {report.TEMPLATES[stage]}", dt))
            per_cell = [
                (float(c.metadata.get("papermill", {}).get("duration") or 0.0), _first_line(c.source))
                for c in nb.cells
                if c.cell_type == "code"
            ]
            in_cells = sum(d for d, _ in per_cell)
            per_cell.append((dt - in_cells, "(kernel start-up, shutdown, papermill overhead)"))
            cells.append((report.TEMPLATES[stage], sorted(per_cell, reverse=True)[: args.top]))
            parts.append((stage, nb))
        t0 = time.perf_counter()
        merged = report.merge_notebooks(parts, inputs, show_code=False)
        rows.append(("merge notebooks", time.perf_counter() - t0))
        t0 = time.perf_counter()
        body = report.export_html(merged)
        rows.append(("nbconvert export", time.perf_counter() - t0))
        t0 = time.perf_counter()
        report.atomic_write(Path(tmp) / "report.html", body)
        rows.append(("atomic write", time.perf_counter() - t0))
    total = time.perf_counter() - t_all

    n_in = len(inputs.timelines) + len(inputs.kernels)
    print(
        f"## Breakdown, notebooks one after the other ({n_in} inputs, {os.cpu_count()} CPUs): {total:.1f} s\n"
    )
    print("| step | seconds | share |\n|---|---:|---:|")
    for name, dt in rows:
        print(f"| {name} | {dt:.2f} | {100 * dt / total:.0f}% |")
    print(f"| **total** | **{total:.2f}** | |\n")
    print(f"Report size: {len(body) / 1e6:.2f} MB (images embedded).\n")
    for name, top in cells:
        print(f"### slowest cells of {name}\n\n| seconds | cell |\n|---:|---|")
        for dt, src in top:
            print(f"| {dt:.2f} | `{src.replace('|', '/')}` |")
        print()
    return 0 if end_to_end <= 60 else 1


if __name__ == "__main__":
    sys.exit(main())
