"""What blocks the host in a loop, named from the capture: the kinds of blocking call (an explicit synchronize,
a scalar or tensor read back, a count read back before a compaction kernel, a copy to pageable memory) and the
fix for each in the program's language. Words only: the verdicts come from the gaps (:mod:`.gaps`)."""

from __future__ import annotations

import re

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.gaps import _LaunchingOps
from kprof.diagnose.timeline.words import NATIVE, _language, _times
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
        "give it a static size so the host need not wait to learn the size: torch.where(mask, x, 0) (or x * mask) "
        "instead of indexing with the mask, torch.nonzero_static for indices",
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
    co = np.argsort(c.correlation[d2h], kind="stable")
    c_corr, c_bytes = c.correlation[d2h][co], c.bytes[d2h][co]
    cat = api.category
    m = np.isin(cat, _WORK) & (api.start_ns >= ctx.steady_lo) & (api.start_ns < ctx.steady_hi)
    rows = np.flatnonzero(m)
    rows = rows[np.lexsort((api.start_ns[rows], api.thread[rows]))]
    n = len(rows)
    if n == 0:
        return {}
    k, thread, corr = cat[rows], api.thread[rows], api.correlation[rows]
    j = np.minimum(np.searchsorted(c_corr, corr), len(c_corr) - 1)
    is_copy = np.isin(k, (int(ApiCategory.COPY_SYNC), int(ApiCategory.COPY_ASYNC))) & (c_corr[j] == corr)
    nbytes = np.where(is_copy, c_bytes[j], 0)
    is_sync = k == int(ApiCategory.SYNC)
    idx = np.arange(n)
    # each sync's last work call before it that is not a sync: a device-to-host copy on its thread makes one read-back
    owner = np.maximum.accumulate(np.where(~is_sync, idx, -1))
    ok = is_sync & (owner >= 0)
    ok[ok] = is_copy[owner[ok]] & (thread[owner[ok]] == thread[ok])
    synced = np.zeros(n, bool)
    synced[owner[ok]] = True
    # the first work call after each copy that is not a sync: a launch of a compaction kernel marks a count
    first_ns = np.minimum.accumulate(np.where(~is_sync, idx, n)[::-1])[::-1]
    nxt = np.append(first_ns[1:], n)
    nxt_c = np.minimum(nxt, n - 1)
    launch_after = synced & (nxt < n) & (k[nxt_c] == int(ApiCategory.LAUNCH)) & (thread[nxt_c] == thread)
    compaction = np.zeros(n, bool)
    if launch_after.any() and len(tl.kernels):
        kt = tl.kernels
        ko = np.argsort(kt.correlation, kind="stable")
        k_corr = kt.correlation[ko]
        lc = corr[nxt_c[launch_after]]
        kj = np.minimum(np.searchsorted(k_corr, lc), len(k_corr) - 1)
        dep_names = np.array([bool(_DATA_DEP_KERNEL.search(x)) for x in kt.names] or [False])
        dep = (k_corr[kj] == lc) & dep_names[kt.name_id[ko][kj]]
        compaction[np.flatnonzero(launch_after)[dep]] = True
    kind = np.where(compaction, 2, np.where(nbytes <= 8, 0, 1))  # scalar_read, to_host, data_dependent
    names = ("scalar_read", "to_host", "data_dependent")
    out: dict[int, str] = {}
    for i in np.flatnonzero(synced).tolist():
        out[int(rows[i])] = names[int(kind[i])]
    for i in np.flatnonzero(ok).tolist():
        out[int(rows[i])] = names[int(kind[owner[i]])]
    # an asynchronous copy with no sync after it: listed only if it blocked (the caller's rows), pageable memory
    for i in np.flatnonzero(is_copy & ~synced & (k == int(ApiCategory.COPY_ASYNC))).tolist():
        out[int(rows[i])] = "pageable_copy"
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
        # asynchronous copies that returned only after their copy ended block like a synchronous one (they are
        # among the blocking calls, sorted by start: the same start and end)
        ac = np.flatnonzero(async_copy)
        i = np.minimum(np.searchsorted(bs, api.start_ns[ac]), len(bs) - 1)
        blocking[ac] |= (bs[i] == api.start_ns[ac]) & (be[i] == api.end_ns[ac])
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


_NATIVE_WORDS: dict[str, str] = {
    "device_sync": "cudaDeviceSynchronize",
    "stream_sync": "cudaStreamSynchronize",
    "event_sync": "cudaEventSynchronize",
    "blocking_copy": "a synchronous copy (cudaMemcpy)",
    "scalar_read": "a scalar read back (a copy of at most 8 bytes to the host, then a wait for the queue)",
    "to_host": "a copy to host memory, then a wait for the queue",
    "pageable_copy": "cudaMemcpyAsync to pageable host memory (it returns only after the copy, which waits for all "
    "the work queued ahead of it)",
    "data_dependent": "a size read back before the kernels that use it",
}
"""What blocks, for a compiled CUDA program: the calls it makes, without PyTorch's names for them."""


def _sync_fix(ctx: _Context) -> tuple[str, str]:
    """(the fix for what blocks most, what blocks in words with counts), in the program's language."""
    kinds = _sync_kinds(ctx)
    native = _language(ctx.tl) == NATIVE
    if not kinds:
        fix = _SYNC_KINDS["stream_sync"][2 if native else 1]
        return fix[0].upper() + fix[1:] + ".", "a blocking call"
    top = kinds[0][0]
    total = sum(n for _, n in kinds)
    what = "; ".join(
        f"{_NATIVE_WORDS.get(k, _SYNC_KINDS[k][0]) if native else _SYNC_KINDS[k][0]} {_times(n)}"
        for k, n in kinds[:2]
        if n >= th.MIN_FINDING_SHARE * total
    )
    fix = _SYNC_KINDS[top][2 if native else 1]
    return fix[0].upper() + fix[1:] + ".", what


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
