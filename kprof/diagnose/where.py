"""Where in the code: the source lines (and SASS instructions) responsible for a bottleneck.

Nsight Compute's SourceCounters section (``--set full``) records counters per SASS instruction
(per PC); with line info in the binary (nvcc ``-lineinfo``, Triton's default) each PC maps to a
source file and line, and with ``--import-source yes`` the report also embeds the file's text.
:func:`attribute` sums, per source line, the per-PC counter that measures a bottleneck's waste,
and returns the lines carrying most of it, with their share, text and the instruction at fault.

What each bottleneck counts per instruction (all of them per-PC counters ncu 2023.1+ collects in
SourceCounters; names checked on the H200 reports in ``data/samples/ncu``):

=============================  ===============================================================
uncoalesced_global_access      excess L2 sectors of global loads/stores:
                               ``derived__memory_l2_theoretical_sectors_global_excessive``
                               (or ``memory_l2_theoretical_sectors_global`` minus ``_ideal``)
shared_bank_conflicts          shared-memory wavefronts beyond the ideal:
                               ``derived__memory_l1_wavefronts_shared_excessive``
local_memory_spill             local-memory sectors ``memory_l2_theoretical_sectors_local``
                               of LDL/STL (or their executed count)
atomic_contention              executed global atomics (ATOM/ATOMG/RED/REDG), ``inst_executed``
warp_divergence                idle lane slots: 32 x ``inst_executed`` - ``thread_inst_executed``
no_tensor_cores, compute_bound executed FP32/FP16/FP64 FMA/ADD/MUL (and, for compute, MUFU and the
                               integer instructions computing on loaded data: the SASS data flow)
tensor_core_bound              executed MMA instructions
instruction_bound              executed instructions that neither move data nor do FP math
memory resources               L2 sectors of global + local accesses (L1: plus shared wavefronts)
latency_bound, occupancy_...   warp stall samples (``smsp__pcsamp_warps_issue_stalled_*``);
                               a sample of a warp waiting on a load's result (long/short
                               scoreboard) is charged to the load that produces the register,
                               not to the instruction that first uses it
=============================  ===============================================================

The grid-level bottlenecks (``small_grid``, ``tail_effect``) have no line in the kernel: the
launch configuration is set by the host code, which the report contains only when it embeds the
file that launches the kernel (a Triton program's own .py, or a .cu that launches its kernel):
:func:`launch_site` then names that line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kprof import thresholds as th
from kprof.diagnose.sass import dataflow
from kprof.facts.stalls import NOT_STALLS, PCSAMP_STALL
from kprof.kernel_model import KernelLaunch, SassLine
from kprof.model import Bottleneck, SourceLine

B = Bottleneck
WAVEFRONT_BYTES = th.SHARED_BANKS * th.SHARED_BANK_BYTES
"""Bytes one shared-memory wavefront serves (32 banks x 4 bytes)."""

MAX_LINES = 3
"""At most this many lines are named: a diagnosis names the few lines to change, not a profile."""
MIN_LINE_SHARE = 0.05
"""A line carrying less than 5% of the waste is not named (beyond the first): fixing it cannot pay."""
COVERED_SHARE = 0.9
"""Lines are named until they carry 90% of the waste."""
PRODUCER_WINDOW = 96
"""How many instructions back (in address order) a stalled instruction's operand producer is looked for."""
IN_FLIGHT_TOGETHER = 8
"""Loads issued within this many instructions of the latest one a warp waits on are taken to be in flight with it
(a warp issues at most one instruction per cycle, and a load's latency is hundreds of cycles): the wait is shared
among them. An older producer (the key loaded before a probe loop) has long arrived and is not charged."""

