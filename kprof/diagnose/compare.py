"""Verify a fix: compare a profile before a change with one after it.

:func:`compare_profiles` matches what can be matched, measures the speedup, takes both sides'
diagnoses and checks every ``expect`` of the before diagnosis against the after profile. It judges
loaded profiles only: :func:`kprof.compare` (:mod:`kprof.api`) loads the files and passes the
diagnoses in, and ``kprof compare`` (:mod:`kprof.cli`) prints the result. The result types live
in :mod:`kprof.comparison_model`.

Matching
    *Kernel reports* (ncu): launches by (name, grid, block); a kernel whose name matches but
    whose launch configuration changed is compared with a note. Durations taken under ncu are
    serialized and replayed: the speedup says so (pass timelines of both runs to take kernel
    durations from them instead). *Timelines* (nsys, PyTorch profiler): by iteration, i.e.
    profiler steps or the repeated NVTX range that the timeline diagnosis uses, each step
    projected onto the GPU through the correlation ids of the work it launched (an NVTX range
    marks when the host enqueued a step, not when the GPU ran it), per-step medians compared.
    Two captures without steps are compared capture against capture (steady-state wall time).
    An nsys capture may be compared with a PyTorch profiler trace of the same program.

Never a made-up speedup
    Different GPUs, no kernel in common, or a kernel report against a timeline raise
    :class:`~kprof.errors.KprofInputError` with one line naming both files and what differs.
    Timelines whose steady states cannot be matched (steps on one side only, differently named
    NVTX ranges) give a comparison with ``verdict="inconclusive"`` and no speedup.

Noise
    The verdict is ``improved`` or ``regressed`` only beyond a noise threshold, and the
    comparison says which threshold and why (``noise``): for ncu durations the measured
    launch-to-launch and process-to-process spread on the H200 (``NCU_DURATION_NOISE``); for
    timelines 3 combined standard errors of the two median step times, never below the
    measured run-to-run floor (``TIMELINE_MIN_NOISE``, or ``TIMELINE_HOST_BOUND_NOISE`` when a
    side is host-limited). Every threshold is in :mod:`kprof.thresholds` with its source.

Expectations
    Each :class:`~kprof.model.Expectation` of the before diagnosis is looked up in both
    profiles (ncu metrics and ``derived:*`` names through
    :func:`kprof.diagnose.kernel.metric_value`, timeline keys through
    :func:`kprof.diagnose.timeline.timeline_metrics`) and is ``met`` when the metric moved the
    predicted way by more than the noise and, given a target, covered at least half of the way
    to it (``EXPECTATION_MIN_PROGRESS``); ``met`` is None, with the reason, when a value is missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kprof import thresholds as th
from kprof.comparison_model import Comparison, ComparisonVerdict, ExpectationCheck
from kprof.diagnose.validity import is_damaged
from kprof.errors import KprofInputError
from kprof.kernel_model import KernelLaunch, KernelProfile
from kprof.model import Diagnosis, Direction, Expectation, Subject, SubjectKind
from kprof.timeline_model import Timeline

Diagnoser = Callable[[Timeline | KernelProfile, Timeline | None], list[Diagnosis]]
"""How a comparison gets the diagnoses of its two sides: ``(profile, timeline or None) -> diagnoses``,
as ``kprof.diagnose(profile, timeline=timeline)`` gives them (:func:`kprof.api.compare` passes it)."""

MAD_TO_SIGMA = 1.4826
"""Median absolute deviation to standard deviation, for a normal spread (a robust sigma: one slow
step, e.g. a garbage collection, does not inflate it)."""
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
"""Standard error of a sample median = 1.2533 sigma / sqrt(n), for a normal spread."""

UNDER_NCU = (
    "gpu__time_duration.sum measured under ncu: serialized and replayed, not the kernel's real duration "
    "(the ratio is what counts)"
)

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


# ============================================================================ steps


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class StepTimes:
    """A timeline's iterations and their steady-state durations, see :func:`step_times`."""

    label: str
    """``"profiler step"``, ``"NVTX range 'step #'"``, or ``""`` when the capture has no iterations."""
    host_start_ns: np.ndarray
    host_end_ns: np.ndarray
    gpu_start_ns: np.ndarray
    """Per step, the first start of the GPU work it launched; -1 where none is linked to it."""
    gpu_end_ns: np.ndarray
    durations_ns: np.ndarray
    """Steady-state per-step durations (steps 2..N: the first is warm-up), empty below 3 steps."""
    projected: bool
    """True when the durations come from the GPU work of each step (end to end), False when from the
    host ranges (the capture links no GPU work to the steps)."""

    @property
    def count(self) -> int:
        """Number of iterations in the capture."""
        return len(self.host_start_ns)

    @property
    def usable(self) -> bool:
        """At least MIN_ITERATIONS_FOR_WARMUP_DROP steps: a steady state with a dispersion of its own."""
        return len(self.durations_ns) >= 2 and self.count >= th.MIN_ITERATIONS_FOR_WARMUP_DROP

    def start_ns(self, i: int) -> int:
        """Where step ``i`` starts: on the GPU when projected, else on the host."""
        if self.projected and self.gpu_start_ns[i] >= 0:
            return int(self.gpu_start_ns[i])
        return int(self.host_start_ns[i])


