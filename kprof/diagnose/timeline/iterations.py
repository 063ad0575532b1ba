"""The capture's iterations: NVTX ranges or profiler steps that repeat, or a loop found in the GPU work
by its period; which of them are warm-up, and the steady-state window they give."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose import phases
from kprof.diagnose.job import is_nccl_kernel
from kprof.diagnose.timeline.rows import _EMPTY, Pair, _CorrIndex, _Gpu, _merged, _Rows, _rows
from kprof.timeline_model import (
    ApiTable,
    KernelTable,
    RangeTable,
    Timeline,
)

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
