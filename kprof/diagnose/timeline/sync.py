"""``sync_bound``: the host blocks on the GPU and the GPU then idles; what blocks, named from the capture."""

from __future__ import annotations

import re

import numpy as np

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.covers import _feeds_the_gpu
from kprof.diagnose.timeline.evidence import _busy_evidence, _confidence, _nsys, _recapture
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _LaunchingOps, _Window
from kprof.diagnose.timeline.words import NATIVE, _language, _ms, _pct, _times
from kprof.model import (
    Bottleneck,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Subject,
    Verdict,
    _fmt,
)
from kprof.timeline_model import (
    COPY_DTOH,
    ApiCategory,
    api_base_name,
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
    "pageable_copy": (
        "an asynchronous copy to pageable host memory (cudaMemcpyAsync, or a non_blocking .copy_() / .to('cpu') "
        "into a tensor that is not pinned: it returns only after the copy, which waits for all the work queued "
        "ahead of it)",
        "copy into a pinned buffer (torch.empty(..., pin_memory=True)) with non_blocking=True, record a CUDA event "
        "after it and wait on that event only when the host needs the values (a step later)",
        "allocate the host buffer pinned (cudaHostAlloc) so cudaMemcpyAsync returns at once, then cudaEventRecord "
        "and cudaEventSynchronize only where the host needs the values",
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


_DATA_DEP_KERNEL = re.compile(r"DeviceSelect|DeviceCompact|write_indices|nonzero|unique", re.IGNORECASE)
"""Kernels that compact by a count the host read back first: PyTorch's nonzero (boolean-mask indexing,
masked_select) counts with cub, copies the count to the host, waits, then runs cub's DeviceSelect and
write_indices. Wording only: the verdict comes from the gaps."""


def _readback_calls(ctx: _Context) -> dict[int, str]:
    """API row -> :data:`_SYNC_KINDS` key, for the calls that read GPU memory back to the host in the steady
    state, from the calls around them on their thread. A device-to-host copy followed by a stream or event
    sync, and that sync, are one read-back (what ``.item()`` and ``.cpu()`` issue): of a scalar at <= 8 bytes
    (``scalar_read``), else of a tensor (``to_host``), and of a count when the next launch is a compaction
    kernel (:data:`_DATA_DEP_KERNEL`: ``data_dependent``). An asynchronous device-to-host copy with no sync
    after it that still blocked went to pageable memory (``pageable_copy``). Other copies are not listed."""
    tl = ctx.tl
    api, c = tl.api, tl.copies
    if len(api) == 0 or len(c) == 0:
        return {}
    d2h = np.isin(c.direction, (COPY_DTOH, 12)) & (c.correlation >= 0)
    if not d2h.any():
        return {}
    by_corr = dict(zip(c.correlation[d2h].tolist(), c.bytes[d2h].tolist(), strict=True))
    cat = api.category
    m = np.isin(cat, _WORK) & (api.start_ns >= ctx.steady_lo) & (api.start_ns < ctx.steady_hi)
    rows = np.flatnonzero(m)
    rows = rows[np.lexsort((api.start_ns[rows], api.thread[rows]))]
    copy_cats = (int(ApiCategory.COPY_SYNC), int(ApiCategory.COPY_ASYNC))
    groups: list[tuple[list[int], int, int]] = []  # (rows of one read-back, bytes, the next launch row or -1)
    open_group: list[int] = []
    open_bytes = 0
    prev_thread = -1

    def close(next_launch: int) -> None:
        nonlocal open_group
        if open_group:
            groups.append((open_group, open_bytes, next_launch))
            open_group = []

    for r in rows.tolist():
        t = int(api.thread[r])
        if t != prev_thread:
            close(-1)
            prev_thread = t
        k = int(cat[r])
        if k in copy_cats:
            close(-1)
            nbytes = by_corr.get(int(api.correlation[r]))
            if nbytes is not None:
                open_group, open_bytes = [r], int(nbytes)
        elif k == int(ApiCategory.SYNC):
            if open_group:
                open_group.append(r)
        else:
            close(r if k == int(ApiCategory.LAUNCH) else -1)
    close(-1)
    compaction: set[int] = set()
    launches = {g[2] for g in groups if g[2] >= 0}
    if launches and len(tl.kernels):
        kt = tl.kernels
        corrs = np.array([int(api.correlation[r]) for r in launches], np.int64)
        dep_names = np.array([bool(_DATA_DEP_KERNEL.search(n)) for n in kt.names] or [False])
        dep_corr = set(kt.correlation[np.isin(kt.correlation, corrs) & dep_names[kt.name_id]].tolist())
        compaction = {r for r in launches if int(api.correlation[r]) in dep_corr}
    out: dict[int, str] = {}
    for g_rows, nbytes, nxt in groups:
        if len(g_rows) == 1:  # a copy with no sync after it
            if cat[g_rows[0]] == int(ApiCategory.COPY_ASYNC):
                out[g_rows[0]] = "pageable_copy"  # listed only if it blocked (the caller's rows)
            continue
        kind = "data_dependent" if nxt in compaction else "scalar_read" if nbytes <= 8 else "to_host"
        for r in g_rows:
            out[r] = kind
    return out


_WORK = (
    int(ApiCategory.LAUNCH),
    int(ApiCategory.MEMSET),
    int(ApiCategory.COPY_SYNC),
    int(ApiCategory.COPY_ASYNC),
    int(ApiCategory.SYNC),
)


def _sync_kinds(ctx: _Context) -> list[tuple[str, int]]:
    """What blocks the host in the steady state, as :data:`_SYNC_KINDS` keys with their counts, most first.

    A PyTorch trace names the operator that made each blocking call (``aten::_local_scalar_dense`` for
    ``.item()``); otherwise the call and the copies around it say it: a copy to the host that blocks (a
    synchronous copy, or an asynchronous one that returned only after its copy: pageable memory), or a stream
    sync right after such a copy, is a read-back (:func:`_readback_calls`: a scalar, a tensor, a count before a
    compaction, a copy to pageable memory). Names choose the words of the fix only; the verdict comes from the
    gaps."""
    tl = ctx.tl
    api = tl.api
    if len(api) == 0:
        return []
    cat = api.category
    m = (api.start_ns >= ctx.steady_lo) & (api.start_ns < ctx.steady_hi)
    blocking = np.isin(cat, (int(ApiCategory.SYNC), int(ApiCategory.COPY_SYNC)))
    bs, be, _ = ctx.blocking_calls
    async_copy = m & (cat == int(ApiCategory.COPY_ASYNC))
    if async_copy.any() and len(bs):
        # asynchronous copies that returned only after their copy ended block like a synchronous one
        pairs = set(zip(bs.tolist(), be.tolist(), strict=True))
        for r in np.flatnonzero(async_copy).tolist():
            if (int(api.start_ns[r]), int(api.end_ns[r])) in pairs:
                blocking[r] = True
    rows = np.flatnonzero(m & blocking)
    if len(rows) == 0:
        return []
    ops = _LaunchingOps(tl.host_ops) if len(tl.host_ops) and tl.format == "kineto" else None
    readback = _readback_calls(ctx) if ops is None else {}
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
        elif r in readback:
            kind = readback[r]
        elif cat[r] != ApiCategory.SYNC:
            kind = "blocking_copy"
        elif ops is None and small_d2h * 2 >= len(rows):
            kind = "scalar_read"
        else:
            kind = "stream_sync"
        counts[kind] = counts.get(kind, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


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


def _drained_by_sync(ctx: _Context, w: _Window, cover: str | None) -> str | None:
    """What blocks the host (:data:`_SYNC_KINDS` words) when most of the host-compute idle time falls in gaps
    that begin while the host is blocked in a sync: the host waited for the GPU's queue to empty and only
    then ran its own code, so nothing was queued behind it. None otherwise, and None when the code that covers
    the gaps (``cover``) produces the GPU's next input (a DataLoader, reading input): the next step's work
    needs it, so it can only be moved off the critical path, which its own fix says."""
    gs, ge = w.host_compute_gaps
    if len(gs) == 0 or len(ctx.blocking[0]) == 0 or _feeds_the_gpu(cover):
        return None
    slack = (ctx.blocking[0], ctx.blocking[1] + th.CLOCK_ALIGNMENT_SLACK_NS)
    inside = iv.containing(slack, gs) >= 0
    if int((ge - gs)[inside].sum()) < th.DOMINANT_SHARE * int((ge - gs).sum()):
        return None
    kinds = _sync_kinds(ctx)
    if kinds and kinds[0][0] != "pageable_copy":
        return _SYNC_KINDS[kinds[0][0]][0]
    return _pageable_readback(ctx) or (_SYNC_KINDS[kinds[0][0]][0] if kinds else "a blocking call")


def _pageable_readback(ctx: _Context) -> str | None:
    """The words for copies to pageable host memory in the steady state, which block the host however they are
    called (an asynchronous copy to pageable memory returns only after it ends, so after the queue ahead of it);
    None when there are none."""
    c = ctx.tl.copies
    if not len(c):
        return None
    m = (c.start_ns >= ctx.steady_lo) & (c.start_ns < ctx.steady_hi) & np.isin(c.direction, (COPY_DTOH, 12))
    m &= c.host_kind() == 0  # pageable
    n = int(np.count_nonzero(m))
    if n == 0:
        return None
    size = int(np.median(c.bytes[m]))
    return (
        f"a copy to pageable host memory ({n:,} device-to-host copies of {size:,} bytes each in the steady state: "
        "from pageable memory even cudaMemcpyAsync, a non_blocking .cpu() or .to('cpu') returns only after the "
        "copy, which waits for all the work queued ahead of it)"
    )


def _after_sync_words(ctx: _Context, blocks: str, otherwise: str) -> tuple[str, str]:
    """(mechanism sentence, fix) for host computation that starts only after a sync drained the GPU's queue.
    The capture cannot tell whether that code prepares the next step's input; if it does, ``otherwise`` (the
    fix that moves it off the critical path) applies, and the fix says so."""
    mech = (
        f"These gaps begin while the host is blocked in {blocks}: it waits until the GPU's queue is empty and only "
        "then runs this code, so no GPU work is queued behind it."
    )
    if _language(ctx.tl) == NATIVE:
        fix = (
            "Queue GPU work before the host code: issue the next iteration's launches that do not need the data read "
            "back before running it, or copy that data with cudaMemcpyAsync into pinned memory, record an event "
            "(cudaEventRecord) and wait on it (cudaEventSynchronize) only where the host needs it."
        )
    else:
        fix = (
            "Queue GPU work before the host code: launch the next step's work that does not need what the host reads "
            "back (its forward pass, for example) before running this code, or read it back without blocking (copy "
            "into a pinned buffer with non_blocking=True, record a torch.cuda.Event, and synchronize on that event "
            "only where the host needs the value), so the GPU has work while the host computes."
        )
    return (
        mech,
        f"{fix} If this code prepares the next step's input instead: {otherwise[0].lower() + otherwise[1:]}",
    )


def _sync_evidence(ctx: _Context, w: _Window) -> list[Evidence]:
    sync_idle = w.idle_by_cause.get("sync", 0)
    n_iter = len(ctx.iterations[0])
    steady_iters = n_iter - ctx.its.warmup if n_iter >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else 0
    per_iter = f", {_fmt(w.sync_count / steady_iters)} per iteration" if steady_iters >= 2 else ""
    return [
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


def _sync_expect(w: _Window) -> list[Expectation]:
    sync_idle = w.idle_by_cause.get("sync", 0)
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
    return expect


def _diag_sync(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    sync_idle = w.idle_by_cause.get("sync", 0)
    fix, what = _sync_fix(ctx)
    headline = (
        f"Sync-bound: the host blocks on the GPU {w.sync_count:,} times in the steady state and the GPU "
        f"then idles: {_pct(1 - w.busy_fraction)} idle, {_pct(sync_idle / max(w.idle_ns, 1))} of it right "
        "after a sync returned."
    )
    mech = (
        f"The loop blocks in {what}: each call makes the host wait until the GPU's queue is empty, and after it "
        "returns the GPU idles for as long as the host needs to dispatch and launch the next work, every time."
    )
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.SYNC_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(_sync_evidence(ctx, w)),
        mechanism=mech,
        fix=fix,
        expect=tuple(_sync_expect(w)),
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
