"""A reduction whose shared-memory tree saturates the L1/shared pipe (``l1_shared_bandwidth_bound`` as a fix): the
roof is reached by the tree's loads and stores, not by the data the sum must read."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.facts.kernel import (
    KernelFacts,
    ffma_warp_instructions,
    kernel_floor_parts,
    metric_value,
    ratio,
    unit_metric,
)
from kprof.facts.names import DRAM_READ_BYTES, DRAM_WRITE_BYTES, DURATION, INST_EXECUTED, SHARED_WAVEFRONT_PCT
from kprof.facts.units import UNIT_WORDS
from kprof.model import Direction, Evidence, Expectation, _fmt
from kprof.rules.kernel.common import B, Mechanism, fmt_ns, pace_savings, pc, unit_used, with_duration


def shared_tree_reduction(f: KernelFacts) -> Mechanism | None:
    """A reduction (it writes at most REDUCTION_MAX_OUTPUT_SHARE of the bytes it reads) at the L1/shared roof, whose
    shared-memory instructions per global load exceed what a warp-shuffle reduction needs (REDUCTION_SHARED_PER_LOAD,
    x COALESCING_TOLERANCE).

    Physics: summing N values needs N loads and N - 1 adds; a shared-memory tree adds, per level, two shared loads and
    a store for each active thread and a barrier, and its last five levels run partial warps. Warp shuffles
    (__shfl_down_sync) move the values between lanes through registers; one shared-memory step per block combines the
    warps. With the tree gone the kernel streams its input, so its roof is DRAM. The fix does not keep the
    instructions: the tree's shared loads and stores, its barrier and index math per level are most of what the
    kernel issues, and the loads of many elements per thread are wide, so today's instruction count is no floor.
    The floor that binds is the input's bytes at the healthy DRAM roof (:func:`kernel_floor_parts`, no kept
    instructions): the duration target, and DRAM's share of peak at that duration (the same bytes in less time);
    without a DRAM floor, the L1 time the tree holds, paced by the next busiest unit. The L1 must be the busiest
    unit (within UNIT_TIE_MARGIN) and at
    HEALTHY_FRACTION_OF_PEAK (the rule keeps that roof from being called healthy), and the work must not be FFMA (a
    matrix product's shared tiles are :func:`kprof.rules.kernel.matrix.shared_operand_reload`'s).
    """
    l1 = f.util.get("l1")
    if l1 is None or l1 < th.HEALTHY_FRACTION_OF_PEAK or l1 < f.u_max - th.UNIT_TIE_MARGIN:
        return None
    out_share = ratio(f.v(DRAM_WRITE_BYTES), f.v(DRAM_READ_BYTES))
    if out_share is None or out_share > th.REDUCTION_MAX_OUTPUT_SHARE:
        return None
    ffma, executed = ffma_warp_instructions(f.k), f.v(INST_EXECUTED)
    if ffma and executed and ffma / executed >= th.MATRIX_LIKE_FFMA_SHARE:
        return None
    per_load = metric_value(f.k, "derived:shared_instructions_per_global_load")
    need = th.REDUCTION_SHARED_PER_LOAD
    if per_load is None or per_load <= need * th.COALESCING_TOLERANCE:
        return None
    shared = f.v(SHARED_WAVEFRONT_PCT)
    part = min(l1, shared / 100.0) if shared is not None else l1
    kept = need / per_load
    savings = pace_savings(f, "l1", l1 - part * (1.0 - kept))
    d = f.v(DURATION)
    floor = max(kernel_floor_parts(f.k, None, th.HEALTHY_FRACTION_OF_PEAK), default=None)
    if floor is not None and d and floor[0] < d:
        savings = 1.0 - floor[0] / d  # the tree gone, the kernel streams its input: the floor binds
    dram = f.util.get("dram")
    executed = f.v(INST_EXECUTED)
    ev = [
        Evidence(
            name="shared-memory instructions per global load",
            value=round(per_load, 2),
            unit="inst/load",
            reference=f"a warp-shuffle reduction needs at most {need:g} (one STS per warp, one LDS per warp of the "
            "block's last step), fewer with many elements per thread",
            reference_value=need,
            metric="derived:shared_instructions_per_global_load",
        ),
        unit_used(f, "l1", "saturated by the reduction tree's shared loads and stores", l1),
    ]
    if dram is not None:
        ev.append(unit_used(f, "dram", "the input the sum must read streams far below its roof", dram))
    expect = [
        Expectation(
            metric="derived:shared_instructions_per_global_load",
            direction=Direction.DOWN,
            target=need,
            unit="inst/load",
            value_now=round(per_load, 2),
            label="shared-memory instructions per global load",
            basis="a warp-shuffle reduction: one STS per warp and one LDS per warp of the block's last step",
        ),
        Expectation(
            metric=unit_metric(f, "l1"),
            direction=Direction.DOWN,
            value_now=round(100 * l1, 1),
            unit="%",
            label=f"{UNIT_WORDS['l1']} used",
        ),
    ]
    if executed:
        expect.append(
            Expectation(
                metric=INST_EXECUTED,
                direction=Direction.DOWN,
                value_now=executed,
                unit="inst",
                label="warp instructions executed (the tree's levels go)",
            )
        )
    if dram is not None and dram < th.HEALTHY_FRACTION_OF_PEAK:
        # the same input bytes in the predicted duration: DRAM's share of peak rises by d / after
        share, basis = th.HEALTHY_FRACTION_OF_PEAK, "the healthy DRAM roof a streaming sum reaches"
        if d and savings > 0:
            after = d * (1.0 - savings)
            share = min(dram * d / after, th.HEALTHY_FRACTION_OF_PEAK)
            basis = f"the same {_fmt(f.v(DRAM_READ_BYTES), 'B')} of input in {fmt_ns(after)} instead of {fmt_ns(d)}"
        expect.append(
            Expectation(
                metric=unit_metric(f, "dram"),
                direction=Direction.UP,
                target=round(100 * share, 1),
                unit="%",
                value_now=round(100 * dram, 1),
                label=f"{UNIT_WORDS['dram']} used",
                basis=basis,
            )
        )
    return Mechanism(
        bottleneck=B.L1_SHARED_BANDWIDTH_BOUND,
        savings=savings,
        headline=(
            f"L1/shared-memory bandwidth at {pc(l1)}% of peak, reached by a shared-memory reduction tree: "
            f"{per_load:.3g} shared loads and stores per global load where warp shuffles need at most {need:g}"
            + (f", while DRAM, which the sum must stream, is at {pc(dram)}%." if dram is not None else ".")
        ),
        evidence=ev[:3],
        mechanism=(
            f"The kernel writes {100 * out_share:.2g}% of the bytes it reads: a reduction. Each block combines its "
            "inputs through shared memory, level by level (two shared loads and a store per active thread and a "
            "barrier per level, the last levels with most lanes idle), so the L1/shared pipe does several times the "
            "work of reading the data: the roof it is at is reached by the tree, not by the sum."
            + (
                f" The fix takes the tree's loads, stores, barriers and index math out of the {_fmt(int(executed))} "
                f"warp instructions it issues, so today's count is no floor; the one that binds is {floor[1]} "
                f"({fmt_ns(floor[0])})."
                if executed and floor is not None and floor[0] < (d or 0.0)
                else ""
            )
            + (
                " (The report has no SASS: the tree is read from the shared-memory and global instruction counts.)"
                if f.sass.empty
                else ""
            )
        ),
        fix=(
            "Sum many elements per thread in registers first (a grid-stride loop with several independent float4 "
            "loads in flight), then reduce each warp with __shfl_down_sync (5 steps for 32 lanes) and combine the "
            "warps' partials with one shared-memory step per block (or cub::BlockReduce / cub::DeviceReduce): the "
            "kernel then streams its input at the DRAM roof."
        ),
        expect=with_duration(f, expect, savings),
        confidence=th.CONFIDENCE_CONSISTENT if not f.sass.empty else th.CONFIDENCE_PARTIAL,
        would_raise="" if not f.sass.empty else "SourceCounters (the shared-memory lines of the tree)",
        inflates=("l1", "issue"),
        waste=part / l1 * (1.0 - kept),
        blocks_healthy=True,
    )
