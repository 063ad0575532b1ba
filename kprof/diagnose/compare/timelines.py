"""Timelines before and after: median steps when both captures mark them alike, else the steady-state
wall time when neither does, else no speedup; the timeline diagnosis's expectations checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.comparison_model import Comparison, ExpectationCheck
from kprof.diagnose.compare.matching import (
    Diagnoser,
    _check_devices,
    _replace_file,
)
from kprof.diagnose.compare.steps import StepTimes, step_times
from kprof.diagnose.compare.verdicts import (
    _dispersion_noise,
    _pct,
    _unless_damaged,
    _verdict,
    check_expectation,
)
from kprof.model import Diagnosis, Subject, SubjectKind
from kprof.timeline_model import Timeline

_EXTENSIVE = frozenset(
    {
        "wall_ns",
        "gpu_busy_ns",
        "gpu_idle_ns",
        "kernel_count",
        "launch_count",
        "sync_count",
        "sync_wait_ns",
        "copy_ns",
        "exposed_copy_ns",
        "pageable_copy_bytes",
    }
)
"""Timeline metrics that grow with the number of steps captured (scaled per step when the counts differ)."""

_HOST_PACED = frozenset(
    {"wall_ns", "gpu_idle_ns", "mean_gap_ns", "step_ns", "sync_wait_ns", "gpu_busy_fraction"}
)
"""Timeline metrics that follow the host's speed, hence vary between runs as much as the step time does:
checked against the comparison's noise threshold. The others (GPU-side times, counts, bytes) do not
depend on how fast the host runs and are checked against TIMELINE_MIN_NOISE."""


def _tool(tl: Timeline) -> str:
    return "Nsight Systems" if tl.format == "nsys" else "PyTorch profiler"


def _steps_match(sb: StepTimes, sa: StepTimes) -> tuple[bool, str]:
    """Whether two captures' iterations are the same loop, and a note."""
    if sb.label == sa.label:
        return True, ""
    kinds = {sb.label.startswith("NVTX"), sa.label.startswith("NVTX")}
    if kinds == {True, False}:
        return (
            True,
            f"steps matched across markers: {sb.label} before, {sa.label} after (position by position)",
        )
    return False, (
        f"the captures mark their steps differently ({sb.label} before, {sa.label} after): the steady states "
        "cannot be matched, so no speedup; mark the steps alike in both runs"
    )


def _timeline_diagnosis(tl: Timeline, path: str, diagnose: Diagnoser) -> Diagnosis:
    d = diagnose(tl, None)[0]
    return d if d.file else _replace_file(d, path)


def _compare_timelines(tb: Timeline, ta: Timeline, fb: str, fa: str, diagnose: Diagnoser) -> list[Comparison]:
    from kprof.diagnose.timeline import timeline_metrics

    _check_devices({g.name for g in tb.gpus if g.name}, {g.name for g in ta.gpus if g.name}, fb, fa)
    d_before = _timeline_diagnosis(tb, fb, diagnose)
    d_after = _timeline_diagnosis(ta, fa, diagnose)
    mb, ma = timeline_metrics(tb), timeline_metrics(ta)
    sb, sa = step_times(tb), step_times(ta)
    notes = _capture_notes(tb, ta)
    t = _timeline_timing(mb, ma, sb, sa, fb, fa, d_before.subject, notes)
    checks = _timeline_checks(d_before, mb, ma, sb, sa, t)
    if any(e.metric == "step_ns" for e in d_before.expect) and (sb.usable and sa.usable):
        notes.append("step_ns is the GPU-projected median step time here, on both sides")
    speedup = _unless_damaged(t.speedup, ((fb, d_before), (fa, d_after)), notes)
    return [
        Comparison(
            subject=t.subject,
            verdict=_verdict(speedup, t.thr),
            speedup=speedup,
            before=d_before,
            after=d_after,
            expectations=tuple(checks),
            noise_threshold=t.thr if speedup is not None else None,
            noise=t.noise,
            duration_source=t.source,
            duration_before_ns=t.dur_b,
            duration_after_ns=t.dur_a,
            file_before=fb,
            file_after=fa,
            kind="timeline",
            notes=tuple(notes),
        )
    ]


