"""``gpu_bound``: the kernels hold the time; healthy at >= 80% busy, a fix when the queue drains."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.timeline.blocking import _sync_fix
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.covers import _host_compute_fix, _named_cover
from kprof.diagnose.timeline.evidence import _busy_evidence, _confidence, _nsys
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _steady, _Window
from kprof.diagnose.timeline.kernels import _Comm, _comm_evidence, _comm_finding, _ncu_commands
from kprof.diagnose.timeline.sync import (
    _after_sync_words,
    _drained_by_sync,
    _graph_blockers,
    _then,
)
from kprof.diagnose.timeline.words import PYTHON, PYTORCH, _language, _ms, _pct
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


def _gpu_bound_fix(ctx: _Context, w: _Window, tops: list[tuple[str, float, str]], comm: _Comm) -> str:
    """The one change that fits the kernels holding the GPU time (names choose the wording, never the verdict);
    their shares are of ``comm.of()`` (the GPU-busy time, or the summed kernel time where streams overlap)."""
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
            f"Nothing to change at the timeline level: {busy}, and {_pct(ew_share)} of {comm.of('its GPU time')} is in elementwise "
            f"kernels ({ops}), each of which reads and writes whole tensors through DRAM: they are memory-bound, "
            f"so no tuning of one kernel beats DRAM bandwidth. Fuse the chain ({how}) so each tensor crosses DRAM "
            "once instead of once per operation; the kernel profile (next step) confirms how close each kernel "
            "already is to the DRAM roof."
        )
    name, share, full = tops[0]
    if _GEMM.search(full) and share >= th.DOMINANT_SHARE:
        return (
            f"Nothing to change at the timeline level: {busy}, {_pct(share)} of {comm.of()} in the matrix multiply {name}. "
            "Its kernel profile (next step) says whether it is at its tensor-core roof; if it is, only less work "
            "speeds it up: a lower precision where the accuracy allows (BF16, or FP8 on Hopper), or smaller or "
            "fewer multiplies."
        )
    return (
        f"Nothing to change at the timeline level: {busy}, {_pct(share)} of {comm.of()} in {name}. Its kernel profile (next "
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
        _then(
            _graph_blockers(ctx, w),
            "Issue the work ahead of the GPU: fewer, larger launches (a CUDA graph of the loop body, fused kernels).",
        ),
        "gpu_idle_ns",
        "GPU idle time",
    )


@dataclass(slots=True)
class _Recoverable:
    """The largest cause of the GPU's idle time and, when removing it is worth a fix, its words."""

    cause: str
    ns: int
    recover: bool
    what: str = ""
    fix: str = ""
    metric: str = ""
    label: str = ""
    note: str = ""
    """A sentence the mechanism adds after the cause (why the queue was empty when it began)."""


def _recoverable(ctx: _Context, w: _Window) -> _Recoverable:
    """The largest cause of idle time, and whether removing it is worth a fix (the kernels lead below
    GPU_BOUND_BUSY_FRACTION only by holding more than half of the wall and twice that cause)."""
    idle = {k: v for k, v in w.idle_by_cause.items() if k not in ("device_wait", "unknown")}
    cause = max(idle, key=lambda k: idle[k]) if idle else ""
    cause_ns = idle.get(cause, 0)
    recover = (
        w.busy_fraction < th.GPU_BOUND_BUSY_FRACTION
        and cause_ns >= th.GPU_BOUND_RECOVERABLE_SHARE * max(w.wall_ns, 1)
    )
    r = _Recoverable(cause, cause_ns, recover)
    if recover:
        r.what, r.fix, r.metric, r.label = _idle_cause_text(ctx, w, cause)
        cover = _named_cover(ctx, w) if cause == "host_compute" else None
        blocks = _drained_by_sync(ctx, w, cover.name if cover else None) if cause == "host_compute" else None
        if blocks is not None:
            r.note, r.fix = _after_sync_words(ctx, blocks, r.fix)
    return r


