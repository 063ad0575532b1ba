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
    L2_ATOMIC_MISSES,
    L2_ATOMIC_REQUESTS,
    L2_ATOMIC_SECTORS,
)
from kprof.facts.stalls import ATOMIC_STALLS
from kprof.kernel_model import KernelLaunch
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, top_stall_evidence, with_duration


def _atomic_share(f: KernelFacts) -> tuple[float, float, bool] | None:
    """(atomics' share of the global memory requests, atomic requests, counted by the memory tables rather than
    the SASS); None without atomics or a count of them."""
    atom = sum_present(f.k, GATOM_REQUESTS + GRED_REQUESTS)
    if atom is None:
        if f.sass.global_atomics <= 0 or not f.sass.weighted:
            return None
        s = f.sass
        return (
            s.global_atomics / max(1.0, s.global_atomics + s.global_loads + s.global_stores),
            s.global_atomics,
            False,
        )
    if atom <= 0:
        return None
    gld, gst = f.v(GLD_REQUESTS), f.v(GST_REQUESTS)
    return atom / max(1.0, atom + (gld or 0.0) + (gst or 0.0)), atom, True


def atomic_wait_stalls(k: KernelLaunch) -> tuple[str, ...]:
    """The stall reasons of warps waiting on their atomics. ``RED`` (an update that returns nothing) never holds a
    register, so a warp waits on it only when the queue is full (lg_throttle), at a fence (membar) or at exit
    (drain); ``long_scoreboard`` counts only when the kernel also issues ``ATOM``s, whose results the warps wait for
    (a kernel of REDs that stalls on long_scoreboard waits on its loads)."""
    atom = sum_present(k, GATOM_REQUESTS)
    red = sum_present(k, GRED_REQUESTS)
    if red and not atom:
        return tuple(r for r in ATOMIC_STALLS if r != "long_scoreboard")
    return ATOMIC_STALLS


def atomic_lanes(k: KernelLaunch) -> tuple[float, float] | None:
    """(L2 update requests per warp-wide RED/ATOM instruction, sectors per L2 update request); None without the
    counters.

    The L1 sends a warp's updates to the L2 one address at a time within a sector: 32 lanes on one address arrive as
    32 requests of one sector each; lanes on different sectors of a line share a request, which then touches
    several sectors. More than one sector per request (beyond COUNT_MATCH_TOLERANCE) therefore means the lanes of a
    warp update different addresses, and adding their values together (a warp shuffle) would mix them."""
    atom = sum_present(k, GATOM_REQUESTS + GRED_REQUESTS)
    l2_ops = sum_present(k, L2_ATOMIC_REQUESTS)
    l2_sectors = sum_present(k, L2_ATOMIC_SECTORS)
    if not atom or not l2_ops or not l2_sectors or atom <= 0 or l2_ops <= 0:
        return None
    return l2_ops / atom, l2_sectors / l2_ops


def distinct_addresses(k: KernelLaunch) -> bool:
    """True when the counters show the lanes of a warp's atomic updating different sectors (:func:`atomic_lanes`)."""
    lanes = atomic_lanes(k)
    return lanes is not None and lanes[1] > 1.0 + th.COUNT_MATCH_TOLERANCE


def _address_sentence(f: KernelFacts) -> str:
    """What the L2 request counts say about the addresses the lanes of one warp update."""
    lanes = atomic_lanes(f.k)
    if lanes is None:
        return ""
    per_instr, sectors = lanes
    if distinct_addresses(f.k):
        misses = sum_present(f.k, L2_ATOMIC_MISSES)
        few = (
            f" the {int(misses)} sectors ({-(-int(misses) // 4)} lines of 128 B) that all the atomics touch "
            "(their L2 misses)"
            if misses
            else " the same few addresses"
        )
        return (
            f" Here the lanes of a warp update different addresses: each warp-wide atomic reaches the L2 as "
            f"{per_instr:.3g} requests of {sectors:.3g} sectors on average (32 lanes on one address would arrive as "
            f"32 one-sector requests), so the updates collide between warps, every warp of the grid updating{few}."
        )
    if abs(per_instr - th.WARP_SIZE) <= th.COUNT_MATCH_TOLERANCE * th.WARP_SIZE:
        return (
            f" Each warp-wide atomic reaches the L2 as {per_instr:.3g} one-sector requests: the L1 forwards the 32 "
            "lanes' updates one by one, as it does when they all update the same address."
        )
    return ""


