"""Timelines before and after: median steps when both captures mark them alike, else the steady-state
wall time when neither does, else no speedup; the timeline diagnosis's expectations checked."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.comparison_model import Comparison, ComparisonVerdict, ExpectationCheck
from kprof.diagnose.compare.matching import (
    Diagnoser,
    _check_devices,
    _replace_file,
)
from kprof.diagnose.compare.steps import StepTimes, step_times
from kprof.diagnose.compare.verdicts import (
    StepNoise,
    _pct,
    _unless_damaged,
    _verdict,
    check_expectation,
    speedup_interval,
    step_noise,
)
from kprof.model import Diagnosis, Subject, SubjectKind, _fmt
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
    _repeat_advice(t, mb, ma, notes)
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
            speedup_interval=speedup_interval(speedup, t.thr),
            noise=t.noise,
            next_step=t.next_step if speedup is not None else "",
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


def _host_paced(m: Mapping[str, float]) -> float:
    """The share of the steady state in which the GPU idled waiting on the host (0 without GPU work)."""
    if not m or m.get("wall_ns", 0) <= 0:
        return 0.0
    return float(m.get("host_paced_idle_ns", m.get("gpu_idle_ns", 0.0))) / float(m["wall_ns"])


def _host_limited(m: Mapping[str, float]) -> bool:
    return bool(m) and m["gpu_busy_fraction"] < th.GPU_BOUND_BUSY_FRACTION


def _repeat_advice(
    t: _TimelineTiming, mb: Mapping[str, float], ma: Mapping[str, float], notes: list[str]
) -> None:
    """The caveat and the next step of a host-limited pair whose change is small: within the widest spread
    measured between processes of one host-limited program (HOST_PACED_WORST_SPREAD, scaled to the pair's
    host-paced share), one pair of captures cannot rule out that one side ran in a slow process."""
    if t.speedup is None or t.step_noise is None or not (_host_limited(mb) or _host_limited(ma)):
        return
    share = max(_host_paced(mb), _host_paced(ma))
    worst = 1.0 + share * th.HOST_PACED_WORST_SPREAD
    change = abs(math.log(t.speedup))
    if change >= math.log(worst):
        return
    names = " and ".join(n for n, m in (("before", mb), ("after", ma)) if _host_limited(m))
    if _verdict(t.speedup, t.thr) is not ComparisonVerdict.UNCHANGED:
        notes.append(
            f"one capture per side, and the {names} steady state is host-limited: processes of one host-limited "
            f"program have differed by up to {_fmt(worst)}x at this host-paced share ({_pct(share)}; the widest "
            "measured, HOST_PACED_WORST_SPREAD), more than this change, so the verdict rests on the typical "
            "process-to-process spread, not the worst"
        )
    z = th.TIMELINE_NOISE_Z
    room = (change / z) ** 2 - t.step_noise.capture_sd**2
    proc_var = t.step_noise.process_sd**2
    if change < math.log1p(th.TIMELINE_MIN_NOISE) or room <= 0:
        t.next_step = (
            f"A change of {_pct(abs(t.speedup - 1))} is below what repeated captures resolve (the GPU floor is "
            f"±{_pct(th.TIMELINE_MIN_NOISE)}): if a smaller gain matters, time both programs without a profiler "
            "in fresh processes, one median step per process, several processes each."
        )
        return
    n = max(3, math.ceil(proc_var / room))
    if n > 20:
        t.next_step = (
            f"Resolving a change of {_pct(abs(t.speedup - 1))} on this loop would take {n} captures per side: time "
            "both programs without a profiler in fresh processes instead (one median step per process, several "
            "processes each) and compare the medians across processes."
        )
        return
    t.next_step = (
        f"Capture each side {n} times, each in a fresh process, and compare the median of the captures' median "
        f"steps (kprof compare on each pair prints them as the durations before and after): with {n} captures "
        f"per side the process-to-process part of the interval shrinks {_fmt(math.sqrt(n))}x, enough to tell a "
        f"change of {_pct(abs(t.speedup - 1))} from the spread between processes."
    )


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
    step_noise: StepNoise | None = None
    next_step: str = ""


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
    t = _TimelineTiming(subject=subject, thr=th.TIMELINE_MIN_NOISE)
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
            _step_timing(t, sb, sa, _host_paced(mb), _host_paced(ma), notes)
        else:
            t.comparable_extensive = False
            t.noise = "no threshold: the steady states could not be matched"
    elif not sb.usable and not sa.usable:
        t.dur_b, t.dur_a = mb["wall_ns"], ma["wall_ns"]
        t.speedup = t.dur_b / t.dur_a if t.dur_a > 0 and t.dur_b > 0 else None
        t.source = "timeline capture: steady-state wall time (neither capture marks 3 or more steps)"
        t.step_noise = step_noise(None, None, _host_paced(mb), _host_paced(ma))
        t.thr = t.step_noise.threshold
        t.noise = t.step_noise.text
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
    t: _TimelineTiming, sb: StepTimes, sa: StepTimes, host_b: float, host_a: float, notes: list[str]
) -> None:
    """Time matched steps: the median step before and after, with the steps' own dispersion as noise."""
    t.dur_b, t.dur_a = float(np.median(sb.durations_ns)), float(np.median(sa.durations_ns))
    t.speedup = t.dur_b / t.dur_a if t.dur_a > 0 and t.dur_b > 0 else None
    how = "GPU-projected" if sb.projected and sa.projected else "host ranges on a side"
    t.source = (
        f"timeline steps: median step time ({how}), {len(sb.durations_ns)} steady-state steps before, "
        f"{len(sa.durations_ns)} after (the first step left out as warm-up)"
    )
    t.step_noise = step_noise(sb.durations_ns, sa.durations_ns, host_b, host_a)
    t.thr, t.noise = t.step_noise.threshold, t.step_noise.text
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
