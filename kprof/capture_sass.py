"""The no-counters mode: what the SASS in a binary says, when no performance counter can be read.

On a machine where ``ncu`` fails with ``ERR_NVGPUCTRPERM`` (a container without
``SYS_ADMIN``, a host with ``NVreg_RestrictProfilingToAdminUsers=1``), the timeline still
says *whether* kernels are the problem, and the compiled SASS still says *what the compiler
emitted*: local-memory instructions (spills or a dynamically indexed array), whether matrix
work reached the tensor cores (HMMA/HGMMA/IMMA), whether async copies (LDGSTS/UTMALDG) were
used, how much of the code is FP32 FMA.

It cannot say how often any instruction ran or what it cost: a spill on a cold path costs
nothing, and an FFMA-heavy listing may be a kernel limited by memory. Every diagnosis made here
is therefore ``inconclusive``, its confidence is capped at :data:`STATIC_CONFIDENCE_CAP`, and
its ``next_step`` names the ncu capture that would settle it.

The disassembly comes from ``cuobjdump --dump-sass --dump-resource-usage`` (executables,
shared libraries, object files, cubins, fatbins) or ``nvdisasm`` (cubins only). The opcode
classification is :func:`kprof.diagnose.sass.analyze_sass`, the same one the kernel stage uses
on ncu's SASS.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kprof import commands
from kprof import thresholds as th
from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.kernel_model import SassLine
from kprof.model import Confidence, Diagnosis, Verdict

if TYPE_CHECKING:
    from kprof.facts.static import StaticKernel

# ----------------------------------------------------------------------------- thresholds
# The judgement thresholds and confidences are in kprof/thresholds.py (STATIC_*); the rules that read them are
# kprof.rules.kernel.local.static_local_memory and kprof.rules.kernel.matrix.static_no_tensor_cores.
STATIC_CONFIDENCE_CAP = th.STATIC_CONFIDENCE_CAP
"""Highest confidence a static diagnosis gets (:data:`kprof.thresholds.STATIC_CONFIDENCE_CAP`)."""

TOOL_TIMEOUT_S = 600
"""A disassembly of a large library (libtorch_cuda.so) can take minutes."""

# ----------------------------------------------------------------------------- parsing
# "        /*0040*/                   LDG.E R2, desc[UR4][R2.64] ;      /* 0x...*/"
# newer cuobjdump also prints scheduling notes before the ';' ("&wr=0x0 ?trans1;").
_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*)$")
_SCHED_NOTE = re.compile(r"\s+(?:&\w+=\S+|\?\w+)")
_SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")  # cuobjdump --dump-sass
_RES_FUNCTION = re.compile(r"^\s*Function\s+([^\s:]+)\s*:\s*$")  # cuobjdump --dump-resource-usage
_RES_FIELD = re.compile(r"\b(REG|STACK|SHARED|LOCAL|TEXTURE|SURFACE|SAMPLER):(\d+)")
_END_FUNCTION = re.compile(r"^\s*\.{5,}\s*$")
_ARCH = re.compile(r"^\s*(?:arch\s*=\s*|code for\s+)(sm_\w+)")
_NVDISASM_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^\s,]+)")
_NVDISASM_HEADER = re.compile(r"^\s*//-+\s+\.text\.(\S+)\s+-+")


@dataclass(frozen=True, slots=True, kw_only=True)
class SassFunction:
    """One kernel's SASS as disassembled from a binary."""

    name: str
    """The symbol (mangled for C++ kernels, e.g. ``_Z16per_thread_tablePKiPKfPfl``)."""
    arch: str | None = None
    lines: tuple[SassLine, ...] = ()
    resources: dict[str, int] = field(default_factory=dict)
    """``REG``, ``STACK``, ``SHARED``, ``LOCAL`` ... from ``--dump-resource-usage``; empty if unknown."""

    @property
    def registers(self) -> int | None:
        return self.resources.get("REG")

    @property
    def stack_bytes(self) -> int | None:
        return self.resources.get("STACK")


def _instruction_text(rest: str) -> str:
    text = rest.split(";", 1)[0]
    text = _SCHED_NOTE.sub("", text)
    return " ".join(text.split())


