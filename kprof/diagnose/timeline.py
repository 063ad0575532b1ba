"""Timeline diagnosis: is the time even inside a kernel, and if not, what was the host doing?

:func:`diagnose_timeline` takes a :class:`~kprof.timeline_model.Timeline` and returns
:class:`~kprof.model.Diagnosis` objects, the capture's verdict first.

How it decides (every threshold is in :mod:`kprof.thresholds`, each with its source):

1. **The steady state leads.** One-time work is told apart from the steady state. With >= 3
   iterations (profiler steps, or top-level NVTX ranges that repeat under one name once digits
   are ignored; a communication library's own ranges, NCCL's or MPI's, never count) an iteration
   runs from the start of its range to the start of the next (a repeated range may mark only part
   of its iteration: ``Optimizer.zero_grad``, the DataLoader's ``__next__``), and the steady state
   from the start of the first iteration after warm-up to when the GPU finishes the last one's
   work. Without iterations it begins at the first call that gives the GPU work after the last
   start-up (module and library loading, the first call that created the context, run-time
   compilation and autotuning ranges: :mod:`kprof.diagnose.phases`) issued before the bulk of
   the GPU work, and ends where teardown begins (unloads, context destruction and free storms
   after the last GPU work); when that work is a run of the same kernels
   (:func:`kprof.diagnose.phases.repeats`) with a period (:func:`kprof.diagnose.phases.loop_iterations`),
   the period's iterations are the loop's and their slow first ones are warm-up, as with steps.
   When the steady state is repeated work its verdict comes first and start-up and
   teardown are findings with their share of the capture; ``startup_bound`` leads only when
   nothing after start-up repeats and one-time work holds more than half of the capture.
2. **GPU-busy time.** The union of kernel, copy, memset and CUDA-graph intervals on the
   busiest GPU, against the steady state's wall time.
3. **Gap attribution.** Every idle gap is attributed to a cause from the mechanism, never
   from names of files or kernels: the GPU work that ends the gap is traced to its launch
   call through its correlation id. If that work was already queued when the GPU went idle,
   the GPU was waiting on a device-side dependency; so it was when that work was launched early
   in the gap and then sat queued for most of it (>= 1 ms, far beyond launch latency). If
   start-up calls or compilation ranges fill most of the gap, it is start-up work. If most of
   the gap lies in stretches of >= 1 ms in which the launching threads made no CUDA call, before
   the PyTorch operator that issues the work ending the gap began (time inside that operator is
   its dispatch), the host was computing something else (``host_compute_bound``: data loading,
   preprocessing, Python logic, communication); one or two such gaps in a steady state of many
   iterations are one-time work, left out of its numbers and reported as a finding. Else, if
   the host was blocked in a synchronizing call when the GPU went idle, the queue had drained
   behind a sync (``sync_bound``), or behind a blocking copy whose own transfer took most of
   the call (``transfer_bound``); otherwise the host was busy issuing work (Python, framework
   dispatch, launch calls) and the GPU ran out of it: ``host_launch_bound``. Work of zero
   length (start == end) ends no gap: the gap runs on to the next work that takes time.
4. **Shares decide.** Each cause holds a share of the steady state's wall time (transfers:
   copy time not overlapped by compute plus idle behind blocking copies). The kernels lead
   (``gpu_bound``, with the kernels ranked by their share of GPU time and the exact ``ncu``
   command for each) at >= 80% busy, or when they hold more than half of the wall and twice
   the largest cause; otherwise the largest cause leads. The others become findings with
   their share of the steady state's wall time (>= 5%) and what removing them saves at most,
   never the primary's id again. Below 80% busy a ``gpu_bound`` steady state whose largest
   idle cause holds GPU_BOUND_RECOVERABLE_SHARE of the wall is a fix (that cause's fix, with
   its bound), never "rarely idle". ``host_launch_bound`` is a rate: it needs
   MIN_LAUNCHES_FOR_LAUNCH_BOUND launches, else the verdict is inconclusive.

The capture is its first to last event of any kind: for an nsys export the loader adds the host
events it does not model (OS runtime calls from the process's start, before its first CUDA call;
:attr:`~kprof.timeline_model.Timeline.capture_start_ns`), and the profiler's own time inside the
process (``PROFILER_OVERHEAD``) is said apart. Advice is worded in the program's language told
from the capture (:func:`_language`: PyTorch, other Python, compiled CUDA), never decided by it.

Where the mechanism predicts a number, ``expect`` gives it as the target, bounded by the time
its cause holds: the GPU-busy fraction and wall time with the diagnosed cause's idle time
removed (host-caused idle for ``host_launch_bound``, idle without CUDA calls for
``host_compute_bound``, idle after syncs for ``sync_bound``). A launch-bound target keeps the
kernels' own time plus GRAPH_KERNEL_GAP_NS between consecutive kernels (measured inside CUDA
graphs on the H200): no launch path runs kernels gaplessly. No expectation predicts its current
value. For ``transfer_bound`` the copies
cannot move faster than the host link's peak rate: pinning and overlapping can hide them only
behind the compute there is, and when that is too little the fix leads with keeping the data on
the GPU. Expectations that cannot move (pageable bytes already 0) are left out. A ``gpu_bound``
capture gets directions only: how much a kernel fix saves is the kernel diagnosis's to say.

Memory. The tables are walked in start order a chunk of :data:`CHUNK_ROWS` rows at a time
(merging kernels, copies, memsets and graphs on the fly; sorting an index only for a table
stored out of order), and the union of GPU work, its gaps and their attribution are computed
chunk by chunk (:func:`kprof.diagnose.intervals.union_chunks`,
:class:`~kprof.diagnose.intervals.UnionCursor`). Nothing the size of a table is copied: the
diagnosis of ten million kernels adds about 100 MB to the loaded timeline.

Metric keys used in ``expect`` (each computable from a Timeline by :func:`timeline_metrics`,
on the steady state, so that ``compare`` can look them up in the *after* capture):

========================  =====================================================
``wall_ns``               steady-state wall time
``gpu_busy_ns``           union of GPU work on the busiest GPU
``gpu_busy_fraction``     ``gpu_busy_ns / wall_ns``
``gpu_idle_ns``           ``wall_ns - gpu_busy_ns``
``mean_gap_ns``           mean idle gap between GPU work
``kernel_count``          kernels in the steady state
``launch_count``          launch API calls (kernels and graphs) in the steady state
``step_ns``               median iteration time (when iterations are known)
``sync_count``            blocking synchronizing calls in the steady state
``sync_wait_ns``          host time blocked in those calls
``copy_ns``               union of copy time on the busiest GPU
``exposed_copy_ns``       copy time not overlapped by compute
``pageable_copy_bytes``   bytes copied to or from pageable host memory
``host_compute_idle_ns``  GPU idle time while the host made no CUDA call (>= 1 ms stretches)
========================  =====================================================
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose import phases
from kprof.diagnose.job import is_nccl_kernel
from kprof.diagnose.validity import damaged_timeline
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Finding,
    Subject,
    SubjectKind,
    Verdict,
    _fmt,
)
from kprof.timeline_model import (
    COPY_DTOH,
    COPY_HTOD,
    LAUNCH_COOPERATIVE,
    MEM_PAGEABLE,
    ApiCategory,
    ApiTable,
    CopyTable,
    GraphTable,
    HostOpTable,
    KernelTable,
    MemsetTable,
    RangeTable,
    Timeline,
    api_base_name,
)

Pair = tuple[np.ndarray, np.ndarray]
_EMPTY: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))

METRICS: dict[str, str] = {
    "wall_ns": "steady-state wall time",
    "gpu_busy_ns": "GPU-busy time (union of kernels, copies, memsets, graphs)",
    "gpu_busy_fraction": "GPU-busy fraction",
    "gpu_idle_ns": "GPU idle time",
    "mean_gap_ns": "mean idle gap",
    "kernel_count": "kernels",
    "launch_count": "launch calls",
    "step_ns": "median iteration time",
    "sync_count": "blocking syncs",
    "sync_wait_ns": "host time blocked in syncs",
    "copy_ns": "copy time",
    "exposed_copy_ns": "copy time not overlapped by compute",
    "pageable_copy_bytes": "bytes copied through pageable memory",
    "host_compute_idle_ns": "GPU idle time while the host made no CUDA call for >= 1 ms",
}
"""The metric keys of ``expect``, with what each means (see the module docstring)."""

_CAUSES = ("host", "sync", "copy", "startup", "device_wait", "unknown", "host_compute")


# ============================================================================ analysis

CHUNK_ROWS = 1 << 18
"""Rows handled at a time when walking the event tables (2 MB per int64 column, ~50 MB of
temporaries per chunk): the diagnosis of ten million kernels then adds about 150 MB to the
loaded timeline instead of gigabytes, no step copies a whole table, and the Python overhead of
~40 chunks per pass is negligible next to the numpy work."""


@dataclass(slots=True)
class _Rows:
    """Some rows of one event table, read in start order a chunk at a time and never copied whole.

    ``mask`` selects the rows (None: all of them); ``order`` lists the selected rows in start
    order when the table does not store them in that order (None: it does, the usual case).
    """

    starts: np.ndarray
    ends: np.ndarray
    cols: tuple[np.ndarray, ...] = ()
    mask: np.ndarray | None = None
    order: np.ndarray | None = None
    count: int = 0

    def chunks(self, size: int | None = None, with_cols: bool = True) -> Iterator[iv.Chunk]:
        """``(starts, ends, *cols)`` of the selected rows, in start order, ``size`` rows at a time."""
        if self.count == 0:
            return
        size = size or CHUNK_ROWS
        cols = self.cols if with_cols else ()
        if self.order is not None:
            for a in range(0, len(self.order), size):
                idx = self.order[a : a + size]
                yield (self.starts[idx], self.ends[idx], *(c[idx] for c in cols))
            return
        for a in range(0, len(self.starts), size):
            sl = slice(a, a + size)
            if self.mask is None:
                yield (self.starts[sl], self.ends[sl], *(c[sl] for c in cols))
                continue
            m = self.mask[sl]
            if m.any():
                yield (self.starts[sl][m], self.ends[sl][m], *(c[sl][m] for c in cols))


_NO_ROWS = _Rows(starts=np.zeros(0, np.int64), ends=np.zeros(0, np.int64))


def _rows(
    starts: np.ndarray, ends: np.ndarray, cols: tuple[np.ndarray, ...] = (), mask: np.ndarray | None = None
) -> _Rows:
    """A :class:`_Rows` over ``mask``'s rows; sorts them (an index, not a copy) only if they are out of order."""
    count = len(starts)
    if mask is not None:
        count = int(np.count_nonzero(mask))
        if count == len(starts):
            mask = None
    r = _Rows(starts=starts, ends=ends, cols=tuple(cols), mask=mask, count=count)
    if count <= 1:
        return r
    last = iv.NEG_INF
    for ch in r.chunks(with_cols=False):
        s = ch[0]
        if int(s[0]) < last or not iv.is_sorted(s):
            break
        last = int(s[-1])
    else:
        return r
    sel = np.flatnonzero(mask) if mask is not None else None
    order = np.argsort(starts if sel is None else starts[sel], kind="stable")
    if sel is not None:
        order = sel[order]
    del sel
    r.order = order.astype(np.int32) if len(starts) < 2**31 else order
    return r


def _merged(parts: Sequence[_Rows], size: int | None = None, with_cols: bool = True) -> Iterator[iv.Chunk]:
    """The rows of several tables as one stream in start order (ties: table order, then row order)."""
    live = [p for p in parts if p.count]
    if not live:
        return
    if len(live) == 1:
        yield from live[0].chunks(size, with_cols)
        return
    its = [p.chunks(size, with_cols) for p in live]
    pend: list[iv.Chunk | None] = [None] * len(live)
    done = [False] * len(live)
    while True:
        for j, it in enumerate(its):
            while not done[j] and (pend[j] is None or len(pend[j][0]) == 0):  # type: ignore[index]
                nxt = next(it, None)
                if nxt is None:
                    done[j] = True
                else:
                    pend[j] = nxt
        have = [j for j in range(len(live)) if pend[j] is not None and len(pend[j][0])]  # type: ignore[index]
        if not have:
            return
        # everything up to the earliest "last pending start" of a table with more to read is final
        bounds = [int(pend[j][0][-1]) for j in have if not done[j]]  # type: ignore[index]
        bound = min(bounds) if bounds else iv.POS_INF
        taken: list[iv.Chunk] = []
        for j in have:
            p = pend[j]
            assert p is not None
            k = len(p[0]) if bound == iv.POS_INF else int(np.searchsorted(p[0], bound, side="right"))
            if k:
                taken.append(tuple(c[:k] for c in p))
                pend[j] = tuple(c[k:] for c in p)
        if len(taken) == 1:
            yield taken[0]
            continue
        cat = [np.concatenate(cs) for cs in zip(*taken, strict=True)]
        o = np.argsort(cat[0], kind="stable")
        yield tuple(c[o] for c in cat)


@dataclass(slots=True)
class _Gpu:
    """GPU work of one device: per kind (0 kernel, 1 copy, 2 memset, 3 graph) its rows in start order."""

    device: int
    parts: dict[int, _Rows]
    lo: int
    hi: int

    def stream(self, kinds: tuple[int, ...] = (0, 1, 2, 3), with_cols: bool = True) -> Iterator[iv.Chunk]:
        """``(starts, ends, correlation)`` chunks of these kinds' work, in start order."""
        return _merged([self.parts[k] for k in kinds if k in self.parts], with_cols=with_cols)

    def has(self, *kinds: int) -> bool:
        return any(k in self.parts for k in kinds)


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

    @property
    def busy_fraction(self) -> float:
        return self.busy_ns / self.wall_ns if self.wall_ns > 0 else 0.0


class _CorrIndex:
    """Finds the API call with a correlation id (the first such row), by binary search."""

    def __init__(self, corr: np.ndarray) -> None:
        self.order: np.ndarray | None = None
        if iv.is_sorted(corr):  # the usual case: ids are handed out in call order
            self.sorted = corr
        else:
            order = np.argsort(corr, kind="stable")
            self.sorted = corr[order]
            self.order = order.astype(np.int32) if len(corr) < 2**31 else order

    def find(self, corr: np.ndarray) -> np.ndarray:
        """Row index into the API table of the call with each correlation id, or -1."""
        sc = self.sorted
        if len(sc) == 0:
            return np.full(len(corr), -1, np.int64)
        i = np.searchsorted(sc, corr)
        np.minimum(i, len(sc) - 1, out=i)
        ok = (sc[i] == corr) & (corr >= 0)
        rows = i if self.order is None else self.order[i]
        return np.where(ok, rows, -1)


REPEATED_WORK = "repeated GPU work"
"""The kind of iterations found without markers, from the period of the repeated GPU work itself."""


@dataclass(slots=True)
class _Iterations:
    """Iteration windows (profiler steps or a repeated NVTX range), sorted by start."""

    windows: Pair = _EMPTY
    kind: str = ""
    """``"profiler step"``, ``"NVTX range"`` (nsys), ``"annotation"`` (a PyTorch profiler trace's
    ``record_function``/``user_annotation`` ranges), :data:`REPEATED_WORK`, or ``""`` when none were found."""
    names: tuple[str, ...] = ()
    """Each iteration's own name, e.g. ``ProfilerStep#3`` or ``step 3``."""
    group: str = ""
    """The NVTX range name with digits masked (``step #``), what the iterations share."""
    warmup: int = 1
    """How many leading iterations are warm-up (left out of the steady state); see :func:`_warmup_count`."""
    period_launches: int = 0
    """For iterations found in the GPU work itself (kind :data:`REPEATED_WORK`), the loop's period in launches."""
    last_marked_end: int = 0
    """Where the last iteration's own range ends (0: no range, iterations found in the GPU work): the
    windows run start to next start, the last one a median period at least."""

    def __len__(self) -> int:
        return len(self.windows[0])


@dataclass(slots=True)
class _Context:
    tl: Timeline
    gpu: _Gpu
    api_index: _CorrIndex
    blocking: Pair  # union of host calls that block on the GPU
    blocking_calls: tuple[np.ndarray, np.ndarray, np.ndarray]  # start, end, is-transfer-wait, sorted by start
    startup_calls: Pair
    launch_calls: _Rows  # (start, end, correlation) of launch API calls
    other_api: _Rows
    host_ops: _Rows
    capture_lo: int
    capture_hi: int
    steady_lo: int
    steady_hi: int
    steady_reason: str
    its: _Iterations
    api_free: Pair = _EMPTY
    """Stretches of at least HOST_COMPUTE_MIN_STRETCH_NS in which the launching threads made no CUDA call."""
    startup_first_call_ns: int = 0
    """The first CUDA call of the capture when it created the context (lazy initialization), else 0."""
    startup_api_ns: int = 0
    """Time in start-up API calls (module loading, context creation, ...) before the steady state."""
    jit_ns: int = 0
    """Time in run-time compilation and autotuning ranges (JIT) before the steady state."""
    teardown_lo: int = 0
    """Where the end of the capture outside the steady state begins (``capture_hi`` when there is none)."""
    teardown_calls: int = 0
    """Teardown API calls (module unloading, context destruction, frees) in that end part."""
    repeated: bool = False
    """Whether the steady state is repeated work (iterations, or a run of the same kernels)."""
    repeat_how: str = ""
    """How the repetition was seen, in words."""
    first_cuda_ns: int = 0
    """When the capture's first CUDA call (or GPU work) began: before it the process ran without CUDA."""
    context_call: str = ""
    """The name of the first CUDA call when it created the context (``cudaMalloc``), else ``""``."""
    notes: list[str] = field(default_factory=list)

    @property
    def iterations(self) -> Pair:
        return self.its.windows


def _extent(parts: Sequence[_Rows]) -> tuple[int, int]:
    """(earliest start, latest end) over the rows."""
    lo, hi = iv.POS_INF, iv.NEG_INF
    for p in parts:
        for ch in p.chunks(with_cols=False):
            lo = min(lo, int(ch[0].min()))
            hi = max(hi, int(ch[1].max()))
    return lo, hi


def _gpu_work(tl: Timeline) -> tuple[_Gpu, list[tuple[int, int]]]:
    """The busiest GPU's work, and (device, busy ns) for every GPU when there are several."""
    tables: tuple[KernelTable | CopyTable | MemsetTable | GraphTable, ...] = (
        tl.kernels,
        tl.copies,
        tl.memsets,
        tl.graphs,
    )
    present = [(k, t) for k, t in enumerate(tables) if len(t)]
    devices: set[int] = set()
    for _, t in present:
        lo, hi = int(t.device.min()), int(t.device.max())
        devices.update((lo,) if lo == hi else np.unique(t.device).tolist())
    per_dev: list[tuple[int, int]] = []
    if len(devices) == 1:
        d0 = devices.pop()
    else:
        for d in sorted(devices):
            parts = [_rows(t.start_ns, t.end_ns, mask=t.device == d) for _, t in present]
            busy = sum(int(np.sum(b[1] - b[0])) for b in iv.union_chunks(_merged(parts)))
            per_dev.append((d, busy))
            del parts
        d0 = max(per_dev, key=lambda x: x[1])[0]
    rows = {
        k: _rows(t.start_ns, t.end_ns, (t.correlation,), None if not per_dev else t.device == d0)
        for k, t in present
    }
    rows = {k: r for k, r in rows.items() if r.count}
    lo, hi = _extent(list(rows.values()))
    return _Gpu(device=d0, parts=rows, lo=lo, hi=hi), per_dev


