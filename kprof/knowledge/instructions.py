"""Which SASS instruction the work needs, per GPU architecture and data type, and what emits it.

kprof reads the SASS a kernel *issued*; this module says what it *should* have issued, so a
diagnosis can name the expected instruction and the source change that produces it. It is data
with its sources, not a model of the compilers: when the SASS shows something the table does
not know, callers say so rather than guess.

Sources (the facts below, and where each comes from):

- [PTX] NVIDIA, *PTX ISA* 8.x/9.0, sections "Matrix multiply-accumulate operation using mma
  instruction" (shapes and types of ``mma.sync`` and the minimum target of each:
  ``.m8n8k4`` f16 sm_70; ``.m16n8k8`` f16 sm_75; ``.m16n8k16`` f16/bf16, ``.m16n8k8`` tf32,
  ``.m8n8k4`` f64, ``.m16n8k32`` s8 sm_80; ``.e4m3``/``.e5m2`` sm_89), "Asynchronous warpgroup
  level matrix multiply-accumulate" (``wgmma.mma_async``, sm_90a), "TensorCore 5th Generation
  Family Instructions" (``tcgen05.mma``, sm_100a), ``cp.async`` (sm_80), ``cp.async.bulk.tensor``
  (sm_90), ``ldmatrix`` (sm_75). https://docs.nvidia.com/cuda/parallel-thread-execution/
- [SASS] NVIDIA, *CUDA Binary Utilities*, "Instruction Set Reference": the opcodes of each
  generation (Volta/Turing HMMA; Turing IMMA, BMMA; Ampere and Ada DMMA, LDGSTS, LDSM; Hopper
  HGMMA, IGMMA, QGMMA, BGMMA, UTMALDG, UTMASTG; Blackwell UTC*MMA).
  https://docs.nvidia.com/cuda/cuda-binary-utilities/index.html#instruction-set-reference
- [TRITON] triton-lang/triton, ``lib/Analysis/Utility.cpp`` ``supportMMA`` and
  ``lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp`` ``getMMAVersionSafe`` (Triton 3.x):
  MMA v2 (``mma.sync``) on sm_80-sm_89, v3 (``wgmma``) on sm_90 when ``num_warps % 4 == 0``, the
  tile's M is a multiple of 64 and N of 8, K >= 256 / element bits, and the dot is 2-D (a batched
  3-D dot falls back to v2); v5 (``tcgen05``) on sm_100. FP32 operands use the tensor cores only
  with ``input_precision="tf32"`` (the CUDA default; ``"tf32x3"`` is rewritten into three TF32
  dots); ``"ieee"`` lowers ``tl.dot`` to FMA. Below sm_80 Triton's ``tl.dot`` uses FMA.
- [SAMPLES] The H200 (sm_90) reports in ``data/samples/ncu``: cuBLAS's nvjet BF16 GEMM issues
  ``HGMMA.64x64x16.F32.BF16`` and ``UTMALDG``; Triton 3.6's BF16 ``tl.dot`` issues
  ``HGMMA.64x128x16.F32.BF16`` with ``LDGSTS`` operand copies; its ``input_precision="ieee"``
  FP32 ``tl.dot`` issues FFMA only; an ``mma.sync.m16n8k16`` BF16 loop issues
  ``HMMA.16816.F32.BF16`` (``data/validation/cuda/mma_full_grid``). tests/knowledge checks these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MATRIX_DTYPES = ("fp16", "bf16", "tf32", "fp32", "fp64", "int8", "fp8")
"""Input types of matrix work; ``fp32`` means FP32 products computed exactly (no TF32 rounding)."""


@dataclass(frozen=True, slots=True)
class Arch:
    """What one GPU generation offers for matrix work and data movement."""

    sm: int
    name: str
    tensor_dtypes: tuple[str, ...]
    """Input types its tensor cores take ([PTX] minimum targets; FP64 MMA only where DMMA exists)."""
    best_mma: str
    """The highest-throughput tensor-core SASS family: HMMA (mma.sync), HGMMA (wgmma), UTCHMMA (tcgen05)."""
    best_mma_ptx: str
    async_copy: str = ""
    """Global->shared asynchronous copy in SASS (LDGSTS = cp.async, UTMALDG = TMA)."""
    ldmatrix: bool = False


ARCHS: dict[int, Arch] = {
    70: Arch(70, "Volta", ("fp16",), "HMMA", "mma.sync.aligned.m8n8k4 / wmma"),
    72: Arch(72, "Volta (Xavier)", ("fp16", "int8"), "HMMA", "mma.sync.aligned.m8n8k4 / wmma"),
    75: Arch(75, "Turing", ("fp16", "int8"), "HMMA", "mma.sync.aligned.m16n8k8 / wmma", ldmatrix=True),
    80: Arch(
        80, "Ampere (A100)", ("fp16", "bf16", "tf32", "fp64", "int8"), "HMMA",
        "mma.sync.aligned.m16n8k16", "LDGSTS", True,
    ),
    86: Arch(86, "Ampere (GA10x)", ("fp16", "bf16", "tf32", "int8"), "HMMA", "mma.sync.aligned.m16n8k16", "LDGSTS", True),
    87: Arch(87, "Ampere (Orin)", ("fp16", "bf16", "tf32", "int8"), "HMMA", "mma.sync.aligned.m16n8k16", "LDGSTS", True),
    89: Arch(
        89, "Ada", ("fp16", "bf16", "tf32", "int8", "fp8"), "HMMA", "mma.sync.aligned.m16n8k16 (.e4m3/.e5m2 for FP8)",
        "LDGSTS", True,
    ),
    90: Arch(
        90, "Hopper", ("fp16", "bf16", "tf32", "fp64", "int8", "fp8"), "HGMMA", "wgmma.mma_async (sm_90a)",
        "UTMALDG", True,
    ),
    100: Arch(
        100, "Blackwell (B200)", ("fp16", "bf16", "tf32", "fp64", "int8", "fp8"), "UTCHMMA",
        "tcgen05.mma (sm_100a)", "UTMALDG", True,
    ),
}  # fmt: skip
"""sm_86/87 have DMMA in the ISA but no FP64 tensor throughput worth using ([SASS]; FP64 is 1/64 of FP32 on GA10x),
so fp64 is listed only for the data-centre parts."""


def arch(sm: int | None) -> Arch | None:
    """The nearest generation at or below ``sm`` (sm_103 -> Blackwell sm_100, sm_120 -> Blackwell)."""
    if sm is None or sm < 70:
        return None
    best = max((a for a in ARCHS if a <= sm), default=None)
    return ARCHS[best] if best is not None else None


def sm_of(compute_capability: str | None) -> int | None:
    """``"9.0"`` -> 90, ``"10.0"`` -> 100; None when unknown.

    Examples
    --------
    >>> sm_of("9.0"), sm_of("8.6"), sm_of(None)
    (90, 86, None)
    """
    if not compute_capability:
        return None
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", compute_capability)
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


# Consumer parts of generations whose flagship has tensor cores but which ship without them: Turing TU116/TU117
# (GeForce GTX 16xx, some Quadro T-series) have no tensor cores (NVIDIA Turing architecture whitepaper and the
# TU116 product pages); Pascal and older (sm < 70) have none at all.
_NO_TENSOR_CORE_PARTS = re.compile(
    r"GTX\s*16\d\d|TU11[67]|Quadro\s+T(400|600|1000|1200|2000)\b|\bT(400|600|1000)\b", re.I
)


def has_tensor_cores(sm: int | None, device: str | None = None) -> bool | None:
    """True/False when known, None when the architecture is unknown."""
    if sm is None:
        return None
    if sm < 70:
        return False
    return not (device and _NO_TENSOR_CORE_PARTS.search(device))


@dataclass(frozen=True, slots=True)
class MatrixPath:
    """How matrix work of one input type reaches the tensor cores on one architecture."""

    dtype: str
    sass: str
    """The SASS it issues, e.g. ``HGMMA.64xNx16.F32.BF16``."""
    ptx: str
    cuda: str
    """The CUDA C++ construct that emits it."""
    note: str = ""


def matrix_path(sm: int | None, dtype: str, device: str | None = None) -> MatrixPath | None:
    """The tensor-core path for ``dtype`` matrix work on ``sm``, or None when there is none.

    ``dtype="fp32"`` (exact FP32 products) has no tensor-core path on any generation; TF32 (10-bit
    mantissa, FP32 range and accumulation) is the nearest one, returned with a note saying so.

    Examples
    --------
    >>> matrix_path(90, "bf16").sass
    'HGMMA.64xNx16.F32.BF16'
    >>> matrix_path(80, "fp32").sass, matrix_path(86, "fp64") is None
    ('HMMA.1688.F32.TF32', True)
    """
    a = arch(sm)
    if a is None or not has_tensor_cores(sm, device):
        return None
    want = "tf32" if dtype == "fp32" else dtype
    if want not in a.tensor_dtypes:
        return None
    note = (
        "TF32 rounds the FP32 inputs to a 10-bit mantissa (FP32 range, FP32 accumulation); exact FP32 products "
        "have no tensor-core path"
        if dtype == "fp32"
        else ""
    )
    if a.sm >= 100:
        kind = {"fp16": "F16", "bf16": "BF16", "tf32": "TF32", "int8": "I8", "fp8": "E4M3", "fp64": "F64"}[
            want
        ]
        if want == "fp64":
            return MatrixPath(
                dtype,
                "DMMA",
                "mma.sync.aligned .f64 (m8n8k4 .. m16n8k16)",
                "mma.sync .f64 (CUTLASS/CuTe)",
                note,
            )
        family = "UTCQMMA" if want == "fp8" else "UTCIMMA" if want == "int8" else "UTCHMMA"
        return MatrixPath(
            dtype,
            f"{family} ({kind})",
            "tcgen05.mma (sm_100a)",
            "CUTLASS 3.x/4.x sm100 collectives (tcgen05 + TMEM)",
            note,
        )
    if a.sm == 90:
        if want == "fp64":
            return MatrixPath(
                dtype,
                "DMMA",
                "mma.sync.aligned .f64 (m8n8k4 .. m16n8k16)",
                "mma.sync .f64 (CUTLASS/CuTe)",
                note,
            )
        sass = {
            "fp16": "HGMMA.64xNx16.F32.F16",
            "bf16": "HGMMA.64xNx16.F32.BF16",
            "tf32": "HGMMA.64xNx8.F32.TF32",
            "int8": "IGMMA.64xNx32.S32.S8.S8",
            "fp8": "QGMMA.64xNx32.F32.E4M3.E4M3",
        }[want]
        return MatrixPath(
            dtype,
            sass,
            "wgmma.mma_async.sync.aligned (sm_90a; mma.sync still runs, as HMMA, at a lower rate)",
            "CUTLASS 3.x sm90 collectives / CuTe SM90 GMMA atoms",
            note,
        )
    sass = {
        "fp16": "HMMA.16816.F32" if a.sm >= 80 else "HMMA.1688.F32" if a.sm == 75 else "HMMA.884.F32",
        "bf16": "HMMA.16816.F32.BF16",
        "tf32": "HMMA.1688.F32.TF32",
        "int8": "IMMA.16832.S8.S8" if a.sm >= 80 else "IMMA.8816.S8.S8",
        "fp8": "QMMA.16832.F32.E4M3.E4M3",
        "fp64": "DMMA.884",
    }[want]
    ptx = {
        "fp16": "mma.sync.aligned.m16n8k16 .f16" if a.sm >= 80 else "mma.sync.aligned.m8n8k4 .f16",
        "bf16": "mma.sync.aligned.m16n8k16 .bf16",
        "tf32": "mma.sync.aligned.m16n8k8 .tf32",
        "int8": "mma.sync.aligned.m16n8k32 .s8",
        "fp8": "mma.sync.aligned.m16n8k32 .e4m3",
        "fp64": "mma.sync.aligned.m8n8k4 .f64",
    }[want]
    cuda = {
        "fp16": "nvcuda::wmma with half fragments, or mma.sync via CUTLASS/CuTe",
        "bf16": "nvcuda::wmma with __nv_bfloat16 fragments, or mma.sync via CUTLASS/CuTe",
        "tf32": "nvcuda::wmma with wmma::precision::tf32 fragments (m16n16k8), or mma.sync via CUTLASS/CuTe",
        "int8": "nvcuda::wmma with signed char fragments, or mma.sync via CUTLASS/CuTe",
        "fp8": "mma.sync .e4m3/.e5m2 via CUTLASS/CuTe",
        "fp64": "nvcuda::wmma with double fragments (m8n8k4), or mma.sync via CUTLASS/CuTe",
    }[want]
    return MatrixPath(dtype, sass, ptx, cuda, note)


_MMA_OPCODE = re.compile(
    r"^(?P<family>[A-Z]*MMA)(?:\.(?P<shape>\d+x\d+x\d+|\d{3,5}))?(?P<mods>(?:\.[A-Z0-9_]+)*)$"
)


@dataclass(frozen=True, slots=True)
class MmaOpcode:
    """A tensor-core SASS opcode taken apart: ``HGMMA.64x128x16.F32.BF16``."""

    family: str
    shape: str
    accumulator: str
    inputs: str
    """Input type as the SASS spells it (``BF16``, ``F16``, ``TF32``, ``E4M3``, ``S8``, ``F64``)."""

    @property
    def dtype(self) -> str:
        """The input type in this module's words (``bf16``, ``fp16``, ``tf32``, ``fp8``, ``int8``, ``fp64``)."""
        if self.family == "DMMA":
            return "fp64"
        i = self.inputs.upper()
        if i in ("E4M3", "E5M2") or self.family in ("QGMMA", "QMMA"):
            return "fp8"
        if i.startswith(("S8", "U8")) or self.family in ("IMMA", "IGMMA"):
            return "int8"
        return {"BF16": "bf16", "TF32": "tf32", "F16": "fp16"}.get(
            i, "fp16" if self.family == "HMMA" else i.lower()
        )


