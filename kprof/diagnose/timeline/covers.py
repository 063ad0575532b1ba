"""What fills the GPU's idle gaps when the host makes no CUDA call: the operator, annotation or NVTX
range that covers most of them, and the host-compute fix worded for it."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.rows import _EMPTY, Pair
from kprof.diagnose.timeline.words import NATIVE, PYTORCH, _clip_name
from kprof.timeline_model import (
    HostOpTable,
    RangeTable,
)


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


def _feeds_the_gpu(name: str | None) -> bool:
    """Whether the covering operator or range is the work that produces the GPU's next input (data loading,
    reading input, waiting for a producer, communication): that work cannot be queued behind, only moved."""
    return bool(name) and any(
        r.search(name or "") for r in (_DATALOADER_NAME, _MPI_NAME, _IO_NAME, _WAIT_NAME)
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
