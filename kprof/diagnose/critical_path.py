"""The critical path of a step: the chain of host and GPU work that sets the step time.

A step's time is set by one chain of dependencies, walked back from the end of its last GPU work:

- a **GPU item** (kernel, copy, memset, graph) started when the later of two things released it:
  the previous item on its stream ended (the GPU's own queue), or its launch call (found through its
  correlation id) started on the host plus the capture's launch latency (measured on the items
  launched onto an idle stream, :data:`~kprof.thresholds.LAUNCH_LATENCY_PERCENTILE`). The time
  between is ``gpu_gap`` (queue turnaround) or ``launch`` (from the call's start), and the walk goes
  on from that item or that call.
- on the **host**, the thread's time runs back to the last call on it that waited for the GPU: a
  synchronizing call, or a blocking copy, during which some GPU work ended. That work released the
  call: the time from its end to the call's return is ``sync`` (the host waking up), and the walk goes
  on from that GPU work. The host time after the call is ``host_api`` where the thread was inside a
  CUDA call (launch and other API overhead) and ``host`` elsewhere (Python, framework, data loading:
  named by the innermost host operator or NVTX range that covers it).

This is the longest path through the dependency graph of launches, stream order and syncs (each
item's binding dependency is the one that released it last), walked in one pass. Because every
segment starts where the previous one (in time) ends, the segments tile the step exactly: the
shares by kind add up to the step time. Dependencies between streams (``cudaStreamWaitEvent``) are
not in the timeline's model and are not followed: an item that waited on another stream shows as
``launch`` or ``gpu_gap`` time.

Steps are the timeline diagnosis's iterations (profiler steps or the repeated NVTX range) projected
onto the GPU (:func:`kprof.diagnose.compare.step_times`): step *j* runs from the end of step *j-1*'s
GPU work to the end of its own, the step time that ``kprof compare`` measures. The first step is
warm-up and is left out, and so is each next one while it runs more than
:data:`~kprof.thresholds.WARMUP_STEP_RATIO` times the median step (the timeline diagnosis's warm-up rule).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kprof import thresholds as th
from kprof.model import _fmt
from kprof.timeline_model import ApiCategory, Timeline, api_base_name

if TYPE_CHECKING:
    from kprof.model import Diagnosis

KINDS: tuple[str, ...] = (
    "kernel",
    "copy",
    "memset",
    "graph",
    "gpu_gap",
    "launch",
    "sync",
    "host_api",
    "host",
)
"""Segment kinds, GPU first. ``kernel``/``copy``/``memset``/``graph``: the GPU executing it; ``gpu_gap``:
between two items of one stream; ``launch``: from the launch call's start to the item's start on an
empty stream; ``sync``: from the GPU work's end to the return of the call that waited for it;
``host_api``: host time inside CUDA calls; ``host``: other host time."""

HTA_KIND: dict[str, str] = {
    "kernel": "gpu_compute_bound",
    "copy": "gpu_compute_bound",
    "memset": "gpu_compute_bound",
    "graph": "gpu_compute_bound",
    "gpu_gap": "gpu_kernel_kernel_overhead",
    "launch": "gpu_kernel_launch_overhead",
    "host_api": "cpu_bound",
    "host": "cpu_bound",
    "sync": "cpu_bound",
}
"""The bucket of Holistic Trace Analysis's ``CPGraph.summary()`` each kind falls in (HTA counts the
wake-up after a sync as part of the CPU operator that waited; NCCL kernels are its
``gpu_communication_bound``)."""

_GPU_KINDS = ("kernel", "copy", "memset", "graph")
UNCOVERED = "(no operator or range)"
"""How host time outside every host operator and NVTX range is named (Python between operators)."""


def _waiting_calls(tl: Timeline) -> np.ndarray:
    """Per API call, whether it can have blocked the host until GPU work ended: synchronizing calls and
    blocking copies (``cudaMemcpy``), frees that synchronize the device (``cudaFree``, not the async
    kinds), and asynchronous copies whose own copy finished before the call returned (from pageable
    memory they block). Any other call during which GPU work happened to end did not wait for it."""
    api = tl.api
    cat = api.category
    out = np.isin(cat, [int(ApiCategory.SYNC), int(ApiCategory.COPY_SYNC)])
    lut = np.array([("free" in n.lower() and "async" not in n.lower()) for n in api.names] or [False], bool)
    out |= (cat == int(ApiCategory.ALLOC)) & lut[api.name_id] if len(api) else out
    async_rows = np.flatnonzero(cat == int(ApiCategory.COPY_ASYNC))
    if len(async_rows) and len(tl.copies):
        c = tl.copies
        o = np.argsort(c.correlation, kind="stable")
        sc = c.correlation[o]
        corr = api.correlation[async_rows]
        i = np.searchsorted(sc, corr)
        ic = np.minimum(i, len(sc) - 1)
        own = (i < len(sc)) & (sc[ic] == corr)
        done = own & (c.end_ns[o[ic]] <= api.end_ns[async_rows])
        out[async_rows[done]] = True
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """One stretch of the critical path."""

    start_ns: int
    end_ns: int
    kind: str
    """One of :data:`KINDS`."""
    name: str = ""
    """The kernel, the CUDA call, or the innermost host operator / range that covers it."""
    scope: str = ""
    """For host time: the outermost host operator or range that covers it (``enumerate(DataLoader)...``,
    an NVTX range), the iteration itself left out."""
    correlation: int | None = None
    """For GPU items and launch latency: the correlation id linking the item to its launch call."""

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticalPath:
    """The critical path of one step, its segments in time order (they tile ``[start_ns, end_ns]``)."""

    step: int
    """The step's index among the capture's iterations."""
    start_ns: int
    end_ns: int
    segments: tuple[Segment, ...]

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def by_kind(self) -> dict[str, int]:
        """Nanoseconds per kind (every kind of :data:`KINDS`)."""
        out = dict.fromkeys(KINDS, 0)
        for s in self.segments:
            out[s.kind] += s.duration_ns
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CriticalPathSummary:
    """The critical paths of a capture's steady-state steps and what they add up to.

    Examples
    --------
    >>> import kprof
    >>> s = critical_paths(kprof.load("data/samples/timeline/sync_bound.sqlite"))  # doctest: +SKIP
    >>> max(s.share_by_kind(), key=s.share_by_kind().get)  # doctest: +SKIP
    'kernel'
    """

    label: str
    """What the steps are (``"profiler step"``, ``"NVTX range 'step #'"``), or ``""`` without steps."""
    paths: tuple[CriticalPath, ...]
    steps_skipped: int = 0
    """Steady-state steps left out (no GPU work linked to them)."""
    notes: tuple[str, ...] = ()

    @property
    def total_ns(self) -> int:
        return sum(p.duration_ns for p in self.paths)

    def ns_by_kind(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for p in self.paths:
            for k, v in p.by_kind().items():
                out[k] += v
        return out

    def share_by_kind(self) -> dict[str, float]:
        """Fraction of the steps' time per kind (sums to 1 when there are paths)."""
        tot = self.total_ns
        return {k: (v / tot if tot else 0.0) for k, v in self.ns_by_kind().items()}

    def share_by_hta_kind(self) -> dict[str, float]:
        """The shares in Holistic Trace Analysis's buckets (:data:`HTA_KIND`)."""
        out: dict[str, float] = {}
        for k, v in self.share_by_kind().items():
            out[HTA_KIND[k]] = out.get(HTA_KIND[k], 0.0) + v
        return out

    def top(self, kinds: Sequence[str], n: int = 5, by: str = "name") -> list[tuple[str, int, int]]:
        """``(name, nanoseconds on the path, segments)`` of the given kinds, most time first;
        ``by="scope"`` groups host time by the outermost operator or range instead."""
        t: Counter[str] = Counter()
        c: Counter[str] = Counter()
        for p in self.paths:
            for s in p.segments:
                if s.kind in kinds:
                    key = (s.scope if by == "scope" else s.name) or UNCOVERED
                    t[key] += s.duration_ns
                    c[key] += 1
        return [(name, ns, c[name]) for name, ns in t.most_common(n)]

    def median_step_ns(self) -> float | None:
        return float(np.median([p.duration_ns for p in self.paths])) if self.paths else None

    def to_dict(self) -> dict[str, Any]:
        share = self.share_by_kind()
        return {
            "label": self.label,
            "steps": len(self.paths),
            "steps_skipped": self.steps_skipped,
            "median_step_ns": self.median_step_ns(),
            "share_by_kind": {k: round(v, 4) for k, v in share.items() if v},
            "ns_by_kind": {k: v for k, v in self.ns_by_kind().items() if v},
            "host_ops": [{"name": n, "ns": t, "segments": c} for n, t, c in self.top(("host",))],
            "host_scopes": [
                {"name": n, "ns": t, "segments": c} for n, t, c in self.top(("host",), by="scope")
            ],
            "syncs": [{"name": n, "ns": t, "segments": c} for n, t, c in self.top(("sync",))],
            "kernels": [
                {"name": n, "ns": t, "segments": c} for n, t, c in self.top(("kernel", "copy", "memset"))
            ],
            "notes": list(self.notes),
        }

    def to_text(self) -> str:
        if not self.paths:
            return "critical path: no steps with GPU work" + (
                f" ({'; '.join(self.notes)})" if self.notes else ""
            )
        med = self.median_step_ns() or 0.0
        share = self.share_by_kind()
        parts = ", ".join(
            f"{k} {100 * v:.1f}%" for k, v in sorted(share.items(), key=lambda kv: -kv[1]) if v >= 0.001
        )
        lines = [
            f"critical path of {len(self.paths)} steps ({self.label}, median {_fmt(med, 'ns')}): {parts}"
        ]
        for title, kinds, by in (("host", ("host",), "name"), ("host, outermost", ("host",), "scope"),
                                 ("sync", ("sync",), "name"), ("GPU", _GPU_KINDS, "name")):  # fmt: skip
            top = self.top(kinds, 3, by=by)
            if top and self.total_ns:
                lines.append(
                    f"  {title}: "
                    + "; ".join(f"{n} {100 * t / self.total_ns:.1f}% ({c}x)" for n, t, c in top)
                )
        return "\n".join(lines)


