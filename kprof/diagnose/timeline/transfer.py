"""``transfer_bound``: copies between host and GPU hold the time, bounded by the host link's peak rate."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.evidence import _busy_evidence, _confidence, _recapture
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.words import NATIVE, _bytes, _language, _ms, _pct
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
    COPY_HTOD,
    MEM_PAGEABLE,
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


@dataclass(slots=True)
class _CopyBounds:
    """What each copy fix can reach: removing the copies (keeping the data on the GPU) removes all the
    transfer time; pinning and overlapping still has to move the bytes over the link, at best at its peak
    rate, and can hide that only behind the compute there is to hide it behind."""

    keep_wall: int
    floor_ns: int
    floor_ev: Evidence | None
    hidden_left: int
    overlap_wall: int
    only_keep: bool


def _copy_bounds(ctx: _Context, w: _Window, explained: float) -> _CopyBounds:
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
    return _CopyBounds(
        keep_wall=keep_wall,
        floor_ns=floor_ns,
        floor_ev=floor_ev,
        hidden_left=hidden_left,
        overlap_wall=keep_wall + hidden_left,
        only_keep=link is not None and hidden_left > 0,
    )


def _transfer_evidence(w: _Window, b: _CopyBounds) -> list[Evidence]:
    """Three pieces of evidence: the exposed copies, what bounds the fix (the link when only keeping the
    data on the GPU reaches the target, else the pageable bytes), and the GPU-busy fraction."""
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
    second = (b.floor_ev or pageable_ev) if b.only_keep else (pageable_ev or b.floor_ev)
    if second is not None:
        evidence.append(second)
    evidence.append(_busy_evidence(w))
    return evidence


def _transfer_expect(w: _Window, b: _CopyBounds) -> list[Expectation]:
    expect = []
    if b.only_keep:
        expect.append(
            Expectation(
                metric="copy_ns",
                direction=Direction.DOWN,
                value_now=w.copy_ns,
                target=0,
                unit="ns",
                label="copy time (the data stays on the GPU)",
                basis="none: the data stays on the GPU",
            )
        )
    else:
        expect.append(
            Expectation(
                metric="exposed_copy_ns",
                direction=Direction.DOWN,
                value_now=w.exposed_copy_ns,
                target=b.hidden_left,
                unit="ns",
                label="copy time not overlapped by compute",
                basis=f"the host-link floor of these bytes, {_ms(b.floor_ns)}, less the {_ms(w.compute_ns)} of compute "
                "it can hide behind",
            )
        )
    if w.pageable_bytes and not b.only_keep:
        expect.append(
            Expectation(
                metric="pageable_copy_bytes",
                direction=Direction.DOWN,
                value_now=w.pageable_bytes,
                target=0,
                unit="B",
                label="bytes copied through pageable memory",
                basis="none: every copy from pinned memory",
            )
        )
    expect.append(
        Expectation(
            metric="wall_ns",
            direction=Direction.DOWN,
            value_now=w.wall_ns,
            target=b.keep_wall if b.only_keep else b.overlap_wall,
            unit="ns",
            label="steady-state wall time (without the copies)"
            if b.only_keep
            else "steady-state wall time (without exposed copies and waits in copies)",
            basis=f"less the copies and the waits in them, never below the "
            f"{_ms(w.busy_ns - w.exposed_copy_ns)} of compute"
            if b.only_keep
            else f"less the exposed copies and waits in them, the host-link floor "
            f"{_ms(b.floor_ns)} still paid where compute cannot hide it",
        )
    )
    return expect


def _transfer_mechanism(w: _Window, facts: _CopyFacts, why: str) -> str:
    return (
        "Copies between host and GPU run on the copy engines over the host link, no faster than its peak "
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
        )
    )


def _diag_transfer(ctx: _Context, w: _Window, subject: Subject, explained: float, share: float) -> Diagnosis:
    pageable_share = w.pageable_copy_ns / max(w.copy_ns, 1)
    bw = w.copy_bytes / max(w.copy_ns, 1)  # bytes per ns = GB/s
    b = _copy_bounds(ctx, w, explained)
    headline = (
        f"Transfer-bound: copies take {_ms(w.copy_ns)} of the {_ms(w.wall_ns)} steady state "
        f"({_pct(w.copy_ns / max(w.wall_ns, 1))}), {_bytes(w.copy_bytes)} at {bw:.3g} GB/s"
        + (", from pageable memory" if pageable_share >= th.DOMINANT_SHARE else "")
        + "."
    )
    facts = _copy_facts(ctx)
    overlap_fix, why = _overlap_fix(ctx, w, facts)
    if b.only_keep:
        fix = (
            f"Keep the data on the GPU across iterations (allocate it there, or copy it once before the loop): only "
            f"that brings the {_ms(w.wall_ns)} steady state down to {_ms(b.keep_wall)}. The link needs at least "
            f"{_ms(b.floor_ns)} for these bytes and there is {_ms(w.compute_ns)} of compute to hide it behind, so "
            f"the alternative, to {overlap_fix}, reaches {_ms(b.overlap_wall)} at best."
        )
    else:
        fix = (
            f"{overlap_fix[0].upper() + overlap_fix[1:]}: that hides the copies behind the {_ms(w.compute_ns)} of "
            "compute. If the data can stay on the GPU across iterations (allocated there, or copied once before the "
            "loop), that removes the copies altogether."
        )
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.TRANSFER_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(_transfer_evidence(w, b)),
        mechanism=_transfer_mechanism(w, facts, why),
        fix=fix,
        expect=tuple(_transfer_expect(w, b)),
        confidence=_confidence(
            share,
            w,
            ctx.tl.has_host_trace,
            "a capture after the change, to see how much of the copy time is left",
        ),
        next_step=f"After the change, {_recapture(ctx)}.",
        findings=tuple(_findings(ctx, w, Bottleneck.TRANSFER_BOUND)),
    )
