"""Evidence, confidence and commands shared by the timeline verdicts."""

from __future__ import annotations

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.words import NATIVE, PYTHON, PYTORCH, _app, _language, _ms
from kprof.model import (
    Confidence,
    Evidence,
    Subject,
    SubjectKind,
)


def _nsys(ctx: _Context, suffix: str, **kw: object) -> str:
    """A suggested ``nsys profile`` command, from the one command builder (kprof's own capture flags),
    writing beside the diagnosed capture (``x.sqlite`` -> ``x_<suffix>``) and profiling the recorded program."""
    out = f"{commands.report_stem(ctx.tl.source)}_{suffix}"
    return commands.nsys_command(out, program=_app(ctx.tl), **kw)


def _host_sampling(ctx: _Context) -> str:
    """Commands that sample what the host runs (CPU sampling with the one command builder, and for Python
    py-spy or torch.profiler's stacks)."""
    cmd = _nsys(ctx, "sampled", sample="process-tree", cpuctxsw="process-tree")
    app = _app(ctx.tl) or commands.PROGRAM
    stem = commands.report_stem(ctx.tl.source)  # their output beside the capture, as nsys's
    if _language(ctx.tl) == NATIVE:
        return (
            f"`{cmd}`, or `{commands.shell(['perf', 'record', '-g', '-o', stem + '_perf.data', '--'])} {app}`"
        )
    spy = commands.shell(["py-spy", "record", "-o", stem + "_host.svg", "--"])
    return f"`{cmd}`, `{spy} {app}`, or torch.profiler with with_stack=True"


def _capture_range(ctx: _Context) -> str:
    """How to capture the loop alone, in the program's language, with the exact nsys command."""
    cmd = _nsys(ctx, "steady", cuda_profiler_range=True)
    lang = _language(ctx.tl)
    if ctx.tl.format == "kineto":
        return (
            "give torch.profiler.profile a schedule that skips start-up (schedule=torch.profiler.schedule(wait=1, "
            "warmup=2, active=5), calling prof.step() each iteration), or bracket the loop with "
            f"torch.cuda.profiler.start()/stop() and capture it with `{cmd}`"
        )
    if lang == PYTORCH:
        return f"bracket it with torch.cuda.profiler.start()/stop() and capture with `{cmd}`"
    if lang == PYTHON:
        return (
            "call cudaProfilerStart() before it and cudaProfilerStop() after it (torch.cuda.profiler.start()/stop(), "
            f"cupy.cuda.runtime.profilerStart()/profilerStop()) and capture with `{cmd}`"
        )
    return (
        "call cudaProfilerStart() before it and cudaProfilerStop() after it (cuda_profiler_api.h) and capture "
        f"with `{cmd}`"
    )


def _subject(ctx: _Context, kind: SubjectKind = SubjectKind.CAPTURE, name: str | None = None) -> Subject:
    tl = ctx.tl
    base = tl.source.rsplit("/", 1)[-1]
    return Subject(kind=kind, name=name or base, device=tl.gpu_name(ctx.gpu.device))


def _busy_evidence(w: _Window) -> Evidence:
    return Evidence(
        name="GPU-busy fraction",
        value=round(100 * w.busy_fraction, 2),
        unit="%",
        reference=f"{_ms(w.busy_ns)} busy of {_ms(w.wall_ns)} wall; >= {th.GPU_BOUND_BUSY_FRACTION:.0%} means the "
        "time is in GPU work",
        reference_value=100 * th.GPU_BOUND_BUSY_FRACTION,
        metric="gpu_busy_fraction",
    )


def _transfer_ns(w: _Window) -> int:
    """Copy time not overlapped by compute, plus GPU idle time behind blocking copies."""
    return w.exposed_copy_ns + w.idle_by_cause.get("copy", 0)


def _cause_times(w: _Window) -> dict[str, int]:
    """Time each cause holds in the window (ns): what the verdict and the findings compare."""
    idle = w.idle_by_cause
    return {
        "copy": _transfer_ns(w),
        "host": idle.get("host", 0),
        "host_compute": idle.get("host_compute", 0),
        "sync": idle.get("sync", 0),
        "startup": idle.get("startup", 0),
        "other": idle.get("device_wait", 0) + idle.get("unknown", 0),
    }


def _confidence(share: float, w: _Window, has_host: bool, extra: str) -> Confidence:
    v = 0.5 + 0.45 * min(1.0, max(0.0, (share - 0.5) / 0.5))
    if not has_host:
        v = min(v, 0.5)
    if w.gap_count < 10 and w.kernel_count < 10:
        v = min(v, 0.6)
    return Confidence(value=round(v, 2), would_raise=extra)


def _recapture(ctx: _Context, **kw: object) -> str:
    """How to capture the same program again after a change and check it against this capture."""
    tl = ctx.tl
    after = commands.after_stem(tl.source)
    if tl.format == "kineto":
        return (
            f"re-capture with the same torch.profiler settings into {after}.json and run "
            f"`{commands.compare_command(tl.source, after + '.json')}`"
        )
    cmd = commands.nsys_command(after, program=_app(tl), **kw)
    return f"re-capture with `{cmd}` and run `{commands.compare_command(tl.source, after + '.nsys-rep')}`"
