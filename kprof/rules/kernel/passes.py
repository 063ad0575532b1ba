"""A DRAM roof reached by a repeated pass (``dram_bandwidth_bound`` as a fix): a second loop reads again, from DRAM,
the data an earlier loop of the same block read."""

from __future__ import annotations

import os

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, dram_bytes, repeated_dram_bytes, repeated_pass_of
from kprof.facts.names import DRAM_READ_BYTES
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, scale_to_limiter, unit_used, with_duration


def _lines(lines: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{os.path.basename(f)}:{n}" for f, n in lines)


def repeated_dram_pass(f: KernelFacts) -> Mechanism | None:
    """Two loops of each block read the same addresses (:func:`kprof.facts.passes.repeated_pass`: the same kernel
    parameter, block and thread terms at both loops' first iteration) and DRAM serves the second read
    (:func:`kprof.facts.kernel.repeated_dram_bytes`: the DRAM reads exceed each block's data read once).

    Physics: at the DRAM roof the duration is the DRAM bytes over the bandwidth; the second pass's bytes are traffic
    the algorithm does not need (the data could stay in registers or shared memory between the passes), so the DRAM
    roof is the wrong one. DRAM must be the busiest unit (within UNIT_TIE_MARGIN) above LATENCY_BOUND_FRACTION: a
    kernel that waits on latency gains little from fewer bytes. The saving is the repeated bytes' share of the DRAM
    traffic, bounded by the single-pass floor (:func:`kprof.facts.kernel.kernel_floor_ns` leaves those bytes out).
    """
    rp, again = repeated_pass_of(f.k), repeated_dram_bytes(f.k)
    moved, read = dram_bytes(f.k), f.v(DRAM_READ_BYTES)
    if rp is None or not again or not moved or not read:
        return None
    dram = f.util.get("dram")
    if dram is None or dram < th.LATENCY_BOUND_FRACTION or dram < f.u_max - th.UNIT_TIE_MARGIN:
        return None
    waste = again / moved
    savings = waste * scale_to_limiter(f, dram)
    once = read - again
    first, second = _lines(rp.first_lines), _lines(rp.again_lines)
    where = f" (the loop at {second} reads again what the loop at {first} read)" if first and second else ""
    ev = [
        Evidence(
            name="DRAM bytes read",
            value=round(read / 1e6, 1),
            unit="MB",
            reference=f"{read / once:.2f}x the {once / 1e6:,.0f} MB a single pass reads: a second loop reads the "
            f"blocks' data again{where}",
            reference_value=round(once / 1e6, 1),
            metric=DRAM_READ_BYTES,
        ),
        Evidence(
            name="bytes the second pass reads again",
            value=round(rp.repeated_bytes / 1e6, 1),
            unit="MB",
            reference=f"the same parameter ({rp.base}), block and thread address at both loops' first iteration "
            "(SASS); DRAM served them again",
            metric="derived:repeated_pass_bytes",
        ),
        unit_used(f, "dram", "at its roof with traffic the algorithm does not need", dram),
    ]
    expect = [
        Expectation(
            metric=DRAM_READ_BYTES,
            direction=Direction.DOWN,
            target=round(once, 0),
            unit="byte",
            value_now=read,
            label="DRAM bytes read (the single-pass floor)",
            basis=f"each block's data read once: the {read / 1e6:,.0f} MB read now less the {again / 1e6:,.0f} MB "
            "the second loop reads again",
        ),
    ]
    return Mechanism(
        bottleneck=B.DRAM_BANDWIDTH_BOUND,
        savings=savings,
        headline=(
            f"DRAM bandwidth at {pc(dram)}% of peak, reached by reading the data twice: "
            f"{again / 1e6:,.0f} MB of the {read / 1e6:,.0f} MB of DRAM reads are a second pass over what each block "
            f"read before ({read / once:.2f}x a single pass)."
        ),
        evidence=ev,
        mechanism=(
            "Each block reads its data in one loop and reads the same addresses again in a later loop"
            + (f" ({second} after {first})" if first and second else "")
            + ". Between the two passes the data leaves the L2 (the blocks in flight stream far more than it "
            "holds), so DRAM serves the second pass too: the kernel is at the DRAM roof, but "
            f"{100 * waste:.0f}% of the bytes it moves are traffic the algorithm does not need."
        ),
        fix=(
            "Read the data once: keep each block's slice on chip between the passes, in registers (each thread holds "
            "its elements, e.g. 32 floats per thread for a 64 KB row at 512 threads) or in shared memory (up to 227 KB "
            "per block on sm_90), and compute both the statistic and the output from that copy; where the slice "
            "does not fit, compute the statistic in the kernel that produces the data."
        ),
        expect=with_duration(f, expect, savings),
        confidence=th.CONFIDENCE_MEASURED_INFERRED,
        would_raise="a before/after pair (kprof compare)",
        inflates=("dram", "l2"),
        waste=waste,
        blocks_healthy=True,
    )
