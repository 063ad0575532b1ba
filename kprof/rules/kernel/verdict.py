"""One launch's verdict from its facts and the mechanisms that fired.

Order (docs/rules.md): the roofline first (a unit doing useful work at HEALTHY_FRACTION_OF_PEAK on a grid that fills
the GPU is healthy), then the mechanisms, each bounded by the gap to the roof and by the physical floor, ranked by
the time a fix would win (a finding at MIN_MECHANISM_SAVINGS, the bottleneck at MIN_PRIMARY_SAVINGS), else the
resource or latency verdict. Without SpeedOfLight, only what the counters establish on their own.
"""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.roofline import COMPUTE_SOL, MEMORY_SOL
from kprof.facts.kernel import (
    UNDER_NCU,
    KernelFacts,
    at_dram_floor,
    bandwidth_metric,
    kernel_floor_ns,
)
from kprof.facts.names import DURATION
from kprof.facts.units import MEMORY_UNITS, UNIT_PRIORITY, USEFUL_UNITS
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Verdict
from kprof.rules.kernel.common import (
    B,
    Mechanism,
    after_change,
    findings_of,
    fmt_ns,
    missing_command,
    recapture,
    subject,
    time_expectation,
)
from kprof.rules.kernel.healthy import dram_stream_at_roof, healthy, traffic_is_required
from kprof.rules.kernel.resource import resource_diagnosis


def verdict(f: KernelFacts, found: list[Mechanism]) -> Diagnosis:
    """The launch's diagnosis from its facts and the mechanisms that fired (see the module docstring)."""
    if "sol" in f.missing:
        return _partial_report(f, found)
    useful = _useful(f, found)
    done = _healthy_verdict(f, found, useful)
    if done is not None:
        return done
    # The time a fix can win is bounded by the work that stays: the busiest unit's useful share, and
    # the instruction issue that remains once the waste is gone (the kernel still executes its instructions),
    # and by the physical floor of the work (kernel_floor_ns) on the unit the fix uses.
    floor = max(useful.values(), default=0.0)
    if "issue" in f.util:
        issue_waste = max((m.waste for m in found if "issue" in m.inflates), default=0.0)
        floor = max(floor, f.util["issue"] * (1.0 - issue_waste))
    gap = max(1e-9, 1.0 - floor)
    for m in found:
        _bound_savings(f, m, None if m.blocks_healthy else gap)
    mechs = sorted((m for m in found if m.savings >= th.MIN_MECHANISM_SAVINGS), key=lambda m: -m.savings)
    if mechs and mechs[0].savings >= th.MIN_PRIMARY_SAVINGS:
        return _mechanism_diagnosis(f, mechs, gap)
    unit, util = f.limiter()
    needs = {"memory"} if unit in MEMORY_UNITS else {"instructions"} if unit == "issue" else set()
    # Below the roof the stall reasons decide between latency and the unit (a memory level is the limit only when
    # its own queue is full): they are needed for every kernel whose busiest memory level is not at its roof.
    wants_stalls = util < th.LATENCY_BOUND_FRACTION or (
        unit in MEMORY_UNITS and util < th.HEALTHY_FRACTION_OF_PEAK
    )
    return resource_diagnosis(f, mechs, needs | ({"stalls"} if wants_stalls else set()), found)


def _useful(f: KernelFacts, found: list[Mechanism]) -> dict[str, float]:
    """Useful work per unit: a unit's utilisation less the share of it that a mechanism shows to be waste
    (sectors nobody asked for, replayed wavefronts, masked lanes). The kernel cannot finish faster than
    its most loaded useful unit allows, so no mechanism can win more than the remaining gap."""
    useful: dict[str, float] = {}
    floor = at_dram_floor(f)
    for u in USEFUL_UNITS:
        if u in f.util:
            # At the DRAM floor the bytes DRAM moves are the compulsory ones: no mechanism's waste reached it.
            waste = (
                0.0
                if u == "dram" and floor
                else max((m.waste for m in found if u in m.inflates), default=0.0)
            )
            useful[u] = f.util[u] * (1.0 - waste)
    return useful


