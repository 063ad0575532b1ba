"""The resource verdict when no mechanism explains the gap: the unit the kernel keeps busiest
(``dram_bandwidth_bound``, ``l2_bandwidth_bound``, ``l1_shared_bandwidth_bound``, ``compute_bound``,
``tensor_core_bound``, ``instruction_bound``) or ``latency_bound``, explained by the warp stalls and occupancy.

A memory level below its roof is not the limit unless its own queue is full: the bandwidth a kernel draws is the
bytes it keeps in flight over the latency (Little's law), so spare bandwidth while warps wait on its results is
latency.
"""

from __future__ import annotations

from collections.abc import Sequence

from kprof import thresholds as th
from kprof.diagnose.roofline import (
    ALU_PIPE_METRICS,
    COMPUTE_SOL,
    FMA_PIPE_METRICS,
    FMAHEAVY_PIPE_METRICS,
    FP64_PIPE_METRICS,
    TENSOR_PIPE_METRICS,
    XU_PIPE_METRICS,
)
from kprof.facts.kernel import UNDER_NCU, KernelFacts, unit_metric
from kprof.facts.names import (
    ACHIEVED_OCC,
    DURATION,
    ISSUE_ACTIVE,
    L2_READ_HIT_RATE,
    SECTION_OF,
    THEORETICAL_OCC,
)
from kprof.facts.stalls import GLOBAL_STALLS, STALL_WORDS, UNIT_THROTTLES, stall_reasons
from kprof.facts.units import MEMORY_UNITS, UNIT_PRIORITY, UNIT_WORDS, USEFUL_UNITS
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Finding, Verdict
from kprof.rules.kernel.common import (
    B,
    Mechanism,
    after_command,
    cap,
    missing_command,
    pc,
    stall_evidence,
    subject,
    time_expectation,
)
from kprof.rules.kernel.memory import dependent_excess_share
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


def l2_passes_dram_stream(f: KernelFacts) -> bool:
    """True when L2 reads mostly miss: the L2 is passing a DRAM stream through, so the stream is DRAM's."""
    hit = f.v(L2_READ_HIT_RATE)
    return hit is not None and hit / 100.0 < th.L2_STREAMING_READ_HIT_RATE and "dram" in f.util


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


_RAW_PIPES = {
    "tensor_pipe": ("tensor pipe", TENSOR_PIPE_METRICS),
    "fma_pipe": ("FMA pipe", FMA_PIPE_METRICS),
    "fmaheavy_pipe": ("FMA-heavy pipe", FMAHEAVY_PIPE_METRICS),
    "fp64_pipe": ("FP64 pipe", FP64_PIPE_METRICS),
    "xu_pipe": ("special-function (XU) pipe", XU_PIPE_METRICS),
    "alu_pipe": ("integer (ALU) pipe", ALU_PIPE_METRICS),
}


def _busiest_any(f: KernelFacts) -> tuple[str, float, str, str]:
    """The busiest unit over *every* unit the report measures, the pipes included: ``(key, utilisation, words,
    metric)``. :meth:`KernelFacts.limiter` judges the tensor path against the fastest instruction's peak (an HMMA kernel
    sits below the HGMMA roof) and counts pipes only when their work is the program's; a sentence such as "no unit
    is above X%" must still hold for the tensor pipe's busy cycles. Instruction issue is left out (not a unit).
    Pipes enter only with an ``_elapsed`` metric the report holds (the value quoted is that metric's)."""
    useful = [(u, f.util[u]) for u in UNIT_PRIORITY if u in f.util and u != "issue"]
    if useful:
        u, v = max(useful, key=lambda x: x[1])  # first in priority order among equals
        best = (u, v, UNIT_WORDS[u], unit_metric(f, u))
    else:
        best = ("issue", 0.0, UNIT_WORDS["issue"], COMPUTE_SOL)
    for key, (words, names) in _RAW_PIPES.items():
        hit = f.k.first_value(*names)
        if hit is not None and hit[1] / 100.0 > best[1] + 1e-9:
            best = (key, hit[1] / 100.0, words, hit[0])
    return best


