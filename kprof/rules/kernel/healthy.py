"""The healthy verdict: the limiting unit does the work the algorithm needs at its roof, on a grid that fills the
GPU; the advice is to do less work.
"""

from __future__ import annotations

from collections.abc import Sequence

from kprof import thresholds as th
from kprof.facts.kernel import UNDER_NCU, KernelFacts, bandwidth_metric, dram_bytes, metric_value, unit_metric
from kprof.facts.names import DURATION, L2_READ_HIT_RATE
from kprof.facts.units import MEMORY_UNITS, UNIT_WORDS
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Finding, Verdict
from kprof.rules.kernel.common import B, Mechanism, pc, subject
from kprof.rules.kernel.resource import RESOURCE_OF_UNIT, l2_passes_dram_stream


def healthy(
    f: KernelFacts, unit: str, util: float, stated_threshold: float, advice: Sequence[Mechanism] = ()
) -> Diagnosis:
    """The limiting unit does the work the algorithm needs at >= the healthy fraction of its elapsed-cycle peak,
    with a grid that fills the GPU: to go faster, do less work. ``advice``: mechanisms that change the work
    itself (matrix work that could move to the tensor cores) become findings."""
    k = f.k
    bott = RESOURCE_OF_UNIT[unit]
    if unit == "l2" and l2_passes_dram_stream(f):
        return _healthy_dram_stream(f, util, stated_threshold)
    ev: list[Evidence] = [
        Evidence(
            name=f"{UNIT_WORDS[unit]} used",
            value=round(100 * util, 1),
            unit="% of peak",
            reference=f">= {100 * stated_threshold:.0f}% of peak over the kernel's elapsed cycles counts as at the "
            "roof (ncu: > 80% is high throughput)",
            reference_value=round(100 * stated_threshold, 1),
            metric=unit_metric(f, unit),
        )
    ]
    if unit in MEMORY_UNITS and f.roof.bytes_per_s.get(unit) and f.roof.peak_bytes_per_s.get(unit):
        ev.append(
            Evidence(
                name=f"achieved {unit.upper()} bandwidth",
                value=round(f.roof.bytes_per_s[unit] / 1e9, 0),
                unit="GB/s",
                reference=f"peak {f.roof.peak_bytes_per_s[unit] / 1e9:.0f} GB/s (from the report)",
                reference_value=round(f.roof.peak_bytes_per_s[unit] / 1e9, 0),
                metric=bandwidth_metric(f, unit),
            )
        )
    elif unit == "tensor" and f.roof.flops.get("tensor") and f.roof.peak_flops.get("tensor"):
        ev.append(
            Evidence(
                name="achieved tensor-core throughput",
                value=round(f.roof.flops["tensor"] / 1e12, 1),
                unit="TFLOP/s",
                reference=f"peak {f.roof.peak_flops['tensor'] / 1e12:.0f} TFLOP/s for this input type (from the report)",
                reference_value=round(f.roof.peak_flops["tensor"] / 1e12, 1),
                metric="derived:tensor_tflops",
            )
        )
    elif unit == "fp32" and f.roof.flops.get("fp32") and f.roof.peak_flops.get("fp32"):
        ev.append(
            Evidence(
                name="achieved FP32 throughput",
                value=round(f.roof.flops["fp32"] / 1e12, 1),
                unit="TFLOP/s",
                reference=f"peak {f.roof.peak_flops['fp32'] / 1e12:.0f} TFLOP/s (from the report)",
                reference_value=round(f.roof.peak_flops["fp32"] / 1e12, 1),
                metric="derived:fp32_tflops",
            )
        )
    d = f.duration_evidence()
    if d:
        ev.append(d)
    if unit == "dram":
        expect = [
            Expectation(
                metric="derived:dram_bytes",
                direction=Direction.DOWN,
                value_now=dram_bytes(k),
                unit="byte",
                label="DRAM bytes moved",
            )
        ]
    elif unit == "l2" and f.v("lts__t_sectors.sum") is not None:
        expect = [
            Expectation(
                metric="lts__t_sectors.sum",
                direction=Direction.DOWN,
                value_now=f.v("lts__t_sectors.sum"),
                unit="sector",
                label="L2 sectors accessed",
            )
        ]
    else:
        expect = [
            Expectation(
                metric=DURATION,
                direction=Direction.DOWN,
                value_now=f.v(DURATION),
                unit="ns",
                label=f"kernel duration ({UNDER_NCU}), once less work is done",
            )
        ]
    fix = {
        "dram": "Move fewer bytes: fuse this kernel with its producer or consumer, use narrower types (bf16/fp8, int8 indices), "
        "or skip work that is not needed; the kernel itself is already at the DRAM roof.",
        "l2": "Move fewer bytes through L2: fuse kernels, reuse data from shared memory or registers, use narrower types.",
        "l1": "Issue fewer L1/shared accesses per result (register tiling, wider accesses) or do less work; the pipe is at its peak.",
        "tensor": "Do fewer FLOPs: skip or batch work, lower precision (FP8 with scaling) where accuracy allows, or fuse "
        "the epilogue; the tensor cores are already at their roof.",
        "fp32": "Do fewer FLOPs; the FP32 pipes are at their roof."
        + (
            " Matrix work could move to the tensor cores (TF32 or BF16 inputs) if the precision allows."
            if advice
            else ""
        ),
        "fp64": "Do fewer FP64 FLOPs (mixed precision where accuracy allows); the FP64 pipes are at their roof.",
        "xu": "Evaluate fewer special functions: hoist them out of loops, use identities (one sincos instead of sin "
        "and cos, exp2 with a folded scale), or polynomial approximations on the FMA pipe where accuracy allows; "
        "the special-function pipe is at its roof.",
        "int": "Do fewer integer operations per result: 32-bit arithmetic where the values fit (a 64-bit multiply is "
        "several IMADs, a 64-bit shift two funnel shifts), fewer rounds or a cheaper mixing function where the "
        "algorithm allows; the integer pipes are at their roof.",
    }.get(unit, "Do less work.")
    return Diagnosis(
        subject=subject(k),
        bottleneck=bott,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: {UNIT_WORDS[unit]} at {pc(util)}% of peak, at its roofline "
            f"(>= {100 * stated_threshold:.0f}%); to go faster, do less work."
        ),
        evidence=tuple(ev[:3]),
        mechanism=(
            f"The kernel keeps its limiting unit ({UNIT_WORDS[unit]}) busy with useful work over its whole run, on a "
            "grid that fills the GPU; no mechanism (coalescing, bank conflicts, spills, divergence, grid size) "
            "explains a gap, so other counters (occupancy, registers, conflicts) are not problems here."
        ),
        fix=fix,
        expect=tuple(expect),
        confidence=Confidence(
            value=0.85, would_raise="a timeline capture to confirm the kernel's share of the step"
        ),
        next_step="Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets.",
        findings=tuple(
            Finding(bottleneck=m.bottleneck, headline=m.headline, evidence=tuple(m.evidence[:3]), share=None)
            for m in advice
        ),
    )