def parse_cuobjdump(text: str) -> list[SassFunction]:
    """Functions of ``cuobjdump --dump-sass [--dump-resource-usage]`` output, in order of appearance.

    Examples
    --------
    >>> out = '''
    ...  Function _Z1kPf:
    ...   REG:40 STACK:256 SHARED:0 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0
    ... \\t\\tFunction : _Z1kPf
    ...         /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */
    ...         /*0010*/                   STL [R1+0x4], R2 &wr=0x0 ?trans1; /* 0x0 */
    ... \\t\\t..........
    ... '''
    >>> f = parse_cuobjdump(out)[0]
    >>> f.name, f.registers, f.stack_bytes, [s.text for s in f.lines]
    ('_Z1kPf', 40, 256, ['LDC R1, c[0x0][0x28]', 'STL [R1+0x4], R2'])
    """
    resources: dict[str, dict[str, int]] = {}
    order: list[tuple[str, str | None, list[SassLine]]] = []
    arch: str | None = None
    res_for: str | None = None
    current: list[SassLine] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if current is not None:
            if _END_FUNCTION.match(line):
                current = None
                continue
            m = _INSTR.match(line)
            if m:
                instr = _instruction_text(m.group(2))
                if instr:
                    current.append(SassLine(pc=int(m.group(1), 16), text=instr))
                continue
            m = _SASS_FUNCTION.match(line)
            if m:  # a new function without the dotted terminator
                current = []
                order.append((m.group(1), arch, current))
            continue
        m = _ARCH.match(line)
        if m:
            arch = m.group(1)
            continue
        m = _SASS_FUNCTION.match(line)
        if m:
            current = []
            order.append((m.group(1), arch, current))
            res_for = None
            continue
        m = _RES_FUNCTION.match(line)
        if m:
            res_for = m.group(1)
            continue
        if res_for is not None and "REG:" in line:
            resources[res_for] = {k: int(v) for k, v in _RES_FIELD.findall(line)}
            res_for = None
    out = [
        SassFunction(name=n, arch=a, lines=tuple(ls), resources=resources.get(n, {})) for n, a, ls in order
    ]
    # functions that appear only in the resource table (no --dump-sass) are still reported
    seen = {f.name for f in out}
    out += [SassFunction(name=n, resources=r) for n, r in resources.items() if n not in seen]
    return out


def parse_nvdisasm(text: str) -> list[SassFunction]:
    """Functions of ``nvdisasm`` output (one ``.text.NAME`` section per kernel).

    Examples
    --------
    >>> out = '''
    ...         .section        .text._Z1kPf,"ax",@progbits
    ... _Z1kPf:
    ...         /*0000*/                   LDC R1, c[0x0][0x28] ;
    ...         /*0010*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;
    ... '''
    >>> f = parse_nvdisasm(out)[0]
    >>> f.name, [s.mnemonic for s in f.lines]
    ('_Z1kPf', ['LDC', 'HGMMA'])
    """
    order: list[tuple[str, list[SassLine]]] = []
    by_name: dict[str, list[SassLine]] = {}
    current: list[SassLine] | None = None
    for raw in text.splitlines():
        m = _NVDISASM_SECTION.match(raw) or _NVDISASM_HEADER.match(raw)
        if m:
            name = m.group(1)
            if name not in by_name:
                by_name[name] = []
                order.append((name, by_name[name]))
            current = by_name[name]
            continue
        m = _INSTR.match(raw)
        if m and current is not None:
            instr = _instruction_text(m.group(2))
            if instr:
                current.append(SassLine(pc=int(m.group(1), 16), text=instr))
    return [SassFunction(name=n, lines=tuple(ls)) for n, ls in order if ls]


# ----------------------------------------------------------------------------- running the tools
def cuobjdump_argv(binary: str | os.PathLike[str], tool: str = "cuobjdump") -> list[str]:
    """``cuobjdump --dump-sass --dump-resource-usage BINARY``.

    Examples
    --------
    >>> cuobjdump_argv("app")
    ['cuobjdump', '--dump-sass', '--dump-resource-usage', 'app']
    """
    return [tool, "--dump-sass", "--dump-resource-usage", os.fspath(binary)]


