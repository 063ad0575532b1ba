"""The SASS idioms of common source constructs, and the change that removes each.

kprof reads what the SASS *issued*; a senior engineer reads from it what the *source* does: ``I2F.U32.RP ->
MUFU.RCP -> F2I.FTZ.U32.TRUNC`` is an integer division by a run-time value, ``F2F.F64.F32 -> DMUL ->
F2F.F32.F64`` an FP32 expression promoted by a double literal, a divergent ``BRA`` whose predicate comes from
``SR_TID.X`` a branch on the lane. This module is the table of those idioms, as data: what each looks like in the
SASS and its data flow, what it is in CUDA C++, Triton and PyTorch terms, the one change that removes it, and, where
the SASS cannot tell it from another construct, which one and what tells them apart. The recognisers are in
:mod:`kprof.facts.constructs` (one per idiom, reading only the SASS, its per-PC counters and its data flow); the
sentences that name the construct on its line and write the change (with the source line rewritten) are in
:mod:`kprof.diagnose.fixes.constructs`.

Sources:

- [DIV] The sequence nvcc/ptxas (CUDA 11-13, sm_70-sm_90) emit for ``div``/``rem`` of 32-bit integers by a register:
  the divisor's reciprocal ``I2F.U32.RP`` -> ``MUFU.RCP`` -> ``F2I.FTZ.U32.TRUNC.NTZ`` (once per divisor value), then
  per quotient ``IMAD.HI.U32`` and a compare-and-correct (``ISETP``, predicated ``IADD``/``VIADD``), a sign fix and a
  ``SEL`` for a zero divisor (data/validation/blind8 cuda_idiv_runtime, 21.8 warp instructions per ``/`` + ``%``
  pair). A constant divisor compiles to ``IMAD.HI`` by a magic number and a shift (T. Granlund, P. Montgomery,
  "Division by invariant integers using multiplication", PLDI 1994), a power of two to a shift and a mask.
- [I64] The H200 SASS of 64-bit integer arithmetic: an add is ``IADD3`` with a carry-out predicate plus
  ``IADD3.X``/``IMAD.X``, a compare ``ISETP`` plus ``ISETP .EX``, a 64x64 multiply ``IMAD.WIDE.U32`` plus two ``IMAD``
  (blind8 cuda_idx64: 14.3 warp instructions per gathered element with ``long long`` indices, about half with
  ``int``). A 32-bit index needs one ``IMAD.WIDE`` (or ``LEA`` + ``LEA.HI.X``) per address.
- [TRIG] CUDA's ``sinf``/``cosf``/``tanf``/``sincosf`` (libdevice ``__nv_sinf`` and the CUDA math headers) take a
  3-FFMA Cody-Waite reduction for |x| <= 105615 and a Payne-Hanek reduction (a loop over the 2/pi bits table
  ``__cudart_i2opi_f`` in global memory, 64-bit integer products) above it; the SASS compares ``|x|`` with 105615
  (blind8 cuda_sinf_large: 267 warp instructions per call on the slow path, about 20 on the fast one). CUDA C++
  Programming Guide, "Mathematical Functions": ``__sinf`` is the MUFU.SIN intrinsic, with an absolute error of
  2^-21.41 only in [-pi, pi].
- [F16] The H200 (sm_90) converts half -> float with ``HADD2.F32 Rd, -RZ, Rs.H0_H0`` and float -> half with
  ``F2FP.F16.F32.PACK_AB`` (both halves at once; ``F2FP.BF16.F32.PACK_AB`` for bf16); ``fma.rn.f16x2`` (``__hfma2``) is
  one ``HFMA2`` for two elements (blind8 cuda_half_convert: 6.1 warp instructions per step through float, 3.17x
  faster in packed half). PTX ISA, "Half Precision Floating-Point Instructions: fma".
- [RESTRICT] CUDA C++ Best Practices Guide, "Restricted pointers" (``__restrict__`` lets the compiler reorder and
  hoist loads across stores); CUDA C++ Programming Guide, "__restrict__".
- [BOUNDS] CUDA C++ Programming Guide, "Launch Bounds": ``__launch_bounds__(maxThreads, minBlocks)`` makes ptxas fit
  minBlocks blocks of maxThreads per SM in the register file; ``-maxrregcount`` caps every kernel of the file.
- [PARAM] The constant bank holding a kernel's arguments: ``c[0x0][0x160]`` onwards on sm_70-sm_89 (Volta to Ada;
  the A10G, sm_86, reports of the ESMM-Research corpus read ``basic(int M, int N, int K, const float* A, ...)``'s
  arguments at 0x160, 0x164, 0x168, 0x170) and ``c[0x0][0x210]`` onwards on sm_90 (every H200 report in data/, e.g.
  blind8's ``LDC R12, c[0x0][0x218]`` for the second argument after an 8-byte pointer); blockDim at
  ``c[0x0][0x0..0x8]``, gridDim at ``c[0x0][0xc..0x14]``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Idiom:
    """One source construct and its SASS idiom: how it is recognised, what it is in each language, what removes it."""

    id: str
    construct: str
    """The construct in words, as a mechanism names it: ``an integer division by a value known only at run time``."""
    sass: str
    """The SASS signature and data flow that recognise it (what :mod:`kprof.facts.constructs` checks)."""
    explains: tuple[str, ...]
    """The bottleneck ids (:class:`kprof.model.Bottleneck` values) whose waste it can be the cause of."""
    cuda: str
    """What it is in CUDA C++ source."""
    cuda_change: str
    """The change that removes it in CUDA C++ (the fix writer shows it on the kernel's own line when it can)."""
    triton: str
    triton_change: str
    pytorch: str
    pytorch_change: str
    confusable: str = ""
    """The construct the SASS cannot tell this one from, and what would tell them apart ("" when the data flow
    decides)."""
    source: str = ""
    """Where the signature comes from (see the module docstring)."""


RUNTIME_DIVISION = "runtime_division"
INDEX64 = "index64"
FP64_PROMOTION = "fp64_promotion"
HALF_ROUND_TRIP = "half_round_trip"
TRIG_SLOW_PATH = "trig_slow_path"
LOCAL_INDEXED_ARRAY = "local_indexed_array"
REGISTER_SPILL = "register_spill"
PREDICATED_LOAD = "predicated_load"
ATOMIC_IN_LOOP = "atomic_in_loop"
SYNC_IN_LOOP = "sync_in_loop"
BRANCH_ON_LANE = "branch_on_lane"
BRANCH_ON_DATA = "branch_on_data"
ALIAS_RELOAD = "alias_reload"

_INSTR = ("instruction_bound", "compute_bound")

IDIOMS: dict[str, Idiom] = {
    i.id: i
    for i in (
        Idiom(
            id=RUNTIME_DIVISION,
            construct="an integer division or modulo by a value known only at run time",
            sass="MUFU.RCP of an I2F.U32.RP (the divisor's reciprocal, truncated back by F2I.FTZ.U32.TRUNC), then "
            "IMAD.HI.U32 and a compare-and-correct per quotient; the divisor's register traced back to where it "
            "is read (a kernel argument, blockDim/gridDim, a loaded value)",
            explains=_INSTR,
            cuda="`i / n` or `i % n` with `n` a variable: nvcc cannot multiply by a magic constant, so a division "
            "and modulo pair costs about 20 instructions per element",
            cuda_change="make the divisor a compile-time constant (a template parameter or `constexpr`: the quotient "
            "becomes one IMAD.HI and a shift), or require a power of two and shift and mask (`i >> log2n`, "
            "`i & (n - 1)`); when it must stay a run-time value, precompute a multiply-shift pair on the host "
            "(CUTLASS's FastDivmod)",
            triton="`offs // n` or `offs % n` with `n` a plain (non-constexpr) argument",
            triton_change="declare `n: tl.constexpr` (one compilation per value) or pass sizes that are powers of "
            "two, so Triton emits the multiply-high or the shift",
            pytorch="ATen's strided elementwise kernels split each linear index into coordinates with one division "
            "per dimension (OffsetCalculator)",
            pytorch_change="pass contiguous inputs (`.contiguous()` once, or merge dimensions with view/flatten) so "
            "the vectorized contiguous path runs",
            confusable="The SASS sees only a run-time divisor: one that is the same every launch and one that varies "
            "give the same code; whether the call sites use a fixed set of values (a compile-time constant can then "
            "hold it) is in the host code.",
            source="[DIV]",
        ),
        Idiom(
            id=INDEX64,
            construct="64-bit integer index arithmetic",
            sass="64-bit carry pairs (IADD3 with a carry-out predicate and IADD3.X/IMAD.X), 64-bit compares "
            "(ISETP .EX) and 64x64 multiplies (IMAD.WIDE.U32 of two registers) beyond the one address pair "
            "(LEA + LEA.HI.X) a memory access needs, on index values (not on loaded data)",
            explains=_INSTR,
            cuda="indices declared `long long`/`int64_t`/`size_t` (or a 64-bit operand, such as a `size_t` size, "
            "promoting the expression): every add is two instructions, every multiply three, every compare two",
            cuda_change="32-bit index arithmetic where the extents fit in 31 bits (`int` indices, one 64-bit add "
            "when the address is formed)",
            triton="offsets computed as int64 (`.to(tl.int64)`, or an int64 stride argument)",
            triton_change="keep the offsets int32 while the tensor has fewer than 2^31 elements (Triton's default), "
            "casting to int64 only where an offset can exceed it",
            pytorch="ATen's kernels switch to 64-bit index math for a tensor of 2^31 or more elements",
            pytorch_change="process the tensor in chunks of fewer than 2^31 elements",
            confusable="A 64-bit declaration and a 64-bit operand mixed into 32-bit math (a `size_t` size, `.size()`) "
            "give the same SASS; the declarations used on the named lines tell which.",
            source="[I64]",
        ),
        Idiom(
            id=FP64_PROMOTION,
            construct="FP32 arithmetic promoted to FP64",
            sass="F2F.F64.F32 -> FP64 arithmetic (DMUL/DFMA/DADD, MUFU.RCP64H) -> F2F.F32.F64 in a kernel whose "
            "global loads and stores move 32-bit values",
            explains=_INSTR,
            cuda="an unsuffixed literal (`0.999`), a `double` variable or a double function (`exp`, `sqrt`) in a "
            "float expression",
            cuda_change="a float literal (`0.999f`), `float` variables and the FP32 functions (`expf`)",
            triton="a `.to(tl.float64)` or a float64 tensor in the expression",
            triton_change="compute in tl.float32 (cast once, or keep every operand float32)",
            pytorch="a float64 tensor (or a Python float tensor created as double) mixed into the op",
            pytorch_change="create the operands as float32 (`dtype=torch.float32`), or cast the float64 one once",
            confusable="A double literal, a double variable and a double cast give the same SASS; the line's text "
            "tells which (shown when the report embeds the source).",
            source="kprof.facts.sass_traits.fp64_promotion",
        ),
        Idiom(
            id=HALF_ROUND_TRIP,
            construct="16-bit data widened to FP32 for each operation and rounded back",
            sass="a float -> half conversion (F2FP.F16.F32.PACK_AB, F2F.F16.F32; BF16 alike) whose result is "
            "widened again (HADD2.F32, F2F.F32.F16) in the next step of a loop, FP32 arithmetic in between",
            explains=_INSTR,
            cuda="`__half`/`__nv_bfloat16` values updated through float inside a loop "
            "(`x = __float2half(fmaf(a, __half2float(x), b))`): three conversions for two FFMAs per step",
            cuda_change="do the arithmetic in the packed 16-bit type: `__hfma2` on `__half2` (`__nv_bfloat162`), one "
            "HFMA2 per step for two elements with the same per-step rounding; or keep the running value in float "
            "and convert once before and once after the loop",
            triton="a loop-carried fp16/bf16 value cast with `.to(tl.float32)` and back with `.to(tl.float16)` "
            "every iteration",
            triton_change="carry the value in float32 through the loop and cast once after it",
            pytorch="a chain of fp16/bf16 elementwise ops in eager mode: each op widens, computes in float and "
            "rounds back",
            pytorch_change="torch.compile the chain (one load, float math in registers, one store)",
            confusable="The SASS cannot tell whether the rounding to 16 bits at every step is intended (the result "
            "must match half arithmetic) or incidental (the value is stored as half to save space): packed half2 "
            "math keeps that rounding, a float loop variable drops it and is more accurate.",
            source="[F16]",
        ),
        Idiom(
            id=TRIG_SLOW_PATH,
            construct="sinf/cosf of arguments above 105615, which take the slow (Payne-Hanek) range reduction",
            sass="FSETP |x| >= 105615 guarding a branch into a loop of LDG over the 2/pi bits table (a c[0x4] "
            "address), IMAD.WIDE.U32 carry chains, I2F.F64.S64 and DMUL; most lanes executing it",
            explains=(*_INSTR, "latency_bound"),
            cuda="`sinf(x)`, `cosf(x)`, `sincosf`, `tanf` with |x| > 105615: each call reduces x modulo pi/2 with "
            "about 230 integer instructions and table loads instead of 3 FFMA",
            cuda_change="keep the argument small where it is built: compute the phase in turns and call "
            "`sinpif`/`cospif` on its fractional part (in double when the phase is large), or reduce a growing "
            "phase as it accumulates",
            triton="`tl.sin`/`tl.cos` (libdevice `__nv_sinf`) on arguments above 105615",
            triton_change="reduce the phase where it is built (in turns, in float64 while it is large) and call "
            "tl.sin on the small result",
            pytorch="torch.sin/torch.cos of large float32 values (angles of large positions or times)",
            pytorch_change="build the angle from a reduced phase: `torch.remainder(x.double(), 2 * math.pi).float()` "
            "before the call, or compute it from a small per-step phase",
            confusable="Arguments large by construction (a phase growing with the loop) and a few large outliers "
            "both take this path; the share of lanes on it (measured) tells which.",
            source="[TRIG]",
        ),
        Idiom(
            id=LOCAL_INDEXED_ARRAY,
            construct="a per-thread array indexed with a run-time value",
            sass="LDL/STL whose address is computed (a register other than the stack pointer R1 plus the scaled "
            "index), no spill stores at constant offsets",
            explains=(
                "local_memory_spill",
                "l1_shared_bandwidth_bound",
                "latency_bound",
                "l2_bandwidth_bound",
            ),
            cuda="`float t[16]; ... t[idx]` with `idx` not a compile-time constant: registers cannot be indexed, so "
            "the array lives in local memory and every access is a memory instruction",
            cuda_change="when the index is the counter of a fixed-trip loop, unroll that loop so every index is a "
            "constant; when the data chooses it, keep the table in shared memory with one column per thread "
            "(`t_s[idx][threadIdx.x]`, conflict-free)",
            triton="Triton has no per-thread arrays; a lookup table indexed per element is a gather",
            triton_change="load the table once per program as a tensor and gather from it (`tl.gather`), or from a "
            "small global table that stays in L1",
            pytorch="inside the library or ATen kernel for this configuration",
            pytorch_change="another dtype or shape selects a different kernel",
            confusable="",
            source="kprof.diagnose.sass (local_kind)",
        ),
        Idiom(
            id=REGISTER_SPILL,
            construct="more live values than the register cap allows (register spills)",
            sass="STL/LDL at constant offsets from the stack pointer R1 inside the hot loop, at a register count "
            "equal to the cap the launch bounds, the block size or the build set",
            explains=(
                "local_memory_spill",
                "l2_bandwidth_bound",
                "l1_shared_bandwidth_bound",
                "latency_bound",
            ),
            cuda="`__launch_bounds__(threads, minBlocks)` or `-maxrregcount` capping the registers below what the "
            "code keeps live (large unrolled per-thread arrays, many accumulators)",
            cuda_change="loosen the cap when the registers sit at it; without a cap (255 registers), keep fewer "
            "values live: smaller per-thread tiles, less unrolling",
            triton="more values per thread than the registers hold at this BLOCK and num_warps",
            triton_change="lower the BLOCK sizes or num_stages, or raise num_warps so each thread holds fewer "
            "elements",
            pytorch="inside the library or ATen kernel for this configuration",
            pytorch_change="another dtype or shape selects a different kernel",
            confusable="`__launch_bounds__` and `-maxrregcount` cap the registers alike; the kernel's declaration (in "
            "the embedded source) or `-Xptxas -v` tells which set the cap.",
            source="[BOUNDS]",
        ),
        Idiom(
            id=PREDICATED_LOAD,
            construct="a load under an index condition that few lanes pass",
            sass="a predicated LDG (`@P LDG`) whose predicate is computed from the thread or loop index, with few of "
            "32 lanes active per request",
            explains=("uncoalesced_global_access", "dram_bandwidth_bound", "l2_bandwidth_bound"),
            cuda="`if ((i & 7) == 0) acc += x[i];` in a loop over every i: the other lanes are predicated off, and "
            "when the active lanes' elements are 32 bytes or more apart each needs a sector of its own",
            cuda_change="when each active lane needs its own sector the bytes are the cost: store the elements the "
            "loop uses contiguously (their own array, or a structure-of-arrays layout) and read them densely; when "
            "the active lanes are adjacent, map threads to the used elements only",
            triton="a mask such as `(offs % 8) == 0` on tl.load",
            triton_change="pack the used elements into their own contiguous tensor and load it unmasked",
            pytorch="an elementwise op on a strided view (`x[::8]`)",
            pytorch_change="keep the sliced elements contiguous (`.contiguous()` once when the view is reused, or a "
            "layout in which the slice is contiguous)",
            confusable="A sparse layout (the needed elements interleaved with others) and a sparse algorithm (a "
            "subset chosen by index) give the same SASS; whether the other elements are used elsewhere tells.",
            source="per-PC thread_inst_executed_true and memory_l2_theoretical_sectors_global (ncu SourceCounters)",
        ),
        Idiom(
            id=ATOMIC_IN_LOOP,
            construct="an atomic update in every loop iteration",
            sass="RED/ATOM inside a loop body (a backward branch) whose address is not changed in the loop; one "
            "address for all lanes when it is read from a kernel argument",
            explains=("atomic_contention",),
            cuda="`for (...) atomicAdd(out, v);`: one atomic per element, serialised by the L2 slice that owns "
            "the address",
            cuda_change="accumulate in a register in the loop and issue one atomic per warp after it (a "
            "`__shfl_down_sync` reduction, lane 0 adds)",
            triton="`tl.atomic_add(ptr, v)` of every element",
            triton_change="`tl.sum` the values in the program and issue one `tl.atomic_add` per program",
            pytorch="index_add_/scatter_add_ (or a hand-written sum) whose updates hit one element",
            pytorch_change="a reduction op (`torch.sum`, `segment_reduce`) instead of per-element atomics",
            confusable="The SASS cannot tell whether the order of the additions matters (a floating-point sum "
            "changes in the last bits when reduced in another order); the accuracy the result needs tells.",
            source="kprof.rules.kernel.atomics",
        ),
        Idiom(
            id=SYNC_IN_LOOP,
            construct="`__syncthreads()` inside a loop, with little work between barriers",
            sass="BAR.SYNC in a loop body, few instructions per warp between two barriers, the shared stores before "
            "them made by few threads",
            explains=("latency_bound", "instruction_bound", "occupancy_limited"),
            cuda="a loop that stages a few values per iteration (`if (threadIdx.x < TILE) s[threadIdx.x] = ...; "
            "__syncthreads(); ...; __syncthreads();` with TILE much smaller than the block): every block-wide "
            "barrier is paid for a few values",
            cuda_change="stage a whole tile per barrier pair (every thread stores one value: TILE = blockDim.x), so "
            "the loop between the barriers runs over blockDim.x values",
            triton="Triton places the barriers itself; tiny BLOCK sizes in a staged loop pay one per iteration",
            triton_change="raise the BLOCK of the loop's dimension (BLOCK_K) so each iteration does more work",
            pytorch="inside the library or ATen kernel",
            pytorch_change="more work per call (batch) selects a different launch shape",
            confusable="A loop whose iterations read what the previous ones wrote to shared memory (a scan, a "
            "wavefront) needs its barriers; one that only stages read-only data does not need them per value: "
            "whether the staged values are written in the loop tells.",
            source="per-PC smsp__pcsamp_warps_issue_stalled_barrier and thread_inst_executed_true (ncu)",
        ),
        Idiom(
            id=BRANCH_ON_LANE,
            construct="a branch on the thread index that splits every warp",
            sass="a divergent BRA whose predicate is computed from SR_TID (S2R -> LOP3/ISETP -> BRA), no loaded "
            "value in between",
            explains=("warp_divergence",),
            cuda="`if (threadIdx.x & 1)`, `if (threadIdx.x % k < j)`: neighbouring lanes take different paths, so "
            "every warp runs both",
            cuda_change="decide per warp: compute the condition from the warp index (`threadIdx.x / 32`) and map "
            "the elements so each warp takes 32 of one kind",
            triton="per-lane conditions from `tl.arange` (tl.where on an index pattern): both sides are computed",
            triton_change="split the program by path (one program per kind of element, or a grid axis for it)",
            pytorch="inside the library or ATen kernel",
            pytorch_change="the inputs' shapes decide it",
            confusable="",
            source="SASS data flow (predicate slice to S2R SR_TID)",
        ),
        Idiom(
            id=BRANCH_ON_DATA,
            construct="a branch on loaded data that differs between neighbouring elements",
            sass="a divergent BRA whose predicate is computed from a loaded value (LDG -> ISETP -> BRA)",
            explains=("warp_divergence",),
            cuda="`if (flag[i])` (or a loop bound read per element) with mixed values inside a warp",
            cuda_change="bin the elements by the condition before the kernel (a stable partition, so each warp sees "
            "one path), or make short paths branch-free (compute both and select)",
            triton="tl.where / masks on loaded values: both sides are computed for every element",
            triton_change="partition the input by the condition before the kernel and run one path per program",
            pytorch="masked or boolean-indexed ops on mixed data",
            pytorch_change="partition by the condition (`order = torch.argsort(flag, stable=True)`) and run each "
            "path on its own contiguous slice",
            confusable="Random data and data sorted in runs shorter than a warp split warps alike; binning pays when "
            "an element's path work exceeds what partitioning it costs (a sort per launch, or one reused).",
            source="SASS data flow (predicate slice to a load)",
        ),
        Idiom(
            id=ALIAS_RELOAD,
            construct="loop-invariant loads repeated because the compiler must assume the pointers alias",
            sass="inside a loop, LDG from an address the loop does not change, after a global store in the same "
            "iteration (plain LDG.E, not LDG.E.CONSTANT: the compiler could not prove the data read-only)",
            explains=("latency_bound", "dram_bandwidth_bound", "l2_bandwidth_bound", "instruction_bound"),
            cuda="pointer arguments without `__restrict__`: a store through one may change what another points to, "
            "so the invariant values are reloaded after every store and later loads cannot move above it",
            cuda_change="declare the pointers `__restrict__` (the read-only ones `const`): the invariant loads are "
            "hoisted and the next iterations' loads issue ahead of the stores",
            triton="a tl.load of a loop-invariant address inside the loop, after a tl.store",
            triton_change="load the invariant values once before the loop",
            pytorch="inside the library or ATen kernel",
            pytorch_change="not editable from the call",
            confusable="A possible alias and a real one (the output overlapping an input in an in-place call) give "
            "the same SASS; the call sites tell whether `__restrict__` is a true promise.",
            source="[RESTRICT]",
        ),
    )
}
"""The idioms, by id."""


CONSTANT_QUOTIENT_INSTRUCTIONS = 3
"""Instructions a quotient by a compile-time constant costs: IMAD.HI by the magic number, a shift (SHF or LEA.HI)
and the IMAD that forms the remainder ([DIV]; the blind8 cuda_idiv_runtime control, ``W`` constant: about 30 SASS
instructions per 4 quotient-and-remainder pairs with the loop)."""

PARAM_BASE = {70: 0x160, 72: 0x160, 75: 0x160, 80: 0x160, 86: 0x160, 87: 0x160, 89: 0x160, 90: 0x210}
"""Offset in constant bank 0 of a kernel's first argument, per SM version ([PARAM])."""

LAUNCH_DIMS = {0x0: "blockDim.x", 0x4: "blockDim.y", 0x8: "blockDim.z", 0xC: "gridDim.x", 0x10: "gridDim.y",
               0x14: "gridDim.z"}  # fmt: skip
"""What the first words of constant bank 0 hold ([PARAM])."""


def param_base(sm: int | None) -> int | None:
    """The constant-bank offset of the first kernel argument on ``sm`` (None when not known).

    Examples
    --------
    >>> hex(param_base(90)), hex(param_base(86)), param_base(100)
    ('0x210', '0x160', None)
    """
    return PARAM_BASE.get(sm) if sm is not None else None


def constructs_markdown() -> str:
    """docs/constructs.md: the table of idioms, generated from :data:`IDIOMS` (tests/test_docs.py checks it)."""
    out = [
        "# Source constructs kprof reads from the SASS",
        "",
        "Generated from `kprof/knowledge/constructs.py` (do not edit by hand). Each idiom is recognised from the",
        "executed SASS and its data flow (`kprof/facts/constructs.py`); a diagnosis whose bottleneck it explains names",
        "it on its source line and writes the change (`kprof/diagnose/fixes/constructs.py`), with the line rewritten",
        "when the report embeds the source.",
        "",
    ]
    for i in IDIOMS.values():
        out += [
            f"## {i.id}: {i.construct}",
            "",
            f"- **SASS**: {i.sass}.",
            f"- **Explains**: {', '.join(f'`{b}`' for b in i.explains)}.",
            f"- **CUDA C++**: {i.cuda}. **Change**: {i.cuda_change}.",
            f"- **Triton**: {i.triton}. **Change**: {i.triton_change}.",
            f"- **PyTorch**: {i.pytorch}. **Change**: {i.pytorch_change}.",
        ]
        if i.confusable:
            out.append(f"- **What the SASS cannot tell**: {i.confusable}")
        if i.source:
            out.append(f"- **Source**: {i.source}.")
        out.append("")
    sources = (__doc__ or "").split("Sources:", 1)[-1].strip()
    out += ["## Sources", "", sources]
    return "\n".join(out)


__all__ = [
    "ALIAS_RELOAD",
    "ATOMIC_IN_LOOP",
    "BRANCH_ON_DATA",
    "BRANCH_ON_LANE",
    "CONSTANT_QUOTIENT_INSTRUCTIONS",
    "FP64_PROMOTION",
    "HALF_ROUND_TRIP",
    "IDIOMS",
    "INDEX64",
    "LAUNCH_DIMS",
    "LOCAL_INDEXED_ARRAY",
    "PARAM_BASE",
    "PREDICATED_LOAD",
    "REGISTER_SPILL",
    "RUNTIME_DIVISION",
    "SYNC_IN_LOOP",
    "TRIG_SLOW_PATH",
    "Idiom",
    "constructs_markdown",
    "param_base",
]