def _capture_notes(tb: Timeline, ta: Timeline) -> list[str]:
    """What differs between the two captures besides the program's speed: the profiler, the command."""
    notes: list[str] = []
    if tb.format != ta.format:
        notes.append(
            f"{_tool(tb)} capture before, {_tool(ta)} trace after: allowed for the same program, but the two "
            "profilers' overheads differ (the PyTorch profiler records every operator on the host), and the "
            "speedup carries that difference too"
        )
    if " " in tb.command and " " in ta.command and tb.command != ta.command:
        notes.append(f"commands: {tb.command!r} before, {ta.command!r} after")
    return notes


def _noise_floor(mb: Mapping[str, float], ma: Mapping[str, float]) -> tuple[float, str]:
    """The run-to-run floor of a timeline comparison and why: wider when either steady state is host-limited."""
    host_limited = [
        name
        for name, m in (("before", mb), ("after", ma))
        if m and m["gpu_busy_fraction"] < th.GPU_BOUND_BUSY_FRACTION
    ]
    if host_limited:
        floor = th.TIMELINE_HOST_BOUND_NOISE
        floor_why = (
            f"the {' and '.join(host_limited)} steady state is host-limited (GPU busy < "
            f"{th.GPU_BOUND_BUSY_FRACTION:.0%}), and identical host-bound runs differed by up to 1.65x between "
            "processes on the H200"
        )
    else:
        floor = th.TIMELINE_MIN_NOISE
        floor_why = "GPU-limited steps repeat across processes no better than their kernels (ncu_noise.csv)"
    return floor, floor_why


@dataclass(slots=True)
class _TimelineTiming:
    """How a timeline comparison timed the two captures (:func:`_timeline_timing`)."""

    subject: Subject
    thr: float
    speedup: float | None = None
    dur_b: float | None = None
    dur_a: float | None = None
    noise: str = ""
    source: str = ""
    scale: float = 1.0
    """Factor from the after capture's step count to the before's, for the counts that grow with it."""
    comparable_extensive: bool = True
    """Whether totals that grow with the captured work (:data:`_EXTENSIVE`) can be compared."""


def _timeline_timing(
    mb: Mapping[str, float],
    ma: Mapping[str, float],
    sb: StepTimes,
    sa: StepTimes,
    fb: str,
    fa: str,
    subject: Subject,
    notes: list[str],
) -> _TimelineTiming:
    """The speedup and its noise threshold: median steps when both captures mark them alike, else the
    steady-state wall time when neither does, else none (what was done is added to ``notes``)."""
    floor, floor_why = _noise_floor(mb, ma)
    t = _TimelineTiming(subject=subject, thr=floor)
    if not mb or not ma:
        empty = fb if not mb else fa
        notes.append(f"{empty} holds no GPU work: nothing to time")
        t.noise = "no threshold: no speedup was measured"
        t.comparable_extensive = False
    elif sb.usable and sa.usable:
        ok, note = _steps_match(sb, sa)
        if note:
            notes.append(note)
        if ok:
            _step_timing(t, sb, sa, floor, floor_why, notes)
        else:
            t.comparable_extensive = False
            t.noise = "no threshold: the steady states could not be matched"
    elif not sb.usable and not sa.usable:
        t.dur_b, t.dur_a = mb["wall_ns"], ma["wall_ns"]
        t.speedup = t.dur_b / t.dur_a if t.dur_a > 0 and t.dur_b > 0 else None
        t.source = "timeline capture: steady-state wall time (neither capture marks 3 or more steps)"
        t.thr = floor
        t.noise = (
            f"±{_pct(floor)}: fall back to the run-to-run floor ({floor_why}), because a capture without "
            "repeated steps has no dispersion of its own"
        )
        notes.append(
            "capture against capture: the speedup assumes both captures ran the same work (kernels in the "
            f"steady state: {mb['kernel_count']:.0f} before, {ma['kernel_count']:.0f} after); mark iterations "
            "(NVTX ranges or torch.profiler steps) for a per-step comparison"
        )
    else:
        has, lacks = ("before", "after") if sb.usable else ("after", "before")
        s_has = sb if sb.usable else sa
        notes.append(
            f"the {has} capture marks {s_has.count} steps ({s_has.label}) and the {lacks} capture fewer than "
            f"{th.MIN_ITERATIONS_FOR_WARMUP_DROP}: the steady states cannot be matched, so no speedup; capture "
            "both with the same step markers"
        )
        t.noise = "no threshold: the steady states could not be matched"
        t.comparable_extensive = False
    return t


