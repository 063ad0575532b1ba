"""ncu's own rule results, for what kprof cannot measure itself.

A ``--page details`` CSV keeps ncu's rule messages but drops the memory tables: the excess those messages quote
(measured by ncu's source counters) stands in for kprof's own counts, at lower confidence, and kprof still decides
whether the waste explains the gap. The coalescing and bank-conflict rules (:mod:`~kprof.rules.kernel.memory`,
:mod:`~kprof.rules.kernel.shared`) call :func:`quoted_mechanism` with their own words; :func:`ncu_rule_hints`
quotes ncu's rules as unverified findings when a diagnosis could not check a mechanism.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts
from kprof.facts.quantities import unit_of
from kprof.facts.units import UNIT_WORDS
from kprof.kernel_model import KernelLaunch
from kprof.model import Bottleneck, Direction, Evidence, Expectation, Finding
from kprof.rules.kernel.common import B, Mechanism, pc, scale_to_limiter, unit_used, with_duration


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotedRule:
    """How a kprof rule reads the excess one of ncu's rules quotes, and says what it means."""

    rule: str
    """ncu's rule identifier (``UncoalescedGlobalAccess``)."""
    share: re.Pattern[str]
    """Where the message quotes the excess as a percentage ("(78% of the total")."""
    bottleneck: Bottleneck
    units: tuple[str, ...]
    """The units the excess inflates; the busiest of them pays for it."""
    what: str
    """What the excess is made of, for the evidence ("global memory sectors")."""
    headline: str
    """The headline up to its comma, with ``{waste}`` where the quoted percentage goes."""
    mechanism: str
    fix: str
    expect_metric: str
    expect_label: str


def quoted_mechanism(f: KernelFacts, q: QuotedRule) -> Mechanism | None:
    """The mechanism ncu's rule ``q.rule`` measured, when the report quotes it and kprof's own counters are absent.

    A ``--page details`` CSV keeps ncu's rule results but drops the memory tables; ncu's rules still quote the
    measured excess ("3670016 excessive sectors (78% of the total ..."). That measurement, not the rule's verdict
    or its speedup estimate, is used: the waste must reach COALESCING_TOLERANCE like kprof's own, and it costs
    time only in proportion to how busy the inflated unit is (at CONFIDENCE_PARTIAL).
    """
    r = f.k.rule(q.rule)
    m = q.share.search(r.message) if r is not None else None
    if m is None:
        return None
    waste = min(1.0, float(m.group(1)) / 100.0)
    if waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
        return None
    unit = max((u for u in q.units if u in f.util), key=lambda u: f.util[u], default=None)
    if unit is None:
        return None
    savings = waste * scale_to_limiter(f, f.util[unit])
    ev = [
        Evidence(
            name=f"excess {q.what} (quoted by ncu's {q.rule} rule)",
            value=round(100 * waste, 1),
            unit="%",
            reference="0% for coalesced, conflict-free access; measured by ncu's source counters",
            metric=q.rule,
        ),
        unit_used(f, unit, "the waste is paid in this unit, the busiest one"),
    ]
    return Mechanism(
        bottleneck=q.bottleneck,
        savings=savings,
        headline=q.headline.format(waste=pc(waste))
        + f", and {UNIT_WORDS[unit]} is the busiest unit ({pc(f.util[unit])}% of peak).",
        evidence=ev,
        mechanism=q.mechanism,
        fix=q.fix,
        expect=with_duration(
            f,
            [
                Expectation(
                    metric=q.expect_metric,
                    direction=Direction.DOWN,
                    unit=unit_of(q.expect_metric),
                    label=q.expect_label,
                )
            ],
            savings,
        ),
        confidence=th.CONFIDENCE_PARTIAL,
        would_raise="kprof's own sector/wavefront counts: the raw page (--page raw) or the .ncu-rep itself",
        inflates=q.units,
        waste=waste,
    )


# ncu rule identifiers -> the vocabulary, for quoting ncu's own hints when kprof cannot check them itself.
NCU_RULE_BOTTLENECK = {
    "UncoalescedGlobalAccess": B.UNCOALESCED_GLOBAL_ACCESS,
    "SharedMemoryConflicts": B.SHARED_BANK_CONFLICTS,
    "UncoalescedSharedAccess": B.SHARED_BANK_CONFLICTS,
    "ThreadDivergence": B.WARP_DIVERGENCE,
    "TheoreticalOccupancy": B.OCCUPANCY_LIMITED,
    "RegisterSpilling": B.LOCAL_MEMORY_SPILL,
}


def ncu_rule_hints(k: KernelLaunch) -> tuple[Finding, ...]:
    """ncu's own rules (secondary evidence, unverified) for a diagnosis that could not check the mechanism."""
    out: list[Finding] = []
    for r in sorted(k.rules, key=lambda r: -(r.speedup_estimate or 0.0)):
        b = NCU_RULE_BOTTLENECK.get(r.name)
        if b is None and r.name == "LaunchConfiguration":
            b = (
                B.SMALL_GRID
                if "small grid" in r.title.lower()
                else B.TAIL_EFFECT
                if "tail" in r.title.lower()
                else None
            )
        if b is None or any(f.bottleneck is b for f in out):
            continue
        est = f" (ncu estimates {r.speedup_estimate:.0f}% speedup)" if r.speedup_estimate is not None else ""
        msg = " ".join(r.message.split())[:200]
        out.append(
            Finding(
                bottleneck=b,
                headline=f"ncu's rule {r.name}{est}, not verified by kprof: {msg}",
                evidence=(
                    Evidence(
                        name=f"ncu rule {r.name}",
                        value=r.speedup_estimate,
                        unit="% est. speedup",
                        reference="ncu's estimate, secondary evidence",
                        metric=r.name,
                    ),
                ),
                share=None,
            )
        )
    return tuple(out[:3])
