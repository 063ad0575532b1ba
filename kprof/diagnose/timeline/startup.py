"""``startup_bound``: one-time work is what the capture measures (nothing after start-up repeats)."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.evidence import _busy_evidence, _capture_range, _confidence
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.one_time import _before_cuda_ns, _own_before_cuda_ns, _startup_parts
from kprof.diagnose.timeline.words import NATIVE, PYTHON, PYTORCH, _language, _ms, _pct
from kprof.model import (
    Bottleneck,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Subject,
    Verdict,
)


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


def _inside_words(
    steady: _Window, startup_ns: int, wall_ns: int, share: float
) -> tuple[list[Evidence], str, str]:
    """(evidence, headline, mechanism) of start-up work inside the steady state."""
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
    return ev, headline, mech


def _capture_evidence(
    ctx: _Context, steady: _Window, startup_ns: int, wall_ns: int, share: float
) -> list[Evidence]:
    """Evidence that one-time work dominates the capture: its share, the steady state, the context creation."""
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
    return ev


def _capture_headline(ctx: _Context, startup_ns: int, wall_ns: int, share: float) -> str:
    parts = _startup_parts(ctx)
    end = max(0, ctx.capture_hi - ctx.teardown_lo)
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
    return (
        f"{lead}: {_ms(startup_ns)} of {_ms(wall_ns)} ({_pct(share)}) is one-time work ({what}), and the work "
        "after start-up does not repeat."
    )


def _startup_mechanism(ctx: _Context, steady: _Window, startup_ns: int) -> str:
    """The mechanism from what was measured, largest first: only the parts this capture holds."""
    end = max(0, ctx.capture_hi - ctx.teardown_lo)
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
    return (
        (body[0].upper() + body[1:] + ". " if body else "")
        + f"The GPU work itself is {_ms(steady.busy_ns)} in a {_ms(steady.wall_ns)} window after start-up, and "
        "nothing after start-up repeats, so this one-time cost is what the capture measures."
    )


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
        ev, headline, mech = _inside_words(steady, startup_ns, wall_ns, share)
    else:
        ev = _capture_evidence(ctx, steady, startup_ns, wall_ns, share)
        headline = _capture_headline(ctx, startup_ns, wall_ns, share)
        mech = _startup_mechanism(ctx, steady, startup_ns)
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
                basis=f"less the {_ms(startup_ns)} of start-up work"
                if inside
                else f"the {_ms(steady.wall_ns)} window after start-up, measured in this capture",
            ),
        ),
        confidence=_confidence(
            0.5 + share / 2, w_all, ctx.tl.has_host_trace, "a capture of the steady state alone"
        ),
        next_step=nxt,
        findings=tuple(_findings(ctx, steady, Bottleneck.STARTUP_BOUND)) if inside else (),
    )