# ============================================================================ the walk


@dataclass(slots=True)
class _Index:
    """What the walk looks up, built once per timeline."""

    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray
    """Index into _GPU_KINDS."""
    table_row: np.ndarray
    prev: np.ndarray
    """Previous item on the same (device, stream) in start order, -1 for the first."""
    launch: np.ndarray
    """API row of the launch call (by correlation), -1 when not found."""
    launch_latency_ns: int
    names: list[str]
    corr: np.ndarray
    # per host thread: waiting calls sorted by end, with the GPU item that released each
    waits: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """thread -> (call end, API row, releasing GPU item)."""
    api_union: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """thread -> disjoint CUDA-call intervals (starts, ends, cumulative length before each)."""
    owners: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """thread -> (elementary boundaries, innermost and outermost op/range name id per elementary
    interval, -1 where none covers it)."""
    owner_names: list[str] = field(default_factory=list)
    activity: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    """thread -> disjoint intervals during which it recorded something (operator, range, CUDA call)."""


def _gpu_items(tl: Timeline) -> tuple[np.ndarray, ...]:
    tabs = (tl.kernels, tl.copies, tl.memsets, tl.graphs)
    start = np.concatenate([t.start_ns for t in tabs]).astype(np.int64)
    end = np.concatenate([t.end_ns for t in tabs]).astype(np.int64)
    dev = np.concatenate([t.device for t in tabs]).astype(np.int64)
    stream = np.concatenate([t.stream for t in tabs]).astype(np.int64)
    corr = np.concatenate([t.correlation for t in tabs]).astype(np.int64)
    kind = np.concatenate([np.full(len(t), k, np.int8) for k, t in enumerate(tabs)])
    row = np.concatenate([np.arange(len(t)) for t in tabs]).astype(np.int64)
    return start, end, dev, stream, corr, kind, row


