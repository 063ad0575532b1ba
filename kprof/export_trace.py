"""``kprof export-trace``: the capture as a Chrome trace with kprof's findings laid on top.

The Chrome trace event format (JSON, optionally gzip-compressed) is what Perfetto
(ui.perfetto.dev, which opens files locally) and chrome://tracing open. The file holds:

- **kprof** (the first process): the steady-state window the diagnosis measured, named with its
  verdict, and the time before and after it; one slice per idle gap of the diagnosed GPU, named
  by the cause the diagnosis gave it (``idle: host issuing work``, ``idle: after a blocking sync``,
  ...), with the host operator, NVTX range and CUDA call that cover the most of it in its arguments;
  the launches of the kernels the diagnosis asks to profile with ncu, each with its command; and per
  steady-state step its critical path (:mod:`kprof.diagnose.critical_path`), one slice per segment.
- **GPU N**: one track per stream: kernels (short name, full name in the arguments), copies,
  memsets, CUDA graph launches.
- **host**: per thread, its CUDA API calls, its host operators (PyTorch profiler) and its ranges
  (NVTX, ``record_function``, profiler steps), each on its own track.

Times are microseconds from the capture's first timestamp (``otherData.kprof.origin_ns`` holds it),
so every value is exact to the nanosecond after the viewers' conversion. Slices on one track nest
properly: work that overlaps without nesting (two NVTX start/end ranges that cross) goes to an
extra track of the same thread, as the viewers would otherwise cut or drop it.

The events are streamed to the file (through gzip for ``.gz``), written atomically; the capture is
only read.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import heapq
import html
import io
import json
import os
import re
import shlex
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from kprof.errors import KprofInputError
from kprof.outputs import check_output
from kprof.timeline_model import COPY_DIRECTION_NAMES, MEMORY_KIND_NAMES, Timeline, api_base_name

if TYPE_CHECKING:
    import argparse

    from kprof.diagnose.critical_path import CriticalPathSummary
    from kprof.diagnose.timeline import GapCauses
    from kprof.model import Diagnosis

KPROF_PID = 1
GPU_PID_BASE = 10
HOST_PID = 1000
VERDICT_TID = 1
GAPS_TID = 2
NCU_TID = 3
CRITICAL_TID = 4

GAP_LABELS: dict[str, str] = {
    "host": "idle: host issuing work",
    "host_compute": "idle: host computing",
    "sync": "idle: after a blocking sync",
    "copy": "idle: waiting on a copy",
    "startup": "idle: start-up",
    "teardown": "idle: teardown",
    "device_wait": "idle: queued work waiting on the device",
    "unknown": "idle: cause unknown (no host trace)",
}
"""Slice names of the idle gaps, by the cause :func:`kprof.diagnose.timeline.gap_causes` gives them
(a cause not listed here is named ``idle: <cause>``)."""

GAP_BOTTLENECKS: dict[str, str] = {
    "host": "host_launch_bound",
    "host_compute": "host_compute_bound",
    "sync": "sync_bound",
    "copy": "transfer_bound",
    "startup": "startup_bound",
    "teardown": "startup_bound",
}
"""The bottleneck id whose time each gap cause counts toward."""

_CNAME: dict[str, str] = {
    "host": "thread_state_runnable",
    "host_compute": "thread_state_running",
    "sync": "terrible",
    "copy": "yellow",
    "startup": "startup",
    "teardown": "startup",
    "device_wait": "grey",
    "unknown": "black",
}
"""chrome://tracing's reserved colour names per cause (Perfetto colours by slice name, hence by cause)."""

_NAMED_BY_OP = frozenset({"host_compute"})
"""Causes whose slice name also says which host operator or range covers the gap."""

EMBED_MAX_BYTES = 4 << 20
"""The HTML report embeds a trace of at most 4 MB (gzip) as a download link, about 5.3 MB of base64:
the report stays one file that opens offline, and a report of the shipped samples grows by ~1-2 MB.
A larger trace is linked by the command that writes it."""


# ============================================================================ small helpers


def _us(ns: int, origin: int) -> float:
    """Microseconds from ``origin`` with three decimals: exact nanoseconds after the viewers' ``llround(us*1000)``."""
    return round((ns - origin) / 1000.0, 3)


