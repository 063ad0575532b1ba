"""``latency_bound`` of a matrix-multiply k-loop whose operand loads are synchronous (no cp.async, no TMA)."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts
from kprof.facts.sass_traits import SyncMmaLoop, synchronous_mma_loop
from kprof.facts.stalls import LATENCY_STALLS
from kprof.model import Direction, Evidence, Expectation, _fmt
from kprof.rules.kernel.common import B, Mechanism, pc, top_stall_evidence, unit_used, with_duration

_WAIT_STALLS = frozenset(LATENCY_STALLS | {"barrier"})
"""What a warp of an unpipelined k-loop waits on: its loads (long_scoreboard) and the barrier after the shared
stores (barrier)."""


def synchronous_mma_loads(f: KernelFacts) -> Mechanism | None:
    """An MMA k-loop fed by synchronous global loads (:func:`~kprof.facts.sass_traits.synchronous_mma_loop`), with
    the tensor pipe below HEALTHY_FRACTION_OF_PEAK and warps waiting (top stall a latency or barrier stall; without
    stall reasons, issue below ISSUE_EXPOSED_LATENCY).

    Physics: each iteration loads its tiles into registers, stores them to shared memory and waits at a barrier
    before the MMAs, so the global-load latency is exposed once per iteration and nothing is in flight while the
    tensor cores work. A GEMM tile's registers and shared memory cap the resident warps by design, so more warps are
    not the lever: software pipelining is (the next stages' tiles loaded asynchronously, by cp.async or TMA, while
    the current one multiplies). Each tile then crosses L1 once (an async copy writes shared memory directly)
    instead of twice (the load's return, then the shared store): the shared stores' share of those L1 operations is
    waste. The saving brings the tensor pipe to its roof, bounded by the kernel's floor.
    """
    loop = synchronous_mma_loop(f.k.sass)
    if loop is None:
        return None
    tensor = f.util.get("tensor")
    if tensor is None or tensor >= th.HEALTHY_FRACTION_OF_PEAK:
        return None
    top = f.top_stall
    issue = f.util.get("issue")
    waiting = (
        top in _WAIT_STALLS if top is not None else issue is not None and issue < th.ISSUE_EXPOSED_LATENCY
    )
    if not waiting:
        return None
    total = sum(f.stalls.values())
    waits = (
        sum(v for r, v in f.stalls.items() if r in ("long_scoreboard", "barrier")) / total if total else None
    )
    savings = max(0.0, 1.0 - tensor / th.HEALTHY_FRACTION_OF_PEAK)
    staged = (
        loop.shared_stores / (loop.loads + loop.shared_stores) if loop.loads + loop.shared_stores else 0.0
    )
    ev = _evidence(f, loop)
    tensor_up = Expectation(
        metric=ev[0].metric or "derived:tensor_utilization",
        direction=Direction.UP,
        target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
        unit="%",
        value_now=round(100 * tensor, 1),
        label="tensor-core throughput used",
        basis=f"the roof: {_fmt(th.HEALTHY_FRACTION_OF_PEAK, 'fraction')} of peak, the same MMAs with their loads "
        "overlapped",
    )
    return Mechanism(
        bottleneck=B.LATENCY_BOUND,
        savings=savings,
        headline=(
            "Latency bound: the matrix-multiply loop loads its operands synchronously (LDG into registers, "
            "no cp.async or TMA), so every iteration waits for its loads"
            + (
                f" (long_scoreboard and barrier: {pc(waits)}% of the warp stalls)"
                if waits is not None
                else ""
            )
            + f" and the tensor pipe is used {pc(tensor)}% of the time."
        ),
        evidence=ev,
        mechanism=(
            "Each iteration of the k-loop loads its tiles into registers (LDG), stores them to shared memory (STS), "
            "waits at a barrier and only then issues the MMAs: the global-load latency is paid in full every "
            "iteration and no load is in flight while the tensor cores work. The tile's registers and shared memory "
            "cap the resident warps by design, so more warps would not hide it; the overlap has to come from the "
            "loop itself (software pipelining)."
        ),
        fix=(
            "Pipeline the k-loop: load the tiles of the next 2-3 iterations asynchronously into a ring of "
            "shared-memory buffers while the current tile multiplies (cp.async/LDGSTS on sm_80+, TMA on sm_90), "
            "and make each iteration longer (BLOCK_K 64 for 16-bit inputs) so fewer barriers are paid."
        ),
        expect=with_duration(f, [tensor_up], savings, why="the unoverlapped loads cost"),
        confidence=th.CONFIDENCE_CONSISTENT,
        would_raise="",
        inflates=("l1",),
        waste=staged,
    )


def _evidence(f: KernelFacts, loop: SyncMmaLoop) -> list[Evidence]:
    """The tensor pipe's use, the missing async copies, and the top stall."""
    ev = [
        unit_used(
            f,
            "tensor",
            f"below the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof: the MMAs wait for operands",
        ),
        Evidence(
            name="asynchronous copies executed (LDGSTS, UTMALDG)",
            value=0,
            unit="inst",
            reference=f"the k-loop's {int(loop.loads):,} global loads (LDG) go through registers"
            + (f" and {int(loop.shared_stores):,} shared stores (STS)" if loop.shared_stores else "")
            + ": nothing loads while the MMAs run",
            reference_value=None,
            metric="sass:async_copies",
        ),
    ]
    stall = top_stall_evidence(f)
    if stall is not None:
        ev.append(stall)
    return ev