def _item_name(tl: Timeline, kind: int, row: int) -> str:
    if kind == 0:
        k = tl.kernels
        return (k.short_names or k.names)[k.name_id[row]]
    if kind == 1:
        from kprof.timeline_model import COPY_DIRECTION_NAMES

        return f"memcpy {COPY_DIRECTION_NAMES.get(int(tl.copies.direction[row]), '')}".strip()
    return "memset" if kind == 2 else "CUDA graph"


def _owners(
    starts: np.ndarray, ends: np.ndarray, name_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elementary intervals of a thread's (nested) operators and ranges and, per interval, the name id
    of the innermost and of the outermost one covering it (-1: none).

    Painting outer intervals first and inner ones over them leaves the innermost owner (for intervals
    that cross without nesting, the one that started last); painting in the reverse order leaves the
    outermost. Each interval paints the elementary intervals it spans: cost ~ intervals x depth.
    """
    bounds = np.unique(np.concatenate([starts, ends]))
    inner = np.full(max(len(bounds) - 1, 0), -1, np.int64)
    outer = inner.copy()
    if len(inner) == 0:
        return bounds, inner, outer
    a = np.searchsorted(bounds, starts)
    b = np.searchsorted(bounds, ends)
    order = np.lexsort((-ends, starts)).tolist()
    for i in order:
        inner[a[i] : b[i]] = name_ids[i]
    for i in reversed(order):
        outer[a[i] : b[i]] = name_ids[i]
    return bounds, inner, outer


def _launch_latency(
    start: np.ndarray, end: np.ndarray, prev: np.ndarray, launch: np.ndarray, call_start: np.ndarray
) -> int:
    """The capture's launch latency: from a launch call's start to its item's start, for items launched onto
    an idle stream (nothing before them on it, or the item before ended before the call), at
    LAUNCH_LATENCY_PERCENTILE; 0 with fewer than LAUNCH_LATENCY_MIN_SAMPLES such launches."""
    has = launch >= 0
    if not has.any():
        return 0
    ls = call_start[launch[has]].astype(np.int64)
    pe = np.where(prev[has] >= 0, end[np.maximum(prev[has], 0)], np.iinfo(np.int64).min)
    idle = pe < ls
    lat = (start[has] - ls)[idle]
    lat = lat[lat >= 0]
    if len(lat) < th.LAUNCH_LATENCY_MIN_SAMPLES:
        return 0
    return int(np.percentile(lat, th.LAUNCH_LATENCY_PERCENTILE))


def _build(tl: Timeline, exclude_ranges: set[tuple[int, int]]) -> _Index:
    start, end, dev, stream, corr, kind, row = _gpu_items(tl)
    n = len(start)
    # previous item on the same stream, in start order
    order = np.lexsort((end, start, stream, dev))
    prev = np.full(n, -1, np.int64)
    if n > 1:
        same = (dev[order][1:] == dev[order][:-1]) & (stream[order][1:] == stream[order][:-1])
        prev[order[1:][same]] = order[:-1][same]
    # launch call by correlation
    api = tl.api
    launch = np.full(n, -1, np.int64)
    if len(api) and n:
        aorder = np.argsort(api.correlation, kind="stable")
        sc = api.correlation[aorder]
        i = np.searchsorted(sc, corr)
        ic = np.minimum(i, len(sc) - 1)
        ok = (i < len(sc)) & (sc[ic] == corr) & (corr >= 0)
        launch[ok] = aorder[ic[ok]]
    names_cache: dict[tuple[int, int], str] = {}
    names = [""] * n
    for j in range(n):
        key = (int(kind[j]), int(tl.kernels.name_id[row[j]]) if kind[j] == 0 else -1)
        if key not in names_cache:
            names_cache[key] = _item_name(tl, int(kind[j]), int(row[j]))
        names[j] = names_cache[key]
    idx = _Index(start=start, end=end, kind=kind, table_row=row, prev=prev, launch=launch,
                 launch_latency_ns=_launch_latency(start, end, prev, launch, api.start_ns), names=names, corr=corr)  # fmt: skip
    # waiting calls: a GPU item ended while the call was in progress; the latest such item released it
    by_end = np.argsort(end, kind="stable")
    ends_sorted = end[by_end]
    if len(api):
        waiting = _waiting_calls(tl)
        for t in np.unique(api.thread).tolist():
            rows = np.flatnonzero((api.thread == t) & waiting)
            if len(rows) and n:
                pos = np.searchsorted(ends_sorted, api.end_ns[rows], side="right") - 1
                ok = pos >= 0
                rel = np.where(ok, by_end[np.maximum(pos, 0)], -1)
                ok &= ends_sorted[np.maximum(pos, 0)] >= api.start_ns[rows]
                rows, rel = rows[ok], rel[ok]
                o = np.argsort(api.end_ns[rows], kind="stable")
                idx.waits[t] = (api.end_ns[rows][o].astype(np.int64), rows[o], rel[o])
            # disjoint CUDA-call intervals of the thread
            sel = np.flatnonzero(api.thread == t)
            us_a, ue_a = _merge(api.start_ns[sel], api.end_ns[sel])
            cum = np.concatenate([[0], np.cumsum(ue_a - us_a)[:-1]]) if len(us_a) else np.zeros(0, np.int64)
            idx.api_union[t] = (us_a, ue_a, cum.astype(np.int64))
    # host operators (PyTorch profiler) and NVTX / record_function ranges per thread, iterations left out
    ops, rng = tl.host_ops, tl.ranges
    name_ix: dict[str, int] = {}
    for t in set(ops.thread.tolist()) | set(rng.thread.tolist()):
        so = np.flatnonzero(ops.thread == t)
        sr = np.array(
            [i for i in np.flatnonzero(rng.thread == t).tolist()
             if (int(rng.start_ns[i]), int(rng.end_ns[i])) not in exclude_ranges],
            np.int64,
        )  # fmt: skip
        if len(so) + len(sr) == 0:
            continue
        starts = np.concatenate([ops.start_ns[so], rng.start_ns[sr]]).astype(np.int64)
        ends = np.concatenate([ops.end_ns[so], rng.end_ns[sr]]).astype(np.int64)
        labels = [ops.names[int(k)] for k in ops.name_id[so]] + [rng.names[int(k)] for k in rng.name_id[sr]]
        nid = np.array([name_ix.setdefault(n, len(name_ix)) for n in labels], np.int64)
        idx.owners[t] = _owners(starts, ends, nid)
    idx.owner_names = list(name_ix)
    for t in set(ops.thread.tolist()) | set(rng.thread.tolist()) | set(api.thread.tolist()):
        sel_o, sel_a = np.flatnonzero(ops.thread == t), np.flatnonzero(api.thread == t)
        sel_r = np.array(
            [i for i in np.flatnonzero(rng.thread == t).tolist()
             if (int(rng.start_ns[i]), int(rng.end_ns[i])) not in exclude_ranges],
            np.int64,
        )  # fmt: skip
        idx.activity[t] = _merge(
            np.concatenate([ops.start_ns[sel_o], rng.start_ns[sel_r], api.start_ns[sel_a]]),
            np.concatenate([ops.end_ns[sel_o], rng.end_ns[sel_r], api.end_ns[sel_a]]),
        )
    return idx


def _merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted disjoint intervals."""
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    o = np.argsort(starts, kind="stable")
    s, e = starts[o].astype(np.int64), ends[o].astype(np.int64)
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new)
    last = np.concatenate([first[1:] - 1, [len(s) - 1]])
    return s[first], run_end[last]


