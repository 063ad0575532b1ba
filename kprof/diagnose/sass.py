"""What the SASS of a kernel says: which instructions were issued, not which were intended.

:func:`analyze_sass` reduces a launch's SASS listing to a :class:`SassSummary`:
whether matrix instructions (HMMA/HGMMA/IMMA/...) are present, the FP32 FMA share,
local-memory instructions (LDL/STL) and whether they look like register spills or a
dynamically indexed array, async copies (LDGSTS, UTMALDG), global/shared access
widths, atomics and special-function instructions.

Counts are weighted by the per-PC ``inst_executed`` counter when the report holds
source counters (``--section SourceCounters``, part of ``--set full``); otherwise
they are static counts of the listing (``weighted`` is then False).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kprof.kernel_model import SassLine

# Matrix (tensor-core) instructions, by generation: Volta-Ampere mma.sync (HMMA, IMMA, DMMA, BMMA),
# Hopper warpgroup MMA (HGMMA, IGMMA, QGMMA for FP8, BGMMA), Blackwell tcgen05 (UTC*MMA).
MMA_MNEMONICS = frozenset(
    {"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "OMMA", "QMMA"}
)
_UTC_MMA = re.compile(r"^UTC\w*MMA$")
FP32_ARITH = frozenset({"FFMA", "FADD", "FMUL", "FFMA2", "FADD2", "FMUL2"})
FP16_ARITH = frozenset({"HFMA2", "HADD2", "HMUL2", "HFMA", "HADD", "HMUL"})
FP64_ARITH = frozenset({"DFMA", "DADD", "DMUL"})
SPECIAL_FUNCTION = frozenset({"MUFU"})
LOCAL_LOAD, LOCAL_STORE = "LDL", "STL"
GLOBAL_LOADS = frozenset({"LDG", "LD"})
"""Global loads; generic ``LD`` (a pointer the compiler could not prove global) reads global memory in
every kernel we have seen, so its width counts with LDG's."""
GLOBAL_STORES = frozenset({"STG", "ST"})
SHARED_LOADS = frozenset({"LDS", "LDSM"})
SHARED_STORES = frozenset({"STS"})
GLOBAL_ATOMICS = frozenset({"ATOM", "ATOMG", "RED", "REDG"})
SHARED_ATOMICS = frozenset({"ATOMS"})
ASYNC_COPY = frozenset({"LDGSTS", "UTMALDG", "UTMASTG", "UBLKCP", "UTMAPF", "UBLKPF"})
INT_ARITH = frozenset(
    {
        "IMAD",
        "IMUL",
        "IADD",
        "IADD3",
        "IADD32I",
        "VIADD",
        "ISCADD",
        "LEA",
        "SHF",
        "SHL",
        "SHR",
        "LOP",
        "LOP3",
        "LOP32I",
        "IABS",
        "IMNMX",
        "VIMNMX",
        "POPC",
        "FLO",
        "BREV",
        "BMSK",
        "PRMT",
        "SGXT",
        "IDP",
        "IDP4A",
        "XMAD",
        "BFE",
        "BFI",
        "ISETP",
    }
)
"""Integer arithmetic, logic, shifts and compares (ALU and FMA-heavy pipes). Whether they are the algorithm's work
(hashing, bit manipulation, integer math on the data) or overhead (index and address math, loop control) is told by
where their operands come from (:attr:`Dataflow.int_data_ops`), not by the opcode."""
# Names of the per-PC "instructions executed" counter in ncu's SourceCounters, newest first.
INST_EXECUTED_COUNTERS = ("inst_executed", "sass__inst_executed", "smsp__sass_inst_executed")

_ADDRESS = re.compile(r"\[([^\]]*)\]")
_STACK_POINTER = "R1"  # ABI: R1 holds the local-memory stack pointer on every SASS generation since Fermi