def atomics(f: KernelFacts) -> Mechanism | None:
    """Atomics that serialize on a few addresses: at least ATOMIC_MIN_SHARE of the global requests, no unit busy
    (below LATENCY_BOUND_FRACTION: a busy memory system makes the atomics part of the work), ideally one L2 slice's
    atomic unit ATOMIC_HOT_SLICE_RATIO x the average slice.

    Physics: the L2 slice that owns an address applies its atomics one after another. Reducing first removes the
    wait they cause: the share of the warps' stall cycles on the memory queue (drain, lg_throttle, membar,
    scoreboard) when the slices show the hot spot; without the per-slice numbers, only the atomics' share of the
    requests is attributed.
    """
    found = _atomic_share(f)
    if found is None:
        return None
    share, atom_count, counted = found
    if share < th.ATOMIC_MIN_SHARE:
        return None
    gap = 1.0 - f.u_max
    if f.u_max >= th.LATENCY_BOUND_FRACTION:
        return None  # the memory system is busy: atomics are part of the work, not a serialization point
    slice_max, slice_avg = f.v(ATOMIC_SLICE_MAX), f.v(ATOMIC_SLICE_AVG)
    hot = (
        slice_max is not None
        and slice_avg is not None
        and slice_max >= th.ATOMIC_HOT_SLICE_RATIO * max(slice_avg, 1e-9)
    )
    total = sum(f.stalls.values())
    queue = sum(f.stalls.get(r, 0.0) for r in ATOMIC_STALLS) / total if total > 0 else 1.0
    # Without a hot slice, nothing in the L2 shows the serialization: the atomics' share of the requests bounds the
    # saving, and so do the warps' own waits on their atomics (an Amdahl bound): atomics the warps do not wait on
    # (REDs while the warps wait on their loads) cannot be what holds the kernel back.
    waits = sum(f.stalls.get(r, 0.0) for r in atomic_wait_stalls(f.k)) / total if total > 0 else 1.0
    savings = gap * queue if hot else gap * min(share, waits)
    ev = [
        Evidence(
            name="global atomic requests",
            value=int(atom_count),
            unit="requests",
            reference=f"{100 * share:.0f}% of global memory requests",
            metric="derived:global_atomic_requests" if counted else "sass:global_atomics",
        ),
        _slice_evidence(f, slice_max, slice_avg) if hot else _busiest_evidence(f),
    ]
    stall = top_stall_evidence(f, "lg_throttle/drain/membar point at a congested memory queue")
    if stall is not None:
        ev.append(stall)
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
            "Atomics to one address are applied one after another by the L2 slice that owns it."
            + _address_sentence(f)
            if counted and distinct_addresses(f.k)
            else "Atomics to the same address are applied one after another by the L2 slice that owns it; when many "
            "threads update few addresses, the whole grid waits on that slice."
            + (_address_sentence(f) if counted else "")
        ),
        fix=(
            "Reduce first, then do one atomic per warp or block: warp shuffles (__reduce_add_sync / __shfl_down_sync) "
            "and a shared-memory block reduction, or privatized per-block copies merged at the end."
        ),
        expect=_expect(f, atom_count if counted else None, savings, hot),
        confidence=th.CONFIDENCE_MEASURED_INFERRED if hot else th.CONFIDENCE_PARTIAL,
        would_raise=""
        if hot
        else "the per-slice L2 atomic activity (lts__d_atomic_input_cycles_active.max, MemoryWorkloadAnalysis)",
        inflates=("l2",),
        waste=0.0,
    )


def _slice_evidence(f: KernelFacts, slice_max: float | None, slice_avg: float | None) -> Evidence:
    return Evidence(
        name="busiest L2 slice's atomic unit",
        value=round(slice_max or 0.0, 2),
        unit="% of peak",
        reference=f"average slice {slice_avg:.2g}%: the atomics pile onto one slice (few addresses)",
        reference_value=round(slice_avg or 0.0, 3),
        metric=f"{ATOMIC_SLICE_MAX}, {ATOMIC_SLICE_AVG}",
    )


def _busiest_evidence(f: KernelFacts) -> Evidence:
    return Evidence(
        name="busiest unit",
        value=round(100 * f.u_max, 1),
        unit="% of peak",
        reference=f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}%: the atomics serialize instead of using bandwidth",
        metric=unit_metric(f, f.limiter()[0]),
    )


