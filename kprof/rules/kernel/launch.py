"""The launch's shape: ``small_grid`` (too few blocks to keep every SM busy) and ``tail_effect`` (a partial last
wave).
"""

from __future__ import annotations

import math

from kprof import thresholds as th
from kprof.diagnose.roofline import sm_active_fraction
from kprof.facts.kernel import KernelFacts
from kprof.facts.names import THEORETICAL_OCC, WAVES
from kprof.facts.stalls import GLOBAL_STALLS
from kprof.model import Direction, Evidence, Expectation, _fmt
from kprof.rules.kernel.common import B, Mechanism, pc, with_duration


def grid(f: KernelFacts) -> Mechanism | None:
    """The grid against the GPU: :func:`small_grid` when it has fewer blocks than SMs (or less than TAIL_MIN_WAVES
    waves), else :func:`tail_effect` when a partial last wave follows whole ones."""
    blocks, sms = f.k.blocks, f.sm_count
    if blocks is None or sms is None:
        return None
    waves = f.v(WAVES)
    if blocks < sms or (waves is not None and waves < th.TAIL_MIN_WAVES):
        return small_grid(f, blocks, sms, waves)
    if waves is not None and waves > th.TAIL_MIN_WAVES:
        return tail_effect(f, blocks, sms, waves)
    return None


def _resident_target(f: KernelFacts, sms: int) -> tuple[int | None, int]:
    """(resident blocks per SM at the theoretical occupancy, or None when the report cannot say; the blocks that
    fill every SM once)."""
    per_sm = None
    occ = f.v(THEORETICAL_OCC)
    tpb = f.k.threads_per_block or 0
    max_warps = f.k.device_attributes.get("max_warps_per_multiprocessor")
    if occ and tpb and isinstance(max_warps, int | float):
        per_sm = max(1, int(occ / 100 * max_warps * th.WARP_SIZE // tpb))
    return per_sm, sms * (per_sm or 1)


def small_grid(f: KernelFacts, blocks: int, sms: int, waves: float | None) -> Mechanism | None:
    """Too few blocks: SMs busy less than SMALL_GRID_ACTIVE_SM_FRACTION of the elapsed time (measured, else the
    share of SMs with a block).

    Physics: a block runs on one SM; with fewer blocks than SMs the others idle for the whole run. Spread over every
    SM, the same work takes the busy time over the busy fraction a full grid reaches (SMALL_GRID_TARGET_SM_BUSY).
    """
    active = sm_active_fraction(f.k)
    frac = active if active is not None else min(1.0, blocks / sms)
    if frac >= th.SMALL_GRID_ACTIVE_SM_FRACTION:
        return None
    savings = 1.0 - frac / th.SMALL_GRID_TARGET_SM_BUSY
    if savings < th.MIN_MECHANISM_SAVINGS:
        return None
    per_sm, target_blocks = _resident_target(f, sms)
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
            _busy_evidence(
                active, f">= {100 * th.SMALL_GRID_ACTIVE_SM_FRACTION:.0f}% when the grid covers the GPU"
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
            basis=f"one full wave: {sms} SMs" + (f" x {per_sm} resident blocks each" if per_sm else ""),
        ),
        Expectation(
            metric="derived:sm_active_pct",
            direction=Direction.UP,
            target=round(100 * th.SMALL_GRID_TARGET_SM_BUSY, 1),
            unit="%",
            value_now=round(100 * active, 1) if active is not None else None,
            label="SM busy fraction",
            basis="what a grid that fills the GPU keeps: the same MMA loop on 528 blocks kept 94.3% on the H200",
        ),
    ]
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
        expect=with_duration(f, exp, savings, why="the idle SMs cost"),
        confidence=th.CONFIDENCE_MEASURED if active is not None else th.CONFIDENCE_NO_LINES,
        would_raise=""
        if active is not None
        else "sm__cycles_active.avg (SpeedOfLight) to measure the idle SMs",
        inflates=(),
    )


def _busy_evidence(active: float, reference: str) -> Evidence:
    return Evidence(
        name="SM busy fraction",
        value=round(100 * active, 1),
        unit="%",
        reference=reference,
        metric="derived:sm_active_pct",
    )


def tail_effect(f: KernelFacts, blocks: int, sms: int, waves: float) -> Mechanism | None:
    """A partial last wave after more than TAIL_MIN_WAVES whole ones.

    Physics: blocks run in waves of (SMs x resident blocks). Only the last wave idles: the loss is that wave's
    empty share over all (whole) waves, if waves took equal time. Blocks of unequal length fill the tail, so the
    loss can be no larger than the SMs' measured idle time (1 - busy fraction) when the report has it.
    """
    active = sm_active_fraction(f.k)
    eff = waves / math.ceil(waves)
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
        ev.append(_busy_evidence(active, "the tail can cost at most the SMs' idle time"))
    efficiency = Expectation(
        metric="derived:tail_wave_efficiency",
        direction=Direction.UP,
        target=th.TAIL_TARGET_WAVE_EFFICIENCY,
        value_now=round(eff, 3),
        label="waves / whole waves",
        basis=f"a grid of whole waves: the last one at least {_fmt(th.TAIL_TARGET_WAVE_EFFICIENCY, 'fraction')} full",
    )
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
        expect=with_duration(f, [efficiency], savings, why="the partial last wave costs"),
        confidence=th.CONFIDENCE_PARTIAL,
        would_raise="a timeline run to confirm the kernel's share of the step",
        inflates=(),
    )


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
    reasons = f.stalls
    total = sum(reasons.values())
    top_stall = f.top_stall
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
