"""Source constructs recognised from a kernel's SASS and its data flow (the idioms of
:mod:`kprof.knowledge.constructs`).

:func:`constructs` returns what the executed SASS says the source does: an integer division by a run-time value
(``MUFU.RCP`` of an ``I2F.U32.RP``, the divisor traced back to a kernel argument), 64-bit index arithmetic (carry
pairs beyond one address pair per access), half data widened and rounded back every step, ``sinf`` on its slow path,
a per-thread array indexed at run time, register spills, a load predicated off for most lanes, an atomic in a loop,
``__syncthreads()`` in a loop, a divergent branch whose condition comes from the thread index or from loaded data,
loop-invariant loads reloaded after a store (possible aliasing). Each recogniser reads only the listing, its per-PC
counters (``inst_executed``, ``thread_inst_executed_true``, per-PC sectors and stall samples) and the registers'
data flow: a backward slice from the deciding operand (the divisor, the branch predicate, the address) to where its
value comes from (``S2R SR_TID``: the lane; ``LDC c[0x0][...]``: a kernel argument or the launch dimensions; a
load: data). No name is read.

The slice follows, for each register (R, UR, P, UP) an instruction reads, its nearest earlier writer in address
order (wrapping around for values carried by a loop), and a predicated writer together with the one before it
(both reach the reader).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kprof import thresholds as th
from kprof.diagnose.sass import access_bytes, analyze_sass, dataflow
from kprof.facts.sass_traits import fp64_promotion
from kprof.kernel_model import KernelLaunch, SassLine
from kprof.knowledge import constructs as kc
from kprof.knowledge.instructions import sm_of

Line = tuple[str, int]

_TRIG_SLOW_THRESHOLD = 105615.0
"""|x| above which CUDA's sinf/cosf/tanf/sincosf take the Payne-Hanek reduction ([TRIG] in
:mod:`kprof.knowledge.constructs`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Construct:
    """One source construct the SASS shows (an idiom of :data:`kprof.knowledge.constructs.IDIOMS`)."""

    kind: str
    """The idiom's id (:mod:`kprof.knowledge.constructs`)."""
    lines: tuple[Line, ...] = ()
    """The source lines (file, line) whose instructions are the idiom, most executed first; () without line info."""
    executed: float = 0.0
    """Executed warp instructions the idiom accounts for (what :attr:`measure` says they are)."""
    share: float = 0.0
    """``executed`` as a share of the kernel's executed instructions (or of the quantity :attr:`measure` names)."""
    measure: str = ""
    """What ``executed`` and ``share`` count, in words."""
    sass: tuple[str, ...] = ()
    """The distinctive opcodes, in address order."""
    origin: str = ""
    """Where the deciding value comes from: ``argument`` (a kernel argument), ``launch`` (blockDim/gridDim),
    ``data`` (a loaded value), ``lane`` (the thread index), ``block`` (the block index), ``uniform`` (the same for
    every lane and iteration), ``varying`` (changed in the loop), ``computed`` (none of these found)."""
    origin_lines: tuple[Line, ...] = ()
    """The lines where that value is computed (the condition of a branch, the index of an array)."""
    argument_offset: int | None = None
    """For ``argument``: the byte offset of the argument in the kernel's parameter list."""
    launch_dim: str = ""
    """For ``launch``: which dimension (``blockDim.x``)."""
    numbers: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """The idiom's own measures (lanes active, instructions per call, values per barrier ...)."""
    pc: int | None = None
    """Offset from the function's entry of the idiom's deciding instruction (the branch, the load, the atomic)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "numbers", MappingProxyType(dict(self.numbers)))


# ------------------------------------------------------------------------------------ decoding
_OPERAND_REG = re.compile(r"(?<![\w.])(U?R)(\d+)(?:\.(64|128))?\b")
_PRED = re.compile(r"^!?(U?P)(\d)$")
_CONST = re.compile(r"c\[(0x[0-9a-fA-F]+)\]\[([^\]]*)\]")
_SPECIAL = re.compile(r"\bSR_\w+(?:\.\w+)?|\bSRZ\b")
_GUARD = re.compile(r"^@(!?)(U?P)(\d|T)\s+")
_BRA_TARGET = re.compile(r"0x([0-9a-fA-F]+)\s*;?\s*$")
_IMM = re.compile(r"^[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:e[-+]?\d+)?)$", re.I)

_NO_DEST = frozenset(
    {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BAR", "BSSY", "BSYNC", "WARPSYNC", "NOP", "MEMBAR",
     "DEPBAR", "ERRBAR", "FENCE", "CCTL", "YIELD", "RED", "REDG", "STG", "STS", "STL", "ST", "STSM", "UTMASTG"}
)  # fmt: skip
_PRED_DESTS = frozenset(
    {"ISETP", "FSETP", "DSETP", "HSETP2", "PSETP", "PLOP3", "UISETP", "UPLOP3", "FCHK", "VOTE"}
)
"""Instructions whose leading predicate operands are destinations."""
_CARRY_OUT = frozenset({"IADD3", "LEA", "IMAD", "IADD", "UIADD3", "ULEA", "IADD32I"})
_LOADS = frozenset(
    {"LDG", "LD", "LDS", "LDSM", "LDL", "ATOM", "ATOMG", "ATOMS", "TLD", "TEX", "SULD", "LDGSTS"}
)
GLOBAL_MEMORY = frozenset({"LDG", "STG", "LD", "ST", "ATOM", "ATOMG", "RED", "REDG", "LDGSTS"})
_MOVES = frozenset({"MOV", "UMOV", "PRMT", "SHFL"})
_LANE_SR = ("SR_TID", "SR_LANEID", "SR_LTMASK", "SR_LEMASK", "SR_GTMASK", "SR_GEMASK", "SR_EQMASK")
_BLOCK_SR = ("SR_CTAID", "SR_CgaCtaId", "SR_CLUSTER")
_FP_MATH = frozenset({"FFMA", "FADD", "FMUL", "FFMA2", "FADD2", "FMUL2", "HFMA2", "HADD2", "HMUL2", "DFMA", "DADD",
                      "DMUL"})  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Ins:
    """One SASS instruction taken apart for the slices."""

    index: int
    pc: int
    opcode: str
    mn: str
    mods: tuple[str, ...]
    guard: str | None
    """The guarding predicate (``P0``, ``UP1``), None when unguarded."""
    writes: frozenset[str]
    """Register keys written: ``R4``, ``UR8``, ``P1``."""
    reads: tuple[str, ...]
    consts: tuple[tuple[int, int | None], ...]
    """(bank, offset) of each constant-bank operand (offset None when indexed by a register)."""
    specials: tuple[str, ...]
    operands: tuple[str, ...]
    target: int | None
    """A branch's target pc."""


