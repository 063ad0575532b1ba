"""Repeated passes over the same data: two loops of a kernel that load from the same addresses (a two-pass
normalisation that reads its row once for a statistic and once more to scale it).

:func:`repeated_pass` walks the SASS listing once, in address order, and evaluates every integer register as an
affine form of the kernel's parameters (``c[0x0][...]``), the block index and the thread index (``SR_CTAID``,
``SR_TID``), e.g. ``x + 0x10000 * ctaid.x + 16 * tid.x``. The form a load's address has at its loop's first
iteration says where that loop starts reading; two loads in two disjoint loops with the same form read the same
addresses (the same base pointer, the same row of this block, the same lane), so the later loop reads again what
the earlier one read. Anything the walk cannot follow (a value loaded from memory, a product of two non-constants,
a predicated write, a register a loop changes) is unknown and never matches: the analysis finds a repeated pass only
where the listing proves one.

Bytes come from the per-PC source counters (``thread_inst_executed_true`` x the access width, else ``inst_executed``
x 32 lanes x the width), so the analysis needs executed counts (SourceCounters); a static listing gives None.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kprof.diagnose.sass import GLOBAL_LOADS, access_bytes
from kprof.kernel_model import SassLine

Form = tuple[tuple[tuple[str, int], ...], int]
"""An affine form: ((symbol, coefficient), ...) sorted by symbol, and a constant."""

_CONST_BANK = re.compile(r"^c\[0x0\]\[(0x[0-9a-fA-F]+)\]$")
_IMM = re.compile(r"^-?(0x[0-9a-fA-F]+|\d+)$")
_SPECIAL = {
    "SR_TID.X": "tid.x",
    "SR_TID.Y": "tid.y",
    "SR_TID.Z": "tid.z",
    "SR_CTAID.X": "ctaid.x",
    "SR_CTAID.Y": "ctaid.y",
    "SR_CTAID.Z": "ctaid.z",
}
_BLOCK = ("ctaid.x", "ctaid.y", "ctaid.z")
_BACKWARD = frozenset({"BRA", "JMP"})


def _form(terms: dict[str, int], const: int) -> Form:
    return tuple(sorted((s, c) for s, c in terms.items() if c)), const


def _add(a: Form | None, b: Form | None, sign: int = 1) -> Form | None:
    if a is None or b is None:
        return None
    terms = dict(a[0])
    for s, c in b[0]:
        terms[s] = terms.get(s, 0) + sign * c
    return _form(terms, a[1] + sign * b[1])


def _scale(a: Form | None, k: int) -> Form | None:
    if a is None:
        return None
    return _form({s: c * k for s, c in a[0]}, a[1] * k)


def _const_of(a: Form | None) -> int | None:
    return a[1] if a is not None and not a[0] else None


def _mul(a: Form | None, b: Form | None) -> Form | None:
    ka, kb = _const_of(a), _const_of(b)
    if ka is not None:
        return _scale(b, ka)
    if kb is not None:
        return _scale(a, kb)
    return None  # a product of two non-constants is not affine


@dataclass(frozen=True, slots=True)
class _Load:
    pc: int
    loop: tuple[int, int] | None
    form: Form | None
    bytes: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RepeatedPass:
    """A loop that reads again the addresses an earlier loop of the same block read."""

    base: str
    """The kernel parameter the addresses derive from (``c[0x0][0x210]``)."""
    first_pcs: tuple[int, ...]
    again_pcs: tuple[int, ...]
    first_lines: tuple[tuple[str, int], ...]
    """Source (file, line) of the first pass's loads, when the listing has line info."""
    again_lines: tuple[tuple[str, int], ...]
    one_pass_bytes: float
    """Bytes the first loop reads from that base (the data itself, once)."""
    repeated_bytes: float
    """Bytes the later loop reads again from the same addresses."""
    per_block_bytes: float
    """Bytes read once by every loop of the kernel from addresses that differ between blocks (each block's own
    data: the compulsory reads), the repeated pass counted once."""