def _healthy_verdict(f: KernelFacts, found: list[Mechanism], useful: dict[str, float]) -> Diagnosis | None:
    """Healthy when a unit's useful work is at HEALTHY_FRACTION_OF_PEAK (the first such unit in priority order), no
    mechanism says the roof is the wrong one, and the grid fills the GPU; a memory level only when its traffic is
    known to be required (the memory tables, or ncu's per-instruction ideal sectors)."""
    at_roof = [u for u in UNIT_PRIORITY if useful.get(u, 0.0) >= th.HEALTHY_FRACTION_OF_PEAK]
    # A mechanism that says the saturated unit does needless work (re-reads, operand reloads) cannot gain on a
    # kernel already at its DRAM floor: the floor bounds every fix.
    wrong_roof = any(m.blocks_healthy for m in found) and not at_dram_floor(f)
    if not at_roof or wrong_roof or not f.fills_gpu():
        return None
    unit = at_roof[0]
    unconfirmed = False
    if unit in MEMORY_UNITS and "memory" in f.missing and not traffic_is_required(f, unit):
        if not dram_stream_at_roof(f, unit):
            return None
        unconfirmed = (
            True  # a DRAM stream at its roof: healthy, with the memory tables named as the confirmation
        )
    return healthy(f, unit, [m for m in found if m.bottleneck is B.NO_TENSOR_CORES], unconfirmed=unconfirmed)


def _bound_savings(f: KernelFacts, m: Mechanism, gap: float | None) -> None:
    """Clamp a mechanism's saving to the gap it can close and to the physical floor, and restate its duration."""
    d = f.v(DURATION)
    s = m.savings if gap is None else min(m.savings, gap)
    floor = kernel_floor_ns(f.k, m.fix_unit, th.HEALTHY_FRACTION_OF_PEAK) if d else None
    if d and floor is not None:
        s = min(s, max(0.0, 1.0 - floor / d))
    if s != m.savings:
        gap_bound = gap is not None and s == gap < m.savings
        m.savings = s
        why = (
            "the gap to the roof leaves, the busiest unit's useful work kept"
            if gap_bound
            else "the waste costs"
        )
        t = time_expectation(f, s, m.fix_unit, why)
        kept = [e for e in m.expect if e.metric != DURATION]
        m.expect = kept + ([t] if t is not None and len(kept) < len(m.expect) else [])


def _mechanism_diagnosis(f: KernelFacts, mechs: list[Mechanism], gap: float) -> Diagnosis:
    """The top mechanism is the bottleneck; the others are findings with their share of the gap."""
    k = f.k
    top = mechs[0]
    gap = max(top.savings, gap)
    ev = list(top.evidence[:3])
    d = f.duration_evidence()
    if d and len(ev) < 3:
        ev.append(d)
    missing = missing_command(f, {"source"} if f.sass.empty else set())
    return Diagnosis(
        subject=subject(k),
        bottleneck=top.bottleneck,
        verdict=Verdict.FIX,
        headline=top.headline,
        evidence=tuple(ev),
        mechanism=top.mechanism,
        fix=top.fix,
        expect=tuple(top.expect),
        confidence=Confidence(
            value=top.confidence, would_raise=top.would_raise or "a before/after pair (kprof compare)"
        ),
        next_step=after_change(f) + (f" For line-level detail: {missing}" if missing else ""),
        findings=findings_of(mechs[1:], gap),
    )


