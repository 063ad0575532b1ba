"""The healthy verdict: the limiting unit does the work the algorithm needs at its roof, on a grid that fills the
GPU; the advice is to do less work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kprof import thresholds as th
from kprof.diagnose.roofline import BYTE_COUNTER_WORDS
from kprof.facts.kernel import (
    UNDER_NCU,
    KernelFacts,
    bandwidth_metric,
    compulsory_dram_bytes,
    dram_bytes,
    metric_value,
    unit_words,
)
from kprof.facts.names import DURATION, L2_READ_HIT_RATE
from kprof.facts.units import MEMORY_UNITS
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Verdict
from kprof.rules.kernel.common import B, Mechanism, findings_of, fmt_ns, pc, recapture, subject, unit_used
from kprof.rules.kernel.matrix import tf32_finding, tf32_lever, tf32_words
from kprof.rules.kernel.resource import RESOURCE_OF_UNIT, l2_passes_dram_stream

_GEMM_NAME = re.compile(r"gemm|matmul|mm_|_mm\b|xmma|cutlass", re.I)
"""Kernel names that say "matrix product": they choose the wording of the TF32 advice, never whether it is given."""

_NEXT_STEP = (
    "Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets."
)
_WOULD_RAISE = "a timeline capture to confirm the kernel's share of the step"
_TABLES = (
    "the MemoryWorkloadAnalysis_Tables section (sectors per request: whether every byte is requested data)"
)
_AT_ROOF = ">= {pct:.0f}% of peak{where} counts as at the roof (ncu: > 80% is high throughput)"
_LESS_WORK = {
    "dram": "Move fewer bytes: fuse this kernel with its producer or consumer, use narrower types (bf16/fp8, int8 "
    "indices), or skip work that is not needed; the kernel itself is already at the DRAM roof.",
    "l2": "Move fewer bytes through L2: fuse kernels, reuse data from shared memory or registers, use narrower types.",
    "l1": "Issue fewer L1/shared accesses per result (register tiling, wider accesses) or do less work; the pipe is at "
    "its peak.",
    "tensor": "Do fewer FLOPs: skip or batch work, lower precision (FP8 with scaling) where accuracy allows, or fuse "
    "the epilogue; the tensor cores are already at their roof.",
    "fp32": "Do fewer FLOPs; the FP32 pipes are at their roof.",
    "fp64": "Do fewer FP64 FLOPs (mixed precision where accuracy allows); the FP64 pipes are at their roof.",
    "xu": "Evaluate fewer special functions: hoist them out of loops, use identities (one sincos instead of sin "
    "and cos, exp2 with a folded scale), or polynomial approximations on the FMA pipe where accuracy allows; "
    "the special-function pipe is at its roof.",
    "int": "Do fewer integer operations per result: 32-bit arithmetic where the values fit (a 64-bit multiply is "
    "several IMADs, a 64-bit shift two funnel shifts), fewer rounds or a cheaper mixing function where the "
    "algorithm allows; the integer pipes are at their roof.",
}
"""The healthy fix per unit: do less of the work the unit carries."""


def healthy(
    f: KernelFacts, unit: str, advice: Sequence[Mechanism] = (), *, unconfirmed: bool = False
) -> Diagnosis:
    """The limiting unit does the work the algorithm needs at >= HEALTHY_FRACTION_OF_PEAK of its elapsed-cycle peak,
    with a grid that fills the GPU: to go faster, do less work. ``advice``: mechanisms that change the work
    itself (matrix work that could move to the tensor cores) become findings. An L2 at its roof that passes a DRAM
    stream through is the DRAM stream's roof (:func:`l2_passes_dram_stream`). ``unconfirmed``: a DRAM stream at its
    roof in a report without the memory tables (:func:`dram_stream_at_roof`): healthy at lower confidence, with
    the section that would confirm the bytes are requested data."""
    util = f.util[unit]
    if unit == "l2" and l2_passes_dram_stream(f):
        return _healthy_dram_stream(f, util)
    roof = th.HEALTHY_FRACTION_OF_PEAK
    ev: list[Evidence] = [
        unit_used(
            f,
            unit,
            _AT_ROOF.format(pct=100 * roof, where=" over the kernel's elapsed cycles"),
            util,
            round(100 * roof, 1),
        ),
        *_achieved(f, unit),
    ]
    d = f.duration_evidence()
    if d:
        ev.append(d)
    fix = _LESS_WORK.get(unit, "Do less work.")
    lever = tf32_lever(f, bool(advice)) if unit == "fp32" else None
    named = bool(_GEMM_NAME.search(f.k.name or ""))
    if lever is not None:
        fix += " " + tf32_sentence(f, bool(advice))
    elif unit == "fp32" and advice:
        fix += " Matrix work could move to the tensor cores (TF32 or BF16 inputs) if the precision allows."
    extra = (tf32_finding(f, lever, named),) if lever is not None and not advice else ()
    caveat = (
        " The report has no memory tables (MemoryWorkloadAnalysis_Tables): that every byte DRAM moves is data the "
        "instructions asked for (coalesced, no excess sectors) is assumed from the DRAM stream's shape (L2 and L1 "
        "no busier than DRAM), not measured."
        if unconfirmed
        else ""
    )
    return Diagnosis(
        subject=subject(f.k),
        bottleneck=RESOURCE_OF_UNIT[unit],
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: {unit_words(f, unit)} at {pc(util)}% of peak, at its roofline "
            f"(>= {100 * roof:.0f}%); to go faster, do less work"
            + (
                " (the memory tables were not collected: that the bytes are all requested data is not confirmed)."
                if unconfirmed
                else "."
            )
        ),
        evidence=tuple(ev[:3]),
        mechanism=(
            f"The kernel keeps its limiting unit ({unit_words(f, unit)}) busy with useful work over its whole run, on a "
            "grid that fills the GPU; no mechanism (coalescing, bank conflicts, spills, divergence, grid size) "
            "explains a gap, so other counters (occupancy, registers, conflicts) are not problems here."
            + _what_the_unit_does(f, unit)
            + caveat
        ),
        fix=fix,
        expect=(_less_work_expectation(f, unit),),
        confidence=Confidence(value=th.CONFIDENCE_PARTIAL, would_raise=_TABLES)
        if unconfirmed
        else Confidence(value=th.CONFIDENCE_MEASURED, would_raise=_WOULD_RAISE),
        next_step=(
            f"Confirm that the traffic is requested data: `{recapture(f, '--section MemoryWorkloadAnalysis_Tables')}`"
            f" (sectors per request, excess sectors). {_NEXT_STEP}"
            if unconfirmed
            else _NEXT_STEP
        ),
        findings=findings_of(advice, None) + extra,
    )


def tf32_sentence(f: KernelFacts, matrix_in_sass: bool) -> str:
    """The TF32 advice of FP32 matrix work at the FP32 roof (:func:`kprof.rules.kernel.matrix.tf32_lever`), "" when
    it does not apply: the same sentence in the rule's fix and in the kernel's language (kprof.diagnose.fixes)."""
    lever = tf32_lever(f, matrix_in_sass)
    if lever is None:
        return ""
    words = tf32_words(lever, bool(_GEMM_NAME.search(f.k.name or "")))
    return words[:1].upper() + words[1:]


def _achieved(f: KernelFacts, unit: str) -> list[Evidence]:
    """The unit's achieved rate against its peak (bandwidth, tensor or FP32 FLOP/s), when the roofline has both."""
    r = f.roof
    if unit in MEMORY_UNITS and r.bytes_per_s.get(unit) and r.peak_bytes_per_s.get(unit):
        rate, peak, util = r.bytes_per_s[unit], r.peak_bytes_per_s[unit], f.util.get(unit)
        metric = bandwidth_metric(f, unit)
        if util is None or abs(rate / peak - util) <= th.BANDWIDTH_SHARE_AGREEMENT:
            return [
                Evidence(
                    name=f"achieved {unit.upper()} bandwidth",
                    value=round(rate / 1e9, 0),
                    unit="GB/s",
                    reference=f"peak {peak / 1e9:.0f} GB/s (from the report)",
                    reference_value=round(peak / 1e9, 0),
                    metric=metric,
                )
            ]
        # the counter counts other work than the stage that sets the unit's percentage: name what it counts, and
        # quote no share of the peak a reader would take for a second utilisation (BANDWIDTH_SHARE_AGREEMENT)
        name, counts = BYTE_COUNTER_WORDS.get(metric.split(".sum")[0], (f"{unit.upper()} byte rate", "bytes"))
        return [
            Evidence(
                name=name,
                value=round(rate / 1e9, 0),
                unit="GB/s",
                reference=f"{counts}: not the work of the stage that puts {unit_words(f, unit)} at {pc(util)}% of "
                "peak, so no share of the peak is quoted",
                metric=metric,
            )
        ]
    names = {
        "tensor": ("achieved tensor-core throughput", " for this input type"),
        "fp32": ("achieved FP32 throughput", ""),
    }
    if unit in names and r.flops.get(unit) and r.peak_flops.get(unit):
        name, what = names[unit]
        return [
            Evidence(
                name=name,
                value=round(r.flops[unit] / 1e12, 1),
                unit="TFLOP/s",
                reference=f"peak {r.peak_flops[unit] / 1e12:.0f} TFLOP/s{what} (from the report)",
                reference_value=round(r.peak_flops[unit] / 1e12, 1),
                metric=f"derived:{unit}_tflops",
            )
        ]
    return []