def _gpu_evidence(w: _Window, r: _Recoverable, graph_share: float, comm: _Comm) -> list[Evidence]:
    """Busy fraction, graph share, NCCL share and the recoverable idle time (the kernels' evidence follows)."""
    cause_ns = r.ns
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
        evidence.append(_comm_evidence(comm, w.scope))
    if r.recover:
        evidence.append(
            Evidence(
                name=f"GPU idle while {r.what.split(' without')[0]}",
                value=round(cause_ns / 1e6, 3),
                unit="ms",
                reference=f"{_pct(cause_ns / max(w.wall_ns, 1))} of {w.scope}, {_pct(cause_ns / max(w.idle_ns, 1))} "
                "of its idle time: recoverable",
                metric=r.metric if r.metric == "host_compute_idle_ns" else None,
            )
        )
    return evidence


def _gpu_headline(
    w: _Window, r: _Recoverable, tops: list[tuple[str, float, str]], comm: _Comm, graph_share: float
) -> str:
    if tops:
        name, share, _ = tops[0]
        head_k = f"; the top kernel ({name}) holds {_pct(share)} of {comm.of()}"
        if comm.share >= th.MIN_FINDING_SHARE:
            head_k = (
                f"; NCCL collectives hold {_pct(comm.share)} of {comm.of()} and the top compute kernel ({name}) "
                f"{_pct(share)}"
            )
    elif comm.ns > 0:
        head_k = f"; NCCL collectives hold {_pct(comm.share)} of {comm.of()}"
    else:
        head_k = ""
    if graph_share >= th.DOMINANT_SHARE:
        head_k = f"; {_pct(graph_share)} of it is CUDA-graph replay"
    if r.recover:
        return (
            f"GPU-bound, with time to recover: the GPU is busy {_pct(w.busy_fraction)} of {w.scope} "
            f"({_ms(w.busy_ns)} of {_ms(w.wall_ns)}){head_k}, but it idles {_pct(r.ns / max(w.wall_ns, 1))} of "
            f"{w.scope} ({_ms(r.ns)}) while {r.what.split(' without')[0]}."
        )
    return (
        f"GPU-bound: the GPU is busy {_pct(w.busy_fraction)} of {w.scope} ({_ms(w.busy_ns)} of "
        f"{_ms(w.wall_ns)}){head_k}."
    )


def _gpu_next_step(ctx: _Context, cmds: list[str], graph_share: float, comm: _Comm) -> str:
    nxt_parts = []
    if cmds:
        nxt_parts.append(
            "Profile the top kernels with Nsight Compute (one command each): "
            + "  |  ".join(f"`{c}`" for c in cmds)
        )
    if graph_share >= th.DOMINANT_SHARE:
        nxt_parts.append(
            f"To see the kernels inside the CUDA graphs, re-capture with `{_nsys(ctx, 'nodes', graph_nodes=True)}`."
        )
    if comm.share >= th.MIN_FINDING_SHARE:
        nxt_parts.append(
            "For the NCCL time, diagnose all ranks of the job together "
            f"(`{commands.shell(['kprof', 'diagnose', ctx.tl.source, commands.OTHER_RANKS])}`): the job view tells "
            "waiting for a slower rank from communication."
        )
    if not nxt_parts:
        nxt_parts.append(
            f"Capture kernel-level detail: `{_nsys(ctx, 'nodes', graph_nodes=True)}`, then ncu on the largest "
            "kernels."
        )
    return " ".join(nxt_parts)