def _handoff(idx: _Index, thread: int, lo: int, t: int, min_ns: int) -> tuple[int, int] | None:
    """The latest moment in (lo, t] at which ``thread`` woke from a silence of at least ``min_ns`` during
    which another thread worked, and the thread that worked last before the wake (the one that handed the
    work over): ``(wake time, other thread)``, or None."""
    act = idx.activity.get(thread)
    if act is None:
        return None
    s, e = act
    # silences: before each activity interval, from the previous one's end (or from lo)
    k = int(np.searchsorted(s, t, side="right"))  # intervals starting at or before t
    for j in range(k - 1, -1, -1):
        wake = int(s[j])
        if wake <= lo:
            return None
        quiet_from = int(e[j - 1]) if j > 0 else lo
        if wake - max(quiet_from, lo) < min_ns:
            continue
        # the thread that was busy last before the wake (during the silence): the one that handed off
        best: tuple[int, int] | None = None
        quiet = max(quiet_from, lo)
        for other, (os_, oe) in idx.activity.items():
            if other == thread:
                continue
            i = (
                int(np.searchsorted(os_, wake, side="left")) - 1
            )  # its last interval that started before the wake
            if i < 0:
                continue
            busy_until = min(int(oe[i]), wake)
            if busy_until > quiet and (best is None or busy_until > best[0]):
                best = (busy_until, other)
        if best is not None:
            return wake, best[1]
    return None