def parse_mma(opcode: str) -> MmaOpcode | None:
    """Take apart a tensor-core opcode; None for anything else.

    Examples
    --------
    >>> m = parse_mma("HGMMA.64x128x16.F32.BF16")
    >>> m.family, m.shape, m.dtype
    ('HGMMA', '64x128x16', 'bf16')
    >>> parse_mma("HMMA.16816.F32.BF16").dtype, parse_mma("HMMA.1688.F32.TF32").dtype, parse_mma("FFMA") is None
    ('bf16', 'tf32', True)
    """
    m = _MMA_OPCODE.match(opcode)
    if not m or not m.group("family").endswith("MMA"):
        return None
    mods = [x for x in m.group("mods").split(".") if x]
    types = [x for x in mods if re.fullmatch(r"F16|F32|BF16|TF32|F64|E4M3|E5M2|S8|U8|S4|U4|S32", x)]
    acc = types[0] if types else ""
    inputs = types[1] if len(types) > 1 else (types[0] if types and m.group("family") == "DMMA" else "")
    return MmaOpcode(m.group("family"), m.group("shape") or "", acc, inputs)


def is_best_mma(opcode: str, sm: int | None) -> bool | None:
    """Whether the tensor-core opcode is the generation's highest-throughput path (None when unknown).

    ``mma.sync`` (HMMA) runs on Hopper and Blackwell but below their warpgroup/tcgen05 rate; DMMA is the
    only FP64 path. Examples: ``is_best_mma("HMMA.16816.F32.BF16", 90)`` is False, ``HGMMA...`` on 90 True.
    """
    a, m = arch(sm), parse_mma(opcode)
    if a is None or m is None:
        return None
    if m.dtype == "fp64":
        return m.family == "DMMA"
    if a.sm >= 100:
        return m.family.startswith("UTC")
    if a.sm == 90:
        return m.family in ("HGMMA", "IGMMA", "QGMMA", "BGMMA")
    return True


