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
GLOBAL_LOADS = frozenset({"LDG"})
GLOBAL_STORES = frozenset({"STG"})
SHARED_LOADS = frozenset({"LDS"})
SHARED_STORES = frozenset({"STS"})
GLOBAL_ATOMICS = frozenset({"ATOM", "ATOMG", "RED", "REDG"})
SHARED_ATOMICS = frozenset({"ATOMS"})
ASYNC_COPY = frozenset({"LDGSTS", "UTMALDG", "UTMASTG", "UBLKCP", "UTMAPF", "UBLKPF"})
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

    Examples
    --------
    >>> access_bytes("LDG.E.128.CONSTANT"), access_bytes("STS.64"), access_bytes("LDG.E")
    (16, 8, 4)
    """
    mods = set(opcode.split(".")[1:])
    if "128" in mods:
        return 16
    if "64" in mods:
        return 8
    if mods & {"U8", "S8"}:
        return 1
    if mods & {"U16", "S16"}:
        return 2
    return 4


def is_mma(mnemonic: str) -> bool:
    """True for a tensor-core matrix instruction of any generation."""
    return mnemonic in MMA_MNEMONICS or bool(_UTC_MMA.match(mnemonic))


def _local_address_is_dynamic(text: str) -> bool:
    m = _ADDRESS.search(text)
    if not m:
        return False
    regs = re.findall(r"\bR\d+\b", m.group(1))
    return any(r != _STACK_POINTER for r in regs)


def _weight(line: SassLine) -> tuple[float, bool]:
    for name in INST_EXECUTED_COUNTERS:
        v = line.counters.get(name)
        if v is not None:
            return float(v), True
    return 1.0, False


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
    # Weighted when the report holds per-PC executed counts; PCs without a count (padding after EXIT,
    # code never reached) then weigh 0.
    weighted = any(_weight(s)[1] for s in lines)
    by: dict[str, float] = defaultdict(float)
    total = 0.0
    acc: dict[str, float] = defaultdict(float)
    width_sum: dict[str, float] = defaultdict(float)
    dynamic_local = False
    local_lines: set[tuple[str, int]] = set()
    for s in lines:
        w, has = _weight(s)
        if not weighted:
            w = 1.0
        elif not has:
            w = 0.0
        mn = s.mnemonic
        if not mn:
            continue
        by[mn] += w
        total += w
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
            dynamic_local = dynamic_local or _local_address_is_dynamic(s.text)
            if s.file and s.line:
                local_lines.add((s.file, s.line))
        elif mn in GLOBAL_LOADS or mn in GLOBAL_STORES or mn in SHARED_LOADS or mn in SHARED_STORES:
            key = (
                "gld"
                if mn in GLOBAL_LOADS
                else "gst"
                if mn in GLOBAL_STORES
                else "sld"
                if mn in SHARED_LOADS
                else "sst"
            )
            acc[key] += w
            width_sum[key] += w * access_bytes(s.opcode)
        elif mn in GLOBAL_ATOMICS:
            acc["gatom"] += w
        elif mn in SHARED_ATOMICS:
            acc["satom"] += w
        elif mn in ASYNC_COPY:
            acc["async"] += w

    def width(key: str) -> float | None:
        return width_sum[key] / acc[key] if acc.get(key) else None

    local = acc.get("ldl", 0.0) + acc.get("stl", 0.0)
    return SassSummary(
        instructions=total,
        by_mnemonic=dict(by),
        weighted=weighted,
        mma=acc.get("mma", 0.0),
        fp32=acc.get("fp32", 0.0),
        ffma=acc.get("ffma", 0.0),
        fp16=acc.get("fp16", 0.0),
        fp64=acc.get("fp64", 0.0),
        special_function=acc.get("sfu", 0.0),
        local_loads=acc.get("ldl", 0.0),
        local_stores=acc.get("stl", 0.0),
        local_kind=None if not local else ("dynamic_index" if dynamic_local else "register_spill"),
        local_lines=tuple(sorted(local_lines)),
        global_loads=acc.get("gld", 0.0),
        global_stores=acc.get("gst", 0.0),
        global_load_bytes_per_thread=width("gld"),
        global_store_bytes_per_thread=width("gst"),
        shared_loads=acc.get("sld", 0.0),
        shared_stores=acc.get("sst", 0.0),
        shared_load_bytes_per_thread=width("sld"),
        shared_store_bytes_per_thread=width("sst"),
        global_atomics=acc.get("gatom", 0.0),
        shared_atomics=acc.get("satom", 0.0),
        async_copies=acc.get("async", 0.0),
    )


__all__ = ["SassSummary", "access_bytes", "analyze_sass", "is_mma"]
