"""How a comparison decides: the noise threshold a speedup must pass, the verdict, and each expectation
of the before diagnosis checked against the after profile (see :mod:`kprof.diagnose.compare`, "Noise"
and "Expectations")."""

from __future__ import annotations

import math
from collections.abc import Sequence

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
