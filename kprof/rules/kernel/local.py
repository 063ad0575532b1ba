"""``local_memory_spill``: per-thread data in local memory (register spills or run-time indexed arrays)."""

from __future__ import annotations

from kprof.facts.kernel import KernelFacts, metric_value
from kprof.facts.names import LLD_SECTORS, LST_SECTORS
from kprof.facts.stalls import GLOBAL_STALLS
from kprof.facts.units import MEMORY_UNITS
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, scale_to_limiter, time_expectation


def local_memory(f: KernelFacts) -> Mechanism | None:
    k = f.k
    lld, lst = k.value(LLD_SECTORS), k.value(LST_SECTORS)
    local = (lld or 0.0) + (lst or 0.0)
    has_sass_local = f.sass.local_loads + f.sass.local_stores > 0
    if local <= 0 and not has_sass_local:
        return None
    if local <= 0 and (lld is not None or lst is not None):
        return None  # LDL/STL in the listing but never executed (a cold path)
    share = metric_value(k, "derived:local_sector_share")
    share_metric = "derived:local_sector_share"
    if share is None:
        if not f.sass.weighted:
            return None
        share = f.sass.share(f.sass.local_loads + f.sass.local_stores)
        share_metric = "sass:local_instructions"
    _, mem_util = f.mem_max()
    known = any(u in f.util for u in MEMORY_UNITS)
    savings = share * scale_to_limiter(f, mem_util if known else None, GLOBAL_STALLS)
    kind = f.sass.local_kind
    regs = k.registers_per_thread
    if kind == "dynamic_index":
        what = "a per-thread array indexed with run-time values (not a register spill)"
        fix = (
            "Make the indices compile-time constants (fully unroll the loops that index the array), or keep the "
            "table in shared memory laid out as table[j][threadIdx.x] so each access stays conflict-free."
        )
    elif kind == "register_spill":
        what = f"register spills ({regs} registers per thread)" if regs else "register spills"
        fix = (
            "Lower register pressure (fewer live values, smaller per-thread tiles, no big unrolled arrays) or allow "
            "more registers per thread (looser __launch_bounds__ / -maxrregcount); check ptxas -v spill stores."
        )
    else:
        what = "local memory (the SASS is not in the report, so spill vs indexed array is unknown)"
        fix = "Compile with -Xptxas -v: spill stores mean register pressure; a stack frame with no spills means an indexed array."
    lines = ", ".join(f"{fn.rsplit('/', 1)[-1]}:{ln}" for fn, ln in f.sass.local_lines[:3])
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
    if has_sass_local:
        ev.append(
            Evidence(
                name="LDL/STL instructions in the SASS" + (" (executed)" if f.sass.weighted else " (listed)"),
                value=int(f.sass.local_loads + f.sass.local_stores),
                unit="instructions",
                reference=f"kind: {kind}" + (f"; at {lines}" if lines else ""),
                metric="sass:local_instructions",
            )
        )
    exp = [
        Expectation(
            metric="derived:local_memory_sectors",
            direction=Direction.DOWN,
            target=0,
            unit="sectors",
            value_now=int(local) if local else None,
            label="local-memory sectors",
        )
    ]
    t = time_expectation(f, savings)
    if t:
        exp.append(t)
    return Mechanism(
        bottleneck=B.LOCAL_MEMORY_SPILL,
        savings=savings,
        headline=(
            f"Local-memory traffic from {what}: {round(100 * share, 1):g}% of the "
            + ("L1 traffic" if share_metric == "derived:local_sector_share" else "executed instructions")
            + " is LDL/STL"
            + (f" ({lines})" if lines else "")
            + "."
        ),
        evidence=ev,
        mechanism=(
            "Values that cannot live in registers go to the thread's local memory, which is backed by L1, L2 and "
            "DRAM: every access is a memory instruction with memory latency instead of a register read."
        ),
        fix=fix,
        expect=exp,
        confidence=0.85 if has_sass_local and local > 0 else 0.65,
        would_raise="the SASS (SourceCounters) to tell a spill from an indexed array" if kind is None else "",
        inflates=MEMORY_UNITS,
        waste=share,
    )