def _iterations(tl: Timeline) -> tuple[np.ndarray, np.ndarray, str]:
    """Iteration windows sorted by start, and their label, by the timeline diagnosis's own rule
    (profiler steps, else the outermost repeated NVTX range that no library pushed)."""
    from kprof.diagnose.timeline import _iterations as timeline_iterations

    it = timeline_iterations(tl)
    if not len(it):
        empty = np.zeros(0, np.int64)
        return empty, empty, ""
    starts, ends = it.windows
    label = "profiler step" if it.kind == "profiler step" else f"{it.kind} {it.group!r}"
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64), label


def step_times(tl: Timeline) -> StepTimes:
    """The iterations of a timeline (profiler steps or repeated NVTX ranges), projected onto the GPU.

    A step's GPU work is every kernel, copy, memset and graph launch whose launching call (found
    through its correlation id) started inside the step's host range. The steady-state duration
    of step *j* is the time from the end of the previous step's GPU work to the end of its own:
    the loop's period whether the host or the GPU sets the pace (a host that runs ahead of the
    GPU makes host ranges far shorter than the steps). Steps without linked GPU work are skipped
    (the period spans them); with fewer than half of the steps linked, the host ranges are used
    (start to next start).

    Examples
    --------
    >>> st = step_times(Timeline(source="x.sqlite", format="nsys"))
    >>> st.count, st.usable
    (0, False)
    """
    hs, he, label = _iterations(tl)
    n = len(hs)
    big = np.iinfo(np.int64).max
    gs = np.full(n, big, np.int64)
    ge = np.full(n, -1, np.int64)
    api = tl.api
    if n and len(api):
        order = np.argsort(api.correlation, kind="stable")
        sc = api.correlation[order]
        for table in (tl.kernels, tl.copies, tl.memsets, tl.graphs):
            if len(table) == 0:
                continue
            corr = table.correlation
            i = np.searchsorted(sc, corr)
            ic = np.minimum(i, len(sc) - 1)
            ok = (i < len(sc)) & (sc[ic] == corr) & (corr >= 0)
            call = api.start_ns[order[ic[ok]]]
            step = np.searchsorted(hs, call, side="right") - 1
            inside = (step >= 0) & (call < he[np.maximum(step, 0)])
            st_ = step[inside]
            np.minimum.at(gs, st_, table.start_ns[ok][inside])
            np.maximum.at(ge, st_, table.end_ns[ok][inside])
    gs[ge < 0] = -1
    linked = ge >= 0
    durations = np.zeros(0, np.float64)
    projected = False
    if n >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        if linked[1:].sum() * 2 >= n - 1 and linked.sum() >= 2:
            projected = True
            idx = np.flatnonzero(linked)
            # step idx[j] ends its period at its own GPU end; the first linked step only starts the clock
            # (warm-up), and a period spanning unlinked steps is shared out between them
            durations = (np.diff(ge[idx]) / np.diff(idx)).astype(np.float64)
        else:
            per = np.empty(n, np.float64)
            per[:-1] = np.diff(hs)
            per[-1] = he[-1] - hs[-1]
            durations = per[1:]
    return StepTimes(
        label=label,
        host_start_ns=hs,
        host_end_ns=he,
        gpu_start_ns=gs,
        gpu_end_ns=ge,
        durations_ns=durations,
        projected=projected,
    )