def _api_overlap(u: tuple[np.ndarray, np.ndarray, np.ndarray], a: int, b: int) -> int:
    """Length of [a, b) covered by the disjoint intervals ``u``."""
    us, ue, cum = u
    if len(us) == 0 or b <= a:
        return 0

    def covered_before(x: int) -> int:  # covered length of (-inf, x)
        k = int(np.searchsorted(us, x, side="right")) - 1
        if k < 0:
            return 0
        return int(cum[k]) + max(0, min(x, int(ue[k])) - int(us[k]))

    return covered_before(b) - covered_before(a)


def _host_segments(idx: _Index, thread: int, a: int, b: int) -> list[Segment]:
    """Host time [a, b) on ``thread``: the CUDA-call part and the rest, the rest split by innermost op."""
    out: list[Segment] = []
    if b <= a:
        return out
    api_ns = _api_overlap(idx.api_union[thread], a, b) if thread in idx.api_union else 0
    # the non-API host time, by innermost op (what the segment's time was spent in)
    owners = idx.owners.get(thread)
    pieces: list[tuple[int, int, str, str]] = []
    if owners is not None and len(owners[1]):
        bounds, inner, outer = owners
        i0 = max(int(np.searchsorted(bounds, a, side="right")) - 1, 0)
        i1 = min(int(np.searchsorted(bounds, b, side="left")), len(inner))
        x = a
        for i in range(i0, i1):
            lo, hi = max(int(bounds[i]), a), min(int(bounds[i + 1]), b)
            if hi <= lo:
                continue
            if lo > x:
                pieces.append((x, lo, "", ""))
            nm = idx.owner_names[int(inner[i])] if inner[i] >= 0 else ""
            sc = idx.owner_names[int(outer[i])] if outer[i] >= 0 else ""
            if pieces and pieces[-1][2:] == (nm, sc) and pieces[-1][1] == lo:
                pieces[-1] = (pieces[-1][0], hi, nm, sc)
            else:
                pieces.append((lo, hi, nm, sc))
            x = hi
        if x < b:
            pieces.append((x, b, "", ""))
    else:
        pieces = [(a, b, "", "")]
    # per piece, its time inside CUDA calls (laid first) and the rest
    u = idx.api_union.get(thread)
    for lo, hi, nm, sc in pieces:
        in_api = _api_overlap(u, lo, hi) if u is not None else 0
        if in_api:
            out.append(Segment(start_ns=lo, end_ns=lo + in_api, kind="host_api", name=nm, scope=sc))
        if hi - lo - in_api > 0:
            out.append(Segment(start_ns=lo + in_api, end_ns=hi, kind="host", name=nm, scope=sc))
    assert (
        sum(s.duration_ns for s in out) == b - a
        and sum(s.duration_ns for s in out if s.kind == "host_api") == api_ns
    )
    return out