def _occupancy_words(f: KernelFacts) -> str:
    """Achieved against theoretical occupancy, and the block size when it is one or two warps: the warps resident
    to hide each other's latency."""
    ach, theo = f.v(ACHIEVED_OCC), f.v(THEORETICAL_OCC)
    tpb = f.k.threads_per_block or 0
    out = ""
    if ach is not None and theo is not None:
        out = f" Achieved occupancy is {ach:.3g}% against a theoretical {theo:.3g}%"
        if tpb and tpb <= 2 * th.WARP_SIZE:
            out += (
                f": each block is {max(1, tpb // th.WARP_SIZE)} warp of {tpb} threads and retires after a few "
                "instructions, so the SMs spend their time starting and retiring blocks instead of holding warps "
                "whose loads overlap."
                if tpb <= th.WARP_SIZE
                else f": each block is only {tpb // th.WARP_SIZE} warps, so few warps are resident to overlap "
                "their loads."
            )
        elif ach < 0.5 * theo:
            out += ": blocks start and finish unevenly, so fewer warps are resident than the limits allow."
        else:
            out += ", too few warps to hide each other's latency." if theo <= 25 else "."
    return out


def _latency_words(f: KernelFacts, busiest: tuple[str, float, str, str], stalls: dict[str, float]) -> str:
    """Why a kernel with no saturated unit waits, from its top stall reason and its occupancy."""
    top = next(iter(stalls), None)
    total = sum(stalls.values())
    head = (
        f"No unit is saturated over the elapsed time: the busiest, {busiest[2]}, is at {pc(busiest[1])}% of its "
        "peak."
    )
    if top is None:
        return head + " Too little independent work is in flight to keep any unit busy." + _occupancy_words(f)
    share = f", {100 * stalls[top] / total:.0f}% of the stall cycles" if total > 0 else ""
    if top in GLOBAL_STALLS:
        return (
            head
            + f" Warps mostly wait on global memory results ({top}{share}): too few loads are in flight per SM to "
            "cover the memory latency (the bandwidth drawn is the bytes in flight over the latency)."
            + _occupancy_words(f)
        )
    second = next((r for r in stalls if r != top), None)
    return (
        head
        + f" Warps mostly stall on {STALL_WORDS.get(top, (top, ''))[0]} ({top}{share})"
        + (f", then {STALL_WORDS.get(second, (second, ''))[0]} ({second})" if second else "")
        + ": each warp's next instruction waits on one before it, and the resident warps are too few to fill "
        "those cycles with independent work." + _occupancy_words(f)
    )


def _dependent_words(f: KernelFacts) -> tuple[Evidence, str, str] | None:
    """Evidence, mechanism and fix when most global loads are data-dependent (pointer chase, gather, probe)."""
    share = dependent_excess_share(f)
    if share is None or share < th.DEPENDENT_LOAD_SHARE or f.flow.dependent_global_loads <= 0:
        return None
    loads = f.flow.dependent_load_share
    ev = Evidence(
        name="global loads whose address comes from loaded data",
        value=round(100 * loads, 1),
        unit="%",
        reference="a pointer chase, a gather through an index array or a hash probe: the data decides the addresses",
        metric="sass:dependent_load_share",
    )
    mechanism = (
        f"{pc(loads)}% of the executed global loads take their address from a value loaded before them, so each "
        "lane touches its own sector by nature and each load waits for the one it depends on: too few loads are "
        "in flight to cover the memory latency. Making consecutive threads read consecutive addresses is not "
        "possible here; the data decides the addresses."
    )
    fix = (
        "Keep more independent loads in flight: more resident warps (occupancy), several independent lookups per "
        "thread interleaved (ILP), prefetch the next index or node before using the current one, or reorder/sort "
        "the data (and the queries) so that neighbouring lanes touch neighbouring addresses."
    )
    return ev, mechanism, fix