# ------------------------------------------------------------------------------------ FMA work
_FMA_DTYPE = {"FFMA": "fp32", "FFMA2": "fp32", "DFMA": "fp64", "HFMA2": "fp16", "HFMA": "fp16"}


def fma_dtype(opcode: str) -> str | None:
    """The data type of a scalar FMA opcode: ``FFMA`` fp32, ``DFMA`` fp64, ``HFMA2`` fp16 (``.BF16_V2`` bf16).

    Examples
    --------
    >>> fma_dtype("FFMA.FTZ"), fma_dtype("DFMA"), fma_dtype("HFMA2.BF16_V2"), fma_dtype("HFMA2.MMA")
    ('fp32', 'fp64', 'bf16', None)
    """
    parts = opcode.split(".")
    mn = parts[0]
    if mn == "HFMA2" and "MMA" in parts[1:]:
        return None  # HFMA2.MMA is ptxas's idiom for a register move/zeroing on the FMA-heavy pipe, not math
    if mn.startswith("HFMA") and any("BF16" in p for p in parts[1:]):
        return "bf16"
    return _FMA_DTYPE.get(mn)


# ------------------------------------------------------------------------------------ Triton tl.dot
@dataclass(frozen=True, slots=True)
class TritonDot:
    """What Triton 3.x emits for one ``tl.dot``."""

    sass: str
    """``FFMA``/``DFMA`` (FMA fallback), ``HMMA`` (mma v2), ``HGMMA``/``IGMMA``/``QGMMA`` (wgmma v3), ``UTC*MMA``."""
    why: str