def _walk(tl: Timeline, idx: _Index, lo: int, item: int, max_hops: int) -> list[Segment]:
    """Segments from ``lo`` to the end of GPU item ``item``, walking back through its dependencies."""
    api = tl.api
    segs: list[Segment] = []
    gpu: int | None = item
    thread = -1
    t = int(idx.end[item])
    hops = 0
    while t > lo and hops < max_hops:
        hops += 1
        if gpu is not None:
            x = gpu
            xs = min(int(idx.start[x]), t)
            segs.append(Segment(start_ns=max(xs, lo), end_ns=t, kind=_GPU_KINDS[int(idx.kind[x])],
                                name=idx.names[x], correlation=int(idx.corr[x])))  # fmt: skip
            if xs <= lo:
                break
            p = int(idx.prev[x])
            lr = int(idx.launch[x])
            rel_stream = min(int(idx.end[p]), xs) if p >= 0 else None
            rel_launch = min(int(api.start_ns[lr]), xs) if lr >= 0 else None
            # the item could not start before its launch call plus the capture's launch latency
            ready = min(rel_launch + idx.launch_latency_ns, xs) if rel_launch is not None else None
            if rel_stream is not None and (ready is None or rel_stream >= ready):
                if xs > rel_stream:
                    segs.append(Segment(start_ns=max(rel_stream, lo), end_ns=xs, kind="gpu_gap"))
                gpu, t = p, rel_stream
            elif rel_launch is not None:
                if xs > rel_launch:
                    segs.append(Segment(start_ns=max(rel_launch, lo), end_ns=xs, kind="launch",
                                        name=api_base_name(api.names[api.name_id[lr]]),
                                        correlation=int(idx.corr[x])))  # fmt: skip
                gpu, thread, t = None, int(api.thread[lr]), rel_launch
            else:  # nothing known released it
                segs.append(Segment(start_ns=lo, end_ns=xs, kind="gpu_gap"))
                t = lo
            continue
        # on the host thread at t: back to the last call that waited for the GPU, or to the moment the
        # thread woke from a long silence while another thread worked (a hand-off between threads)
        w = idx.waits.get(thread)
        k = int(np.searchsorted(w[0], t, side="right")) - 1 if w is not None else -1
        floor = int(w[0][k]) if w is not None and k >= 0 else lo
        hand = _handoff(idx, thread, max(floor, lo), t, th.THREAD_HANDOFF_MIN_NS)
        if hand is not None:
            wake, other = hand
            segs.extend(reversed(_host_segments(idx, thread, wake, t)))
            thread, t = other, wake
            continue
        if k < 0 or w is None or int(w[0][k]) <= lo:
            segs.extend(reversed(_host_segments(idx, thread, lo, t)))
            t = lo
            break
        call_end, call_row, rel = int(w[0][k]), int(w[1][k]), int(w[2][k])
        segs.extend(reversed(_host_segments(idx, thread, call_end, t)))
        g_end = min(int(idx.end[rel]), call_end)
        if call_end > g_end:
            nm = api_base_name(api.names[api.name_id[call_row]])
            owner = _owner_at(idx, thread, call_end - 1)
            segs.append(Segment(start_ns=max(g_end, lo), end_ns=call_end, kind="sync",
                                name=f"{nm} in {owner}" if owner else nm))  # fmt: skip
        gpu, t = rel, g_end
    if t > lo:  # the hop budget ran out: the rest is unexplained
        segs.append(Segment(start_ns=lo, end_ns=t, kind="gpu_gap" if gpu is not None else "host"))
    segs.reverse()
    return segs


def _owner_at(idx: _Index, thread: int, x: int) -> str:
    o = idx.owners.get(thread)
    if o is None or len(o[1]) == 0:
        return ""
    i = int(np.searchsorted(o[0], x, side="right")) - 1
    if 0 <= i < len(o[1]) and o[1][i] >= 0:
        return idx.owner_names[int(o[1][i])]
    return ""


