"""What every kernel rule shares: :class:`Mechanism` (a rule's finding before it is ranked), the duration
expectation bounded by the physical floor, how a waste share turns into time, evidence builders, and the exact
ncu commands a next step names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kprof import commands
from kprof import thresholds as th
from kprof.facts.kernel import (
    UNDER_NCU,
    KernelFacts,
    fp32_issue_note,
    kernel_floor_parts,
    unit_metric,
    unit_words,
)
from kprof.facts.names import DURATION, SECTION_OF
from kprof.facts.stalls import STALL_WORDS, stall_metric
from kprof.facts.units import UNIT_WORDS
from kprof.kernel_model import KernelLaunch
from kprof.model import Bottleneck, Direction, Evidence, Expectation, Finding, Subject, SubjectKind

B = Bottleneck


# ------------------------------------------------------------------------------------ helpers
def cap(text: str) -> str:
    """First letter upper case, the rest untouched (``str.capitalize`` would turn "L2" into "l2")."""
    return text[:1].upper() + text[1:]


def pc(fraction: float) -> str:
    """A fraction as the percentage evidence quotes (one decimal, no trailing zero): 0.9071 -> "90.7"."""
    return f"{round(100 * fraction, 1):g}"


def excess_words(actual: float, ideal: float, what: str, whole: float, whole_words: str) -> str:
    """``"87.5% of the load sectors ... (77.8% of all global sectors, stores included)"``: the excess that ``actual``
    units per request leave over ``ideal`` (1 - ideal/actual, the share a reader computes from the two numbers
    quoted before it) as a share of ``what``, then the share of the whole traffic (``whole``, 0..1, the waste the
    rule weighs) under its own base, ``whole_words``, when the two differ in print.

    Examples
    --------
    >>> excess_words(32, 4, "the load sectors carry no requested data", 0.7778, "all global sectors, stores included")
    '87.5% of the load sectors carry no requested data (77.8% of all global sectors, stores included)'
    >>> excess_words(32, 4, "the load sectors carry no requested data", 0.875, "all global sectors")
    '87.5% of the load sectors carry no requested data'
    """
    own = f"{pc(max(0.0, 1.0 - ideal / actual)) if actual > 0 else '0'}%"
    all_ = f"{pc(whole)}%"
    return f"{own} of {what}" + (f" ({all_} of {whole_words})" if all_ != own else "")


def fmt_ns(ns: float) -> str:
    """A duration for a sentence (``1.4 ms``, ``52.1 µs``, ``800 ns``)."""
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.0f} ns"


# ------------------------------------------------------------------------------------ mechanisms
@dataclass(slots=True)
class Mechanism:
    """What a mechanism rule found, before the verdict ranks it against the gap to the roof."""

    bottleneck: Bottleneck
    savings: float
    """Fraction of the kernel's time that fixing it would remove (0..1)."""
    headline: str
    evidence: list[Evidence]
    mechanism: str
    fix: str
    expect: list[Expectation]
    confidence: float
    would_raise: str
    inflates: tuple[str, ...] = ()
    """Units whose work it inflates with waste."""
    waste: float = 0.0
    """Fraction of those units' work that is waste."""
    blocks_healthy: bool = False
    """True when the roof itself is the wrong one (matrix work off the tensor cores)."""
    fix_unit: str | None = None
    """The unit the fix moves the work to (``"tensor"``), for the floor of the predicted duration."""


def time_expectation(
    f: KernelFacts,
    savings: float,
    fix_unit: str | None = None,
    why: str = "the waste costs",
    issue_kept: float | None = None,
) -> Expectation | None:
    """Duration down by ``savings``, never below the reachable floor (:func:`kernel_floor_ns` at the healthy
    fraction of each peak) for the unit the fix uses; None when that leaves no gain to predict."""
    d = f.v(DURATION)
    if d is None:
        return None
    target = d * (1.0 - savings)
    basis = f"less the {pc(savings)}% of it {why}"
    parts = kernel_floor_parts(f.k, fix_unit, th.HEALTHY_FRACTION_OF_PEAK, issue_kept)
    if parts:
        floor, words = max(parts)
        if min(d, floor) >= target - 0.5:  # the floor binds (or the saving was already clamped to it)
            target, basis = max(target, min(d, floor)), f"the floor: {words}"
    if round(target, 0) >= round(d, 0):
        return None
    return Expectation(
        metric=DURATION,
        direction=Direction.DOWN,
        target=round(target, 0),
        unit="ns",
        value_now=round(d, 0),
        label=f"kernel duration ({UNDER_NCU})",
        basis=basis,
    )