def _step_timing(
    t: _TimelineTiming, sb: StepTimes, sa: StepTimes, floor: float, floor_why: str, notes: list[str]
) -> None:
    """Time matched steps: the median step before and after, with the steps' own dispersion as noise."""
    t.dur_b, t.dur_a = float(np.median(sb.durations_ns)), float(np.median(sa.durations_ns))
    t.speedup = t.dur_b / t.dur_a if t.dur_a > 0 and t.dur_b > 0 else None
    how = "GPU-projected" if sb.projected and sa.projected else "host ranges on a side"
    t.source = (
        f"timeline steps: median step time ({how}), {len(sb.durations_ns)} steady-state steps before, "
        f"{len(sa.durations_ns)} after (the first step left out as warm-up)"
    )
    t.thr, t.noise = _dispersion_noise(sb.durations_ns, sa.durations_ns, floor, floor_why, "step times")
    for s, name in ((sb, "before"), (sa, "after")):
        if not s.projected:
            notes.append(
                f"the {name} steps link no GPU work (no correlation ids): step times from the host ranges, "
                "which are shorter than the steps when the host runs ahead of the GPU"
            )
    if sb.count != sa.count:
        t.scale = (sb.count - 1) / max(sa.count - 1, 1)
        notes.append(
            f"{sb.count} steps before, {sa.count} after: the after capture's counts and times that grow "
            f"with the number of steps are scaled to the before's {sb.count - 1} steady-state steps"
        )
    t.subject = Subject(kind=SubjectKind.RANGE, name=f"{sb.label} (median step)", device=t.subject.device)


def _timeline_checks(
    d_before: Diagnosis,
    mb: Mapping[str, float],
    ma: Mapping[str, float],
    sb: StepTimes,
    sa: StepTimes,
    t: _TimelineTiming,
) -> list[ExpectationCheck]:
    """Each expectation of the before diagnosis checked against the after capture."""
    from kprof.diagnose.timeline import METRICS

    def value(m: Mapping[str, float], s: StepTimes, metric: str, k: float = 1.0) -> float | None:
        if metric == "step_ns" and s.usable:
            return float(np.median(s.durations_ns))
        v = m.get(metric)
        if v is None:
            return None
        return v * k if metric in _EXTENSIVE else v

    checks = []
    for e in d_before.expect:
        not_comp = ""
        if e.metric in _EXTENSIVE and not t.comparable_extensive:
            not_comp = "not comparable: the captures' steady states could not be matched"
        missing = (
            f"{e.metric} is not a timeline metric kprof measures"
            if e.metric not in METRICS
            else f"{e.metric} could not be measured in the after capture"
        )
        checks.append(
            check_expectation(
                e,
                value(mb, sb, e.metric),
                value(ma, sa, e.metric, t.scale),
                t.thr if e.metric in _HOST_PACED else th.TIMELINE_MIN_NOISE,
                missing_after=missing,
                not_comparable=not_comp,
            )
        )
    return checks