def _partial_report(f: KernelFacts, found: list[Mechanism]) -> Diagnosis:
    """No SpeedOfLight (``--set basic`` without it, ``--section`` lists, custom ``--metrics``): diagnose from the
    mechanisms the report's counters establish on their own (coalescing, bank conflicts, local memory, grid
    size, divergence), at lower confidence and naming the missing section; inconclusive when none does.

    Without utilisations a mechanism's saving cannot be scaled to the limiter: its waste share is an upper bound,
    and it is said so."""
    usable = [
        m for m in found if m.savings >= th.MIN_PRIMARY_SAVINGS and m.bottleneck is not B.NO_TENSOR_CORES
    ]
    if not usable:
        return _inconclusive_no_sol(f)
    # A mechanism whose own counters the report holds (bank conflicts in the shared wavefronts, sectors per request,
    # divergent branches) says what the code does; the grid-size ones only what the launch is: they follow.
    usable.sort(key=lambda m: (m.bottleneck in (B.SMALL_GRID, B.TAIL_EFFECT), -m.savings))
    for m in usable:
        _bound_savings(f, m, None)
    top = usable[0]
    k = f.k
    ev = list(top.evidence[:2])
    ev.append(
        Evidence(
            name="compute and memory throughput (SpeedOfLight)",
            value=None,
            unit="% of peak",
            reference="missing from the report: how much of the kernel's time this waste costs is an upper bound",
            metric=f"{COMPUTE_SOL}, {MEMORY_SOL}",
        )
    )
    return Diagnosis(
        subject=subject(k),
        bottleneck=top.bottleneck,
        verdict=Verdict.FIX,
        headline=top.headline.rstrip(".")
        + " (the report has no SpeedOfLight section: the cost is an upper bound).",
        evidence=tuple(ev),
        mechanism=top.mechanism,
        fix=top.fix,
        expect=tuple(top.expect),
        confidence=Confidence(
            value=min(th.CONFIDENCE_ESTIMATED, top.confidence - th.CONFIDENCE_NO_SOL_PENALTY),
            would_raise="the SpeedOfLight section, to weigh the waste against the unit that limits the kernel",
        ),
        next_step=f"Collect the missing section: `{recapture(f, '--section SpeedOfLight')}`",
        findings=findings_of(usable[1:], None),
    )


def _inconclusive_no_sol(f: KernelFacts) -> Diagnosis:
    """No SpeedOfLight and no mechanism the counters establish alone: what the report has, and the capture to take."""
    k = f.k
    ev: list[Evidence] = [
        Evidence(
            name="compute and memory throughput (SpeedOfLight)",
            value=None,
            unit="% of peak",
            reference="missing from the report: the unit that limits the kernel cannot be told",
            metric="sm__throughput.avg.pct_of_peak_sustained_elapsed, "
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        )
    ]
    d = f.duration_evidence()
    if d:
        ev.append(d)
    if f.roof.flops.get("fp32") is not None:
        ev.append(
            Evidence(
                name="achieved FP32 throughput",
                value=round(f.roof.flops["fp32"] / 1e12, 3),
                unit="TFLOP/s",
                reference="no peak in the report to compare with",
                metric="derived:fp32_tflops",
            )
        )
    if f.roof.bytes_per_s.get("dram") is not None:
        ev.append(
            Evidence(
                name="DRAM throughput",
                value=round(f.roof.bytes_per_s["dram"] / 1e9, 1),
                unit="GB/s",
                reference="no peak in the report to compare with",
                metric=bandwidth_metric(f, "dram"),
            )
        )
    return Diagnosis(
        subject=subject(k),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=(
            f"No SpeedOfLight metrics for {k.name}: the report cannot say which unit limits it"
            + (f" (it ran {fmt_ns(f.duration_ns)}, {f.duration_label})." if f.duration_ns else ".")
        ),
        evidence=tuple(ev[:3]),
        mechanism="The report was collected with custom metrics only; without the throughput of each unit as a "
        "fraction of its peak there is no roofline to judge against.",
        fix="",
        expect=(
            Expectation(
                metric=DURATION,
                direction=Direction.DOWN,
                value_now=f.v(DURATION),
                unit="ns",
                label=f"kernel duration ({UNDER_NCU}), once a fix is chosen from a full-set profile",
            ),
        ),
        confidence=Confidence(
            value=th.CONFIDENCE_NO_SOL, would_raise="the SpeedOfLight section (or --set full) for this kernel"
        ),
        next_step=f"Profile it with the full set: `{recapture(f)}`",
    )