def _what_the_unit_does(f: KernelFacts, unit: str) -> str:
    """The numbers that make this kernel's "useful work" concrete: the bytes a DRAM-bound kernel moves against the
    bytes its instructions asked for; the share of a compute-bound kernel's instructions that are the op's own
    arithmetic. "" when the report cannot say."""
    if unit == "dram":
        moved, needed, ns = dram_bytes(f.k), compulsory_dram_bytes(f.k), f.duration_ns or f.v(DURATION)
        if not moved or not ns:
            return ""
        out = f" It moves {moved / 1e6:,.0f} MB through DRAM in {fmt_ns(ns)} ({moved / ns:,.0f} GB/s)"
        if needed:
            out += (
                f", {moved / needed:.2f}x the {needed / 1e6:,.0f} MB its instructions asked for: the traffic is the "
                "op's own"
            )
        return out + "."
    if unit in ("fp32", "fp64", "int", "xu", "tensor"):
        work = f.work_share()
        if work is None or unit == "tensor":
            return ""
        return (
            f" {pc(work)}% of its executed instructions are arithmetic on the data (the op's own work, not index "
            "math or conversions)."
        )
    return ""


def _less_work_expectation(f: KernelFacts, unit: str) -> Expectation:
    """What falls when less work is done: DRAM bytes, L2 sectors, else the duration."""
    if unit == "dram":
        return _dram_bytes_expectation(f)
    if unit == "l2" and f.v("lts__t_sectors.sum") is not None:
        return Expectation(
            metric="lts__t_sectors.sum",
            direction=Direction.DOWN,
            value_now=f.v("lts__t_sectors.sum"),
            unit="sector",
            label="L2 sectors accessed",
        )
    return Expectation(
        metric=DURATION,
        direction=Direction.DOWN,
        value_now=f.v(DURATION),
        unit="ns",
        label=f"kernel duration ({UNDER_NCU}), once less work is done",
    )