@functools.lru_cache(maxsize=8192)
def _keys(operand: str, wide: bool) -> tuple[str, ...]:
    """The register keys an operand names (``[R4.64]`` -> R4, R5); RZ is not a register."""
    out: list[str] = []
    for m in _OPERAND_REG.finditer(operand):
        kind, n = m.group(1), int(m.group(2))
        if n == 255 and kind == "R":
            continue
        width = 4 if m.group(3) == "128" else 2 if (m.group(3) == "64" or wide) else 1
        out += [f"{kind}{n + j}" for j in range(width)]
    return tuple(out)


def _dest_width(opcode: str, mn: str) -> int:
    mods = opcode.split(".")[1:]
    if mn in _LOADS and mn not in ("ATOM", "ATOMG", "ATOMS"):
        return max(1, access_bytes(opcode) // 4)
    if mn in ("DFMA", "DADD", "DMUL", "DMNMX") or "WIDE" in mods or "64" in mods:
        return 2
    if mn in ("F2F", "I2F", "F2I") and len(mods) >= 1 and mods[0] in ("F64", "S64", "U64"):
        return 2
    return 1


def _src_wide(mn: str, opcode: str) -> bool:
    """Whether the register operands an instruction reads are 64-bit pairs (FP64 math, 64-bit sources)."""
    mods = opcode.split(".")[1:]
    if mn in ("DFMA", "DADD", "DMUL", "DSETP", "DMNMX"):
        return True
    return mn in ("F2F", "F2I", "I2F") and len(mods) >= 2 and mods[1] in ("F64", "S64", "U64")


def _decode_one(index: int, pc: int, text: str) -> _Ins:
    body = text.strip().rstrip(";").strip()
    guard = None
    g = _GUARD.match(body)
    reads: list[str] = []
    if g:
        guard = f"{g.group(2)}{g.group(3)}"
        if g.group(3) != "T":
            reads.append(guard)
        body = body[g.end() :]
    parts = body.split(None, 1)
    opcode = parts[0] if parts else ""
    mn = opcode.split(".", 1)[0]
    mods = tuple(opcode.split(".")[1:])
    ops = [o.strip() for o in parts[1].split(",")] if len(parts) > 1 else []
    writes: list[str] = []
    srcs = ops
    if mn in _PRED_DESTS:
        lead = 0
        while lead < len(ops) and lead < 2 and _PRED.match(ops[lead].lstrip("!")) is not None:
            lead += 1
        writes = [o for o in ops[:lead] if not o.endswith("PT")]
        srcs = ops[lead:]
    elif mn not in _NO_DEST and ops:
        first = 0
        if _PRED.match(ops[0]) is not None:  # LOP3.LUT P0, R6, ...: a predicate result first
            writes.append(ops[0])
            first = 1
        if first < len(ops):
            regs = _keys(ops[first], False) if "[" not in ops[first] else []
            if regs:
                r = regs[0]
                kind, n = ("UR", int(r[2:])) if r.startswith("UR") else ("R", int(r[1:]))
                writes += [f"{kind}{n + j}" for j in range(_dest_width(opcode, mn))]
                srcs = ops[first + 1 :]
                # IADD3 R20, P1, R27, ...: carry-out predicates right after the destination
                while srcs and mn in _CARRY_OUT and _PRED.match(srcs[0]) is not None:
                    if not srcs[0].endswith("PT"):
                        writes.append(srcs[0])
                    srcs = srcs[1:]
            else:
                srcs = ops[first:]
    wide = _src_wide(mn, opcode)
    consts: list[tuple[int, int | None]] = []
    specials: list[str] = []
    for o in srcs:
        if "R" not in o and "P" not in o and "c[" not in o:
            continue  # an immediate: no register, predicate or constant-bank operand
        if "c[" in o:
            for m in _CONST.finditer(o):
                off = m.group(2).strip()
                consts.append(
                    (
                        int(m.group(1), 16),
                        int(off, 16) if off.startswith("0x") else (0 if off == "RZ" else None),
                    )
                )
        if "SR" in o:
            specials += _SPECIAL.findall(o)
        clean = _CONST.sub(lambda m: m.group(2), o) if "c[" in o else o
        p = _PRED.match(clean.lstrip("!"))
        if p is not None:
            reads.append(f"{p.group(1)}{p.group(2)}")
        else:
            reads += _keys(clean, wide and "[" not in clean)
    target = None
    if mn in ("BRA", "BSSY"):
        t = _BRA_TARGET.search(text)
        target = int(t.group(1), 16) if t else None
    return _Ins(
        index=index,
        pc=pc,
        opcode=opcode,
        mn=mn,
        mods=mods,
        guard=guard,
        writes=frozenset(writes),
        reads=tuple(reads),
        consts=tuple(consts),
        specials=tuple(specials),
        operands=tuple(ops),
        target=target,
    )


@functools.lru_cache(maxsize=64)
def _decode(listing: tuple[tuple[int, str], ...]) -> tuple[_Ins, ...]:
    return tuple(_decode_one(i, pc, text) for i, (pc, text) in enumerate(listing))


# ------------------------------------------------------------------------------------ the slices
@dataclass(slots=True)
class _Roots:
    """Where a value comes from (the leaves of its backward slice)."""

    kinds: set[str] = field(default_factory=set)
    loads: set[int] = field(default_factory=set)
    """Indices of the loads whose data the value is computed from."""
    lane_uses: set[int] = field(default_factory=set)
    """Indices of the instructions that read a lane-varying special register's value directly."""
    arguments: set[int] = field(default_factory=set)
    launch: set[int] = field(default_factory=set)
    specials: set[str] = field(default_factory=set)
    """The lane-varying special registers read (``SR_TID.X``)."""


class _Flow:
    """Reaching definitions over one decoded listing."""

    WINDOW = 4096
    """Instructions a slice visits at most (a bound on the walk, not a judgement)."""

    def __init__(self, ins: Sequence[_Ins], param_base: int | None) -> None:
        self.ins = ins
        self.param_base = param_base
        self._writers: dict[str, list[int]] = defaultdict(list)
        for x in ins:
            for key in x.writes:
                self._writers[key].append(x.index)

    def defs(self, i: int, key: str) -> list[int]:
        """The writers of ``key`` that reach instruction ``i``: the nearest earlier one (wrapping around to the
        listing's end for loop-carried values), and the ones before it while those are predicated."""
        ws = self._writers.get(key)
        if not ws:
            return []
        before = [j for j in ws if j < i]
        order = list(reversed(before)) + list(reversed([j for j in ws if j >= i]))
        out: list[int] = []
        for j in order:
            out.append(j)
            if self.ins[j].guard is None:
                break
        return out

    def roots(self, i: int, keys: Iterable[str]) -> _Roots:
        """Where the values of ``keys`` read at instruction ``i`` come from."""
        r = _Roots()
        todo = [(i, k) for k in keys]
        seen: set[tuple[int, str]] = set()
        steps = 0
        while todo and steps < self.WINDOW:
            at, key = todo.pop()
            if (at, key) in seen:
                continue
            seen.add((at, key))
            steps += 1
            ds = self.defs(at, key)
            if not ds:
                r.kinds.add("computed")
                continue
            for j in ds:
                self._leaf_or_walk(j, r, todo)
        return r

    def _leaf_or_walk(self, j: int, r: _Roots, todo: list[tuple[int, str]]) -> None:
        x = self.ins[j]
        if x.mn in _LOADS:
            r.kinds.add("data")
            r.loads.add(j)
            return
        for sp in x.specials:
            if sp.startswith(_LANE_SR):
                r.kinds.add("lane")
                r.specials.add(sp)
            elif sp.startswith(_BLOCK_SR):
                r.kinds.add("block")
        for bank, off in x.consts:
            kind = self.const_kind(bank, off)
            r.kinds.add(kind)
            if kind == "argument":
                r.arguments.add(j)
            elif kind == "launch":
                r.launch.add(j)
        if x.mn in ("S2R", "S2UR", "CS2R", "LDC", "ULDC"):
            return
        for key in x.reads:
            if x.guard is not None and key == x.guard:
                continue
            todo.append((j, key))
        if any(sp.startswith(_LANE_SR) for d in x.reads for sp in self._special_of(j, d)):
            r.lane_uses.add(j)

    def _special_of(self, j: int, key: str) -> tuple[str, ...]:
        ds = self.defs(j, key)
        return tuple(
            sp for d in ds for sp in self.ins[d].specials if self.ins[d].mn in ("S2R", "S2UR", "CS2R")
        )

    def const_kind(self, bank: int, off: int | None) -> str:
        if bank != 0 or off is None:
            return "constant"
        if off in kc.LAUNCH_DIMS:
            return "launch"
        if self.param_base is not None:
            return "argument" if off >= self.param_base else "constant"
        return "argument" if off >= min(kc.PARAM_BASE.values()) else "constant"

    def argument(self, r: _Roots) -> int | None:
        """The byte offset, in the parameter list, of the one argument a value is read from (None otherwise)."""
        offs = {off for j in r.arguments for bank, off in self.ins[j].consts if bank == 0 and off is not None}
        if len(offs) != 1 or self.param_base is None:
            return None
        return next(iter(offs)) - self.param_base

    def launch_dim(self, r: _Roots) -> str:
        offs = {
            off for j in r.launch for bank, off in self.ins[j].consts if bank == 0 and off in kc.LAUNCH_DIMS
        }
        return kc.LAUNCH_DIMS[next(iter(offs))] if len(offs) == 1 else ""


def _origin(r: _Roots) -> str:
    """One word for where a value comes from, the strongest evidence first (data over the lane over the rest)."""
    for kind in ("data", "lane", "argument", "launch", "block"):
        if kind in r.kinds:
            return kind
    return "computed" if "computed" in r.kinds or not r.kinds else "constant"


# ------------------------------------------------------------------------------------ the listing's facts
@dataclass(slots=True)
class _Ctx:
    k: KernelLaunch
    lines: Sequence[SassLine]
    ins: Sequence[_Ins]
    flow: _Flow
    w: list[float]
    weighted: bool
    total: float
    entry: int
    by_pc: dict[int, int]
    loops: list[tuple[int, int]]
    """(top index, bottom index) of each executed backward branch's body, innermost (shortest) first."""

    def line_of(self, i: int) -> Line | None:
        s = self.lines[i]
        return (s.file, s.line) if s.file and s.line else None

    def counter(self, i: int, name: str) -> float | None:
        v = self.lines[i].counters.get(name)
        return float(v) if v is not None else None

    def line_exec(self) -> dict[Line, float]:
        out: dict[Line, float] = defaultdict(float)
        for i, _ in enumerate(self.lines):
            ln = self.line_of(i)
            if ln is not None:
                out[ln] += self.w[i]
        return out

    def loop_of(self, i: int) -> tuple[int, int] | None:
        """The innermost executed loop whose body holds instruction ``i``."""
        return next(((t, b) for t, b in self.loops if t <= i <= b), None)


def _weights(lines: Sequence[SassLine]) -> tuple[list[float], bool]:
    weighted = any("inst_executed" in s.counters for s in lines)
    if not weighted:
        return [1.0] * len(lines), False
    return [float(s.counters.get("inst_executed") or 0.0) for s in lines], True


def _context(k: KernelLaunch) -> _Ctx:
    lines = k.sass
    ins = _decode(tuple((s.pc, s.text) for s in lines))
    w, weighted = _weights(lines)
    sm = sm_of(k.compute_capability)
    cc = k.device_attributes.get("compute_capability_major")
    if sm is None and isinstance(cc, int):
        minor = k.device_attributes.get("compute_capability_minor")
        sm = cc * 10 + (minor if isinstance(minor, int) else 0)
    by_pc = {x.pc: x.index for x in ins}
    loops: list[tuple[int, int]] = []
    for x in ins:
        if (
            x.mn == "BRA"
            and x.target is not None
            and x.target < x.pc
            and w[x.index] > 0
            and x.target in by_pc
        ):
            loops.append((by_pc[x.target], x.index))
    loops.sort(key=lambda tb: tb[1] - tb[0])
    return _Ctx(
        k=k,
        lines=lines,
        ins=ins,
        flow=_Flow(ins, kc.param_base(sm)),
        w=w,
        weighted=weighted,
        total=sum(w),
        entry=min((s.pc for s in lines), default=0),
        by_pc=by_pc,
        loops=loops,
    )


def _ranked(per_line: Mapping[Line, float]) -> tuple[Line, ...]:
    return tuple(ln for ln, v in sorted(per_line.items(), key=lambda kv: (-kv[1], kv[0])) if v > 0)


def _opcodes(c: _Ctx, idx: Iterable[int]) -> tuple[str, ...]:
    seen: list[str] = []
    for i in sorted(set(idx)):
        if c.ins[i].opcode not in seen:
            seen.append(c.ins[i].opcode)
    return tuple(seen)


# ------------------------------------------------------------------------------------ the idioms
def _runtime_division(c: _Ctx) -> list[Construct]:
    """MUFU.RCP of an I2F.*.RP: the reciprocal step of an integer division by a register ([DIV]).

    The division's cost is its quotient work: on the line that holds the reciprocal, the instructions executed as
    often as its multiply-high quotient estimates (``IMAD.HI.U32``). A loop's trip count divided once per thread on
    a hot line (``for (i = tid; i < n; i += stride)``) then counts once per thread, not as the loop."""
    found: dict[Line | None, dict[str, object]] = {}
    for x in c.ins:
        if x.mn != "MUFU" or not x.opcode.startswith("MUFU.RCP") or "64H" in x.opcode or c.w[x.index] <= 0:
            continue
        src = next((k for k in x.reads if k.startswith("R")), None)
        if src is None:
            continue
        i2f = [j for j in c.flow.defs(x.index, src) if c.ins[j].mn == "I2F" and "RP" in c.ins[j].mods]
        if not i2f:
            continue
        j = i2f[0]
        divisor = [k for k in c.ins[j].reads if k.startswith(("R", "UR"))]
        key = c.line_of(x.index) or c.line_of(j)
        f2i = [n for n in range(x.index + 1, min(len(c.ins), x.index + 8)) if c.ins[n].mn == "F2I"][:1]
        e = found.setdefault(key, {"chain": [], "roots": _Roots(), "rcp": 0.0, "wide": False})
        e["chain"] += [j, x.index, *f2i]  # type: ignore[operator]
        r = c.flow.roots(j, divisor)
        merged: _Roots = e["roots"]  # type: ignore[assignment]
        merged.kinds |= r.kinds
        merged.loads |= r.loads
        merged.arguments |= r.arguments
        merged.launch |= r.launch
        e["rcp"] = float(e["rcp"]) + c.w[x.index]  # type: ignore[arg-type]
        e["wide"] = bool(e["wide"]) or any(m in ("U64", "S64") for m in c.ins[j].mods)
    out: list[Construct] = []
    for key, e in found.items():
        merged = e["roots"]  # type: ignore[assignment]
        chain: list[int] = e["chain"]  # type: ignore[assignment]
        on_line = [i for i in range(len(c.ins)) if key is None or c.line_of(i) == key]
        rates = {c.w[i] for i in on_line if c.ins[i].opcode.startswith("IMAD.HI") and c.w[i] > 0}
        work = [i for i in on_line if c.w[i] > 0 and any(abs(c.w[i] - r) <= 0.01 * r for r in rates)]
        executed = sum(c.w[i] for i in set(work) | set(chain))
        origin = _origin(merged)
        out.append(
            Construct(
                kind=kc.RUNTIME_DIVISION,
                lines=(key,) if key else (),
                executed=executed,
                share=executed / c.total if c.total else 0.0,
                measure="executed instructions of the division sequence (its line's instructions that run as "
                "often as its quotient estimates)",
                sass=_opcodes(c, chain),
                origin=origin,
                origin_lines=_ranked({ln: 1.0 for i in merged.loads if (ln := c.line_of(i))}),
                argument_offset=c.flow.argument(merged) if origin == "argument" else None,
                launch_dim=c.flow.launch_dim(merged) if origin == "launch" else "",
                numbers={
                    "reciprocals": float(e["rcp"]),  # type: ignore[arg-type]
                    "quotients": sum(c.w[i] for i in on_line if c.ins[i].opcode.startswith("IMAD.HI")),
                    "wide": 1.0 if e["wide"] else 0.0,
                },
                pc=c.ins[chain[1]].pc - c.entry,
            )
        )
    return out


def _is_64bit_op(x: _Ins) -> bool:
    """An instruction that exists because an integer is 64-bit ([I64]): the high half of an add (``.X``), a 64-bit
    compare (``.EX``), a carry-out, a 64x64 multiply (``IMAD.WIDE.U32`` of two registers), a 64-bit shift."""
    if x.mn.startswith("U") or not x.mn:
        return False  # uniform datapath: once per warp, not the cost
    if x.mn in ("IADD3", "IMAD", "LEA", "IADD", "IADD32I") and "X" in x.mods:
        return True
    if x.mn == "ISETP" and "EX" in x.mods:
        return True
    if x.mn in _CARRY_OUT and any(k.startswith("P") for k in x.writes):
        return True
    if x.mn == "IMAD" and "WIDE" in x.mods and len(x.operands) >= 3:
        mult = x.operands[2]
        return _IMM.match(mult) is None
    return x.mn == "SHF" and ("U64" in x.mods or "S64" in x.mods)


def _index64(c: _Ctx) -> list[Construct]:
    """64-bit integer instructions on index values beyond the one address pair each global access needs ([I64]).

    The allowance is counted per loop body (and once for the code outside loops): a loop that bumps one 64-bit
    pointer per iteration (IADD3 + IADD3.X) for the loads it feeds is 32-bit index math strength-reduced, not 64-bit
    arithmetic."""
    if not any(_is_64bit_op(x) for x in c.ins):
        return []
    data = dataflow(c.lines).int_data_pcs
    ops: dict[tuple[int, int] | None, float] = defaultdict(float)
    mem: dict[tuple[int, int] | None, float] = defaultdict(float)
    idx: dict[tuple[int, int] | None, list[int]] = defaultdict(list)
    for x in c.ins:
        if c.w[x.index] <= 0:
            continue
        scope = c.loop_of(x.index)
        if x.mn in GLOBAL_MEMORY:
            mem[scope] += c.w[x.index]
        elif _is_64bit_op(x) and c.lines[x.index].pc not in data:
            ops[scope] += c.w[x.index]
            idx[scope].append(x.index)
    excess = {scope: ops[scope] - 2.0 * mem.get(scope, 0.0) for scope in ops}
    total_excess = sum(v for v in excess.values() if v > 0)
    if not c.total or total_excess / c.total < th.CONSTRUCT_MIN_SHARE:
        return []
    per_line: dict[Line, float] = defaultdict(float)
    chosen = [i for scope, v in excess.items() if v > 0 for i in idx[scope]]
    for i in chosen:
        if (ln := c.line_of(i)) is not None:
            per_line[ln] += c.w[i]
    return [
        Construct(
            kind=kc.INDEX64,
            lines=_ranked(per_line),
            executed=total_excess,
            share=total_excess / c.total,
            measure="executed 64-bit integer instructions beyond one address pair per global access",
            sass=_opcodes(c, chosen),
            numbers={"ops64": sum(ops.values()), "accesses": sum(mem.values())},
        )
    ]


def _fp64(c: _Ctx) -> list[Construct]:
    if not any(x.mn == "F2F" and "F64" in x.mods for x in c.ins):
        return []  # no conversion to or from FP64: nothing promoted
    p = fp64_promotion(c.lines)
    if p is None:
        return []
    idx = [
        i
        for i, x in enumerate(c.ins)
        if c.w[i] > 0 and (x.mn in ("DMUL", "DFMA", "DADD") or x.opcode.startswith("F2F"))
    ]
    return [
        Construct(
            kind=kc.FP64_PROMOTION,
            lines=p.lines,
            executed=p.fp64_ops,
            share=p.fp64_share,
            measure="executed FP64 instructions (the conversions included)",
            sass=_opcodes(c, idx),
            numbers={"widen": p.widen, "narrow": p.narrow},
        )
    ]


def _narrows(x: _Ins) -> str | None:
    """``fp16``/``bf16`` when the instruction rounds FP32 to that 16-bit type."""
    if x.mn == "F2FP" and "F32" in x.mods:
        return "bf16" if "BF16" in x.mods else "fp16" if "F16" in x.mods else None
    if x.mn == "F2F" and len(x.mods) >= 2 and x.mods[1] == "F32" and x.mods[0] in ("F16", "BF16"):
        return "bf16" if x.mods[0] == "BF16" else "fp16"
    return None


def _widens(x: _Ins) -> bool:
    """A 16-bit -> FP32 conversion (``HADD2.F32 Rd, -RZ, Rs.H0_H0`` on sm_86+, ``F2F.F32.F16``)."""
    if x.mn == "HADD2" and "F32" in x.mods:
        return True
    return x.mn == "F2F" and len(x.mods) >= 2 and x.mods[0] == "F32" and x.mods[1] in ("F16", "BF16")


def _half_round_trip(c: _Ctx) -> list[Construct]:
    """A value rounded to 16 bits and widened back to FP32 (a round trip through half every iteration) ([F16])."""
    trips = 0.0
    dtype = ""
    loops: set[tuple[int, int]] = set()
    for x in c.ins:
        if not _widens(x) or c.w[x.index] <= 0:
            continue
        for key in x.reads:
            for j in _through_moves(c, x.index, key):
                kind = _narrows(c.ins[j])
                if kind:
                    trips += c.w[x.index]
                    dtype = dtype or kind
                    loop = c.loop_of(x.index)
                    if loop is not None:
                        loops.add(loop)
    if trips <= 0 or not loops:
        return []
    inside = {i for t, b in loops for i in range(t, b + 1)}
    conv = [i for i in inside if (_widens(c.ins[i]) or _narrows(c.ins[i])) and c.w[i] > 0]
    conversions = sum(c.w[i] for i in conv)
    if not c.total or conversions / c.total < th.CONSTRUCT_MIN_SHARE:
        return []
    fp32 = sum(c.w[i] for i in inside if c.ins[i].mn in ("FFMA", "FADD", "FMUL"))
    per_line: dict[Line, float] = defaultdict(float)
    for i in conv:
        if (ln := c.line_of(i)) is not None:
            per_line[ln] += c.w[i]
    return [
        Construct(
            kind=kc.HALF_ROUND_TRIP,
            lines=_ranked(per_line),
            executed=conversions,
            share=conversions / c.total,
            measure="executed 16-bit <-> FP32 conversions inside the loop",
            sass=_opcodes(c, conv),
            origin=dtype,
            numbers={
                "round_trips": trips,
                "fp32_ops": fp32,
                "narrow": sum(c.w[i] for i in conv if _narrows(c.ins[i])),
                "widen": sum(c.w[i] for i in conv if _widens(c.ins[i])),
            },
        )
    ]


def _through_moves(c: _Ctx, i: int, key: str, depth: int = 3) -> list[int]:
    """The writers of ``key`` at ``i``, looking through register moves and byte permutes (PRMT packs halves)."""
    out: list[int] = []
    for j in c.flow.defs(i, key):
        x = c.ins[j]
        if x.mn in _MOVES or x.opcode.startswith("IMAD.MOV"):
            if depth > 0:
                for k in x.reads:
                    out += _through_moves(c, j, k, depth - 1)
        else:
            out.append(j)
    return out


def _float_imm(operand: str) -> float | None:
    try:
        return float(operand)
    except ValueError:
        return None


def _trig_slow_path(c: _Ctx) -> list[Construct]:
    """The |x| >= 105615 test of sinf/cosf and the slow reduction it guards, when it executes ([TRIG])."""
    out: list[Construct] = []
    for x in c.ins:
        if x.mn != "FSETP" or c.w[x.index] <= 0 or not x.writes:
            continue
        vals = [_float_imm(o) for o in x.operands]
        if _TRIG_SLOW_THRESHOLD not in vals or not any(o.startswith("|") for o in x.operands):
            continue
        pred = sorted(x.writes)[0]
        bra = next(
            (
                c.ins[n]
                for n in range(x.index + 1, min(len(c.ins), x.index + 12))
                if c.ins[n].mn == "BRA" and c.ins[n].guard == pred and c.ins[n].target is not None
            ),
            None,
        )
        if bra is None or bra.target is None or bra.target <= bra.pc:
            continue
        region = [i for i, s in enumerate(c.lines) if bra.pc < s.pc < bra.target]
        slow = sum(c.w[i] for i in region)
        if not region or slow <= 0:
            continue
        first = region[0]
        taken = c.counter(first, "thread_inst_executed")
        all_lanes = c.counter(x.index, "thread_inst_executed")
        calls = c.w[x.index]
        ln = c.line_of(x.index)
        out.append(
            Construct(
                kind=kc.TRIG_SLOW_PATH,
                lines=(ln,) if ln else (),
                executed=slow,
                share=slow / c.total if c.total else 0.0,
                measure="executed instructions of the slow range reduction",
                sass=_opcodes(
                    c,
                    [
                        i
                        for i in region
                        if c.w[i] > 0
                        and (c.ins[i].mn in ("LDG", "I2F", "DMUL") or c.ins[i].opcode.startswith("IMAD.WIDE"))
                    ],
                ),
                numbers={
                    "calls": calls,
                    "slow_per_call": slow / calls if calls else 0.0,
                    "lanes_slow": taken / all_lanes if taken is not None and all_lanes else -1.0,
                    "line_per_call": (c.line_exec().get(ln, 0.0) / calls) if ln and calls else 0.0,
                },
                pc=x.pc - c.entry,
            )
        )
    return out


def _local(c: _Ctx) -> list[Construct]:
    """LDL/STL: a run-time indexed array (a computed address) or register spills (the stack pointer R1 plus a
    constant), told apart per instruction."""
    indexed: dict[Line | None, float] = defaultdict(float)
    spills: dict[Line | None, float] = defaultdict(float)
    index_roots = _Roots()
    in_loop = 0.0
    sectors = requests = 0.0
    ind_idx: list[int] = []
    sp_idx: list[int] = []
    for x in c.ins:
        if x.mn not in ("LDL", "STL") or c.w[x.index] <= 0:
            continue
        addr = next((o for o in x.operands if "[" in o), "")
        regs = [k for k in _keys(addr, False) if k != "R1"]
        amount = c.counter(x.index, "memory_l2_theoretical_sectors_local")
        value = amount if amount is not None else c.w[x.index]
        key = c.line_of(x.index)
        if regs:
            indexed[key] += value
            ind_idx.append(x.index)
            r = c.flow.roots(x.index, regs)
            index_roots.kinds |= r.kinds
            index_roots.loads |= r.loads
            if x.mn == "LDL" and amount is not None:
                sectors += amount
                requests += c.w[x.index]
        else:
            spills[key] += value
            sp_idx.append(x.index)
            if c.loop_of(x.index) is not None:
                in_loop += c.w[x.index]
    out: list[Construct] = []
    total_local = sum(indexed.values()) + sum(spills.values())
    if indexed:
        v = sum(indexed.values())
        out.append(
            Construct(
                kind=kc.LOCAL_INDEXED_ARRAY,
                lines=_ranked({k: val for k, val in indexed.items() if k}),
                executed=v,
                share=v / total_local if total_local else 0.0,
                measure="local-memory sectors (or executed LDL/STL) of the computed addresses",
                sass=_opcodes(c, ind_idx),
                origin="data" if "data" in index_roots.kinds else _origin(index_roots),
                origin_lines=_ranked({ln: 1.0 for i in index_roots.loads if (ln := c.line_of(i))}),
                numbers={"sectors_per_request": sectors / requests if requests else 0.0},
            )
        )
    if spills:
        v = sum(spills.values())
        out.append(
            Construct(
                kind=kc.REGISTER_SPILL,
                lines=_ranked({k: val for k, val in spills.items() if k}),
                executed=v,
                share=v / total_local if total_local else 0.0,
                measure="local-memory sectors (or executed LDL/STL) at the stack pointer",
                sass=_opcodes(c, sp_idx),
                numbers={"in_loop": in_loop, "spill_instructions": sum(c.w[i] for i in sp_idx)},
            )
        )
    return out


def _predicated_loads(c: _Ctx) -> list[Construct]:
    """Global loads predicated off for most lanes by a condition on the index (or on data)."""
    per_line: dict[Line | None, float] = defaultdict(float)
    excess_total = 0.0
    picked: list[tuple[int, float, float, float, _Roots]] = []
    for x in c.ins:
        if x.mn not in ("LDG", "LD") or x.guard is None or c.w[x.index] <= 0:
            continue
        n = c.w[x.index]
        true = c.counter(x.index, "thread_inst_executed_true")
        actual = c.counter(x.index, "memory_l2_theoretical_sectors_global")
        ideal = c.counter(x.index, "memory_l2_theoretical_sectors_global_ideal")
        if true is None or actual is None:
            continue
        active = true / n
        if active >= th.DIVERGENCE_ACTIVE_THREADS:
            continue
        r = c.flow.roots(x.index, [x.guard])
        r.lane_uses |= set(c.flow.defs(x.index, x.guard))
        excess = max(0.0, actual - (ideal or 0.0))
        picked.append((x.index, active, actual / n, (ideal or 0.0) / n, r))
        per_line[c.line_of(x.index)] += excess
        excess_total += excess
    if not picked:
        return []
    all_excess = sum(
        max(0.0, (c.counter(i, "memory_l2_theoretical_sectors_global") or 0.0)
            - (c.counter(i, "memory_l2_theoretical_sectors_global_ideal") or 0.0))
        for i, x in enumerate(c.ins) if x.mn in GLOBAL_MEMORY
    )  # fmt: skip
    top = max(picked, key=lambda p: c.w[p[0]])
    i, active, spr, ideal, roots = top
    width = access_bytes(c.ins[i].opcode)
    lane_sectors = max(1.0, width / th.SECTOR_BYTES)
    origin = "data" if "data" in roots.kinds else "lane" if "lane" in roots.kinds else _origin(roots)
    return [
        Construct(
            kind=kc.PREDICATED_LOAD,
            lines=_ranked({k: v for k, v in per_line.items() if k}),
            executed=excess_total,
            share=excess_total / all_excess if all_excess else 0.0,
            measure="excess L2 sectors of the predicated loads",
            sass=(c.ins[i].opcode,),
            origin=origin,
            origin_lines=_condition_lines(
                c, c.flow.defs(i, c.ins[i].guard or ""), roots.lane_uses | roots.loads
            ),
            numbers={
                "active_lanes": active,
                "sectors_per_request": spr,
                "ideal_per_request": ideal,
                "bytes": float(width),
                "own_sector": 1.0 if spr >= 0.9 * active * lane_sectors else 0.0,
            },
            pc=c.ins[i].pc - c.entry,
        )
    ]


def _condition_lines(c: _Ctx, defs: Iterable[int], sources: Iterable[int]) -> tuple[Line, ...]:
    """The lines that compute a condition: where its predicate is set, then where its inputs are read (the use of
    the thread index, the load), each once, in that order."""
    out: list[Line] = []
    for i in [*sorted(defs), *sorted(sources)]:
        ln = c.line_of(i)
        if ln is not None and ln not in out:
            out.append(ln)
    return tuple(out)


def _body_writes(c: _Ctx, loop: tuple[int, int]) -> set[str]:
    top, bottom = loop
    out: set[str] = set()
    for x in c.ins[top : bottom + 1]:
        out |= x.writes
    return out


def _address_keys(x: _Ins) -> list[str]:
    brackets = [o for o in x.operands if "[" in o]
    keys: list[str] = []
    for b in brackets:
        for inner in re.findall(r"\[([^\]]*)\]", b):
            keys += [k for k in _keys(inner, False) if k.startswith("R")]
    return keys


def _atomics_in_loops(c: _Ctx) -> list[Construct]:
    """A global atomic inside an executed loop body, and whether its address changes in the loop."""
    out: list[Construct] = []
    atomics = sum(c.w[i] for i, x in enumerate(c.ins) if x.mn in ("RED", "REDG", "ATOM", "ATOMG"))
    for x in c.ins:
        if x.mn not in ("RED", "REDG", "ATOM", "ATOMG") or c.w[x.index] <= 0:
            continue
        loop = c.loop_of(x.index)
        if loop is None:
            continue
        keys = _address_keys(x)
        varies = bool(set(keys) & _body_writes(c, loop))
        r = c.flow.roots(x.index, keys)
        origin = (
            "data"
            if "data" in r.kinds
            else "varying"
            if varies
            else "lane"
            if "lane" in r.kinds
            else "uniform"
        )
        ln = c.line_of(x.index)
        trips = c.w[loop[1]]
        out.append(
            Construct(
                kind=kc.ATOMIC_IN_LOOP,
                lines=(ln,) if ln else (),
                executed=c.w[x.index],
                share=c.w[x.index] / atomics if atomics else 0.0,
                measure="executed global atomics (of all the kernel's)",
                sass=(x.opcode,),
                origin=origin,
                numbers={
                    "from_argument": 1.0 if "argument" in r.kinds else 0.0,
                    "per_iteration": c.w[x.index] / trips if trips else 0.0,
                    "thread_atomics": c.counter(x.index, "thread_inst_executed_true")
                    or c.counter(x.index, "thread_inst_executed")
                    or 0.0,
                },
                pc=x.pc - c.entry,
            )
        )
    return out


def _stall_samples(s: SassLine, reason: str | None = None) -> float:
    total = 0.0
    for name, v in s.counters.items():
        if not name.startswith("smsp__pcsamp_warps_issue_stalled_") or name.endswith("_not_issued"):
            continue
        r = name.removeprefix("smsp__pcsamp_warps_issue_stalled_")
        if r == "selected":
            continue
        if reason is None or r == reason:
            total += float(v or 0.0)
    return total


def _sync_in_loops(c: _Ctx) -> list[Construct]:
    """BAR.SYNC in an executed loop body: barriers per iteration, the work between them, the values staged."""
    seen: set[tuple[int, int]] = set()
    out: list[Construct] = []
    tpb = c.k.threads_per_block or 0
    warps = max(1, -(-tpb // th.WARP_SIZE)) if tpb else 0
    if not any(x.mn == "BAR" and c.w[x.index] > 0 and c.loop_of(x.index) is not None for x in c.ins):
        return out
    samples = sum(_stall_samples(s) for s in c.lines)
    barrier = sum(_stall_samples(s, "barrier") for s in c.lines)
    for x in c.ins:
        if x.mn != "BAR" or "ARV" in x.mods or c.w[x.index] <= 0:
            continue
        loop = c.loop_of(x.index)
        if loop is None or loop in seen:
            continue
        seen.add(loop)
        body = range(loop[0], loop[1] + 1)
        if any(c.ins[i].mn in _MMA for i in body):
            continue  # an MMA k-loop's barriers stage its tiles: the pipelining idiom (sass_traits), not this one
        if _stores_shared_results(c, body):
            continue  # a reduction or scan: each step reads what the last one wrote, so it needs its barriers
        bars = [i for i in body if c.ins[i].mn == "BAR" and "ARV" not in c.ins[i].mods]
        nbar = sum(c.w[i] for i in bars)
        work = sum(c.w[i] for i in body) - nbar
        stored = sum(c.counter(i, "thread_inst_executed_true") or 0.0 for i in body if c.ins[i].mn == "STS")
        fp = sum(c.w[i] for i in body if c.ins[i].mn in _FP_MATH)
        per_line: dict[Line, float] = defaultdict(float)
        for i in bars:
            if (ln := c.line_of(i)) is not None:
                per_line[ln] += c.w[i]
        loop_line = c.line_of(loop[1])
        out.append(
            Construct(
                kind=kc.SYNC_IN_LOOP,
                lines=_ranked(per_line) + ((loop_line,) if loop_line and loop_line not in per_line else ()),
                executed=nbar,
                share=barrier / samples if samples else 0.0,
                measure="warp stall samples waiting at a barrier",
                sass=_opcodes(c, bars),
                numbers={
                    "barriers": nbar,
                    "per_iteration": len(bars),
                    "instructions_per_barrier": work / nbar if nbar else 0.0,
                    "fp_per_barrier": fp / nbar if nbar else 0.0,
                    "values_per_barrier": stored * warps / nbar if nbar and warps else -1.0,
                    "threads_per_block": float(tpb),
                },
                origin_lines=((loop_line,) if loop_line else ()),
                pc=x.pc - c.entry,
            )
        )
    return out


_MMA = frozenset({"HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA", "QMMA", "OMMA"})


def _stores_shared_results(c: _Ctx, body: range) -> bool:
    """A shared store in the loop whose value comes from a shared load in the same loop (``s[t] += s[t + k]``)."""
    inside = set(body)
    for i in body:
        x = c.ins[i]
        if x.mn != "STS" or c.w[i] <= 0:
            continue
        data = [k for k in x.reads if k.startswith("R") and k not in _address_keys(x)]
        r = c.flow.roots(i, data)
        if any(c.ins[j].mn in ("LDS", "LDSM") and j in inside for j in r.loads):
            return True
    return False


def _branches(c: _Ctx) -> list[Construct]:
    """Divergent branches (per-PC ``smsp__branch_targets_threads_divergent``) and where their condition comes from."""
    divergent = [
        (x, c.counter(x.index, "smsp__branch_targets_threads_divergent") or 0.0)
        for x in c.ins
        if x.mn == "BRA" and x.guard is not None
    ]
    divergent = [(x, n) for x, n in divergent if n > 0]
    total = sum(n for _, n in divergent)
    out: list[Construct] = []
    for x, n in divergent:
        assert x.guard is not None
        r = c.flow.roots(x.index, [x.guard])
        kind = kc.BRANCH_ON_DATA if "data" in r.kinds else kc.BRANCH_ON_LANE if "lane" in r.kinds else None
        if kind is None:
            continue
        where = r.loads if kind == kc.BRANCH_ON_DATA else r.lane_uses
        taken = c.counter(x.index, "thread_inst_executed_true")
        cond = _condition_lines(c, c.flow.defs(x.index, x.guard), where)
        ln = c.line_of(x.index)
        out.append(
            Construct(
                kind=kind,
                lines=(ln,) if ln else (),
                executed=n,
                share=n / total if total else 0.0,
                measure="divergent branch targets",
                sass=tuple(f"S2R {sp}" for sp in sorted(r.specials) if kind == kc.BRANCH_ON_LANE)
                + _opcodes(c, [*where, x.index]),
                origin="data" if kind == kc.BRANCH_ON_DATA else "lane",
                origin_lines=cond,
                numbers={
                    "lanes_taking": taken / c.w[x.index] if taken is not None and c.w[x.index] else -1.0,
                    "paths_loop": 1.0 if _loop_inside(c, x) else 0.0,
                },
                pc=x.pc - c.entry,
            )
        )
    return out


def _loop_inside(c: _Ctx, bra: _Ins) -> bool:
    """An executed loop between a divergent branch and the point its paths reconverge (the BSSY target around it,
    else the branch target): the paths are loops, so each one costs many instructions per element."""
    end = bra.target
    for x in reversed(c.ins[: bra.index]):
        if x.mn == "BSSY" and x.target is not None and x.target > bra.pc:
            end = x.target
            break
    if end is None:
        return False
    stop = c.by_pc.get(end, len(c.ins))
    return any(bra.index < top and bottom < stop for top, bottom in c.loops)


_STRONG = ("STRONG", "VOLATILE", "SYS", "MMIO")


def _alias_reloads(c: _Ctx) -> list[Construct]:
    """Loads of an address the loop does not change, inside a loop that stores to global memory: hoisting them was
    ruled out by a possible alias (a load the compiler proved read-only, ``.CONSTANT``, would have been hoisted)."""
    out: list[Construct] = []
    for loop in c.loops:
        body = range(loop[0], loop[1] + 1)
        if not any(c.ins[i].mn in ("STG", "ST", "RED", "REDG", "ATOM", "ATOMG") and c.w[i] > 0 for i in body):
            continue
        written = _body_writes(c, loop)
        loads = [i for i in body if c.ins[i].mn in ("LDG", "LD") and c.w[i] > 0]
        invariant = [
            i
            for i in loads
            if "CONSTANT" not in c.ins[i].mods
            and not any(m in _STRONG for m in c.ins[i].mods)
            and (keys := _address_keys(c.ins[i]))
            and not set(keys) & written
        ]
        if not invariant:
            continue
        all_loads = sum(c.w[i] for i in loads)
        inv = sum(c.w[i] for i in invariant)
        per_line: dict[Line, float] = defaultdict(float)
        for i in invariant:
            if (ln := c.line_of(i)) is not None:
                per_line[ln] += c.w[i]
        trips = c.w[loop[1]]
        addresses = {tuple(_address_keys(c.ins[i])) for i in invariant}
        out.append(
            Construct(
                kind=kc.ALIAS_RELOAD,
                lines=_ranked(per_line),
                executed=inv,
                share=inv / all_loads if all_loads else 0.0,
                measure="executed global loads of addresses the loop does not change",
                sass=_opcodes(c, invariant),
                numbers={
                    "loads_per_trip": all_loads / trips if trips else 0.0,
                    "invariant_per_trip": inv / trips if trips else 0.0,
                    "addresses": float(len(addresses)),
                },
                pc=c.ins[invariant[0]].pc - c.entry,
            )
        )
        break  # the innermost loop with such loads (loops are sorted innermost first)
    return out


_RECOGNISERS = (
    _runtime_division,
    _index64,
    _fp64,
    _half_round_trip,
    _trig_slow_path,
    _local,
    _predicated_loads,
    _atomics_in_loops,
    _sync_in_loops,
    _branches,
    _alias_reloads,
)

_RECENT: dict[int, tuple[KernelLaunch, tuple[Construct, ...]]] = {}


def constructs(k: KernelLaunch) -> tuple[Construct, ...]:
    """Every construct the SASS of ``k`` shows, by idiom (see the module docstring); () without SASS.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, SassLine
    >>> sass = ("LDC R12, c[0x0][0x218]", "IABS R18, R12", "I2F.RP R20, R18", "MUFU.RCP R20, R20",
    ...         "VIADD R3, R20, 0xffffffe", "F2I.FTZ.U32.TRUNC.NTZ R3, R3", "IMAD.HI.U32 R2, R3, R21, R2")
    >>> k = KernelLaunch(id=0, name="k", compute_capability="9.0",
    ...                  sass=tuple(SassLine(pc=16 * i, text=t) for i, t in enumerate(sass)))
    >>> c = constructs(k)[0]
    >>> c.kind, c.origin, c.argument_offset
    ('runtime_division', 'argument', 8)
    """
    hit = _RECENT.get(id(k))
    if hit is not None and hit[0] is k:
        return hit[1]
    if not k.sass or analyze_sass(k.sass).empty:
        return ()
    c = _context(k)
    found = tuple(x for rec in _RECOGNISERS for x in rec(c))
    while len(_RECENT) >= 16:
        _RECENT.pop(next(iter(_RECENT)))
    _RECENT[id(k)] = (k, found)
    return found


_INSTRUCTION_IDIOMS = (kc.RUNTIME_DIVISION, kc.INDEX64, kc.TRIG_SLOW_PATH)
"""Idioms whose cost is executed instructions that their change removes (their share counts executed instructions)."""


def removable_share(k: KernelLaunch) -> float | None:
    """The largest share of the executed instructions one construct's change removes (all the run-time divisions
    together, less the multiply-high, shift and IMAD a constant divisor still costs per quotient; the 64-bit index
    arithmetic; sinf's slow path), when one is at least CONSTRUCT_MIN_SHARE; None otherwise. A fix that changes that
    construct cannot remove more instructions than these."""
    found = [x for x in constructs(k) if x.kind in _INSTRUCTION_IDIOMS and x.share >= th.CONSTRUCT_MIN_SHARE]
    if not found:
        return None
    by_kind: dict[str, float] = defaultdict(float)
    for x in found:
        share = x.share
        if x.kind == kc.RUNTIME_DIVISION and x.executed:
            # a constant divisor still costs a multiply-high, a shift and an IMAD per quotient
            kept = kc.CONSTANT_QUOTIENT_INSTRUCTIONS * x.numbers.get("quotients", 0.0)
            share *= max(0.0, x.executed - kept) / x.executed
        by_kind[x.kind] += share
    return min(1.0, max(by_kind.values()))


def of_kind(found: Iterable[Construct], *kinds: str) -> list[Construct]:
    """The constructs of the given idioms, largest share first."""
    return sorted((x for x in found if x.kind in kinds), key=lambda x: -x.share)


__all__ = ["Construct", "constructs", "of_kind", "removable_share"]
