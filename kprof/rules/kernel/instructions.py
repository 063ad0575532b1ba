"""``instruction_bound``: the SM issues near its peak while no unit does work the algorithm needs."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.roofline import COMPUTE_SOL
from kprof.facts.constructs import removable_share
from kprof.facts.kernel import KernelFacts, sm_busy_words, unit_metric
from kprof.facts.names import THREADS_PER_INST
from kprof.facts.sass_traits import fp64_promotion
from kprof.facts.units import UNIT_WORDS, USEFUL_UNITS
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, with_duration


def instruction_bound(f: KernelFacts) -> Mechanism | None:
    """The SM issues near its peak while no memory level or FP pipe is busy: the instructions are overhead.

    Only when instructions that are not arithmetic on the data dominate issue: a kernel whose executed instructions
    are mostly FMAs (a cuBLAS SGEMM issues ~80% FFMA) spends its issue slots on the math it must do, and so does
    one whose integer instructions compute on loaded values (a hash's multiplies, shifts and xors of a loaded key);
    that is compute-bound, not overhead. Overhead is what the algorithm does not need: index and address math
    from the thread index, loop control, conversions. Issue must be above LATENCY_BOUND_FRACTION, the work share
    below FP_HEAVY_SHARE, and the busiest useful unit below ISSUE_OVER_USEFUL_RATIO x the issue rate.
    """
    issue = f.util.get("issue")
    if issue is None or issue < th.LATENCY_BOUND_FRACTION:
        return None
    if fp64_promotion(f.k.sass) is not None:
        return None  # the instructions are promoted FP64 math: kprof.rules.kernel.precision names that
    work = f.work_share()
    if work is not None and work >= th.FP_HEAVY_SHARE:
        return None
    useful_unit = max((u for u in USEFUL_UNITS if u in f.util), key=lambda u: f.util[u], default=None)
    useful = f.util[useful_unit] if useful_unit else 0.0
    if useful >= issue * th.ISSUE_OVER_USEFUL_RATIO:
        return None
    if f.roof.utilization.get("tensor_pipe", 0.0) >= issue * th.ISSUE_OVER_USEFUL_RATIO:
        # the SM's throughput is its tensor pipe busy with MMAs (integer IMMA/IGMMA too, whose operations no FP
        # counter shows): matrix work, not overhead, whatever the tensor roof of a faster path
        return None
    savings = max(0.0, 1.0 - useful / issue) if issue > 0 else 0.0
    r = f.v(THREADS_PER_INST)
    if r is not None:
        savings *= min(1.0, r / th.WARP_SIZE)  # the part due to masked lanes is warp divergence's
    executed = f.v("smsp__inst_executed.sum")
    # when the SASS shows the construct the overhead comes from (kprof.facts.constructs), the fix changes that
    # construct, and it removes at most that construct's instructions
    construct = removable_share(f.k)
    removed = savings if construct is None else min(savings, construct)
    fewer = Expectation(
        metric="smsp__inst_executed.sum",
        direction=Direction.DOWN,
        target=round(executed * (1 - removed), 0) if executed else None,
        unit="inst",
        value_now=executed,
        label="warp instructions executed",
        basis=(
            f"the {pc(savings)}% of them that are overhead removed: the busiest useful unit at {pc(useful)}% "
            f"against issue at {pc(issue)}%"
            if removed == savings
            else f"the {pc(removed)}% of them the construct's change removes: its instructions, less what the change "
            "keeps"
        ),
    )
    return Mechanism(
        bottleneck=B.INSTRUCTION_BOUND,
        savings=savings,
        headline=(
            f"Instruction bound: {sm_busy_words(f, issue)} while the memory and FP pipes reach "
            f"only {pc(useful)}%: most instructions are overhead (index math, conversions, special functions)."
        ),
        evidence=_evidence(f, issue, useful_unit, useful, work),
        mechanism="The SM spends its issue slots on instructions that neither move data nor compute the result.",
        fix=(
            "Execute fewer instructions per result: hoist index arithmetic out of loops, use 64-bit-free index math, "
            "vector loads (one LDG.128 instead of four LDG), fast-math intrinsics, and unroll to amortise loop overhead."
        ),
        expect=with_duration(
            f,
            [fewer],
            removed,
            why="the overhead instructions cost"
            if removed == savings
            else "the construct's instructions cost",
        ),
        confidence=th.CONFIDENCE_PARTIAL,
        would_raise="InstructionStats (the executed instruction mix) or SourceCounters",
        inflates=("issue",),
        waste=savings,
    )


def _evidence(
    f: KernelFacts, issue: float, useful_unit: str | None, useful: float, work: float | None
) -> list[Evidence]:
    ev = [
        Evidence(
            name="SM instruction throughput",
            value=round(100 * issue, 1),
            unit="% of peak",
            reference="the busiest unit",
            metric=COMPUTE_SOL,
        ),
        Evidence(
            name=f"busiest useful unit: {UNIT_WORDS[useful_unit]}" if useful_unit else "busiest useful unit",
            value=round(100 * useful, 1),
            unit="% of peak",
            reference="what the instructions achieve (memory levels, FP and tensor pipes)",
            metric=unit_metric(f, useful_unit) if useful_unit else COMPUTE_SOL,
        ),
    ]
    if work is not None:
        ev.append(
            Evidence(
                name=(
                    "FP arithmetic share of executed instructions"
                    if f.sass.empty
                    else "arithmetic on the data (FP, and integer on loaded values) in the SASS listing"
                    if not f.sass.weighted
                    else "arithmetic on the data (FP, and integer on loaded values) among executed instructions"
                ),
                value=round(100 * work, 1),
                unit="%",
                reference=f"below {100 * th.FP_HEAVY_SHARE:.0f}%: most issue slots carry index math, loop control "
                "and conversions, not the computation",
                reference_value=round(100 * th.FP_HEAVY_SHARE, 1),
                metric="derived:fp_inst_share" if f.sass.empty else "derived:work_inst_share",
            )
        )
    return ev
