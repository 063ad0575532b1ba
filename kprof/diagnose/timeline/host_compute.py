"""``host_compute_bound``: the GPU waits while the host computes something other than launching work."""

from __future__ import annotations

import re

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.timeline.context import _calls_in_window, _Context
from kprof.diagnose.timeline.covers import _Cover, _host_compute_fix, _named_cover
from kprof.diagnose.timeline.evidence import _busy_evidence, _confidence, _host_sampling, _recapture
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.sync import _after_sync_words, _drained_by_sync
from kprof.diagnose.timeline.words import NATIVE, _clip_name, _language, _ms, _pct
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Subject,
    Verdict,
)


def _host_compute_evidence(w: _Window, hc: int, top: _Cover | None) -> list[Evidence]:
    gs, ge = w.host_compute_gaps
    n = len(gs)
    median_gap = float(np.median(ge - gs)) if n else 0.0
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
    return ev


_MODULE_LOAD = re.compile(r"^(cu|cuda)(Module|Library)Load")
"""Loading GPU code into the context: once per module at start-up, and in a loop only when new code keeps
arriving (a JIT: torch.compile recompiling, Triton compiling a new specialization, NVRTC)."""


def _compiling(loads: int, n: int) -> bool:
    """New GPU code is loaded in at least half of the host-compute gaps' iterations (and more than once): the host
    time is compilation. One-time loads happen once; a loop that compiles does so nearly every time."""
    return loads >= 2 and 2 * loads >= n


def _compile_words(ctx: _Context, loads: int, n: int) -> tuple[str, str]:
    """(mechanism sentence, fix) when the host compiles new kernels in the loop."""
    mech = (
        f" New GPU code is loaded inside the loop: {loads:,} module loads (cuModuleLoad / cuLibraryLoadData) over "
        f"these {n:,} gaps, so the host is compiling kernels at run time (torch.compile recompiling for a new input "
        "shape, Triton compiling a new specialization, or a JIT), and the compile, not the GPU, sets the pace."
    )
    if _language(ctx.tl) == NATIVE:
        return mech, (
            "Compile each kernel once: cache the CUmodule (or the NVRTC/nvJitLink output) by its source and options "
            "and load it before the loop, instead of compiling and loading it every iteration."
        )
    return mech, (
        "Stop the recompiles: keep the input shapes fixed (pad or bucket the varying dimension to a few sizes), or "
        "compile for dynamic shapes (torch.compile(model, dynamic=True), or torch._dynamo.mark_dynamic(x, dim) on "
        "the dimension that varies); TORCH_LOGS=recompiles prints each recompile and its reason. Run every shape "
        "once before the timed loop."
    )


def _host_compute_words(
    w: _Window, hc: int, n: int, top: _Cover | None, what: str, loads: int = 0
) -> tuple[str, str]:
    """(headline, mechanism)."""
    by = (
        f" while it compiled new GPU code ({loads:,} module loads)"
        if loads
        else f" while it ran the {top.kind} {_clip_name(top.name, 70)}"
        if top is not None
        else " (in untraced code)"
    )
    headline = (
        f"Host-compute-bound: the GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} ({_ms(w.busy_ns)} busy of "
        f"{_ms(w.wall_ns)}); {n:,} gap{'s' if n != 1 else ''} in which the host made no CUDA call{by} hold "
        f"{_pct(hc / max(w.idle_ns, 1))} of it ({_ms(hc)})."
    )
    mech = (
        f"The GPU has nothing queued while the host is {what}: in these gaps the thread that launches GPU work made "
        f"no CUDA call for at least {_ms(th.HOST_COMPUTE_MIN_STRETCH_NS)} at a time, so the host was not issuing "
        "work. This is host computation, not launch overhead: CUDA graphs or fused kernels would not shorten "
        + (
            "these gaps; only compiling less, or before the loop, does."
            if loads
            else "these gaps; only doing that work elsewhere (in parallel with the GPU, or on it) does."
        )
    )
    if top is not None:
        mech += f" The {top.kind} {_clip_name(top.name, 70)} covers {_pct(top.covered_ns / max(hc, 1))} of this idle time."
    return headline, mech


def _host_compute_expect(w: _Window, hc: int) -> tuple[Expectation, ...]:
    wall_after = max(w.busy_ns, w.wall_ns - hc)
    return (
        Expectation(
            metric="host_compute_idle_ns",
            direction=Direction.DOWN,
            value_now=hc,
            target=0,
            unit="ns",
            label="GPU idle time while the host makes no CUDA call",
            basis="none: the host work moved off the GPU's critical path",
        ),
        Expectation(
            metric="gpu_busy_fraction",
            direction=Direction.UP,
            value_now=round(w.busy_fraction, 4),
            target=round(w.busy_ns / max(wall_after, 1), 3),
            label="GPU-busy fraction (without the host-compute idle time)",
            basis=f"the {_ms(w.busy_ns)} of GPU work over the {_ms(wall_after)} of wall time left",
        ),
        Expectation(
            metric="wall_ns",
            direction=Direction.DOWN,
            value_now=w.wall_ns,
            unit="ns",
            target=wall_after,
            label="steady-state wall time (without the host-compute idle time)",
            basis=f"less the {_ms(hc)} of host-compute idle time, never below the {_ms(w.busy_ns)} of GPU work",
        ),
    )


def _diag_host_compute(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    """The GPU waits while the host does something other than issue GPU work (no CUDA call for >= 1 ms)."""
    hc = w.idle_by_cause.get("host_compute", 0)
    n = len(w.host_compute_gaps[0])
    top = _named_cover(ctx, w)
    what, fix = _host_compute_fix(top.name if top else None, _language(ctx.tl))
    loads = _calls_in_window(ctx, w.lo, w.hi, _MODULE_LOAD)
    compiling = _compiling(loads, n)
    if compiling:
        what = "compiling new GPU code"
    traced = top is not None or compiling
    headline, mech = _host_compute_words(w, hc, n, top, what, loads if compiling else 0)
    blocks = _drained_by_sync(ctx, w, top.name if top else None)
    if compiling:
        note, fix = _compile_words(ctx, loads, n)
        mech += note
    elif blocks is not None:
        note, fix = _after_sync_words(ctx, blocks, fix)
        mech += " " + note
    # a loop that waits on its host work does so every iteration; one or two such gaps are one-time work
    # or too little to tell
    few = n < th.MIN_ITERATIONS_FOR_WARMUP_DROP
    sample = f"Sample the host to see what it runs in the gaps: {_host_sampling(ctx)}."
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.HOST_COMPUTE_BOUND,
        verdict=Verdict.INCONCLUSIVE if few else Verdict.FIX,
        headline=headline,
        evidence=tuple(_host_compute_evidence(w, hc, top)),
        mechanism=mech,
        fix=fix,
        expect=_host_compute_expect(w, hc),
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
