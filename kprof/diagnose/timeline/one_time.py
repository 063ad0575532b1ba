"""One-time work outside the steady state: start-up (the process before its first CUDA call, context
creation, module loading, compilation, warm-up iterations) and the end of the process, as findings."""

from __future__ import annotations

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.covers import _best_cover, _host_cover
from kprof.diagnose.timeline.evidence import _capture_range
from kprof.diagnose.timeline.gaps import _SteadyState
from kprof.diagnose.timeline.iterations import REPEATED_WORK
from kprof.diagnose.timeline.metrics import _step_times
from kprof.diagnose.timeline.words import NATIVE, _clip_name, _language, _ms, _pct
from kprof.model import (
    Bottleneck,
    Evidence,
    Finding,
)


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