def _recover_words(w: _Window, r: _Recoverable) -> tuple[str, str, list[Expectation]]:
    """(mechanism, fix, expect) of a GPU-bound steady state whose queue drains for a recoverable cause."""
    cause_ns = r.ns
    wall_after = max(w.busy_ns, w.wall_ns - cause_ns)
    idle_left = max(0, w.idle_ns - cause_ns)
    mech = (
        f"The kernels hold most of {w.scope}, but its GPU queue drains: for {_ms(cause_ns)} "
        f"({_pct(cause_ns / max(w.wall_ns, 1))} of the wall, {_pct(cause_ns / max(w.idle_ns, 1))} of the idle "
        f"time) the GPU had no work because {r.what}."
        + (f" {r.note}" if r.note else "")
        + " That time adds to the "
        "kernels' time instead of overlapping it."
    )
    fix = (
        f"{r.fix} That recovers up to {_ms(cause_ns)} of the {_ms(w.wall_ns)} "
        f"({_fmt(w.wall_ns / max(wall_after, 1))}x at most). The kernels themselves come next: their profile "
        "(next step) says what limits them."
    )
    expect = [
        Expectation(
            metric=r.metric,
            direction=Direction.DOWN,
            value_now=cause_ns if r.metric == "host_compute_idle_ns" else w.idle_ns,
            target=0 if r.metric == "host_compute_idle_ns" else idle_left,
            unit="ns",
            label=r.label,
            basis="none: the host work moved off the GPU's critical path"
            if r.metric == "host_compute_idle_ns"
            else f"less the {_ms(cause_ns)} the fix recovers",
        ),
        Expectation(
            metric="gpu_busy_fraction",
            direction=Direction.UP,
            value_now=round(w.busy_fraction, 4),
            target=round(w.busy_ns / max(wall_after, 1), 3),
            label="GPU-busy fraction (without that idle time)",
            basis=f"the {_ms(w.busy_ns)} of GPU work over the {_ms(wall_after)} of wall time left",
        ),
        Expectation(
            metric="wall_ns",
            direction=Direction.DOWN,
            value_now=w.wall_ns,
            unit="ns",
            target=wall_after,
            label="steady-state wall time (without that idle time)",
            basis=f"less the {_ms(cause_ns)} recovered, never below the {_ms(w.busy_ns)} of GPU work",
        ),
    ]
    return mech, fix, expect


def _healthy_words(
    ctx: _Context, w: _Window, tops: list[tuple[str, float, str]], comm: _Comm
) -> tuple[str, str, list[Expectation]]:
    """(mechanism, fix, expect) of a GPU-bound steady state with nothing to recover at the timeline level."""
    mech = (
        "The host enqueues work faster than the GPU executes it, so the queue rarely drains and the GPU runs "
        "back to back; the wall time is the sum of the kernels' durations."
        if w.busy_fraction >= th.GPU_BOUND_BUSY_FRACTION
        else f"The kernels hold most of {w.scope}; its idle time ({_pct(1 - w.busy_fraction)}) is spread over "
        f"causes none of which holds {_pct(th.GPU_BOUND_RECOVERABLE_SHARE)} of the wall."
    )
    fix = _gpu_bound_fix(ctx, w, tops, comm)
    # The timeline predicts no number here: how much a kernel fix saves is the kernel diagnosis's
    # to say (its own expect). What it does predict is that wall time falls with GPU-busy time.
    expect = [
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
    return mech, fix, expect


def _diag_gpu_bound(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    ev_k, cmds, tops, comm = _ncu_commands(ctx, w)
    graph_ns = (
        iv.total(iv.intersect(iv.union(ctx.tl.graphs.start_ns, ctx.tl.graphs.end_ns), _steady(ctx)))
        if len(ctx.tl.graphs)
        else 0
    )
    r = _recoverable(ctx, w)
    graph_share = graph_ns / max(w.busy_ns, 1)
    evidence = _gpu_evidence(w, r, graph_share, comm) + ev_k[:2]
    findings = _findings(ctx, w, Bottleneck.GPU_BOUND)
    if comm.share >= th.MIN_FINDING_SHARE:
        findings.append(_comm_finding(comm, w.scope))
        findings.sort(key=lambda f: -(f.share or 0))
    mech, fix, expect = _recover_words(w, r) if r.recover else _healthy_words(ctx, w, tops, comm)
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.GPU_BOUND,
        verdict=Verdict.FIX if r.recover else Verdict.HEALTHY,
        headline=_gpu_headline(w, r, tops, comm, graph_share),
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
        next_step=_gpu_next_step(ctx, cmds, graph_share, comm),
        findings=tuple(findings),
    )
