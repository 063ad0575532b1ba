"""How a comparison decides: the noise threshold a speedup must pass, the verdict, and each expectation
of the before diagnosis checked against the after profile (see :mod:`kprof.diagnose.compare`, "Noise"
and "Expectations")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.comparison_model import ComparisonVerdict, ExpectationCheck
from kprof.diagnose.validity import is_damaged
from kprof.model import Diagnosis, Direction, Expectation

MAD_TO_SIGMA = 1.4826
"""Median absolute deviation to standard deviation, for a normal spread (a robust sigma: one slow
step, e.g. a garbage collection, does not inflate it)."""

MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
"""Standard error of a sample median = 1.2533 sigma / sqrt(n), for a normal spread."""

BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the bootstrap standard error of a median (with a seeded generator, so one pair of files gives
one interval on every run). The estimate's own relative error is about 1 / sqrt(2 x 1000) = 2%: the second
digit of a noise threshold, never its verdict."""


def _median_rel_se(x: np.ndarray) -> float | None:
    """Relative standard error of the median of ``x``: the standard deviation of the medians of
    BOOTSTRAP_RESAMPLES resamples (drawn with replacement) over the median. No assumption on the shape of
    the steps' spread: two kinds of steps alternating, or a long tail, widen it as they widen the median's
    own uncertainty. None below 2 values or for a median <= 0."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if n < 2:
        return None
    med = float(np.median(x))
    if med <= 0:
        return None
    rng = np.random.default_rng(0)
    meds = np.empty(BOOTSTRAP_RESAMPLES, np.float64)
    chunk = max(1, 2_000_000 // n)  # at most 2M draws (16 MB) at a time
    for i in range(0, BOOTSTRAP_RESAMPLES, chunk):
        k = min(chunk, BOOTSTRAP_RESAMPLES - i)
        meds[i : i + k] = np.median(x[rng.integers(0, n, size=(k, n))], axis=1)
    return float(np.std(meds, ddof=1)) / med


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
    """max(z x combined relative standard error of the two medians, floor), and why (kernel durations in
    timelines: no process term, the ncu floor covers it)."""
    se_b, se_a = _median_rel_se(b), _median_rel_se(a)
    if se_b is None or se_a is None:
        return (
            floor,
            f"±{_pct(floor)}: fewer than 2 {what} on a side, so no dispersion; fall back to {floor_why}",
        )
    disp = th.TIMELINE_NOISE_Z * math.hypot(se_b, se_a)
    own = (
        f"{th.TIMELINE_NOISE_Z:g} combined standard errors of the two median {what} "
        f"({len(b)} before, {len(a)} after; bootstrap) = ±{_pct(disp)}"
    )
    if disp >= floor:
        return disp, f"±{_pct(disp)}: {own}; above the floor of ±{_pct(floor)} ({floor_why})"
    return floor, f"±{_pct(floor)}, the floor: {floor_why}; the captures' own {own}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepNoise:
    """The noise of a speedup of two timelines: a threshold, why, and its two parts (see :func:`step_noise`)."""

    threshold: float
    """The relative change within which the verdict is ``unchanged``."""
    text: str
    capture: float | None
    """z x the two captures' own standard errors combined (relative), None without steps on a side."""
    process: float
    """z x the two sides' process-to-process terms combined (relative)."""
    process_sd: float
    """The process-to-process standard error of the speedup (relative, one sigma: what repeats shrink)."""
    capture_sd: float
    """The captures' own standard error of the speedup (relative, one sigma)."""


def step_noise(
    b: np.ndarray | None, a: np.ndarray | None, host_paced_before: float, host_paced_after: float
) -> StepNoise:
    """The noise of the ratio of two captures' median steps, as three standard errors of it.

    Two sources, added in quadrature: each capture's own uncertainty of its median step (the bootstrap
    standard error over its steady-state steps, :func:`_median_rel_se`; none when a side has no steps) and,
    per side, the process-to-process variation of the host-paced part of a step (its share of the step x
    HOST_PACED_PROCESS_SD: a GPU-limited step repeats across processes like its kernels, a host-limited one
    moves with the host). Never below TIMELINE_MIN_NOISE, the floor of GPU-limited steps.

    Examples
    --------
    >>> n = step_noise(np.full(50, 100.0), np.full(50, 80.0), 0.40, 0.05)
    >>> round(n.threshold, 3)  # 3 x sqrt((0.40 x 0.17)^2 + (0.05 x 0.17)^2)
    0.206
    """
    z, sd = th.TIMELINE_NOISE_Z, th.HOST_PACED_PROCESS_SD
    se_b = _median_rel_se(b) if b is not None else None
    se_a = _median_rel_se(a) if a is not None else None
    hb, ha = max(0.0, host_paced_before), max(0.0, host_paced_after)
    proc_sd = math.hypot(hb * sd, ha * sd)
    cap_sd = math.hypot(se_b, se_a) if se_b is not None and se_a is not None else None
    total = z * math.hypot(proc_sd, cap_sd or 0.0)
    parts = []
    if cap_sd is not None and b is not None and a is not None:
        parts.append(
            f"the captures' own step times (bootstrap standard errors of the two medians, {len(b)} steady-state "
            f"steps before, {len(a)} after): ±{_pct(z * cap_sd)}"
        )
    else:
        parts.append("no steps on a side, so no dispersion of the captures' own")
    parts.append(
        f"process to process: ±{_pct(z * proc_sd)} (the GPU idles waiting on the host {_pct(hb)} of the steady "
        f"state before and {_pct(ha)} after, and that host-paced time varies between processes by a standard "
        f"deviation of {_pct(sd)} on the H200, HOST_PACED_PROCESS_SD)"
    )
    why = f"{z:g} standard errors of the speedup, from " + "; and from ".join(parts)
    floor = th.TIMELINE_MIN_NOISE
    if total >= floor:
        text = f"±{_pct(total)}: {why}"
        thr = total
    else:
        text = (
            f"±{_pct(floor)}, the floor: GPU-limited steps repeat across processes no better than their kernels "
            f"(ncu_noise.csv); {why} = ±{_pct(total)}"
        )
        thr = floor
    return StepNoise(
        threshold=thr,
        text=text,
        capture=None if cap_sd is None else z * cap_sd,
        process=z * proc_sd,
        process_sd=proc_sd,
        capture_sd=cap_sd or 0.0,
    )


def speedup_interval(speedup: float | None, threshold: float | None) -> tuple[float, float] | None:
    """``(speedup / (1 + threshold), speedup x (1 + threshold))``: the verdict is ``improved`` or
    ``regressed`` exactly when it excludes 1. None without a speedup.

    Examples
    --------
    >>> speedup_interval(1.5, 0.2)
    (1.25, 1.8)
    """
    if speedup is None or threshold is None:
        return None
    return (round(speedup / (1.0 + threshold), 6), round(speedup * (1.0 + threshold), 6))


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