def _value(op: str, regs: dict[str, Form | None]) -> Form | None:
    """An operand's affine form: a register, an immediate, a constant-bank parameter, RZ."""
    neg = op.startswith("-")
    op = op.lstrip("-|!~")
    if op in ("RZ", "URZ"):
        return _form({}, 0)
    m = _CONST_BANK.match(op)
    if m:
        out: Form | None = _form({f"c[0x0][{m.group(1)}]": 1}, 0)
    elif _IMM.match(op):
        out = _form({}, int(op, 0))
    elif re.match(r"^U?R\d+$", op):
        out = regs.get(op)
    else:
        return None
    return _scale(out, -1) if neg and out is not None else out


def _operands(text: str) -> tuple[bool, str, list[str]]:
    """(predicated, opcode, operands) of one instruction, predicate operands (P0, PT, !P1) dropped."""
    parts = text.strip().rstrip(";").split(None, 1)
    pred = bool(parts) and parts[0].startswith("@")
    if pred:
        parts = parts[1].split(None, 1) if len(parts) > 1 else []
    if not parts:
        return pred, "", []
    ops = [o.strip() for o in parts[1].split(",")] if len(parts) > 1 else []
    return pred, parts[0], ops


def _is_pred(op: str) -> bool:
    return bool(re.match(r"^!?U?P(\d+|T)$", op))


def _address(ops: list[str], regs: dict[str, Form | None]) -> Form | None:
    """The address of a load's memory operand ``[R6.64+-0x1000]`` (``desc[UR4]`` is the memory descriptor)."""
    mem = next((o for o in ops if "[" in o and not o.startswith("c[")), None)
    if mem is None:
        return None
    inner = re.findall(r"\[([^\]]*)\]", mem)
    if not inner:
        return None
    expr = inner[-1].replace(" ", "").replace("+-", "-")
    total: Form | None = _form({}, 0)
    for sign, term in re.findall(r"([+-]?)([^+-]+)", expr):
        term = term.removesuffix(".64").removesuffix(".U32")
        v = _value(term, regs)
        total = _add(total, v, -1 if sign == "-" else 1)
    return total


def _executed(s: SassLine) -> float | None:
    v = s.counters.get("inst_executed")
    return None if v is None else float(v)


def _assign(
    mn: str, opcode: str, ops: list[str], regs: dict[str, Form | None]
) -> tuple[str | None, Form | None]:
    """(destination register, its new form) of one unpredicated instruction; form None when not affine."""
    dest = ops[0] if ops and re.match(r"^U?R\d+$", ops[0]) else None
    if dest is None:
        return None, None
    src = [o for o in ops[1:] if not _is_pred(o)]
    mods = opcode.split(".")[1:]
    base = mn[1:] if mn.startswith("U") and mn not in ("UMOV",) else mn
    if mn == "S2R" or mn == "S2UR":
        name = _SPECIAL.get(src[0]) if src else None
        return dest, (_form({name: 1}, 0) if name else None)
    if mn in ("LDC", "ULDC") and src:
        return dest, _value(src[0], regs) if _CONST_BANK.match(src[0]) else None
    if mn in ("MOV", "UMOV") and src:
        return dest, _value(src[0], regs)
    if "HI" in mods or "X" in mods:
        return dest, None  # the high half of a 64-bit value
    if base == "IMAD" and len(src) >= 3 and not ({"SHL", "IADD"} & set(mods)):
        return dest, _add(_mul(_value(src[0], regs), _value(src[1], regs)), _value(src[2], regs))
    if base == "IADD3" and len(src) >= 3:
        total: Form | None = _form({}, 0)
        for o in src[:3]:
            total = _add(total, _value(o, regs))
        return dest, total
    if base in ("IADD", "VIADD") and len(src) >= 2:
        return dest, _add(_value(src[0], regs), _value(src[1], regs))
    if base == "LEA" and len(src) >= 3:
        shift = _const_of(_value(src[2], regs))
        if shift is None or not 0 <= shift < 32:
            return dest, None
        return dest, _add(_scale(_value(src[0], regs), 1 << shift), _value(src[1], regs))
    if base == "SHF" and "L" in mods and "U32" in mods and len(src) >= 2:
        shift = _const_of(_value(src[1], regs))
        return dest, (
            _scale(_value(src[0], regs), 1 << shift) if shift is not None and 0 <= shift < 32 else None
        )
    return dest, None


