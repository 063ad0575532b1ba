"""Gap attribution: each idle stretch of the GPU in a window is given to the cause that holds it (host
issuing work, a sync, a copy, start-up, another device, host computation) (:class:`_Window`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.iterations import REPEATED_WORK
from kprof.diagnose.timeline.rows import (
    _EMPTY,
    Pair,
    _compact,
    _Distinct,
    _Gpu,
    _in_windows,
    _median,
    _merged,
    _union_total,
)
from kprof.timeline_model import (
    COPY_DTOH,
    COPY_HTOD,
    MEM_PAGEABLE,
    ApiCategory,
    HostOpTable,
    Timeline,
)

_CAUSES = ("host", "sync", "copy", "startup", "device_wait", "unknown", "host_compute")


@dataclass(slots=True)
class _Window:
    """Stats of one set of windows (the steady state, or an NVTX range's instances)."""

    lo: int
    hi: int
    wall_ns: int
    busy_ns: int
    compute_ns: int
    copy_ns: int
    exposed_copy_ns: int
    idle_ns: int
    gap_count: int
    idle_by_cause: dict[str, int]
    host_split: dict[str, int]  # within host-caused gaps: launch calls, cpu ops, other API, untraced
    kernel_count: int
    launch_count: int
    sync_count: int
    sync_wait_ns: int
    pageable_bytes: int
    pageable_copy_ns: int
    copy_bytes: int
    h2d_bytes: int
    d2h_bytes: int
    host_compute_gaps: Pair
    """The gaps attributed to host computation (starts, ends), in time order."""
    median_kernel_ns: float
    median_launch_call_ns: float | None
    median_gap_ns: float
    mean_gap_ns: float
    launch_interval_ns: float | None
    scope: str = "the steady state"
    windows: Pair = _EMPTY
    """The windows these stats are of (the steady state, or an NVTX range's instances)."""

    @property
    def busy_fraction(self) -> float:
        return self.busy_ns / self.wall_ns if self.wall_ns > 0 else 0.0


class _LaunchingOps:
    """Finds the host operator that issued a CUDA call: the innermost PyTorch operator (Kineto ``cpu_op``)
    on the call's thread that contains its start. Built on first use (a sort of the operators by start)."""

    WALK_BACK = 64
    """Operators looked back at from a call: the finished child operators (``aten::empty``, ...) that an
    operator runs before its launch; past them the call is taken to have no operator."""

    def __init__(self, ops: HostOpTable) -> None:
        self._ops = ops
        self._s: np.ndarray | None = None
        self._e = self._t = self._n = np.zeros(0, np.int64)

    def name_at(self, t: int, thread: int) -> str | None:
        """Name of the innermost operator on ``thread`` that contains time ``t``, or None."""
        k = self._at(t, thread)
        return None if k is None else self._ops.names[int(self._n[k])]

    def start_of(self, t: int, thread: int) -> int | None:
        """Start of the innermost operator on ``thread`` that contains time ``t``, or None."""
        k = self._at(t, thread)
        return None if k is None else int(self._s[k])  # type: ignore[index]

    def _at(self, t: int, thread: int) -> int | None:
        if self._s is None:
            o = np.argsort(self._ops.start_ns, kind="stable")
            self._s, self._e, self._t = self._ops.start_ns[o], self._ops.end_ns[o], self._ops.thread[o]
            self._n = self._ops.name_id[o]
        j = int(np.searchsorted(self._s, t, side="right")) - 1
        for k in range(j, max(j - self.WALK_BACK, -1), -1):
            if int(self._t[k]) == thread and int(self._e[k]) > t:
                return k
        return None


@dataclass(slots=True)
class _GapTotals:
    """What the walk over the GPU's idle gaps in a set of windows adds up (:func:`_walk_gaps`)."""

    idle_by: dict[str, int]
    host_split: dict[str, int]
    idle_ns: int
    gap_count: int
    mean_gap: float
    median_gap: float | None
    host_compute_gaps: Pair


_ISSUING = (int(ApiCategory.LAUNCH), int(ApiCategory.MEMSET))
"""API calls that give the GPU its compute work (kernel and graph launches, memsets). Copies are left out: a
copy to the host in the loop is what blocks it, and its fix (keep the value on the GPU, or a pinned buffer
and an event) removes or moves that call's host time with the wait."""


def blocked_overlap_ns(ctx: _Context) -> float:
    """The GPU work the host could hide its work after a blocking call behind, were the call not there: the
    steady state's GPU-busy time per blocking episode (blocking calls with no issuing call between them count
    once: ``.cpu()`` copies, then syncs). 0 when the host does not run ahead of the GPU between its blocking
    calls: the mean time from one issuing call (:data:`_ISSUING`) to the next on the thread that issues most
    of them, counted only where no blocking call starts in between (the host's own work between launches:
    dispatch, Python, allocations), times the number of issuing calls, is not shorter than that GPU-busy
    time; also 0 without blocking calls or with fewer than MIN_LAUNCHES_FOR_LAUNCH_BOUND issuing calls (no
    rate to judge).

    An idle gap that begins while the host is blocked (a sync, a blocking copy, ``.item()``, ``nonzero``) is
    then the blocking call's, all of it, when the host's time from the call's end to the work that ends the gap
    (its return and the re-dispatch) is at most this: without the call the host would have issued that work
    while the GPU still ran the work before it (:meth:`_GapCoder.codes`)."""
    api = ctx.tl.api
    bs = ctx.blocking_calls[0]
    if len(api) == 0 or len(bs) == 0:
        return 0.0
    lo, hi = ctx.steady_lo, ctx.steady_hi
    m = (api.start_ns >= lo) & (api.start_ns < hi) & np.isin(api.category, _ISSUING)
    n_issue = int(np.count_nonzero(m))
    if n_issue < th.MIN_LAUNCHES_FOR_LAUNCH_BOUND:
        return 0.0
    threads, counts = np.unique(api.thread[m], return_counts=True)
    s = np.sort(api.start_ns[m & (api.thread == threads[int(np.argmax(counts))])])
    if len(s) < 2:
        return 0.0
    # blocking calls that start in [s_i, s_i+1): the interval holds a wait, not issue time
    between = np.diff(np.searchsorted(bs, s, side="left"))
    clean = np.diff(s)[between == 0]
    episodes = int(np.count_nonzero(between))
    if len(clean) == 0 or episodes == 0:
        return 0.0
    windows = (np.array([lo], np.int64), np.array([max(hi, lo)], np.int64))
    busy = _union_total(ctx.gpu.stream(with_cols=False), windows)
    if float(np.mean(clean)) * n_issue >= busy:
        return 0.0
    return busy / episodes


class _GapCoder:
    """Gives each idle gap of a chunk the code (an index of :data:`_CAUSES`) of the cause that holds it."""

    def __init__(self, ctx: _Context) -> None:
        tl = ctx.tl
        self.ctx = ctx
        self.api = tl.api
        self.has_host = tl.has_host_trace and len(self.api) > 0
        self.bs, _be, self.btw = ctx.blocking_calls
        self.blocking_slack = (ctx.blocking[0], ctx.blocking[1] + th.CLOCK_ALIGNMENT_SLACK_NS)
        self.cause_ix = {c: i for i, c in enumerate(_CAUSES)}
        self.free_cur = iv.UnionCursor([ctx.api_free]) if len(ctx.api_free[0]) else None
        self.dispatch = _LaunchingOps(tl.host_ops) if len(tl.host_ops) and tl.format == "kineto" else None
        self.hostish = np.array(
            [self.cause_ix["host"], self.cause_ix["sync"], self.cause_ix["copy"]], np.int8
        )
        self.overlap_ns = blocked_overlap_ns(ctx)

    def codes(self, gs: np.ndarray, ge: np.ndarray, glen: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The cause codes of gaps ``[gs, ge)``, ``rows`` the API rows of the work that ends each (-1: none)."""
        ctx, api, cause_ix = self.ctx, self.api, self.cause_ix
        bs, btw = self.bs, self.btw
        known = rows >= 0
        launch_end = (
            np.where(known, api.end_ns[np.maximum(rows, 0)], 0) if len(api) else np.zeros(len(gs), np.int64)
        )
        queued_before = known & (launch_end + th.CLOCK_ALIGNMENT_SLACK_NS < gs)
        # launched early in the gap and then held in the queue of an idle GPU for most of it, far longer than
        # launch latency: the work waited on a device-side dependency, not on the host
        queued_for = ge - launch_end
        queued_before |= known & (queued_for >= th.QUEUED_WAIT_MIN_NS) & (queued_for * 2 > glen)
        del known, launch_end, queued_for
        # host blocked in a synchronizing call when the GPU went idle
        # (the latest-starting blocking call before the gap may be short; use the union for "inside")
        block_ix = iv.containing(self.blocking_slack, gs)
        in_block = block_ix >= 0
        if len(bs):
            bi = np.searchsorted(bs, gs, side="right") - 1
            transfer = in_block & (bi >= 0) & btw[np.maximum(bi, 0)]
        else:
            transfer = np.zeros(len(gs), bool)
        # A blocking call costs the GPU only what the host could have issued instead of waiting. When the host
        # issues work faster than the GPU runs it and its return + re-dispatch after the call is shorter than
        # the GPU work it could have overlapped (blocked_overlap_ns), that is the whole gap: the next work would
        # have been queued before the GPU ran dry. Otherwise the gap is the sync's (or the copy's) when the host
        # had been blocked at least half as long as the gap lasts; when the host's own work after the call is
        # longer, the host is the limit (without the sync it would still not keep ahead of the GPU).
        waited = (
            np.where(in_block, gs - ctx.blocking[0][np.maximum(block_ix, 0)], 0)
            if len(ctx.blocking[0])
            else 0
        )
        held = in_block & (np.asarray(waited) * 2 >= glen)
        if self.overlap_ns > 0 and in_block.any():
            # the host's time from the last blocking call before the gap's end to that end: return + re-dispatch
            bu_s, bu_e = ctx.blocking
            last = np.searchsorted(bu_s, ge, side="left") - 1
            after = ge - np.minimum(bu_e[np.maximum(last, 0)], ge)
            held |= in_block & (last >= 0) & (after <= self.overlap_ns)
        del block_ix, waited
        startup = iv.per_interval_overlap((gs, ge), ctx.startup_calls) * 2 > glen
        c = np.full(len(gs), cause_ix["host"], np.int8)
        c[held & ~transfer] = cause_ix["sync"]
        c[held & transfer] = cause_ix["copy"]
        if self.free_cur is not None:
            c[self._host_compute(c, gs, ge, glen, rows)] = cause_ix["host_compute"]
        c[startup] = cause_ix["startup"]
        c[queued_before & ~in_block] = cause_ix["device_wait"]
        if not self.has_host:
            c[:] = cause_ix["unknown"]
        return c

    def _host_compute(
        self, c: np.ndarray, gs: np.ndarray, ge: np.ndarray, glen: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """Mask of the host-ish gaps spent mostly in long stretches without any CUDA call: the host computed
        something else (even when the gap began in a sync or a copy: its length is the host's other work)."""
        assert self.free_cur is not None
        api, dispatch = self.api, self.dispatch
        api_free = self.free_cur.overlap(gs, ge)
        hc = np.isin(c, self.hostish) & (api_free * 2 > glen)
        if hc.any() and dispatch is not None:
            # time inside the operator that issues the work ending the gap is that operator's dispatch
            # (PyTorch's first call of an op loads its kernels there; a CUDA graph would skip it all):
            # only the stretches without CUDA calls before that operator began are other host work
            for j in np.flatnonzero(hc & (rows >= 0)).tolist():
                r = int(rows[j])
                op_lo = dispatch.start_of(int(api.start_ns[r]), int(api.thread[r]))
                if op_lo is not None and op_lo < int(ge[j]):
                    before = (np.array([gs[j]]), np.array([max(int(gs[j]), op_lo)]))
                    if int(iv.per_interval_overlap(before, self.ctx.api_free)[0]) * 2 <= int(glen[j]):
                        hc[j] = False
        return hc


def _walk_gaps(
    ctx: _Context, windows: Pair, record: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None
) -> _GapTotals:
    """Every idle gap of the GPU inside the windows, with the work that ends it, given its cause."""
    g = ctx.gpu
    ws, we = windows
    coder = _GapCoder(ctx)
    cause_ix = coder.cause_ix
    idle_by = dict.fromkeys(_CAUSES, 0)
    hl = ho = hops = total_h = 0
    idle_ns = gap_count = 0
    interior: list[np.ndarray] = []
    span_lo = int(ws[0]) if len(ws) else 0
    span_hi = int(we[-1]) if len(we) else 0
    launch_cur = iv.UnionCursor(ctx.launch_calls.chunks(with_cols=False))
    busy_host = [p for p in (ctx.host_ops, ctx.other_api) if p.count]
    other_cur = iv.UnionCursor(_merged(busy_host, with_cols=False)) if busy_host else None
    ops_cur = iv.UnionCursor(ctx.host_ops.chunks(with_cols=False)) if ctx.host_ops.count else None
    hc_s: list[np.ndarray] = []
    hc_e: list[np.ndarray] = []
    for gs_all, ge_all, next_corr in iv.gap_chunks(iv.union_chunks(g.stream()), 1):
        gs, ge, src = iv.clip_to_windows(gs_all, ge_all, windows)
        if len(gs) == 0:
            continue
        glen = ge - gs
        rows = ctx.api_index.find(next_corr[src])
        del src
        c = coder.codes(gs, ge, glen, rows)
        del rows
        if record is not None:
            record.append((gs, ge, c))
        hcm = c == cause_ix["host_compute"]
        if hcm.any():
            hc_s.append(gs[hcm])
            hc_e.append(ge[hcm])
        for name, i in cause_ix.items():
            idle_by[name] += int(glen[c == i].sum())
        hm = c == cause_ix["host"]
        if hm.any():
            hq = (gs[hm], ge[hm])
            hl += int(launch_cur.overlap(*hq).sum())
            if other_cur is not None:
                ho += int(other_cur.overlap(*hq).sum())
            if ops_cur is not None:
                hops += int(ops_cur.overlap(*hq).sum())
            total_h += int(glen[hm].sum())
        idle_ns += int(glen.sum())
        gap_count += len(gs)
        interior.append(_compact(glen[(gs > span_lo) & (ge < span_hi)]))
    # medians one at a time, each input dropped before the next is collected (int32: 40 MB per 10M)
    n_interior = sum(len(x) for x in interior)
    mean_gap = float(sum(int(x.sum(dtype=np.int64)) for x in interior)) / n_interior if n_interior else 0.0
    median_gap = _median(interior)
    host_split = {"launch calls": 0, "CPU ops": 0, "other CUDA calls": 0, "untraced host time": 0}
    if total_h:
        host_split = {
            "launch calls": hl,
            "CPU ops": hops,
            "other CUDA calls": max(0, ho - hops),
            "untraced host time": max(0, total_h - hl - ho),
        }
    return _GapTotals(
        idle_by=idle_by,
        host_split=host_split,
        idle_ns=idle_ns,
        gap_count=gap_count,
        mean_gap=mean_gap,
        median_gap=median_gap,
        host_compute_gaps=(
            (np.concatenate(hc_s).astype(np.int64), np.concatenate(hc_e).astype(np.int64)) if hc_s else _EMPTY
        ),
    )


def _compute_and_copies(g: _Gpu, windows: Pair, busy_ns: int) -> tuple[int, int, int]:
    """(compute, copy, exposed copy) time: only when the GPU did more than kernels and graphs."""
    compute_ns, copy_ns, exposed_copy = busy_ns, 0, 0
    if g.has(1, 2):
        compute_ns = _union_total(g.stream((0, 3), False), windows) if g.has(0, 3) else 0
        if g.has(1):
            copy_ns = _union_total(g.stream((1,), False), windows)
            # copy time not under compute: |copies or compute| - |compute|
            exposed_copy = _union_total(g.stream((0, 1, 3), False), windows) - compute_ns
    return compute_ns, copy_ns, int(exposed_copy)


def _kernel_stats(g: _Gpu, windows: Pair) -> tuple[int, float | None]:
    """(kernels in the windows, median kernel or graph duration)."""
    kernel_count = 0
    kd: list[np.ndarray] = []
    for kind in (0, 3):
        if kind in g.parts:
            for ch in g.parts[kind].chunks(with_cols=False):
                m = _in_windows(ch[0], windows)
                if kind == 0:
                    kernel_count += int(np.count_nonzero(m))
                kd.append(_compact((ch[1] - ch[0])[m]))
    return kernel_count, _median(kd)


def _launch_stats(ctx: _Context, windows: Pair) -> tuple[int, float | None, float | None]:
    """Launch calls in the windows: (distinct launches, median call duration, median interval between calls)."""
    lc = ctx.launch_calls
    distinct = _Distinct(int(lc.cols[0].max()) if lc.count else -1)
    lcalls: list[np.ndarray] = []
    n_launch_calls = 0
    for s, e, corr in lc.chunks():
        m = _in_windows(s, windows)
        if m.any():
            distinct.add(corr[m])
            lcalls.append(_compact((e - s)[m]))
            n_launch_calls += int(np.count_nonzero(m))
    launch_count = distinct.count() if n_launch_calls else 0
    del distinct
    median_call = _median(lcalls)
    launch_interval = None
    if launch_count >= 2:
        # the median time between consecutive launch calls (all of them, in start order)
        lgaps: list[np.ndarray] = []
        prev: np.ndarray = np.zeros(0, np.int64)
        for ch in lc.chunks(with_cols=False):
            s = ch[0][_in_windows(ch[0], windows)]
            if len(s):
                lgaps.append(_compact(np.diff(np.concatenate((prev, s)))))
                prev = s[-1:]
        launch_interval = _median(lgaps)
    return launch_count, median_call, launch_interval


def _copy_bytes(tl: Timeline, device: int, windows: Pair) -> tuple[int, int, int, int, int]:
    """(pageable bytes, pageable copy time, bytes, host-to-device bytes, device-to-host bytes) of the copies."""
    cp = tl.copies
    if not len(cp):
        return 0, 0, 0, 0, 0
    cm = (cp.device == device) & _in_windows(cp.start_ns, windows)
    hk = cp.host_kind()
    pm = cm & (hk == MEM_PAGEABLE)
    pageable_bytes = int(cp.bytes[pm].sum())
    pageable_ns = int(np.maximum(cp.end_ns[pm] - cp.start_ns[pm], 0).sum())  # inverted records count 0
    copy_bytes = int(cp.bytes[cm].sum())
    h2d_bytes = int(cp.bytes[cm & np.isin(cp.direction, (COPY_HTOD, 11))].sum())
    d2h_bytes = int(cp.bytes[cm & np.isin(cp.direction, (COPY_DTOH, 12))].sum())
    return pageable_bytes, pageable_ns, copy_bytes, h2d_bytes, d2h_bytes


def _analyze(
    ctx: _Context, windows: Pair, record: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
) -> _Window:
    """Busy/idle stats and gap attribution within a union of windows, walking the tables in chunks.

    ``record``, when given, receives ``(starts, ends, cause codes)`` of the idle gaps (clipped to the
    windows) chunk by chunk, the codes indexing :data:`_CAUSES`: what :func:`gap_causes` returns.
    """
    tl, g = ctx.tl, ctx.gpu
    ws, we = windows
    wall = iv.total(windows)
    bs, be, _btw = ctx.blocking_calls
    gaps = _walk_gaps(ctx, windows, record)
    busy_ns = wall - gaps.idle_ns
    compute_ns, copy_ns, exposed_copy = _compute_and_copies(g, windows, busy_ns)
    kernel_count, median_kernel = _kernel_stats(g, windows)
    launch_count, median_call, launch_interval = _launch_stats(ctx, windows)
    b_in = _in_windows(bs, windows) if len(bs) else np.zeros(0, bool)
    sync_count = int(np.count_nonzero(b_in))
    sync_wait = iv.total(iv.intersect(iv.union(bs[b_in], be[b_in]), windows)) if sync_count else 0
    pageable_bytes, pageable_ns, copy_bytes, h2d_bytes, d2h_bytes = _copy_bytes(tl, g.device, windows)
    return _Window(
        lo=int(ws[0]) if len(ws) else 0,
        hi=int(we[-1]) if len(we) else 0,
        wall_ns=wall,
        busy_ns=busy_ns,
        compute_ns=compute_ns,
        copy_ns=copy_ns,
        exposed_copy_ns=exposed_copy,
        idle_ns=gaps.idle_ns,
        gap_count=gaps.gap_count,
        idle_by_cause=gaps.idle_by,
        host_split=gaps.host_split,
        kernel_count=kernel_count,
        launch_count=launch_count,
        sync_count=sync_count,
        sync_wait_ns=sync_wait,
        pageable_bytes=pageable_bytes,
        pageable_copy_ns=pageable_ns,
        copy_bytes=copy_bytes,
        h2d_bytes=h2d_bytes,
        d2h_bytes=d2h_bytes,
        host_compute_gaps=gaps.host_compute_gaps,
        median_kernel_ns=median_kernel or 0.0,
        median_launch_call_ns=median_call,
        median_gap_ns=gaps.median_gap or 0.0,
        mean_gap_ns=gaps.mean_gap,
        launch_interval_ns=launch_interval,
        windows=windows,
    )


def _steady(ctx: _Context) -> Pair:
    return np.array([ctx.steady_lo], np.int64), np.array([max(ctx.steady_hi, ctx.steady_lo)], np.int64)


def _one_off_gaps(ctx: _Context, w: _Window) -> Pair:
    """The host-compute gaps of a steady state that are one-time work, not the loop's: fewer than
    MIN_ITERATIONS_FOR_WARMUP_DROP of them in a steady state of at least that many marked iterations
    (profiler steps, a repeated range) per gap (a gap that the other iterations do not repeat: a first use
    of an operator, a garbage collection, a one-time check). A loop that waits on its host work does so in
    every iteration, or every few; one or two such gaps among many iterations cannot be the loop's
    bottleneck. Iterations found in the GPU work do not count: their period can be a fraction of the
    program's iteration (the same kernels over several layers), so their number says nothing about how
    often the program's iteration repeats a gap. Empty otherwise."""
    gs, ge = w.host_compute_gaps
    n = len(gs)
    if n == 0 or n >= th.MIN_ITERATIONS_FOR_WARMUP_DROP or ctx.its.kind == REPEATED_WORK:
        return _EMPTY
    steady_iterations = (
        len(ctx.its) - ctx.its.warmup if len(ctx.its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else 0
    )
    if steady_iterations < th.MIN_ITERATIONS_FOR_WARMUP_DROP * n:
        return _EMPTY
    return gs, ge


@dataclass(slots=True)
class _SteadyState:
    """The steady state's analysis: its window, the stats (one-off gaps left out) and those gaps."""

    window: Pair
    stats: _Window
    one_off: Pair
    one_off_wall_ns: int
    """The steady state's wall time with the one-off gaps (what their share is of)."""


def _steady_state(
    ctx: _Context, record: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
) -> _SteadyState:
    """The steady state's stats as every public function reports them (the diagnosis, the metrics, the gap
    causes): an empty steady state falls back to the whole capture, and one-off host gaps
    (:func:`_one_off_gaps`) are left out of its numbers, like start-up."""
    windows = _steady(ctx)
    first: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    w = _analyze(ctx, windows, first)
    if w.wall_ns <= 0:
        windows = (np.array([ctx.capture_lo], np.int64), np.array([ctx.capture_hi], np.int64))
        first.clear()
        w = _analyze(ctx, windows, first)
    one_off = _one_off_gaps(ctx, w)
    wall_with = w.wall_ns
    if len(one_off[0]):
        pieces = iv.gaps(iv.union(*one_off), int(windows[0][0]), int(windows[1][-1]))
        first.clear()
        w = _analyze(ctx, pieces, first)
    if record is not None:
        record.extend(first)
    return _SteadyState(window=windows, stats=w, one_off=one_off, one_off_wall_ns=wall_with)
