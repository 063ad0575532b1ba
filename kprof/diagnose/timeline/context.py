"""What every verdict reads, computed once per capture (:class:`_Context`): the capture's span, the
blocking, start-up, launch and other host calls, the steady state's window, teardown."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose import phases
from kprof.diagnose.timeline.iterations import (
    REPEATED_WORK,
    _iteration_window,
    _Iterations,
    _iterations,
    _loop_run,
    _steady_reason,
)
from kprof.diagnose.timeline.rows import (
    _EMPTY,
    _NO_ROWS,
    Pair,
    _all_gpu_end,
    _CorrIndex,
    _first_call_after,
    _first_row,
    _Gpu,
    _gpu_work,
    _median_start,
    _Rows,
    _rows,
)
from kprof.diagnose.timeline.words import _ms
from kprof.timeline_model import (
    ApiCategory,
    ApiTable,
    Timeline,
    api_base_name,
)


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


_WORK_CATEGORIES = (
    ApiCategory.LAUNCH,
    ApiCategory.SYNC,
    ApiCategory.COPY_SYNC,
    ApiCategory.COPY_ASYNC,
    ApiCategory.MEMSET,
)
"""API calls that give the GPU work or wait for it."""


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


def _capture_span(tl: Timeline, gpu: _Gpu) -> tuple[int, int]:
    """The capture's span: its first to last event of any kind."""
    # Kineto's own profiler span may start well before any event: measure from the events. An nsys export's
    # host events that the loader does not model (OS runtime calls from the process's start, before any CUDA
    # call) are in capture_start/end_ns.
    lo_candidates = [gpu.lo]
    hi_candidates = [gpu.hi]
    for t in (tl.api, tl.ranges, tl.steps, tl.host_ops, tl.syncs):
        if len(t):
            lo_candidates.append(int(t.start_ns.min()))
            hi_candidates.append(int(t.end_ns.max()))
    if tl.format == "nsys":
        lo_candidates += [c for c in (tl.capture_start_ns,) if c is not None]
        hi_candidates += [c for c in (tl.capture_end_ns,) if c is not None]
    return min(lo_candidates), max(hi_candidates)


def _blocking(tl: Timeline) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], Pair]:
    """Blocking calls: syncs, synchronous copies, and async copies that returned only after their copy ended.

    Returns their mask over the API table, ``(starts, ends, is a wait for a transfer)`` in start order, and
    their union."""
    api = tl.api
    cat = api.category
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
    return blocking_mask, blocking_calls, blocking


def _startup_mask(tl: Timeline, gpu: _Gpu) -> tuple[np.ndarray, int, str]:
    """Mask of the start-up calls, with the first call when it created the context: (mask, its duration, its
    name), or 0 and "" when the capture does not hold that call."""
    api = tl.api
    cat = api.category
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
    return startup_mask, first_call_ns, context_call


def _teardown(tl: Timeline, work_m: np.ndarray) -> tuple[int, int]:
    """(where teardown may begin, the teardown calls after it).

    The end of the capture: after the last GPU work and the last call that issued or waited for it, calls
    that only release what the run created (unload, destroy, free storms) are teardown."""
    api = tl.api
    cat = api.category
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
    return tail_lo, n_teardown


@dataclass(slots=True)
class _Steady:
    """The steady state's window, why, and whether it holds repeated work (:func:`_steady_window`)."""

    lo: int
    hi: int
    reason: str
    its: _Iterations
    repeated: bool
    how: str


def _steady_window(
    tl: Timeline,
    gpu: _Gpu,
    api_index: _CorrIndex,
    startup_calls: Pair,
    work_m: np.ndarray,
    span: tuple[int, int],
    tail: tuple[int, int],
) -> _Steady:
    """The steady state: its iterations after warm-up, or, without marked iterations, the work between
    start-up and teardown, narrowed to a loop found in the GPU work."""
    cap_hi = span[1]
    tail_lo, n_teardown = tail
    its = _iterations(tl)
    if len(its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        steady_lo, steady_hi = _iteration_window(its, gpu, tl.api, api_index, startup_calls, cap_hi)
        if n_teardown and steady_lo < tail_lo < steady_hi:
            steady_hi = tail_lo
        return _Steady(steady_lo, steady_hi, _steady_reason(its), its, True, f"{len(its)} {its.kind}s")
    return _unmarked_steady(tl, gpu, api_index, startup_calls, work_m, span, tail, its)


def _unmarked_steady(
    tl: Timeline,
    gpu: _Gpu,
    api_index: _CorrIndex,
    startup_calls: Pair,
    work_m: np.ndarray,
    span: tuple[int, int],
    tail: tuple[int, int],
    its: _Iterations,
) -> _Steady:
    """The steady state of a capture without marked iterations (see :func:`_steady_window`)."""
    api = tl.api
    cap_lo, cap_hi = span
    tail_lo, n_teardown = tail
    steady_lo, steady_hi, reason = cap_lo, cap_hi, "the whole capture"
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
    return _Steady(steady_lo, steady_hi, reason, its, repeated, how)


def _context(tl: Timeline) -> _Context:
    gpu, per_dev = _gpu_work(tl)
    api = tl.api
    cat = api.category
    cap_lo, cap_hi = _capture_span(tl, gpu)
    blocking_mask, blocking_calls, blocking = _blocking(tl)
    startup_mask, first_call_ns, context_call = _startup_mask(tl, gpu)
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
    work_m = np.isin(cat, _WORK_CATEGORIES)
    tail_lo, n_teardown = _teardown(tl, work_m)
    st = _steady_window(tl, gpu, api_index, startup_calls, work_m, (cap_lo, cap_hi), (tail_lo, n_teardown))
    del work_m
    before_steady = (np.array([cap_lo], np.int64), np.array([max(cap_lo, st.lo)], np.int64))
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
        steady_lo=st.lo,
        steady_hi=st.hi,
        steady_reason=st.reason,
        its=st.its,
        api_free=api_free,
        startup_first_call_ns=first_call_ns,
        startup_api_ns=iv.total(iv.intersect(startup_api, before_steady)),
        jit_ns=iv.total(iv.intersect(jit, before_steady)) if len(jit[0]) else 0,
        teardown_lo=max(st.hi, st.lo),
        teardown_calls=n_teardown,
        repeated=st.repeated,
        repeat_how=st.how,
        first_cuda_ns=min(gpu.lo, int(api.start_ns.min()) if len(api) else gpu.lo),
        context_call=context_call,
    )
    if len(per_dev) > 1:
        others = ", ".join(f"GPU {d}: {_ms(b)} busy" for d, b in per_dev if d != gpu.device)
        ctx.notes.append(f"diagnosed GPU {gpu.device}, the busiest; {others}")
    return ctx


def _calls_in_window(ctx: _Context, lo: int, hi: int, pattern: re.Pattern[str]) -> int:
    """How many CUDA API calls between ``lo`` and ``hi`` have a name (without nsys's ``_v`` suffix) that
    ``pattern`` matches: allocations in a launch-bound loop, module loads in a host-compute one."""
    api = ctx.tl.api
    m = (api.start_ns >= lo) & (api.end_ns <= hi)
    if not m.any():
        return 0
    hits = np.array([bool(pattern.match(api_base_name(n))) for n in api.names] or [False])
    return int(hits[api.name_id[m]].sum())