def resource_diagnosis(
    f: KernelFacts, mechs: list[Mechanism], needs: set[str], found: Sequence[Mechanism] = ()
) -> Diagnosis:
    """No mechanism explains the gap: the resource (or latency) is the answer, with the stalls as the explanation."""
    k = f.k
    unit, util = f.limiter()
    latency = (
        max(f.util.get("issue", 0.0), f.mem_max()[1], *(f.util.get(u, 0.0) for u in USEFUL_UNITS))
        < th.LATENCY_BOUND_FRACTION
    )
    at_roof = util >= th.HEALTHY_FRACTION_OF_PEAK
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    dependent = _dependent_words(f) if (latency or unit in MEMORY_UNITS) else None
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
        not latency and not at_roof and unit in MEMORY_UNITS and top not in UNIT_THROTTLES.get(unit, ())
    )
    if below_roof:
        latency = True
    why = why_not_healthy(f, unit, found) if at_roof and not latency else ""
    busiest = _busiest_any(f)
    plain_latency = latency and not below_roof and dependent is None
    ev: list[Evidence] = [
        Evidence(
            name=f"busiest unit: {busiest[2] if plain_latency else UNIT_WORDS[unit]}",
            value=round(100 * (busiest[1] if plain_latency else util), 1),
            unit="% of peak",
            reference=(
                "busy with the scattered sectors of data-dependent loads, not with work it streams"
                if latency and dependent is not None
                else f"below the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof: not saturated, the kernel waits on "
                "its results"
                if below_roof
                else f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}% everywhere: latency bound (ncu's SOL rule)"
                if latency
                else f"at or above the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof, but {why}"
                if at_roof
                else f"below the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% that counts as at the roof"
            ),
            reference_value=round(
                100
                * (th.LATENCY_BOUND_FRACTION if latency and not below_roof else th.HEALTHY_FRACTION_OF_PEAK),
                1,
            ),
            metric=busiest[3] if plain_latency else unit_metric(f, unit),
        )
    ]
    if dependent is not None:
        ev.append(dependent[0])
    if top:
        ev.append(stall_evidence(k, top, stalls[top], STALL_WORDS.get(top, (top, ""))[0]))
    d = f.duration_evidence()
    if d:
        ev.append(d)
    missing_cmd = missing_command(f, needs)
    inconclusive = bool(missing_cmd) and (
        ("memory" in f.missing and unit in MEMORY_UNITS) or (latency and "stalls" in f.missing)
    )
    if latency:
        bott = B.LATENCY_BOUND
        stall_words = STALL_WORDS.get(top, (top, ""))[0] if top else ""
        headline = (
            f"Latency bound by data-dependent loads: the global loads' addresses come from loaded data (a chase, "
            f"gather or probe), so few loads are in flight; {UNIT_WORDS[unit]} at {pc(util)}% of peak carries "
            "their scattered sectors."
            if dependent is not None
            else f"Latency bound: the busiest unit, {UNIT_WORDS[unit]}, is at {pc(util)}% of peak, below the "
            f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof"
            + (f", and warps mostly stall {stall_words}." if top else ".")
            if below_roof
            else f"Latency bound: no unit is above {pc(busiest[1])}% of its peak"
            + (f"; warps mostly stall {stall_words}." if top else ".")
        )
        mechanism = (
            f"{cap(UNIT_WORDS[unit])} could deliver more than it does: the bandwidth a kernel draws is the bytes it "
            "keeps in flight divided by the memory latency (Little's law), and at "
            f"{pc(util)}% of peak the unit is not saturated"
            + (f" while warps mostly stall {stall_words}" if top else "")
            + ": too few independent requests are outstanding per warp to cover the latency."
            if below_roof
            else _latency_words(f, busiest, stalls)
        )
        fix = (
            cap(STALL_WORDS[top][1]) + "."
            if top in STALL_WORDS
            else "Keep more independent work in flight: more resident warps, unrolled independent loads, async copies."
        )
        if dependent is not None:
            mechanism, fix = dependent[1], dependent[2]
        # The fix keeps the work and overlaps it better: the unit that carries the work (the busiest one; DRAM when
        # the L2 only passes a DRAM stream through) rises toward its roof, and the duration falls in proportion.
        # Issue-active is no target: it moves with whatever the fix changes, not with the work.
        work_unit, work_util, work_words, work_metric = busiest
        if work_unit == "l2" and l2_passes_dram_stream(f):
            work_unit, work_util = "dram", f.util["dram"]
            work_words, work_metric = UNIT_WORDS["dram"], unit_metric(f, "dram")
        expect = []
        if work_unit != "issue" and 0 < work_util < th.HEALTHY_FRACTION_OF_PEAK:
            expect.append(
                Expectation(
                    metric=work_metric,
                    direction=Direction.UP,
                    target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
                    unit="%",
                    value_now=round(100 * work_util, 1),
                    label=f"{work_words} used",
                )
            )
            t = time_expectation(f, max(0.0, 1.0 - work_util / th.HEALTHY_FRACTION_OF_PEAK))
            if t:
                expect.append(t)
        else:
            issue_hit = k.first_value(*ISSUE_ACTIVE)
            expect = [
                Expectation(
                    metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
                    direction=Direction.UP,
                    target=None,
                    unit="%",
                    value_now=round(issue_hit[1], 1) if issue_hit else None,
                    label="scheduler issue-active",
                )
            ]
        if below_roof:
            # The same bytes at the roof: the level whose bandwidth the stream draws (DRAM when the L2 only passes
            # a DRAM stream through) rises toward the roof, and the duration falls in proportion.
            level = "dram" if unit == "l2" and l2_passes_dram_stream(f) else unit
            now = f.util.get(level, util)
            expect = [
                Expectation(
                    metric=unit_metric(f, level),
                    direction=Direction.UP,
                    target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
                    unit="%",
                    value_now=round(100 * now, 1),
                    label=f"{UNIT_WORDS[level]} used",
                )
            ]
            t = time_expectation(f, max(0.0, 1.0 - now / th.HEALTHY_FRACTION_OF_PEAK))
            if t:
                expect.append(t)
    else:
        bott = RESOURCE_OF_UNIT[unit]
        headline = (
            f"{cap(UNIT_WORDS[unit])} at {pc(util)}% of peak, but {why}."
            if at_roof
            else f"{cap(UNIT_WORDS[unit])} bound at {pc(util)}% of peak, short of the "
            f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% that counts as at the roof."
        )
        work = f.work_share()
        mechanism = (
            f"{cap(UNIT_WORDS[unit])} is the busiest unit, but it does not reach its peak and no "
            "single mechanism measured here explains the difference."
            if not at_roof
            else f"{cap(UNIT_WORDS[unit])} is at its roof over the kernel's elapsed time, but {why}."
        )
        if not at_roof and unit not in MEMORY_UNITS and unit != "issue" and top == "math_pipe_throttle":
            mechanism = (
                f"{cap(UNIT_WORDS[unit])} is the busiest unit and warps mostly wait for a saturated math pipe "
                "(math_pipe_throttle): the kernel is limited by the arithmetic it issues"
                + (
                    f", and {pc(work)}% of the executed instructions are arithmetic on the data, the algorithm's "
                    "own work, not index math"
                    if work is not None and work >= th.FP_HEAVY_SHARE
                    else ""
                )
                + f". The pipe is at {pc(util)}% of its peak, short of the "
                f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof: dependent chains and the split between pipes leave "
                "issue cycles unused."
            )
        fix = {
            "dram": "Move fewer bytes (fusion, narrower types) and keep more loads in flight (128-bit loads, unrolling).",
            "l2": "Improve reuse in shared memory/registers so fewer requests reach L2.",
            "l1": "Use wider shared/global accesses and register tiling so fewer L1 wavefronts are needed.",
            "tensor": "Feed the tensor cores better: larger tiles, deeper async pipelines (TMA/cp.async), fewer epilogue stalls.",
            "fp32": "Raise FMA density: fewer non-FMA instructions per FLOP.",
            "fp64": "Raise FP64 FMA density (DFMA instead of DMUL+DADD).",
            "xu": "Evaluate fewer special functions per result, or move some to polynomial approximations on the FMA pipe.",
            "int": "The integer pipes do the algorithm's own work (integer math on the loaded data): do fewer integer "
            "operations per result (32-bit arithmetic where the values fit: a 64-bit multiply is several IMADs, a "
            "64-bit shift two funnel shifts), and give each thread independent chains (several keys per thread, "
            "interleaved) so both integer pipes issue every cycle.",
            "issue": "Execute fewer instructions per result.",
        }[unit]
        if at_roof and not f.fills_gpu():
            fix = (
                "Give every SM work: launch at least one block per SM (split the work finer, split-K, or a "
                "grid-stride loop sized from the SM count). " + fix
            )
        if dependent is not None:
            mechanism, fix = dependent[1], dependent[2]
        as_pct = unit in MEMORY_UNITS or unit == "issue"
        expect = [
            Expectation(
                metric=unit_metric(f, unit) if as_pct else DURATION,
                direction=Direction.UP if as_pct and not at_roof else Direction.DOWN,
                target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1) if as_pct and not at_roof else None,
                unit="%" if as_pct else "ns",
                value_now=round(100 * util, 1) if as_pct else f.v(DURATION),
                label=f"{UNIT_WORDS[unit]} used" if as_pct else f"kernel duration ({UNDER_NCU})",
            )
        ]
    gap = max(1e-9, 1.0 - util)
    findings = tuple(
        Finding(
            bottleneck=m.bottleneck,
            headline=m.headline,
            evidence=tuple(m.evidence[:3]),
            share=round(min(1.0, m.savings / gap), 3),
        )
        for m in mechs
    )
    conf = 0.55 if top else 0.4
    if inconclusive:
        if latency:
            why_missing = "the stall reasons that would say what it waits on were not collected"
        elif at_roof:
            why_missing = (
                "whether that traffic is useful (coalesced, conflict-free) or waste cannot be told: "
                "the memory tables were not collected"
            )
        else:
            why_missing = "the sections that would tell why were not collected"
        head = (
            f"{cap(UNIT_WORDS[unit])} at {pc(util)}% of peak; {why_missing}."
            if not latency
            else f"Latency bound (no unit above {pc(util)}% of peak); {why_missing}."
        )
        return Diagnosis(
            subject=subject(k),
            bottleneck=bott,
            verdict=Verdict.INCONCLUSIVE,
            headline=head,
            evidence=tuple(ev[:3]),
            mechanism=mechanism,
            fix=fix,
            expect=tuple(expect),
            confidence=Confidence(
                value=0.3,
                would_raise="the missing sections: "
                + ", ".join(SECTION_OF[n] for n in sorted(needs & f.missing)),
            ),
            next_step=f"Collect the missing sections: `{missing_cmd}`",
            findings=findings + ncu_rule_hints(k),
        )
    return Diagnosis(
        subject=subject(k),
        bottleneck=bott,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(ev[:3]),
        mechanism=mechanism,
        fix=fix,
        expect=tuple(expect),
        confidence=Confidence(
            value=conf if not missing_cmd else conf - 0.15,
            would_raise=("the missing sections (" + missing_cmd + ")")
            if missing_cmd
            else "SourceCounters on the hottest lines (--import-source yes)",
        ),
        next_step=(f"`{missing_cmd}`" if missing_cmd else after_command(k, f.cooperative, f.source)),
        findings=findings,
    )