def aligned_windows(
    before: StepTimes, after: StepTimes, steps: int = 2
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Windows of equal length that start at the same step in both timelines, for side-by-side plots.

    The common step is the middle one of the shorter capture (in the steady state); each window
    starts where that step starts (on the GPU when the steps are projected) and is as long as the
    longer of the two captures needs for ``steps`` steps, so both plots share one time scale.
    None when either capture has fewer than 3 steps.

    Examples
    --------
    >>> b, a = step_times(kprof.load("before.sqlite")), step_times(kprof.load("after.sqlite"))  # doctest: +SKIP
    >>> (wb, wa) = aligned_windows(b, a)  # doctest: +SKIP
    >>> plot_timeline(tl_before, window=wb); plot_timeline(tl_after, window=wa)  # doctest: +SKIP
    """
    if not (before.usable and after.usable):
        return None
    k = max(1, min(before.count, after.count) // 2)
    widths = []
    for s in (before, after):
        j = min(k + steps, s.count - 1)
        w = s.start_ns(j) - s.start_ns(k) if j > k else int(np.median(s.durations_ns)) * steps
        if s.count - 1 < k + steps:  # the capture ends first: extend by its median step
            w += int(np.median(s.durations_ns)) * (k + steps - j)
        widths.append(max(w, 1))
    width = max(widths)
    b0, a0 = before.start_ns(k), after.start_ns(k)
    return (b0, b0 + width), (a0, a0 + width)


# ============================================================================ noise and verdict


def _median_rel_se(x: np.ndarray) -> float | None:
    """Relative standard error of the median of ``x`` (robust sigma), None below 2 values."""
    if len(x) < 2:
        return None
    med = float(np.median(x))
    if med <= 0:
        return None
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(x - med)))
    return MEDIAN_SE_FACTOR * sigma / math.sqrt(len(x)) / med


def _unless_damaged(
    speedup: float | None, sides: Sequence[tuple[str, Diagnosis]], notes: list[str]
) -> float | None:
    """``speedup``, or None (an inconclusive comparison) when a side's data is damaged (its rows or
    values cannot be true): no speedup is measured on impossible data."""
    for path, d in sides:
        if is_damaged(d):
            notes.append(f"{path}: {d.headline[0].lower()}{d.headline[1:]} No speedup is measured on it.")
            speedup = None
    return speedup


def _verdict(speedup: float | None, threshold: float) -> ComparisonVerdict:
    if speedup is None:
        return ComparisonVerdict.INCONCLUSIVE
    if speedup > 1.0 + threshold:
        return ComparisonVerdict.IMPROVED
    if speedup < 1.0 / (1.0 + threshold):
        return ComparisonVerdict.REGRESSED
    return ComparisonVerdict.UNCHANGED


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _ncu_noise_text() -> str:
    return (
        f"±{_pct(th.NCU_DURATION_NOISE)}: one kernel's ncu duration varied by at most 0.92% across 3 processes x "
        "3 launches on the H200 (data/samples/ncu_noise.csv, --clock-control none); the threshold is over twice that"
    )


def _dispersion_noise(
    b: np.ndarray, a: np.ndarray, floor: float, floor_why: str, what: str
) -> tuple[float, str]:
    """max(z x combined relative standard error of the two medians, floor), and why."""
    se_b, se_a = _median_rel_se(b), _median_rel_se(a)
    if se_b is None or se_a is None:
        return (
            floor,
            f"±{_pct(floor)}: fewer than 2 {what} on a side, so no dispersion; fall back to {floor_why}",
        )
    disp = th.TIMELINE_NOISE_Z * math.hypot(se_b, se_a)
    own = (
        f"{th.TIMELINE_NOISE_Z:g} combined standard errors of the two median {what} "
        f"({len(b)} before, {len(a)} after) = ±{_pct(disp)}"
    )
    if disp >= floor:
        return disp, f"±{_pct(disp)}: {own}; above the floor of ±{_pct(floor)} ({floor_why})"
    return floor, f"±{_pct(floor)}, the floor: {floor_why}; the captures' own {own}"


# ============================================================================ expectations


def _num(v: float | None) -> float | None:
    """A float, or an int when integral (counts read as counts: 29, not 29.0)."""
    if v is None:
        return None
    f = float(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def check_expectation(
    e: Expectation,
    before: float | None,
    after: float | None,
    noise: float,
    *,
    missing_after: str = "",
    not_comparable: str = "",
) -> ExpectationCheck:
    """Decide whether one expectation was met (see the module docstring for the rule).

    ``before`` falls back to ``e.value_now``; a move smaller than ``noise`` (relative to the larger
    of the two values) is no move.

    Examples
    --------
    >>> e = Expectation(metric="derived:global_load_sectors_per_request", direction="down", target=4.0, value_now=32.0)
    >>> check_expectation(e, 32.0, 4.1, 0.02).met
    True
    >>> check_expectation(e, 32.0, 24.0, 0.02).reason
    '29% of the way to the target, at least 50% needed'
    """
    b = _num(before if before is not None else e.value_now)
    a = _num(after)
    target = _num(e.target)

    def out(met: bool | None, reason: str, progress: float | None = None) -> ExpectationCheck:
        return ExpectationCheck(
            metric=e.metric,
            direction=e.direction,
            target=target,
            before=b,
            after=a,
            met=met,
            label=e.label,
            unit=e.unit,
            reason=reason,
            progress=None if progress is None else round(progress, 4),
        )

    if not_comparable:
        return out(None, not_comparable)
    if a is None:
        return out(None, missing_after or "missing from the after profile")
    if b is None:
        return out(None, "no value before to compare with")
    sign = 1.0 if e.direction is Direction.UP else -1.0
    moved = sign * (a - b)
    tol = noise * max(abs(a), abs(b))
    has_target = target is not None and sign * (target - b) > 0
    progress = (a - b) / (target - b) if has_target and target is not None else None
    if moved <= tol:
        why = "moved the wrong way" if moved < -tol else f"did not move beyond the noise (±{_pct(noise)})"
        return out(False, why, progress)
    if progress is None:
        return out(True, f"moved {e.direction.value} as predicted, no target given")
    if progress >= 1.0:
        return out(True, "reached the target", progress)
    why = f"{progress:.0%} of the way to the target, at least {th.EXPECTATION_MIN_PROGRESS:.0%} needed"
    return out(progress >= th.EXPECTATION_MIN_PROGRESS, why, progress)


# ============================================================================ loading and matching


def _pair(b: str, a: str) -> str:
    return f"{b} vs {a}"


def _check_devices(devs_b: set[str], devs_a: set[str], fb: str, fa: str) -> None:
    if devs_b and devs_a and not (devs_b & devs_a):
        raise KprofInputError(
            _pair(fb, fa),
            f"captured on different GPUs ({', '.join(sorted(devs_b))} before, {', '.join(sorted(devs_a))} after): "
            "a speedup across GPUs measures the GPUs, not the change; profile both on one GPU",
        )


def _launch_key(k: KernelLaunch) -> tuple[str, tuple[int, ...] | None, tuple[int, ...] | None]:
    return (k.demangled_name or k.name, k.grid, k.block)


def _dims(v: Sequence[int] | None) -> str:
    return "?" if v is None else "x".join(str(int(x)) for x in v)


def _median_launch(group: list[KernelLaunch]) -> KernelLaunch:
    """The launch whose ncu duration is the (lower) median of the group, the first one if none has one."""
    timed = [(k.value("gpu__time_duration.sum"), i, k) for i, k in enumerate(group)]
    timed = [t for t in timed if t[0] is not None]
    if not timed:
        return group[0]
    timed.sort(key=lambda t: (t[0], t[1]))
    return timed[(len(timed) - 1) // 2][2]


def _timeline_kernel_durations(tl: Timeline | None, k: KernelLaunch) -> np.ndarray:
    if tl is None:
        return np.zeros(0)
    from kprof.diagnose.kernel import _timeline_matches  # the same name matching as diagnose(timeline=)

    durs, _coop = _timeline_matches(tl, k)
    return np.asarray(durs, np.float64)


# ============================================================================ kernels


def _kernel_diagnoses(
    profile: KernelProfile, path: str, tl: Timeline | None, diagnose: Diagnoser
) -> dict[int, Diagnosis]:
    """Every launch's diagnosis (as ``kprof diagnose`` gives it), by launch id."""
    return {
        d.subject.launch: (d if d.file else _replace_file(d, path))
        for d in diagnose(profile, tl)
        if d.subject.launch is not None
    }