def triton_dot(
    sm: int | None,
    dtype: str,
    *,
    input_precision: str | None = None,
    num_warps: int | None = None,
    block_m: int | None = None,
    batched: bool = False,
) -> TritonDot | None:
    """What Triton 3.x lowers ``tl.dot`` to, per [TRITON] (None when ``sm`` is unknown).

    ``dtype`` is the operand type (``fp32``, ``fp16``, ``bf16``, ``fp8``, ``int8``, ``fp64``);
    ``input_precision`` the ``tl.dot`` argument (None: the default, ``"tf32"`` on NVIDIA GPUs).

    Examples
    --------
    >>> triton_dot(90, "fp32", input_precision="ieee").sass
    'FFMA'
    >>> triton_dot(90, "bf16", num_warps=4, block_m=128).sass, triton_dot(80, "bf16").sass
    ('HGMMA', 'HMMA')
    """
    if sm is None:
        return None
    prec = (input_precision or "tf32").lower()
    if dtype == "fp32" and prec == "ieee":
        return TritonDot(
            "FFMA", 'input_precision="ieee" asks for exact FP32 products: Triton lowers tl.dot to FMA'
        )
    if sm < 80:
        fma = "DFMA" if dtype == "fp64" else "FFMA"
        return TritonDot(fma, f"Triton 3.x uses FMA for tl.dot below sm_80 (this GPU is sm_{sm})")
    if dtype == "fp64":
        return TritonDot(
            "DMMA",
            "recent Triton lowers FP64 tl.dot to mma.sync .f64 (DMMA) on sm_80+; older releases to DFMA",
        )
    if sm >= 100:
        return TritonDot("UTCHMMA", "Triton lowers tl.dot to tcgen05.mma (MMA v5) on sm_100")
    if sm >= 90:
        v3 = (
            not batched
            and (num_warps is None or num_warps % 4 == 0)
            and (block_m is None or block_m % 64 == 0)
        )
        if v3:
            fam = {"int8": "IGMMA", "fp8": "QGMMA"}.get(dtype, "HGMMA")
            return TritonDot(fam, "Triton lowers tl.dot to wgmma (MMA v3) on sm_90")
        why = (
            "a batched (3-D) tl.dot"
            if batched
            else f"num_warps={num_warps} is not a multiple of 4"
            if num_warps is not None and num_warps % 4
            else f"BLOCK_M={block_m} is not a multiple of 64"
        )
        return TritonDot("HMMA", f"{why}, so Triton falls back from wgmma to mma.sync (MMA v2) on sm_90")
    fam = "IMMA" if dtype == "int8" else "HMMA"
    return TritonDot(fam, f"Triton lowers tl.dot to mma.sync (MMA v2) on sm_{sm}")