def critical_paths(tl: Timeline, *, max_steps: int | None = None) -> CriticalPathSummary:
    """The critical path of each steady-state step of a capture (see the module docstring).

    Parameters
    ----------
    tl
        A timeline with iterations (profiler steps or a repeated NVTX range).
    max_steps
        Walk at most this many steps (evenly spread over the steady state); None: all.

    Returns
    -------
    CriticalPathSummary
        Empty (with a note) when the capture has fewer than 2 steps with GPU work.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> critical_paths(Timeline(source="x", format="nsys")).paths
    ()
    """
    from kprof.diagnose.compare import step_times

    st = step_times(tl)
    if st.count < 2:
        return CriticalPathSummary(
            label=st.label, paths=(), notes=("fewer than 2 iterations in the capture",)
        )
    linked = np.flatnonzero(st.gpu_end_ns >= 0)
    if len(linked) < 2:
        return CriticalPathSummary(label=st.label, paths=(), notes=("no GPU work linked to the iterations",))
    # the ranges that mark the iterations name no host time when they are the loop itself (they hold most of
    # its launches: a profiler step, an NVTX 'step'); a marker that issues none (the DataLoader's __next__)
    # is what the host runs and keeps its name. The steps run start to next start: match the ranges as marked.
    from kprof.diagnose.intervals import containing, union
    from kprof.diagnose.timeline import _marked_iterations

    marked = _marked_iterations(tl).windows
    launches = tl.api.start_ns[tl.api.category == int(ApiCategory.LAUNCH)] if len(tl.api) else np.zeros(0)
    in_marks = int(np.count_nonzero(containing(union(*marked), launches) >= 0)) if len(launches) else 0
    loop = not len(launches) or in_marks >= th.DOMINANT_SHARE * len(launches)
    exclude = set(zip(marked[0].tolist(), marked[1].tolist(), strict=True)) if loop else set()
    idx = _build(tl, exclude)
    # the step ends with the last-ending GPU item launched from it
    api = tl.api
    call_start = np.where(idx.launch >= 0, api.start_ns[np.maximum(idx.launch, 0)] if len(api) else 0, -1)
    step_of = np.searchsorted(st.host_start_ns, call_start, side="right") - 1
    inside = (idx.launch >= 0) & (step_of >= 0) & (call_start < st.host_end_ns[np.maximum(step_of, 0)])
    pairs = list(zip(linked[:-1].tolist(), linked[1:].tolist(), strict=True))  # (previous linked step, step)
    # warm-up, as the timeline diagnosis leaves it out: after the first step, each next one while it runs more
    # than WARMUP_STEP_RATIO times the median step (lazy loading, handle creation: one such step of 90 ms among
    # steps of 0.13 ms would otherwise set every share); at least two steps stay
    lengths = np.array([int(st.gpu_end_ns[j]) - int(st.gpu_end_ns[i]) for i, j in pairs], np.int64)
    if len(lengths) > 2:
        med = float(np.median(lengths))
        k = 0
        while k < len(pairs) - 2 and lengths[k] > th.WARMUP_STEP_RATIO * med:
            k += 1
        pairs = pairs[k:]
    skipped = st.count - 1 - len(pairs)
    if max_steps is not None and len(pairs) > max_steps:
        pick = np.unique(np.linspace(0, len(pairs) - 1, max_steps).round().astype(int))
        pairs = [pairs[i] for i in pick.tolist()]
    paths: list[CriticalPath] = []
    budget = 4 * (len(idx.start) + len(api)) + 16
    for j_prev, j in pairs:
        mine = np.flatnonzero(inside & (step_of == j))
        if len(mine) == 0:
            continue
        last = int(mine[np.argmax(idx.end[mine])])
        lo, hi = int(st.gpu_end_ns[j_prev]), int(idx.end[last])
        if hi <= lo:
            continue
        segs = _walk(tl, idx, lo, last, budget)
        assert segs[0].start_ns == lo and segs[-1].end_ns == hi
        assert all(a.end_ns == b.start_ns for a, b in itertools.pairwise(segs)), "segments must tile the step"
        paths.append(
            CriticalPath(step=j, start_ns=lo, end_ns=hi, segments=tuple(s for s in segs if s.duration_ns > 0))
        )
    notes: list[str] = []
    if skipped:
        notes.append(f"{skipped} step(s) without linked GPU work left out")
    return CriticalPathSummary(
        label=st.label, paths=tuple(paths), steps_skipped=max(skipped, 0), notes=tuple(notes)
    )