def _diagnosis_of(diags: dict[int, Diagnosis], k: KernelLaunch, path: str) -> Diagnosis:
    if k.id not in diags:
        raise KprofInputError(path, f"kernel launch {k.id} ({k.name}) produced no diagnosis")
    return diags[k.id]


def _replace_file(d: Diagnosis, path: str) -> Diagnosis:
    import dataclasses

    return dataclasses.replace(d, file=path)


def _compare_kernels(
    pb: KernelProfile,
    pa: KernelProfile,
    fb: str,
    fa: str,
    tl_b: Timeline | None,
    tl_a: Timeline | None,
    diagnose: Diagnoser,
) -> list[Comparison]:
    if not pb.launches or not pa.launches:
        empty = fb if not pb.launches else fa
        raise KprofInputError(empty, "holds no kernel launch to compare")
    _check_devices({k.device for k in pb if k.device}, {k.device for k in pa if k.device}, fb, fa)

    def groups(p: KernelProfile) -> dict[tuple[Any, ...], list[KernelLaunch]]:
        out: dict[tuple[Any, ...], list[KernelLaunch]] = {}
        for k in p.launches:
            out.setdefault(_launch_key(k), []).append(k)
        return out

    gb, ga = groups(pb), groups(pa)
    used: set[tuple[Any, ...]] = set()
    matches: list[tuple[list[KernelLaunch], list[KernelLaunch], str]] = []
    unmatched_b: list[tuple[Any, ...]] = []
    for key, lb in gb.items():
        if key in ga:
            used.add(key)
            matches.append((lb, ga[key], ""))
        else:
            unmatched_b.append(key)
    for key in list(unmatched_b):
        cands = [k2 for k2 in ga if k2 not in used and (k2[0] == key[0] or ga[k2][0].name == gb[key][0].name)]
        if cands:
            k2 = cands[0]
            used.add(k2)
            unmatched_b.remove(key)
            note = (
                f"matched by name only: the launch configuration changed (grid {_dims(key[1])} -> {_dims(k2[1])}, "
                f"block {_dims(key[2])} -> {_dims(k2[2])}); the speedup compares the kernel's whole duration"
            )
            matches.append((gb[key], ga[k2], note))
    if not matches:
        nb = sorted({k.name for k in pb})
        na = sorted({k.name for k in pa})
        raise KprofInputError(
            _pair(fb, fa),
            f"no kernel in common (before: {', '.join(nb[:5])}{' ...' if len(nb) > 5 else ''}; after: "
            f"{', '.join(na[:5])}{' ...' if len(na) > 5 else ''}): nothing to compare, no speedup",
        )
    only_b = [gb[k][0].name for k in unmatched_b]
    only_a = [ga[k][0].name for k in ga if k not in used]
    common_notes = []
    if only_b:
        common_notes.append(f"only before (not compared): {', '.join(only_b)}")
    if only_a:
        common_notes.append(f"only after (not compared): {', '.join(only_a)}")

    out: list[Comparison] = []
    diags_b, diags_a = _kernel_diagnoses(pb, fb, tl_b, diagnose), _kernel_diagnoses(pa, fa, tl_a, diagnose)
    for lb, la, note in matches:
        out.append(
            _compare_kernel_group(lb, la, diags_b, diags_a, fb, fa, tl_b, tl_a, [note] if note else [])
        )
    out.sort(key=lambda c: -(c.duration_before_ns or 0.0))
    if common_notes and out:
        import dataclasses

        out[0] = dataclasses.replace(out[0], notes=(*out[0].notes, *common_notes))
    return out