@dataclass(frozen=True, slots=True, kw_only=True)
class SassSummary:
    """What a SASS listing issued. Counts are executed counts when ``weighted`` is True, else static.

    Examples
    --------
    >>> from kprof.kernel_model import SassLine
    >>> s = analyze_sass([SassLine(pc=0, text="FFMA R1, R2, R3, R4"), SassLine(pc=16, text="LDL R5, [R1+0x8]")])
    >>> s.has_mma, s.local_loads, s.local_kind
    (False, 1.0, 'register_spill')
    """

    instructions: float = 0.0
    by_mnemonic: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    weighted: bool = False
    mma: float = 0.0
    fp32: float = 0.0
    ffma: float = 0.0
    fp16: float = 0.0
    fp64: float = 0.0
    special_function: float = 0.0
    local_loads: float = 0.0
    local_stores: float = 0.0
    local_kind: str | None = None
    """``"register_spill"`` (LDL/STL only at constant offsets from the stack pointer R1),
    ``"dynamic_index"`` (an address computed at run time: an array indexed by a variable), or None."""
    local_lines: tuple[tuple[str, int], ...] = ()
    """Source (file, line) of the LDL/STL instructions, when the SASS carries line info."""
    global_loads: float = 0.0
    global_stores: float = 0.0
    global_load_bytes_per_thread: float | None = None
    """Executed-weighted mean access width of global loads (4 for LDG.E, 16 for LDG.E.128)."""
    global_load_max_bytes: float | None = None
    """The widest global load that executed (any listed one when the listing has no executed counts)."""
    global_store_bytes_per_thread: float | None = None
    shared_loads: float = 0.0
    shared_stores: float = 0.0
    shared_load_bytes_per_thread: float | None = None
    shared_store_bytes_per_thread: float | None = None
    global_atomics: float = 0.0
    shared_atomics: float = 0.0
    async_copies: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_mnemonic", MappingProxyType(dict(self.by_mnemonic)))

    @property
    def has_mma(self) -> bool:
        """True when any matrix (tensor-core) instruction is in the listing."""
        return self.mma > 0

    @property
    def empty(self) -> bool:
        return self.instructions == 0

    def share(self, count: float) -> float:
        """``count`` as a fraction of all instructions."""
        return count / self.instructions if self.instructions else 0.0

    @property
    def ffma_share_of_fp32(self) -> float:
        """FFMA among FP32 arithmetic instructions (0..1)."""
        return self.ffma / self.fp32 if self.fp32 else 0.0


def access_bytes(opcode: str) -> int:
    """Bytes per thread of a load/store opcode: ``LDG.E.128`` -> 16, ``LDS.64`` -> 8, ``LDG.E.U8`` -> 1, else 4.

    ``LDSM.16.M88.4`` (ldmatrix .x4) hands each thread four 32-bit registers: 16 bytes.

    Examples
    --------
    >>> access_bytes("LDG.E.128.CONSTANT"), access_bytes("STS.64"), access_bytes("LDG.E")
    (16, 8, 4)
    >>> access_bytes("LDSM.16.MT88.4"), access_bytes("LDG.E.ENL2.256")
    (16, 32)
    """
    parts = opcode.split(".")
    mods = set(parts[1:])
    if parts[0] == "LDSM":
        count = next((int(m) for m in reversed(parts[1:]) if m in ("1", "2", "4")), 1)
        return 4 * count
    if "256" in mods:
        return 32
    if "128" in mods:
        return 16
    if "64" in mods:
        return 8
    if mods & {"U8", "S8"}:
        return 1
    if mods & {"U16", "S16"}:
        return 2
    return 4


