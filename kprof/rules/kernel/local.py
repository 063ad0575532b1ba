"""``local_memory_spill``: per-thread data in local memory (register spills or run-time indexed arrays), from the
counters (:func:`local_memory`) or, without them, from a binary's SASS (:func:`static_local_memory`)."""

from __future__ import annotations

from collections.abc import Sequence

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, metric_value
from kprof.facts.names import LLD_SECTORS, LST_SECTORS
from kprof.facts.stalls import GLOBAL_STALLS
from kprof.facts.static import StaticKernel
from kprof.facts.units import MEMORY_UNITS
from kprof.kernel_model import KernelLaunch
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Finding, Verdict
from kprof.rules.kernel.common import B, Mechanism, scale_to_limiter, with_duration

_MECHANISM = (
    "Values that cannot live in registers go to the thread's local memory, which is backed by L1, L2 and DRAM: "
    "every access is a memory instruction with memory latency instead of a register read."
)


def register_cap(k: KernelLaunch, threads: int | None = None) -> int | None:
    """The most registers per thread that ``threads``-thread blocks (default: this launch's) can have while one block
    fits on an SM: the SM's register file over the block's warps, in the 256-register-per-warp allocation unit,
    at most the per-thread maximum (255). None when the report lacks the register file size or the block size.

    Examples: 1024 threads -> 64, 512 -> 128, 256 -> 255 on a 65,536-register SM."""
    attrs = k.device_attributes
    per_sm = attrs.get("max_registers_per_block") or attrs.get("max_registers_per_multiprocessor")
    per_thread = attrs.get("max_registers_per_thread") or 255
    tpb = threads if threads is not None else k.threads_per_block
    if not isinstance(per_sm, int | float) or not tpb or not isinstance(per_thread, int | float):
        return None
    warps = -(-int(tpb) // th.WARP_SIZE)
    per_warp = int(per_sm) // warps // _REG_ALLOC_UNIT * _REG_ALLOC_UNIT
    return int(min(per_thread, per_warp // th.WARP_SIZE))


_REG_ALLOC_UNIT = 256
"""Registers are allocated to a warp in units of 256 (8 per thread): CUDA Occupancy Calculator, "register
allocation unit size" for compute capability 7.0-9.0."""


def capped_by_block_size(k: KernelLaunch) -> int | None:
    """The register cap when this launch's registers per thread sit at the cap its block size sets (below the
    per-thread maximum): a ``__launch_bounds__`` for this block size (or -maxrregcount) held the compiler there."""
    regs, cap = k.registers_per_thread, register_cap(k)
    if not regs or cap is None or cap >= 255:
        return None
    return cap if regs >= cap else None


SPILLING_REQUESTS_PCT = "derived__local_spilling_requests_pct"


def local_kind(f: KernelFacts) -> str | None:
    """``register_spill`` or ``dynamic_index``: from the SASS (:attr:`SassSummary.local_kind`), else from ncu's share
    of local requests that are spills (LOCAL_SPILL_REQUEST_SHARE); None when neither says."""
    if f.sass.local_kind is not None:
        return f.sass.local_kind
    pct = f.v(SPILLING_REQUESTS_PCT)
    if pct is None:
        return None
    return "register_spill" if pct / 100.0 >= th.LOCAL_SPILL_REQUEST_SHARE else "dynamic_index"


def build_cap(k: KernelLaunch) -> tuple[int, int] | None:
    """(registers per thread, resident blocks per SM that would force them) when the registers sit below what the
    block size allows (:func:`register_cap`) and below the per-thread maximum: ptxas spills only when a limit
    binds, so a spilling kernel there was held by the build (-maxrregcount) or by a minimum-blocks
    ``__launch_bounds__``; None otherwise."""
    regs, cap, tpb = k.registers_per_thread, register_cap(k), k.threads_per_block
    per_sm = k.device_attributes.get("max_registers_per_multiprocessor")
    if not regs or cap is None or not tpb or regs >= cap or not isinstance(per_sm, int | float):
        return None
    return int(regs), max(1, int(per_sm) // (int(tpb) * int(regs)))


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


def _cap_sentence(k: KernelLaunch, kind: str | None) -> str:
    """Spills under the register cap that the block size sets."""
    cap = capped_by_block_size(k) if kind == "register_spill" else None
    if cap is None:
        return ""
    regs = k.device_attributes.get("max_registers_per_block")
    return (
        f" This launch runs at {k.registers_per_thread} registers per thread, the most a "
        f"{k.threads_per_block}-thread block can have ({regs:,} registers / {k.threads_per_block} threads): the "
        "compiler was held to the cap the declared block size sets, and the values beyond it are spilled."
        if isinstance(regs, int)
        else ""
    )


def _build_cap_sentence(f: KernelFacts, kind: str | None) -> str:
    """Spills below the register count the block size allows, in a report without SASS (the SASS path names the
    bound from the source): the build's cap, with ncu's spill share as the evidence."""
    held = build_cap(f.k) if kind == "register_spill" and f.sass.empty else None
    if held is None:
        return ""
    regs, blocks = held
    pct = f.v(SPILLING_REQUESTS_PCT)
    return (
        (f" ncu counts {pct:.0f}% of the local requests as register spills." if pct is not None else "")
        + f" They happen at {regs} registers per thread, while {f.k.threads_per_block}-thread blocks could have "
        f"{register_cap(f.k)}: ptxas spills only when a limit binds, so the build caps the registers "
        f"(`-maxrregcount={regs}`, or `__launch_bounds__({f.k.threads_per_block}, {blocks})` asking for {blocks} "
        "resident blocks per SM)."
    )


def _cap_fix(k: KernelLaunch, kind: str | None, no_sass: bool = False) -> str | None:
    """Smaller declared blocks, when the block size caps the registers; the build's cap removed, when the registers
    sit below what the block size allows in a report without SASS."""
    held = build_cap(k) if kind == "register_spill" and no_sass else None
    if held is not None:
        regs, blocks = held
        return (
            f"Remove the register cap: build without `-maxrregcount={regs}` (or drop the minimum-blocks argument of "
            f"`__launch_bounds__({k.threads_per_block}, {blocks})`), so ptxas keeps the spilled values in registers "
            f"(up to {register_cap(k)} per thread at {k.threads_per_block} threads per block); check with -Xptxas -v "
            "that the spill stores fall to 0 bytes. If the cap is there for occupancy, a smaller per-thread tile "
            "keeps it without spilling."
        )
    cap = capped_by_block_size(k) if kind == "register_spill" else None
    if cap is None:
        return None
    return (
        f"Let the compiler use more than {cap} registers per thread: declare and launch smaller blocks "
        f"(`__launch_bounds__(256)` with 256-thread blocks allows up to {register_cap(k, 256)}) instead of "
        f"{k.threads_per_block}-thread blocks (or raise -maxrregcount); check with -Xptxas -v that the spill stores "
        "fall to 0 bytes."
    )


def _local_share(f: KernelFacts) -> tuple[float, str] | None:
    """Local memory's share of the L1 sectors (or, without the memory tables, of the executed instructions) and
    the metric it came from; None when neither is known."""
    share = metric_value(f.k, "derived:local_sector_share")
    if share is not None:
        return share, "derived:local_sector_share"
    if not f.sass.weighted:
        return None
    return f.sass.share(f.sass.local_loads + f.sass.local_stores), "sass:local_instruction_share"


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
    kind = local_kind(f)
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
        basis="none: every per-thread value in registers",
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
        mechanism=_MECHANISM + _cap_sentence(f.k, kind) + _build_cap_sentence(f, kind),
        fix=_cap_fix(f.k, kind, no_sass=f.sass.empty) or fix,
        expect=with_duration(f, [sectors], savings, why="the local-memory traffic costs"),
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
                unit="inst",
                reference=f"kind: {local_kind(f)}" + (f"; at {lines}" if lines else ""),
                metric="sass:local_instructions",
            )
        )
    return ev


# ------------------------------------------------------------------------------------ static SASS (no counters)
def static_local_memory(sk: StaticKernel, findings: Sequence[Finding] = ()) -> Diagnosis | None:
    """LDL/STL in a binary's SASS (``kprof profile sass``): a suspect, never a verdict.

    Without counters, how often the LDL/STL run (a loop or a cold path) is unknown: the diagnosis is inconclusive at
    STATIC_LOCAL_MEMORY_CONFIDENCE and names the ncu capture that settles it. An address computed from a register
    other than the stack pointer R1 is a run-time indexed array; constant offsets from R1 are register spills.
    """
    s = sk.sass
    local = s.local_loads + s.local_stores
    if not local:
        return None
    kind = s.local_kind or "register_spill"
    if kind == "dynamic_index":
        mechanism = (
            "A local-memory address is computed at run time (an LDL/STL whose address uses a register "
            "other than the stack pointer R1): a per-thread array indexed by a variable cannot live in "
            "registers, so it lives in local memory, which is off-chip DRAM cached in L1/L2."
        )
        fix = (
            "Make the indices compile-time constants (fully unroll the loops over the array), or keep "
            "the table in shared memory (one copy per block) or in registers through a switch."
        )
    else:
        mechanism = (
            f"The kernel needs more live values than the registers ptxas allowed (REG {sk.registers}); "
            "the excess is spilled to local memory at constant offsets from the stack pointer "
            "(STL to save, LDL to reload), off-chip DRAM cached in L1/L2."
        )
        fix = (
            "Lower register pressure: smaller unroll factors or tiles, fewer values kept live across "
            "loops; check __launch_bounds__/maxrregcount are not capping registers too hard."
        )
    stack = f", stack frame {sk.stack_bytes} B" if sk.stack_bytes else ""
    return Diagnosis(
        subject=sk.subject,
        bottleneck=B.LOCAL_MEMORY_SPILL,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The SASS{sk.in_binary} holds {int(local)} local-memory instructions (LDL {int(s.local_loads)}, "
        f"STL {int(s.local_stores)}{stack}): "
        f"{'a dynamically indexed array' if kind == 'dynamic_index' else 'register spills'}, "
        "a suspect until counters show the traffic.",
        evidence=(
            Evidence(
                name="LDL instructions (static)",
                value=int(s.local_loads),
                reference="0 when nothing lives in local memory",
            ),
            Evidence(
                name="STL instructions (static)",
                value=int(s.local_stores),
                reference="0 when nothing lives in local memory",
            ),
            Evidence(name="stack frame", value=sk.stack_bytes, unit="B", reference="cuobjdump STACK"),
            sk.evidence()[1],
        ),
        mechanism=mechanism,
        fix=fix,
        expect=(
            Expectation(
                metric="smsp__sass_inst_executed_op_local_ld.sum",
                direction=Direction.DOWN,
                target=0,
                unit="inst",
                label="executed local loads",
                basis="none: every per-thread value in registers",
            ),
        ),
        confidence=Confidence(
            value=th.STATIC_LOCAL_MEMORY_CONFIDENCE,
            would_raise="static SASS cannot say how often the LDL/STL run: an ncu capture "
            "(local-memory traffic, L1 hit rate, stall reasons) would",
        ),
        next_step=sk.next_step,
        findings=tuple(findings),
    )