_NO_DEST = frozenset(
    {
        "ST",
        "STG",
        "STS",
        "STL",
        "RED",
        "REDG",
        "BRA",
        "JMP",
        "EXIT",
        "RET",
        "BAR",
        "BSSY",
        "BSYNC",
        "WARPSYNC",
        "NOP",
        "MEMBAR",
        "DEPBAR",
        "FENCE",
        "CCTL",
        "YIELD",
        "CALL",
        "BREAK",
        "ERRBAR",
    }
)
_SECOND_IS_DEST = frozenset({"SHFL", "VOTE"})
_LOADS = frozenset({"LDG", "LD", "LDS", "LDSM", "LDL", "LDC", "ULDC", "ATOM", "ATOMG", "ATOMS"})


def _written(mn: str, opcode: str, ops: list[str]) -> list[str]:
    """The registers an instruction writes, first the one its result's low half goes to."""
    if mn in _NO_DEST or not ops:
        return []
    if mn in _SECOND_IS_DEST:
        regs = [o for o in ops[:2] if re.match(r"^U?R\d+$", o)]
    else:
        regs = [ops[0]] if re.match(r"^U?R\d+$", ops[0]) else []
    if not regs:
        return []
    first = regs[0]
    if first in ("RZ", "URZ"):
        return []
    m = re.match(r"^(U?R)(\d+)$", first)
    assert m is not None
    mods = opcode.split(".")[1:]
    n = 1
    if mn in _LOADS:
        n = max(1, access_bytes(opcode) // 4)
    elif "WIDE" in mods or "64" in mods or (mn.startswith("D") and mn[1:4] in ("ADD", "MUL", "FMA")):
        n = 2
    return [f"{m.group(1)}{int(m.group(2)) + i}" for i in range(n)]


def _loops(lines: Sequence[SassLine]) -> list[tuple[int, int]]:
    """(top, bottom) PCs of each backward branch's loop."""
    out = []
    for s in lines:
        if s.mnemonic in _BACKWARD:
            m = re.search(r"(0x[0-9a-fA-F]+)\s*$", s.text.strip().rstrip(";"))
            if m and int(m.group(1), 16) <= s.pc:
                out.append((int(m.group(1), 16), s.pc))
    return out


def _innermost(loops: list[tuple[int, int]], pc: int) -> tuple[int, int] | None:
    inside = [lp for lp in loops if lp[0] <= pc <= lp[1]]
    return min(inside, key=lambda lp: lp[1] - lp[0]) if inside else None


def _walk(lines: Sequence[SassLine]) -> list[_Load]:
    """The global loads, each with its innermost loop and its address form at that loop's first iteration."""
    loops = _loops(lines)
    regs: dict[str, Form | None] = {}
    written: dict[tuple[int, int], set[str]] = {lp: set() for lp in loops}
    out: list[_Load] = []
    open_loops = sorted(loops, key=lambda lp: lp[1])
    for s in lines:
        while open_loops and open_loops[0][1] < s.pc:
            for r in written[open_loops.pop(0)]:
                regs[r] = None  # after the loop, a register the loop changes depends on the trip count
        executed = _executed(s)
        if executed is not None and executed <= 0:
            continue  # never ran: its writes did not happen on the path the counters saw
        pred, opcode, ops = _operands(s.text)
        mn = opcode.split(".", 1)[0]
        if mn in GLOBAL_LOADS:
            threads = s.counters.get("thread_inst_executed_true")
            n = float(threads) if threads is not None else (executed or 0.0) * 32.0
            out.append(_Load(s.pc, _innermost(loops, s.pc), _address(ops, regs), n * access_bytes(opcode)))
        dest, value = _assign(mn, opcode, ops, regs) if ops else (None, None)
        targets = _written(mn, opcode, ops)
        if dest is not None and targets and targets[0] != dest:
            value = None
        for i, t in enumerate(targets):
            regs[t] = value if (i == 0 and not pred) else None
            for lp in loops:
                if lp[0] <= s.pc <= lp[1]:
                    written[lp].add(t)
    return out


def _base(form: Form) -> str | None:
    params = [s for s, _ in form[0] if s.startswith("c[")]
    return params[0] if len(params) == 1 else None


def _family(form: Form) -> tuple[tuple[str, int], ...]:
    return form[0]


def repeated_pass(lines: Sequence[SassLine], blocks: int | None = None) -> RepeatedPass | None:
    """The largest repeated pass in the listing (see the module docstring), or None.

    Two loads match when they sit in two disjoint loops and their addresses at those loops' first iteration are the
    same affine form of one kernel parameter, the block index and the thread index. The family of a matched load
    (the same parameter, block and thread terms, any constant offset: the unrolled copies of one loop's load) gives
    the bytes of each pass. ``blocks`` (the grid's block count) sizes the data every block reads alike (a weight
    vector): once, one block's share.

    Examples
    --------
    >>> repeated_pass([]) is None
    True
    """
    hit = _CACHE.get((id(lines), blocks))
    if hit is not None and hit[0] is lines:
        return hit[1]
    result = _repeated_pass(lines, blocks)
    if isinstance(lines, tuple):
        while len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[(id(lines), blocks)] = (lines, result)
    return result


_CACHE: dict[tuple[int, int | None], tuple[Sequence[SassLine], RepeatedPass | None]] = {}
_CACHE_SIZE = 64
"""The last listings walked (the rules ask several times per launch); an entry holds its listing, so its id is not
reused while it is cached."""


def _repeated_pass(lines: Sequence[SassLine], blocks: int | None) -> RepeatedPass | None:
    if not lines or not any(_executed(s) is not None for s in lines):
        return None
    loads = [ld for ld in _walk(lines) if ld.form is not None and ld.bytes > 0]
    by_loop: dict[tuple[int, int] | None, list[_Load]] = {}
    for ld in loads:
        by_loop.setdefault(ld.loop, []).append(ld)
    best: RepeatedPass | None = None
    loops = [lp for lp in by_loop if lp is not None]
    pc_line = {s.pc: (s.file, s.line) for s in lines}
    for i, a in enumerate(loops):
        for b in loops[i + 1 :]:
            if not (a[1] < b[0] or b[1] < a[0]):
                continue  # nested or overlapping: the same pass
            first, again = (a, b) if a[1] < b[0] else (b, a)
            forms_first = {ld.form for ld in by_loop[first]}
            for ld in by_loop[again]:
                f = ld.form
                if f is None or f not in forms_first:
                    continue
                base = _base(f)
                if base is None or not any(s in _BLOCK for s, _ in f[0]):
                    continue  # not one pointer, or the same addresses for every block (a shared table, cached)
                fam = _family(f)
                one = [x for x in by_loop[first] if x.form is not None and _family(x.form) == fam]
                two = [x for x in by_loop[again] if x.form is not None and _family(x.form) == fam]
                b1, b2 = sum(x.bytes for x in one), sum(x.bytes for x in two)
                rep = min(b1, b2)
                if best is not None and rep <= best.repeated_bytes:
                    continue
                best = RepeatedPass(
                    base=base,
                    first_pcs=tuple(x.pc for x in one),
                    again_pcs=tuple(x.pc for x in two),
                    first_lines=_lines_of(one, pc_line),
                    again_lines=_lines_of(two, pc_line),
                    one_pass_bytes=b1,
                    repeated_bytes=rep,
                    per_block_bytes=_per_block_bytes(loads, rep, blocks),
                )
    return best


def _lines_of(
    loads: list[_Load], pc_line: dict[int, tuple[str | None, int | None]]
) -> tuple[tuple[str, int], ...]:
    seen: list[tuple[str, int]] = []
    for ld in loads:
        f, n = pc_line.get(ld.pc, (None, None))
        if f and n and (f, n) not in seen:
            seen.append((f, n))
    return tuple(seen)


def _per_block_bytes(loads: list[_Load], repeated: float, blocks: int | None) -> float:
    """The bytes a single pass must read: every load whose address depends on the block index (each block's own
    data), the repeated pass taken out once, plus one block's share of the loads every block makes alike (a table
    all blocks read: its footprint is at most what one block reads)."""
    own = shared = 0.0
    for ld in loads:
        if ld.form is not None and any(s in _BLOCK for s, _ in ld.form[0]):
            own += ld.bytes
        else:
            shared += ld.bytes
    return max(0.0, own - repeated) + (shared / blocks if blocks else 0.0)