def _compare_kernel_group(
    lb: list[KernelLaunch],
    la: list[KernelLaunch],
    diags_b: dict[int, Diagnosis],
    diags_a: dict[int, Diagnosis],
    fb: str,
    fa: str,
    tl_b: Timeline | None,
    tl_a: Timeline | None,
    notes: list[str],
) -> Comparison:
    from kprof.diagnose.kernel import metric_value

    kb, ka = _median_launch(lb), _median_launch(la)
    if kb.device and ka.device and kb.device != ka.device:
        _check_devices({kb.device}, {ka.device}, fb, fa)
    d_before = _diagnosis_of(diags_b, kb, fb)
    d_after = _diagnosis_of(diags_a, ka, fa)
    if len(lb) > 1 or len(la) > 1:
        notes.append(
            f"{len(lb)} launch(es) before and {len(la)} after: median durations; diagnoses and metrics of the "
            "median launch"
        )

    tb, ta = _timeline_kernel_durations(tl_b, kb), _timeline_kernel_durations(tl_a, ka)
    durs_b: np.ndarray
    durs_a: np.ndarray
    if len(tb) and len(ta):
        durs_b, durs_a = tb, ta
        source = (
            f"timeline: median duration of the kernel's {len(tb)} / {len(ta)} executions in the timelines"
        )
        floor_why = "the measured launch-to-launch spread under ncu (data/samples/ncu_noise.csv)"
        thr, noise = _dispersion_noise(tb, ta, th.NCU_DURATION_NOISE, floor_why, "kernel durations")
    else:
        if tl_b is not None or tl_a is not None:
            notes.append("the kernel is not in both timelines: durations measured under ncu")
        vb = [v for k in lb if (v := k.value("gpu__time_duration.sum")) is not None]
        va = [v for k in la if (v := k.value("gpu__time_duration.sum")) is not None]
        durs_b, durs_a = np.asarray(vb, np.float64), np.asarray(va, np.float64)
        source = UNDER_NCU
        thr, noise = th.NCU_DURATION_NOISE, _ncu_noise_text()
    dur_b = float(np.median(durs_b)) if len(durs_b) else None
    dur_a = float(np.median(durs_a)) if len(durs_a) else None
    # never a speedup from a missing or impossible (zero or negative) duration
    speedup = dur_b / dur_a if dur_b is not None and dur_a is not None and dur_b > 0 and dur_a > 0 else None
    if speedup is None:
        missing, dur = (fb, dur_b) if not (dur_b and dur_b > 0) else (fa, dur_a)
        notes.append(
            f"no duration in {missing} (gpu__time_duration.sum missing): no speedup; collect it with "
            "`ncu --section SpeedOfLight`"
            if dur is None
            else f"the duration in {missing} is {dur:g} ns, which no kernel takes: no speedup"
        )
    speedup = _unless_damaged(speedup, ((fb, d_before), (fa, d_after)), notes)

    checks = tuple(
        check_expectation(
            e,
            metric_value(kb, e.metric),
            metric_value(ka, e.metric),
            th.NCU_DURATION_NOISE,  # every expectation of a kernel is an ncu metric, measured under ncu
            missing_after=f"{e.metric} is not in the after report (collect the section that holds it)",
        )
        for e in d_before.expect
    )
    return Comparison(
        subject=d_before.subject,
        verdict=_verdict(speedup, thr),
        speedup=speedup,
        before=d_before,
        after=d_after,
        expectations=checks,
        noise_threshold=thr,
        noise=noise,
        duration_source=source,
        duration_before_ns=dur_b,
        duration_after_ns=dur_a,
        file_before=fb,
        file_after=fa,
        kind="kernel",
        notes=tuple(notes),
    )