GLOBAL_MEM = frozenset({"LDG", "STG", "LD", "ST", "LDGSTS", "ATOM", "ATOMG", "RED", "REDG"})
GLOBAL_ATOMICS = frozenset({"ATOM", "ATOMG", "RED", "REDG"})
LOCAL_MEM = frozenset({"LDL", "STL"})
SHARED_MEM = frozenset({"LDS", "STS", "LDSM", "STSM", "ATOMS"})
LONG_LATENCY_LOADS = frozenset(
    {"LDG", "LD", "LDL", "ATOM", "ATOMG", "TLD", "TEX", "LDGSTS", "SUATOM", "SULD"}
)
SHORT_LATENCY_PRODUCERS = frozenset({"LDS", "LDSM", "MUFU", "ATOMS", "SHFL", "S2R", "LDC"})
FP_MATH = frozenset(
    {"FFMA", "FADD", "FMUL", "FFMA2", "FADD2", "FMUL2", "HFMA2", "HADD2", "HMUL2", "DFMA", "DADD", "DMUL"}
)
MMA = frozenset({"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "QMMA", "OMMA"})
_UTC_MMA = re.compile(r"^UTC\w*MMA$")
NOT_OVERHEAD = FP_MATH | MMA | GLOBAL_MEM | LOCAL_MEM | SHARED_MEM | {"MUFU"}
INST_EXECUTED = ("inst_executed", "sass__inst_executed", "smsp__sass_inst_executed")
_REG = re.compile(r"\bR(\d+)(?:\.(64|128))?\b")


# ------------------------------------------------------------------------------------ per-PC counters
def _c(s: SassLine, *names: str) -> float | None:
    for n in names:
        v = s.counters.get(n)
        if v is not None:
            return float(v)
    return None


def executed(s: SassLine) -> float:
    """Warp-level executions of the instruction (``inst_executed``), 0 when not collected."""
    return _c(s, *INST_EXECUTED) or 0.0


def _is_mma(mnemonic: str) -> bool:
    return mnemonic in MMA or bool(_UTC_MMA.match(mnemonic))


def _global_excess(s: SassLine) -> float:
    if s.mnemonic not in GLOBAL_MEM:
        return 0.0
    v = _c(s, "derived__memory_l2_theoretical_sectors_global_excessive")
    if v is not None:
        return max(0.0, v)
    actual, ideal = (
        _c(s, "memory_l2_theoretical_sectors_global"),
        _c(s, "memory_l2_theoretical_sectors_global_ideal"),
    )
    return max(0.0, actual - ideal) if actual is not None and ideal is not None else 0.0


def _global_detail(s: SassLine) -> str:
    n = executed(s)
    actual, ideal = (
        _c(s, "memory_l2_theoretical_sectors_global"),
        _c(s, "memory_l2_theoretical_sectors_global_ideal"),
    )
    if not n or actual is None:
        return ""
    out = f"{actual / n:.3g} sectors per request"
    return out + (f", ideal {ideal / n:.3g}" if ideal is not None else "")


def _shared_excess(s: SassLine) -> float:
    if s.mnemonic not in SHARED_MEM:
        return 0.0
    v = _c(s, "derived__memory_l1_wavefronts_shared_excessive")
    if v is not None:
        return max(0.0, v)
    actual, ideal = _c(s, "memory_l1_wavefronts_shared"), _c(s, "memory_l1_wavefronts_shared_ideal")
    return max(0.0, actual - ideal) if actual is not None and ideal is not None else 0.0


def _shared_detail(s: SassLine) -> str:
    n = executed(s)
    actual, ideal = _c(s, "memory_l1_wavefronts_shared"), _c(s, "memory_l1_wavefronts_shared_ideal")
    nway = _c(s, "derived__memory_l1_conflicts_shared_nway")
    parts = []
    if nway and nway > 1:
        parts.append(f"{nway:.3g}-way bank conflicts")
    if n and actual is not None:
        parts.append(
            f"{actual / n:.3g} wavefronts per request"
            + (f", ideal {ideal / n:.3g}" if ideal is not None else "")
        )
    return "; ".join(parts)


def _local(s: SassLine) -> float:
    if s.mnemonic not in LOCAL_MEM:
        return 0.0
    v = _c(s, "memory_l2_theoretical_sectors_local")
    return v if v is not None else executed(s)


def _atomics(s: SassLine) -> float:
    return executed(s) if s.mnemonic in GLOBAL_ATOMICS else 0.0


def _idle_lanes(s: SassLine) -> float:
    n = executed(s)
    threads = _c(s, "thread_inst_executed")
    if not n or threads is None:
        return 0.0
    return max(0.0, th.WARP_SIZE * n - threads)


def _lanes_detail(s: SassLine) -> str:
    n = executed(s)
    threads = _c(s, "thread_inst_executed")
    if not n or threads is None:
        return ""
    return f"{threads / n:.3g} of {th.WARP_SIZE} lanes active"


def _fp_math(s: SassLine) -> float:
    return executed(s) if s.mnemonic in FP_MATH else 0.0


def _compute(s: SassLine) -> float:
    return executed(s) if s.mnemonic in FP_MATH or s.mnemonic == "MUFU" else 0.0


def _mma(s: SassLine) -> float:
    return executed(s) if _is_mma(s.mnemonic) else 0.0


def _overhead(s: SassLine) -> float:
    mn = s.mnemonic
    if not mn or mn in NOT_OVERHEAD or _is_mma(mn):
        return 0.0
    return executed(s)


XU_OPS = frozenset({"I2F", "F2I", "I2FP", "F2IP", "F2F", "FRND", "MUFU", "I2I"})
"""Instructions of the XU pipe (conversions, reciprocal and transcendental approximations: 16 lanes per SM
partition per cycle at most, a quarter of the FMA pipe's rate on sm_80+)."""


def _issue_cost_rank(s: SassLine) -> int:
    """2 for an XU-pipe instruction, 0 for a uniform-datapath one (``U*``: ULDC, UMOV, UIADD3 ...), else 1."""
    mn = s.mnemonic or ""
    if mn in XU_OPS:
        return 2
    return 0 if mn.startswith("U") else 1


def _line_xu(lines: Sequence[SassLine], file: str | None, line: int | None) -> list[SassLine]:
    """The executed XU instructions of one source line (MUFU is not counted as overhead, yet it is part of the
    line's division chain)."""
    if not file or not line:
        return []
    return [
        s for s in lines if s.file == file and s.line == line and s.mnemonic == "MUFU" and executed(s) > 0
    ]


def _xu_chain(group: Sequence[SassLine]) -> str:
    """The distinct XU opcodes of a line in address order (``I2F.U32.RP, MUFU.RCP, F2I.FTZ.U32.TRUNC``)."""
    seen: list[str] = []
    for s in sorted(group, key=lambda x: x.pc):
        if s.mnemonic in XU_OPS and s.opcode not in seen and executed(s) > 0:
            seen.append(s.opcode)
    return ", ".join(seen)


def _l2_sectors(s: SassLine) -> float:
    return (_c(s, "memory_l2_theoretical_sectors_global") or 0.0) + (
        _c(s, "memory_l2_theoretical_sectors_local") or 0.0
    )


def _l1_bytes(s: SassLine) -> float:
    return th.SECTOR_BYTES * _l2_sectors(s) + WAVEFRONT_BYTES * (_c(s, "memory_l1_wavefronts_shared") or 0.0)


def stall_samples(s: SassLine) -> dict[str, float]:
    """Warp stall samples at this PC by reason (``smsp__pcsamp_warps_issue_stalled_<reason>``), selected excluded."""
    out: dict[str, float] = {}
    for name, v in s.counters.items():
        m = PCSAMP_STALL.match(name)
        if m and m.group(1) not in NOT_STALLS and not name.endswith("_not_issued") and v > 0:
            out[m.group(1)] = float(v)
    return out


@dataclass(frozen=True, slots=True)
class Measure:
    """What a bottleneck counts per SASS instruction, and how that instruction's numbers read."""

    quantity: str
    """What the values count, in words: ``"excess L2 sectors"``."""
    per_pc: Callable[[SassLine], float]
    detail: Callable[[SassLine], str] | None = None


MEASURES: dict[Bottleneck, Measure] = {
    B.UNCOALESCED_GLOBAL_ACCESS: Measure("excess L2 sectors", _global_excess, _global_detail),
    B.SHARED_BANK_CONFLICTS: Measure("excess shared-memory wavefronts", _shared_excess, _shared_detail),
    B.LOCAL_MEMORY_SPILL: Measure("local-memory sectors", _local),
    B.ATOMIC_CONTENTION: Measure("executed global atomics", _atomics),
    B.WARP_DIVERGENCE: Measure("idle lane slots", _idle_lanes, _lanes_detail),
    B.NO_TENSOR_CORES: Measure("executed FP arithmetic instructions", _fp_math),
    B.COMPUTE_BOUND: Measure("executed FP arithmetic and MUFU instructions", _compute),
    B.TENSOR_CORE_BOUND: Measure("executed MMA instructions", _mma),
    B.INSTRUCTION_BOUND: Measure("executed overhead instructions", _overhead),
    B.DRAM_BANDWIDTH_BOUND: Measure("L2 sectors requested", _l2_sectors, _global_detail),
    B.L2_BANDWIDTH_BOUND: Measure("L2 sectors requested", _l2_sectors, _global_detail),
    B.L1_SHARED_BANDWIDTH_BOUND: Measure(
        "L1 bytes requested (global sectors + shared wavefronts)", _l1_bytes
    ),
}
STALL_BOTTLENECKS = frozenset({B.LATENCY_BOUND, B.OCCUPANCY_LIMITED})
"""Bottlenecks whose lines are where warps wait: the stall samples, charged to the instruction waited on."""
HOST_BOTTLENECKS = frozenset({B.SMALL_GRID, B.TAIL_EFFECT})
"""Bottlenecks set by the launch configuration in host code: no kernel line is responsible."""


# ------------------------------------------------------------------------------------ stall producers
def _registers(text: str) -> tuple[set[int], set[int]]:
    """(registers written, registers read) of one SASS instruction, from its text.

    The first register operand is the destination for instructions that write one (everything but
    stores, branches and barriers); a ``.64``/``.128`` suffix spans 2/4 registers. RZ is not a register.
    """
    body = text.split(None, 1)
    if body and body[0].startswith("@"):
        body = body[1].split(None, 1) if len(body) > 1 else []
    if len(body) < 2:
        return set(), set()
    opcode, operands = body[0], body[1].rstrip(" ;")
    mn = opcode.split(".", 1)[0]
    ops = [o.strip() for o in operands.split(",")]
    writes: set[int] = set()
    reads: set[int] = set()
    no_dest = mn.startswith("ST") or mn in {
        "RED",
        "REDG",
        "BRA",
        "BAR",
        "EXIT",
        "BSYNC",
        "BSSY",
        "WARPSYNC",
        "RET",
    }
    width = 4 if ".128" in opcode else 2 if ".64" in opcode else 1
    for i, op in enumerate(ops):
        regs = [(int(m.group(1)), m.group(2)) for m in _REG.finditer(op)]
        for r, suffix in regs:
            n = 4 if suffix == "128" else 2 if suffix == "64" else 1
            span = set(range(r, r + n))
            if i == 0 and not no_dest and "[" not in op:
                writes |= set(range(r, r + max(n, width if mn.startswith("LD") else 1)))
            else:
                reads |= span
    return writes, reads


def _producers(lines: Sequence[SassLine], i: int, kinds: frozenset[str]) -> list[int]:
    """Indices of the instructions whose results instruction ``i`` waits on: for each register ``i`` reads,
    the nearest earlier writer (in address order, wrapping around for loop-carried values), kept when it
    is one of ``kinds``. A warp waits until all of them have arrived, so each is charged an equal part."""
    _, reads = _registers(lines[i].text)
    found: list[tuple[int, int]] = []
    n = len(lines)
    for step in range(1, min(PRODUCER_WINDOW, n)):
        if not reads:
            break
        j = (i - step) % n
        writes, _ = _registers(lines[j].text)
        hit = writes & reads
        if not hit:
            continue
        if lines[j].mnemonic in kinds and all(j != f for f, _ in found):
            found.append((j, step))
        reads -= hit  # each register's value comes from its nearest writer
    if not found:
        return []
    nearest = min(step for _, step in found)
    return [j for j, step in found if step <= nearest + IN_FLIGHT_TOGETHER]


def _stall_values(lines: Sequence[SassLine]) -> tuple[list[float], list[str]]:
    """Stall samples per instruction, with samples waiting on a load's (or MUFU's) result moved to it."""
    values = [0.0] * len(lines)
    top_reason = [""] * len(lines)
    by_reason: list[dict[str, float]] = [{} for _ in lines]
    for i, s in enumerate(lines):
        for reason, v in stall_samples(s).items():
            targets = [i]
            if reason == "long_scoreboard":
                targets = _producers(lines, i, LONG_LATENCY_LOADS) or [i]
            elif reason == "short_scoreboard":
                targets = _producers(lines, i, SHORT_LATENCY_PRODUCERS) or [i]
            for t in targets:
                values[t] += v / len(targets)
                by_reason[t][reason] = by_reason[t].get(reason, 0.0) + v / len(targets)
    for i, d in enumerate(by_reason):
        if d:
            top_reason[i] = max(d, key=lambda r: d[r])
    return values, top_reason


def _divergence_values(lines: Sequence[SassLine]) -> tuple[list[float], list[str]]:
    """Idle lane slots per instruction, with those inside a divergent region charged to the divergent branch.

    Since Volta a divergent region is opened by ``BSSY Bx, <reconvergence pc>`` and closed by ``BSYNC Bx`` at
    that pc; a branch inside it whose threads split (``smsp__branch_targets_threads_divergent`` > 0) makes
    every lane slot left idle between it and the reconvergence point its cost.
    """
    values = [_idle_lanes(s) for s in lines]
    notes = [""] * len(lines)
    pcs = [s.pc for s in lines]
    regions: list[tuple[int, int]] = []
    for s in lines:
        if s.mnemonic == "BSSY":
            m = re.search(r"0x([0-9a-fA-F]+)\s*;?\s*$", s.text)
            if m:
                regions.append((s.pc, int(m.group(1), 16)))
    moved = values[:]
    for b, s in enumerate(lines):
        if s.mnemonic != "BRA" or not (_c(s, "smsp__branch_targets_threads_divergent") or 0) > 0:
            continue
        inside = [r for r in regions if r[0] < s.pc < r[1]]
        if not inside:
            continue
        end = min(inside, key=lambda r: r[1] - r[0])[1]
        charged = 0.0
        for j, pc in enumerate(pcs):
            if s.pc < pc < end and moved[j] > 0:
                charged += moved[j]
                moved[j] = 0.0
        moved[b] += charged
        n = executed(s)
        taken = _c(s, "thread_inst_executed_true")
        if n and taken is not None:
            notes[b] = f"divergent branch, {taken / n:.3g} of {th.WARP_SIZE} lanes take it"
    return moved, notes


def address_from_load(lines: Sequence[SassLine], i: int, window: int = 64) -> bool:
    """True when the address of the memory instruction ``i`` is computed from a value loaded from global memory
    (a pointer chase, a hash probe, an index gather): its address registers' backward slice, through the
    arithmetic that builds them (wrapping around for loop-carried values), reaches an LDG/LD. Constant-bank
    loads (LDC) and special registers do not count: they are the same for every lane or thread-derived."""
    text = lines[i].text
    m = re.search(r"\[([^\]]*)\]\s*$", text) or re.search(r"\[([^\]]*)\]", text)
    if not m:
        return False
    todo = {int(r.group(1)) for r in _REG.finditer(m.group(1))}
    n = len(lines)
    for step in range(1, min(window, n)):
        if not todo:
            return False
        j = (i - step) % n
        writes, reads = _registers(lines[j].text)
        hit = writes & todo
        if not hit:
            continue
        if lines[j].mnemonic in ("LDG", "LD", "LDL"):
            return True
        todo = (
            todo - hit
        ) | reads  # the value came from this instruction's operands (the window bounds the walk)
    return False


def launch_site(k: KernelLaunch) -> tuple[str, int, str] | None:
    """``(file, line, text)`` of the launch of ``k`` in a source file the report embeds: ``name<<<...>>>`` (CUDA C++)
    or ``name[grid](...)`` (Triton), the first one found; None when no embedded file launches it (a CUDA kernel is
    usually launched from another file than the one that defines it)."""
    words = (k.name or "").split("(", 1)[0].split("<", 1)[0].split()
    base = words[-1].rsplit("::", 1)[-1] if words else ""
    if not base or not re.fullmatch(r"[A-Za-z_]\w*", base):
        return None
    launch = re.compile(rf"\b{re.escape(base)}\s*(?:<<<|\[[^\]]*\]\s*\()")
    for path, text in sorted(k.source_files.items()):
        for n, line in enumerate(text.splitlines(), 1):
            if launch.search(line) and not line.lstrip().startswith(("//", "#")):
                return path, n, " ".join(line.split())[:120]
    return None


# ------------------------------------------------------------------------------------ attribution
@dataclass(frozen=True, slots=True)
class Attribution:
    """The lines responsible for one bottleneck, most first, and what could not be attributed."""

    lines: tuple[SourceLine, ...] = ()
    quantity: str = ""
    total: float = 0.0
    """The measured quantity over the whole kernel."""
    line_info: bool = False
    """True when the SASS maps to source lines."""
    source_text: bool = False
    """True when the report embeds the text of those lines."""
    note: str = ""
    """Why there are no (or only SASS) lines, and the exact way to get them."""


def _how_to_get_lines(k: KernelLaunch, line_info: bool, language: str | None) -> str:
    if line_info:
        return (
            "The report maps the SASS to source lines but does not embed the files: profile with "
            "`--import-source yes` to see their text."
        )
    if language == "pytorch":
        return (
            "PyTorch's own kernels carry no line info; the line to change is the PyTorch call that launched this "
            "kernel: `--call-stack-type python` on ncu's command line records the Python call stack of each launch."
        )
    if language == "library":
        return (
            "Library kernels ship without line info; the line to change is the call into the library (its shapes, "
            "dtypes, flags): `--call-stack-type python` (or `native`) on ncu's command line records the call stack of "
            "each launch."
        )
    if language == "triton":
        return (
            "Triton keeps line info unless it was switched off (TRITON_DISABLE_LINE_INFO=1): unset it and profile "
            "with `--import-source yes`."
        )
    return (
        "The SASS carries no line info: compile with `-lineinfo` (nvcc, or `-lineinfo` in NVRTC/CuPy options) and "
        "profile with `--import-source yes` to name the source lines."
    )


def attribute(
    k: KernelLaunch,
    bottleneck: Bottleneck | None,
    *,
    language: str | None = None,
    max_lines: int = MAX_LINES,
) -> Attribution:
    """The source lines of ``k`` responsible for ``bottleneck``, most first (see the module docstring).

    Parameters
    ----------
    k
        The launch, with its SASS listing and per-PC counters (``SourceCounters``).
    bottleneck
        The bottleneck whose waste is attributed.
    language
        The kernel's language (:func:`kprof.diagnose.language.kernel_origin`), to word how to get lines.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, SassLine
    >>> k = KernelLaunch(id=0, name="k", sass=(
    ...     SassLine(pc=0, text="LDG.E R2, [R4.64]", file="k.cu", line=7,
    ...              counters={"inst_executed": 10, "derived__memory_l2_theoretical_sectors_global_excessive": 280}),
    ...     SassLine(pc=16, text="STG.E [R6.64], R2", file="k.cu", line=8, counters={"inst_executed": 10}),
    ... ))
    >>> a = attribute(k, Bottleneck.UNCOALESCED_GLOBAL_ACCESS)
    >>> [(w.line, w.share, w.instruction) for w in a.lines]
    [(7, 1.0, 'LDG.E')]
    """
    lines = k.sass
    line_info = any(s.file and s.line for s in lines)
    source_text = any(t for t in k.source_files.values())
    if bottleneck is None or not lines:
        note = (
            ""
            if bottleneck is None
            else "The report holds no SASS: profile with `--set full --import-source yes` (SourceCounters) to name "
            "the source lines."
        )
        return Attribution(line_info=line_info, source_text=source_text, note=note)
    if bottleneck in HOST_BOTTLENECKS:
        site = launch_site(k)
        return Attribution(
            line_info=line_info,
            source_text=source_text,
            note="No kernel line is responsible: the grid size is set where the kernel is launched (host code), "
            + (
                f"which the report embeds: {site[0].replace(chr(92), '/').rsplit('/', 1)[-1]}:{site[1]} "
                f"(`{site[2]}`)."
                if site
                else "which the report does not contain."
            ),
        )
    per_pc = _per_pc(lines, bottleneck)
    if per_pc is None:
        return Attribution(line_info=line_info, source_text=source_text)
    total = sum(per_pc.values)
    if total <= 0:
        counters = any(s.counters for s in lines)
        return Attribution(
            quantity=per_pc.quantity,
            line_info=line_info,
            source_text=source_text,
            note=""
            if counters
            else "The report holds the SASS but no per-instruction counters: profile with `--section SourceCounters` "
            "(part of `--set full`) to name the lines.",
        )
    out = _ranked_lines(k, bottleneck, per_pc, total, max_lines)
    note = "" if line_info and source_text else _how_to_get_lines(k, line_info, language)
    return Attribution(
        lines=tuple(out),
        quantity=per_pc.quantity,
        total=total,
        line_info=line_info,
        source_text=source_text,
        note=note,
    )


@dataclass(frozen=True, slots=True)
class _PerPc:
    """The waste of one bottleneck per SASS instruction, and how to describe it."""

    values: list[float]
    reasons: list[str]
    """The top stall reason per instruction, for the stall bottlenecks; "" otherwise."""
    notes: list[str]
    """A ready detail per instruction (divergence); "" otherwise."""
    quantity: str
    detail: Callable[[SassLine], str] | None


def _per_pc(lines: Sequence[SassLine], bottleneck: Bottleneck) -> _PerPc | None:
    """The waste ``bottleneck`` attributes to each instruction; None when it has no per-instruction measure."""
    blank = [""] * len(lines)
    if bottleneck in STALL_BOTTLENECKS:
        values, reasons = _stall_values(lines)
        return _PerPc(values, reasons, blank, "warp stall samples", None)
    if bottleneck is B.WARP_DIVERGENCE:
        values, notes = _divergence_values(lines)
        return _PerPc(values, blank, notes, MEASURES[bottleneck].quantity, MEASURES[bottleneck].detail)
    if bottleneck is B.COMPUTE_BOUND:
        # the arithmetic the algorithm needs: FP math, special functions, and integer math on loaded data (a hash
        # of a loaded key); index math from the thread index is not the kernel's work
        data_pcs = dataflow(lines).int_data_pcs
        values = [_compute(s) + (executed(s) if s.pc in data_pcs else 0.0) for s in lines]
        return _PerPc(values, blank, blank, "executed arithmetic on the data (FP, MUFU, integer)", None)
    if bottleneck in MEASURES:
        m = MEASURES[bottleneck]
        return _PerPc([m.per_pc(s) for s in lines], blank, blank, m.quantity, m.detail)
    return None


def _ranked_lines(
    k: KernelLaunch, bottleneck: Bottleneck, p: _PerPc, total: float, max_lines: int
) -> list[SourceLine]:
    """The lines (or, without line info, the opcodes) that carry the most of the waste, most first: at most
    ``max_lines``, each at least MIN_LINE_SHARE, until COVERED_SHARE of it is named."""
    lines, values = k.sass, p.values
    entry = min((s.pc for s in lines), default=0)
    # With line info, a line's instructions add up; without it, the instructions of one opcode do (the
    # 40 HGMMA of an unrolled cuBLAS main loop are one thing to name, at the first of their PCs).
    groups: dict[tuple[str | None, int | None, str | None], list[int]] = {}
    for i, s in enumerate(lines):
        if values[i] <= 0:
            continue
        key = (s.file, s.line, None) if s.file and s.line else (None, None, s.opcode)
        groups.setdefault(key, []).append(i)
    ranked = sorted(groups.items(), key=lambda kv: -sum(values[i] for i in kv[1]))
    out: list[SourceLine] = []
    covered = 0.0
    for (file, line, _), idx in ranked:
        value = sum(values[i] for i in idx)
        share = value / total
        if out and (share < MIN_LINE_SHARE or covered >= COVERED_SHARE or len(out) >= max_lines):
            break
        top, d = _line_detail(lines, bottleneck, p, idx, file, line)
        s = lines[top]
        out.append(
            SourceLine(
                file=file,
                line=line,
                text=k.source_line(file, line).strip(),
                share=round(min(1.0, share), 4),
                instruction=s.opcode,
                value=round(value, 1) if value != int(value) else int(value),
                quantity=p.quantity,
                detail=d,
                pc=(s.pc if file else min(lines[i].pc for i in idx)) - entry,
            )
        )
        covered += share
    return out


def _line_detail(
    lines: Sequence[SassLine],
    bottleneck: Bottleneck,
    p: _PerPc,
    idx: list[int],
    file: str | None,
    line: int | None,
) -> tuple[int, str]:
    """(the instruction to name for a line, its detail)."""
    values = p.values
    if bottleneck is B.INSTRUCTION_BOUND:
        # name the costly instruction of the line: the conversions and reciprocals of a run-time division run
        # on the quarter-rate XU pipe; uniform-datapath instructions (ULDC, UMOV, ...) execute once per warp on
        # the uniform datapath and are not the cost, whatever their count
        top = max(idx, key=lambda i: (_issue_cost_rank(lines[i]), values[i]))
    else:
        top = max(idx, key=lambda i: values[i])
    s = lines[top]
    d = p.notes[top] or (p.detail(s) if p.detail else "")
    if bottleneck is B.INSTRUCTION_BOUND:
        group = [lines[i] for i in idx] + _line_xu(lines, file, line)
        rest = [x for x in _xu_chain(group).split(", ") if x and x != s.opcode]
        if s.mnemonic in XU_OPS:
            chain = ("then " + " and ".join(rest) + ", all " if rest else "") + "on the XU pipe"
            d = chain + (f"; {d}" if d else "")
    if p.reasons[top]:
        d = f"mostly {p.reasons[top]}" + (f"; {d}" if d else "")
    if not file and len(idx) > 1:
        pcs = [lines[i].pc - lines[0].pc for i in idx]
        d = f"{len(idx)} instructions, +{min(pcs):#x} to +{max(pcs):#x}" + (f"; {d}" if d else "")
    return top, d


__all__ = [
    "MEASURES",
    "Attribution",
    "Measure",
    "address_from_load",
    "attribute",
    "executed",
    "stall_samples",
]
