"""``occupancy_limited``: registers, shared memory or the block size cap the resident warps while latency is
exposed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts
from kprof.facts.names import ACHIEVED_OCC, ISSUE_ACTIVE, OCC_LIMITS, THEORETICAL_OCC, WAVES
from kprof.facts.sass_traits import synchronous_mma_loop
from kprof.facts.stalls import LATENCY_STALLS
from kprof.kernel_model import KernelLaunch
from kprof.model import Direction, Evidence, Expectation, _fmt
from kprof.rules.kernel.common import B, Mechanism, cap, pc, top_stall_evidence, with_duration


@dataclass(frozen=True, slots=True)
class _Limit:
    """The resource that caps resident blocks, and the warps freeing it would allow."""

    limiter: str
    """A key of :data:`~kprof.facts.names.OCC_LIMITS`."""
    blocks: float
    """Resident blocks per SM it allows."""
    warps_per_block: int
    max_warps: float
    target_warps: float
    """Resident warps at the next limit (the next resource's blocks, or the SM's warp slots)."""

    @property
    def gain(self) -> float:
        cur_warps = self.blocks * self.warps_per_block
        return self.target_warps / cur_warps if cur_warps else 1.0


def _limit(k: KernelLaunch) -> _Limit | None:
    """The resource that caps resident blocks; None when the report lacks the limits or the SM's warp slots."""
    limits = {what: k.value(name) for what, name in OCC_LIMITS.items()}
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
    next_blocks = min(others) if others else known[limiter]
    target_warps = min(max_warps, next_blocks * warps_per_block)
    return _Limit(limiter, known[limiter], warps_per_block, max_warps, target_warps)


def occupancy(f: KernelFacts) -> Mechanism | None:
    """Theoretical occupancy below OCCUPANCY_LOW_FRACTION, on a grid of at least OCCUPANCY_MIN_WAVES waves, with
    latency exposed: schedulers issuing in fewer than ISSUE_EXPOSED_LATENCY of cycles, the top stall a latency
    stall, and no unit at HEALTHY_FRACTION_OF_PEAK.

    Physics: resident warps hide each other's latency; a resource that caps them (registers, shared memory, block
    size) leaves the scheduler with nothing to issue while they all wait. Freeing it raises the resident warps to
    the next limit, and the time falls by at most that ratio, never below the busiest unit's share.
    """
    theo = f.v(THEORETICAL_OCC)
    if theo is None or theo / 100.0 >= th.OCCUPANCY_LOW_FRACTION:
        return None
    if synchronous_mma_loop(f.k.sass) is not None:
        return None  # a GEMM tile caps the warps by design; the lever is pipelining (kprof.rules.kernel.pipelining)
    waves = f.v(WAVES)
    if waves is not None and waves < th.OCCUPANCY_MIN_WAVES:
        return None  # the grid does not even fill the slots there are: the grid, not occupancy, limits
    lim = _limit(f.k)
    if lim is None or lim.gain <= 1.0:
        return None
    issue_hit = f.k.first_value(*ISSUE_ACTIVE)
    issue = issue_hit[1] / 100.0 if issue_hit else None
    top = f.top_stall
    latency_exposed = (issue is None or issue < th.ISSUE_EXPOSED_LATENCY) and (
        top is None or top in LATENCY_STALLS
    )
    if not latency_exposed or f.u_max >= th.HEALTHY_FRACTION_OF_PEAK:
        return None
    savings = max(0.0, 1.0 - max(1.0 / lim.gain, f.u_max))
    achieved = f.v(ACHIEVED_OCC)
    ev = [
        Evidence(
            name="theoretical occupancy",
            value=round(theo, 1),
            unit="%",
            reference=f"limited by {lim.limiter}: {int(lim.blocks)} blocks/SM x {lim.warps_per_block} warps",
            reference_value=round(100 * lim.target_warps / lim.max_warps, 1),
            metric=f"{THEORETICAL_OCC}, {OCC_LIMITS[lim.limiter]}",
        ),
        Evidence(
            name="scheduler issue-active",
            value=round(100 * issue, 1) if issue is not None else None,
            unit="% of cycles",
            reference=f"below {100 * th.ISSUE_EXPOSED_LATENCY:.0f}%: latency is exposed",
            metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
        ),
    ]
    stall = top_stall_evidence(f)
    if stall is not None:
        ev.append(stall)
    warps = Expectation(
        metric=ACHIEVED_OCC,
        direction=Direction.UP,
        target=round(100 * lim.target_warps / lim.max_warps * th.OCCUPANCY_ACHIEVED_SHARE, 1),
        unit="%",
        value_now=round(achieved, 1) if achieved is not None else None,
        label="achieved occupancy",
        basis=f"{_fmt(th.OCCUPANCY_ACHIEVED_SHARE, 'fraction')} of the "
        f"{_fmt(lim.target_warps / lim.max_warps, 'fraction')} the freed limit allows, the achieved-to-theoretical "
        "ratio most launches reach: median 0.92, lower quartile 0.83 over 75 measured",
    )
    return Mechanism(
        bottleneck=B.OCCUPANCY_LIMITED,
        savings=savings,
        headline=(
            f"Occupancy limited by {lim.limiter}: {round(theo, 1):g}% of the warp slots can be filled, and with "
            f"latency exposed (issue active {pc(issue)}%) more warps would hide it."
            if issue is not None
            else f"Occupancy limited by {lim.limiter}: {round(theo, 1):g}% of the warp slots can be filled."
        ),
        evidence=ev,
        mechanism=(
            f"Each block needs too much of one SM resource ({lim.limiter}), so few warps are resident; when they all "
            f"{_WAIT.get(top or '', 'wait on memory')}, the scheduler has nothing to issue."
        ),
        fix=cap(_how(f.k, lim.limiter)) + ", and launch enough blocks to fill the freed slots.",
        expect=with_duration(f, [warps], savings, why="the latency more warps would hide costs"),
        confidence=th.CONFIDENCE_CONSISTENT if top else th.CONFIDENCE_RESOURCE,
        would_raise="" if top else "WarpStateStats (stall reasons) to confirm the latency is exposed",
        inflates=(),
    )


_WAIT = {
    "short_scoreboard": "wait on shared-memory (LDS) or special-function (MUFU) results",
    "wait": "wait out fixed instruction latencies",
    "membar": "wait on memory fences",
}
"""What the resident warps wait on, by top stall reason (others: memory)."""


def _how(k: KernelLaunch, limiter: str) -> str:
    """How to free ``limiter``, in words."""
    return {
        "registers": f"cut registers per thread (now {k.registers_per_thread}) with "
        "__launch_bounds__(threads, minBlocks) or smaller per-thread tiles",
        "shared memory": f"use less shared memory per block (now {k.shared_mem_per_block} B): smaller tiles, "
        "fewer buffers, or data in registers/L2",
        "block size (warps)": "use larger blocks (more warps per block)",
        "blocks per SM": f"use larger blocks: {k.threads_per_block or 0} threads per block hit the resident-block "
        "limit before the warp limit",
        "barriers": "use fewer named barriers per block",
    }[limiter]