def _dur(ns: int) -> float:
    return round(max(ns, 0) / 1000.0, 3)


def _lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per interval, the lane (0, 1, ...) that keeps every lane properly nested.

    Intervals are taken in (start, -end) order; each goes to the first lane whose open intervals
    all contain it (or have ended by its start). Trees of nested calls stay in lane 0; only
    intervals that cross another without nesting move on.

    Examples
    --------
    >>> _lanes(np.array([0, 2, 5, 8]), np.array([10, 4, 12, 9])).tolist()
    [0, 0, 1, 1]
    """
    n = len(starts)
    out = np.zeros(n, np.int32)
    if n == 0:
        return out
    order = np.lexsort((-ends, starts))
    stacks: list[list[int]] = [[]]
    for i in order.tolist():
        s, e = int(starts[i]), int(ends[i])
        for lane, st in enumerate(stacks):
            while st and st[-1] <= s:
                st.pop()
            if not st or e <= st[-1]:
                st.append(e)
                out[i] = lane
                break
        else:
            stacks.append([e])
            out[i] = len(stacks) - 1
    return out


def _cover(gs: np.ndarray, ge: np.ndarray, os_: np.ndarray, oe: np.ndarray) -> np.ndarray:
    """Per gap [gs, ge), the index of the interval of (os_, oe) that overlaps it most (-1: none).

    Ties go to the shorter interval (the innermost operator), then to the first in the table. A sweep over both sorted lists keeps
    only the intervals open at the gap in a heap, so the cost is ~(gaps + intervals) log intervals.
    """
    out = np.full(len(gs), -1, np.int64)
    if len(gs) == 0 or len(os_) == 0:
        return out
    order = np.argsort(os_, kind="stable")
    s_sorted, e_sorted = os_[order], oe[order]
    active: list[tuple[int, int]] = []  # (end, index into order)
    j = 0
    for g in np.argsort(gs, kind="stable").tolist():
        a, b = int(gs[g]), int(ge[g])
        while j < len(order) and s_sorted[j] < b:
            heapq.heappush(active, (int(e_sorted[j]), j))
            j += 1
        while active and active[0][0] <= a:
            heapq.heappop(active)
        best, best_key = -1, (0, 0, 0)
        for end, k in active:
            ov = min(end, b) - max(int(s_sorted[k]), a)
            if ov <= 0:
                continue
            key = (ov, -(end - int(s_sorted[k])), -int(order[k]))
            if best < 0 or key > best_key:
                best, best_key = k, key
        if best >= 0:
            out[g] = int(order[best])
    return out


def ncu_targets(diagnosis: Diagnosis) -> list[tuple[str, str, bool]]:
    """The kernels a diagnosis asks to profile: ``(regex, command, match_demangled)`` per ncu command in
    its ``next_step`` (``-k 'regex:...'``; ``--kernel-name-base demangled`` matches full names).

    Examples
    --------
    >>> from kprof.model import Diagnosis, Verdict, Subject, SubjectKind
    >>> d = Diagnosis(subject=Subject(kind=SubjectKind.CAPTURE, name="x"), bottleneck=None,
    ...               verdict=Verdict.FIX, headline="h",
    ...               next_step="Profile: ncu --set full -k 'regex:^gemm$' --launch-skip 2 -o a ./app")
    >>> ncu_targets(d)[0][:2]
    ('^gemm$', "ncu --set full -k 'regex:^gemm$' --launch-skip 2 -o a ./app")
    """
    out: list[tuple[str, str, bool]] = []
    text = diagnosis.next_step or ""
    for part in re.split(r"\s+\|\s+", text):
        m = re.search(r"(?:^|\s)(ncu\s.*)$", part)
        if not m:
            continue
        cmd = m.group(1).strip()
        try:
            argv = shlex.split(cmd)
        except ValueError:
            continue
        for i, a in enumerate(argv[:-1]):
            if a in ("-k", "--kernel-name"):
                k = argv[i + 1]
                regex = k[len("regex:") :] if k.startswith("regex:") else "^" + re.escape(k) + "$"
                demangled = (
                    "--kernel-name-base" in argv and argv[argv.index("--kernel-name-base") + 1] == "demangled"
                )
                out.append((regex, cmd, demangled))
                break
    return out


# ============================================================================ events


@dataclass(slots=True)
class _Tracks:
    """Allocates (pid, tid) tracks and remembers their names for the metadata events."""

    names: dict[tuple[int, int], str] = field(default_factory=dict)
    sort: dict[tuple[int, int], int] = field(default_factory=dict)
    next_tid: dict[int, int] = field(default_factory=dict)

    def track(self, pid: int, name: str, tid: int | None = None) -> int:
        if tid is None:
            tid = self.next_tid.get(pid, 100)
            self.next_tid[pid] = tid + 1
        self.names[(pid, tid)] = name
        self.sort[(pid, tid)] = len(self.sort)
        return tid


def _x(
    name: str,
    cat: str,
    pid: int,
    tid: int,
    start: int,
    end: int,
    origin: int,
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": _us(start, origin),
        "dur": _dur(end - start),
        "pid": pid,
        "tid": tid,
    }
    if args:
        ev["args"] = args
    return ev


def _laned(
    tracks: _Tracks, pid: int, label: str, starts: np.ndarray, ends: np.ndarray
) -> Iterator[tuple[int, int]]:
    """``(row, tid)`` per interval of one logical track, in nesting order, spread over as many properly
    nested lanes (extra tracks named ``label (2)``, ...) as the intervals need."""
    if len(starts) == 0:
        return
    lanes = _lanes(starts, ends)
    tids = [tracks.track(pid, label if k == 0 else f"{label} ({k + 1})") for k in range(int(lanes.max()) + 1)]
    for i in np.lexsort((-ends, starts)).tolist():
        yield i, tids[int(lanes[i])]


def _gpu_event(tl: Timeline, kind: str, i: int, pid: int, tid: int, origin: int) -> dict[str, Any]:
    k, c, m, g = tl.kernels, tl.copies, tl.memsets, tl.graphs
    if kind == "kernel":
        args: dict[str, Any] = {"name": k.names[k.name_id[i]], "correlation": int(k.correlation[i])}
        if k.grid is not None:
            args["grid"] = [int(x) for x in k.grid[i]]
        if k.block is not None:
            args["block"] = [int(x) for x in k.block[i]]
        short = k.short_names or k.names
        return _x(short[k.name_id[i]], "kernel", pid, tid, int(k.start_ns[i]), int(k.end_ns[i]), origin, args)
    if kind == "memcpy":
        d = COPY_DIRECTION_NAMES.get(int(c.direction[i]), "copy")
        args = {
            "bytes": int(c.bytes[i]),
            "src": MEMORY_KIND_NAMES.get(int(c.src_kind[i]), "unknown"),
            "dst": MEMORY_KIND_NAMES.get(int(c.dst_kind[i]), "unknown"),
            "correlation": int(c.correlation[i]),
        }
        return _x(f"memcpy {d}", "memcpy", pid, tid, int(c.start_ns[i]), int(c.end_ns[i]), origin, args)
    if kind == "memset":
        args = {"bytes": int(m.bytes[i]), "correlation": int(m.correlation[i])}
        return _x("memset", "memset", pid, tid, int(m.start_ns[i]), int(m.end_ns[i]), origin, args)
    args = {"graph_id": int(g.graph_id[i]), "correlation": int(g.correlation[i])}
    return _x("CUDA graph", "graph", pid, tid, int(g.start_ns[i]), int(g.end_ns[i]), origin, args)


def _gpu_events(
    tl: Timeline, tracks: _Tracks, origin: int, gpu_pids: dict[int, int]
) -> Iterator[dict[str, Any]]:
    tables: list[tuple[str, Any]] = [("kernel", tl.kernels), ("memcpy", tl.copies), ("memset", tl.memsets),
                                     ("graph", tl.graphs)]  # fmt: skip
    keys: set[tuple[int, int]] = set()
    for _, t in tables:
        keys |= set(zip(t.device.tolist(), t.stream.tolist(), strict=True))
    for dev, stream in sorted(keys):
        pid = gpu_pids[dev]
        sels = [(kind, t, np.flatnonzero((t.device == dev) & (t.stream == stream))) for kind, t in tables]
        starts = np.concatenate([t.start_ns[s] for _, t, s in sels])
        ends = np.concatenate([t.end_ns[s] for _, t, s in sels])
        which = [(kind, int(i)) for kind, _, s in sels for i in s.tolist()]
        for j, tid in _laned(tracks, pid, f"stream {stream}", starts, ends):
            kind, i = which[j]
            yield _gpu_event(tl, kind, i, pid, tid, origin)


def _host_events(tl: Timeline, tracks: _Tracks, origin: int) -> Iterator[dict[str, Any]]:
    a, ops, r, st = tl.api, tl.host_ops, tl.ranges, tl.steps
    threads = sorted(
        set(a.thread.tolist()) | set(ops.thread.tolist()) | set(r.thread.tolist()) | set(st.thread.tolist())
    )
    api_names = [api_base_name(n) for n in a.names]
    for th in threads:
        label = tl.threads[th] if 0 <= th < len(tl.threads) else f"thread {th}"
        # ranges and profiler steps: what the program said it was doing
        sel_r = np.flatnonzero(r.thread == th)
        sel_s = np.flatnonzero(st.thread == th)
        nr = len(sel_r)
        starts = np.concatenate([r.start_ns[sel_r], st.start_ns[sel_s]])
        ends = np.concatenate([r.end_ns[sel_r], st.end_ns[sel_s]])
        for j, tid in _laned(tracks, HOST_PID, f"{label}: ranges", starts, ends):
            if j < nr:
                i = int(sel_r[j])
                dom = ""
                if r.domain is not None and r.domains and 0 <= int(r.domain[i]) < len(r.domains):
                    dom = r.domains[int(r.domain[i])]
                yield _x(r.names[r.name_id[i]], "range", HOST_PID, tid, int(r.start_ns[i]), int(r.end_ns[i]),
                         origin, {"domain": dom} if dom else None)  # fmt: skip
            else:
                i = int(sel_s[j - nr])
                yield _x(f"ProfilerStep#{int(st.number[i])}", "step", HOST_PID, tid, int(st.start_ns[i]),
                         int(st.end_ns[i]), origin)  # fmt: skip
        sel_o = np.flatnonzero(ops.thread == th)
        for j, tid in _laned(tracks, HOST_PID, f"{label}: host ops", ops.start_ns[sel_o], ops.end_ns[sel_o]):
            i = int(sel_o[j])
            yield _x(ops.names[ops.name_id[i]], "host_op", HOST_PID, tid, int(ops.start_ns[i]), int(ops.end_ns[i]),
                     origin)  # fmt: skip
        sel_a = np.flatnonzero(a.thread == th)
        for j, tid in _laned(tracks, HOST_PID, f"{label}: CUDA API", a.start_ns[sel_a], a.end_ns[sel_a]):
            i = int(sel_a[j])
            yield _x(api_names[a.name_id[i]], "cuda_api", HOST_PID, tid, int(a.start_ns[i]), int(a.end_ns[i]),
                     origin, {"correlation": int(a.correlation[i])})  # fmt: skip


def _gap_events(
    tl: Timeline, gaps: GapCauses, tracks: _Tracks, origin: int, gpu_label: str
) -> Iterator[dict[str, Any]]:
    if len(gaps) == 0:
        return
    tid = tracks.track(KPROF_PID, f"idle {gpu_label}: cause", GAPS_TID)
    gs, ge = gaps.start_ns, gaps.end_ns
    op_i = _cover(gs, ge, tl.host_ops.start_ns, tl.host_ops.end_ns)
    r_i = _cover(gs, ge, tl.ranges.start_ns, tl.ranges.end_ns)
    a_i = _cover(gs, ge, tl.api.start_ns, tl.api.end_ns)
    for j in range(len(gaps)):
        cause = str(gaps.cause[j])
        args: dict[str, Any] = {"cause": cause}
        if cause in GAP_BOTTLENECKS:
            args["counts_toward"] = GAP_BOTTLENECKS[cause]
        op = tl.host_ops.names[tl.host_ops.name_id[op_i[j]]] if op_i[j] >= 0 else None
        rng = tl.ranges.names[tl.ranges.name_id[r_i[j]]] if r_i[j] >= 0 else None
        call = api_base_name(tl.api.names[tl.api.name_id[a_i[j]]]) if a_i[j] >= 0 else None
        if op:
            args["host_op"] = op
        if rng:
            args["range"] = rng
        if call:
            args["cuda_call"] = call
        name = GAP_LABELS.get(cause, f"idle: {cause}")
        if cause in _NAMED_BY_OP and (op or rng):
            name = f"{name}: {op or rng}"
        ev = _x(name, "kprof.gap", KPROF_PID, tid, int(gs[j]), int(ge[j]), origin, args)
        if cause in _CNAME:
            ev["cname"] = _CNAME[cause]
        yield ev


def _verdict_events(
    diag: Diagnosis | None, gaps: GapCauses, span: tuple[int, int], tracks: _Tracks, origin: int
) -> Iterator[dict[str, Any]]:
    tid = tracks.track(KPROF_PID, "steady state (kprof's diagnosis)", VERDICT_TID)
    lo, hi = span
    win = gaps.window or span
    if win[0] > lo:
        yield _x("before the steady state", "kprof.window", KPROF_PID, tid, lo, win[0], origin)
    args: dict[str, Any] = {}
    name = "steady state"
    if diag is not None:
        bid = diag.bottleneck.value if diag.bottleneck is not None else "none"
        name = f"steady state: {bid} ({diag.verdict.value})"
        args = {"headline": diag.headline, "fix": diag.fix, "next_step": diag.next_step}
        args = {k: v for k, v in args.items() if v}
    yield _x(name, "kprof.window", KPROF_PID, tid, win[0], win[1], origin, args or None)
    if win[1] < hi:
        yield _x("after the steady state", "kprof.window", KPROF_PID, tid, win[1], hi, origin)


def _ncu_events(
    tl: Timeline, diag: Diagnosis | None, window: tuple[int, int] | None, tracks: _Tracks, origin: int
) -> Iterator[dict[str, Any]]:
    if diag is None:
        return
    targets = ncu_targets(diag)
    if not targets:
        return
    k = tl.kernels
    short = k.short_names or k.names
    tid = tracks.track(KPROF_PID, "profile with ncu (kprof's next step)", NCU_TID)
    lo, hi = window if window is not None else (-(2**62), 2**62)
    for regex, cmd, demangled in targets:
        try:
            rx = re.compile(regex)
        except re.error:
            continue
        pool = k.names if demangled else short
        ids = [i for i, n in enumerate(pool) if rx.search(n)]
        if not ids:
            continue
        sel = np.flatnonzero(np.isin(k.name_id, ids) & (k.start_ns >= lo) & (k.start_ns < hi))
        for i in sel[np.argsort(k.start_ns[sel], kind="stable")].tolist():
            nm = k.names[k.name_id[i]] if demangled else short[k.name_id[i]]
            yield _x(f"profile with ncu: {nm}", "kprof.ncu", KPROF_PID, tid, int(k.start_ns[i]), int(k.end_ns[i]),
                     origin, {"command": cmd, "name": k.names[k.name_id[i]]})  # fmt: skip


def _critical_path_events(
    cp: CriticalPathSummary | None, tracks: _Tracks, origin: int
) -> Iterator[dict[str, Any]]:
    """Per steady-state step, a slice over its critical path and, under it, one slice per segment
    (``kernel: gemm``, ``host: aten::mm``, ``sync: cudaStreamSynchronize in aten::item``, ...)."""
    if cp is None or not cp.paths:
        return
    tid = tracks.track(KPROF_PID, "critical path of each step (kprof)", CRITICAL_TID)
    for p in cp.paths:
        share = {k: round(v / p.duration_ns, 4) for k, v in p.by_kind().items() if v}
        yield _x(f"critical path, step {p.step}", "kprof.critical_path", KPROF_PID, tid, p.start_ns, p.end_ns,
                 origin, {"share_by_kind": share})  # fmt: skip
        for seg in p.segments:
            args: dict[str, Any] = {"kind": seg.kind}
            if seg.scope and seg.scope != seg.name:
                args["scope"] = seg.scope
            if seg.correlation is not None:
                args["correlation"] = seg.correlation
            name = f"{seg.kind}: {seg.name}" if seg.name else seg.kind
            yield _x(name, "kprof.critical_path", KPROF_PID, tid, seg.start_ns, seg.end_ns, origin, args)


def _meta(tracks: _Tracks, processes: dict[int, tuple[str, int]]) -> Iterator[dict[str, Any]]:
    for pid, (name, sort) in processes.items():
        yield {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}
        yield {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": sort}}
    for (pid, tid), name in tracks.names.items():
        yield {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        yield {
            "name": "thread_sort_index",
            "ph": "M",
            "pid": pid,
            "tid": tid,
            "args": {"sort_index": tracks.sort[(pid, tid)]},
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceInfo:
    """What :func:`trace_events` laid on the capture (for the caller's summary line and tests)."""

    origin_ns: int
    window: tuple[int, int] | None
    gaps: int
    idle_by_cause: dict[str, int]
    ncu_kernels: tuple[str, ...]
    bottleneck: str | None
    critical_path: CriticalPathSummary | None = None
    """The critical paths of the steady-state steps (None when the capture has no steps with GPU work)."""


def trace_events(
    tl: Timeline, diagnoses: Sequence[Diagnosis] | None = None, gaps: GapCauses | None = None
) -> tuple[TraceInfo, Iterator[dict[str, Any]]]:
    """The Chrome trace events of a capture with kprof's findings, and what they show.

    Parameters
    ----------
    tl
        The capture.
    diagnoses
        Its timeline diagnoses (computed when None); the first is the capture's verdict.
    gaps
        Its idle gaps and their causes (:func:`kprof.diagnose.timeline.gap_causes`; computed when None).

    Returns
    -------
    (TraceInfo, iterator of dict)
        The events are produced lazily, metadata last (the viewers read it from anywhere).

    Examples
    --------
    >>> info, events = trace_events(Timeline(source="x", format="nsys"))  # doctest: +SKIP
    """
    from kprof.diagnose.critical_path import annotate
    from kprof.diagnose.timeline import diagnose_timeline, gap_causes

    if gaps is None:
        gaps = gap_causes(tl)
    if diagnoses is None:
        diagnoses = annotate(tl, diagnose_timeline(tl)) if tl.gpu_op_count else []
    diag = diagnoses[0] if diagnoses else None
    span = tl.span_ns() or (0, 0)
    origin = span[0]
    devices = sorted(
        set(tl.kernels.device.tolist())
        | set(tl.copies.device.tolist())
        | set(tl.memsets.device.tolist())
        | set(tl.graphs.device.tolist())
    )
    gpu_pids = {d: GPU_PID_BASE + n for n, d in enumerate(devices)}
    processes: dict[int, tuple[str, int]] = {KPROF_PID: ("kprof", 0)}
    for n, d in enumerate(devices):
        gname = tl.gpu_name(d)
        processes[gpu_pids[d]] = (f"GPU {d}" + (f" ({gname})" if gname else ""), 1 + n)
    processes[HOST_PID] = ("host" + (f": {tl.command}" if tl.command else ""), 1 + len(devices))
    ncu_names: list[str] = []
    if diag is not None:
        k = tl.kernels
        short = k.short_names or k.names
        for regex, _cmd, demangled in ncu_targets(diag):
            with contextlib.suppress(re.error):
                rx = re.compile(regex)
                ncu_names += [n for n in (k.names if demangled else short) if rx.search(n)]
    from kprof.diagnose.critical_path import critical_paths

    cp = critical_paths(tl) if tl.gpu_op_count else None
    info = TraceInfo(
        origin_ns=origin,
        window=gaps.window,
        gaps=len(gaps),
        idle_by_cause={c: v for c, v in gaps.idle_by_cause().items() if v},
        ncu_kernels=tuple(dict.fromkeys(ncu_names)),
        bottleneck=diag.bottleneck.value if diag is not None and diag.bottleneck is not None else None,
        critical_path=cp if cp is not None and cp.paths else None,
    )
    gpu_label = f"GPU {gaps.device}" if gaps.device is not None else "GPU"

    def events() -> Iterator[dict[str, Any]]:
        tracks = _Tracks()
        yield from _verdict_events(diag, gaps, span, tracks, origin)
        yield from _gap_events(tl, gaps, tracks, origin, gpu_label)
        yield from _ncu_events(tl, diag, gaps.window, tracks, origin)
        yield from _critical_path_events(info.critical_path, tracks, origin)
        yield from _gpu_events(tl, tracks, origin, gpu_pids)
        yield from _host_events(tl, tracks, origin)
        yield from _meta(tracks, processes)

    return info, events()


# ============================================================================ writing


def _write_json(events: Iterable[dict[str, Any]], other: dict[str, Any], f: IO[str]) -> int:
    # no "displayTimeUnit": Perfetto reads "ns" there as the unit of every ts (chrome://tracing only displays it)
    f.write('{"otherData": ')
    f.write(json.dumps(other, ensure_ascii=False))
    f.write(', "traceEvents": [\n')
    n = 0
    for ev in events:
        if n:
            f.write(",\n")
        f.write(json.dumps(ev, ensure_ascii=False, separators=(",", ":")))
        n += 1
    f.write("\n]}\n")
    return n


def _other(tl: Timeline, info: TraceInfo, diagnoses: Sequence[Diagnosis]) -> dict[str, Any]:
    from kprof._version import __version__

    return {
        "kprof": {
            "version": __version__,
            "source": tl.source,
            "origin_ns": info.origin_ns,
            "time_unit": "microseconds from origin_ns",
            "window_ns": list(info.window) if info.window else None,
            "idle_ns_by_cause": info.idle_by_cause,
            "ncu_kernels": list(info.ncu_kernels),
            "critical_path": info.critical_path.to_dict() if info.critical_path is not None else None,
            "diagnoses": [d.to_dict() for d in diagnoses],
        }
    }


def write_trace(
    tl: Timeline, output: str | os.PathLike[str], diagnoses: Sequence[Diagnosis] | None = None
) -> TraceInfo:
    """Write ``tl`` with kprof's findings as a Chrome trace to ``output`` (gzip when it ends in ``.gz``).

    Written through a temporary file in the same folder and renamed, so an interrupted run leaves the
    old file or none.

    Examples
    --------
    >>> import kprof
    >>> write_trace(kprof.load("data/samples/timeline/sync_bound.sqlite"), "sync.json.gz")  # doctest: +SKIP
    """
    from kprof.diagnose.critical_path import annotate
    from kprof.diagnose.timeline import diagnose_timeline

    out = Path(output)
    if diagnoses is None:
        diagnoses = annotate(tl, diagnose_timeline(tl)) if tl.gpu_op_count else []
    info, events = trace_events(tl, diagnoses)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            if out.name.endswith(".gz"):
                with (
                    gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz,
                    io.TextIOWrapper(gz, encoding="utf-8") as f,
                ):
                    _write_json(events, _other(tl, info, diagnoses), f)
            else:
                with io.TextIOWrapper(raw, encoding="utf-8") as f:
                    _write_json(events, _other(tl, info, diagnoses), f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return info


def trace_bytes(tl: Timeline, diagnoses: Sequence[Diagnosis] | None = None) -> tuple[TraceInfo, bytes]:
    """The gzip-compressed trace in memory (what the HTML report embeds)."""
    from kprof.diagnose.critical_path import annotate
    from kprof.diagnose.timeline import diagnose_timeline

    if diagnoses is None:
        diagnoses = annotate(tl, diagnose_timeline(tl)) if tl.gpu_op_count else []
    info, events = trace_events(tl, diagnoses)
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0) as gz,
        io.TextIOWrapper(gz, encoding="utf-8") as f,
    ):
        _write_json(events, _other(tl, info, diagnoses), f)
    return info, buf.getvalue()


