"""The launch's shape: ``small_grid`` (too few blocks to keep every SM busy) and ``tail_effect`` (a partial last
wave).
"""

from __future__ import annotations

import math

from kprof import thresholds as th
from kprof.diagnose.roofline import sm_active_fraction
from kprof.facts.kernel import KernelFacts
from kprof.facts.names import THEORETICAL_OCC, WAVES
from kprof.facts.stalls import GLOBAL_STALLS, stall_reasons
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, time_expectation


def grid(f: KernelFacts) -> Mechanism | None:
    k = f.k
    sms = f.sm_count
    blocks = k.blocks
    waves = f.v(WAVES)
    active = sm_active_fraction(k)
    if blocks is None or sms is None:
        return None
    if blocks < sms or (waves is not None and waves < th.TAIL_MIN_WAVES):
        frac = active if active is not None else min(1.0, blocks / sms)
        if frac >= th.SMALL_GRID_ACTIVE_SM_FRACTION:
            return None
        # Spread over every SM, the same work would take the busy time over the busy fraction a full grid reaches.
        savings = 1.0 - frac / th.SMALL_GRID_TARGET_SM_BUSY
        if savings < th.MIN_MECHANISM_SAVINGS:
            return None
        per_sm = None
        occ = f.v(THEORETICAL_OCC)
        tpb = k.threads_per_block or 0
        max_warps = k.device_attributes.get("max_warps_per_multiprocessor")
        if occ and tpb and isinstance(max_warps, int | float):
            per_sm = max(1, int(occ / 100 * max_warps * th.WARP_SIZE // tpb))
        target_blocks = sms * (per_sm or 1)
        ev = [
            Evidence(
                name="blocks in the grid",
                value=blocks,
                unit="blocks",
                reference=f"{sms} SMs"
                + (f" x {per_sm} resident blocks each = {target_blocks}" if per_sm else ""),
                reference_value=target_blocks,
                metric="launch__grid_size",
            ),
            Evidence(
                name="waves per SM",
                value=round(waves, 3) if waves is not None else None,
                unit="waves",
                reference=">= 1 fills every SM",
                reference_value=1,
                metric=WAVES,
            ),
        ]
        if active is not None:
            ev.append(
                Evidence(
                    name="SM busy fraction",
                    value=round(100 * active, 1),
                    unit="%",
                    reference=f">= {100 * th.SMALL_GRID_ACTIVE_SM_FRACTION:.0f}% when the grid covers the GPU",
                    metric="derived:sm_active_pct",
                )
            )
        exp = [
            Expectation(
                metric="launch__grid_size",
                direction=Direction.UP,
                target=target_blocks,
                unit="blocks",
                value_now=blocks,
                label="blocks in the grid",
            ),
            Expectation(
                metric="derived:sm_active_pct",
                direction=Direction.UP,
                target=round(100 * th.SMALL_GRID_TARGET_SM_BUSY, 1),
                unit="%",
                value_now=round(100 * active, 1) if active is not None else None,
                label="SM busy fraction",
            ),
        ]
        t = time_expectation(f, savings)
        if t:
            exp.append(t)
        return Mechanism(
            bottleneck=B.SMALL_GRID,
            savings=savings,
            headline=(
                f"Grid too small: {blocks} blocks for {sms} SMs ({round(waves, 3):g} waves); "
                + (
                    f"the SMs are busy {pc(frac)}% of the time."
                    if active is not None
                    else f"at most {pc(frac)}% of the SMs have a block."
                )
                if waves is not None
                else f"Grid too small: {blocks} blocks for {sms} SMs."
            ),
            evidence=ev,
            mechanism=_small_grid_words(f, blocks, sms, frac),
            fix=(
                f"Launch at least {target_blocks} blocks (a multiple of the {sms} SMs): split the work finer "
                "(grid-stride loops sized from the SM count, split-K / split along another dimension), or use "
                "smaller blocks with less work each."
            ),
            expect=exp,
            confidence=0.85 if active is not None else 0.7,
            would_raise=""
            if active is not None
            else "sm__cycles_active.avg (SpeedOfLight) to measure the idle SMs",
            inflates=(),
        )
    if waves is not None and waves > th.TAIL_MIN_WAVES:
        eff = waves / math.ceil(waves)
        # Only the last wave idles: the loss is that wave's empty share over all (whole) waves, if waves took
        # equal time. Blocks of unequal length fill the tail, so the loss can be no larger than the SMs' measured
        # idle time (1 - busy fraction) when the report has it.
        savings = 1.0 - eff
        if active is not None:
            savings = min(savings, 1.0 - active)
        if savings < th.MIN_MECHANISM_SAVINGS:
            return None
        ev = [
            Evidence(
                name="waves per SM",
                value=round(waves, 2),
                unit="waves",
                reference=f"the last of {math.ceil(waves)} waves is {100 * (waves - math.floor(waves)):.0f}% full",
                metric=WAVES,
            ),
            Evidence(
                name="blocks in the grid",
                value=blocks,
                unit="blocks",
                reference=f"{sms} SMs",
                metric="launch__grid_size",
            ),
        ]
        if active is not None:
            ev.append(
                Evidence(
                    name="SM busy fraction",
                    value=round(100 * active, 1),
                    unit="%",
                    reference="the tail can cost at most the SMs' idle time",
                    metric="derived:sm_active_pct",
                )
            )
        exp = [
            Expectation(
                metric="derived:tail_wave_efficiency",
                direction=Direction.UP,
                target=0.95,
                value_now=round(eff, 3),
                label="waves / whole waves",
            )
        ]
        t = time_expectation(f, savings)
        if t:
            exp.append(t)
        return Mechanism(
            bottleneck=B.TAIL_EFFECT,
            savings=savings,
            headline=(
                f"Tail effect: {waves:.2f} waves per SM, so the last wave leaves "
                f"{100 * (math.ceil(waves) - waves):.0f}% of a wave's slots idle."
            ),
            evidence=ev,
            mechanism="Blocks run in waves of (SMs x resident blocks); a partial last wave leaves SMs idle until it ends.",
            fix=(
                "Size the grid to a whole number of waves (or many waves): more, smaller blocks, or a persistent "
                "grid-stride kernel launched with exactly SMs x resident blocks."
            ),
            expect=exp,
            confidence=0.6,
            would_raise="a timeline run to confirm the kernel's share of the step",
            inflates=(),
        )
    return None


_PER_SM_PIPES = {
    "tensor_pipe": "tensor (MMA) pipe",
    "fma_pipe": "FMA pipe",
    "fp64_pipe": "FP64 pipe",
    "xu_pipe": "special-function (XU) pipe",
    "alu_pipe": "integer (ALU) pipe",
    "l1": "L1/shared memory",
}


def _small_grid_words(f: KernelFacts, blocks: int, sms: int, frac: float) -> str:
    """What the SMs that have a block do, from the counters: a pipe at its roof on their active cycles (the work
    is fine where it runs; the idle SMs are the loss), or warps waiting on memory (too few warps per busy SM to
    hide its latency), else only the idle SMs."""
    used = min(blocks, sms)
    head = (
        f"Each block runs on one SM: {blocks} blocks keep at most {used} of the {sms} SMs busy, and the SMs are "
        f"busy {pc(frac)}% of the elapsed time, so the other SMs idle for the whole run."
    )
    if frac <= 0:
        return head
    per_sm = {p: f.roof.utilization[p] / frac for p in _PER_SM_PIPES if p in f.roof.utilization}
    top = max(per_sm, key=lambda p: per_sm[p]) if per_sm else None
    reasons = stall_reasons(f.k)
    total = sum(reasons.values())
    top_stall = next(iter(reasons), None)
    if top is not None and per_sm[top] >= th.HEALTHY_FRACTION_OF_PEAK:
        return head + (
            f" Where a block runs, the {_PER_SM_PIPES[top]} is busy {pc(min(1.0, per_sm[top]))}% of the SM's active "
            "cycles: the work itself runs at that pipe's rate, and spreading it over every SM is the whole gain."
        )
    if top_stall in GLOBAL_STALLS and total > 0 and reasons[top_stall] / total >= th.DOMINANT_SHARE:
        return head + (
            f" The busy SMs' warps mostly wait on global memory ({top_stall}: {100 * reasons[top_stall] / total:.0f}% "
            f"of the stall cycles), and {max(1, round(f.k.threads_per_block or 0) // th.WARP_SIZE)} warps per block "
            "are too few to hide that latency."
        )
    return head