def nvdisasm_argv(cubin: str | os.PathLike[str], tool: str = "nvdisasm") -> list[str]:
    """``nvdisasm CUBIN`` (cubins only; no resource usage)."""
    return [tool, os.fspath(cubin)]


def _missing_disassembler() -> MissingToolError:
    return MissingToolError(
        "neither cuobjdump nor nvdisasm is on PATH. Both ship with the CUDA toolkit (in "
        "/usr/local/cuda/bin): add that directory to PATH, or install the toolkit's "
        "cuda-cuobjdump/cuda-nvdisasm package. They need no GPU, so the binary can also be "
        "copied to any machine that has them."
    )


def disassemble(binary: str | os.PathLike[str]) -> tuple[list[SassFunction], list[str]]:
    """Disassemble ``binary``; return its functions and the command that was run.

    Raises
    ------
    KprofInputError
        The file is missing, or holds no SASS (no device code, or PTX only).
    MissingToolError
        Neither ``cuobjdump`` nor ``nvdisasm`` (for a ``.cubin``) is on PATH.
    """
    p = Path(binary)
    if not p.exists():
        raise KprofInputError(
            p, "no such file (pass the executable, shared library or .cubin that holds the kernels)"
        )
    if p.is_dir():
        raise KprofInputError(
            p, "is a directory; pass the executable, shared library or .cubin that holds the kernels"
        )
    cuobjdump = shutil.which("cuobjdump")
    nvdisasm = shutil.which("nvdisasm")
    if cuobjdump:
        argv = cuobjdump_argv(p, "cuobjdump")
        parse = parse_cuobjdump
    elif nvdisasm and p.suffix == ".cubin":
        argv = nvdisasm_argv(p, "nvdisasm")
        parse = parse_nvdisasm
    else:
        raise _missing_disassembler()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise KprofError(
            f"{shlex.join(argv)} ran longer than {TOOL_TIMEOUT_S} s; pass a smaller binary "
            "(the .cubin of the kernel, or `cuobjdump --extract-elf` one from it)"
        ) from exc
    functions = parse(proc.stdout)
    if proc.returncode != 0 and not functions:
        msg = " ".join((proc.stderr or proc.stdout).split())[-300:]
        raise KprofInputError(p, f"{argv[0]} failed (exit status {proc.returncode}): {msg or 'no output'}")
    if not any(f.lines for f in functions):
        raise KprofInputError(
            p,
            f"{argv[0]} found no SASS in it (no device code, or PTX only, which is compiled at run time: "
            "pass the executable or library that embeds the cubin, or a cubin from the JIT cache such as "
            "CuPy's ~/.cupy/kernel_cache/*.cubin)",
        )
    return functions, argv


# ----------------------------------------------------------------------------- diagnosis
def _ncu_command_for(name: str, cmd: Sequence[str] | None, binary: str | None = None) -> str:
    """The counter capture that settles a static finding, from the one command builder, its report beside
    the binary read (``./app`` -> ``./app.<kernel>.ncu-rep``)."""
    prog = shlex.join(cmd) if cmd else commands.PROGRAM
    stem = commands.report_stem(binary) if binary else ""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60]
    ncu = commands.ncu_command(name, f"{stem}.{safe}" if stem else safe, program=prog, launch_skip=None)
    profile = commands.shell(["kprof", "profile", "ncu", "--kernel", name, "--"])
    return f"on a machine with counter access: `{profile} {prog}` (`{ncu}`)"