def scale_to_limiter(f: KernelFacts, unit_util: float | None, stalls: tuple[str, ...] = ()) -> float:
    """How much of a unit's waste shows in the kernel's time.

    A unit at its roof (>= the healthy fraction) sets the pace: its waste is time, in proportion to how
    busy it is next to the busiest unit. Below that, the kernel waits rather than streams, and the waste
    costs the share of warp stall cycles spent on that unit (``stalls``: the reasons it causes), when the
    report has the stall breakdown.
    """
    if unit_util is None:  # the report does not say how busy the unit is: the waste share is an upper bound
        by_util, unit_util = 1.0, 0.0
    else:
        by_util = 1.0 if f.u_max <= 0 else max(0.0, min(1.0, unit_util / f.u_max))
    if not stalls or unit_util >= th.HEALTHY_FRACTION_OF_PEAK:
        return by_util
    reasons = f.stalls
    total = sum(reasons.values())
    if total <= 0:
        return by_util
    return min(by_util, sum(reasons.get(r, 0.0) for r in stalls) / total)


def pace_savings(f: KernelFacts, unit: str, util_after: float) -> float:
    """The share of the time a fix saves when ``unit`` drops to ``util_after`` and the kernel then runs at the pace
    of its busiest unit (this one, or the next busiest; instruction issue moves with the fix and is left out)."""
    others = max((v for u, v in f.util.items() if u not in (unit, "issue")), default=0.0)
    after = max(util_after, others)
    return max(0.0, 1.0 - after / max(f.u_max, 1e-9))


def excess_share(
    loads: tuple[float | None, float | None, float],
    stores: tuple[float | None, float | None, float],
    ncu_actual: float | None,
    ncu_ideal: float | None,
    *more: tuple[float | None, float | None, float],
) -> float | None:
    """Share of the memory units moved (sectors, wavefronts) that an ideal access pattern would not
    need, from ``(units, requests, ideal units per request)`` of loads and stores (and ``more`` kinds:
    shared atomics); ncu's own per-instruction ideal replaces ours when the report has it. None when
    nothing moved, or when ncu's ideal shows no excess beyond COALESCING_TOLERANCE."""
    groups = (loads, stores, *more)
    actual = sum(g[0] or 0.0 for g in groups)
    if actual <= 0:
        return None
    ideal_total = sum((g[1] or 0.0) * g[2] for g in groups)
    waste = max(0.0, 1.0 - ideal_total / actual)
    if ncu_actual and ncu_ideal is not None:
        waste = max(0.0, 1.0 - ncu_ideal / ncu_actual)
        if waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
            return None
    return waste


def with_duration(
    f: KernelFacts,
    expect: list[Expectation],
    savings: float,
    fix_unit: str | None = None,
    why: str = "the waste costs",
    issue_kept: float | None = None,
) -> list[Expectation]:
    """``expect``, then the kernel duration the fix predicts (:func:`time_expectation`) when it leaves a gain;
    ``issue_kept``: the share of the warp instructions the fix keeps, whose issue time is a floor too."""
    t = time_expectation(f, savings, fix_unit, why, issue_kept)
    return [*expect, t] if t else expect


def findings_of(mechs: Sequence[Mechanism], gap: float | None) -> tuple[Finding, ...]:
    """Mechanisms as secondary findings, each with the share of the gap (to the roof) it explains; ``gap`` None
    when the report cannot weigh them (no SpeedOfLight) or they are advice."""
    return tuple(
        Finding(
            bottleneck=m.bottleneck,
            headline=m.headline,
            evidence=tuple(m.evidence[:3]),
            share=None if gap is None else round(min(1.0, m.savings / gap), 3),
        )
        for m in mechs
    )