# ============================================================================ timelines


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
    from kprof.diagnose.timeline import METRICS, timeline_metrics

    _check_devices({g.name for g in tb.gpus if g.name}, {g.name for g in ta.gpus if g.name}, fb, fa)
    d_before = _timeline_diagnosis(tb, fb, diagnose)
    d_after = _timeline_diagnosis(ta, fa, diagnose)
    mb, ma = timeline_metrics(tb), timeline_metrics(ta)
    sb, sa = step_times(tb), step_times(ta)
    notes: list[str] = []
    if tb.format != ta.format:
        notes.append(
            f"{_tool(tb)} capture before, {_tool(ta)} trace after: allowed for the same program, but the two "
            "profilers' overheads differ (the PyTorch profiler records every operator on the host), and the "
            "speedup carries that difference too"
        )
    if " " in tb.command and " " in ta.command and tb.command != ta.command:
        notes.append(f"commands: {tb.command!r} before, {ta.command!r} after")

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

    subject = d_before.subject
    comparable_extensive = True
    scale = 1.0
    speedup: float | None = None
    dur_b: float | None = None
    dur_a: float | None = None
    thr: float = floor
    noise = ""
    source = ""
    if not mb or not ma:
        empty = fb if not mb else fa
        notes.append(f"{empty} holds no GPU work: nothing to time")
        noise = "no threshold: no speedup was measured"
        comparable_extensive = False
    elif sb.usable and sa.usable:
        ok, note = _steps_match(sb, sa)
        if note:
            notes.append(note)
        if ok:
            dur_b, dur_a = float(np.median(sb.durations_ns)), float(np.median(sa.durations_ns))
            speedup = dur_b / dur_a if dur_a > 0 and dur_b > 0 else None
            how = "GPU-projected" if sb.projected and sa.projected else "host ranges on a side"
            source = (
                f"timeline steps: median step time ({how}), {len(sb.durations_ns)} steady-state steps before, "
                f"{len(sa.durations_ns)} after (the first step left out as warm-up)"
            )
            thr, noise = _dispersion_noise(sb.durations_ns, sa.durations_ns, floor, floor_why, "step times")
            for s, name in ((sb, "before"), (sa, "after")):
                if not s.projected:
                    notes.append(
                        f"the {name} steps link no GPU work (no correlation ids): step times from the host ranges, "
                        "which are shorter than the steps when the host runs ahead of the GPU"
                    )
            if sb.count != sa.count:
                scale = (sb.count - 1) / max(sa.count - 1, 1)
                notes.append(
                    f"{sb.count} steps before, {sa.count} after: the after capture's counts and times that grow "
                    f"with the number of steps are scaled to the before's {sb.count - 1} steady-state steps"
                )
            subject = Subject(kind=SubjectKind.RANGE, name=f"{sb.label} (median step)", device=subject.device)
        else:
            comparable_extensive = False
            noise = "no threshold: the steady states could not be matched"
    elif not sb.usable and not sa.usable:
        dur_b, dur_a = mb["wall_ns"], ma["wall_ns"]
        speedup = dur_b / dur_a if dur_a > 0 and dur_b > 0 else None
        source = "timeline capture: steady-state wall time (neither capture marks 3 or more steps)"
        thr = floor
        noise = (
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
        noise = "no threshold: the steady states could not be matched"
        comparable_extensive = False

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
        if e.metric in _EXTENSIVE and not comparable_extensive:
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
                value(ma, sa, e.metric, scale),
                thr if e.metric in _HOST_PACED else th.TIMELINE_MIN_NOISE,
                missing_after=missing,
                not_comparable=not_comp,
            )
        )
    if any(e.metric == "step_ns" for e in d_before.expect) and (sb.usable and sa.usable):
        notes.append("step_ns is the GPU-projected median step time here, on both sides")
    speedup = _unless_damaged(speedup, ((fb, d_before), (fa, d_after)), notes)
    return [
        Comparison(
            subject=subject,
            verdict=_verdict(speedup, thr),
            speedup=speedup,
            before=d_before,
            after=d_after,
            expectations=tuple(checks),
            noise_threshold=thr if speedup is not None else None,
            noise=noise,
            duration_source=source,
            duration_before_ns=dur_b,
            duration_after_ns=dur_a,
            file_before=fb,
            file_after=fa,
            kind="timeline",
            notes=tuple(notes),
        )
    ]


