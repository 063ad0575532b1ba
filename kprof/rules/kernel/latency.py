"""Why a kernel waits when no unit is saturated, in words: the busiest of every unit the report measures, the top
stall reasons, occupancy, and data-dependent loads. Read by the resource verdict (:mod:`~kprof.rules.kernel.resource`).
"""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.roofline import (
    ALU_PIPE_METRICS,
    COMPUTE_SOL,
    FMA_PIPE_METRICS,
    FMAHEAVY_PIPE_METRICS,
    FP64_PIPE_METRICS,
    TENSOR_PIPE_METRICS,
    XU_PIPE_METRICS,
)
from kprof.facts.kernel import KernelFacts, unit_metric, unit_words
from kprof.facts.names import ACHIEVED_OCC, THEORETICAL_OCC, WAVES
from kprof.facts.stalls import GLOBAL_STALLS, STALL_WORDS
from kprof.facts.units import UNIT_PRIORITY, UNIT_WORDS
from kprof.model import Evidence
from kprof.rules.kernel.common import pc
from kprof.rules.kernel.memory import dependent_excess_share

Busiest = tuple[str, float, str, str]
"""``(unit key, utilisation 0..1, the unit in words, the metric it was read from)``."""


_RAW_PIPES = {
    "tensor_pipe": ("tensor pipe", TENSOR_PIPE_METRICS),
    "fma_pipe": ("FMA pipe", FMA_PIPE_METRICS),
    "fmaheavy_pipe": ("FMA-heavy pipe", FMAHEAVY_PIPE_METRICS),
    "fp64_pipe": ("FP64 pipe", FP64_PIPE_METRICS),
    "xu_pipe": ("special-function (XU) pipe", XU_PIPE_METRICS),
    "alu_pipe": ("integer (ALU) pipe", ALU_PIPE_METRICS),
}


def busiest_any(f: KernelFacts) -> Busiest:
    """The busiest unit over *every* unit the report measures, the pipes included: ``(key, utilisation, words,
    metric)``. :meth:`KernelFacts.limiter` judges the tensor path against the fastest instruction's peak (an HMMA kernel
    sits below the HGMMA roof) and counts pipes only when their work is the program's; a sentence such as "no unit
    is above X%" must still hold for the tensor pipe's busy cycles. Instruction issue is left out (not a unit).
    Pipes enter only with an ``_elapsed`` metric the report holds (the value quoted is that metric's)."""
    useful = [(u, f.util[u]) for u in UNIT_PRIORITY if u in f.util and u != "issue"]
    if useful:
        u, v = max(useful, key=lambda x: x[1])  # first in priority order among equals
        best = (u, v, unit_words(f, u), unit_metric(f, u))
    else:
        best = ("issue", 0.0, UNIT_WORDS["issue"], COMPUTE_SOL)
    for key, (words, names) in _RAW_PIPES.items():
        hit = f.k.first_value(*names)
        if hit is not None and hit[1] / 100.0 > best[1] + 1e-9:
            best = (key, hit[1] / 100.0, words, hit[0])
    return best


def occupancy_words(f: KernelFacts) -> str:
    """Achieved against theoretical occupancy, and the block size when it is one or two warps: the warps resident
    to hide each other's latency."""
    ach, theo = f.v(ACHIEVED_OCC), f.v(THEORETICAL_OCC)
    tpb = f.k.threads_per_block or 0
    waves = f.v(WAVES)
    out = ""
    if ach is not None and theo is not None:
        out = f" Achieved occupancy is {ach:.3g}% against a theoretical {theo:.3g}%"
        if (
            waves is not None
            and 0 < waves < th.OCCUPANCY_MIN_WAVES
            and ach < th.OCCUPANCY_UNEVEN_SHARE * theo
        ):
            blocks = f.k.blocks
            out += (
                f": the grid{f' of {blocks} blocks' if blocks else ''} fills only {waves:.2g} of one wave of the "
                "slots the limits allow, so the rest of the warp slots stay empty."
            )
        elif tpb and tpb <= 2 * th.WARP_SIZE:
            out += (
                f": each block is {max(1, tpb // th.WARP_SIZE)} warp of {tpb} threads and retires after a few "
                "instructions, so the SMs spend their time starting and retiring blocks instead of holding warps "
                "whose loads overlap."
                if tpb <= th.WARP_SIZE
                else f": each block is only {tpb // th.WARP_SIZE} warps, so few warps are resident to overlap "
                "their loads."
            )
        elif ach < th.OCCUPANCY_UNEVEN_SHARE * theo:
            out += ": blocks start and finish unevenly, so fewer warps are resident than the limits allow."
        else:
            out += (
                ", too few warps to hide each other's latency." if theo <= th.OCCUPANCY_FEW_WARPS_PCT else "."
            )
    return out


def latency_words(f: KernelFacts, busiest: Busiest, stalls: dict[str, float]) -> str:
    """Why a kernel with no saturated unit waits, from its top stall reason and its occupancy."""
    top = next(iter(stalls), None)
    total = sum(stalls.values())
    head = (
        f"No unit is saturated over the elapsed time: the busiest, {busiest[2]}, is at {pc(busiest[1])}% of its "
        "peak."
    )
    if top is None:
        return head + " Too little independent work is in flight to keep any unit busy." + occupancy_words(f)
    share = f", {100 * stalls[top] / total:.0f}% of the stall cycles" if total > 0 else ""
    if top in GLOBAL_STALLS:
        return (
            head
            + f" Warps mostly wait on global memory results ({top}{share}): too few loads are in flight per SM to "
            "cover the memory latency (the bandwidth drawn is the bytes in flight over the latency)."
            + occupancy_words(f)
        )
    second = next((r for r in stalls if r != top), None)
    return (
        head
        + f" Warps mostly stall on {STALL_WORDS.get(top, (top, ''))[0]} ({top}{share})"
        + (f", then {STALL_WORDS.get(second, (second, ''))[0]} ({second})" if second else "")
        + ": each warp's next instruction waits on one before it, and the resident warps are too few to fill "
        "those cycles with independent work." + occupancy_words(f)
    )


def dependent_words(f: KernelFacts) -> tuple[Evidence, str, str] | None:
    """Evidence, mechanism and fix when most global loads are data-dependent (pointer chase, gather, probe)."""
    share = dependent_excess_share(f)
    if share is None or share < th.DEPENDENT_LOAD_SHARE or f.flow.dependent_global_loads <= 0:
        return None
    loads = f.flow.dependent_load_share
    ev = Evidence(
        name="global loads whose address comes from loaded data",
        value=round(100 * loads, 1),
        unit="%",
        reference="a pointer chase, a gather through an index array or a hash probe: the data decides the addresses",
        metric="sass:dependent_load_share",
    )
    mechanism = (
        f"{pc(loads)}% of the executed global loads take their address from a value loaded before them, so each "
        "lane touches its own sector by nature and each load waits for the one it depends on: too few loads are "
        "in flight to cover the memory latency. Making consecutive threads read consecutive addresses is not "
        "possible here; the data decides the addresses."
    )
    fix = (
        "Keep more independent loads in flight: more resident warps (occupancy), several independent lookups per "
        "thread interleaved (ILP), prefetch the next index or node before using the current one, or reorder/sort "
        "the data (and the queries) so that neighbouring lanes touch neighbouring addresses."
    )
    return ev, mechanism, fix
