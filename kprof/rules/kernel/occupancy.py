"""``occupancy_limited``: registers, shared memory or the block size cap the resident warps while latency is
exposed.
"""

from __future__ import annotations

import math

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts
from kprof.facts.names import ACHIEVED_OCC, ISSUE_ACTIVE, OCC_LIMITS, THEORETICAL_OCC, WAVES
from kprof.facts.stalls import LATENCY_STALLS, STALL_WORDS, stall_reasons
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, stall_evidence, time_expectation


def occupancy(f: KernelFacts) -> Mechanism | None:
    k = f.k
    theo = f.v(THEORETICAL_OCC)
    if theo is None or theo / 100.0 >= th.OCCUPANCY_LOW_FRACTION:
        return None
    waves = f.v(WAVES)
    if waves is not None and waves < th.OCCUPANCY_MIN_WAVES:
        return None  # the grid does not even fill the slots there are: the grid, not occupancy, limits
    limits = {what: f.v(name) for what, name in OCC_LIMITS.items()}
    known = {w: v for w, v in limits.items() if v is not None}
    if not known:
        return None
    limiter = min(known, key=lambda w: known[w])
    others = [v for w, v in known.items() if w != limiter]
    tpb = k.threads_per_block or 0
    warps_per_block = max(1, math.ceil(tpb / th.WARP_SIZE)) if tpb else None
    max_warps_attr = k.device_attributes.get("max_warps_per_multiprocessor")
    max_warps = float(max_warps_attr) if isinstance(max_warps_attr, int | float) else None
    if warps_per_block is None or max_warps is None:
        return None
    cur_warps = known[limiter] * warps_per_block
    next_blocks = min(others) if others else known[limiter]
    target_warps = min(max_warps, next_blocks * warps_per_block)
    gain = target_warps / cur_warps if cur_warps else 1.0
    if gain <= 1.0:
        return None
    issue_hit = k.first_value(*ISSUE_ACTIVE)
    issue = issue_hit[1] / 100.0 if issue_hit else None
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    latency_exposed = (issue is None or issue < th.ISSUE_EXPOSED_LATENCY) and (
        top is None or top in LATENCY_STALLS
    )
    if not latency_exposed or f.u_max >= th.HEALTHY_FRACTION_OF_PEAK:
        return None
    savings = max(0.0, 1.0 - max(1.0 / gain, f.u_max))
    achieved = f.v(ACHIEVED_OCC)
    ev = [
        Evidence(
            name="theoretical occupancy",
            value=round(theo, 1),
            unit="%",
            reference=f"limited by {limiter}: {int(known[limiter])} blocks/SM x {warps_per_block} warps",
            reference_value=round(100 * target_warps / max_warps, 1),
            metric=f"{THEORETICAL_OCC}, {OCC_LIMITS[limiter]}",
        ),
        Evidence(
            name="scheduler issue-active",
            value=round(100 * issue, 1) if issue is not None else None,
            unit="% of cycles",
            reference=f"below {100 * th.ISSUE_EXPOSED_LATENCY:.0f}%: latency is exposed",
            metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
        ),
    ]
    if top:
        ev.append(stall_evidence(k, top, stalls[top], STALL_WORDS.get(top, (top, ""))[0]))
    how = {
        "registers": f"cut registers per thread (now {k.registers_per_thread}) with __launch_bounds__(threads, minBlocks) or smaller per-thread tiles",
        "shared memory": f"use less shared memory per block (now {k.shared_mem_per_block} B): smaller tiles, fewer buffers, or data in registers/L2",
        "block size (warps)": "use larger blocks (more warps per block)",
        "blocks per SM": f"use larger blocks: {tpb} threads per block hit the resident-block limit before the warp limit",
        "barriers": "use fewer named barriers per block",
    }[limiter]
    exp = [
        Expectation(
            metric=ACHIEVED_OCC,
            direction=Direction.UP,
            target=round(100 * target_warps / max_warps * 0.8, 1),
            unit="%",
            value_now=round(achieved, 1) if achieved is not None else None,
            label="achieved occupancy",
        )
    ]
    t = time_expectation(f, savings)
    if t:
        exp.append(t)
    return Mechanism(
        bottleneck=B.OCCUPANCY_LIMITED,
        savings=savings,
        headline=(
            f"Occupancy limited by {limiter}: {round(theo, 1):g}% of the warp slots can be filled, and with latency exposed "
            f"(issue active {pc(issue)}%) more warps would hide it."
            if issue is not None
            else f"Occupancy limited by {limiter}: {round(theo, 1):g}% of the warp slots can be filled."
        ),
        evidence=ev,
        mechanism=(
            f"Each block needs too much of one SM resource ({limiter}), so few warps are resident; when they all "
            "wait on memory, the scheduler has nothing to issue."
        ),
        fix=how[0].upper() + how[1:] + ", and launch enough blocks to fill the freed slots.",
        expect=exp,
        confidence=0.75 if top else 0.55,
        would_raise="" if top else "WarpStateStats (stall reasons) to confirm the latency is exposed",
        inflates=(),
    )
