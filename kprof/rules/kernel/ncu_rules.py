"""ncu's own rule results, for what kprof cannot measure itself.

A ``--page details`` CSV keeps ncu's rule messages but drops the memory tables: the excess those messages quote
(measured by ncu's source counters) stands in for kprof's own counts, at lower confidence, and kprof still decides
whether the waste explains the gap. The coalescing and bank-conflict rules (:mod:`~kprof.rules.kernel.memory`,
:mod:`~kprof.rules.kernel.shared`) call :func:`quoted_mechanism` with their own words; :func:`ncu_rule_hints`
quotes ncu's rules as unverified findings when a diagnosis could not check a mechanism.
"""

from __future__ import annotations

import re

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, unit_metric
from kprof.facts.units import MEMORY_UNITS, UNIT_WORDS
from kprof.kernel_model import KernelLaunch
from kprof.model import Direction, Evidence, Expectation, Finding
from kprof.rules.kernel.common import B, Mechanism, pc, scale_to_limiter, time_expectation

# When kprof's own counters are absent (a --page details CSV keeps ncu's rule results but drops the
# memory tables), ncu's rules still quote the measured excess ("3670016 excessive sectors (78% of the
# total ...)"). That measurement, not the rule's verdict or its speedup estimate, is used: kprof still
# decides whether the waste explains the gap (the inflated unit must be the busy one), at lower confidence.
_RULE_WASTE = {
    "UncoalescedGlobalAccess": (
        re.compile(r"\(([\d.]+)% of the total"),
        B.UNCOALESCED_GLOBAL_ACCESS,
        MEMORY_UNITS,
    ),
    "UncoalescedSharedAccess": (re.compile(r"\(([\d.]+)% of the total"), B.SHARED_BANK_CONFLICTS, ("l1",)),
    "SharedMemoryConflicts": (
        re.compile(r"represent ([\d.]+)% of the overall"),
        B.SHARED_BANK_CONFLICTS,
        ("l1",),
    ),
}


def from_ncu_rule(f: KernelFacts, rule_name: str) -> Mechanism | None:
    r = f.k.rule(rule_name)
    if r is None or rule_name not in _RULE_WASTE:
        return None
    pattern, bott, units = _RULE_WASTE[rule_name]
    m = pattern.search(r.message)
    if not m:
        return None
    waste = min(1.0, float(m.group(1)) / 100.0)
    if waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
        return None
    unit = max((u for u in units if u in f.util), key=lambda u: f.util[u], default=None)
    if unit is None:
        return None
    savings = waste * scale_to_limiter(f, f.util[unit])
    what = "global memory sectors" if bott is B.UNCOALESCED_GLOBAL_ACCESS else "shared-memory wavefronts"
    ev = [
        Evidence(
            name=f"excess {what} (quoted by ncu's {rule_name} rule)",
            value=round(100 * waste, 1),
            unit="%",
            reference="0% for coalesced, conflict-free access; measured by ncu's source counters",
            metric=rule_name,
        ),
        Evidence(
            name=f"{UNIT_WORDS[unit]} used",
            value=round(100 * f.util[unit], 1),
            unit="% of peak",
            reference="the waste is paid in this unit, the busiest one",
            metric=unit_metric(f, unit),
        ),
    ]
    t = time_expectation(f, savings)
    if bott is B.UNCOALESCED_GLOBAL_ACCESS:
        head = f"Uncoalesced global access: {pc(waste)}% of the global memory sectors carry no requested data"
        mech = (
            "Neighbouring lanes of a warp access scattered addresses, so each warp-wide access touches many "
            "32-byte sectors and the memory system moves whole sectors for a few useful bytes each."
        )
        fix = (
            "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the index roles, change "
            "the data layout (structure of arrays), or stage the tile through shared memory."
        )
        exp_metric, label = "derived:global_sectors_per_request", "global sectors per request"
    else:
        head = f"Shared-memory bank conflicts: {pc(waste)}% of the shared-memory wavefronts are replays"
        mech = (
            "Several lanes of a warp address different words in the same bank (typically a column of a "
            "row-major tile), so each access is split into one wavefront per conflicting word."
        )
        fix = "Pad the shared array by one word per row (e.g. tile[32][33]) or swizzle the index."
        exp_metric, label = "derived:shared_wavefronts_per_request", "shared-memory wavefronts per request"
    exp = [Expectation(metric=exp_metric, direction=Direction.DOWN, label=label)]
    if t:
        exp.append(t)
    return Mechanism(
        bottleneck=bott,
        savings=savings,
        headline=head + f", and {UNIT_WORDS[unit]} is the busiest unit ({pc(f.util[unit])}% of peak).",
        evidence=ev,
        mechanism=mech,
        fix=fix,
        expect=exp,
        confidence=0.6,
        would_raise="kprof's own sector/wavefront counts: the raw page (--page raw) or the .ncu-rep itself",
        inflates=units,
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