def _median_start(gpu: _Gpu) -> int:
    """The median start time of the GPU's work (as ``np.median``, rounded down)."""
    n = sum(p.count for p in gpu.parts.values())
    want = sorted({(n - 1) // 2, n // 2})
    got: list[int] = []
    seen = 0
    for ch in gpu.stream(with_cols=False):
        s = ch[0]
        for r in want:
            if seen <= r < seen + len(s):
                got.append(int(s[r - seen]))
        seen += len(s)
        if len(got) == len(want):
            break
    return sum(got) // len(got) if got else 0


def _normalize(name: str) -> str:
    return re.sub(r"\d+", "#", name).strip()


def _top_level(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask of intervals not contained in an earlier-starting one (per call: one thread)."""
    if len(starts) == 0:
        return np.zeros(0, bool)
    order = np.lexsort((-ends, starts))
    run_end = np.maximum.accumulate(ends[order])
    top_sorted = np.ones(len(starts), bool)
    top_sorted[1:] = starts[order][1:] >= run_end[:-1]
    out = np.zeros(len(starts), bool)
    out[order] = top_sorted
    return out


_MPI_RANGE = re.compile(r"^P?MPI_[A-Z]")
"""Ranges that nsys's MPI tracing (``-t mpi``) pushes around each MPI call (``MPI_Send``): library calls."""


def _library_ranges(r: RangeTable) -> np.ndarray:
    """Mask of the ranges a communication library pushed (NCCL annotates each collective it enqueues,
    ``ncclAllReduce``, in its own NVTX domain ``NCCL``; nsys's MPI tracing wraps each call, ``MPI_Send``):
    they mark library calls, never iterations."""
    if len(r) == 0:
        return np.zeros(0, bool)
    by_name = np.array([is_nccl_kernel(n) or bool(_MPI_RANGE.match(n)) for n in r.names] or [False], bool)
    out = by_name[r.name_id]
    if r.domain is not None and r.domains:
        by_domain = np.array([is_nccl_kernel(d) for d in r.domains] + [False], bool)  # -1: the default domain
        out |= by_domain[r.domain]
    return out


def _nested_in(a: Pair, u: Pair) -> bool:
    """Whether at least half of the intervals ``a`` lie inside the union ``u`` of other intervals."""
    i = iv.containing(u, a[0])
    inside = (i >= 0) & (a[1] <= u[1][np.maximum(i, 0)])
    return 2 * int(np.count_nonzero(inside)) >= len(a[0])


def _iterations(tl: Timeline) -> _Iterations:
    """Iteration windows: profiler steps, else the outermost repeated top-level NVTX range
    (:func:`_marked_iterations`), each from the start of its range to the start of the next one.

    A repeated range may mark only part of its iteration (``Optimizer.zero_grad`` at the top of a
    training step, the DataLoader's ``__next__``): the iteration, the loop's period, runs on to the
    next instance. The last one runs to its range's end or one median period, whichever is later.
    For profiler steps and ranges that cover their iteration this changes next to nothing.
    """
    its = _marked_iterations(tl)
    s, e = its.windows
    if len(s):
        its.last_marked_end = int(e[-1])
    if len(s) >= 2:
        period = int(np.median(np.diff(s)))
        ends = np.concatenate((s[1:], [max(int(e[-1]), int(s[-1]) + period)])).astype(np.int64)
        its.windows = (s, np.maximum(ends, s))
    return its


def _marked_iterations(tl: Timeline) -> _Iterations:
    """The ranges that mark iterations: profiler steps, else the outermost repeated top-level NVTX range.

    Candidates are the range names (digits masked) that repeat at least
    MIN_ITERATIONS_FOR_WARMUP_DROP times at the top level of one thread. Ranges pushed by a
    communication library (NCCL's, on its own thread in PyTorch DDP) are not candidates, and nor
    is a name whose instances lie (mostly) inside the instances of another candidate, whatever
    thread that one is on: an iteration is the outermost repeated range. Of the rest, the most
    repeated wins.
    """
    if len(tl.steps):
        order = np.argsort(tl.steps.start_ns, kind="stable")
        names = tuple(f"ProfilerStep#{int(n)}" for n in tl.steps.number[order])
        return _Iterations((tl.steps.start_ns[order], tl.steps.end_ns[order]), "profiler step", names)
    r = tl.ranges
    if len(r) == 0:
        return _Iterations()
    norm = [_normalize(n) for n in r.names]
    norm_id = (
        np.array([norm.index(n) for n in norm], np.int64)[r.name_id] if r.names else np.zeros(0, np.int64)
    )
    usable = ~_library_ranges(r)
    cands: list[tuple[int, Pair, str, tuple[str, ...]]] = []
    for t in np.unique(r.thread[usable]).tolist():
        m = (r.thread == t) & usable
        top = _top_level(r.start_ns[m], r.end_ns[m])
        ids = norm_id[m][top]
        s, e = r.start_ns[m][top], r.end_ns[m][top]
        raw = r.name_id[m][top]
        if len(ids) == 0:
            continue
        vals, counts = np.unique(ids, return_counts=True)
        for v, c in zip(vals.tolist(), counts.tolist(), strict=True):
            if c < th.MIN_ITERATIONS_FOR_WARMUP_DROP:
                continue
            sel = ids == v
            o = np.argsort(s[sel], kind="stable")
            names = tuple(r.names[int(i)] for i in raw[sel][o])
            cands.append((int(c), (s[sel][o], e[sel][o]), norm[int(v)], names))
    # the most repeated candidate that is not nested in another (ties: thread order, then name);
    # usually the first one tried, so the pairwise checks stay few
    unions = [iv.union(*c[1]) for c in cands]
    for j in sorted(range(len(cands)), key=lambda j: -cands[j][0]):
        a = cands[j]
        if not any(
            k != j and _nested_in(a[1], unions[k]) and not _nested_in(cands[k][1], unions[j])
            for k in range(len(cands))
        ):
            # a PyTorch profiler trace's ranges are its annotations (record_function, user_annotation), not NVTX
            return _Iterations(a[1], "NVTX range" if tl.format == "nsys" else "annotation", a[3], a[2])
    return _Iterations()


def _steady_reason(its: _Iterations) -> str:
    """How the steady state was chosen, in words: "NVTX ranges 'step 2' to 'step 6' (...)"."""
    n, k = len(its), its.warmup
    warm, first, last = its.names[0], its.names[k], its.names[-1]
    if k > 1:
        warm = (
            f"{its.names[0]} to {its.names[k - 1]}"
            if its.kind == "profiler step"
            else f"{warm!r} to {its.names[k - 1]!r}"
        )
    which = "the first" if k == 1 else f"the first {k}"
    if its.kind == REPEATED_WORK:
        return (
            f"iterations {k + 1} to {n} of the loop found in the GPU work (it repeats every "
            f"{its.period_launches:,} launches; "
            + (f"{which} left out as warm-up)" if k else "no warm-up to leave out)")
        )
    if its.kind == "profiler step":
        return f"profiler steps {first} to {last} ({n - k} steps; {which}, {warm}, left out as warm-up)"
    if len(set(its.names)) == n:
        w = warm if k > 1 else repr(warm)
        return f"{its.kind}s {first!r} to {last!r} ({n - k} iterations; {which}, {w}, left out as warm-up)"
    return f"instances {k + 1} to {n} of the {its.kind} {its.names[0]!r} ({which} left out as warm-up)"


def _warmup_count(its: _Iterations, startup: Pair) -> int:
    """Leading iterations that are warm-up: the first always (for marked iterations: the program's first
    step); then each next one while it still holds start-up work (start-up calls or compilation over >=
    MIN_FINDING_SHARE of it) or runs more than WARMUP_STEP_RATIO times the median iteration. Iterations
    found in the GPU work (:data:`REPEATED_WORK`) begin wherever the loop's period happens to start, often
    mid-capture: their first is warm-up only by those two tests. At least two iterations stay in the
    steady state."""
    s, e = its.windows
    n = len(s)
    period = np.empty(n, np.int64)
    period[:-1] = np.diff(s)
    period[-1] = max(int(e[-1] - s[-1]), int(np.median(period[:-1])))  # a range that marks the last one
    med = float(np.median(period))
    # an iteration runs from its start to the next one's (its range may cover only part of it)
    ends = s + period
    cover = iv.per_interval_overlap((s, ends), startup) if len(startup[0]) else np.zeros(n, np.int64)
    k = 0 if its.kind == REPEATED_WORK else 1
    while k < n - 2:
        slow = period[k] > th.WARMUP_STEP_RATIO * med
        setup = cover[k] >= th.MIN_FINDING_SHARE * max(int(period[k]), 1)
        if not (slow or setup):
            break
        k += 1
    return k


def _iteration_window(
    its: _Iterations, gpu: _Gpu, api: ApiTable, index: _CorrIndex, startup: Pair, cap_hi: int
) -> tuple[int, int]:
    """The steady state of a capture with iterations: from the start of the first iteration after warm-up
    (:func:`_warmup_count`, set on ``its``) to when the GPU has run what the last one launched.

    An iteration runs from the start of its range to the start of the next one (the loop's period): a
    repeated range may mark only part of its iteration (``Optimizer.zero_grad``, the DataLoader's
    ``__next__``), and the rest of a warm-up iteration, with its first-use work, lies after the range has
    ended. The last iteration runs to its range's end or one median period, whichever is later; it ends
    when the GPU has run what was launched in it (the host runs ahead of a busy GPU), capped at the end
    of the capture."""
    its.warmup = _warmup_count(its, startup)
    s, e = its.windows
    lo = int(s[its.warmup])
    period = int(np.median(np.diff(s)))
    last = max(int(e.max()), int(s[-1]) + period)
    # the last iteration's work is what was launched up to one period after its start; the window reaches
    # past that work's end only as far as the last range itself does (idle host time beyond both is
    # after the loop, not a gap of it)
    hi = min(cap_hi, max(lo, _drain_end(gpu, api, index, last, floor=its.last_marked_end or int(s[-1]))))
    return lo, hi


_WORK_CATEGORIES = (
    ApiCategory.LAUNCH,
    ApiCategory.SYNC,
    ApiCategory.COPY_SYNC,
    ApiCategory.COPY_ASYNC,
    ApiCategory.MEMSET,
)
"""API calls that give the GPU work or wait for it."""


def _first_row(starts: np.ndarray, mask: np.ndarray, invert: bool = False) -> int:
    """Row of the earliest start among the rows ``mask`` selects (``~mask`` with ``invert``), -1 if none;
    a chunk at a time (no table-sized temporary)."""
    best, row = iv.POS_INF, -1
    for a in range(0, len(starts), CHUNK_ROWS):
        m = mask[a : a + CHUNK_ROWS]
        if invert:
            m = ~m
        if not m.any():
            continue
        s = starts[a : a + CHUNK_ROWS]
        i = int(np.argmin(np.where(m, s, iv.POS_INF)))
        if int(s[i]) < best:
            best, row = int(s[i]), a + i
    return row


def _first_call_after(api: ApiTable, work_m: np.ndarray, t: int) -> int:
    """Start of the first call at or after ``t`` that gives the GPU work or waits for it (``t`` if none)."""
    row = _first_row(api.start_ns, work_m & (api.start_ns >= t))
    return int(api.start_ns[row]) if row >= 0 else t


def _all_gpu_end(tl: Timeline) -> int:
    """When the last GPU work of any device ends."""
    ends = [int(t.end_ns.max()) for t in (tl.kernels, tl.copies, tl.memsets, tl.graphs) if len(t)]
    return max(ends) if ends else iv.NEG_INF


def _jit_ranges(tl: Timeline) -> Pair:
    """Union of the ranges and host operators that compile or autotune code (:func:`phases.is_jit_name`)."""
    ss: list[np.ndarray] = []
    es: list[np.ndarray] = []
    for t in (tl.ranges, tl.host_ops):
        if len(t) and t.names:
            m = phases.jit_mask(t.names, t.name_id)
            if m.any():
                ss.append(t.start_ns[m])
                es.append(t.end_ns[m])
    if not ss:
        return _EMPTY
    return iv.union(np.concatenate(ss), np.concatenate(es))


def _api_free(api: ApiTable, launch_m: np.ndarray, lo: int, hi: int) -> Pair:
    """Stretches within [lo, hi) of at least HOST_COMPUTE_MIN_STRETCH_NS in which the threads that launch
    GPU work (all threads when none launches) made no CUDA call at all."""
    if len(api) == 0:
        return _EMPTY
    mask = None
    if launch_m.any():
        threads = np.unique(api.thread[launch_m])
        if len(threads) < len(np.unique(api.thread)):
            mask = np.isin(api.thread, threads)
    rows = _rows(api.start_ns, api.end_ns, mask=mask)
    out_s: list[np.ndarray] = []
    out_e: list[np.ndarray] = []
    for ch in iv.gap_chunks(iv.union_chunks(rows.chunks(with_cols=False))):
        gs = np.maximum(ch[0], lo)
        ge = np.minimum(ch[1], hi)
        m = (ge - gs) >= th.HOST_COMPUTE_MIN_STRETCH_NS
        if m.any():
            out_s.append(gs[m])
            out_e.append(ge[m])
    if not out_s:
        return _EMPTY
    return np.concatenate(out_s), np.concatenate(out_e)


def _drain_end(gpu: _Gpu, api: ApiTable, index: _CorrIndex, hi: int, floor: int | None = None) -> int:
    """When the GPU finishes the work issued before ``hi``: the end of every GPU op that started before
    ``hi`` or whose launch call (by correlation id) did; at least ``floor`` (default ``hi``)."""
    best = hi if floor is None else floor
    for s, e, corr in gpu.stream():
        early = s < hi
        if early.any():
            best = max(best, int(e[early].max()))
        late = ~early
        if late.any() and len(api):
            rows = index.find(corr[late])
            ok = rows >= 0
            launched = np.zeros(len(rows), bool)
            launched[ok] = api.start_ns[rows[ok]] < hi
            if launched.any():
                best = max(best, int(e[late][launched].max()))
    return best


def _kernel_labels(k: KernelTable) -> np.ndarray:
    """Per kernel, a label for its name and launch configuration (grid and block when recorded): an autotuner
    benchmarks one kernel name in several configurations, a loop runs one."""
    lab = k.name_id.astype(np.int64)
    for dims in (k.grid, k.block):
        if dims is not None:
            for c in range(3):
                lab = lab * 1_000_003 + dims[:, c]  # a hash; wrap-around on overflow is harmless
    return lab


def _loop_run(
    ctx_gpu: _Gpu, tl: Timeline, index: _CorrIndex, lo: int, hi: int
) -> tuple[int | None, float, np.ndarray | None, int]:
    """The last run of repeated GPU work within [lo, hi): ``(start, share, iteration starts, period)``.

    ``start`` is the start of the launch call of the run's first work (or of the work itself when its
    call is not traced), ``share`` its repeated share (:func:`phases.loop_start` over kernel names and
    launch configurations, CUDA graph ids and copy directions); ``(None, 0.0, None, 0)`` when nothing
    there repeats. ``iteration starts`` are when each iteration of the run begins, measured the same way
    (:func:`phases.loop_iterations`: the loop's period in launches), and ``period`` that period; None
    and 0 when the run has no steady period."""
    device = ctx_gpu.device
    parts: list[_Rows] = []
    k, g, c = tl.kernels, tl.graphs, tl.copies
    if len(k):
        m = (k.device == device) & (k.start_ns >= lo) & (k.start_ns < hi)
        parts.append(_rows(k.start_ns, k.end_ns, (_kernel_labels(k), k.correlation), m))
    if len(g):
        m = (g.device == device) & (g.start_ns >= lo) & (g.start_ns < hi)
        parts.append(_rows(g.start_ns, g.end_ns, (g.graph_id + (1 << 40), g.correlation), m))
    if len(c):
        m = (c.device == device) & (c.start_ns >= lo) & (c.start_ns < hi)
        parts.append(
            _rows(c.start_ns, c.end_ns, (c.direction.astype(np.int64) + (1 << 41), c.correlation), m)
        )
    count = sum(p.count for p in parts)
    if count == 0:
        return None, 0.0, None, 0
    labels = np.concatenate([ch[2] for ch in _merged(parts)])
    found = phases.loop_start(labels, th.REPEATED_WORK_SHARE)
    if found is None:
        return None, 0.0, None, 0
    i, share = found
    iters = phases.loop_iterations(labels[i:], th.REPEATED_WORK_SHARE)
    del labels
    want = np.array([i], np.int64) if iters is None else np.concatenate(([i], i + iters[0]))
    times = np.full(len(want), lo, np.int64)
    seen = 0
    for ch in _merged(parts):
        n = len(ch[0])
        sel = np.flatnonzero((want >= seen) & (want < seen + n))
        if len(sel):
            j = want[sel] - seen
            t = ch[0][j].astype(np.int64)
            rows = index.find(ch[3][j])
            ok = rows >= 0
            if ok.any():
                t[ok] = np.minimum(t[ok], tl.api.start_ns[rows[ok]])
            times[sel] = t
        seen += n
        if seen > want[-1]:
            break
    if iters is None:
        return int(times[0]), share, None, 0
    starts = times[1:]
    if len(starts) > 1 and not iv.is_sorted(starts):
        starts = np.maximum.accumulate(starts)  # a launch call traced out of order: keep the order found
    return int(times[0]), share, starts, iters[1]


def _created_context(tl: Timeline, row: int) -> bool:
    """Whether the API call at ``row`` (the capture's first) paid for creating the CUDA context.

    Creating a context takes 0.1 s to seconds (the corpus: 234 ms in a cudaMalloc and 305 ms in a
    cudaHostRegister on A100s, 25-30 s on a busy V100/A100 host); the same call later takes
    microseconds to milliseconds. The call created the context when its time beyond its own GPU work
    (a copy's transfer) is CONTEXT_CREATION_RATIO times the median of the other calls of that name, or,
    for the only call of its name, longer than HOST_COMPUTE_MIN_STRETCH_NS. A capture that starts
    mid-program (``--capture-range``) begins with an ordinary call, which fails this test.
    """
    api = tl.api
    dur = int(api.end_ns[row] - api.start_ns[row])
    corr = int(api.correlation[row])
    own = 0
    if corr >= 0:
        for t in (tl.copies, tl.memsets):
            if len(t):
                m = t.correlation == corr
                if m.any():
                    own += int((t.end_ns[m] - t.start_ns[m]).sum())
    excess = dur - own
    same = api.name_id == api.name_id[row]
    same[row] = False
    if not same.any():
        return excess > th.HOST_COMPUTE_MIN_STRETCH_NS
    typical = float(np.median(api.end_ns[same] - api.start_ns[same]))
    return excess > th.CONTEXT_CREATION_RATIO * max(typical, 1.0)


def _context(tl: Timeline) -> _Context:
    gpu, per_dev = _gpu_work(tl)
    api = tl.api
    cat = api.category
    # The capture's span: its first to last event of any kind. Kineto's own profiler span may start well
    # before any event: measure from the events. An nsys export's host events that the loader does not
    # model (OS runtime calls from the process's start, before any CUDA call) are in capture_start/end_ns.
    lo_candidates = [gpu.lo]
    hi_candidates = [gpu.hi]
    for t in (api, tl.ranges, tl.steps, tl.host_ops, tl.syncs):
        if len(t):
            lo_candidates.append(int(t.start_ns.min()))
            hi_candidates.append(int(t.end_ns.max()))
    if tl.format == "nsys":
        lo_candidates += [c for c in (tl.capture_start_ns,) if c is not None]
        hi_candidates += [c for c in (tl.capture_end_ns,) if c is not None]
    cap_lo, cap_hi = min(lo_candidates), max(hi_candidates)

    # blocking calls: syncs, synchronous copies, and async copies that returned only after their copy ended
    blocking_mask = (cat == ApiCategory.SYNC) | (cat == ApiCategory.COPY_SYNC)
    copy_calls = np.flatnonzero((cat == ApiCategory.COPY_SYNC) | (cat == ApiCategory.COPY_ASYNC))
    transfer_wait_rows = np.zeros(0, np.int64)
    if len(copy_calls) and len(tl.copies):
        c = tl.copies
        corder = np.argsort(c.correlation, kind="stable")
        csorted = c.correlation[corder]
        qc = api.correlation[copy_calls]
        j = np.searchsorted(csorted, qc)
        jc = np.minimum(j, max(len(csorted) - 1, 0))
        ok = (j < len(csorted)) & (csorted[jc] == qc) & (qc >= 0)
        rows = corder[jc]
        call_dur = api.end_ns[copy_calls] - api.start_ns[copy_calls]
        copy_end = np.where(ok, c.end_ns[rows], np.iinfo(np.int64).max)
        copy_dur = np.where(ok, c.end_ns[rows] - c.start_ns[rows], 0)
        returned_after_copy = api.end_ns[copy_calls] + th.CLOCK_ALIGNMENT_SLACK_NS >= copy_end
        is_async = cat[copy_calls] == ApiCategory.COPY_ASYNC
        blocking_mask[copy_calls[is_async & returned_after_copy]] = True
        tw = ok & (copy_dur >= th.BLOCKING_COPY_SHARE * np.maximum(call_dur, 1))
        transfer_wait_rows = copy_calls[tw]
    bidx = np.flatnonzero(blocking_mask)
    border = bidx[np.argsort(api.start_ns[bidx], kind="stable")]
    blocking_calls = (api.start_ns[border], api.end_ns[border], np.isin(border, transfer_wait_rows))
    blocking = iv.union(api.start_ns[bidx], api.end_ns[bidx])
    del bidx, border

    startup_mask = cat == ApiCategory.STARTUP
    first_call_ns = 0
    context_call = ""
    if len(api):
        # CUDA initializes lazily on the first runtime call of a process (a cudaMalloc, a
        # cudaHostRegister, a copy: whatever comes first; the runtime's own start-up queries such as
        # cuModuleGetLoadingMode may precede it). When the capture holds that call (the earliest
        # call that is not itself start-up, not a launch, issued before any GPU work), it created
        # the context: start-up work.
        first = _first_row(api.start_ns, startup_mask, invert=True)
        if (
            first >= 0
            and cat[first] != ApiCategory.LAUNCH
            and int(api.start_ns[first]) <= gpu.lo
            and _created_context(tl, first)
        ):
            startup_mask[first] = True
            first_call_ns = int(api.end_ns[first] - api.start_ns[first])
            context_call = api_base_name(api.names[int(api.name_id[first])])
    startup_api = iv.union(api.start_ns[startup_mask], api.end_ns[startup_mask])
    jit = _jit_ranges(tl)
    startup_calls = iv.union_many(startup_api, jit) if len(jit[0]) else startup_api
    launch_m = cat == ApiCategory.LAUNCH
    launch_calls = _rows(api.start_ns, api.end_ns, (api.correlation,), launch_m)
    other_m = ~(launch_m | blocking_mask | startup_mask)
    del blocking_mask, startup_mask
    other_api = _rows(api.start_ns, api.end_ns, mask=other_m) if other_m.any() else _NO_ROWS
    del other_m
    host_ops = _rows(tl.host_ops.start_ns, tl.host_ops.end_ns) if len(tl.host_ops) else _NO_ROWS
    api_free = _api_free(api, launch_m, cap_lo, cap_hi)
    del launch_m
    api_index = _CorrIndex(api.correlation)

    # the end of the capture: after the last GPU work and the last call that issued or waited for it,
    # calls that only release what the run created (unload, destroy, free storms) are teardown
    work_m = np.isin(cat, _WORK_CATEGORIES)
    gpu_end = _all_gpu_end(tl)
    # a sync issued after the last GPU work waits for nothing (teardown synchronizes too)
    tail_m = work_m & ((cat != ApiCategory.SYNC) | (api.start_ns < gpu_end))
    tail_lo = max(gpu_end, int(api.end_ns[tail_m].max()) if tail_m.any() else iv.NEG_INF)
    del tail_m
    n_teardown = 0
    if len(api):
        n_teardown = int(
            np.count_nonzero(phases.teardown_mask(api.names, api.name_id) & (api.start_ns >= tail_lo))
        )

    its = _iterations(tl)
    steady_lo, steady_hi, reason = cap_lo, cap_hi, "the whole capture"
    repeated, how = False, ""
    if len(its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        steady_lo, steady_hi = _iteration_window(its, gpu, api, api_index, startup_calls, cap_hi)
        if n_teardown and steady_lo < tail_lo < steady_hi:
            steady_hi = tail_lo
        reason = _steady_reason(its)
        repeated, how = True, f"{len(its)} {its.kind}s"
    else:
        started = False
        if len(startup_calls[0]):
            # the last start-up call issued before the bulk (median) of the GPU work; the steady state
            # begins with the first call that gives the GPU work after it
            mid = _median_start(gpu)
            before = startup_calls[1][startup_calls[0] < mid]
            if len(before):
                end = max(cap_lo, int(before.max()))
                steady_lo = _first_call_after(api, work_m, end)
                started = True
        # the end of the process: after the last GPU work and the last call that issued or waited for it
        # (teardown calls, or the interpreter's exit, where nsys records no CUDA call at all)
        # (an nsys capture runs to the process's exit; a PyTorch profiler trace ends when the profiler stops,
        # so there the host time after the last GPU work is the profiled program's, unless it tears down)
        ended = steady_lo < tail_lo < cap_hi and (n_teardown > 0 or tl.format == "nsys")
        if ended:
            steady_hi = tail_lo
        run_lo, share, iter_starts, period = _loop_run(gpu, tl, api_index, steady_lo, steady_hi)
        repeated = run_lo is not None
        if run_lo is not None and run_lo > steady_lo:
            # one-time GPU work before the loop (a warm-up pass, autotuning): the steady state is the loop
            steady_lo = run_lo
            started = True
        how = (
            f"{share:.0%} of its launches are of work that runs in each third of it"
            if repeated
            else "no run of the same kernels repeats"
        )
        if iter_starts is not None:
            # the loop's own iterations, found by its period: their first ones are warm-up like a profiler
            # step's (lazy loading and first-use work inside the loop's first launches); the run's launches
            # before its first full period belong to the first iteration
            iter_starts = iter_starts.copy()
            iter_starts[0] = min(int(iter_starts[0]), steady_lo)
            diffs = np.diff(iter_starts)
            last_end = int(iter_starts[-1]) + int(np.median(diffs))
            ends = np.concatenate((iter_starts[1:], [last_end]))
            its = _Iterations(
                (iter_starts, ends),
                REPEATED_WORK,
                tuple(f"iteration {j + 1}" for j in range(len(iter_starts))),
                period_launches=period,
            )
            lo2, hi2 = _iteration_window(its, gpu, api, api_index, startup_calls, cap_hi)
            steady_lo, steady_hi = max(steady_lo, lo2), min(steady_hi, max(hi2, lo2))
            reason = _steady_reason(its)
            how = f"{how}; it repeats every {period:,} launches"
        elif started:
            reason = "from the first GPU work of the loop after start-up to " + (
                "the end of its GPU work" if ended else "the end of the capture"
            )
        elif ended:
            reason = "the capture up to the end of its GPU work"
    del work_m
    before_steady = (np.array([cap_lo], np.int64), np.array([max(cap_lo, steady_lo)], np.int64))
    ctx = _Context(
        tl=tl,
        gpu=gpu,
        api_index=api_index,
        blocking=blocking,
        blocking_calls=blocking_calls,
        startup_calls=startup_calls,
        launch_calls=launch_calls,
        other_api=other_api,
        host_ops=host_ops,
        capture_lo=cap_lo,
        capture_hi=cap_hi,
        steady_lo=steady_lo,
        steady_hi=steady_hi,
        steady_reason=reason,
        its=its,
        api_free=api_free,
        startup_first_call_ns=first_call_ns,
        startup_api_ns=iv.total(iv.intersect(startup_api, before_steady)),
        jit_ns=iv.total(iv.intersect(jit, before_steady)) if len(jit[0]) else 0,
        teardown_lo=max(steady_hi, steady_lo),
        teardown_calls=n_teardown,
        repeated=repeated,
        repeat_how=how,
        first_cuda_ns=min(gpu.lo, int(api.start_ns.min()) if len(api) else gpu.lo),
        context_call=context_call,
    )
    if len(per_dev) > 1:
        others = ", ".join(f"GPU {d}: {_ms(b)} busy" for d, b in per_dev if d != gpu.device)
        ctx.notes.append(f"diagnosed GPU {gpu.device}, the busiest; {others}")
    return ctx


def _in_windows(t: np.ndarray, windows: Pair) -> np.ndarray:
    """Mask of the times that lie inside one of the windows (a union)."""
    ws, we = windows
    if len(ws) == 1:
        return (t >= ws[0]) & (t < we[0])
    return iv.containing(windows, t) >= 0


def _compact(a: np.ndarray) -> np.ndarray:
    """Non-negative int64 values as int32 when they fit (half the memory for the medians' inputs)."""
    if len(a) and int(a.max()) < 2**31 and int(a.min()) >= 0:
        return a.astype(np.int32)
    return a


def _median(parts: list[np.ndarray]) -> float | None:
    """``np.median`` of the concatenated parts (partitioned in place), None when empty."""
    n = sum(len(p) for p in parts)
    if n == 0:
        parts.clear()
        return None
    a = np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
    parts.clear()  # the caller's list: its arrays are freed before the partition
    return float(np.median(a, overwrite_input=True))


class _Distinct:
    """Counts distinct integers fed in chunks: a bitmap for dense non-negative ids, else a set of arrays."""

    def __init__(self, hi: int) -> None:
        # a bitmap of at most 64 MB; correlation ids are small dense integers in practice
        self.seen = np.zeros(hi + 1, bool) if 0 <= hi < 1 << 26 else None
        self.other: list[np.ndarray] = []

    def add(self, v: np.ndarray) -> None:
        if self.seen is not None:
            ok = (v >= 0) & (v < len(self.seen))
            self.seen[v[ok]] = True
            v = v[~ok]
        if len(v):
            self.other.append(np.unique(v))

    def count(self) -> int:
        n = int(np.count_nonzero(self.seen)) if self.seen is not None else 0
        if self.other:
            n += len(np.unique(np.concatenate(self.other)))
        return n


def _union_total(chunks: Iterator[iv.Chunk], windows: Pair) -> int:
    """Length of the union of a start-ordered stream of intervals within the windows."""
    tot = 0
    for b in iv.union_chunks(chunks):
        tot += int(iv.per_interval_overlap((b[0], b[1]), windows).sum())
    return tot


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


def _analyze(
    ctx: _Context, windows: Pair, record: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
) -> _Window:
    """Busy/idle stats and gap attribution within a union of windows, walking the tables in chunks.

    ``record``, when given, receives ``(starts, ends, cause codes)`` of the idle gaps (clipped to the
    windows) chunk by chunk, the codes indexing :data:`_CAUSES`: what :func:`gap_causes` returns.
    """
    tl, g = ctx.tl, ctx.gpu
    api = tl.api
    ws, we = windows
    wall = iv.total(windows)
    has_host = tl.has_host_trace and len(api) > 0
    bs, be, btw = ctx.blocking_calls
    blocking_slack = (ctx.blocking[0], ctx.blocking[1] + th.CLOCK_ALIGNMENT_SLACK_NS)
    cause_ix = {c: i for i, c in enumerate(_CAUSES)}
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
    free_cur = iv.UnionCursor([ctx.api_free]) if len(ctx.api_free[0]) else None
    dispatch = _LaunchingOps(tl.host_ops) if len(tl.host_ops) and tl.format == "kineto" else None
    hc_s: list[np.ndarray] = []
    hc_e: list[np.ndarray] = []
    hostish = np.array([cause_ix["host"], cause_ix["sync"], cause_ix["copy"]], np.int8)
    # ---- every idle gap of the GPU inside the windows, with the work that ends it
    for gs_all, ge_all, next_corr in iv.gap_chunks(iv.union_chunks(g.stream()), 1):
        gs, ge, src = iv.clip_to_windows(gs_all, ge_all, windows)
        if len(gs) == 0:
            continue
        glen = ge - gs
        rows = ctx.api_index.find(next_corr[src])
        del src
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
        block_ix = iv.containing(blocking_slack, gs)
        in_block = block_ix >= 0
        if len(bs):
            bi = np.searchsorted(bs, gs, side="right") - 1
            transfer = in_block & (bi >= 0) & btw[np.maximum(bi, 0)]
        else:
            transfer = np.zeros(len(gs), bool)
        # A blocking call costs the GPU only what the host could have issued instead of waiting: the gap
        # after it is the sync's (or the copy's) when the host had been blocked at least half as long as
        # the gap lasts; when the host's own work after the call is longer, the host is the limit (without
        # the sync it would still not keep ahead of the GPU).
        waited = (
            np.where(in_block, gs - ctx.blocking[0][np.maximum(block_ix, 0)], 0)
            if len(ctx.blocking[0])
            else 0
        )
        held = in_block & (np.asarray(waited) * 2 >= glen)
        del block_ix, waited
        startup = iv.per_interval_overlap((gs, ge), ctx.startup_calls) * 2 > glen
        c = np.full(len(gs), cause_ix["host"], np.int8)
        c[held & ~transfer] = cause_ix["sync"]
        c[held & transfer] = cause_ix["copy"]
        if free_cur is not None:
            # most of the gap in long stretches without any CUDA call: the host computed something else
            # (even when the gap began in a sync or a copy: its length is the host's other work)
            api_free = free_cur.overlap(gs, ge)
            hc = np.isin(c, hostish) & (api_free * 2 > glen)
            if hc.any() and dispatch is not None:
                # time inside the operator that issues the work ending the gap is that operator's dispatch
                # (PyTorch's first call of an op loads its kernels there; a CUDA graph would skip it all):
                # only the stretches without CUDA calls before that operator began are other host work
                for j in np.flatnonzero(hc & (rows >= 0)).tolist():
                    r = int(rows[j])
                    op_lo = dispatch.start_of(int(api.start_ns[r]), int(api.thread[r]))
                    if op_lo is not None and op_lo < int(ge[j]):
                        before = (np.array([gs[j]]), np.array([max(int(gs[j]), op_lo)]))
                        if int(iv.per_interval_overlap(before, ctx.api_free)[0]) * 2 <= int(glen[j]):
                            hc[j] = False
            c[hc] = cause_ix["host_compute"]
            del api_free, hc
        del rows
        c[startup] = cause_ix["startup"]
        c[queued_before & ~in_block] = cause_ix["device_wait"]
        if not has_host:
            c[:] = cause_ix["unknown"]
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
    busy_ns = wall - idle_ns
    # ---- compute and copy time (only when the GPU did more than kernels and graphs)
    compute_ns, copy_ns, exposed_copy = busy_ns, 0, 0
    if g.has(1, 2):
        compute_ns = _union_total(g.stream((0, 3), False), windows) if g.has(0, 3) else 0
        if g.has(1):
            copy_ns = _union_total(g.stream((1,), False), windows)
            # copy time not under compute: |copies or compute| - |compute|
            exposed_copy = _union_total(g.stream((0, 1, 3), False), windows) - compute_ns
    # ---- kernels in the windows
    kernel_count = 0
    kd: list[np.ndarray] = []
    for kind in (0, 3):
        if kind in g.parts:
            for ch in g.parts[kind].chunks(with_cols=False):
                m = _in_windows(ch[0], windows)
                if kind == 0:
                    kernel_count += int(np.count_nonzero(m))
                kd.append(_compact((ch[1] - ch[0])[m]))
    median_kernel = _median(kd)
    # ---- launch calls in the windows: distinct launches, call durations, intervals between them
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
    b_in = _in_windows(bs, windows) if len(bs) else np.zeros(0, bool)
    sync_count = int(np.count_nonzero(b_in))
    sync_wait = iv.total(iv.intersect(iv.union(bs[b_in], be[b_in]), windows)) if sync_count else 0
    cp = tl.copies
    pageable_bytes = 0
    pageable_ns = 0
    copy_bytes = 0
    h2d_bytes = d2h_bytes = 0
    if len(cp):
        cm = (cp.device == g.device) & _in_windows(cp.start_ns, windows)
        hk = cp.host_kind()
        pm = cm & (hk == MEM_PAGEABLE)
        pageable_bytes = int(cp.bytes[pm].sum())
        pageable_ns = int(np.maximum(cp.end_ns[pm] - cp.start_ns[pm], 0).sum())  # inverted records count 0
        copy_bytes = int(cp.bytes[cm].sum())
        h2d_bytes = int(cp.bytes[cm & np.isin(cp.direction, (COPY_HTOD, 11))].sum())
        d2h_bytes = int(cp.bytes[cm & np.isin(cp.direction, (COPY_DTOH, 12))].sum())
    return _Window(
        lo=span_lo,
        hi=span_hi,
        wall_ns=wall,
        busy_ns=busy_ns,
        compute_ns=compute_ns,
        copy_ns=copy_ns,
        exposed_copy_ns=int(exposed_copy),
        idle_ns=idle_ns,
        gap_count=gap_count,
        idle_by_cause=idle_by,
        host_split=host_split,
        kernel_count=kernel_count,
        launch_count=launch_count,
        sync_count=sync_count,
        sync_wait_ns=sync_wait,
        pageable_bytes=pageable_bytes,
        pageable_copy_ns=pageable_ns,
        copy_bytes=copy_bytes,
        h2d_bytes=h2d_bytes,
        d2h_bytes=d2h_bytes,
        host_compute_gaps=(
            (np.concatenate(hc_s).astype(np.int64), np.concatenate(hc_e).astype(np.int64)) if hc_s else _EMPTY
        ),
        median_kernel_ns=median_kernel or 0.0,
        median_launch_call_ns=median_call,
        median_gap_ns=median_gap or 0.0,
        mean_gap_ns=mean_gap,
        launch_interval_ns=launch_interval,
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


# ============================================================================ public helpers


GAP_CAUSES: tuple[str, ...] = _CAUSES
"""The causes :func:`gap_causes` gives an idle gap, as the diagnosis attributes them:

- ``host``: the host was still issuing work when the GPU ran out of it (``host_launch_bound``);
- ``host_compute``: most of the gap lies in stretches of >= 1 ms in which the launching threads made no
  CUDA call: the host computed something else (``host_compute_bound``);
- ``sync``: the queue had drained behind a blocking call (``sync_bound``);
- ``copy``: the host was blocked in a copy whose own transfer took most of the call (``transfer_bound``);
- ``startup``: one-time work: start-up calls (module loading, context creation) fill the gap
  (``startup_bound``), or host work without CUDA calls that happened in only one or two gaps of a steady
  state of many iterations (left out of the steady state's numbers);
- ``device_wait``: the work that ends the gap was already queued: a device-side dependency;
- ``unknown``: the capture has no host-side CUDA API events to attribute the gap with.
"""


@dataclass(frozen=True, slots=True, eq=False)
class GapCauses:
    """The idle gaps of the diagnosed GPU in the steady state, each with the cause the diagnosis gave it.

    ``start_ns``/``end_ns`` are the gaps (clipped to ``window``, in time order) and ``cause`` holds one
    of :data:`GAP_CAUSES` per gap. ``window`` is the steady state the diagnosis measured (None when
    the capture holds no GPU work) and ``device`` the GPU whose gaps these are (the busiest).
    """

    start_ns: np.ndarray
    end_ns: np.ndarray
    cause: np.ndarray
    window: tuple[int, int] | None = None
    device: int | None = None

    def __len__(self) -> int:
        return len(self.start_ns)

    def idle_by_cause(self) -> dict[str, int]:
        """Idle nanoseconds per cause (every cause of :data:`GAP_CAUSES`, 0 when absent)."""
        dur = self.end_ns - self.start_ns
        return {c: int(dur[self.cause == c].sum()) for c in GAP_CAUSES}

    def __repr__(self) -> str:
        idle = {c: v for c, v in self.idle_by_cause().items() if v}
        parts = ", ".join(f"{c} {_ms(v)}" for c, v in sorted(idle.items(), key=lambda kv: -kv[1]))
        return f"GapCauses({len(self):,} gaps" + (f": {parts}" if parts else "") + ")"


def gap_causes(tl: Timeline) -> GapCauses:
    """The steady state's idle GPU gaps with their causes, from the pass that the diagnosis makes.

    The same context and gap attribution as :func:`diagnose_timeline` (the busiest GPU, the same
    steady state, the whole capture when the steady state is empty), so a timeline plot labelled
    with these causes shows what the diagnosis counted: ``plot_timeline(tl, gaps=gap_causes(tl))``.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> gap_causes(Timeline(source="x", format="nsys"))
    GapCauses(0 gaps)
    """
    if tl.gpu_op_count == 0:
        empty = np.zeros(0, np.int64)
        return GapCauses(empty, empty.copy(), np.zeros(0, dtype="<U1"))
    ctx = _context(tl)
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    st = _steady_state(ctx, chunks)
    windows = st.window
    if len(st.one_off[0]):  # one-time host work inside the loop: left out of the numbers, shown as one-time
        code = np.full(len(st.one_off[0]), _CAUSES.index("startup"), np.int8)
        chunks.append((st.one_off[0], st.one_off[1], code))
        chunks.sort(key=lambda c: int(c[0][0]) if len(c[0]) else 0)
    if chunks:
        starts = np.concatenate([c[0] for c in chunks]).astype(np.int64, copy=False)
        ends = np.concatenate([c[1] for c in chunks]).astype(np.int64, copy=False)
        codes = np.concatenate([c[2] for c in chunks])
        o = np.argsort(starts, kind="stable")
        starts, ends, codes = starts[o], ends[o], codes[o]
    else:
        starts, ends, codes = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8)
    labels = np.array(GAP_CAUSES)
    return GapCauses(
        start_ns=starts,
        end_ns=ends,
        cause=labels[codes],
        window=(int(windows[0][0]), int(windows[1][-1])),
        device=ctx.gpu.device,
    )


def timeline_metrics(tl: Timeline) -> dict[str, float]:
    """The ``expect`` metrics (see :data:`METRICS`) measured on a timeline's steady state.

    Empty when the timeline holds no GPU work.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> timeline_metrics(Timeline(source="x", format="nsys"))
    {}
    """
    if tl.gpu_op_count == 0:
        return {}
    ctx = _context(tl)
    w = _steady_state(ctx).stats
    out: dict[str, float] = {
        "wall_ns": float(w.wall_ns),
        "gpu_busy_ns": float(w.busy_ns),
        "gpu_busy_fraction": w.busy_fraction,
        "gpu_idle_ns": float(w.idle_ns),
        "mean_gap_ns": w.mean_gap_ns,
        "kernel_count": float(w.kernel_count),
        "launch_count": float(w.launch_count),
        "sync_count": float(w.sync_count),
        "sync_wait_ns": float(w.sync_wait_ns),
        "copy_ns": float(w.copy_ns),
        "exposed_copy_ns": float(w.exposed_copy_ns),
        "pageable_copy_bytes": float(w.pageable_bytes),
        "host_compute_idle_ns": float(w.idle_by_cause.get("host_compute", 0)),
    }
    st = _step_times(ctx) if ctx.its.kind != REPEATED_WORK else None  # no marked step to compare
    if st is not None:
        out["step_ns"] = float(np.median(st))
    return out


def _step_times(ctx: _Context) -> np.ndarray | None:
    s, e = ctx.iterations
    if len(s) == 0:
        return None
    if len(s) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        k = ctx.its.warmup
        s, e = s[k:], e[k:]
    # an iteration's time is start-to-next-start (the loop period), the last one its own length
    period = np.empty(len(s), np.int64)
    period[:-1] = np.diff(s)
    period[-1] = e[-1] - s[-1]
    return period


# ============================================================================ formatting


def _ms(ns: float) -> str:
    """A time in ns as the one formatter of kprof prints it (ns, µs, ms or s, 3 significant digits)."""
    return _fmt(float(ns), "ns")


def _pct(x: float) -> str:
    return _fmt(float(x), "fraction")


def _bytes(b: float) -> str:
    return _fmt(float(b), "B")


PYTORCH, PYTHON, NATIVE = "pytorch", "python", "native"
_TORCH_NAME = re.compile(r"\bat::|\bc10::|^aten::|\btorch\b")


def _language(tl: Timeline) -> str:
    """What the profiled program is written in, told from the capture, for the *wording* of advice only
    (never a verdict): :data:`PYTORCH` for a PyTorch profiler trace, ATen kernels (``at::native::...``),
    ``aten::`` ranges or PyTorch's own threads (``pt_autograd_0``); :data:`PYTHON` for another Python
    process (its command is a Python interpreter: PyTorch without those signs, CuPy, Numba, JAX);
    :data:`NATIVE` for a compiled CUDA program (C, C++, Fortran)."""
    if tl.format == "kineto":
        return PYTORCH
    if any(_TORCH_NAME.search(n) for n in tl.kernels.names) or any(
        n.startswith("aten::") for n in tl.ranges.names
    ):
        return PYTORCH
    if any(t.startswith("pt_") for t in tl.threads):
        return PYTORCH
    exe = tl.command.strip().split(" ", 1)[0].rsplit("/", 1)[-1] if tl.command.strip() else ""
    if re.match(r"^(python|pypy|ipython|jupyter|torchrun|accelerate|deepspeed)", exe):
        return PYTHON
    return NATIVE


def _app(tl: Timeline) -> str | None:
    """The profiled command line for a suggested command, when the capture records it (an nsys export does;
    a PyTorch profiler trace holds only the process's name), else None (a placeholder is printed)."""
    cmd = tl.command.strip()
    if not cmd or (tl.format == "kineto" and " " not in cmd):
        return None
    return cmd


def _nsys(ctx: _Context, suffix: str, **kw: object) -> str:
    """A suggested ``nsys profile`` command, from the one command builder (kprof's own capture flags),
    writing beside the diagnosed capture (``x.sqlite`` -> ``x_<suffix>``) and profiling the recorded program."""
    out = f"{commands.report_stem(ctx.tl.source)}_{suffix}"
    return commands.nsys_command(out, program=_app(ctx.tl), **kw)


def _host_sampling(ctx: _Context) -> str:
    """Commands that sample what the host runs (CPU sampling with the one command builder, and for Python
    py-spy or torch.profiler's stacks)."""
    cmd = _nsys(ctx, "sampled", sample="process-tree", cpuctxsw="process-tree")
    app = _app(ctx.tl) or commands.PROGRAM
    if _language(ctx.tl) == NATIVE:
        return f"`{cmd}`, or `perf record -g -- {app}`"
    return f"`{cmd}`, `py-spy record -o host.svg -- {app}`, or torch.profiler with with_stack=True"


def _capture_range(ctx: _Context) -> str:
    """How to capture the loop alone, in the program's language, with the exact nsys command."""
    cmd = _nsys(ctx, "steady", cuda_profiler_range=True)
    lang = _language(ctx.tl)
    if ctx.tl.format == "kineto":
        return (
            "give torch.profiler.profile a schedule that skips start-up (schedule=torch.profiler.schedule(wait=1, "
            "warmup=2, active=5), calling prof.step() each iteration), or bracket the loop with "
            f"torch.cuda.profiler.start()/stop() and capture it with `{cmd}`"
        )
    if lang == PYTORCH:
        return f"bracket it with torch.cuda.profiler.start()/stop() and capture with `{cmd}`"
    if lang == PYTHON:
        return (
            "call cudaProfilerStart() before it and cudaProfilerStop() after it (torch.cuda.profiler.start()/stop(), "
            f"cupy.cuda.runtime.profilerStart()/profilerStop()) and capture with `{cmd}`"
        )
    return (
        "call cudaProfilerStart() before it and cudaProfilerStop() after it (cuda_profiler_api.h) and capture "
        f"with `{cmd}`"
    )


def _subject(ctx: _Context, kind: SubjectKind = SubjectKind.CAPTURE, name: str | None = None) -> Subject:
    tl = ctx.tl
    base = tl.source.rsplit("/", 1)[-1]
    return Subject(kind=kind, name=name or base, device=tl.gpu_name(ctx.gpu.device))


def _busy_evidence(w: _Window) -> Evidence:
    return Evidence(
        name="GPU-busy fraction",
        value=round(100 * w.busy_fraction, 2),
        unit="%",
        reference=f"{_ms(w.busy_ns)} busy of {_ms(w.wall_ns)} wall; >= {th.GPU_BOUND_BUSY_FRACTION:.0%} means the "
        "time is in GPU work",
        reference_value=100 * th.GPU_BOUND_BUSY_FRACTION,
        metric="gpu_busy_fraction",
    )


def _transfer_ns(w: _Window) -> int:
    """Copy time not overlapped by compute, plus GPU idle time behind blocking copies."""
    return w.exposed_copy_ns + w.idle_by_cause.get("copy", 0)


def _cause_times(w: _Window) -> dict[str, int]:
    """Time each cause holds in the window (ns): what the verdict and the findings compare."""
    idle = w.idle_by_cause
    return {
        "copy": _transfer_ns(w),
        "host": idle.get("host", 0),
        "host_compute": idle.get("host_compute", 0),
        "sync": idle.get("sync", 0),
        "startup": idle.get("startup", 0),
        "other": idle.get("device_wait", 0) + idle.get("unknown", 0),
    }


_CAUSE_IDS: dict[str, Bottleneck] = {
    "host": Bottleneck.HOST_LAUNCH_BOUND,
    "host_compute": Bottleneck.HOST_COMPUTE_BOUND,
    "sync": Bottleneck.SYNC_BOUND,
    "copy": Bottleneck.TRANSFER_BOUND,
    "startup": Bottleneck.STARTUP_BOUND,
}


@dataclass(slots=True)
class _Cover:
    """A host operator or annotated range that covers host-compute gaps."""

    name: str
    kind: str
    covered_ns: int
    """GPU idle time (in host-compute gaps) during which it ran."""
    own_ns: int
    """Its own time (union of its instances that touch those gaps)."""
    union: Pair = _EMPTY
    """Its instances that touch those gaps (a union)."""


def _host_cover(ctx: _Context, gaps: Pair) -> list[_Cover]:
    """What the host ran during the host-compute gaps, best explanation first.

    Candidates are the CPU operators (Kineto ``cpu_op``/``python_function``), annotated ranges
    (NVTX, ``record_function``) and OS runtime calls that overlap the gaps (:func:`_named_cover` leaves
    out those that issue the loop's GPU work: they contain everything). Each is
    scored by recall (the share of the gaps' time it covers) times precision (the share of its
    own time that falls in the gaps): an outer function such as ``main`` covers every gap but
    also the busy time, a nested operator is precise but covers little; the data loader's
    ``__next__`` is both.
    """
    gs, ge = gaps
    if len(gs) == 0:
        return []
    total = iv.total(gaps)
    tl = ctx.tl
    sources: list[tuple[HostOpTable | RangeTable, str, np.ndarray | None]] = []
    if len(tl.host_ops):
        sources.append((tl.host_ops, "CPU operator" if tl.format == "kineto" else "OS runtime call", None))
    r = tl.ranges
    if len(r) and r.names:
        sources.append((r, "NVTX range" if tl.format == "nsys" else "annotation", None))
    out: list[_Cover] = []
    for t, kind, leave_out in sources:
        st, en = t.start_ns, t.end_ns
        i = np.searchsorted(ge, st, side="right")  # the first gap that ends after the row starts
        ok = i < len(gs)
        ok[ok] = gs[i[ok]] < en[ok]
        if leave_out is not None:
            ok &= ~leave_out
        idx = np.flatnonzero(ok)
        del i, ok
        if len(idx) == 0:
            continue
        ids = t.name_id[idx]
        order = np.argsort(ids, kind="stable")
        idx, ids = idx[order], ids[order]
        cuts = np.flatnonzero(np.diff(ids)) + 1
        for grp in np.split(idx, cuts):
            u = iv.union(st[grp], en[grp])
            cov = iv.overlap_total(u, gaps)
            if cov > 0:
                out.append(_Cover(t.names[int(t.name_id[grp[0]])], kind, cov, iv.total(u), u))
    out.sort(
        key=lambda c: (-(c.covered_ns / total) * (c.covered_ns / max(c.own_ns, 1)), -c.covered_ns, c.name)
    )
    return out


def _named_cover(ctx: _Context, w: _Window) -> _Cover | None:
    """The operator or range that explains the host-compute idle time: the best-scored one that covers at
    least half of that time (DOMINANT_SHARE), else None (the host ran mostly untraced code).

    A range or operator inside which the host issued most of the steady state's launches (DOMINANT_SHARE)
    is the loop itself (a step range, ``main``), not what the host computes instead of issuing work: it is
    left out, whatever its name. A repeated range that marks the iterations but issues no launches (the
    DataLoader's ``__next__`` used as the iteration marker) stays a candidate."""
    return _best_cover(ctx, _host_cover(ctx, w.host_compute_gaps), w.idle_by_cause.get("host_compute", 0))


def _best_cover(ctx: _Context, cover: list[_Cover], covered_ns: int) -> _Cover | None:
    """The best of ``cover`` (sorted best first) that issued less than DOMINANT_SHARE of the steady state's
    launches, when it covers at least DOMINANT_SHARE of ``covered_ns``; else None (see :func:`_named_cover`)."""
    starts: np.ndarray | None = None
    for c in cover:
        if starts is None:
            lc = ctx.launch_calls
            parts = [
                ch[0][(ch[0] >= ctx.steady_lo) & (ch[0] < ctx.steady_hi)] for ch in lc.chunks(with_cols=False)
            ]
            starts = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        inside = int(np.count_nonzero(iv.containing(c.union, starts) >= 0)) if len(starts) else 0
        if len(starts) and inside >= th.DOMINANT_SHARE * len(starts):
            continue  # the loop itself
        return c if c.covered_ns >= th.DOMINANT_SHARE * covered_ns else None
    return None


_DATALOADER_NAME = re.compile(r"dataloader|_next_data|collate|__getitem__|dataset|fetcher", re.IGNORECASE)
_MPI_NAME = re.compile(r"^mpi_|^pmpi_", re.IGNORECASE)
_IO_NAME = re.compile(
    r"^(p?read|fread|open|fopen|stat|lstat|fstat|mmap|recv|recvfrom|recvmsg)\d*$", re.IGNORECASE
)
_WAIT_NAME = re.compile(
    r"^(pthread_cond_(timed)?wait|poll|ppoll|select|pselect|epoll_wait|sem_(timed)?wait|futex|usleep|nanosleep|sleep)",
    re.IGNORECASE,
)


def _host_compute_fix(name: str | None, lang: str = PYTORCH) -> tuple[str, str]:
    """(what the host was doing, the fix that fits it), worded by the operator or range that covers the
    idle time and the program's language. Names choose the wording only; the verdict comes from the gaps."""
    native = lang == NATIVE
    if name and _DATALOADER_NAME.search(name):
        return (
            "loading and preprocessing batches in the training process",
            "Prepare batches in parallel with the GPU: DataLoader(num_workers=N > 0 (start with 4-8 per GPU, up to the "
            "CPU cores you have), persistent_workers=True, prefetch_factor=2, pin_memory=True) and "
            ".to('cuda', non_blocking=True). If the workers cannot keep up, move the per-sample augmentation to "
            "the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI) or precompute it once.",
        )
    if name and _MPI_NAME.search(name):
        return (
            "communicating with other processes (MPI)",
            "Overlap the communication with GPU work: post non-blocking MPI_Isend/MPI_Irecv before launching the "
            "kernels and wait after them, and hand device buffers to a CUDA-aware MPI so that nothing is staged "
            "through host memory.",
        )
    if name and _IO_NAME.search(name):
        return (
            "reading input",
            "Read ahead of the GPU: load the input on a prefetch thread into a second (pinned) buffer while the GPU "
            "works on the current one, and keep it in memory or on faster storage."
            if native
            else "Read ahead of the GPU: load the input in worker processes (DataLoader num_workers > 0) or a "
            "prefetch thread, and keep it in memory or on faster storage.",
        )
    if name and _WAIT_NAME.search(name):
        return (
            "waiting for another thread or process to produce its input",
            "Make the producer keep ahead of the GPU: more producer threads or a deeper queue, or move the "
            "producer's work to the GPU."
            if native
            else "Make the producer keep ahead of the GPU: more DataLoader workers or a deeper prefetch queue, or "
            "move the producer's work to the GPU.",
        )
    what = f"running {_clip_name(name, 70)}" if name else "running host code the capture does not trace"
    if native:
        return (
            what,
            f"Take {'this work' if not name else _clip_name(name, 70)} off the GPU's critical path: do it on the GPU "
            "(a kernel instead of the host loop), or on another host thread ahead of the GPU (double-buffered, "
            "with the next launches queued before the current GPU work ends).",
        )
    return (
        what,
        f"Take {'this work' if not name else _clip_name(name, 70)} off the GPU's critical path: compute it on the GPU "
        "(torch operations on CUDA tensors instead of NumPy or Python loops), or run it ahead of the GPU on another "
        "thread or process (a prefetching queue, DataLoader workers) so that the next GPU work is queued before the "
        "current work ends.",
    )


def _findings(ctx: _Context, w: _Window, primary: Bottleneck | None) -> list[Finding]:
    """Secondary causes, each with its share of the window's wall time (>= MIN_FINDING_SHARE), largest
    first, never the primary bottleneck again."""
    out: list[Finding] = []
    wall = max(w.wall_ns, 1)
    idle = max(w.idle_ns, 1)
    times = _cause_times(w)
    texts = {
        "host": "the host was still issuing work (dispatch and launch calls) when the GPU ran out of it",
        "sync": "the queue had drained behind a blocking sync",
        "startup": "one-time work (module loading, compilation) inside the steady state",
    }
    for cause, b in _CAUSE_IDS.items():
        if b is primary:
            continue
        v = times[cause]
        if cause == "copy":
            v = max(v, w.pageable_copy_ns)
        share = v / wall
        if share < th.MIN_FINDING_SHARE:
            continue
        if cause == "copy":
            text = f"copies not overlapped by compute or waited for ({_bytes(w.copy_bytes)} copied)"
            if w.pageable_bytes:
                text += (
                    f"; {_bytes(w.pageable_bytes)} through pageable host memory ({_ms(w.pageable_copy_ns)}), "
                    "which the driver stages and which blocks the host: pin those buffers"
                )
            ev = Evidence(
                name="copy time not overlapped by compute",
                value=round(w.exposed_copy_ns / 1e6, 4),
                unit="ms",
                reference=f"plus {_ms(w.idle_by_cause.get('copy', 0))} of GPU idle behind blocking copies",
                metric="exposed_copy_ns",
            )
        elif cause == "host_compute":
            top = _named_cover(ctx, w)
            what, fix = _host_compute_fix(top.name if top else None, _language(ctx.tl))
            text = (
                f"the GPU waits while the host is {what}, with no CUDA call for >= "
                f"{_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} at a time"
                + (
                    f" (the {top.kind} {_clip_name(top.name, 70)} covers {_pct(top.covered_ns / max(v, 1))} of it)"
                    if top
                    else ""
                )
                + f". {fix}"
            )
            ev = Evidence(
                name="GPU idle while the host made no CUDA call",
                value=round(v / 1e6, 3),
                unit="ms",
                reference=f"{len(w.host_compute_gaps[0]):,} gaps of >= {_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} without "
                "a CUDA call",
                metric="host_compute_idle_ns",
            )
        else:
            text = texts[cause]
            ev = Evidence(
                name=f"idle time: {cause}",
                value=round(v / 1e3, 3),
                unit="us",
                reference=f"of {_ms(w.idle_ns)} idle",
            )
        head = f"{_pct(share)} of {w.scope} ({_ms(v)}"
        if cause != "copy":
            head += f", {_pct(v / idle)} of the GPU's idle time"
        gain = (
            f" Removing it saves up to {_ms(v)} of the {_ms(w.wall_ns)} ({_fmt(wall / max(wall - v, 1))}x at most)."
            if v < wall
            else ""
        )
        out.append(
            Finding(
                bottleneck=b,
                headline=f"{head}): {text}.{gain}".replace("..", "."),
                evidence=(ev,),
                share=min(1.0, share),
            )
        )
    out.sort(key=lambda f: -(f.share or 0))
    return out


def _one_time_findings(ctx: _Context) -> list[Finding]:
    """Start-up and the end of the capture outside the steady state, as shares of the captured wall time."""
    wall = ctx.capture_hi - ctx.capture_lo
    if wall <= 0:
        return []
    out: list[Finding] = []
    startup = max(0, ctx.steady_lo - ctx.capture_lo)
    # with iterations, start-up holds the first one; it is worth a finding only when it took longer than a
    # typical iteration by a share that matters (a capture of the steady state alone starts with an
    # ordinary warm-up step)
    periods = _step_times(ctx)
    typical = float(np.median(periods)) if periods is not None and len(periods) else 0.0
    if (startup - typical) / wall >= th.MIN_FINDING_SHARE:
        parts = _startup_parts(ctx)
        out.append(
            Finding(
                bottleneck=Bottleneck.STARTUP_BOUND,
                headline=f"Start-up: {_ms(startup)} of the {_ms(wall)} capture ({_pct(startup / wall)}) is one-time work "
                f"before the steady state{' (' + parts + ')' if parts else ''}. It is left out of the numbers above; "
                f"to profile the loop alone, {_capture_range(ctx)}.",
                evidence=(
                    Evidence(
                        name="start-up time",
                        value=round(startup / 1e6, 3),
                        unit="ms",
                        reference=f"{_pct(startup / wall)} of the {_ms(wall)} capture",
                    ),
                ),
                share=min(1.0, startup / wall),
            )
        )
    end = max(0, ctx.capture_hi - ctx.teardown_lo)
    if end / wall >= th.MIN_FINDING_SHARE:
        # a PyTorch profiler trace ends when the profiler stops, not at the process's exit: what follows the
        # loop there is the program's own work after it
        kineto = ctx.tl.format == "kineto" and not ctx.teardown_calls
        what = (
            f"teardown: {ctx.teardown_calls:,} calls that unload modules, destroy contexts or free memory"
            if ctx.teardown_calls
            else "the program's own work after the loop's last iteration, until the profiler stopped"
            if kineto
            else "host time after the loop's last GPU work with no CUDA call in it: in a whole-process capture, the "
            + ("interpreter's exit" if _language(ctx.tl) != NATIVE else "program's exit")
            + " and the driver's teardown"
        )
        out.append(
            Finding(
                bottleneck=Bottleneck.STARTUP_BOUND,
                headline=f"{'After the loop' if kineto else 'End of the process'}: {_ms(end)} of the {_ms(wall)} "
                f"capture ({_pct(end / wall)}) is one-time "
                f"work after the steady state ({what}). It is left out of the numbers above; it is not a sync or "
                "transfer problem of the loop.",
                evidence=(
                    Evidence(
                        name="time after the steady state",
                        value=round(end / 1e6, 3),
                        unit="ms",
                        reference=f"{_pct(end / wall)} of the {_ms(wall)} capture",
                    ),
                ),
                share=min(1.0, end / wall),
            )
        )
    return out


def _one_off_finding(ctx: _Context, st: _SteadyState) -> Finding:
    """One-time host work inside the steady state (:func:`_one_off_gaps`), with its share of it."""
    gs, ge = st.one_off
    n = len(gs)
    ns = int(np.sum(ge - gs))
    wall = max(st.one_off_wall_ns, 1)
    top = _best_cover(ctx, _host_cover(ctx, st.one_off), ns)
    by = f" while it ran the {top.kind} {_clip_name(top.name, 70)}" if top else ""
    its = len(ctx.its) - ctx.its.warmup
    return Finding(
        bottleneck=Bottleneck.HOST_COMPUTE_BOUND,
        headline=f"One-time host work inside the steady state: {n} gap{'s' if n != 1 else ''} of {_ms(ns)} "
        f"({_pct(ns / wall)} of it) in which the host made no CUDA call{by}, against {its:,} iterations that do not "
        "repeat it (a first use, a collection, a one-time check). It is left out of the numbers above; if it "
        "recurs every few hundred iterations, capture more of them to measure its share.",
        evidence=(
            Evidence(
                name="GPU idle in one-time host gaps",
                value=round(ns / 1e6, 3),
                unit="ms",
                reference=f"{n} gap{'s' if n != 1 else ''} in {its:,} steady iterations; "
                f"{_pct(ns / wall)} of the steady state",
            ),
        ),
        share=min(1.0, ns / wall),
    )


def _before_cuda_ns(ctx: _Context) -> int:
    """Time from the capture's start to its first CUDA call: the process ran, but not CUDA."""
    return max(0, min(ctx.first_cuda_ns, ctx.steady_lo) - ctx.capture_lo)


def _overhead_ns(ctx: _Context, lo: int, hi: int) -> int:
    """The profiler's own time inside the process (:attr:`Timeline.profiler_overhead`) within [lo, hi)."""
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in ctx.tl.profiler_overhead if a < hi and b > lo)


def _own_before_cuda_ns(ctx: _Context) -> tuple[int, int]:
    """(the program's own time before its first CUDA call, the profiler's own time in that stretch)."""
    pre = _before_cuda_ns(ctx)
    prof = _overhead_ns(ctx, ctx.capture_lo, ctx.capture_lo + pre) if pre else 0
    return pre - prof, prof


def _startup_parts(ctx: _Context) -> str:
    """What start-up holds, in words: "context creation 234 ms, module loading 40 ms, compilation 2 s, ..."."""
    parts = []
    # parts too small to matter go unsaid
    least = th.MIN_FINDING_SHARE * max(0, ctx.steady_lo - ctx.capture_lo)
    pre = _before_cuda_ns(ctx)
    if pre >= least and pre > 0:
        _, prof = _own_before_cuda_ns(ctx)
        parts.append(
            f"the process before its first CUDA call {_ms(pre)}"
            + (f" ({_ms(prof)} of it the profiler's own set-up)" if prof >= least and prof > 0 else "")
        )
    if ctx.startup_first_call_ns >= least and ctx.startup_first_call_ns > 0:
        call = f" ({ctx.context_call})" if ctx.context_call else ""
        parts.append(
            f"the first CUDA call{call}, which created the context, {_ms(ctx.startup_first_call_ns)}"
        )
    rest = ctx.startup_api_ns - ctx.startup_first_call_ns
    if rest >= least and rest > 0:
        parts.append(f"module loading and other start-up calls {_ms(rest)}")
    if ctx.jit_ns >= least and ctx.jit_ns > 0:
        parts.append(f"run-time compilation and autotuning {_ms(ctx.jit_ns)}")
    if len(ctx.its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP and ctx.its.warmup:
        k = ctx.its.warmup
        parts.append(
            ("the loop's first iteration" if k == 1 else f"the loop's first {k} iterations")
            if ctx.its.kind == REPEATED_WORK
            else f"the first iteration ({ctx.its.names[0]})"
            if k == 1
            else f"the first {k} iterations ({ctx.its.names[0]} to {ctx.its.names[k - 1]})"
        )
    return ", ".join(parts)


def _confidence(share: float, w: _Window, has_host: bool, extra: str) -> Confidence:
    v = 0.5 + 0.45 * min(1.0, max(0.0, (share - 0.5) / 0.5))
    if not has_host:
        v = min(v, 0.5)
    if w.gap_count < 10 and w.kernel_count < 10:
        v = min(v, 0.6)
    return Confidence(value=round(v, 2), would_raise=extra)


# ============================================================================ rules


def _no_gpu_work(tl: Timeline) -> Diagnosis:
    base = tl.source.rsplit("/", 1)[-1]
    missing = "no kernel, copy, memset or CUDA graph activity"
    again = commands.nsys_command(f"{commands.report_stem(tl.source)}_traced", program=_app(tl))
    if tl.counts.get("cuda_profiler_range"):
        what = (
            f"{missing}: it is a CUPTI range-profiler trace ({tl.counts['cuda_profiler_range']} "
            "cuda_profiler_range events hold counters, not kernel timings)"
        )
        nxt = (
            "Capture a timeline instead: torch.profiler.profile(activities=[ProfilerActivity.CPU, "
            f"ProfilerActivity.CUDA]) without the CUPTI range profiler, or `{again}`."
        )
    elif tl.format == "nsys" and not tl.has_host_trace:
        what = f"{missing} and no CUDA API calls: the capture did not trace CUDA"
        nxt = f"Re-capture with CUDA tracing on: `{again}`."
    elif len(tl.api):
        what = f"{missing}, although the host made {len(tl.api):,} CUDA API calls"
        nxt = (
            f"Re-capture with GPU activity recorded: `{again}`, or torch.profiler with ProfilerActivity.CUDA; check "
            "that the profiled region actually runs GPU work."
        )
    else:
        what = f"{missing} and no CUDA API calls"
        nxt = (
            f"Re-capture with GPU activity recorded: `{again}`, or "
            "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])."
        )
    ev = [
        Evidence(name="GPU operations", value=0, reference="kernels + copies + memsets + graph launches"),
        Evidence(name="CUDA API calls", value=len(tl.api)),
    ]
    if len(tl.host_ops):
        ev.append(Evidence(name="CPU operators", value=len(tl.host_ops)))
    return Diagnosis(
        subject=Subject(kind=SubjectKind.CAPTURE, name=base, device=tl.gpu_name()),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"Nothing to measure on the GPU: the capture holds {what}.",
        evidence=tuple(ev),
        mechanism="GPU-busy time cannot be measured without GPU activity records; the host side alone does not "
        "say whether the GPU was idle or simply not traced.",
        confidence=Confidence(value=0.9, would_raise="a capture with GPU activity (kernels) recorded"),
        next_step=nxt,
    )


@dataclass(slots=True)
class _Comm:
    """NCCL collective kernels in the steady state: GPU time, launches, share of GPU time."""

    ns: float = 0.0
    launches: int = 0
    share: float = 0.0


def _ncu_commands(
    ctx: _Context, w: _Window
) -> tuple[list[Evidence], list[str], list[tuple[str, float, str]], _Comm]:
    """Top compute kernels by share of GPU time in the steady state, with an ncu command each, and the
    NCCL kernels' time apart.

    NCCL collective kernels are communication, not compute to profile with ncu: a collective runs
    until the last rank joins it, so its duration holds the wait for the other ranks (and ncu's
    replay of one rank's collective would deadlock or time the wait). They are left out of the
    ranking and the commands and reported as their share of GPU time.
    """
    tl = ctx.tl
    k = tl.kernels
    ev: list[Evidence] = []
    cmds: list[str] = []
    tops: list[tuple[str, float, str]] = []
    """(short name, share of GPU time, full name) of the top compute kernels."""
    if len(k) == 0:
        return ev, cmds, tops, _Comm()
    lo, hi = ctx.steady_lo, ctx.steady_hi
    # launches before the steady state, by short name (what ncu's -k regex counts)
    first_iter_end = int(ctx.iterations[1][0]) if len(ctx.iterations[0]) else lo
    warm_end = max(lo, first_iter_end) if len(ctx.iterations[0]) else lo
    # per kernel name, in one pass over the table: GPU time and launches in the steady state (and on
    # the whole device, used when the steady state holds none), launches during warm-up, cooperative
    nn = max(len(k.names), 1)
    time_steady = np.zeros(nn)
    time_all = np.zeros(nn)
    n_steady = np.zeros(nn, np.int64)
    n_all = np.zeros(nn, np.int64)
    n_warm = np.zeros(nn, np.int64)
    coop = np.zeros(nn, bool)
    for a in range(0, len(k), CHUNK_ROWS):
        sl = slice(a, a + CHUNK_ROWS)
        ids, s = k.name_id[sl], k.start_ns[sl]
        dur = (k.end_ns[sl] - s).astype(np.float64)
        on = k.device[sl] == ctx.gpu.device
        st = on & (s >= lo) & (s < hi)
        time_steady += np.bincount(ids[st], weights=dur[st], minlength=nn)
        n_steady += np.bincount(ids[st], minlength=nn)
        time_all += np.bincount(ids[on], weights=dur[on], minlength=nn)
        n_all += np.bincount(ids[on], minlength=nn)
        n_warm += np.bincount(ids[on & (s < warm_end)], minlength=nn)
        if k.launch_type is not None:
            coop[ids[np.isin(k.launch_type[sl], LAUNCH_COOPERATIVE)]] = True
    per_name, n_launches = (time_steady, n_steady) if n_steady.any() else (time_all, n_all)
    total_gpu = max(float(w.busy_ns), float(per_name.sum()), 1.0)
    is_comm = np.array([is_nccl_kernel(n) for n in k.names] or [False], bool)
    comm_ns = float(per_name[is_comm].sum())
    comm = _Comm(ns=comm_ns, launches=int(n_launches[is_comm].sum()), share=min(1.0, comm_ns / total_gpu))
    compute = np.where(is_comm, 0.0, per_name)
    order = np.argsort(-compute, kind="stable")[: th.TOP_KERNELS]
    app = tl.command if " " in tl.command.strip() else "<your command>"
    short = k.short_names or k.names
    seen_cmd: set[str] = set()
    for i in order.tolist():
        if compute[i] <= 0:
            continue
        name = k.names[i]
        sname = short[i]
        share = float(per_name[i]) / total_gpu
        tops.append((sname, share, name))
        shown = sname if sum(1 for x in short if x == sname) == 1 else _clip_name(name)
        ev.append(
            Evidence(
                name=f"GPU time share: {shown}",
                value=round(100 * share, 1),
                unit="%",
                reference=f"{int(n_launches[i]):,} launches, {_ms(per_name[i])} in the steady state",
                metric="gpu_time_share",
            )
        )
        same_short = [j for j, x in enumerate(short) if x == sname]
        if len(same_short) == 1:
            regex = "regex:^" + _rx(sname) + "$"
            base = ""
            match_ids = same_short
        else:
            # several kernels share the base name: match the demangled name by a prefix unique to this one
            prefix = _unique_prefix(name, [k.names[j] for j in same_short if j != i])
            regex = "regex:^" + _rx(prefix)
            base = " --kernel-name-base demangled"
            match_ids = [j for j, x in enumerate(k.names) if x.startswith(prefix)]
        skip = max(1, int(n_warm[match_ids].sum()))
        # Application replay only for cooperative launches (CUPTI launchType 2/3), never guessed
        # from the grid shape. Kernel replay saves the device memory a kernel writes and restores
        # it before every pass, so a persistent kernel that loops over a work queue in global
        # memory replays correctly; a grid of exactly 1-4x the SM count (cuBLAS's nvjet GEMMs
        # launch 132 blocks on an H200) is no evidence of anything else. A cooperative launch
        # synchronizes the whole grid, which kernel replay breaks (DESIGN.md); application replay
        # reruns the program once per pass instead, far slower, so it is kept for those.
        out = f"kprof_{len(cmds) + 1}_" + re.sub(r"[^A-Za-z0-9_]+", "_", sname)[:40]
        cmd = commands.ncu_command(  # kprof's capture flags, as `kprof profile ncu` runs them
            regex,
            out,
            exact=False,
            program=app,
            launch_skip=skip,
            kernel_name_base="demangled" if base else None,
            replay_mode="application" if coop[i] else None,
        )
        if cmd not in seen_cmd:
            seen_cmd.add(cmd)
            cmds.append(cmd)
    return ev, cmds, tops, comm


def _rx(s: str) -> str:
    """A regex matching ``s`` literally, readable in a shell (spaces left unescaped)."""
    return re.escape(s).replace("\\ ", " ")


def _clip_name(name: str, n: int = 90) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def _unique_prefix(name: str, others: list[str]) -> str:
    """The shortest prefix of ``name`` (in steps of 10 characters) that no other name starts with."""
    for cut in range(20, len(name) + 10, 10):
        pre = name[:cut]
        if not any(o.startswith(pre) for o in others):
            return pre
    return name


def _comm_evidence(comm: _Comm) -> Evidence:
    return Evidence(
        name="GPU time in NCCL collectives",
        value=round(100 * comm.share, 1),
        unit="%",
        reference=f"{comm.launches:,} launches, {_ms(comm.ns)} in the steady state; communication, left out of "
        "the ncu commands: a collective runs until the last rank joins, so its time includes waiting",
    )


def _comm_finding(comm: _Comm) -> Finding:
    return Finding(
        bottleneck=Bottleneck.COMMUNICATION_BOUND,
        headline=f"{_pct(comm.share)} of the GPU time ({_ms(comm.ns)}) is in NCCL collective kernels: a "
        "collective runs until every rank has joined it, so this time is transfer plus waiting for the "
        "slowest rank, which one rank's capture cannot tell apart.",
        evidence=(_comm_evidence(comm),),
        share=comm.share,
    )


_ELEMENTWISE = re.compile(r"(?<!distribution_)elementwise_kernel")
_NOT_OPS = {"aunary", "bunary", "cuda", "unary", "binary", "opmath", "cudafunctoronself", "cudafunctor"}


def _elementwise_op(name: str) -> str | None:
    """The operation of a PyTorch elementwise kernel, from its template arguments (``CUDAFunctor_add`` ->
    ``add``, ``MulFunctor`` -> ``mul``, ``sin_kernel_cuda`` -> ``sin``), for wording only; None when the name
    is not an elementwise kernel's or names no operation."""
    if not _ELEMENTWISE.search(name):
        return None
    m = re.search(r"CUDAFunctor(?:OnSelf)?_(\w+?)<", name)
    if m:
        return m[1].lower()
    ops = [f for f in re.findall(r"(\w+?)Functor<", name) if f.lower() not in _NOT_OPS]
    if ops:
        return ops[-1].split("::")[-1].lower()
    m = re.search(r"native::(\w+?)_kernel_cuda", name) or re.search(r"native::(\w+?)CUDAKernelImpl", name)
    return m[1].lower() if m else "elementwise"


_GEMM = re.compile(r"nvjet|gemm|xmma|cutlass|wgmma|cublas|matmul|_mm_", re.IGNORECASE)


def _gpu_bound_fix(ctx: _Context, w: _Window, tops: list[tuple[str, float, str]]) -> str:
    """The one change that fits the kernels holding the GPU time (names choose the wording, never the verdict)."""
    busy = f"the GPU is busy {_pct(w.busy_fraction)} of {w.scope}"
    if not tops:
        return f"Nothing to change at the timeline level: {busy}. The kernel profile (next step) says what limits them."
    lang = _language(ctx.tl)
    ew = [(op, sh) for _, sh, full in tops if (op := _elementwise_op(full)) is not None]
    ew_share = sum(sh for _, sh in ew)
    if ew_share >= th.DOMINANT_SHARE and len(ew) >= 2:
        ops = ", ".join(dict.fromkeys(op for op, _ in ew))
        how = (
            "torch.compile on the function that runs them"
            if lang in (PYTORCH, PYTHON)
            else "one kernel that does all of them per element"
        )
        return (
            f"Nothing to change at the timeline level: {busy}, and {_pct(ew_share)} of its GPU time is in elementwise "
            f"kernels ({ops}), each of which reads and writes whole tensors through DRAM: they are memory-bound, "
            f"so no tuning of one kernel beats DRAM bandwidth. Fuse the chain ({how}) so each tensor crosses DRAM "
            "once instead of once per operation; the kernel profile (next step) confirms how close each kernel "
            "already is to the DRAM roof."
        )
    name, share, full = tops[0]
    if _GEMM.search(full) and share >= th.DOMINANT_SHARE:
        return (
            f"Nothing to change at the timeline level: {busy}, {_pct(share)} of it in the matrix multiply {name}. "
            "Its kernel profile (next step) says whether it is at its tensor-core roof; if it is, only less work "
            "speeds it up: a lower precision where the accuracy allows (BF16, or FP8 on Hopper), or smaller or "
            "fewer multiplies."
        )
    return (
        f"Nothing to change at the timeline level: {busy}, {_pct(share)} of it in {name}. Its kernel profile (next "
        "step) says what limits it and what to change."
    )


def _idle_cause_text(ctx: _Context, w: _Window, cause: str) -> tuple[str, str, str, str]:
    """(what the GPU waited for, the fix, the metric that falls, its label) for the largest idle cause of a
    steady state whose kernels still lead."""
    if cause == "host_compute":
        top = _named_cover(ctx, w)
        what, fix = _host_compute_fix(top.name if top else None, _language(ctx.tl))
        return (
            f"the host was {what} without a CUDA call for >= {_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} at a time",
            fix,
            "host_compute_idle_ns",
            "GPU idle time while the host makes no CUDA call",
        )
    if cause == "sync":
        return (
            "the host had blocked on the GPU (a sync drained the queue) and then issued the next work",
            "Take the blocking call out of the loop: " + _sync_fix(ctx)[0],
            "gpu_idle_ns",
            "GPU idle time",
        )
    if cause == "copy":
        return (
            "the host was blocked in a copy",
            "Copy asynchronously from pinned memory, off the compute stream, ahead of its use.",
            "gpu_idle_ns",
            "GPU idle time",
        )
    if cause == "startup":
        return (
            "the host loaded modules or compiled code",
            "Move the one-time loading or compilation before the loop (warm up once).",
            "gpu_idle_ns",
            "GPU idle time",
        )
    return (
        "the host was still issuing the next work",
        "Issue the work ahead of the GPU: fewer, larger launches (a CUDA graph of the loop body, fused kernels).",
        "gpu_idle_ns",
        "GPU idle time",
    )


def _diag_gpu_bound(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    ev_k, cmds, tops, comm = _ncu_commands(ctx, w)
    graph_ns = (
        iv.total(iv.intersect(iv.union(ctx.tl.graphs.start_ns, ctx.tl.graphs.end_ns), _steady(ctx)))
        if len(ctx.tl.graphs)
        else 0
    )
    # the largest cause of idle time, and whether removing it is worth a fix (the kernels lead below
    # GPU_BOUND_BUSY_FRACTION only by holding more than half of the wall and twice that cause)
    idle = {k: v for k, v in w.idle_by_cause.items() if k not in ("device_wait", "unknown")}
    cause = max(idle, key=lambda k: idle[k]) if idle else ""
    cause_ns = idle.get(cause, 0)
    recover = (
        w.busy_fraction < th.GPU_BOUND_BUSY_FRACTION
        and cause_ns >= th.GPU_BOUND_RECOVERABLE_SHARE * max(w.wall_ns, 1)
    )
    if w.busy_fraction >= th.GPU_BOUND_BUSY_FRACTION:
        busy_ev = _busy_evidence(w)
    else:
        compute = max(0, w.busy_ns - w.exposed_copy_ns)
        busy_ev = dataclasses.replace(
            _busy_evidence(w),
            reference=f"{_ms(w.busy_ns)} busy of {_ms(w.wall_ns)} wall; below {_pct(th.GPU_BOUND_BUSY_FRACTION)}, "
            f"but the kernels hold more than half of the wall and {_fmt(compute / max(cause_ns, 1))}x the largest "
            "idle cause",
        )
    evidence = [busy_ev]
    graph_share = graph_ns / max(w.busy_ns, 1)
    if graph_share >= th.MIN_FINDING_SHARE:
        evidence.append(
            Evidence(
                name="CUDA graph time",
                value=round(100 * graph_share, 1),
                unit="%",
                reference="of GPU-busy time; kernels inside graphs traced whole are not listed one by one",
            )
        )
    if comm.ns > 0:
        evidence.append(_comm_evidence(comm))
    cause_what = cause_fix = cause_metric = cause_label = ""
    if recover:
        cause_what, cause_fix, cause_metric, cause_label = _idle_cause_text(ctx, w, cause)
        evidence.append(
            Evidence(
                name=f"GPU idle while {cause_what.split(' without')[0]}",
                value=round(cause_ns / 1e6, 3),
                unit="ms",
                reference=f"{_pct(cause_ns / max(w.wall_ns, 1))} of {w.scope}, {_pct(cause_ns / max(w.idle_ns, 1))} "
                "of its idle time: recoverable",
                metric=cause_metric if cause_metric == "host_compute_idle_ns" else None,
            )
        )
    evidence += ev_k[:2]
    if tops:
        name, share, _ = tops[0]
        head_k = f"; the top kernel ({name}) holds {_pct(share)} of it"
        if comm.share >= th.MIN_FINDING_SHARE:
            head_k = (
                f"; NCCL collectives hold {_pct(comm.share)} of it and the top compute kernel ({name}) "
                f"{_pct(share)}"
            )
    elif comm.ns > 0:
        head_k = f"; NCCL collectives hold {_pct(comm.share)} of it"
    else:
        head_k = ""
    if graph_share >= th.DOMINANT_SHARE:
        head_k = f"; {_pct(graph_share)} of it is CUDA-graph replay"
    if recover:
        headline = (
            f"GPU-bound, with time to recover: the GPU is busy {_pct(w.busy_fraction)} of {w.scope} "
            f"({_ms(w.busy_ns)} of {_ms(w.wall_ns)}){head_k}, but it idles {_pct(cause_ns / max(w.wall_ns, 1))} of "
            f"it ({_ms(cause_ns)}) while {cause_what.split(' without')[0]}."
        )
    else:
        headline = (
            f"GPU-bound: the GPU is busy {_pct(w.busy_fraction)} of {w.scope} ({_ms(w.busy_ns)} of "
            f"{_ms(w.wall_ns)}){head_k}."
        )
    nxt_parts = []
    if cmds:
        nxt_parts.append(
            "Profile the top kernels with Nsight Compute (one command each): " + "  |  ".join(cmds)
        )
    if graph_share >= th.DOMINANT_SHARE:
        nxt_parts.append(
            f"To see the kernels inside the CUDA graphs, re-capture with `{_nsys(ctx, 'nodes', graph_nodes=True)}`."
        )
    if comm.share >= th.MIN_FINDING_SHARE:
        nxt_parts.append(
            "For the NCCL time, diagnose all ranks of the job together (`kprof diagnose rank0.sqlite "
            "rank1.sqlite ...`): the job view tells waiting for a slower rank from communication."
        )
    if not nxt_parts:
        nxt_parts.append(
            f"Capture kernel-level detail: `{_nsys(ctx, 'nodes', graph_nodes=True)}`, then ncu on the largest "
            "kernels."
        )
    findings = _findings(ctx, w, Bottleneck.GPU_BOUND)
    if comm.share >= th.MIN_FINDING_SHARE:
        findings.append(_comm_finding(comm))
        findings.sort(key=lambda f: -(f.share or 0))
    expect: list[Expectation] = []
    if recover:
        wall_after = max(w.busy_ns, w.wall_ns - cause_ns)
        idle_left = max(0, w.idle_ns - cause_ns)
        mech = (
            f"The kernels hold most of {w.scope}, but its GPU queue drains: for {_ms(cause_ns)} "
            f"({_pct(cause_ns / max(w.wall_ns, 1))} of the wall, {_pct(cause_ns / max(w.idle_ns, 1))} of the idle "
            f"time) the GPU had no work because {cause_what}. That time adds to the kernels' time instead of "
            "overlapping it."
        )
        fix = (
            f"{cause_fix} That recovers up to {_ms(cause_ns)} of the {_ms(w.wall_ns)} "
            f"({_fmt(w.wall_ns / max(wall_after, 1))}x at most). The kernels themselves come next: their profile "
            "(next step) says what limits them."
        )
        expect.append(
            Expectation(
                metric=cause_metric,
                direction=Direction.DOWN,
                value_now=cause_ns if cause_metric == "host_compute_idle_ns" else w.idle_ns,
                target=0 if cause_metric == "host_compute_idle_ns" else idle_left,
                unit="ns",
                label=cause_label,
            )
        )
        expect.append(
            Expectation(
                metric="gpu_busy_fraction",
                direction=Direction.UP,
                value_now=round(w.busy_fraction, 4),
                target=round(w.busy_ns / max(wall_after, 1), 3),
                label="GPU-busy fraction (without that idle time)",
            )
        )
        expect.append(
            Expectation(
                metric="wall_ns",
                direction=Direction.DOWN,
                value_now=w.wall_ns,
                unit="ns",
                target=wall_after,
                label="steady-state wall time (without that idle time)",
            )
        )
        verdict = Verdict.FIX
    else:
        mech = (
            "The host enqueues work faster than the GPU executes it, so the queue rarely drains and the GPU runs "
            "back to back; the wall time is the sum of the kernels' durations."
            if w.busy_fraction >= th.GPU_BOUND_BUSY_FRACTION
            else f"The kernels hold most of {w.scope}; its idle time ({_pct(1 - w.busy_fraction)}) is spread over "
            f"causes none of which holds {_pct(th.GPU_BOUND_RECOVERABLE_SHARE)} of the wall."
        )
        fix = _gpu_bound_fix(ctx, w, tops)
        # The timeline predicts no number here: how much a kernel fix saves is the kernel diagnosis's
        # to say (its own expect). What it does predict is that wall time falls with GPU-busy time.
        expect += [
            Expectation(
                metric="gpu_busy_ns",
                direction=Direction.DOWN,
                value_now=w.busy_ns,
                unit="ns",
                label="GPU-busy time (kernel work)",
            ),
            Expectation(
                metric="wall_ns",
                direction=Direction.DOWN,
                value_now=w.wall_ns,
                unit="ns",
                label="steady-state wall time (falls with GPU-busy time)",
            ),
        ]
        verdict = Verdict.HEALTHY
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.GPU_BOUND,
        verdict=verdict,
        headline=headline,
        evidence=tuple(evidence[:3]),
        mechanism=mech,
        fix=fix,
        expect=tuple(expect),
        confidence=_confidence(
            0.5 + 0.5 * (w.busy_fraction - th.GPU_BOUND_BUSY_FRACTION) / (1 - th.GPU_BOUND_BUSY_FRACTION),
            w,
            True,
            "an Nsight Compute profile of the top kernels (next step)",
        ),
        next_step=" ".join(nxt_parts),
        findings=tuple(findings),
    )


def _link_peak(ctx: _Context) -> tuple[float, str] | None:
    """Peak host<->device bytes per second per direction of the diagnosed GPU, with its GPU name, or None."""
    name = ctx.tl.gpu_name(ctx.gpu.device) or ctx.tl.gpu_name() or ""
    for key, bw in th.HOST_LINK_PEAK_BYTES_PER_S:
        if key.lower() in name.lower():
            return bw, name
    return None


@dataclass(slots=True)
class _CopyFacts:
    """How the steady state's host copies were issued and where they ran."""

    count: int = 0
    on_compute_stream: int = 0
    """Copies on a stream that also runs the steady state's kernels: a stream runs its work in order."""
    asynchronous: int = 0
    """Copies whose call returned before the copy ended: the host did not wait (``non_blocking=True``)."""
    per_direction: list[tuple[str, int, int, bool]] = field(default_factory=list)
    """(direction, bytes, copy time, mostly pageable) of host<->device copies, most time first."""


def _copy_facts(ctx: _Context) -> _CopyFacts:
    tl, out = ctx.tl, _CopyFacts()
    c = tl.copies
    if len(c) == 0:
        return out
    lo, hi, dev = ctx.steady_lo, ctx.steady_hi, ctx.gpu.device
    cm = (
        (c.device == dev)
        & (c.start_ns >= lo)
        & (c.start_ns < hi)
        & np.isin(c.direction, (COPY_HTOD, COPY_DTOH, 11, 12))
    )
    out.count = int(np.count_nonzero(cm))
    if out.count == 0:
        return out
    k = tl.kernels
    kstreams = (
        set(np.unique(k.stream[(k.device == dev) & (k.start_ns >= lo) & (k.start_ns < hi)]).tolist())
        if len(k)
        else set()
    )
    out.on_compute_stream = int(np.count_nonzero(cm & np.isin(c.stream, list(kstreams)))) if kstreams else 0
    rows = ctx.api_index.find(c.correlation[cm])
    ok = rows >= 0
    if ok.any():
        out.asynchronous = int(
            np.count_nonzero(tl.api.end_ns[rows[ok]] + th.CLOCK_ALIGNMENT_SLACK_NS < c.end_ns[cm][ok])
        )
    hk = c.host_kind()
    for d, label in ((COPY_HTOD, "host to device"), (COPY_DTOH, "device to host")):
        dm = cm & np.isin(c.direction, (d, d + 10 if d == COPY_HTOD else 12))
        if dm.any():
            ns = int(np.maximum(c.end_ns[dm] - c.start_ns[dm], 0).sum())
            pageable = int(np.count_nonzero(dm & (hk == MEM_PAGEABLE))) * 2 > int(np.count_nonzero(dm))
            out.per_direction.append((label, int(c.bytes[dm].sum()), ns, pageable))
    out.per_direction.sort(key=lambda x: -x[2])
    return out


def _overlap_fix(ctx: _Context, w: _Window, facts: _CopyFacts) -> tuple[str, str]:
    """(the overlap fix in the program's language, why the copies do not overlap today, "" when unknown)."""
    native = _language(ctx.tl) == NATIVE
    pin = (
        ""
        if not w.pageable_bytes
        else "pin the host buffers (cudaHostAlloc or cudaHostRegister), "
        if native
        else "pin the host buffers (tensor.pin_memory(), DataLoader(pin_memory=True)), "
    )
    already_async = facts.count > 0 and facts.asynchronous * 2 > facts.count and not w.pageable_bytes
    same = facts.count > 0 and facts.on_compute_stream * 2 > facts.count
    why = ""
    if same:
        why = (
            f"{facts.on_compute_stream:,} of the {facts.count:,} copies run on the same stream as the kernels, and a "
            "stream runs its work in order: each copy waits for the kernel before it and each kernel for its copy, so "
            "nothing overlaps"
            + (
                " (the calls already return at once, so the host is not what waits)"
                if already_async and not w.pageable_bytes
                else ""
            )
        )
    if native:
        fix = (
            f"{pin}issue the copy of batch i+1 with cudaMemcpyAsync on a second stream (cudaStreamCreateWithFlags("
            "&s, cudaStreamNonBlocking)) into a second device buffer, record an event after it (cudaEventRecord) and "
            "make the compute stream wait on that event (cudaStreamWaitEvent) before the kernels of batch i+1, so the "
            "copy overlaps the kernels of batch i"
        )
    else:
        nb = "" if already_async else " with non_blocking=True"
        fix = (
            f"{pin}issue the copy of batch i+1{nb} on its own stream (copy_stream = torch.cuda.Stream(); with "
            "torch.cuda.stream(copy_stream): x_next = x_host.to('cuda', non_blocking=True)) into a second buffer, "
            "then make the compute stream wait for it (torch.cuda.current_stream().wait_stream(copy_stream); "
            "x_next.record_stream(torch.cuda.current_stream())) before batch i+1 uses it, so the copy overlaps the "
            "compute of batch i"
        )
    return fix, why


def _diag_transfer(ctx: _Context, w: _Window, subject: Subject, explained: float, share: float) -> Diagnosis:
    pageable_share = w.pageable_copy_ns / max(w.copy_ns, 1)
    evidence = [
        Evidence(
            name="copy time not overlapped by compute",
            value=round(w.exposed_copy_ns / 1e6, 4),
            unit="ms",
            reference=f"{_pct(w.exposed_copy_ns / max(w.busy_ns, 1))} of GPU-busy time; compute "
            f"{_ms(w.compute_ns)}",
            metric="exposed_copy_ns",
        ),
    ]
    pageable_ev: Evidence | None = None
    if w.pageable_bytes:
        pageable_ev = Evidence(
            name="bytes through pageable host memory",
            value=w.pageable_bytes,
            unit="B",
            reference=f"{_pct(pageable_share)} of copy time is pageable; pinned memory copies at full link "
            "speed and can overlap",
            metric="pageable_copy_bytes",
        )
    bw = w.copy_bytes / max(w.copy_ns, 1)  # bytes per ns = GB/s
    # What each fix can reach. Removing the copies (keeping the data on the GPU) removes all the
    # transfer time; pinning and overlapping still has to move the bytes over the link, at best at
    # its peak rate, and can hide that only behind the compute there is to hide it behind.
    keep_wall = max(w.busy_ns - w.exposed_copy_ns, w.wall_ns - int(explained))
    link = _link_peak(ctx)
    floor_ns = 0
    floor_ev: Evidence | None = None
    if link is not None:
        floor_ns = int(max(w.h2d_bytes, w.d2h_bytes) / link[0] * 1e9)
        floor_ev = Evidence(
            name="host-link floor of these copies",
            value=round(floor_ns / 1e6, 4),
            unit="ms",
            reference=f"{_bytes(max(w.h2d_bytes, w.d2h_bytes))} one way at {link[0] / 1e9:.3g} GB/s, the "
            f"{link[1]}'s peak host-link rate per direction; compute to hide it behind: {_ms(w.compute_ns)}",
            reference_value=round(w.compute_ns / 1e6, 4),
        )
    hidden_left = max(0, floor_ns - w.compute_ns)
    overlap_wall = keep_wall + hidden_left
    only_keep = link is not None and hidden_left > 0
    # three pieces of evidence: the exposed copies, what bounds the fix (the link when only keeping the
    # data on the GPU reaches the target, else the pageable bytes), and the GPU-busy fraction
    second = (floor_ev or pageable_ev) if only_keep else (pageable_ev or floor_ev)
    if second is not None:
        evidence.append(second)
    evidence.append(_busy_evidence(w))
    headline = (
        f"Transfer-bound: copies take {_ms(w.copy_ns)} of the {_ms(w.wall_ns)} steady state "
        f"({_pct(w.copy_ns / max(w.wall_ns, 1))}), {_bytes(w.copy_bytes)} at {bw:.3g} GB/s"
        + (", from pageable memory" if pageable_share >= th.DOMINANT_SHARE else "")
        + "."
    )
    facts = _copy_facts(ctx)
    overlap_fix, why = _overlap_fix(ctx, w, facts)
    if only_keep:
        fix = (
            f"Keep the data on the GPU across iterations (allocate it there, or copy it once before the loop): only "
            f"that brings the {_ms(w.wall_ns)} steady state down to {_ms(keep_wall)}. The link needs at least {_ms(floor_ns)} for these "
            f"bytes and there is {_ms(w.compute_ns)} of compute to hide it behind, so the alternative, to "
            f"{overlap_fix}, reaches {_ms(overlap_wall)} at best."
        )
    else:
        fix = (
            f"{overlap_fix[0].upper() + overlap_fix[1:]}: that hides the copies behind the {_ms(w.compute_ns)} of "
            "compute. If the data can stay on the GPU across iterations (allocated there, or copied once before the "
            "loop), that removes the copies altogether."
        )
    expect = []
    if only_keep:
        expect.append(
            Expectation(
                metric="copy_ns",
                direction=Direction.DOWN,
                value_now=w.copy_ns,
                target=0,
                unit="ns",
                label="copy time (the data stays on the GPU)",
            )
        )
    else:
        expect.append(
            Expectation(
                metric="exposed_copy_ns",
                direction=Direction.DOWN,
                value_now=w.exposed_copy_ns,
                target=hidden_left,
                unit="ns",
                label="copy time not overlapped by compute",
            )
        )
    if w.pageable_bytes and not only_keep:
        expect.append(
            Expectation(
                metric="pageable_copy_bytes",
                direction=Direction.DOWN,
                value_now=w.pageable_bytes,
                target=0,
                unit="B",
                label="bytes copied through pageable memory",
            )
        )
    expect.append(
        Expectation(
            metric="wall_ns",
            direction=Direction.DOWN,
            value_now=w.wall_ns,
            target=keep_wall if only_keep else overlap_wall,
            unit="ns",
            label="steady-state wall time (without the copies)"
            if only_keep
            else "steady-state wall time (without exposed copies and waits in copies)",
        )
    )
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.TRANSFER_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(evidence),
        mechanism="Copies between host and GPU run on the copy engines over the host link, no faster than its peak "
        "rate"
        + (
            "; from pageable memory the driver stages them through a pinned bounce buffer and the call blocks the "
            "host, so neither the host nor the kernels proceed while the bytes move."
            if w.pageable_bytes
            else "; the host memory is already pinned, so what is left is to overlap the copies with compute or not "
            "to make them."
        )
        + (f" Here {why}." if why else "")
        + (
            " By direction: "
            + "; ".join(
                f"{d} {_bytes(b)} in {_ms(ns)} ({_fmt(b / max(ns, 1))} GB/s{', pageable' if pg else ''})"
                for d, b, ns, pg in facts.per_direction
            )
            + "."
            if len(facts.per_direction) > 1
            else ""
        ),
        fix=fix,
        expect=tuple(expect),
        confidence=_confidence(
            share,
            w,
            ctx.tl.has_host_trace,
            "a capture after the change, to see how much of the copy time is left",
        ),
        next_step=f"After the change, {_recapture(ctx)}.",
        findings=tuple(_findings(ctx, w, Bottleneck.TRANSFER_BOUND)),
    )


def _launches_per_iteration(ctx: _Context, w: _Window) -> str:
    """What the steady state launches, in words: "each of its 23 iterations launches 185 kernels, most of them
    vectorized_elementwise_kernel (104) and gemv2T_kernel (35)"; "" when it cannot be said."""
    k = ctx.tl.kernels
    if len(k) == 0 or w.kernel_count == 0:
        return ""
    m = (k.device == ctx.gpu.device) & (k.start_ns >= ctx.steady_lo) & (k.start_ns < ctx.steady_hi)
    short = k.short_names or k.names
    first: dict[str, int] = {}
    canon = np.array([first.setdefault(x, i) for i, x in enumerate(short)] or [0], np.int64)
    sid = canon[k.name_id[m]] if m.any() else np.zeros(0, np.int64)
    if len(sid) == 0:
        return ""
    ids, counts = np.unique(sid, return_counts=True)
    order = np.argsort(-counts, kind="stable")[:2]
    n_it = len(ctx.its) - ctx.its.warmup if len(ctx.its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else 0
    div = max(n_it, 1)

    def per(x: float) -> str:  # whole launches per iteration; "about" when the window's edges split one
        r = round(x / div)
        return f"{r:,}" if abs(x / div - r) < 0.05 else f"about {max(r, 1):,}"

    top = " and ".join(
        f"{_clip_name(short[int(ids[o])], 60)} ({per(float(counts[o]))})" for o in order.tolist()
    )
    if n_it:
        each = f"{ctx.its.period_launches:,}" if ctx.its.kind == REPEATED_WORK else per(float(len(sid)))
        return f"each of its {n_it:,} iterations launches {each} kernels, most of them {top}"
    return f"it launches {len(sid):,} kernels, most of them {top}"


def _diag_host(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    host_idle = w.idle_by_cause.get("host", 0)
    launch_call = w.median_launch_call_ns
    ev = [
        _busy_evidence(w),
        Evidence(
            name="median idle gap between GPU work",
            value=round(w.median_gap_ns / 1e3, 3),
            unit="us",
            reference=f"median kernel {_ms(w.median_kernel_ns)}; launch call "
            + (f"{_ms(launch_call)} measured here" if launch_call else "not traced")
            + f"; typical launch overhead {_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[0])}-"
            f"{_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[1])}",
            reference_value=th.TYPICAL_LAUNCH_OVERHEAD_NS[1] / 1e3,
            metric="mean_gap_ns",
        ),
    ]
    split = w.host_split
    biggest = max(split.items(), key=lambda kv: kv[1]) if split else ("", 0)
    if w.launch_interval_ns:
        ev.append(
            Evidence(
                name="host time per launch",
                value=round(w.launch_interval_ns / 1e3, 3),
                unit="us",
                reference=f"the GPU needs {_ms(w.median_kernel_ns)} per kernel (median): the host "
                "issues work slower than the GPU finishes it",
                reference_value=round(w.median_kernel_ns / 1e3, 3),
            )
        )
    per_launch = w.launch_interval_ns or 0
    n = w.kernel_count
    headline = (
        f"Host-bound: the GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} "
        f"({_ms(w.busy_ns)} busy of {_ms(w.wall_ns)}) because the host issues "
        f"{n:,} kernel{'s' if n != 1 else ''}"
        + (f" one every {_ms(per_launch)}" if per_launch else "")
        + f" and each runs in {_ms(w.median_kernel_ns)}."
    )
    where = {
        "launch calls": "inside the launch calls themselves",
        "CPU ops": "in framework operators (PyTorch dispatch) around the launches",
        "other CUDA calls": "in other CUDA calls",
        "untraced host time": "in untraced host code (Python, framework dispatch) between the launches"
        if _language(ctx.tl) != NATIVE
        else "in the program's own host code between the launches",
    }.get(biggest[0], "on the host")
    what = _launches_per_iteration(ctx, w)
    mech = (
        f"Each kernel is shorter than the host's time to issue the next one, so the GPU finishes and waits: "
        f"{_pct(host_idle / max(w.idle_ns, 1))} of the idle time falls where the next kernel was launched only "
        f"after the GPU had gone idle, and most of that host time is {where}."
        + (f" In the steady state {what}." if what else "")
    )
    if _language(ctx.tl) == NATIVE:
        fix = (
            "Capture the loop body once as a CUDA graph (cudaStreamBeginCapture/cudaStreamEndCapture, "
            "cudaGraphInstantiate) and replay it with one cudaGraphLaunch per iteration; alternatively fuse "
            "consecutive small kernels into one, or give each launch more work (a larger grid, a batch)."
        )
    else:
        fix = (
            "Capture the loop body as a CUDA graph (torch.compile(mode='reduce-overhead'), or torch.cuda.CUDAGraph "
            "with static input tensors) so one launch replays all its kernels; alternatively fuse the elementwise "
            "chains (torch.compile; a foreach/fused optimizer: torch.optim.SGD(foreach=True) or fused=True), or "
            "batch more work per launch."
        )
    # what the mechanism predicts: the host-caused idle time goes, the GPU work stays, and even a CUDA graph
    # spaces its kernels by the GPU's own gap (GRAPH_KERNEL_GAP_NS): never a gapless GPU
    floor = min(w.wall_ns, w.busy_ns + n * th.GRAPH_KERNEL_GAP_NS)
    wall_after = max(floor, w.wall_ns - host_idle)
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.HOST_LAUNCH_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(ev[:3]),
        mechanism=mech,
        fix=fix,
        expect=(
            Expectation(
                metric="gpu_busy_fraction",
                direction=Direction.UP,
                value_now=round(w.busy_fraction, 4),
                target=round(w.busy_ns / max(wall_after, 1), 3),
                label="GPU-busy fraction (without the host-caused idle time; kernels still "
                f"{_ms(th.GRAPH_KERNEL_GAP_NS)} apart, as in a CUDA graph)",
            ),
            Expectation(
                metric="launch_count",
                direction=Direction.DOWN,
                value_now=w.launch_count,
                label="launch calls in the steady state",
            ),
            Expectation(
                metric="wall_ns",
                direction=Direction.DOWN,
                value_now=w.wall_ns,
                unit="ns",
                target=wall_after,
                label="steady-state wall time (the kernels' own time plus "
                f"{_ms(th.GRAPH_KERNEL_GAP_NS)} between them, instead of the host-caused idle time)",
            ),
        ),
        confidence=_confidence(
            share,
            w,
            ctx.tl.has_host_trace,
            "a Python-level trace (torch.profiler with_stack=True, or nsys -s cpu sampling) "
            "showing where the host time goes"
            if _language(ctx.tl) != NATIVE
            else "CPU sampling of the host thread (nsys -s cpu) showing where the host time goes",
        ),
        next_step="Apply the fix and re-capture the same steady state ("
        + commands.timeline_after_change(ctx.tl.source, program=_app(ctx.tl))
        + "): the GPU-busy fraction should go up and the launch calls down.",
        findings=tuple(_findings(ctx, w, Bottleneck.HOST_LAUNCH_BOUND)),
    )


_SYNC_KINDS: dict[str, tuple[str, str, str]] = {
    # kind: (what blocks, in the program's terms; the PyTorch fix; the CUDA C++ fix)
    "item": (
        ".item() (aten::_local_scalar_dense: a scalar copied to the host, then a wait for the queue)",
        "keep the value on the GPU: accumulate it in a tensor and call .item() once every N steps or after the loop, "
        "and replace Python control flow on it with tensor ops (torch.where, masks); float(t), int(t), bool(t) and "
        "`if t:` sync the same way",
        "keep the value on the GPU and read it back once every N iterations or after the loop",
    ),
    "scalar_read": (
        "a scalar read back (a copy of at most 8 bytes to the host, then a wait for the queue: what .item() "
        "issues in PyTorch)",
        "keep the value on the GPU: accumulate it in a tensor and read it (.item(), float(t), bool(t), `if t:`) "
        "once every N steps or after the loop, and replace Python control flow on it with tensor ops "
        "(torch.where, masks)",
        "keep the value on the GPU and read it back once every N iterations or after the loop",
    ),
    "to_host": (
        "a copy to host memory (.cpu(), .to('cpu'), .numpy(), .tolist())",
        "copy into a pinned buffer with non_blocking=True, record a CUDA event after it and wait on that event only "
        "when the host needs the values (a step later)",
        "cudaMemcpyAsync into pinned memory (cudaHostAlloc), then cudaEventRecord and cudaEventSynchronize only "
        "where the host needs the values",
    ),
    "data_dependent": (
        "an operation whose output size depends on the data (nonzero, boolean-mask indexing, unique)",
        "give it a static size (torch.nonzero_static, multiply by the mask instead of indexing with it) so the host "
        "need not wait to learn the size",
        "bound the output size ahead of time so the host need not read it back",
    ),
    "device_sync": (
        "an explicit device synchronize (torch.cuda.synchronize(), cudaDeviceSynchronize)",
        "remove torch.cuda.synchronize() from the loop (keep one before reading a timer or the final result); to "
        "order work between streams use torch.cuda.Event and stream.wait_event, which do not block the host",
        "remove cudaDeviceSynchronize from the loop; order work with cudaEventRecord + cudaStreamWaitEvent, which "
        "do not block the host",
    ),
    "stream_sync": (
        "cudaStreamSynchronize",
        "wait on a CUDA event recorded after the work you need (torch.cuda.Event.synchronize()), issued after the "
        "next iteration's work is queued, instead of draining the stream",
        "replace cudaStreamSynchronize with cudaEventRecord after the work you need and cudaEventSynchronize after "
        "the next iteration's work is queued (or cudaStreamWaitEvent for GPU-side ordering)",
    ),
    "event_sync": (
        "an event wait (cudaEventSynchronize, event.synchronize())",
        "wait on the event later, after the next iteration's work is queued, or order with stream.wait_event",
        "move cudaEventSynchronize after the next iteration's launches, or use cudaStreamWaitEvent",
    ),
    "blocking_copy": (
        "a synchronous copy (cudaMemcpy)",
        "copy with non_blocking=True into pinned memory and wait on an event when the data is needed",
        "replace cudaMemcpy with cudaMemcpyAsync on a stream into pinned memory, and an event wait where the data "
        "is needed",
    ),
}
_ITEM_OP = re.compile(r"_local_scalar_dense|^aten::item$")
_TO_HOST_OP = re.compile(r"^aten::(to|_to_copy|copy_|cpu|numpy|tolist)$")
_DATA_DEP_OP = re.compile(r"nonzero|masked_select|unique|index|repeat_interleave")


def _sync_kinds(ctx: _Context) -> list[tuple[str, int]]:
    """What blocks the host in the steady state, as :data:`_SYNC_KINDS` keys with their counts, most first.

    A PyTorch trace names the operator that made each blocking call (``aten::_local_scalar_dense`` for
    ``.item()``); otherwise the call and the copies around it say it: a stream sync right after a copy of a
    few bytes to the host is a scalar read back (what ``.item()`` issues in PyTorch). Names choose the words
    of the fix only; the verdict comes from the gaps."""
    tl = ctx.tl
    api = tl.api
    if len(api) == 0:
        return []
    cat = api.category
    m = (api.start_ns >= ctx.steady_lo) & (api.start_ns < ctx.steady_hi)
    rows = np.flatnonzero(m & np.isin(cat, (int(ApiCategory.SYNC), int(ApiCategory.COPY_SYNC))))
    if len(rows) == 0:
        return []
    ops = _LaunchingOps(tl.host_ops) if len(tl.host_ops) and tl.format == "kineto" else None
    # small device-to-host copies in the steady state: scalars read back
    c = tl.copies
    small_d2h = 0
    if len(c):
        cm = (
            (c.start_ns >= ctx.steady_lo)
            & (c.start_ns < ctx.steady_hi)
            & np.isin(c.direction, (COPY_DTOH, 12))
        )
        small_d2h = int(np.count_nonzero(cm & (c.bytes <= 8)))
    counts: dict[str, int] = {}
    for r in rows.tolist():
        name = api_base_name(api.names[int(api.name_id[r])])
        op = ops.name_at(int(api.start_ns[r]), int(api.thread[r])) if ops is not None else None
        if op and _ITEM_OP.search(op):
            kind = "item"
        elif op and _TO_HOST_OP.search(op):
            kind = "to_host"
        elif op and _DATA_DEP_OP.search(op):
            kind = "data_dependent"
        elif name in ("cudaDeviceSynchronize", "cuCtxSynchronize"):
            kind = "device_sync"
        elif name in ("cudaEventSynchronize", "cuEventSynchronize"):
            kind = "event_sync"
        elif cat[r] == ApiCategory.COPY_SYNC:
            kind = "blocking_copy"
        elif ops is None and small_d2h * 2 >= len(rows):
            kind = "scalar_read"
        else:
            kind = "stream_sync"
        counts[kind] = counts.get(kind, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n:,} times"


def _sync_fix(ctx: _Context) -> tuple[str, str]:
    """(the fix for what blocks most, what blocks in words with counts)."""
    kinds = _sync_kinds(ctx)
    native = _language(ctx.tl) == NATIVE
    if not kinds:
        fix = _SYNC_KINDS["stream_sync"][2 if native else 1]
        return fix[0].upper() + fix[1:] + ".", "a blocking call"
    top = kinds[0][0]
    total = sum(n for _, n in kinds)
    what = "; ".join(
        f"{_SYNC_KINDS[k][0]} {_times(n)}" for k, n in kinds[:2] if n >= th.MIN_FINDING_SHARE * total
    )
    fix = _SYNC_KINDS[top][2 if native else 1]
    return fix[0].upper() + fix[1:] + ".", what


def _diag_sync(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    sync_idle = w.idle_by_cause.get("sync", 0)
    n_iter = len(ctx.iterations[0])
    steady_iters = n_iter - ctx.its.warmup if n_iter >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else 0
    per_iter = f", {_fmt(w.sync_count / steady_iters)} per iteration" if steady_iters >= 2 else ""
    fix, what = _sync_fix(ctx)
    ev = [
        _busy_evidence(w),
        Evidence(
            name="blocking syncs in the steady state",
            value=w.sync_count,
            reference=f"host blocked {_ms(w.sync_wait_ns)} in them{per_iter}; 0 needed inside a loop",
            reference_value=0,
            metric="sync_count",
        ),
        Evidence(
            name="idle time after a sync drained the queue",
            value=round(sync_idle / 1e3, 3),
            unit="us",
            reference=f"{_pct(sync_idle / max(w.idle_ns, 1))} of the GPU's idle time",
            metric="gpu_idle_ns",
        ),
    ]
    headline = (
        f"Sync-bound: the host blocks on the GPU {w.sync_count:,} times in the steady state and the GPU "
        f"then idles: {_pct(1 - w.busy_fraction)} idle, {_pct(sync_idle / max(w.idle_ns, 1))} of it right "
        "after a sync returned."
    )
    mech = (
        f"The loop blocks in {what}: each call makes the host wait until the GPU's queue is empty, and after it "
        "returns the GPU idles for as long as the host needs to dispatch and launch the next work, every time."
    )
    expect = [
        Expectation(
            metric="gpu_busy_fraction",
            direction=Direction.UP,
            value_now=round(w.busy_fraction, 4),
            target=round(w.busy_ns / max(w.busy_ns, w.wall_ns - sync_idle, 1), 3),
            label="GPU-busy fraction (without the idle time after syncs)",
        ),
        Expectation(
            metric="gpu_idle_ns",
            direction=Direction.DOWN,
            value_now=w.idle_ns,
            target=max(0, w.idle_ns - sync_idle),
            unit="ns",
            label="GPU idle time (without the idle time after syncs)",
        ),
    ]
    if w.sync_count:
        expect.insert(
            0,
            Expectation(
                metric="sync_count",
                direction=Direction.DOWN,
                value_now=w.sync_count,
                target=0,
                label="blocking syncs in the steady state (the values read after the loop, or every N steps)",
            ),
        )
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.SYNC_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(ev),
        mechanism=mech,
        fix=fix,
        expect=tuple(expect),
        confidence=_confidence(
            share,
            w,
            ctx.tl.has_host_trace,
            "a Python stack for the syncs (torch.profiler with_stack=True, or "
            "torch.cuda.set_sync_debug_mode('warn')) naming the lines that block"
            if _language(ctx.tl) != NATIVE
            else "backtraces of the blocking calls (next step) naming the lines that block",
        ),
        next_step=(
            "Find the blocking lines with torch.cuda.set_sync_debug_mode('warn') (it warns at each syncing call) or "
            if _language(ctx.tl) != NATIVE
            else "Find the blocking lines with "
        )
        + f"nsys's backtraces of the syncs (`{_nsys(ctx, 'syncs', backtrace_syncs=True)}`), remove them from the loop, "
        f"then {_recapture(ctx)}.",
        findings=tuple(_findings(ctx, w, Bottleneck.SYNC_BOUND)),
    )


def _recapture(ctx: _Context, **kw: object) -> str:
    """How to capture the same program again after a change and check it against this capture."""
    tl = ctx.tl
    after = commands.after_stem(tl.source)
    if tl.format == "kineto":
        return (
            f"re-capture with the same torch.profiler settings into {after}.json and run "
            f"`{commands.compare_command(tl.source, after + '.json')}`"
        )
    cmd = commands.nsys_command(after, program=_app(tl), **kw)
    return f"re-capture with `{cmd}` and run `{commands.compare_command(tl.source, after + '.nsys-rep')}`"


def _startup_fix(ctx: _Context, inside: bool) -> tuple[str, str]:
    """(the fix, the next step) for one-time work, for the part that holds most of it and in the program's
    language: the context (created once per process), run-time compilation, module loading, the process's
    own start before CUDA, warm-up iterations."""
    lang = _language(ctx.tl)
    pre, _ = _own_before_cuda_ns(ctx)
    rest_api = max(0, ctx.startup_api_ns - ctx.startup_first_call_ns)
    parts = {
        "context": ctx.startup_first_call_ns,
        "jit": ctx.jit_ns,
        "modules": rest_api,
        "process": 0 if inside else pre,
    }
    big = max(parts, key=lambda k: parts[k])
    if parts[big] <= 0:
        big = "warmup"
    keep = (
        "keep one process alive and give it many inputs (a server, or a batch of inputs per run) instead of one "
        "process per input"
    )
    if big == "context":
        call = ctx.context_call or "the first CUDA call"
        early = (
            "torch.cuda.init() at the top of the program"
            if lang in (PYTORCH, PYTHON)
            else "cudaFree(0) or cudaSetDevice() at the top of main()"
        )
        fix = (
            f"The CUDA context is created once per process, inside {call} here: {keep}. If the program must start "
            f"often, create the context first ({early}) on a thread while the host does its own set-up, so the two "
            "overlap."
        )
    elif big == "jit":
        fix = (
            "Compile once, not per process: keep the compile caches across runs (TORCHINDUCTOR_CACHE_DIR, "
            "TRITON_CACHE_DIR on persistent storage), and autotune once and reuse the chosen configurations."
            if lang in (PYTORCH, PYTHON)
            else "Compile once, not per process: build the kernels ahead of time for the GPU's architecture (nvcc "
            "-arch=sm_XX, so the driver does not JIT the PTX) or cache the NVRTC output across runs."
        ) + f" Otherwise {keep}."
    elif big == "modules":
        fix = (
            "Load only the kernels you use: keep lazy loading on (CUDA_MODULE_LOADING=LAZY, the default since "
            f"CUDA 12.2) and link fewer or smaller CUDA libraries; or {keep}."
        )
    elif big == "process":
        fix = f"Most of it is the process's own start before any CUDA call ({_ms(pre)}): " + (
            "the interpreter and its imports (`python -X importtime` names the slow ones); import lazily what "
            f"the work does not need, or {keep}."
            if lang != NATIVE
            else f"loading and host set-up; {keep}."
        )
    else:
        fix = f"The first iterations pay for lazy loading and first-use set-up: {keep}, and warm up once."
    nxt = f"To measure the work without start-up, {_capture_range(ctx)}."
    return fix, nxt


def _diag_startup(
    ctx: _Context,
    w_all: _Window,
    subject: Subject,
    startup_ns: int,
    wall_ns: int,
    steady: _Window,
    inside: bool = False,
) -> Diagnosis:
    """One-time work dominates: of the capture (nothing after start-up repeats), or, with ``inside``, of the
    steady state's idle time (compilation or module loading inside the loop)."""
    share = startup_ns / max(wall_ns, 1)
    fix, nxt = _startup_fix(ctx, inside)
    if inside:
        ev = [
            _busy_evidence(steady),
            Evidence(
                name="GPU idle during start-up work (module loading, compilation)",
                value=round(startup_ns / 1e6, 3),
                unit="ms",
                reference=f"{_pct(share)} of {steady.scope}",
            ),
        ]
        headline = (
            f"Start-up work inside {steady.scope}: the GPU is idle {_pct(startup_ns / max(wall_ns, 1))} of it "
            f"({_ms(startup_ns)}) while the host loads modules or compiles code."
        )
        mech = (
            "Module loading, library initialization or run-time compilation (JIT, autotuning) happens while the "
            "loop runs: the GPU has no work until it finishes. Each happens once per shape or kernel, so a steady "
            "state measured after them is faster."
        )
    else:
        parts = _startup_parts(ctx)
        end = max(0, ctx.capture_hi - ctx.teardown_lo)
        ev = [
            Evidence(
                name="one-time work (start-up and teardown)",
                value=round(startup_ns / 1e6, 3),
                unit="ms",
                reference=f"{_pct(share)} of the {_ms(wall_ns)} capture; > {th.STARTUP_SHARE:.0%} dominates",
                reference_value=round(th.STARTUP_SHARE * wall_ns / 1e6, 3),
            ),
            Evidence(
                name="steady state",
                value=round(steady.wall_ns / 1e6, 3),
                unit="ms",
                reference=f"{ctx.steady_reason}; GPU busy {_pct(steady.busy_fraction)} there; not repeated work "
                f"({ctx.repeat_how})",
            ),
        ]
        if ctx.startup_first_call_ns >= th.MIN_FINDING_SHARE * max(0, ctx.steady_lo - ctx.capture_lo) > 0:
            ev.append(
                Evidence(
                    name="first CUDA call (context creation)"
                    + (f": {ctx.context_call}" if ctx.context_call else ""),
                    value=round(ctx.startup_first_call_ns / 1e6, 3),
                    unit="ms",
                    reference="paid once per process",
                )
            )
        begin = max(0, ctx.steady_lo - ctx.capture_lo)
        pieces = []
        if begin:
            pieces.append(f"start-up {_ms(begin)}" + (f" ({parts})" if parts else ""))
        if end:
            pieces.append(
                f"{_ms(end)} after the last GPU work"
                + (" (teardown: unloading, frees)" if ctx.teardown_calls else " (the process's exit)")
            )
        what = " and ".join(pieces) or "CUDA initialization, module loading, first iteration"
        lead = "Start-up dominates the capture" if begin >= end else "One-time work dominates the capture"
        headline = (
            f"{lead}: {_ms(startup_ns)} of {_ms(wall_ns)} ({_pct(share)}) is one-time work ({what}), and the work "
            "after start-up does not repeat."
        )
        # the mechanism from what was measured, largest first: only the parts this capture holds
        said: list[tuple[int, str]] = []
        pre = _before_cuda_ns(ctx)
        own, prof = _own_before_cuda_ns(ctx)
        if pre:
            said.append(
                (
                    pre,
                    f"{_ms(pre)} pass before the program's first CUDA call, with no GPU work"
                    + (
                        f" ({_ms(prof)} of it the profiler's own set-up in the process, which an unprofiled run "
                        f"does not pay; {_ms(own)} the program's own start)"
                        if prof
                        else ": the program's own start"
                    ),
                )
            )
        if ctx.startup_first_call_ns >= th.MIN_FINDING_SHARE * startup_ns:
            said.append(
                (
                    ctx.startup_first_call_ns,
                    f"the first CUDA call{' (' + ctx.context_call + ')' if ctx.context_call else ''} took "
                    f"{_ms(ctx.startup_first_call_ns)} because it created the CUDA context (driver and device "
                    "initialization, once per process)",
                )
            )
        rest_api = max(0, ctx.startup_api_ns - ctx.startup_first_call_ns)
        if rest_api:
            said.append((rest_api, f"module and library loading took {_ms(rest_api)}"))
        if ctx.jit_ns:
            said.append((ctx.jit_ns, f"run-time compilation and autotuning took {_ms(ctx.jit_ns)}"))
        if end:
            said.append((end, f"the end of the process took {_ms(end)}"))
        said.sort(key=lambda x: -x[0])
        body = "; ".join(t for v, t in said if v >= th.MIN_FINDING_SHARE * startup_ns)
        mech = (
            (body[0].upper() + body[1:] + ". " if body else "")
            + f"The GPU work itself is {_ms(steady.busy_ns)} in a {_ms(steady.wall_ns)} window after start-up, and "
            "nothing after start-up repeats, so this one-time cost is what the capture measures."
        )
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.STARTUP_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(ev[:3]),
        mechanism=mech,
        fix=fix,
        expect=(
            Expectation(
                metric="wall_ns",
                direction=Direction.DOWN,
                value_now=wall_ns,
                unit="ns",
                target=max(0, wall_ns - startup_ns) if inside else steady.wall_ns,
                label="steady-state wall time (without the start-up work)"
                if inside
                else "wall time per run of the work once start-up is paid once (a long-lived process)",
            ),
        ),
        confidence=_confidence(
            0.5 + share / 2, w_all, ctx.tl.has_host_trace, "a capture of the steady state alone"
        ),
        next_step=nxt,
        findings=tuple(_findings(ctx, steady, Bottleneck.STARTUP_BOUND)) if inside else (),
    )


def _diag_host_compute(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    """The GPU waits while the host does something other than issue GPU work (no CUDA call for >= 1 ms)."""
    hc = w.idle_by_cause.get("host_compute", 0)
    gs, ge = w.host_compute_gaps
    n = len(gs)
    median_gap = float(np.median(ge - gs)) if n else 0.0
    top = _named_cover(ctx, w)
    what, fix = _host_compute_fix(top.name if top else None, _language(ctx.tl))
    traced = top is not None
    ev = [
        _busy_evidence(w),
        Evidence(
            name="GPU idle while the host made no CUDA call",
            value=round(hc / 1e6, 3),
            unit="ms",
            reference=f"{_pct(hc / max(w.wall_ns, 1))} of {w.scope}, {_pct(hc / max(w.idle_ns, 1))} of the idle "
            f"time; {n:,} gaps, median {_ms(median_gap)}; dispatch issues a CUDA call every "
            f"{_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[0])}-{_ms(145_000)}, never {_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} without "
            "one",
            reference_value=th.HOST_COMPUTE_MIN_STRETCH_NS / 1e6,
            metric="host_compute_idle_ns",
        ),
    ]
    if top is not None:
        ev.append(
            Evidence(
                name=f"idle time covered by the {top.kind} {_clip_name(top.name, 70)}",
                value=round(100 * top.covered_ns / max(hc, 1), 1),
                unit="%",
                reference=f"{_ms(top.own_ns)} in it, {_pct(top.covered_ns / max(top.own_ns, 1))} of that with the "
                "GPU idle",
            )
        )
    else:
        ev.append(
            Evidence(
                name="what the host ran",
                value="untraced",
                reference="no CPU operator, annotated range or OS runtime call covers these gaps",
            )
        )
    by = (
        f" while it ran the {top.kind} {_clip_name(top.name, 70)}"
        if top is not None
        else " (in untraced code)"
    )
    headline = (
        f"Host-compute-bound: the GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} ({_ms(w.busy_ns)} busy of "
        f"{_ms(w.wall_ns)}); {n:,} gap{'s' if n != 1 else ''} in which the host made no CUDA call{by} hold "
        f"{_pct(hc / max(w.wall_ns, 1))} of it."
    )
    mech = (
        f"The GPU has nothing queued while the host is {what}: in these gaps the thread that launches GPU work made "
        f"no CUDA call for at least {_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} at a time, so the host was not issuing "
        "work. This is host computation, not launch overhead: CUDA graphs or fused kernels would not shorten "
        "these gaps; only doing that work elsewhere (in parallel with the GPU, or on it) does."
    )
    if top is not None:
        mech += f" The {top.kind} {_clip_name(top.name, 70)} covers {_pct(top.covered_ns / max(hc, 1))} of this idle time."
    wall_after = max(w.busy_ns, w.wall_ns - hc)
    # a loop that waits on its host work does so every iteration; one or two such gaps are one-time work
    # or too little to tell
    few = n < th.MIN_ITERATIONS_FOR_WARMUP_DROP
    sample = f"Sample the host to see what it runs in the gaps: {_host_sampling(ctx)}."
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.HOST_COMPUTE_BOUND,
        verdict=Verdict.INCONCLUSIVE if few else Verdict.FIX,
        headline=headline,
        evidence=tuple(ev),
        mechanism=mech,
        fix=fix,
        expect=(
            Expectation(
                metric="host_compute_idle_ns",
                direction=Direction.DOWN,
                value_now=hc,
                target=0,
                unit="ns",
                label="GPU idle time while the host makes no CUDA call",
            ),
            Expectation(
                metric="gpu_busy_fraction",
                direction=Direction.UP,
                value_now=round(w.busy_fraction, 4),
                target=round(w.busy_ns / max(wall_after, 1), 3),
                label="GPU-busy fraction (without the host-compute idle time)",
            ),
            Expectation(
                metric="wall_ns",
                direction=Direction.DOWN,
                value_now=w.wall_ns,
                unit="ns",
                target=wall_after,
                label="steady-state wall time (without the host-compute idle time)",
            ),
        ),
        confidence=_confidence(
            share if traced else min(share, 0.7),
            w,
            ctx.tl.has_host_trace,
            "a host-side profile of the gaps (CPU sampling or operator trace) naming the work"
            if not traced
            else "a capture after the change",
        ),
        next_step=(
            f"Only {n} such gap{'s' if n != 1 else ''}: capture more iterations of the loop to tell one-time host "
            "work from the loop's own. "
            if few
            else ""
        )
        + (sample if not traced else "")
        + (
            ""
            if not traced
            else f"Apply the fix, then {_recapture(ctx)}: the host-compute idle time and the wall time should go down."
        ),
        findings=tuple(_findings(ctx, w, Bottleneck.HOST_COMPUTE_BOUND)),
    )


def _diag_host_elsewhere(ctx: _Context, w: _Window, subject: Subject, per_launch: float) -> Diagnosis:
    split = w.host_split
    total = max(sum(split.values()), 1)
    parts = ", ".join(f"{k} {_pct(v / total)}" for k, v in sorted(split.items(), key=lambda kv: -kv[1]) if v)
    return Diagnosis(
        subject=subject,
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} while the host works, but "
        f"{_ms(per_launch)} of host time per launch is far more than launch overhead: the host is busy with "
        "something else.",
        evidence=(
            _busy_evidence(w),
            Evidence(
                name="host-caused idle time per launch",
                value=round(per_launch / 1e3, 1),
                unit="us",
                reference=f"launch/dispatch costs {_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[0])}-"
                f"{_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[1])}; above "
                f"{_ms(th.MAX_DISPATCH_PER_LAUNCH_NS)} it is not dispatch",
                reference_value=th.MAX_DISPATCH_PER_LAUNCH_NS / 1e3,
            ),
            Evidence(
                name="where the host time goes", value=parts or "untraced", reference="within the idle gaps"
            ),
        ),
        mechanism="The next GPU work is launched only after long stretches of host activity that are not CUDA "
        "launches: CPU computation, data loading, compilation (e.g. Triton/torch.compile), I/O or sleeping. The "
        "timeline shows that the host is the limit but not what it does.",
        confidence=Confidence(value=0.5, would_raise="a host-side profile of the idle stretches"),
        next_step=f"Sample the host to see what it does between launches: {_host_sampling(ctx)}.",
        findings=tuple(_findings(ctx, w, Bottleneck.HOST_LAUNCH_BOUND)),
    )


def _diag_few_launches(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    """The GPU idles between too few launches to call it launch-bound (a rate needs a loop)."""
    n = w.launch_count
    return Diagnosis(
        subject=subject,
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} ({_ms(w.busy_ns)} busy of "
        f"{_ms(w.wall_ns)}) around {n} launch{'es' if n != 1 else ''}: too few to tell a host that issues work "
        "too slowly from one-time work.",
        evidence=(
            _busy_evidence(w),
            Evidence(
                name="launch calls",
                value=n,
                reference=f"launch-bound is a rate: at least {th.MIN_LAUNCHES_FOR_LAUNCH_BOUND} launches to judge it",
                reference_value=th.MIN_LAUNCHES_FOR_LAUNCH_BOUND,
                metric="launch_count",
            ),
        ),
        mechanism="Launch overhead limits a program only when it issues many short kernels in a loop, so that the "
        "host's time per launch exceeds the GPU's time per kernel; around a handful of launches the idle time is "
        "the program's one-time host work (allocation, set-up, reading back the result).",
        confidence=Confidence(value=0.4, would_raise="a capture of the program's repeated work (its loop)"),
        next_step="If the program repeats this work, capture several repetitions; otherwise the one-time cost is "
        "the first diagnosis's subject.",
        findings=tuple(_findings(ctx, w, None)),
    )


def _diag_unknown(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    dev_wait = w.idle_by_cause.get("device_wait", 0)
    unknown = w.idle_by_cause.get("unknown", 0)
    if unknown >= dev_wait:
        what = "the capture has no host-side CUDA API events, so the idle time cannot be attributed"
        nxt = (
            f"Re-capture with host tracing: `{_nsys(ctx, 'traced')}`, or "
            "torch.profiler with ProfilerActivity.CPU and ProfilerActivity.CUDA."
        )
    else:
        what = (
            f"{_pct(dev_wait / max(w.idle_ns, 1))} of the idle time the next GPU work was already queued: the "
            "GPU waited on a device-side dependency (another stream, an event, another GPU or process)"
        )
        cmd = _nsys(ctx, "job", trace="cuda,nvtx,osrt,nccl", extra=("--trace-fork-before-exec=true",))
        nxt = (
            f"Capture all GPUs and processes of the job (`{cmd}`) to see what the queued work waited for "
            "(cross-stream events, collectives)."
        )
    return Diagnosis(
        subject=subject,
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope}, but {what}.",
        evidence=(
            _busy_evidence(w),
            Evidence(
                name="idle time with no host-side cause",
                value=round((dev_wait + unknown) / 1e3, 3),
                unit="us",
                reference=f"of {_ms(w.idle_ns)} idle",
            ),
        ),
        mechanism="GPU idle time is attributed by tracing the work that ends each gap back to its launch; here "
        "that link is missing or points away from the host.",
        confidence=Confidence(value=0.4, would_raise="host-side CUDA API events and all GPUs in one capture"),
        next_step=nxt,
        findings=tuple(_findings(ctx, w, None)),
    )


def _classify(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    """The window's bottleneck: the cause holding the largest share of its wall time (shares decide).

    The kernels (GPU-busy time not spent in exposed copies) lead at >= GPU_BOUND_BUSY_FRACTION of the
    wall, or when they hold more than half of it and GPU_SHARE_OVER_CAUSE times the largest idle cause;
    otherwise the largest cause leads: exposed copies plus waits in copies (transfer), GPU idle while the
    host issued work (launch), while it made no CUDA call (host compute), after syncs, in start-up work.
    """
    times = _cause_times(w)
    compute = max(0, w.busy_ns - w.exposed_copy_ns)
    wall = max(w.wall_ns, 1)
    best = max(times, key=lambda k: times[k])
    top = times[best]
    if best == "copy" and w.exposed_copy_ns > th.DOMINANT_SHARE * max(w.busy_ns, 1) and top >= compute:
        return _diag_transfer(ctx, w, subject, times["copy"], top / wall)
    if w.busy_fraction >= th.GPU_BOUND_BUSY_FRACTION and best != "copy":
        return _diag_gpu_bound(ctx, w, subject)
    if compute > th.DOMINANT_SHARE * wall and compute >= th.GPU_SHARE_OVER_CAUSE * top:
        return _diag_gpu_bound(ctx, w, subject)
    if top <= 0:
        return _diag_gpu_bound(ctx, w, subject) if w.busy_ns else _diag_unknown(ctx, w, subject)
    idle = max(w.idle_ns, 1)
    share = min(1.0, top / idle)
    if best == "host":
        per_launch = top / max(w.launch_count, 1)
        if per_launch > th.MAX_DISPATCH_PER_LAUNCH_NS:
            return _diag_host_elsewhere(ctx, w, subject, per_launch)
        if w.launch_count < th.MIN_LAUNCHES_FOR_LAUNCH_BOUND:
            return _diag_few_launches(ctx, w, subject)
        return _diag_host(ctx, w, subject, share)
    if best == "host_compute":
        return _diag_host_compute(ctx, w, subject, share)
    if best == "sync":
        return _diag_sync(ctx, w, subject, share)
    if best == "copy":
        return _diag_transfer(ctx, w, subject, top, top / wall)
    if best == "startup":
        return _diag_startup(ctx, w, subject, top, w.wall_ns, w, inside=True)
    return _diag_unknown(ctx, w, subject)


def _with_notes(d: Diagnosis, ctx: _Context, w: _Window) -> Diagnosis:
    import dataclasses

    extra = []
    if ctx.steady_reason != "the whole capture":
        extra.append(f"Measured on the steady state: {ctx.steady_reason}.")
    extra += [n[0].upper() + n[1:] + "." for n in ctx.notes]
    extra += [n[0].upper() + n[1:] + "." for n in ctx.tl.notes if n]
    if not extra:
        return d
    return dataclasses.replace(d, mechanism=(d.mechanism + " " + " ".join(extra)).strip())


def _range_diagnoses(ctx: _Context, capture_wall: int) -> list[Diagnosis]:
    """Per NVTX range / annotation group (not the iteration marker), the same verdict on its own windows."""
    tl = ctx.tl
    r = tl.ranges
    if len(r) == 0 or not r.names:
        return []
    norm = [_normalize(n) for n in r.names]
    uniq = list(dict.fromkeys(norm))
    nid = np.array([uniq.index(n) for n in norm], np.int64)[r.name_id]
    groups = []
    first_name: dict[str, str] = {}
    for orig, nn in zip(r.names, norm, strict=True):
        first_name.setdefault(nn, orig)
    library = _library_ranges(r)
    for gi, gname in enumerate(uniq):
        m = nid == gi
        if not gname or gname == ctx.its.group or library[m].all():
            continue  # a library's own ranges (NCCL's) time its host calls: no verdict of their own
        u = iv.union(r.start_ns[m], r.end_ns[m])
        tot = iv.total(u)
        if tot < 0.10 * capture_wall or tot > 0.95 * capture_wall:
            continue
        groups.append((tot, first_name[gname], u, int(m.sum())))
    groups.sort(key=lambda x: -x[0])
    out = []
    for _tot, gname, u, n in groups[:2]:
        w = _analyze(ctx, u)
        if w.wall_ns <= 0 or w.busy_ns == 0:
            continue  # no GPU work inside: nothing to measure there
        subject = Subject(
            kind=SubjectKind.RANGE,
            name=f"{gname} ({n} instance{'s' if n != 1 else ''})",
            device=tl.gpu_name(ctx.gpu.device),
        )
        w.scope = "the range"
        out.append(_classify(ctx, w, subject))
    return out


def diagnose_timeline(tl: Timeline) -> list[Diagnosis]:
    """Diagnose a timeline capture: the capture's verdict first, then per NVTX range when they matter.

    Parameters
    ----------
    tl
        A loaded :class:`~kprof.timeline_model.Timeline` (nsys or PyTorch profiler).

    Returns
    -------
    list of Diagnosis
        Never empty. A capture without GPU activity gets an ``inconclusive`` diagnosis
        that says what is missing and how to capture it.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> diagnose_timeline(Timeline(source="empty.sqlite", format="nsys"))[0].verdict.value
    'inconclusive'
    """
    if (damaged := damaged_timeline(tl)) is not None:  # impossible rows, a real share of the data
        return [damaged]
    if tl.gpu_op_count == 0:
        return [_no_gpu_work(tl)]
    ctx = _context(tl)
    st = _steady_state(ctx)
    steady_w = st.stats
    whole = (np.array([ctx.capture_lo], np.int64), np.array([ctx.capture_hi], np.int64))
    wall_all = ctx.capture_hi - ctx.capture_lo
    subject = _subject(ctx)
    one_time = max(0, ctx.steady_lo - ctx.capture_lo) + max(0, ctx.capture_hi - ctx.teardown_lo)
    if not ctx.repeated and wall_all > 0 and one_time > th.STARTUP_SHARE * wall_all:
        # nothing after start-up repeats: the one-time work is what the capture measures
        w_all = _analyze(ctx, whole)
        first = _diag_startup(ctx, w_all, subject, one_time, wall_all, steady_w)
        if steady_w.launch_count < th.MIN_LAUNCHES_FOR_LAUNCH_BOUND:
            # a handful of launches after start-up: the first diagnosis's evidence already says what it holds
            return [_with_notes(first, ctx, steady_w)]
        steady_d = _classify(
            ctx, steady_w, Subject(kind=SubjectKind.RANGE, name="steady state", device=subject.device)
        )
        return [_with_notes(first, ctx, steady_w), _with_notes(steady_d, ctx, steady_w)]
    # the steady state leads; start-up and teardown are findings with their share of the capture
    d = _classify(ctx, steady_w, subject)
    extra = [f for f in _one_time_findings(ctx) if f.bottleneck is not d.bottleneck]
    if len(st.one_off[0]):
        f = _one_off_finding(ctx, st)
        if (f.share or 0) >= th.MIN_FINDING_SHARE:
            extra.append(f)
    if extra:
        import dataclasses

        d = dataclasses.replace(
            d, findings=tuple(sorted((*d.findings, *extra), key=lambda f: -(f.share or 0)))
        )
    return [_with_notes(d, ctx, steady_w), *_range_diagnoses(ctx, wall_all)]


__all__ = ["GAP_CAUSES", "METRICS", "GapCauses", "diagnose_timeline", "gap_causes", "timeline_metrics"]
