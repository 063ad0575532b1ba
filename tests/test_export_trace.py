"""``kprof export-trace``: every timeline sample as a Chrome trace whose slices say what the diagnosis says.

Opened offline as the trace processor would open it (tests/chrome_trace.py: the format's schema, its
timestamp conversion, slices nested per track), and in Perfetto's ``TraceProcessor`` too when a
``trace_processor_shell`` binary is installed (none can be fetched here: see tests/chrome_trace.py).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import kprof
from kprof.diagnose.critical_path import critical_paths
from kprof.diagnose.timeline import gap_causes, timeline_metrics
from kprof.export_trace import (
    CRITICAL_TID,
    GAP_BOTTLENECKS,
    GAP_LABELS,
    GAPS_TID,
    KPROF_PID,
    NCU_TID,
    VERDICT_TID,
    _cover,
    _lanes,
    trace_link,
    write_trace,
)
from kprof.timeline_model import ApiTable, KernelTable, RangeTable, Timeline
from tests import chrome_trace as ct

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "samples"
TIMELINES = sorted(
    [*SAMPLES.glob("timeline/*.sqlite"), *SAMPLES.glob("timeline/*.sqlite.gz"), *SAMPLES.glob("timeline/*.json.gz"), *SAMPLES.glob("multirank/*.sqlite"),
     *SAMPLES.glob("multirank/*.json.gz")]
)  # fmt: skip


def _export(src: Path, tmp: Path) -> tuple[Timeline, list[kprof.Diagnosis], dict, list[ct.Slice]]:
    tl = kprof.load(src)
    diags = kprof.diagnose(tl)
    out = tmp / (src.name + ".trace.json.gz")
    write_trace(tl, out, diags)
    doc = ct.load(out)
    ct.validate(doc)
    return tl, diags, doc, ct.slices(doc)


def _on(sl: list[ct.Slice], pid: int, tid: int) -> list[ct.Slice]:
    return [s for s in sl if s.pid == pid and s.tid == tid]


@pytest.mark.skipif(not TIMELINES, reason="no timeline samples in data/samples")
@pytest.mark.parametrize("src", TIMELINES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_sample_opens_with_the_gaps_and_causes_the_diagnosis_states(src: Path, tmp_path: Path) -> None:
    tl, diags, doc, sl = _export(src, tmp_path)
    d = diags[0]
    origin = doc["otherData"]["kprof"]["origin_ns"]
    gaps = gap_causes(tl)
    metrics = timeline_metrics(tl)

    # the steady state: one slice over the window the diagnosis measured, named with its verdict
    (win,) = [s for s in _on(sl, KPROF_PID, VERDICT_TID) if s.name.startswith("steady state")]
    bid = d.bottleneck.value if d.bottleneck is not None else "none"
    assert win.name == f"steady state: {bid} ({d.verdict.value})"
    assert (win.ts + origin, win.ts + win.dur + origin) == gaps.window
    assert win.dur == metrics["wall_ns"]
    assert win.args["headline"] == d.headline

    # the gaps: exactly the diagnosis's, each named by its cause
    g = _on(sl, KPROF_PID, GAPS_TID)
    assert len(g) == len(gaps)
    assert [(s.ts + origin, s.ts + s.dur + origin) for s in g] == list(
        zip(gaps.start_ns.tolist(), gaps.end_ns.tolist(), strict=True)
    )
    assert [s.args["cause"] for s in g] == gaps.cause.tolist()
    assert all(s.name.startswith(GAP_LABELS[s.args["cause"]]) for s in g)
    assert all(s.depth == 0 for s in g)
    idle = Counter()
    for s in g:
        idle[s.args["cause"]] += s.dur
    assert sum(idle.values()) == metrics["gpu_idle_ns"]

    # ... and they add up to the numbers the diagnosis prints
    busy = next((e for e in d.evidence if e.metric == "gpu_busy_fraction"), None)
    if busy is not None:
        assert abs(100 * (1 - sum(idle.values()) / win.dur) - busy.value) < 0.006, (busy.value, idle)
    for f in d.findings:
        for e in f.evidence:
            m = re.fullmatch(r"idle time: (\w+)", e.name)
            if m and e.unit == "us":
                assert abs(idle[m.group(1)] / 1e3 - e.value) < 0.0006, (e, idle)
    if d.bottleneck is not None and d.bottleneck.value in (
        "host_launch_bound",
        "sync_bound",
        "host_compute_bound",
    ):
        top = max(idle, key=lambda c: idle[c])
        assert GAP_BOTTLENECKS[top] == d.bottleneck.value, (idle, d.bottleneck)

    # GPU work and host calls: all of it, on the GPU and host processes
    procs, threads = ct.names(doc)
    kernels = [s for s in sl if s.cat == "kernel"]
    assert len(kernels) == len(tl.kernels)
    assert sum(s.dur for s in kernels) == int(np.sum(tl.kernels.duration_ns))
    assert all(
        procs[s.pid].startswith("GPU ") and threads[(s.pid, s.tid)].startswith("stream ") for s in kernels
    )
    assert sum(1 for s in sl if s.cat == "cuda_api") == len(tl.api)
    assert sum(1 for s in sl if s.cat == "host_op") == len(tl.host_ops)
    assert sum(1 for s in sl if s.cat in ("range", "step")) == len(tl.ranges) + len(tl.steps)

    # the critical path of each steady step: a slice per step, tiled by its segments, the same sums by kind
    cp = critical_paths(tl)
    track = _on(sl, KPROF_PID, CRITICAL_TID)
    steps = [s for s in track if s.depth == 0]
    assert [(s.ts + origin, s.ts + s.dur + origin) for s in steps] == [
        (p.start_ns, p.end_ns) for p in cp.paths
    ]
    kinds = Counter()
    for s in track:
        if s.depth == 1:
            kinds[s.args["kind"]] += s.dur
    assert kinds == Counter({k: v for k, v in cp.ns_by_kind().items() if v})
    assert all(s.depth <= 1 for s in track)

    # the kernels to profile with ncu: the ones the gpu_bound diagnosis names, inside the steady state
    ncu = _on(sl, KPROF_PID, NCU_TID)
    if d.bottleneck is not None and d.bottleneck.value == "gpu_bound" and "ncu " in (d.next_step or ""):
        named: set[str] = (
            set()
        )  # what each ncu command's -k matches: short names, or full ones with the demangled base
        for cmd in (d.next_step or "").split("  |  "):
            m = re.search(r"-k 'regex:([^']+)'", cmd)
            if m:
                full = "--kernel-name-base demangled" in cmd
                pool = tl.kernels.names if full else tl.kernels.short_names
                named |= {n for n in pool if re.match(m.group(1), n)}
        got = {s.name.removeprefix("profile with ncu: ") for s in ncu}
        assert ncu and got == named
        for e in d.evidence:  # the kernels the evidence ranks first are among them
            if e.metric == "gpu_time_share":
                shown = e.name.removeprefix("GPU time share: ").removesuffix("...")
                assert any(n.startswith(shown) for n in got), (shown, got)
        assert all(win.ts <= s.ts < win.ts + win.dur for s in ncu)
        assert all(s.args["command"] in d.next_step for s in ncu)
    else:
        assert ncu == []


def test_the_gpu_bound_capture_marks_every_steady_launch_of_the_named_kernel(tmp_path: Path) -> None:
    src = SAMPLES / "timeline" / "gpu_bound.sqlite"
    if not src.is_file():
        pytest.skip("gpu_bound.sqlite not in data/samples")
    _, diags, _, sl = _export(src, tmp_path)
    ncu = _on(sl, KPROF_PID, NCU_TID)
    # as many launches of the GEMM in the steady state as the diagnosis's evidence says (78 today)
    ev = next(e for e in diags[0].evidence if e.metric == "gpu_time_share")
    assert len(ncu) > 10 and ev.reference.startswith(f"{len(ncu)} launches")


def test_gap_slices_name_what_covered_them(tmp_path: Path) -> None:
    """Host gaps of the PyTorch trace carry the innermost operator covering them; sync gaps the blocking call."""
    src = SAMPLES / "timeline" / "sync_bound.json.gz"
    if not src.is_file():
        pytest.skip("sync_bound.json.gz not in data/samples")
    tl, _, doc, sl = _export(src, tmp_path)
    g = _on(sl, KPROF_PID, GAPS_TID)
    origin = doc["otherData"]["kprof"]["origin_ns"]
    sync = [s for s in g if s.args["cause"] == "sync"]
    assert len(sync) > 100 and all("host_op" in s.args and "cuda_call" in s.args for s in sync)
    # checked by brute force: each gap names the operator (and the CUDA call) that overlaps it the most
    for table, key in ((tl.host_ops, "host_op"), (tl.api, "cuda_call")):
        for s in g:
            a, b = s.ts + origin, s.ts + s.dur + origin
            ov = np.minimum(table.end_ns, b) - np.maximum(table.start_ns, a)
            if ov.max() <= 0:
                assert key not in s.args
                continue
            best = {table.names[table.name_id[i]] for i in np.flatnonzero(ov == ov.max())}
            assert any(s.args[key] == n or n.startswith(s.args[key]) for n in best), (s, best)
    # the host was issuing the next step's work (aten::mm) or reading the value (.item()) when the GPU idled
    ops = Counter(s.args["host_op"] for s in sync)
    assert set(ops) <= {"aten::mm", "aten::_local_scalar_dense", "aten::item"}, ops


# ----------------------------------------------------------------------------- synthetic
def _synthetic() -> Timeline:
    """Two kernels, a launch each, and two NVTX start/end ranges that cross (not nested)."""
    k = KernelTable(
        start_ns=np.array([1_000, 5_000]), end_ns=np.array([2_000, 6_000]), device=np.zeros(2, np.int16),
        stream=np.full(2, 7, np.int32), correlation=np.array([1, 2]), name_id=np.zeros(2, np.int32),
        names=("void k<1>(float*)",),
    )  # fmt: skip
    a = ApiTable(
        start_ns=np.array([500, 4_500]), end_ns=np.array([900, 4_900]), thread=np.zeros(2, np.int32),
        correlation=np.array([1, 2]), name_id=np.zeros(2, np.int32), names=("cudaLaunchKernel_v7000",),
        category=np.ones(2, np.int8),
    )  # fmt: skip
    r = RangeTable(
        start_ns=np.array([100, 3_000]), end_ns=np.array([4_000, 7_000]), thread=np.zeros(2, np.int32),
        name_id=np.array([0, 1], np.int32), names=("load", "train"),
    )  # fmt: skip
    return Timeline(
        source="synthetic.sqlite", format="nsys", kernels=k, api=a, ranges=r, threads=("python3 (tid 1)",)
    )


def test_crossing_ranges_go_to_a_second_lane_so_no_slice_is_cut(tmp_path: Path) -> None:
    tl = _synthetic()
    out = tmp_path / "t.json"
    write_trace(tl, out)
    doc = ct.load(out)
    ct.validate(doc)
    sl = ct.slices(doc)  # raises on a slice that crosses its parent
    _, threads = ct.names(doc)
    ranges = {s.name: threads[(s.pid, s.tid)] for s in sl if s.cat == "range"}
    assert ranges == {"load": "python3 (tid 1): ranges", "train": "python3 (tid 1): ranges (2)"}
    # times are exact nanoseconds from the capture's first timestamp
    kern = sorted((s.ts, s.dur) for s in sl if s.cat == "kernel")
    assert kern == [(900, 1_000), (4_900, 1_000)] and doc["otherData"]["kprof"]["origin_ns"] == 100


def test_an_overlap_the_viewer_would_cut_is_caught_by_the_checker() -> None:
    """The offline check is not vacuous: crossing slices on one track fail it."""
    doc = {"traceEvents": [
        {"name": "a", "ph": "X", "ts": 0.0, "dur": 4.0, "pid": 1, "tid": 1},
        {"name": "b", "ph": "X", "ts": 3.0, "dur": 4.0, "pid": 1, "tid": 1},
    ]}  # fmt: skip
    ct.validate(doc)
    with pytest.raises(AssertionError, match="crosses the end"):
        ct.slices(doc)
    with pytest.raises(Exception, match="dur"):
        ct.validate({"traceEvents": [{"name": "a", "ph": "X", "ts": 0, "pid": 1, "tid": 1}]})
    with pytest.raises(AssertionError, match="displayTimeUnit"):
        ct.validate({"displayTimeUnit": "ns", "traceEvents": []})


def test_lanes_keep_trees_together_and_move_only_crossings() -> None:
    # a tree (0-10 holding 1-3 and 4-9 holding 5-6), then 8-12 crosses 4-9 and 0-10
    s = np.array([0, 1, 4, 5, 8])
    e = np.array([10, 3, 9, 6, 12])
    assert _lanes(s, e).tolist() == [0, 0, 0, 0, 1]
    assert _lanes(np.array([0, 0]), np.array([5, 5])).tolist() == [0, 0]  # identical intervals nest


def test_cover_takes_the_largest_overlap_then_the_innermost() -> None:
    gaps_s, gaps_e = np.array([10, 50, 90]), np.array([20, 60, 95])
    ops_s = np.array([0, 12, 45, 0])
    ops_e = np.array([100, 30, 55, 100])
    # gap 10-20: op0 and op3 overlap 10 ns (op1 only 8) and are as long: the first; likewise 50-60 and 90-95
    assert _cover(gaps_s, gaps_e, ops_s, ops_e).tolist() == [0, 0, 0]
    inner_s, inner_e = np.array([0, 8]), np.array([100, 25])
    assert _cover(np.array([10]), np.array([20]), inner_s, inner_e).tolist() == [
        1
    ]  # same overlap, shorter wins
    assert _cover(np.array([10]), np.array([20]), np.array([30]), np.array([40])).tolist() == [-1]


# ----------------------------------------------------------------------------- command line, report
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kprof", "export-trace", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)  # fmt: skip


def test_cli_writes_the_trace_and_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    src = SAMPLES / "timeline" / "sync_bound.sqlite"
    rep = SAMPLES / "ncu" / "small_grid.ncu-rep.gz"
    if not (src.is_file() and rep.is_file()):
        pytest.skip("samples missing")
    r = _cli(str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    n_gaps = len(gap_causes(kprof.load(src)))
    assert r.stdout.startswith(f"wrote sync_bound.trace.json.gz: {n_gaps:,} idle gaps (sync ")
    # each idle time in the unit its size calls for, as the diagnoses write it (28.3 µs, not 0.0283 ms)
    idle = re.search(r"idle gaps \(([^)]*)\)", r.stdout)
    assert idle, r.stdout
    for cause, value, unit in re.findall(r"(\w+) ([0-9.]+) (ns|µs|ms|s)\b", idle[1]):
        assert unit == "ns" or float(value) >= 1, (cause, value, unit)
    assert "\ncritical path of 5 steps (NVTX range 'step #', median " in r.stdout
    assert "  sync: cudaStreamSynchronize " in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sync_bound.trace.json.gz"]  # no temporary left
    ct.validate(ct.load(tmp_path / "sync_bound.trace.json.gz"))

    for args, what in (
        ((str(tmp_path / "missing.sqlite"),), "missing.sqlite: no such file"),
        ((str(rep),), "is a kernel report, not a timeline"),
        ((str(src), "-o", str(tmp_path)), "is a directory"),
    ):
        bad = _cli(*args, cwd=tmp_path)
        assert bad.returncode == 2 and bad.stdout == "", bad.stderr
        (line,) = bad.stderr.splitlines()
        assert line.startswith("kprof: error: ") and what in line


def test_cli_never_writes_over_the_capture(tmp_path: Path) -> None:
    src = SAMPLES / "timeline" / "gpu_bound.json.gz"
    if not src.is_file():
        pytest.skip("gpu_bound.json.gz not in data/samples")
    copy = tmp_path / "gpu_bound.json.gz"
    copy.write_bytes(src.read_bytes())
    before = copy.read_bytes()
    bad = _cli(str(copy), "-o", str(copy), cwd=tmp_path)
    assert bad.returncode == 2 and "is the capture itself" in bad.stderr
    assert copy.read_bytes() == before


def test_the_report_link_downloads_the_same_trace(tmp_path: Path) -> None:
    src = SAMPLES / "timeline" / "host_launch_bound.sqlite"
    if not src.is_file():
        pytest.skip("host_launch_bound.sqlite not in data/samples")
    tl = kprof.load(src)
    link = trace_link(tl)
    page = link._repr_html_()
    m = re.search(
        r'<a download="host_launch_bound.trace.json.gz" href="data:application/gzip;base64,([^"]+)"', page
    )
    assert m, page[:300]
    write_trace(tl, tmp_path / "t.json.gz")
    assert json.loads(gzip.decompress(base64.b64decode(m.group(1)))) == ct.load(tmp_path / "t.json.gz")
    assert "kprof export-trace" not in page  # embedded, so no command needed
    big = trace_link(tl, max_bytes=1_000)
    assert big.data is None and "kprof export-trace" in big._repr_html_() and "href" not in big._repr_html_()


# ----------------------------------------------------------------------------- the real trace processor
@pytest.mark.skipif(ct.trace_processor_shell() is None, reason=(
    "no trace_processor_shell binary: perfetto's TraceProcessor downloads it at run time and no package registry "
    "ships it (set KPROF_TRACE_PROCESSOR_SHELL to one to run this test)"))  # fmt: skip
@pytest.mark.parametrize(
    "name", ["timeline/sync_bound.sqlite", "timeline/host_launch_bound.json.gz", "timeline/gpu_bound.sqlite"]
)
def test_trace_processor_reads_the_same_slices(name: str, tmp_path: Path) -> None:
    tp_mod = pytest.importorskip("perfetto.trace_processor")
    src = SAMPLES / name
    if not src.is_file():
        pytest.skip(f"{name} not in data/samples")
    _, _, _, sl = _export(src, tmp_path)
    path = tmp_path / (src.name + ".trace.json.gz")
    config = tp_mod.TraceProcessorConfig(bin_path=ct.trace_processor_shell())
    with tp_mod.TraceProcessor(trace=str(path), config=config) as tp:
        rows = tp.query(
            "select p.pid as pid, t.tid as tid, s.name as name, s.ts as ts, s.dur as dur, s.depth as depth "
            "from slice s join thread_track tt on s.track_id = tt.id join thread t using (utid) "
            "join process p using (upid)"
        ).as_pandas_dataframe()
        errors = tp.query(
            "select name, value from stats where severity in ('error', 'data_loss') and value > 0"
        )
        assert list(errors) == []
    got = Counter(zip(rows.pid, rows.tid, rows.name, rows.ts, rows.dur, rows.depth, strict=True))
    want = Counter((s.pid, s.tid, s.name, s.ts, s.dur, s.depth) for s in sl)
    assert got == want