_INPUT_PRECISION = re.compile(r"""input_precision\s*=\s*["'](?P<p>\w+)["']""")
_ALLOW_TF32_FALSE = re.compile(r"allow_tf32\s*=\s*False")


def triton_input_precision(line: str) -> str | None:
    """The ``input_precision`` a ``tl.dot`` line passes (``allow_tf32=False`` reads as ``ieee``), or None.

    Examples
    --------
    >>> triton_input_precision('acc = tl.dot(a, b, acc, input_precision="ieee")')
    'ieee'
    >>> triton_input_precision("acc += tl.dot(a, b, allow_tf32=False)"), triton_input_precision("tl.dot(a, b)")
    ('ieee', None)
    """
    m = _INPUT_PRECISION.search(line)
    if m:
        return m.group("p")
    if _ALLOW_TF32_FALSE.search(line):
        return "ieee"
    return None


# ------------------------------------------------------------------------------------ data movement
def vector_load(bytes_per_thread: int) -> str:
    """The SASS of a global load of that width: 4 -> ``LDG.E``, 8 -> ``LDG.E.64``, 16 -> ``LDG.E.128``.

    A 16-byte (float4/int4, ``__ldg(reinterpret_cast<const float4*>(p))``) load moves a warp's 512 bytes in
    one instruction (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"; [SASS]).
    """
    return {1: "LDG.E.U8", 2: "LDG.E.U16", 4: "LDG.E", 8: "LDG.E.64", 16: "LDG.E.128"}.get(
        bytes_per_thread, "LDG.E"
    )


def async_copy(sm: int | None) -> tuple[str, str] | None:
    """(SASS, source construct) of the global->shared asynchronous copy on ``sm``, or None before sm_80."""
    a = arch(sm)
    if a is None or not a.async_copy:
        return None
    if a.async_copy == "UTMALDG":
        return (
            "UTMALDG",
            "TMA: cp.async.bulk.tensor with a CUtensorMap (cuda::memcpy_async / CUTLASS TMA copy atoms); "
            "in Triton, tensor descriptors (tl.make_tensor_descriptor) or block pointers",
        )
    return "LDGSTS", "cp.async (cuda::memcpy_async / __pipeline_memcpy_async); in Triton, num_stages >= 2"


__all__ = [
    "ARCHS",
    "MATRIX_DTYPES",
    "Arch",
    "MatrixPath",
    "MmaOpcode",
    "TritonDot",
    "arch",
    "async_copy",
    "fma_dtype",
    "has_tensor_cores",
    "is_best_mma",
    "matrix_path",
    "parse_mma",
    "sm_of",
    "triton_dot",
    "triton_input_precision",
    "vector_load",
]