def diagnose_sass(
    functions: Sequence[SassFunction],
    *,
    kernel_regex: str | None = None,
    binary: str | None = None,
    cmd: Sequence[str] | None = None,
) -> list[Diagnosis]:
    """Static diagnoses, one per kernel with SASS (filtered by ``kernel_regex``, searched in the symbol).

    Every diagnosis is ``inconclusive`` with confidence at most :data:`STATIC_CONFIDENCE_CAP`; kernels
    with a red flag (local memory, FFMA-heavy without MMA: the static forms of the kernel rules) come first.

    Examples
    --------
    >>> f = SassFunction(name="_Z1kPf", lines=(SassLine(pc=0, text="STL [R1+0x4], R2"),), resources={"REG": 255})
    >>> d = diagnose_sass([f])[0]
    >>> d.bottleneck.value, d.verdict.value, d.confidence.value <= STATIC_CONFIDENCE_CAP
    ('local_memory_spill', 'inconclusive', True)
    """
    from kprof.diagnose.sass import analyze_sass
    from kprof.facts.static import StaticKernel
    from kprof.rules.kernel.local import static_local_memory
    from kprof.rules.kernel.matrix import static_no_tensor_cores, static_no_tensor_cores_finding

    pattern = re.compile(kernel_regex) if kernel_regex else None
    flagged: list[Diagnosis] = []
    clean: list[Diagnosis] = []
    for f in functions:
        if not f.lines or (pattern and not pattern.search(f.name)):
            continue
        sk = StaticKernel(
            name=f.name,
            sass=analyze_sass(f.lines),
            registers=f.registers,
            stack_bytes=f.stack_bytes,
            binary=binary,
            next_step=_ncu_command_for(_short(f.name), cmd, binary),
        )
        finding = static_no_tensor_cores_finding(sk)
        d = static_local_memory(sk, (finding,) if finding else ()) or static_no_tensor_cores(sk)
        if d is not None:
            flagged.append(d)
        else:
            clean.append(_no_red_flag(sk))
    return flagged + clean


def _no_red_flag(sk: StaticKernel) -> Diagnosis:
    """A listing with no static red flag: what it shows, and the capture that would say what limits it."""
    s = sk.sass
    facts = [
        f"tensor cores {'used' if s.mma else 'not used'}",
        f"async copies {'used' if s.async_copies else 'not used'}",
        "no local memory",
    ]
    return Diagnosis(
        subject=sk.subject,
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The SASS{sk.in_binary} shows no static red flag ({', '.join(facts)}); "
        "what limits this kernel needs counters.",
        evidence=sk.evidence(),
        mechanism="Static SASS shows which instructions were emitted, not how often they run, "
        "what they wait on, or how much memory traffic they make.",
        confidence=Confidence(
            value=th.STATIC_CLEAN_CONFIDENCE,
            would_raise="an ncu capture (SpeedOfLight, stall reasons) on a machine with counter access",
        ),
        next_step=sk.next_step,
    )


_MANGLED_NAME = re.compile(r"^_Z(?:N\d+\w+?E)?(\d+)(.*)$")


def _short(symbol: str) -> str:
    """The function name inside a simple mangled symbol (``_Z16per_thread_tablePKi`` -> ``per_thread_table``).

    Examples
    --------
    >>> _short("_Z16per_thread_tablePKiPKfPfl"), _short("stream_triad")
    ('per_thread_table', 'stream_triad')
    """
    m = re.match(r"^_Z(\d+)", symbol)
    if m:
        n = int(m.group(1))
        start = m.end()
        return symbol[start : start + n] or symbol
    return symbol


def static_analysis(
    binary: str | os.PathLike[str],
    *,
    kernel_regex: str | None = None,
    cmd: Sequence[str] | None = None,
) -> tuple[list[Diagnosis], list[str]]:
    """Disassemble ``binary`` and diagnose its kernels statically; also return the command that ran.

    Raises
    ------
    KprofInputError
        No SASS in the binary, or no kernel matching ``kernel_regex``.
    """
    functions, argv = disassemble(binary)
    diags = diagnose_sass(functions, kernel_regex=kernel_regex, binary=os.fspath(binary), cmd=cmd)
    if not diags:
        names = ", ".join(f.name for f in functions[:8]) + (" ..." if len(functions) > 8 else "")
        raise KprofInputError(
            binary, f"no kernel matches --kernel {kernel_regex!r} (its kernels: {names or 'none'})"
        )
    return [d if d.file else _with_file(d, os.fspath(binary)) for d in diags], argv


def _with_file(d: Diagnosis, path: str) -> Diagnosis:
    import dataclasses

    return dataclasses.replace(d, file=path)


__all__ = [
    "STATIC_CONFIDENCE_CAP",
    "SassFunction",
    "cuobjdump_argv",
    "diagnose_sass",
    "disassemble",
    "nvdisasm_argv",
    "parse_cuobjdump",
    "parse_nvdisasm",
    "static_analysis",
]
