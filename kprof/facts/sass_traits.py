"""Two facts of a kernel's executed SASS that decide what its fix is, read the same way by the rules and the fix
writers: FP32 data computed in FP64 (:func:`fp64_promotion`), and a matrix-multiply k-loop whose operand loads are
synchronous (:func:`synchronous_mma_loop`).

Both read the per-PC ``inst_executed`` counts when the report has them (an instruction that never ran is not the
kernel's behaviour), the listing otherwise. Neither looks at a name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kprof.diagnose.sass import access_bytes, is_mma
from kprof.kernel_model import SassLine

_FLOAT_TYPES = ("F64", "F32", "F16", "BF16")
FP64_ARITH = frozenset({"DFMA", "DADD", "DMUL", "DSETP", "DMNMX"})
"""FP64-pipe arithmetic (the DMMA tensor instruction is matrix work, not this)."""
_MUFU_64 = re.compile(r"^MUFU\.\w+64H\b")
"""``MUFU.RCP64H`` / ``MUFU.RSQ64H``: the seed of an FP64 reciprocal or square root (FP64 division and sqrt)."""
GLOBAL_DATA = frozenset({"LDG", "STG", "LD", "ST"})
ASYNC_COPIES = frozenset({"LDGSTS", "UTMALDG", "UBLKCP"})
"""Global -> shared copies that do not pass through registers: cp.async (LDGSTS, sm_80+), TMA (UTMALDG,
cp.async.bulk.tensor) and bulk copies (UBLKCP, sm_90+). A k-loop fed by them can load the next tiles while the
current ones multiply; one fed by LDG + STS cannot."""
_BRA_TARGET = re.compile(r"0x([0-9a-fA-F]+)\s*;?\s*$")


def _n(s: SassLine, weighted: bool) -> float:
    """Executions of ``s`` (per-PC ``inst_executed``), or 1 for a listing without counts."""
    if not weighted:
        return 1.0
    return float(s.counters.get("inst_executed", 0.0) or 0.0)


def _weighted(lines: Sequence[SassLine]) -> bool:
    return any("inst_executed" in s.counters for s in lines)


def _conversion(opcode: str) -> tuple[str, str] | None:
    """(destination, source) float types of an ``F2F`` opcode (``F2F.F64.F32`` -> ("F64", "F32")), else None."""
    parts = opcode.split(".")
    if parts[0] != "F2F":
        return None
    types = [p for p in parts[1:] if p in _FLOAT_TYPES]
    return (types[0], types[1]) if len(types) >= 2 else None


def is_fp64_op(s: SassLine) -> bool:
    """FP64-pipe arithmetic, an FP64 reciprocal/rsqrt seed, or a conversion to or from FP64."""
    if s.mnemonic in FP64_ARITH or _MUFU_64.match(s.opcode):
        return True
    conv = _conversion(s.opcode)
    return conv is not None and "F64" in conv


@dataclass(frozen=True, slots=True)
class Fp64Promotion:
    """FP32 data computed in FP64: what the SASS shows of it (executed warp instructions)."""

    widen: float
    """Executed F2F.F64.F32 (FP32 value -> FP64)."""
    narrow: float
    """Executed F2F.F32.F64 (FP64 result -> FP32)."""
    fp64_ops: float
    """Executed FP64 instructions (DFMA/DADD/DMUL/DSETP/DMNMX, MUFU.*64H, the conversions)."""
    executed: float
    """All executed warp instructions."""
    lines: tuple[tuple[str, int], ...]
    """The source lines (file, line) that execute FP64 instructions, most first; () without line info."""
    ops: tuple[tuple[str, float], ...] = ()
    """The executed FP64 instructions by opcode (``F2F.F64.F32``, ``DADD``, ``MUFU.RCP64H``), most first."""

    @property
    def fp64_share(self) -> float:
        """FP64 instructions among the executed ones."""
        return self.fp64_ops / self.executed if self.executed else 0.0


def fp64_promotion(lines: Sequence[SassLine]) -> Fp64Promotion | None:
    """FP32 data computed in FP64, or None.

    The SASS signature: the kernel's global loads and stores all move 32-bit (or narrower) values, it widens them to
    FP64 (``F2F.F64.F32``), runs FP64 arithmetic, and narrows the results back (``F2F.F32.F64``): a double constant
    or variable (``const double beta``, an unsuffixed ``1.0`` next to a float in some contexts) or a double-precision
    function (``exp``, ``log1p``, ``tanh`` on a double) promoted an FP32 expression. Both directions must execute,
    at separate instructions (a single conversion is a deliberate FP64 step, e.g. a double accumulator, not a
    promoted expression), and no global access may be 64-bit or wider (a kernel that loads or stores doubles is an
    FP64 kernel, and a vectorised 8- or 16-byte access cannot be told from one).
    """
    if not lines:
        return None
    weighted = _weighted(lines)
    widen = narrow = fp64 = total = 0.0
    widen_pcs = narrow_pcs = 0
    loads = 0.0
    per_line: dict[tuple[str, int], float] = {}
    by_op: dict[str, float] = {}
    for s in lines:
        n = _n(s, weighted)
        total += n
        if n <= 0:
            continue
        if s.mnemonic in GLOBAL_DATA:
            if access_bytes(s.opcode) > 4:
                return None
            if s.mnemonic in ("LDG", "LD"):
                loads += n
        conv = _conversion(s.opcode)
        if conv is not None and conv[0] == "F64" and conv[1] != "F64":
            widen += n
            widen_pcs += 1
        elif conv is not None and conv[1] == "F64" and conv[0] != "F64":
            narrow += n
            narrow_pcs += 1
        if is_fp64_op(s):
            fp64 += n
            op = (
                f"F2F.{conv[0]}.{conv[1]}"
                if conv is not None
                else s.opcode.split()[0]
                if s.mnemonic == "MUFU"
                else s.mnemonic
            )
            by_op[op] = by_op.get(op, 0.0) + n
            if s.file and s.line:
                per_line[(s.file, s.line)] = per_line.get((s.file, s.line), 0.0) + n
    arith = any((s.mnemonic in FP64_ARITH or _MUFU_64.match(s.opcode)) and _n(s, weighted) > 0 for s in lines)
    if not (widen_pcs and narrow_pcs and arith and loads > 0):
        return None
    ranked = tuple(sorted(per_line, key=lambda key: -per_line[key]))
    ops = tuple(sorted(by_op.items(), key=lambda kv: -kv[1]))
    return Fp64Promotion(widen=widen, narrow=narrow, fp64_ops=fp64, executed=total, lines=ranked, ops=ops)


@dataclass(frozen=True, slots=True)
class SyncMmaLoop:
    """A loop that issues MMA instructions and loads its operands from global memory synchronously."""

    mma: float
    """Executed MMA instructions inside the loop."""
    loads: float
    """Executed global loads (LDG/LD) inside the loop."""
    shared_stores: float
    """Executed shared stores (STS) inside the loop: the loaded tiles staged through registers."""


def synchronous_mma_loop(lines: Sequence[SassLine]) -> SyncMmaLoop | None:
    """A k-loop of matrix instructions fed by synchronous global loads, or None.

    The signature: a backward branch (the loop) whose body issues MMA instructions (HMMA/HGMMA/IMMA/...) and global
    loads (LDG), while no asynchronous copy (LDGSTS, UTMALDG, UBLKCP) executes anywhere in the kernel. Each
    iteration then loads its tiles into registers, stores them to shared memory, waits at a barrier and only then
    multiplies: the load latency is paid in full every iteration, and nothing is in flight during the MMAs (what
    Triton compiles for num_stages=1; a hand-written loop without cp.async or TMA). With cp.async or TMA, the next
    stages' tiles load while the current one multiplies.
    """
    if not lines:
        return None
    weighted = _weighted(lines)
    if any(s.mnemonic in ASYNC_COPIES and _n(s, weighted) > 0 for s in lines):
        return None
    best: SyncMmaLoop | None = None
    for s in lines:
        if s.mnemonic != "BRA" or _n(s, weighted) <= 0:
            continue
        hit = _BRA_TARGET.search(s.text)
        if hit is None:
            continue
        target = int(hit.group(1), 16)
        if target >= s.pc:
            continue
        body = [x for x in lines if target <= x.pc <= s.pc]
        mma = sum(_n(x, weighted) for x in body if is_mma(x.mnemonic))
        loads = sum(_n(x, weighted) for x in body if x.mnemonic in ("LDG", "LD"))
        sts = sum(_n(x, weighted) for x in body if x.mnemonic == "STS")
        if mma > 0 and loads > 0 and (best is None or mma > best.mma):
            best = SyncMmaLoop(mma=mma, loads=loads, shared_stores=sts)
    return best


__all__ = [
    "ASYNC_COPIES",
    "FP64_ARITH",
    "Fp64Promotion",
    "SyncMmaLoop",
    "fp64_promotion",
    "is_fp64_op",
    "synchronous_mma_loop",
]