def _healthy_dram_stream(f: KernelFacts, l2: float, stated_threshold: float) -> Diagnosis:
    """L2 at its roof while its reads miss to DRAM: a DRAM stream whose path (DRAM + L2) is saturated."""
    k = f.k
    dram = f.util.get("dram", 0.0)
    hit = f.v(L2_READ_HIT_RATE) or 0.0
    ev = [
        Evidence(
            name="L2 cache bandwidth used",
            value=round(100 * l2, 1),
            unit="% of peak",
            reference=f">= {100 * stated_threshold:.0f}% of peak counts as at the roof (ncu: > 80% is high throughput)",
            reference_value=round(100 * stated_threshold, 1),
            metric=unit_metric(f, "l2"),
        ),
        Evidence(
            name="L2 read hit rate",
            value=round(hit, 1),
            unit="%",
            reference=f"below {100 * th.L2_STREAMING_READ_HIT_RATE:.0f}%: the L2 passes a DRAM stream through",
            reference_value=round(100 * th.L2_STREAMING_READ_HIT_RATE, 1),
            metric=L2_READ_HIT_RATE,
        ),
        Evidence(
            name="DRAM bandwidth used",
            value=round(100 * dram, 1),
            unit="% of peak",
            reference="the bytes come from DRAM; its path through L2 is what is saturated",
            metric=unit_metric(f, "dram"),
        ),
    ]
    return Diagnosis(
        subject=subject(k),
        bottleneck=B.DRAM_BANDWIDTH_BOUND,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: a DRAM stream at its roof: DRAM at {pc(dram)}% of peak and the L2 that carries it at "
            f"{pc(l2)}% (>= {100 * stated_threshold:.0f}%); to go faster, move fewer bytes."
        ),
        evidence=tuple(ev),
        mechanism=(
            "Every byte streams from DRAM through L2 (reads miss L2), and the L2 slices are the busier half of "
            "that path; no mechanism (coalescing, bank conflicts, spills, divergence, grid size) explains a gap."
        ),
        fix=(
            "Move fewer bytes: fuse this kernel with its producer or consumer, use narrower types, or skip work "
            "that is not needed; the memory path is already at its roof."
        ),
        expect=(
            Expectation(
                metric="derived:dram_bytes",
                direction=Direction.DOWN,
                value_now=dram_bytes(k),
                unit="byte",
                label="DRAM bytes moved",
            ),
        ),
        confidence=Confidence(
            value=0.75, would_raise="a timeline capture to confirm the kernel's share of the step"
        ),
        next_step="Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets.",
    )


def traffic_is_required(f: KernelFacts, unit: str) -> bool:
    """Without the memory tables: whether ncu's per-instruction ideal sectors show the global traffic as the
    traffic the instructions asked for (no excess), so a DRAM roof is the work's own."""
    return unit == "dram" and (metric_value(f.k, "derived:global_excess_sector_share") or 1.0) < (
        1.0 - 1.0 / th.COALESCING_TOLERANCE
    )