def _dram_bytes_expectation(f: KernelFacts) -> Expectation:
    return Expectation(
        metric="derived:dram_bytes",
        direction=Direction.DOWN,
        value_now=dram_bytes(f.k),
        unit="byte",
        label="DRAM bytes moved",
    )


def _healthy_dram_stream(f: KernelFacts, l2: float) -> Diagnosis:
    """L2 at its roof while its reads miss to DRAM: a DRAM stream whose path (DRAM + L2) is saturated."""
    roof = th.HEALTHY_FRACTION_OF_PEAK
    dram = f.util.get("dram", 0.0)
    hit = f.v(L2_READ_HIT_RATE) or 0.0
    ev = [
        unit_used(f, "l2", _AT_ROOF.format(pct=100 * roof, where=""), l2, round(100 * roof, 1)),
        Evidence(
            name="L2 read hit rate",
            value=round(hit, 1),
            unit="%",
            reference=f"below {100 * th.L2_STREAMING_READ_HIT_RATE:.0f}%: the L2 passes a DRAM stream through",
            reference_value=round(100 * th.L2_STREAMING_READ_HIT_RATE, 1),
            metric=L2_READ_HIT_RATE,
        ),
        unit_used(f, "dram", "the bytes come from DRAM; its path through L2 is what is saturated", dram),
    ]
    return Diagnosis(
        subject=subject(f.k),
        bottleneck=B.DRAM_BANDWIDTH_BOUND,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: a DRAM stream at its roof: DRAM at {pc(dram)}% of peak and the L2 that carries it at "
            f"{pc(l2)}% (>= {100 * roof:.0f}%); to go faster, move fewer bytes."
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
        expect=(_dram_bytes_expectation(f),),
        confidence=Confidence(value=th.CONFIDENCE_CONSISTENT, would_raise=_WOULD_RAISE),
        next_step=_NEXT_STEP,
    )


def dram_stream_at_roof(f: KernelFacts, unit: str) -> bool:
    """A DRAM stream at its roof in a report without the memory tables (a ``--section SpeedOfLight`` capture): DRAM
    is the limiter, at HEALTHY_FRACTION_OF_PEAK of its elapsed-cycle peak, and neither L2 nor L1 is busier than it by
    more than UNIT_TIE_MARGIN (caches that carry no more than the DRAM stream: excess sectors that hit in L2, the
    signature of uncoalesced access at a DRAM roof, would make L2 the busier level). The bytes are then presumed the
    kernel's own; the diagnosis says that the memory tables would confirm it."""
    if unit != "dram" or f.util.get("dram", 0.0) < th.HEALTHY_FRACTION_OF_PEAK:
        return False
    return f.limiter()[0] == "dram"


def traffic_is_required(f: KernelFacts, unit: str) -> bool:
    """Without the memory tables: whether ncu's per-instruction ideal sectors show the global traffic as the
    traffic the instructions asked for (no excess, below COALESCING_TOLERANCE), so a DRAM roof is the work's own."""
    return unit == "dram" and (metric_value(f.k, "derived:global_excess_sector_share") or 1.0) < (
        1.0 - 1.0 / th.COALESCING_TOLERANCE
    )