def default_output(path: str | os.PathLike[str]) -> str:
    """``<capture name without its extensions>.trace.json.gz`` in the current folder.

    Examples
    --------
    >>> default_output("runs/step.nsys-rep"), default_output("t/gpu_bound.json.gz")
    ('step.trace.json.gz', 'gpu_bound.trace.json.gz')
    """
    name = Path(path).name
    for ext in (".json.gz", ".sqlite.gz", ".nsys-rep", ".sqlite", ".json", ".pt.trace.json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    return f"{name or 'capture'}.trace.json.gz"


def export_trace(
    capture: str | os.PathLike[str], output: str | os.PathLike[str] | None = None
) -> tuple[Path, TraceInfo]:
    """Load a timeline capture, diagnose it and write the annotated Chrome trace.

    Parameters
    ----------
    capture
        ``.nsys-rep``, nsys ``.sqlite``, or a PyTorch profiler ``.json[.gz]``.
    output
        The trace to write (``.json.gz`` or ``.json``); default :func:`default_output`.

    Raises
    ------
    KprofInputError
        The capture cannot be read or is not a timeline, or ``output`` is the capture itself.
    """
    from kprof.io import load

    src = Path(capture)
    # never the capture, another profile, a device or a protected file; only an earlier trace is replaced
    out = Path(output if output is not None else default_output(src))
    target = check_output(out, [src], kind="trace")  # links followed
    obj = load(src)
    if not isinstance(obj, Timeline):
        raise KprofInputError(
            src, "is a kernel report, not a timeline: export-trace takes an nsys or PyTorch profiler capture"
        )
    info = write_trace(obj, target)
    return out, info


# ============================================================================ report link


@dataclass(frozen=True, slots=True)
class TraceLink:
    """A download link to a capture's annotated trace, for the HTML report (``_repr_html_``)."""

    filename: str
    data: bytes | None
    command: str
    info: TraceInfo

    def _repr_html_(self) -> str:
        open_hint = (
            "Open it in Perfetto (ui.perfetto.dev: drag the file in; it is read in your browser, nothing is "
            "uploaded) or chrome://tracing: the GPU streams and host threads with kprof's steady state, each idle "
            "gap named by its cause, and the kernels to profile with ncu."
        )
        if self.data is None:
            return (
                '<div class="kp-trace"><b>Annotated trace</b>: too large to embed here; write it with '
                f"<code>{html.escape(self.command)}</code>. {html.escape(open_hint)}</div>"
            )
        b64 = base64.b64encode(self.data).decode("ascii")
        return (
            f'<div class="kp-trace"><a download="{html.escape(self.filename)}" '
            f'href="data:application/gzip;base64,{b64}">Download the annotated trace '
            f"({html.escape(self.filename)}, {len(self.data) / 1e3:,.0f} kB)</a>. {html.escape(open_hint)}</div>"
        )

    def __repr__(self) -> str:
        return f"annotated trace: {self.command}"


def trace_link(
    tl: Timeline, diagnoses: Sequence[Diagnosis] | None = None, max_bytes: int = EMBED_MAX_BYTES
) -> TraceLink:
    """The capture's annotated trace as a download link for the HTML report (embedded up to ``max_bytes``)."""
    src = tl.source or "capture"
    filename = default_output(src)
    command = f"kprof export-trace {shlex.quote(src)} -o {shlex.quote(filename)}"
    info, data = trace_bytes(tl, diagnoses)
    return TraceLink(
        filename=filename, data=data if len(data) <= max_bytes else None, command=command, info=info
    )


def cli(args: argparse.Namespace) -> int:
    """``kprof export-trace CAPTURE [-o OUT.json.gz]``."""
    import sys

    out, info = export_trace(args.capture, args.output)
    idle = ", ".join(
        f"{c} {v / 1e6:.3g} ms" for c, v in sorted(info.idle_by_cause.items(), key=lambda kv: -kv[1])
    )
    print(
        f"wrote {out}: {info.gaps:,} idle gaps"
        + (f" ({idle})" if idle else "")
        + (f"; ncu targets: {', '.join(info.ncu_kernels)}" if info.ncu_kernels else "")
        + ". Open it in ui.perfetto.dev or chrome://tracing.",
        file=sys.stdout,
    )
    if info.critical_path is not None:
        print(info.critical_path.to_text(), file=sys.stdout)
    return 0


__all__ = [
    "EMBED_MAX_BYTES",
    "GAP_BOTTLENECKS",
    "GAP_LABELS",
    "TraceInfo",
    "TraceLink",
    "cli",
    "default_output",
    "export_trace",
    "ncu_targets",
    "trace_bytes",
    "trace_events",
    "trace_link",
    "write_trace",
]
