"""The resource verdict when no mechanism explains the gap: the unit the kernel keeps busiest
(``dram_bandwidth_bound``, ``l2_bandwidth_bound``, ``l1_shared_bandwidth_bound``, ``compute_bound``,
``tensor_core_bound``, ``instruction_bound``) or ``latency_bound``, explained by the warp stalls and occupancy.

A memory level below its roof is not the limit unless its own queue is full: the bandwidth a kernel draws is the
bytes it keeps in flight over the latency (Little's law), so spare bandwidth while warps wait on its results is
latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kprof import thresholds as th
from kprof.facts.kernel import (
    UNDER_NCU,
    KernelFacts,
    dram_bytes,
    fp32_issue_note,
    sm_busy_words,
    unit_metric,
    unit_words,
)
from kprof.facts.names import ACHIEVED_OCC, DURATION, ISSUE_ACTIVE, L2_READ_HIT_RATE, L2_SECTORS, SECTION_OF
from kprof.facts.stalls import STALL_WORDS, UNIT_THROTTLES
from kprof.facts.units import MEMORY_UNITS, UNIT_WORDS, USEFUL_UNITS
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Verdict, _fmt
from kprof.rules.kernel.common import (
    B,
    Mechanism,
    after_change,
    cap,
    findings_of,
    fmt_ns,
    missing_command,
    pc,
    subject,
    time_expectation,
    top_stall_evidence,
)
from kprof.rules.kernel.latency import Busiest, busiest_any, dependent_words, latency_words
from kprof.rules.kernel.ncu_rules import ncu_rule_hints

RESOURCE_OF_UNIT = {
    "dram": B.DRAM_BANDWIDTH_BOUND,
    "l2": B.L2_BANDWIDTH_BOUND,
    "l1": B.L1_SHARED_BANDWIDTH_BOUND,
    "tensor": B.TENSOR_CORE_BOUND,
    "fp32": B.COMPUTE_BOUND,
    "fp64": B.COMPUTE_BOUND,
    "xu": B.COMPUTE_BOUND,
    "int": B.COMPUTE_BOUND,
    "issue": B.INSTRUCTION_BOUND,
}
"""The resource id of each unit (:data:`~kprof.facts.units.UNIT_WORDS`)."""

_BELOW_ROOF_FIX = {
    "dram": "Move fewer bytes (fusion, narrower types) and keep more loads in flight (128-bit loads, unrolling).",
    "l2": "Improve reuse in shared memory/registers so fewer requests reach L2.",
    "l1": "Use wider shared/global accesses and register tiling so fewer L1 wavefronts are needed.",
    "tensor": "Feed the tensor cores better: larger tiles, deeper async pipelines (TMA/cp.async), fewer epilogue "
    "stalls.",
    "fp32": "Raise FMA density: fewer non-FMA instructions per FLOP.",
    "fp64": "Raise FP64 FMA density (DFMA instead of DMUL+DADD).",
    "xu": "Evaluate fewer special functions per result, or move some to polynomial approximations on the FMA pipe.",
    "int": "The integer pipes do the algorithm's own work (integer math on the loaded data): do fewer integer "
    "operations per result (32-bit arithmetic where the values fit: a 64-bit multiply is several IMADs, a "
    "64-bit shift two funnel shifts), and give each thread independent chains (several keys per thread, "
    "interleaved) so both integer pipes issue every cycle.",
    "issue": "Execute fewer instructions per result.",
}
"""The fix per unit when it is the busiest but not at its roof (or at it, without doing only useful work)."""


NO_MECHANISM = " and no single mechanism measured here explains the difference"
"""The clause of a below-roof resource mechanism that no rule explained; dropped where the localizer then names the
construct on the line that explains it (:func:`kprof.diagnose.localize.localize`)."""


def l2_passes_dram_stream(f: KernelFacts) -> bool:
    """True when L2 reads mostly miss (hit rate below L2_STREAMING_READ_HIT_RATE) and DRAM moves a matching share
    of the L2's traffic (L2_STREAM_DRAM_SHARE, where both are counted): the L2 is passing a DRAM stream through, so
    the stream is DRAM's. Traffic that stays in L2 (stores re-writing the same lines, spills) is not a stream
    however few of its reads hit."""
    hit = f.v(L2_READ_HIT_RATE)
    if hit is None or hit / 100.0 >= th.L2_STREAMING_READ_HIT_RATE or "dram" not in f.util:
        return False
    sectors, moved = f.v(L2_SECTORS), dram_bytes(f.k)
    return not sectors or moved is None or moved / (sectors * th.SECTOR_BYTES) >= th.L2_STREAM_DRAM_SHARE


def why_not_healthy(f: KernelFacts, unit: str, found: Sequence[Mechanism]) -> str:
    """Why a unit at >= the healthy fraction is not called healthy (one clause)."""
    if not f.fills_gpu():
        blocks, sms = f.k.blocks, f.sm_count
        grid = f" ({blocks} blocks for {sms} SMs)" if blocks is not None and sms else ""
        return f"the grid does not fill the GPU{grid}"
    wrong = next((m for m in found if m.blocks_healthy), None)
    if wrong is not None:
        return (
            "its work is not the work the algorithm needs: "
            + wrong.headline[:1].lower()
            + wrong.headline[1:].rstrip(".")
        )
    waste = max((m.waste for m in found if unit in m.inflates), default=0.0)
    if waste > 0:
        return f"{pc(waste)}% of its traffic is waste, so its useful work is below the roof"
    if unit in MEMORY_UNITS and "memory" in f.missing:
        return "whether its traffic is useful (coalesced, conflict-free) cannot be told without the memory tables"
    return "its useful share is below the roof"


@dataclass(frozen=True, slots=True)
class _Case:
    """What the resource verdict decided: the limiting unit, and whether the kernel waits (latency)."""

    unit: str
    util: float
    latency: bool
    at_roof: bool
    below_roof: bool
    """A memory level below its roof whose own queue is not full: latency, named after the level."""
    dependent: tuple[Evidence, str, str] | None
    """Evidence, mechanism and fix of data-dependent loads (:func:`~kprof.rules.kernel.latency.dependent_words`)."""
    why: str
    """Why a unit at its roof is not healthy (:func:`why_not_healthy`), "" otherwise."""
    busiest: Busiest

    @property
    def plain_latency(self) -> bool:
        """Latency bound with no unit to name: every unit below LATENCY_BOUND_FRACTION."""
        return self.latency and not self.below_roof and self.dependent is None


def _classify(f: KernelFacts, found: Sequence[Mechanism]) -> _Case:
    """Latency (every unit below LATENCY_BOUND_FRACTION), a resource at or below its roof, or a memory level below
    it that is latency in disguise."""
    unit, util = f.limiter()
    latency = (
        max(f.util.get("issue", 0.0), f.mem_max()[1], *(f.util.get(u, 0.0) for u in USEFUL_UNITS))
        < th.LATENCY_BOUND_FRACTION
    )
    at_roof = util >= th.HEALTHY_FRACTION_OF_PEAK
    dependent = dependent_words(f) if (latency or unit in MEMORY_UNITS) else None
    if dependent is not None and not latency:
        # The memory level is busy with the sectors of data-dependent loads (a chase, gather or probe: one
        # sector per lane by nature). Its *useful* work is what counts: below the roof, the kernel waits on
        # loads it cannot issue before the previous one returns; that is latency, whatever the raw utilisation.
        waste = max((m.waste for m in found if unit in m.inflates), default=0.0)
        if util * (1.0 - waste) < th.HEALTHY_FRACTION_OF_PEAK:
            latency = True
    # A memory level below its roof is not what limits the kernel unless its own queue is full (UNIT_THROTTLES):
    # the bandwidth a kernel draws is the bytes it keeps in flight over the memory latency (Little's law), so a
    # level with spare bandwidth while warps wait on its results means too few requests in flight: latency.
    # Naming the level ("L2 bound at 63%, short of the roof") would send the user to reduce traffic that is not
    # the limit. Compute pipes keep their name below the roof: their busy cycles are the work itself, and the gap
    # is how well they are fed.
    below_roof = (
        not latency
        and not at_roof
        and unit in MEMORY_UNITS
        and f.top_stall not in UNIT_THROTTLES.get(unit, ())
    )
    latency = latency or below_roof
    why = why_not_healthy(f, unit, found) if at_roof and not latency else ""
    return _Case(unit, util, latency, at_roof, below_roof, dependent, why, busiest_any(f))


def _busiest_evidence(f: KernelFacts, c: _Case) -> Evidence:
    roof, lat = 100 * th.HEALTHY_FRACTION_OF_PEAK, 100 * th.LATENCY_BOUND_FRACTION
    if c.latency and c.dependent is not None:
        reference = "busy with the scattered sectors of data-dependent loads, not with work it streams"
    elif c.below_roof:
        reference = f"below the {roof:.0f}% roof: not saturated, the kernel waits on its results"
    elif c.latency:
        reference = f"below {lat:.0f}% everywhere: latency bound (ncu's SOL rule)"
    elif c.at_roof:
        reference = f"at or above the {roof:.0f}% roof, but {c.why}"
    else:
        reference = f"below the {roof:.0f}% that counts as at the roof"
    plain = c.plain_latency
    note = fp32_issue_note(f) if c.unit == "fp32" and not plain else ""
    if note:
        reference = f"{note}; {reference}"
    return Evidence(
        name=f"busiest unit: {c.busiest[2] if plain else unit_words(f, c.unit)}",
        value=round(100 * (c.busiest[1] if plain else c.util), 1),
        unit="% of peak",
        reference=reference,
        reference_value=round(
            100
            * (th.LATENCY_BOUND_FRACTION if c.latency and not c.below_roof else th.HEALTHY_FRACTION_OF_PEAK),
            1,
        ),
        metric=c.busiest[3] if plain else unit_metric(f, c.unit),
    )


def _latency_text(f: KernelFacts, c: _Case) -> tuple[str, str, str]:
    """(headline, mechanism, fix) of a latency-bound kernel."""
    top = f.top_stall
    stall_words = STALL_WORDS.get(top, (top, ""))[0] if top else ""
    words, util = UNIT_WORDS[c.unit], c.util
    if c.dependent is not None:
        headline = (
            f"Latency bound by data-dependent loads: the global loads' addresses come from loaded data (a chase, "
            f"gather or probe), so few loads are in flight; {words} at {pc(util)}% of peak carries "
            "their scattered sectors."
        )
        return headline, c.dependent[1], c.dependent[2]
    fix = (
        cap(STALL_WORDS[top][1]) + "."
        if top in STALL_WORDS
        else "Keep more independent work in flight: more resident warps, unrolled independent loads, async copies."
    )
    warps = f.v(ACHIEVED_OCC)
    if (
        warps is not None
        and warps / 100.0 >= th.HEALTHY_FRACTION_OF_PEAK
        and ", or more resident warps" in fix
    ):
        # the warp slots are at their roof too: more warps cannot add the bytes in flight, each warp must
        fix = fix.replace(", or more resident warps", "") + (
            f" Not more warps: {pc(warps / 100.0)}% of the SM's warp slots are already active, so the bytes each "
            "thread has in flight (several elements per thread, 16-byte accesses) are the lever."
        )
    if c.below_roof:
        headline = (
            f"Latency bound: the busiest unit, {words}, is at {pc(util)}% of peak, below the "
            f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof"
            + (f", and warps mostly stall {stall_words}." if top else ".")
        )
        mechanism = (
            f"{cap(words)} could deliver more than it does: the bandwidth a kernel draws is the bytes it "
            "keeps in flight divided by the memory latency (Little's law), and at "
            f"{pc(util)}% of peak the unit is not saturated"
            + (f" while warps mostly stall {stall_words}" if top else "")
            + ": too few independent requests are outstanding per warp to cover the latency."
        )
        return headline, mechanism, fix
    sm = f.util.get("issue")
    headline = (
        f"Latency bound: no unit is above {pc(c.busiest[1])}% of its peak"
        if sm is None or round(sm, 3) <= round(c.busiest[1], 3)
        else f"Latency bound: no pipe or memory level is above {pc(c.busiest[1])}% of its peak and "
        f"{sm_busy_words(f, sm)}"
    ) + (f"; warps mostly stall {stall_words}." if top else ".")
    return headline, latency_words(f, c.busiest, f.stalls), fix


def _toward_roof(f: KernelFacts, unit: str, util: float, words: str, metric: str) -> list[Expectation]:
    """``unit`` up to the roof (HEALTHY_FRACTION_OF_PEAK), and the duration in proportion: the same work (bytes,
    instructions) in less time. When a floor stops the duration first (the kept instructions at the SMs' peak issue
    rate, the compulsory bytes), the unit rises only as far as that duration allows: ``util x d / target``."""
    roof = th.HEALTHY_FRACTION_OF_PEAK
    t = time_expectation(
        f,
        max(0.0, 1.0 - util / roof),
        why=f"the same work at {_fmt(roof, 'fraction')} of peak saves",
        issue_kept=1.0,  # the same instructions, overlapped better
    )
    d = f.v(DURATION)
    reach = roof
    basis = f"the roof: {_fmt(roof, 'fraction')} of peak, the same work"
    if t is not None and t.target and d and util * d / float(t.target) < roof - 1e-3:
        reach = util * d / float(t.target)
        basis = (
            f"the same work in the {fmt_ns(float(t.target))} that {t.basis.removeprefix('the floor: ')} allow"
        )
    used = Expectation(
        metric=metric,
        direction=Direction.UP,
        target=round(100 * reach, 1),
        unit="%",
        value_now=round(100 * util, 1),
        label=f"{words} used",
        basis=basis,
    )
    return [used, t] if t is not None else [used]


def _latency_expect(f: KernelFacts, c: _Case) -> list[Expectation]:
    """The fix keeps the work and overlaps it better: the unit that carries the work rises toward its roof, and the
    duration falls in proportion. That unit is the busiest one (below the roof: the level whose bandwidth the
    stream draws); DRAM when the L2 only passes a DRAM stream through. Issue-active is no target: it moves with
    whatever the fix changes, not with the work; it is named, without a target, when no unit carries the work."""
    if c.below_roof:
        level = "dram" if c.unit == "l2" and l2_passes_dram_stream(f) else c.unit
        return _toward_roof(f, level, f.util.get(level, c.util), UNIT_WORDS[level], unit_metric(f, level))
    work_unit, work_util, work_words, work_metric = c.busiest
    if work_unit == "l2" and l2_passes_dram_stream(f):
        work_unit, work_util = "dram", f.util["dram"]
        work_words, work_metric = UNIT_WORDS["dram"], unit_metric(f, "dram")
    if work_unit != "issue" and 0 < work_util < th.HEALTHY_FRACTION_OF_PEAK:
        return _toward_roof(f, work_unit, work_util, work_words, work_metric)
    issue_hit = f.k.first_value(*ISSUE_ACTIVE)
    return [
        Expectation(
            metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
            direction=Direction.UP,
            target=None,
            unit="%",
            value_now=round(issue_hit[1], 1) if issue_hit else None,
            label="scheduler issue-active",
        )
    ]


def _resource_text(f: KernelFacts, c: _Case) -> tuple[str, str, str]:
    """(headline, mechanism, fix) of a kernel limited by its busiest unit."""
    words, util = unit_words(f, c.unit), c.util
    roof = 100 * th.HEALTHY_FRACTION_OF_PEAK
    if c.at_roof:
        headline = f"{cap(words)} at {pc(util)}% of peak, but {c.why}."
        mechanism = f"{cap(words)} is at its roof over the kernel's elapsed time, but {c.why}."
    else:
        headline = (
            f"{cap(words)} bound at {pc(util)}% of peak, short of the {roof:.0f}% that counts as at the roof."
        )
        mechanism = f"{cap(words)} is the busiest unit, but it does not reach its peak{NO_MECHANISM}."
    if (
        not c.at_roof
        and c.unit not in MEMORY_UNITS
        and c.unit != "issue"
        and f.top_stall == "math_pipe_throttle"
    ):
        work = f.work_share()
        mechanism = (
            f"{cap(words)} is the busiest unit and warps mostly wait for a saturated math pipe "
            "(math_pipe_throttle): the kernel is limited by the arithmetic it issues"
            + (
                f", and {pc(work)}% of the executed instructions are arithmetic on the data, the algorithm's "
                "own work, not index math"
                if work is not None and work >= th.FP_HEAVY_SHARE
                else ""
            )
            + f". The pipe is at {pc(util)}% of its peak, short of the "
            f"{roof:.0f}% roof: dependent chains and the split between pipes leave "
            "issue cycles unused."
        )
    fix = _BELOW_ROOF_FIX[c.unit]
    if c.at_roof and not f.fills_gpu():
        fix = (
            "Give every SM work: launch at least one block per SM (split the work finer, split-K, or a "
            "grid-stride loop sized from the SM count). " + fix
        )
    if c.dependent is not None:
        mechanism, fix = c.dependent[1], c.dependent[2]
    return headline, mechanism, fix


def _resource_expect(f: KernelFacts, c: _Case) -> list[Expectation]:
    """A memory level (or issue) below its roof: its use up to the roof; at the roof, or a pipe: the duration."""
    as_pct = c.unit in MEMORY_UNITS or c.unit == "issue"
    rises = as_pct and not c.at_roof
    return [
        Expectation(
            metric=unit_metric(f, c.unit) if as_pct else DURATION,
            direction=Direction.UP if rises else Direction.DOWN,
            target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1) if rises else None,
            unit="%" if as_pct else "ns",
            value_now=round(100 * c.util, 1) if as_pct else f.v(DURATION),
            label=f"{unit_words(f, c.unit)} used" if as_pct else f"kernel duration ({UNDER_NCU})",
            basis=f"the roof: {_fmt(th.HEALTHY_FRACTION_OF_PEAK, 'fraction')} of peak, the same work"
            if rises
            else "",
        )
    ]


def resource_diagnosis(
    f: KernelFacts, mechs: list[Mechanism], needs: set[str], found: Sequence[Mechanism] = ()
) -> Diagnosis:
    """No mechanism explains the gap: the resource (or latency) is the answer, with the stalls as the explanation.
    ``mechs`` become findings; ``needs``: the sections the verdict needs (inconclusive when one is missing and it
    decides)."""
    c = _classify(f, found)
    ev = [_busiest_evidence(f, c)]
    if c.dependent is not None:
        ev.append(c.dependent[0])
    for extra in (top_stall_evidence(f), f.duration_evidence()):
        if extra:
            ev.append(extra)
    if c.latency:
        bott, (headline, mechanism, fix), expect = B.LATENCY_BOUND, _latency_text(f, c), _latency_expect(f, c)
    else:
        bott, (headline, mechanism, fix), expect = (
            RESOURCE_OF_UNIT[c.unit],
            _resource_text(f, c),
            _resource_expect(f, c),
        )
    findings = findings_of(mechs, max(1e-9, 1.0 - c.util))
    missing_cmd = missing_command(f, needs)
    inconclusive = bool(missing_cmd) and (
        ("memory" in f.missing and c.unit in MEMORY_UNITS) or (c.latency and "stalls" in f.missing)
    )
    if inconclusive:
        return Diagnosis(
            subject=subject(f.k),
            bottleneck=bott,
            verdict=Verdict.INCONCLUSIVE,
            headline=_inconclusive_headline(c),
            evidence=tuple(ev[:3]),
            mechanism=mechanism,
            fix=fix,
            expect=tuple(expect),
            confidence=Confidence(
                value=th.CONFIDENCE_INCONCLUSIVE,
                would_raise="the missing sections: "
                + ", ".join(SECTION_OF[n] for n in sorted(needs & f.missing)),
            ),
            next_step=f"Collect the missing sections: {missing_cmd}",
            findings=findings + ncu_rule_hints(f.k),
        )
    conf = th.CONFIDENCE_RESOURCE if f.top_stall else th.CONFIDENCE_RESOURCE_NO_STALLS
    return Diagnosis(
        subject=subject(f.k),
        bottleneck=bott,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(ev[:3]),
        mechanism=mechanism,
        fix=fix,
        expect=tuple(expect),
        confidence=Confidence(
            value=conf if not missing_cmd else conf - th.CONFIDENCE_MISSING_PENALTY,
            would_raise=("the missing sections (" + missing_cmd + ")")
            if missing_cmd
            else "SourceCounters on the hottest lines (--import-source yes)"
            if "source" in f.missing
            else "a before/after pair (kprof compare)",
        ),
        next_step=(missing_cmd or after_change(f)),
        findings=findings,
    )


def _inconclusive_headline(c: _Case) -> str:
    """The headline of a verdict that the missing sections would decide."""
    if c.latency:
        why_missing = "the stall reasons that would say what it waits on were not collected"
        return f"Latency bound (no unit above {pc(c.util)}% of peak); {why_missing}."
    if c.at_roof:
        why_missing = (
            "whether that traffic is useful (coalesced, conflict-free) or waste cannot be told: "
            "the memory tables were not collected"
        )
    else:
        why_missing = "the sections that would tell why were not collected"
    return f"{cap(UNIT_WORDS[c.unit])} at {pc(c.util)}% of peak; {why_missing}."
