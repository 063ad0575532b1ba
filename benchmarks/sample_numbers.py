#!/usr/bin/env python3
"""Print the numbers that show each sample's bottleneck (the tables in README.md come from this).

    python3 benchmarks/sample_numbers.py            # needs `pip install ncu-report` for the .ncu-rep part

Kernel samples: opens each ncu/*.ncu-rep[.gz] with ncu_report (a .gz decompressed into a temporary folder), checks it holds 1 range with 1 named launch,
and prints the SpeedOfLight numbers plus the mechanism metrics. Timeline samples: opens each
timeline/*.sqlite with sqlite3 (kernel, graph and memcpy rows, GPU-busy share of the span from the
first NVTX step to the last GPU activity, top runtime calls) and each timeline/*.json.gz (kernel
events, profiler steps). Exits 1 if a file does not have what it should.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import sqlite3
import sys
import tempfile

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "samples")
PROBLEMS: list[str] = []


def _ncu() -> None:
    try:
        import ncu_report  # type: ignore[import-not-found]
    except ImportError:
        print("ncu_report not installed (pip install ncu-report): skipping .ncu-rep files")
        return

    def val(action, name):
        m = action.metric_by_name(name)
        if m is None:
            return None
        try:
            return m.as_double()
        except Exception:  # string-valued metric
            return m.as_string()

    def ratio(a, num, den):
        x, y = val(a, num), val(a, den)
        return x / y if x is not None and y else None

    fmt = lambda v: "-" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v))  # noqa: E731
    print("| file | kernel | ncu duration us | SM % | memory % | DRAM % | mechanism metrics |")
    print("|---|---|---|---|---|---|---|")
    tmp = tempfile.TemporaryDirectory(prefix="kprof-sample-numbers-")
    for path in sorted(glob.glob(os.path.join(HERE, "ncu", "*.ncu-rep")) + glob.glob(os.path.join(HERE, "ncu", "*.ncu-rep.gz"))):
        rel = os.path.relpath(path, HERE)
        if path.endswith(".gz"):  # the samples are stored gzip-compressed; ncu_report reads plain reports
            plain = os.path.join(tmp.name, os.path.basename(path)[: -len(".gz")])
            with gzip.open(path, "rb") as src, open(plain, "wb") as dst:
                dst.write(src.read())
            path = plain
        r = ncu_report.load_report(path)
        if r.num_ranges() != 1 or r.range_by_idx(0).num_actions() != 1:
            PROBLEMS.append(f"{rel}: expected 1 range with 1 action")
            continue
        a = r.range_by_idx(0).action_by_idx(0)
        if not a.name() or val(a, "sm__throughput.avg.pct_of_peak_sustained_elapsed") is None:
            PROBLEMS.append(f"{rel}: launch without a name or SpeedOfLight metrics")
            continue
        mech = {
            "ld sectors/req": ratio(a, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
                                    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
            "st sectors/req": ratio(a, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
                                    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
            "smem ld wavefronts/inst": ratio(a, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                                             "smsp__sass_inst_executed_op_shared_ld.sum"),
            "smem st wavefronts/inst": ratio(a, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                                             "smsp__sass_inst_executed_op_shared_st.sum"),
            "smem ld conflicts": val(a, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
            "smem st conflicts": val(a, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
            "local ld sectors": val(a, "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"),
            "local st sectors": val(a, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
            "threads/inst": val(a, "smsp__thread_inst_executed_per_inst_executed.ratio"),
            "occupancy achieved %": val(a, "sm__warps_active.avg.pct_of_peak_sustained_active"),
            "occupancy theoretical %": val(a, "sm__maximum_warps_per_active_cycle_pct"),
            "grid": val(a, "launch__grid_size"),
            "block": val(a, "launch__block_size"),
            "waves/SM": val(a, "launch__waves_per_multiprocessor"),
            "tensor pipe %": val(a, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
            "fma pipe %": val(a, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"),
            "L2 red requests": val(a, "lts__t_requests_srcunit_tex_op_red.sum"),
            "L2 % avg/max slice": (val(a, "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
                                   val(a, "lts__throughput.max.pct_of_peak_sustained_elapsed")),
        }
        shown = "; ".join(
            f"{k} {'/'.join(fmt(x) for x in v) if isinstance(v, tuple) else fmt(v)}"
            for k, v in mech.items() if v not in (None, 0.0) and v != (0.0, 0.0))
        print(f"| {rel} | {a.name()[:40]} | {val(a, 'gpu__time_duration.sum') / 1e3:.1f} "
              f"| {val(a, 'sm__throughput.avg.pct_of_peak_sustained_elapsed'):.1f} "
              f"| {val(a, 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed'):.1f} "
              f"| {val(a, 'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed'):.1f} | {shown} |")


def _union(intervals: list[tuple[int, int]]) -> int:
    total, cur = 0, None
    for s, e in sorted(intervals):
        if cur is None or s > cur[1]:
            if cur:
                total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0)


def _rows(con: sqlite3.Connection, tables: set[str], table: str, cols: str) -> list[tuple]:
    """Rows of ``table`` (absent tables, e.g. KERNEL in a graph-only capture, give no rows)."""
    return con.execute(f"select {cols} from {table}").fetchall() if table in tables else []


def _sqlite() -> None:
    print("\n| file | kernels | graph launches | memcpys | NVTX steps | span ms | GPU busy % | top runtime calls (count, ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(HERE, "timeline", "*.sqlite"))):
        rel = os.path.relpath(path, HERE)
        con = sqlite3.connect(path)
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}

        kern = _rows(con, tables, "CUPTI_ACTIVITY_KIND_KERNEL", "start, end")
        graph = _rows(con, tables, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "start, end")
        copies = _rows(con, tables, "CUPTI_ACTIVITY_KIND_MEMCPY", "start, end")
        nvtx = _rows(con, tables, "NVTX_EVENTS", "start, end, text")
        steps = [r for r in nvtx if str(r[2]).startswith("step")]
        busy_iv = kern + graph + copies
        if not busy_iv or not steps:
            PROBLEMS.append(f"{rel}: no GPU activity or no NVTX steps")
            continue
        t0 = min(s for s, _, _ in steps)
        t1 = max(max(e for _, e in busy_iv), max(e for _, e, _ in steps))
        busy = _union(busy_iv)
        api = con.execute(
            "select s.value, count(*), sum(r.end - r.start) from CUPTI_ACTIVITY_KIND_RUNTIME r "
            "join StringIds s on r.nameId = s.id group by s.value order by 3 desc limit 3").fetchall()
        top = ", ".join(f"{n} ({c}, {t / 1e6:.1f})" for n, c, t in api)
        print(f"| {rel} | {len(kern)} | {len(graph)} | {len(copies)} | {len(steps)} | {(t1 - t0) / 1e6:.2f} "
              f"| {100 * busy / (t1 - t0):.1f} | {top} |")


def _kineto() -> None:
    print("\n| file | kernel events | profiler steps |")
    print("|---|---|---|")
    for path in sorted(glob.glob(os.path.join(HERE, "timeline", "*.json.gz"))):
        rel = os.path.relpath(path, HERE)
        with gzip.open(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        kernels = sum(1 for e in events if e.get("cat") == "kernel")
        steps = {e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")}
        if not kernels or not steps:
            PROBLEMS.append(f"{rel}: no kernel events or no ProfilerStep")
        print(f"| {rel} | {kernels} | {len(steps)} |")


if __name__ == "__main__":
    _ncu()
    _sqlite()
    _kineto()
    for p in PROBLEMS:
        print("PROBLEM:", p, file=sys.stderr)
    sys.exit(1 if PROBLEMS else 0)
