"""``atomic_contention``: atomics serialized on a few addresses in one L2 slice."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, sum_present, unit_metric
from kprof.facts.names import (
    ATOMIC_SLICE_AVG,
    ATOMIC_SLICE_MAX,
    GATOM_REQUESTS,
    GLD_REQUESTS,
    GRED_REQUESTS,
    GST_REQUESTS,
    L2_ATOMIC_REQUESTS,
)
from kprof.facts.stalls import ATOMIC_STALLS, stall_reasons
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, stall_evidence, time_expectation


def atomics(f: KernelFacts) -> Mechanism | None:
    k = f.k
    atom = sum_present(k, GATOM_REQUESTS + GRED_REQUESTS)
    gld, gst = k.value(GLD_REQUESTS), k.value(GST_REQUESTS)
    if atom is None:
        if f.sass.global_atomics <= 0 or not f.sass.weighted:
            return None
        share = f.sass.global_atomics / max(
            1.0, f.sass.global_atomics + f.sass.global_loads + f.sass.global_stores
        )
        atom_count = f.sass.global_atomics
    else:
        if atom <= 0:
            return None
        share = atom / max(1.0, atom + (gld or 0.0) + (gst or 0.0))
        atom_count = atom
    if share < th.ATOMIC_MIN_SHARE:
        return None
    gap = 1.0 - f.u_max
    if f.u_max >= th.LATENCY_BOUND_FRACTION:
        return None  # the memory system is busy: atomics are part of the work, not a serialization point
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    slice_max, slice_avg = k.value(ATOMIC_SLICE_MAX), k.value(ATOMIC_SLICE_AVG)
    hot = (
        slice_max is not None
        and slice_avg is not None
        and slice_max >= th.ATOMIC_HOT_SLICE_RATIO * max(slice_avg, 1e-9)
    )
    # Serialized on a few addresses (one hot L2 slice): reducing first removes the wait the atomics cause, i.e.
    # the share of the warps' stall cycles spent on the memory queue (drain, lg_throttle, membar, scoreboard)
    # when the report has the stall breakdown. Without the per-slice numbers, only the atomics' share of the
    # requests is attributed.
    total = sum(stalls.values())
    queue = sum(stalls.get(r, 0.0) for r in ATOMIC_STALLS) / total if total > 0 else 1.0
    savings = gap * queue if hot else gap * share
    ev = [
        Evidence(
            name="global atomic requests",
            value=int(atom_count),
            unit="requests",
            reference=f"{100 * share:.0f}% of global memory requests",
            metric="derived:global_atomic_requests" if atom is not None else "sass:global_atomics",
        ),
        (
            Evidence(
                name="busiest L2 slice's atomic unit",
                value=round(slice_max or 0.0, 2),
                unit="% of peak",
                reference=f"average slice {slice_avg:.2g}%: the atomics pile onto one slice (few addresses)",
                reference_value=round(slice_avg or 0.0, 3),
                metric=f"{ATOMIC_SLICE_MAX}, {ATOMIC_SLICE_AVG}",
            )
            if hot
            else Evidence(
                name="busiest unit",
                value=round(100 * f.u_max, 1),
                unit="% of peak",
                reference=f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}%: the atomics serialize instead of using bandwidth",
                metric=unit_metric(f, f.limiter()[0]),
            )
        ),
    ]
    if top:
        ev.append(
            stall_evidence(k, top, stalls[top], "lg_throttle/drain/membar point at a congested memory queue")
        )
    # The fix reduces before the atomic. A warp-wide RED/ATOM is already one request at L1; what falls is the
    # number of updates the L2 applies: one per lane today, one per warp (lane 0) after a warp reduction, one per
    # block after a block reduction when they are already one per warp.
    exp: list[Expectation] = []
    l2_ops = sum_present(k, L2_ATOMIC_REQUESTS)
    if l2_ops is not None and atom is not None and l2_ops > 0:
        # one update per lane (l2_ops ~ 32 x requests): every lane of a warp updates one address, and a warp
        # reduction leaves one; fewer per request means several addresses per warp (bins), whose count after the
        # reduction the counters do not give: no count is predicted then
        per_warp = l2_ops >= 0.9 * th.WARP_SIZE * atom
        target = atom if per_warp else float(k.blocks or 0) if l2_ops <= atom * 1.1 else 0.0
        if 0 < target < l2_ops:
            exp.append(
                Expectation(
                    metric="derived:l2_atomic_requests",
                    direction=Direction.DOWN,
                    target=round(target, 0),
                    unit="requests",
                    value_now=int(l2_ops),
                    label="atomic updates applied by L2 ("
                    + (
                        "one per warp after a warp reduction"
                        if per_warp
                        else "one per block after a block reduction"
                    )
                    + ")",
                )
            )
    t = time_expectation(f, savings)
    if t:
        exp.append(t)
    return Mechanism(
        bottleneck=B.ATOMIC_CONTENTION,
        savings=savings,
        headline=(
            f"Atomic contention: {100 * share:.0f}% of global memory requests are atomics and "
            + (
                f"they pile onto one L2 slice (its atomic unit at {slice_max:.3g}% of peak, the average slice at "
                f"{slice_avg:.2g}%), so they serialize on a few addresses."
                if hot and slice_max is not None and slice_avg is not None
                else f"no unit is above {pc(f.u_max)}% of its peak, so the atomics serialize on a few addresses."
            )
        ),
        evidence=ev,
        mechanism=(
            "Atomics to the same address are applied one after another by the L2 slice that owns it; when many "
            "threads update few addresses, the whole grid waits on that slice."
        ),
        fix=(
            "Reduce first, then do one atomic per warp or block: warp shuffles (__reduce_add_sync / __shfl_down_sync) "
            "and a shared-memory block reduction, or privatized per-block copies merged at the end."
        ),
        expect=exp,
        confidence=0.8 if hot else 0.6,
        would_raise=""
        if hot
        else "the per-slice L2 atomic activity (lts__d_atomic_input_cycles_active.max, MemoryWorkloadAnalysis)",
        inflates=("l2",),
        waste=0.0,
    )
