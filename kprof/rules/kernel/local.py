"""``local_memory_spill``: per-thread data in local memory (register spills or run-time indexed arrays)."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, metric_value
from kprof.facts.names import LLD_SECTORS, LST_SECTORS
from kprof.facts.stalls import GLOBAL_STALLS
from kprof.facts.units import MEMORY_UNITS
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, scale_to_limiter, with_duration

_MECHANISM = (
    "Values that cannot live in registers go to the thread's local memory, which is backed by L1, L2 and DRAM: "
    "every access is a memory instruction with memory latency instead of a register read."
)


def _kind_words(kind: str | None, regs: int | None) -> tuple[str, str]:
    """(what lives in local memory, the fix) for the kind the SASS shows (:attr:`SassSummary.local_kind`)."""
    if kind == "dynamic_index":
        return "a per-thread array indexed with run-time values (not a register spill)", (
            "Make the indices compile-time constants (fully unroll the loops that index the array), or keep the "
            "table in shared memory laid out as table[j][threadIdx.x] so each access stays conflict-free."
        )
    if kind == "register_spill":
        return f"register spills ({regs} registers per thread)" if regs else "register spills", (
            "Lower register pressure (fewer live values, smaller per-thread tiles, no big unrolled arrays) or allow "
            "more registers per thread (looser __launch_bounds__ / -maxrregcount); check ptxas -v spill stores."
        )
    return "local memory (the SASS is not in the report, so spill vs indexed array is unknown)", (
        "Compile with -Xptxas -v: spill stores mean register pressure; a stack frame with no spills means an "
        "indexed array."
    )


def _local_share(f: KernelFacts) -> tuple[float, str] | None:
    """Local memory's share of the L1 sectors (or, without the memory tables, of the executed instructions) and
    the metric it came from; None when neither is known."""
    share = metric_value(f.k, "derived:local_sector_share")
    if share is not None:
        return share, "derived:local_sector_share"
    if not f.sass.weighted:
        return None
    return f.sass.share(f.sass.local_loads + f.sass.local_stores), "sass:local_instructions"


def local_memory(f: KernelFacts) -> Mechanism | None:
    """LDL/STL traffic: per-thread values that registers cannot hold.

    Physics: local memory is private to a thread but lives in DRAM, cached in L1/L2; each access is a memory
    instruction. Its share of the L1 sectors (the executed instructions without the memory tables) is the waste,
    and it costs time in proportion to how much the busiest memory level limits the kernel (or to the stall
    cycles on global memory below the roof). LDL/STL listed but never executed (a cold path) cost nothing.
    """
    lld, lst = f.v(LLD_SECTORS), f.v(LST_SECTORS)
    local = (lld or 0.0) + (lst or 0.0)
    has_sass_local = f.sass.local_loads + f.sass.local_stores > 0
    if local <= 0 and not has_sass_local:
        return None
    if local <= 0 and (lld is not None or lst is not None):
        return None  # LDL/STL in the listing but never executed (a cold path)
    found = _local_share(f)
    if found is None:
        return None
    share, share_metric = found
    _, mem_util = f.mem_max()
    known = any(u in f.util for u in MEMORY_UNITS)
    savings = share * scale_to_limiter(f, mem_util if known else None, GLOBAL_STALLS)
    kind = f.sass.local_kind
    what, fix = _kind_words(kind, f.k.registers_per_thread)
    lines = ", ".join(f"{fn.rsplit('/', 1)[-1]}:{ln}" for fn, ln in f.sass.local_lines[:3])
    of_sectors = share_metric == "derived:local_sector_share"
    sectors = Expectation(
        metric="derived:local_memory_sectors",
        direction=Direction.DOWN,
        target=0,
        unit="sectors",
        value_now=int(local) if local else None,
        label="local-memory sectors",
    )
    return Mechanism(
        bottleneck=B.LOCAL_MEMORY_SPILL,
        savings=savings,
        headline=(
            f"Local-memory traffic from {what}: {round(100 * share, 1):g}% of the "
            + ("L1 traffic" if of_sectors else "executed instructions")
            + " is LDL/STL"
            + (f" ({lines})" if lines else "")
            + "."
        ),
        evidence=_evidence(f, local, share, share_metric, lines),
        mechanism=_MECHANISM,
        fix=fix,
        expect=with_duration(f, [sectors], savings),
        confidence=th.CONFIDENCE_MEASURED if has_sass_local and local > 0 else th.CONFIDENCE_LISTING,
        would_raise="the SASS (SourceCounters) to tell a spill from an indexed array" if kind is None else "",
        inflates=MEMORY_UNITS,
        waste=share,
    )


def _evidence(f: KernelFacts, local: float, share: float, share_metric: str, lines: str) -> list[Evidence]:
    ev = [
        Evidence(
            name="local-memory sectors (LDL/STL traffic)",
            value=int(local) if local else None,
            unit="sectors",
            reference="0 when every per-thread value lives in registers",
            metric="derived:local_memory_sectors",
        ),
        Evidence(
            name="share of L1 traffic that is local memory"
            if share_metric == "derived:local_sector_share"
            else "share of executed instructions that are LDL/STL",
            value=round(100 * share, 1),
            unit="%",
            reference="0%",
            metric=share_metric,
        ),
    ]
    if f.sass.local_loads + f.sass.local_stores > 0:
        ev.append(
            Evidence(
                name="LDL/STL instructions in the SASS" + (" (executed)" if f.sass.weighted else " (listed)"),
                value=int(f.sass.local_loads + f.sass.local_stores),
                unit="instructions",
                reference=f"kind: {f.sass.local_kind}" + (f"; at {lines}" if lines else ""),
                metric="sass:local_instructions",
            )
        )
    return ev