# ----------------------------------------------------------------------------- data flow
# Loads whose destination registers carry data from memory (LDC/ULDC read constants: kernel parameters
# and pointers, not data; S2R reads special registers).
_DATA_LOADS = GLOBAL_LOADS | SHARED_LOADS | frozenset({"LDL", "ATOM", "ATOMG", "ATOMS", "LDGSTS"})
_REGISTER = re.compile(r"^[-|!~]*R(\d+)")
_ADDRESS_REGS = re.compile(r"\bR(\d+)(\.64)?\b")
_FIRST_IS_PREDICATE_DEST = frozenset({"SHFL", "VOTE"})
_LANE_SPECIAL = ("SR_TID", "SR_LANEID", "SR_LTMASK", "SR_LEMASK", "SR_GTMASK", "SR_GEMASK", "SR_EQMASK")
"""Special registers that differ between the lanes of a warp."""
_NO_REGISTER_DEST = frozenset(
    {
        "BRA",
        "BRX",
        "JMP",
        "JMX",
        "CALL",
        "RET",
        "EXIT",
        "BAR",
        "BSSY",
        "BSYNC",
        "WARPSYNC",
        "NOP",
        "MEMBAR",
        "DEPBAR",
        "ERRBAR",
        "FENCE",
        "CCTL",
        "YIELD",
        "RED",
        "REDG",
    }
)
PER_PC_SECTORS = "memory_l2_theoretical_sectors_global"
PER_PC_SECTORS_IDEAL = "memory_l2_theoretical_sectors_global_ideal"
"""ncu's per-instruction L2 sectors (SourceCounters) and the sectors the same instruction would need with
perfectly coalesced addresses, for its real width and active lanes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataflow:
    """Where values come from, from a linear walk over the listing (counts weighted like :class:`SassSummary`).

    The walk follows the listing in address order twice; the register state at each backward branch of the
    first pass is merged into the branch's target in the second, so a loop's back edge (a pointer loaded at the
    bottom of a loop body and used at its top) is seen. Only the second pass counts.
    """

    fma: float = 0.0
    """FP32/FP64 fused multiply-adds (FFMA, DFMA) and FP32 multiplies (FMUL)."""
    fma_from_loads: float = 0.0
    """...of which both multiplicands are registers filled by a memory load (LDS/LDSM/LDG/LD), directly or
    through MOVs: the inner product of a k-loop, ``acc += A[i][k] * B[k][j]``. A Horner step or an FMA chain
    multiplies computed values or constants; ``a * x[i] + y`` has one loaded multiplicand."""
    loaded_values_used: float = 0.0
    """Loaded 32-bit values that feed at least one such multiplicand."""
    loaded_operand_uses: float = 0.0
    """Multiplicand uses of loaded values; ``uses / values`` is how often each loaded value is reused in
    registers (1 for a dot-product loop, 8 for an 8x8 register tile)."""
    load_bytes: float = 0.0
    """Bytes per thread loaded by LDS/LDSM/LDG/LD (each instruction's width x its executed count)."""
    shared_load_bytes: float = 0.0
    global_load_bytes: float = 0.0
    global_loads: float = 0.0
    dependent_global_loads: float = 0.0
    """Global loads whose address is computed from loaded data (a pointer chase, a gather through an index
    array, a hash probe): their addresses are decided by the data, not by the thread index."""
    int_ops: float = 0.0
    """Executed integer instructions (:data:`INT_ARITH`, ``IMAD.MOV`` excluded: a register move)."""
    int_data_ops: float = 0.0
    """...of which at least one source register holds a value computed from data loaded from memory (LDG/LD/LDS
    and the like; not the kernel parameters that LDC reads, not the thread index): integer work on the data itself
    (a hash of a loaded key, bit manipulation of loaded words). Index math derived from the thread and block index
    and loop counters are not; the address computed from a loaded index in a gather is (one per load)."""
    int_data_pcs: frozenset[int] = frozenset()
    """PCs of the integer instructions counted in :attr:`int_data_ops`."""
    dependent_pcs: frozenset[int] = frozenset()
    """PCs of the global loads whose address is data-dependent (see :class:`_Walk`)."""
    sectors: dict[str, float] = field(default_factory=dict)
    """ncu's per-PC sectors, summed: ``load``, ``load_ideal``, ``store``, ``store_ideal``, ``dependent``,
    ``dependent_ideal`` (keys present only when the report holds the per-PC counters)."""

    @property
    def operand_reuse(self) -> float | None:
        """Mean multiplicand uses per loaded value (None without loaded multiplicands)."""
        return self.loaded_operand_uses / self.loaded_values_used if self.loaded_values_used else None

    @property
    def fma_from_loads_share(self) -> float:
        return self.fma_from_loads / self.fma if self.fma else 0.0

    @property
    def dependent_load_share(self) -> float:
        return self.dependent_global_loads / self.global_loads if self.global_loads else 0.0

    def int_data_share(self, instructions: float) -> float | None:
        """Integer work on loaded data as a share of ``instructions`` executed (None when either is unknown)."""
        return min(1.0, self.int_data_ops / instructions) if instructions else None

    def per_fma(self, nbytes: float) -> float | None:
        """Bytes per thread per FMA (None without FMAs)."""
        return nbytes / self.fma if self.fma else None


def _split_operands(text: str) -> tuple[str, list[str]]:
    parts = text.split(None, 1)
    if parts and parts[0].startswith("@"):
        parts = parts[1].split(None, 1) if len(parts) > 1 else []
    if not parts:
        return "", []
    opcode = parts[0].rstrip(";")
    rest = parts[1].strip().rstrip(";") if len(parts) > 1 else ""
    return opcode, [o.strip() for o in rest.split(",")] if rest else []


def _reg(operand: str) -> int | None:
    m = _REGISTER.match(operand)
    return int(m.group(1)) if m else None


def _regs_in(operands: list[str]) -> list[int]:
    out: list[int] = []
    for o in operands:
        if o.startswith(("c[", "UR", "SR_", "P", "!P", "desc[")) and "[R" not in o:
            continue
        for m in _ADDRESS_REGS.finditer(o):
            r = int(m.group(1))
            out.append(r)
            if m.group(2):
                out.append(r + 1)
    return out


def _dest_count(opcode: str, mnemonic: str) -> int:
    mods = opcode.split(".")[1:]
    if mnemonic in _DATA_LOADS and mnemonic not in ("ATOM", "ATOMG", "ATOMS"):
        return max(1, access_bytes(opcode) // 4)
    if mnemonic.startswith("D") and mnemonic[1:] in ("ADD", "MUL", "FMA", "SETP", "MNMX"):
        return 2
    if "WIDE" in mods or "64" in mods:
        return 2
    return 1


_Snapshot = tuple[
    dict[int, "tuple[int, int] | None"], dict[int, bool], dict[int, frozenset[int]], dict[int, bool]
]


@dataclass(frozen=True, slots=True)
class _FlowStep:
    """What :func:`dataflow`'s counting pass finds at one instruction, before any weight: a function of the
    listing's text alone, so it is traced once per function (:func:`_flow_plan`) and weighed per launch."""

    index: int
    """The instruction's position in the listing."""
    int_op: bool = False
    int_data: bool = False
    fma: bool = False
    loaded: tuple[tuple[int, int], ...] | None = None
    """The loaded values both multiplicands hold (an FMA's), None unless both are loaded."""
    load_bytes: int = 0
    """Access width of a global or shared load, 0 for anything else."""
    shared_load: bool = False
    global_load: bool = False
    dependent: bool = False
    store: bool = False
    """A global store or atomic (its per-PC sectors count as stores)."""


_NONE: frozenset[int] = frozenset()

_COMPARES = frozenset({"ISETP", "FSETP", "DSETP", "HSETP2", "ICMP", "FCMP", "FMNMX", "IMNMX", "VIMNMX"})
"""Instructions that compare values (a search loop's test of what it loaded)."""


class _Walk:
    """The register state of one :func:`_flow_plan` walk.

    producer[r]: (pc, index) of the loaded value r holds, or None when r holds a computed value;
    varying[r]: r differs between the lanes of a warp (derived from the thread index);
    tainted[r]: the PCs of the loads whose data r is derived from, among loads that a lane made from its own
    address (a load whose address varies across lanes). A base pointer loaded once per block (a batched GEMM's
    pointer array) is the same for every lane and does not make the addresses data-dependent.
    loops: ``(top, bottom)`` PCs of each backward branch's loop. A load in a loop is data-dependent when its
    address comes from a load *in that loop* (a chase, a gather through an index read at each step), or from
    any load when the loop is a *search* (a compare in it reads data loaded in it: a hash probe, a list walk, a
    binary search, whose next step waits on what the last one found). In any other loop, an address that the
    loop steps from a value loaded before it (a CSR row walk from ``rowptr[r]``, a segment from its offset)
    waits on that load once, at the loop's entry, not at each step.
    compares: ``(pc, taint of its operands)`` of each compare (first pass).
    datum[r]: r holds a value computed from data loaded from memory (whatever the lanes' addresses).
    """

    def __init__(self) -> None:
        self.producer: dict[int, tuple[int, int] | None] = {}
        self.varying: dict[int, bool] = {}
        self.tainted: dict[int, frozenset[int]] = {}
        self.loops: list[tuple[int, int]] = []
        self.compares: list[tuple[int, frozenset[int]]] = []
        self._search: dict[tuple[int, int], bool] = {}
        self.datum: dict[int, bool] = {}
        # Register state at each backward branch of the first pass, merged into its target (the loop's top) in
        # the second: what the bottom of a loop body leaves in a register reaches the top of the next iteration.
        self.back_edges: dict[int, _Snapshot] = {}

    def merge_back_edge(self, pc: int) -> None:
        """Merge the state a backward branch to ``pc`` carried in the first pass (second pass only)."""
        if pc not in self.back_edges:
            return
        b_prod, b_vary, b_taint, b_datum = self.back_edges[pc]
        for r, v in b_prod.items():
            if v is not None and self.producer.get(r) is None:
                self.producer[r] = v
        for r in b_vary:
            self.varying[r] = self.varying.get(r, False) or b_vary[r]
        for r in b_taint:
            self.tainted[r] = self.tainted.get(r, _NONE) | b_taint[r]
        for r in b_datum:
            self.datum[r] = self.datum.get(r, False) or b_datum[r]

    def record_back_edge(self, pc: int, ops: list[str]) -> None:
        """Remember the state at a branch (first pass) when it jumps backwards."""
        target = next((int(o, 16) for o in ops if o.startswith("0x")), None)
        if target is None or target > pc:
            return
        self.loops.append((target, pc))
        prev = self.back_edges.get(target)
        snap: _Snapshot = (dict(self.producer), dict(self.varying), dict(self.tainted), dict(self.datum))
        if prev is not None:
            for merged, earlier in ((snap[1], prev[1]), (snap[3], prev[3])):
                for r, v in earlier.items():
                    merged[r] = merged.get(r, False) or v
            for r, t in prev[2].items():
                snap[2][r] = snap[2].get(r, _NONE) | t
        self.back_edges[target] = snap

    def dependent_address(self, pc: int, addr: list[int]) -> bool:
        """Whether a global load at ``pc`` with address registers ``addr`` is data-dependent (see the class)."""
        sources = _NONE.union(*(self.tainted.get(r, _NONE) for r in addr))
        if not sources:
            return False
        inner = min(
            ((t, b) for t, b in self.loops if t <= pc <= b), key=lambda tb: tb[1] - tb[0], default=None
        )
        if inner is None or self.search_loop(inner):
            return True
        return any(inner[0] <= src <= inner[1] for src in sources)

    def search_loop(self, loop: tuple[int, int]) -> bool:
        """A loop with a compare on data it loads (its next step depends on what it found)."""
        if loop not in self._search:
            t, b = loop
            self._search[loop] = any(
                t <= pc <= b and any(t <= src <= b for src in taint) for pc, taint in self.compares
            )
        return self._search[loop]

    def record_compare(self, pc: int, src_regs: list[int]) -> None:
        """Remember a compare's operands' taint (first pass)."""
        self.compares.append((pc, _NONE.union(*(self.tainted.get(r, _NONE) for r in src_regs))))

    def step(self, index: int, pc: int, opcode: str, mn: str, ops: list[str], src_datum: bool) -> _FlowStep:
        """What one instruction counts for, before its weight (second pass only)."""
        int_op = mn in INT_ARITH and not opcode.startswith("IMAD.MOV")
        fma = mn in ("FFMA", "DFMA", "FMUL", "DMUL", "FFMA2", "FMUL2") and len(ops) >= 3
        loaded: tuple[tuple[int, int], ...] | None = None
        if fma:
            multiplicands = [_reg(o) for o in ops[1:3]]
            values = [self.producer.get(r) if r is not None else None for r in multiplicands]
            if all(v is not None for v in values):
                loaded = tuple(v for v in values if v is not None)
        dependent = False
        if mn in GLOBAL_LOADS:
            addr = [r for o in ops[1:] if "[" in o for r in _regs_in([o])]
            dependent = self.dependent_address(pc, addr)
        return _FlowStep(
            index=index,
            int_op=int_op,
            int_data=int_op and src_datum,
            fma=fma,
            loaded=loaded,
            load_bytes=access_bytes(opcode) if mn in GLOBAL_LOADS or mn in SHARED_LOADS else 0,
            shared_load=mn in SHARED_LOADS,
            global_load=mn in GLOBAL_LOADS,
            dependent=dependent,
            store=mn not in GLOBAL_LOADS and (mn in GLOBAL_STORES or mn in GLOBAL_ATOMICS),
        )

    def assign(
        self, pc: int, text: str, opcode: str, mn: str, dest: list[int], srcs: list[str], src_regs: list[int]
    ) -> None:
        """Update the state of the registers one instruction writes."""
        is_load = mn in _DATA_LOADS
        predicated = text.lstrip().startswith("@")
        src_datum = any(self.datum.get(r, False) for r in src_regs)
        src_taint = _NONE.union(*(self.tainted.get(r, _NONE) for r in src_regs))
        src_vary = any(self.varying.get(r, False) for r in src_regs) or (
            mn == "S2R" and any(o.startswith(_LANE_SPECIAL) for o in srcs)
        )
        for i, r in enumerate(dest):
            if is_load:
                new_prod: tuple[int, int] | None = (pc, i)
                new_taint = (
                    frozenset((pc,)) if src_vary else _NONE
                )  # per-lane data: the lanes' addresses differ
            elif mn == "MOV" or opcode.startswith("IMAD.MOV"):
                r_src = _reg(srcs[-1]) if srcs else None
                new_prod = self.producer.get(r_src) if r_src is not None else None
                new_taint = src_taint
            else:
                new_prod, new_taint = None, src_taint
            if predicated:
                # If-converted code writes and reads a register under the same predicate, so the new value
                # is the one its readers see; only a load stays a load when the other side writes a
                # constant (``@P3 LDG R64, [...]`` / ``@!P3 MOV R64, RZ``: the zero-fill of a tile's edge).
                new_prod = new_prod if new_prod is not None else self.producer.get(r)
            self.producer[r], self.tainted[r], self.varying[r] = new_prod, new_taint, src_vary
            self.datum[r] = is_load or src_datum or (predicated and self.datum.get(r, False))


def _destinations(opcode: str, mn: str, ops: list[str]) -> tuple[list[int], list[str]]:
    """The registers an instruction writes and its source operands."""
    if mn in _FIRST_IS_PREDICATE_DEST and len(ops) > 1:
        r = _reg(ops[1])
        return ([r] if r is not None else []), ops[2:]
    if mn not in _NO_REGISTER_DEST and ops and not mn.startswith("ST") and mn not in ("RED",):
        r = _reg(ops[0])
        if r is not None and r != 255:  # RZ is R255 in some listings
            return [r + i for i in range(_dest_count(opcode, mn))], ops[1:]
    return [], ops


@functools.lru_cache(maxsize=128)
def _flow_plan(listing: tuple[tuple[int, str], ...]) -> tuple[_FlowStep, ...]:
    """Trace the registers through ``listing`` (``(pc, text)`` in address order): one step per instruction.

    The walk follows the listing twice; the register state at each backward branch of the first pass is
    merged into the branch's target in the second, so a loop's back edge is seen. The steps are the second
    pass's findings."""
    decoded = []
    for index, (pc, text) in enumerate(listing):
        opcode, ops = _split_operands(text)
        decoded.append((index, pc, text, opcode, opcode.split(".", 1)[0], ops))
    walk = _Walk()
    steps: list[_FlowStep] = []
    for count_pass in (False, True):
        for index, pc, text, opcode, mn, ops in decoded:
            if not mn:
                continue
            if count_pass:
                walk.merge_back_edge(pc)
            elif mn == "BRA":
                walk.record_back_edge(pc, ops)
            dest, srcs = _destinations(opcode, mn, ops)
            src_regs = _regs_in(srcs)
            if not count_pass and mn in _COMPARES:
                walk.record_compare(pc, src_regs)
            if count_pass:
                steps.append(
                    walk.step(index, pc, opcode, mn, ops, any(walk.datum.get(r, False) for r in src_regs))
                )
            walk.assign(pc, text, opcode, mn, dest, srcs, src_regs)
    return tuple(steps)


def dataflow(lines: Sequence[SassLine]) -> Dataflow:
    """Trace loaded values through the registers (see :class:`Dataflow`).

    The tracing depends on the listing's text only and is done once per function (:func:`_flow_plan`);
    each launch weighs its steps with its own executed counts.

    Examples
    --------
    >>> from kprof.kernel_model import SassLine
    >>> f = dataflow([SassLine(pc=0, text="LDS.128 R8, [R2]"), SassLine(pc=16, text="LDS.128 R12, [R3]"),
    ...               SassLine(pc=32, text="FFMA R20, R8, R12, R20"), SassLine(pc=48, text="FFMA R21, R8, R13, R21")])
    >>> f.fma_from_loads, f.operand_reuse
    (2.0, 1.3333333333333333)
    """
    cached = _recent("flow", lines)
    if isinstance(cached, Dataflow):
        return cached
    flow = _dataflow(lines)
    _remember("flow", lines, flow)
    return flow


def _dataflow(lines: Sequence[SassLine]) -> Dataflow:
    plan = _flow_plan(tuple((s.pc, s.text) for s in lines))
    weighted = any(_weight(s)[1] for s in lines)
    acc: dict[str, float] = defaultdict(float)
    sectors: dict[str, float] = defaultdict(float)
    used_values: set[tuple[int, int]] = set()
    int_data_pcs: set[int] = set()
    dependent_pcs: set[int] = set()
    weight_of_pc: dict[int, float] = {}
    for step in plan:
        s = lines[step.index]
        w, has = _weight(s)
        w = (w if has else 0.0) if weighted else 1.0
        weight_of_pc[s.pc] = w
        if step.int_op:
            acc["int"] += w
            if step.int_data:
                acc["int_data"] += w
                int_data_pcs.add(s.pc)
        if step.fma:
            acc["fma"] += w
            if step.loaded is not None:
                acc["fma_from_loads"] += w
                for value in step.loaded:
                    acc["uses"] += w
                    used_values.add(value)
        if step.load_bytes:
            nbytes = w * step.load_bytes
            acc["load_bytes"] += nbytes
            acc["shared_load_bytes" if step.shared_load else "global_load_bytes"] += nbytes
        if step.global_load:
            acc["gld"] += w
            if step.dependent:
                acc["dep"] += w
                dependent_pcs.add(s.pc)
            _add_sectors(sectors, s, "load", step.dependent)
        elif step.store:
            _add_sectors(sectors, s, "store", False)
    return Dataflow(
        fma=acc["fma"],
        fma_from_loads=acc["fma_from_loads"],
        loaded_values_used=sum(weight_of_pc.get(pc, 0.0) for pc, _ in used_values),
        loaded_operand_uses=acc["uses"],
        load_bytes=acc["load_bytes"],
        shared_load_bytes=acc["shared_load_bytes"],
        global_load_bytes=acc["global_load_bytes"],
        global_loads=acc["gld"],
        dependent_global_loads=acc["dep"],
        int_ops=acc["int"],
        int_data_ops=acc["int_data"],
        int_data_pcs=frozenset(int_data_pcs),
        dependent_pcs=frozenset(dependent_pcs),
        sectors=dict(sectors),
    )


def _add_sectors(sectors: dict[str, float], s: SassLine, kind: str, dependent: bool) -> None:
    """Add a load's or store's per-PC sectors (measured and ideal) to ``sectors``."""
    for key in (PER_PC_SECTORS, PER_PC_SECTORS_IDEAL):
        v = s.counters.get(key)
        if v is not None:
            suffix = "_ideal" if key == PER_PC_SECTORS_IDEAL else ""
            sectors[kind + suffix] += v
            if dependent:
                sectors["dependent" + suffix] += v


def is_mma(mnemonic: str) -> bool:
    """True for a tensor-core matrix instruction of any generation."""
    return mnemonic in MMA_MNEMONICS or bool(_UTC_MMA.match(mnemonic))


def _local_address_is_dynamic(text: str) -> bool:
    m = _ADDRESS.search(text)
    if not m:
        return False
    regs = re.findall(r"\bR\d+\b", m.group(1))
    return any(r != _STACK_POINTER for r in regs)


_RECENT: dict[tuple[str, int], tuple[Sequence[SassLine], object]] = {}
_RECENT_SIZE = 8
"""The last results of :func:`analyze_sass` and :func:`dataflow`, by the identity of the listing (a tuple,
so it cannot change): a diagnosis asks for both more than once per launch (the facts, then derived
metrics). The entry holds the listing, so its id is not reused while it is cached."""


def _recent(kind: str, lines: Sequence[SassLine]) -> object | None:
    hit = _RECENT.get((kind, id(lines)))
    return hit[1] if hit is not None and hit[0] is lines else None


def _remember(kind: str, lines: Sequence[SassLine], result: object) -> None:
    if not isinstance(lines, tuple):
        return
    while len(_RECENT) >= _RECENT_SIZE:
        _RECENT.pop(next(iter(_RECENT), ("", 0)), None)
    _RECENT[(kind, id(lines))] = (lines, result)


def _weight(line: SassLine) -> tuple[float, bool]:
    for name in INST_EXECUTED_COUNTERS:
        v = line.counters.get(name)
        if v is not None:
            return float(v), True
    return 1.0, False


_MEMORY_KEY = {
    **dict.fromkeys(GLOBAL_LOADS, "gld"),
    **dict.fromkeys(GLOBAL_STORES, "gst"),
    **dict.fromkeys(SHARED_LOADS, "sld"),
    **dict.fromkeys(SHARED_STORES, "sst"),
}
"""Accumulator key of the loads and stores whose access width is averaged."""


class _Mix:
    """The executed instruction mix of one :func:`analyze_sass` walk."""

    def __init__(self) -> None:
        self.by: dict[str, float] = defaultdict(float)
        self.total = 0.0
        self.acc: dict[str, float] = defaultdict(float)
        self.width_sum: dict[str, float] = defaultdict(float)
        self.widest: dict[str, int] = {}
        self.dynamic_local = False
        self.local_lines: set[tuple[str, int]] = set()

    def add(self, s: SassLine, mn: str, w: float) -> None:
        acc = self.acc
        self.by[mn] += w
        self.total += w
        if is_mma(mn):
            acc["mma"] += w
        if mn in FP32_ARITH:
            acc["fp32"] += w
            if mn.startswith("FFMA"):
                acc["ffma"] += w
        elif mn in FP16_ARITH:
            acc["fp16"] += w
        elif mn in FP64_ARITH:
            acc["fp64"] += w
        elif mn in SPECIAL_FUNCTION:
            acc["sfu"] += w
        elif mn in (LOCAL_LOAD, LOCAL_STORE):
            acc["ldl" if mn == LOCAL_LOAD else "stl"] += w
            self.dynamic_local = self.dynamic_local or _local_address_is_dynamic(s.text)
            if s.file and s.line:
                self.local_lines.add((s.file, s.line))
        elif mn in _MEMORY_KEY:
            key = _MEMORY_KEY[mn]
            acc[key] += w
            self.width_sum[key] += w * access_bytes(s.opcode)
            if w > 0:
                self.widest[key] = max(self.widest.get(key, 0), access_bytes(s.opcode))
        elif mn in GLOBAL_ATOMICS:
            acc["gatom"] += w
        elif mn in SHARED_ATOMICS:
            acc["satom"] += w
        elif mn in ASYNC_COPY:
            acc["async"] += w

    def width(self, key: str) -> float | None:
        return self.width_sum[key] / self.acc[key] if self.acc.get(key) else None

    def summary(self, weighted: bool) -> SassSummary:
        acc = self.acc
        local = acc.get("ldl", 0.0) + acc.get("stl", 0.0)
        return SassSummary(
            instructions=self.total,
            by_mnemonic=dict(self.by),
            weighted=weighted,
            mma=acc.get("mma", 0.0),
            fp32=acc.get("fp32", 0.0),
            ffma=acc.get("ffma", 0.0),
            fp16=acc.get("fp16", 0.0),
            fp64=acc.get("fp64", 0.0),
            special_function=acc.get("sfu", 0.0),
            local_loads=acc.get("ldl", 0.0),
            local_stores=acc.get("stl", 0.0),
            local_kind=None if not local else ("dynamic_index" if self.dynamic_local else "register_spill"),
            local_lines=tuple(sorted(self.local_lines)),
            global_loads=acc.get("gld", 0.0),
            global_stores=acc.get("gst", 0.0),
            global_load_bytes_per_thread=self.width("gld"),
            global_load_max_bytes=self.widest.get("gld"),
            global_store_bytes_per_thread=self.width("gst"),
            shared_loads=acc.get("sld", 0.0),
            shared_stores=acc.get("sst", 0.0),
            shared_load_bytes_per_thread=self.width("sld"),
            shared_store_bytes_per_thread=self.width("sst"),
            global_atomics=acc.get("gatom", 0.0),
            shared_atomics=acc.get("satom", 0.0),
            async_copies=acc.get("async", 0.0),
        )


def analyze_sass(lines: Sequence[SassLine]) -> SassSummary:
    """Summarise a SASS listing (see the module docstring).

    Parameters
    ----------
    lines
        :attr:`KernelLaunch.sass <kprof.kernel_model.KernelLaunch.sass>`.

    Returns
    -------
    SassSummary
        Empty (``instructions == 0``) when the report holds no SASS.
    """
    cached = _recent("summary", lines)
    if isinstance(cached, SassSummary):
        return cached
    summary = _analyze_sass(lines)
    _remember("summary", lines, summary)
    return summary


def _analyze_sass(lines: Sequence[SassLine]) -> SassSummary:
    # Weighted when the report holds per-PC executed counts; PCs without a count (padding after EXIT,
    # code never reached) then weigh 0.
    weighted = any(_weight(s)[1] for s in lines)
    mix = _Mix()
    for s in lines:
        w, has = _weight(s)
        if not weighted:
            w = 1.0
        elif not has:
            w = 0.0
        mn = s.mnemonic
        if mn:
            mix.add(s, mn, w)
    return mix.summary(weighted)


__all__ = ["INT_ARITH", "SassSummary", "access_bytes", "analyze_sass", "is_mma"]