# ------------------------------------------------------------------------------------ evidence
def unit_used(
    f: KernelFacts,
    unit: str,
    reference: str,
    util: float | None = None,
    reference_value: float | None = None,
) -> Evidence:
    """``<unit> used``: the unit's use in % of its peak over the elapsed cycles (``f.util``, or ``util``), under the
    metric it was read from."""
    own = util is None or util == f.util.get(unit)  # the unit's own value, read as unit_utilization did
    note = fp32_issue_note(f) if unit == "fp32" and own else ""
    return Evidence(
        name=f"{unit_words(f, unit) if own else UNIT_WORDS[unit]} used",
        value=round(100 * (f.util[unit] if util is None else util), 1),
        unit="% of peak",
        reference=f"{note}; {reference}" if note else reference,
        reference_value=reference_value,
        metric=unit_metric(f, unit),
    )


def stall_evidence(k: KernelLaunch, reason: str, value: float, reference: str) -> Evidence:
    """Stall ``reason`` with its value, under the metric it was read from (:func:`~kprof.facts.stalls.stall_metric`)."""
    metric, unit = stall_metric(k, reason)
    return Evidence(
        name=f"top warp stall: {reason}", value=round(value, 2), unit=unit, reference=reference, metric=metric
    )


def top_stall_evidence(f: KernelFacts, reference: str | None = None) -> Evidence | None:
    """The top warp stall reason as evidence (its value, under the metric it came from); ``reference`` defaults to
    what the stall means (:data:`~kprof.facts.stalls.STALL_WORDS`). None without stall reasons."""
    top = f.top_stall
    if top is None:
        return None
    words = reference if reference is not None else STALL_WORDS.get(top, (top, ""))[0]
    return stall_evidence(f.k, top, f.stalls[top], words)


# ------------------------------------------------------------------------------------ the diagnosis
def subject(k: KernelLaunch) -> Subject:
    """The diagnosed launch: name, grid, block, launch id, device."""
    return Subject(
        kind=SubjectKind.KERNEL, name=k.display_name, grid=k.grid, block=k.block, launch=k.id, device=k.device
    )


def ncu_command(
    k: KernelLaunch,
    what: str = "--set full",
    *,
    cooperative: bool = False,
    source: str | None = None,
    program: str | None = None,
) -> str:
    """The exact ncu command that profiles this launch again: kprof's capture flags (:mod:`kprof.commands`),
    ``what`` (``--set full`` or ``--section X ...``), written beside the diagnosed report."""
    sections = tuple(what.split()[1::2]) if what.startswith("--section") else ()
    return commands.kernel_recapture(
        k.name or "NAME", source, sections=sections, cooperative=cooperative, program=program
    )


def after_command(
    k: KernelLaunch, cooperative: bool = False, source: str | None = None, program: str | None = None
) -> str:
    """The capture to take once the fix is in, and the comparison with this report (:mod:`kprof.commands`)."""
    return commands.kernel_after_change(k.name or "kernel", source, cooperative=cooperative, program=program)


def recapture(f: KernelFacts, what: str = "--set full") -> str:
    """:func:`ncu_command` for the launch of ``f``."""
    return ncu_command(f.k, what, cooperative=f.cooperative, source=f.source, program=f.program)


def after_change(f: KernelFacts) -> str:
    """:func:`after_command` for the launch of ``f``: the capture to take once the fix is in, and the comparison."""
    return after_command(f.k, f.cooperative, f.source, f.program)


def missing_command(f: KernelFacts, needed: Iterable[str]) -> str:
    """The command that collects the sections of ``needed`` the report lacks, in backticks; "" when it has
    them all."""
    secs = [SECTION_OF[n] for n in needed if n in f.missing]
    if not secs:
        return ""
    if f.source_format == "ncu-csv-details":
        # The details page drops ncu's tables and source counters even when they were collected.
        return (
            "`ncu --import <report>.ncu-rep --csv --page raw > <report>.raw.csv` (the details page leaves out "
            f"{', '.join(secs)}; or diagnose the .ncu-rep itself); if the report lacks them: `{recapture(f)}`"
        )
    if len(secs) > 2:
        return f"`{recapture(f)}`"
    return f"`{recapture(f, ' '.join(f'--section {s}' for s in secs))}`"