def _expect(f: KernelFacts, atom: float | None, savings: float, hot: bool) -> list[Expectation]:
    """The L2 updates that fall, then the duration.

    When one slice is hot and the fix cuts the same-address updates to one per warp, those updates, applied one
    after another at that slice, set the pace of the whole kernel: the time falls with their number (never below
    the floor of the rest of its traffic, :func:`time_expectation`), not only by the stall share."""
    if distinct_addresses(f.k):
        return with_duration(f, _privatized_updates(f), savings, why="the serialized atomics cost")
    updates = _l2_updates(f, atom)
    if hot and updates and updates[0].value_now and updates[0].target is not None:
        savings = max(savings, 1.0 - float(updates[0].target) / float(updates[0].value_now))
    return with_duration(f, updates, savings, why="the serialized atomics cost")


_SECTORS_PER_LINE = 4
"""32-byte sectors per 128-byte L2 line: one warp's RED over 32 consecutive 4-byte elements is one request."""
_PRIVATE_BYTES = 48 * 1024
"""Static shared memory a block may declare without opting in (the CUDA C++ Programming Guide): a per-block copy
larger than this needs the opt-in or does not fit, and no count is predicted."""


def _privatized_updates(f: KernelFacts) -> list[Expectation]:
    """The L2 atomic requests after per-block privatization, when the lanes update different addresses.

    ncu empties the L2 before each replay pass, so each distinct sector the atomics touch misses once: the L2
    misses of the atomics are the target array's footprint (class_sum_atomic: 40 sectors, its 320 floats). After
    privatization each block adds its copy once, a warp per 32 consecutive elements, one request per 128-byte line:
    blocks x lines. No count without the misses, or when the footprint would not fit in a block's shared memory."""
    l2_ops = sum_present(f.k, L2_ATOMIC_REQUESTS)
    misses = sum_present(f.k, L2_ATOMIC_MISSES)
    blocks = f.k.blocks
    if not l2_ops or not misses or not blocks or misses * 32 > _PRIVATE_BYTES:
        return []
    target = blocks * -(-misses // _SECTORS_PER_LINE)
    if target >= l2_ops:
        return []
    return [
        Expectation(
            metric="derived:l2_atomic_requests",
            direction=Direction.DOWN,
            target=round(target, 0),
            unit="requests",
            value_now=int(l2_ops),
            label=f"atomic update requests at L2 (the {int(misses)} sectors the atomics touch, added once per block "
            "after privatization)",
            basis=f"{blocks:,} blocks x {-(-int(misses) // _SECTORS_PER_LINE)} lines of 128 B: each block adds its "
            "copy once, one request per line",
        )
    ]


def _l2_updates(f: KernelFacts, atom: float | None) -> list[Expectation]:
    """The updates the L2 applies, after the fix reduces before the atomic.

    A warp-wide RED/ATOM is already one request at L1; what falls is the number of updates the L2 applies: one per
    lane today (l2 updates ~ 32 x requests, within COUNT_MATCH_TOLERANCE), one per warp (lane 0) after a warp
    reduction; one per block after a block reduction when they are already one per warp. Fewer per request means
    several addresses per warp (bins), whose count after the reduction the counters do not give: no count is
    predicted then.
    """
    l2_ops = sum_present(f.k, L2_ATOMIC_REQUESTS)
    if l2_ops is None or atom is None or l2_ops <= 0:
        return []
    per_warp = l2_ops >= (1 - th.COUNT_MATCH_TOLERANCE) * th.WARP_SIZE * atom
    one_per_warp = l2_ops <= atom * (1 + th.COUNT_MATCH_TOLERANCE)
    target = atom if per_warp else float(f.k.blocks or 0) if one_per_warp else 0.0
    if not 0 < target < l2_ops:
        return []
    return [
        Expectation(
            metric="derived:l2_atomic_requests",
            direction=Direction.DOWN,
            target=round(target, 0),
            unit="requests",
            value_now=int(l2_ops),
            label="atomic updates applied by L2 ("
            + ("one per warp after a warp reduction" if per_warp else "one per block after a block reduction")
            + ")",
            basis=f"the {int(atom):,} warp-wide atomic requests, one update each"
            if per_warp
            else f"the {int(target):,} blocks, one update each",
        )
    ]