def window_path(tl: Timeline, start_ns: int | None = None, end_ns: int | None = None) -> CriticalPathSummary:
    """The critical path of a time window (default: the whole capture), for captures without steps.

    The path ends with the GPU item that ends last inside the window and is walked back to the
    window's start (the capture's first timestamp by default).

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> window_path(Timeline(source="x", format="nsys")).paths
    ()
    """
    span = tl.span_ns()
    if span is None or tl.gpu_op_count == 0:
        return CriticalPathSummary(label="window", paths=(), notes=("no GPU work in the capture",))
    lo = span[0] if start_ns is None else int(start_ns)
    hi = span[1] if end_ns is None else int(end_ns)
    idx = _build(tl, set())
    ok = np.flatnonzero((idx.end <= hi) & (idx.end > lo))
    if len(ok) == 0:
        return CriticalPathSummary(label="window", paths=(), notes=("no GPU work ends inside the window",))
    last = int(ok[np.argmax(idx.end[ok])])
    segs = _walk(tl, idx, lo, last, 4 * (len(idx.start) + len(tl.api)) + 16)
    end = int(idx.end[last])
    path = CriticalPath(
        step=-1, start_ns=lo, end_ns=end, segments=tuple(x for x in segs if x.duration_ns > 0)
    )
    return CriticalPathSummary(label="window", paths=(path,))


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def path_sentence(summary: CriticalPathSummary, bottleneck: str) -> str | None:
    """One sentence naming the operations on the critical path that a ``sync_bound`` or
    ``host_compute_bound`` diagnosis is about, with their share of the step time; None otherwise.

    Examples
    --------
    >>> path_sentence(CriticalPathSummary(label="", paths=()), "sync_bound") is None
    True
    """
    if not summary.paths or not summary.total_ns:
        return None
    n = len(summary.paths)
    med = summary.median_step_ns() or 0.0
    share = summary.share_by_kind()
    head = f"On the critical path of the {n} steady steps (median {_fmt(med, 'ns')})"
    if bottleneck == "sync_bound":
        syncs = summary.top(("sync",), 2)
        if not syncs:
            return None
        per_step = sum(c for _, _, c in summary.top(("sync",), 1000)) / n
        gpu = sum(share[k] for k in _GPU_KINDS)
        turnaround = share["sync"] + share["host"] + share["host_api"] + share["launch"]
        host_ops = [x for x in summary.top(("host", "host_api"), 2) if x[0] != UNCOVERED]
        ops = ", ".join(f"{nm} {_pct(ns / summary.total_ns)}" for nm, ns, _ in host_ops)
        return (
            f"{head}, the step waits for the GPU {'once' if abs(per_step - 1) < 0.05 else f'{per_step:.3g} times'} ({'; '.join(nm for nm, _, _ in syncs)}): GPU "
            f"work on the path holds {_pct(gpu)} of the step time and the host's turnaround after each wait (waking, "
            f"issuing the next work) {_pct(turnaround)}" + (f", mostly in {ops}." if ops else ".")
        )
    if bottleneck == "host_compute_bound":
        scopes = [
            x for x in summary.top(("host",), 3, by="scope")
            if x[0] != UNCOVERED and x[1] >= th.MIN_FINDING_SHARE * summary.total_ns
        ][:2]  # fmt: skip
        host = share["host"]
        if not scopes:
            return (
                f"{head}, host work outside CUDA calls holds {_pct(host)} of the step time; no host operator or "
                "NVTX range covers it (an NVTX range around data loading and preprocessing, or a PyTorch profiler "
                "trace, would name it)."
            )
        parts = ", ".join(f"{nm} {_pct(ns / summary.total_ns)}" for nm, ns, _ in scopes)
        return f"{head}, host work outside CUDA calls holds {_pct(host)} of the step time: {parts}."
    return None


NAMED_ON_PATH = ("sync_bound", "host_compute_bound")
"""The timeline verdicts whose mechanism names the operations on the critical path (:func:`annotate`)."""

ANNOTATE_MAX_STEPS = 50
"""Steps walked to annotate a diagnosis (spread evenly over the steady state): the shares of 50 steps
already vary by less than the run-to-run noise of a host-bound loop (HOST_PACED_PROCESS_SD), and
it keeps the walk to a fraction of a second on a long capture."""


def annotate(tl: Timeline, diagnoses: Sequence[Diagnosis]) -> list[Diagnosis]:
    """The diagnoses, the first one's mechanism extended by :func:`path_sentence` when its verdict is one
    of :data:`NAMED_ON_PATH` (the operations on the steps' critical path and their share of the step).

    Examples
    --------
    >>> annotate(Timeline(source="x", format="nsys"), [])
    []
    """
    import dataclasses

    out = list(diagnoses)
    bottleneck = out[0].bottleneck if out else None
    if bottleneck is None or bottleneck.value not in NAMED_ON_PATH:
        return out
    d = out[0]
    sentence = path_sentence(critical_paths(tl, max_steps=ANNOTATE_MAX_STEPS), bottleneck.value)
    if sentence:
        out[0] = dataclasses.replace(d, mechanism=f"{d.mechanism} {sentence}".strip())
    return out


def agreement(a: dict[str, float], b: dict[str, float]) -> float:
    """1 - total variation distance between two share breakdowns (1: identical, 0: disjoint).

    Examples
    --------
    >>> agreement({"cpu_bound": 0.9, "gpu_compute_bound": 0.1}, {"cpu_bound": 0.8, "gpu_compute_bound": 0.2})
    0.9
    """
    keys = set(a) | set(b)
    tv = 0.5 * sum(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys)
    return round(1.0 - tv, 12) if math.isfinite(tv) else 0.0


__all__ = [
    "ANNOTATE_MAX_STEPS",
    "HTA_KIND",
    "KINDS",
    "NAMED_ON_PATH",
    "UNCOVERED",
    "CriticalPath",
    "CriticalPathSummary",
    "Segment",
    "agreement",
    "annotate",
    "critical_paths",
    "path_sentence",
    "window_path",
]