# ============================================================================ entry points


def compare_profiles(
    before: Timeline | KernelProfile,
    after: Timeline | KernelProfile,
    *,
    diagnose: Diagnoser,
    file_before: str | None = None,
    file_after: str | None = None,
    before_timeline: Timeline | None = None,
    after_timeline: Timeline | None = None,
) -> list[Comparison]:
    """Compare two loaded profiles of one kind: speedup, both diagnoses, expectations met.

    The judgement behind :func:`kprof.compare`, which loads the files and passes ``diagnose``
    (this module reads no file and calls no loader).

    Parameters
    ----------
    before, after
        Two :class:`~kprof.kernel_model.KernelProfile` or two :class:`~kprof.timeline_model.Timeline`.
    diagnose
        ``(profile, timeline or None) -> diagnoses``, as ``kprof.diagnose(profile, timeline=...)``.
    file_before, file_after
        The names to quote (default: each profile's ``source``).
    before_timeline, after_timeline
        For kernel reports: timelines of the same two runs; kernel durations come from them when
        both hold the kernel.

    Returns
    -------
    list of Comparison
        Kernel reports: one per matched kernel, the longest before first. Timelines: one.

    Raises
    ------
    KprofInputError
        The pair does not match (different GPUs, no kernel in common, a kernel report against a
        timeline): one line naming both files and what differs.

    Examples
    --------
    >>> from kprof.api import diagnose
    >>> cs = compare_profiles(before, after, diagnose=lambda p, tl: diagnose(p, timeline=tl))  # doctest: +SKIP
    """
    fb = file_before if file_before is not None else before.source
    fa = file_after if file_after is not None else after.source
    if isinstance(before, KernelProfile) and isinstance(after, KernelProfile):
        return _compare_kernels(before, after, fb, fa, before_timeline, after_timeline, diagnose)
    if isinstance(before, Timeline) and isinstance(after, Timeline):
        return _compare_timelines(before, after, fb, fa, diagnose)
    kb = "a timeline capture" if isinstance(before, Timeline) else "a kernel report"
    ka = "a timeline capture" if isinstance(after, Timeline) else "a kernel report"
    raise KprofInputError(
        _pair(fb, fa),
        f"{kb} before and {ka} after: compare two timelines or two kernel reports of the same program",
    )


__all__ = [
    "Comparison",
    "ComparisonVerdict",
    "Diagnoser",
    "ExpectationCheck",
    "StepTimes",
    "aligned_windows",
    "check_expectation",
    "compare_profiles",
    "step_times",
]
