"""Fixes in the kernel's language for memory mechanisms: coalescing, bank conflicts, local memory, atomics."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from itertools import pairwise

from kprof.diagnose.fixes.context import Context, L, Text, keep_with_line, sass_index, where_sentence
from kprof.diagnose.fixes.source import (
    clip,
    has_loop,
    padded,
    shared_declaration,
    strided_access,
    strip_comments,
    thread_varying,
)
from kprof.diagnose.where import address_from_load
from kprof.model import SourceLine
from kprof.rules.kernel.atomics import distinct_addresses
from kprof.rules.kernel.local import register_cap


def uncoalesced(c: Context) -> Text:
    """A data-dependent gather (its address from a load: keep more in flight), a row walked by each thread (a warp
    per row), else the strided index to swap or the layout to change, written for the kernel's language."""
    mech = where_sentence(c, "excess sectors")
    w = c.top
    i = sass_index(c, w)
    if w is not None and i is not None and address_from_load(c.k.sass, i):
        return _gather(c, mech)
    if c.is_cuda:
        walk = _row_walk(c, mech)
        if walk is not None:
            return walk
        return _strided_cuda(c, mech)
    return mech, _layout(c)


_UNIT_LOOP = re.compile(
    r"for\s*\(\s*(?:int|long|unsigned|size_t|long long)?\s*(\w+)\s*=\s*([^;]+?)\s*;\s*\1\s*<=?\s*([^;]+?)\s*;"
    r"\s*(?:\+\+\s*\1|\1\s*\+\+|\1\s*\+=\s*1)\s*\)"
)


@dataclass(frozen=True, slots=True)
class RowWalk:
    """Each thread walks a row of its own, one element per iteration: ``ptr[j]`` with ``ptr = base + lane * stride``
    (or ``base[lane * stride + j]``) inside ``for (j = ...; j < bound; ++j)``."""

    array: str
    """What the line indexes (``a``)."""
    lane: str
    """The lane-varying variable that picks the row (``row``)."""
    stride: str
    """The row length (``N``)."""
    loop: str
    """The loop counter that walks the row (``j``)."""
    bound: str
    decl: str
    """The statement that puts the lanes a row apart (``const float* a = A + (size_t)row * N;``)."""
    reduction: bool
    """The line accumulates (``acc += ...``): a dot product or sum per row."""


def row_walk(line: str, source: str) -> RowWalk | None:
    """The one-thread-per-row pattern on ``line``: lanes a row apart, each thread stepping one element at a time.

    Examples
    --------
    >>> src = "int row = blockIdx.x * blockDim.x + threadIdx.x; const float* a = A + (size_t)row * N;"
    >>> w = row_walk("for (int j = 0; j < N; ++j) acc += a[j] * x[j];", src)
    >>> w.array, w.lane, w.stride, w.loop, w.reduction
    ('a', 'row', 'N', 'j', True)
    >>> row_walk("for (int j = 0; j < 32; j += 8) out[x * n + y + j] = in[(y + j) * n + x];", "int x = threadIdx.x;")
    """
    loop = _UNIT_LOOP.search(line)
    if loop is None:
        return None
    j, bound = loop.group(1), loop.group(3).strip()
    if bound.isdigit() and int(bound) < 32:
        return None  # a short fixed walk (a tile's few elements): not a row
    clean = strip_comments(source)
    varying = thread_varying(clean)
    body = line[loop.end() :]
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\[([^\[\]]+)\]", body):
        array, idx = m.group(1), _CAST_RE.sub("", m.group(2)).strip()
        if re.fullmatch(rf"{re.escape(j)}(\s*[+-]\s*\w+)?", idx):
            decl = re.search(
                rf"(?:(?:const\s+)?[\w:<>]+\s*\*\s*(?:__restrict__\s*)?)?\b{re.escape(array)}\s*=\s*(\w+)\s*\+\s*([^;]+);",
                clean,
            )
            if decl is None:
                continue
            acc = strided_access(f"{decl.group(1)}[{decl.group(2)}]", varying)
            if acc is None or acc.others not in ("", "0"):
                continue
            return RowWalk(
                array, acc.var, acc.stride, j, bound, " ".join(decl.group(0).split()), "+=" in body
            )
        acc = strided_access(f"{array}[{idx}]", varying)
        if acc is not None and re.fullmatch(rf"{re.escape(j)}", acc.others.strip()):
            return RowWalk(array, acc.var, acc.stride, j, bound, f"{array}[{idx}]", "+=" in body)
    return None


_CAST_RE = re.compile(r"\(\s*(?:long|int|unsigned|size_t|int64_t|uint64_t|long long|unsigned long)\s*\)")


def _width(opcode: str) -> int:
    """Bytes per lane of a load: ``LDG.E.128`` 16, ``.64`` 8, else 4."""
    return 16 if ".128" in opcode else 8 if ".64" in opcode else 4


def walk_offsets(c: Context, i: int) -> list[int]:
    """The immediate offsets of the loads near SASS index ``i`` that share its base register, when they step by the
    load's width (``[R4.64+-0x8]``, ``[R4.64+-0x4]``, ``[R4.64]``, ...: one thread reading consecutive elements, an
    unrolled walk); [] otherwise."""
    sass = c.k.sass
    base = re.search(r"\[(R\d+)(?:\.64)?(?:\+-?0x[0-9a-f]+)?\]\s*$", sass[i].text)
    if base is None:
        return []
    reg, width = base.group(1), _width(sass[i].opcode)
    offs: set[int] = set()
    for s in sass[max(0, i - 32) : i + 32]:
        if s.mnemonic != "LDG":
            continue
        m = re.search(rf"\[{reg}(?:\.64)?(?:\+(-?)0x([0-9a-f]+))?\]\s*$", s.text)
        if m is not None:
            offs.add((-1 if m.group(1) else 1) * int(m.group(2) or "0", 16))
    steps = sorted(offs)
    if len(steps) < 3 or any(b - a != width for a, b in pairwise(steps)):
        return []
    return steps


def _row_walk(c: Context, mech: str) -> Text | None:
    """CUDA C++: each thread reduces (or copies) a row of its own, so a warp's load reads a column of 32 rows."""
    w = c.top
    walk = row_walk(w.text, c.source) if w and w.text else None
    if w is None or walk is None:
        return None
    i = sass_index(c, w)
    width = _width(c.k.sass[i].opcode) if i is not None else 4
    steps = walk_offsets(c, i) if i is not None else []
    seen = (
        f" (the SASS shows it: {c.k.sass[i].mnemonic}s at {len(steps)} offsets {width} bytes apart from one "
        "base register)"
        if steps and i is not None
        else ""
    )
    mech += (
        f" Each thread walks a row of its own: `{walk.decl}` puts neighbouring lanes `{walk.stride}` elements (one "
        f"row) apart, and the loop over `{walk.loop}` moves each thread one element per iteration{seen}, so every "
        f"load instruction of the warp reads one column of 32 rows, one sector per lane, {width} useful bytes in each."
    )
    lanes = (
        f"`row = (blockIdx.x * blockDim.x + threadIdx.x) / 32`, lanes stride over the row "
        f"(`for ({walk.loop} = lane; {walk.loop} < {walk.bound}; {walk.loop} += 32)`, or over float4s of it when "
        f"`{walk.stride}` is a multiple of 4 and the rows are 16-byte aligned)"
    )
    if walk.reduction:
        fix = (
            f"Give each row to one warp instead of one thread on line {w.line}: {lanes}, so a warp's load reads "
            "128 (or 512) contiguous bytes; then add the 32 partial sums with "
            "`for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);` and let lane 0 write the "
            "row's result. Launch 32x as many threads (one warp per row)."
        )
    else:
        fix = (
            f"Give each row to one warp instead of one thread on line {w.line}: {lanes}, so a warp's load reads 128 "
            "(or 512) contiguous bytes. Launch 32x as many threads (one warp per row)."
        )
    return mech, fix


def _gather(c: Context, mech: str) -> Text:
    """The uncoalesced load takes its address from loaded data: re-indexing cannot help."""
    where = c.line_ref() or "this load"
    mech += (
        " Its address is computed from a value loaded just before (a data-dependent gather: a pointer chase, "
        "hash probe or index lookup), so each lane lands on its own sector by nature; coalescing cannot be "
        "restored by re-indexing, and the cost is one memory latency per step."
    )
    if c.lang in (L.PYTORCH, L.LIBRARY):
        return mech, None
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            f"The addresses at {where} come from loaded indices: sort or bucket the indices first so neighbouring "
            "lanes gather neighbouring rows, and give each program several independent gathers (larger BLOCK, "
            "num_warps=8) so more of them are in flight."
        )
    return mech, (
        f"Keep more of these dependent loads in flight instead of re-indexing {where}: give each thread several "
        "independent chains (walk 4-8 lists or probe 4-8 keys per thread, interleaved), keep occupancy high, and "
        "where the data allows, reorder it so that neighbouring lanes' targets are adjacent (sort the keys, lay a "
        "list out in traversal order)."
    )


def _strided_cuda(c: Context, mech: str) -> Text:
    """CUDA C++: the lane-varying variable with a non-unit stride on the responsible line, and the swap."""
    w = c.top
    acc = strided_access(w.text, thread_varying(c.source)) if w and w.text else None
    if w is None or acc is None:
        return mech, keep_with_line(c)
    mech += (
        f" `{acc.var}` follows threadIdx.x and is multiplied by `{acc.stride}` in `{acc.array}[...]`, so "
        f"neighbouring lanes read elements `{acc.stride}` apart and each lane pulls its own 32-byte sector."
    )
    if acc.others in ("", "0"):
        fix = (
            f"`{acc.array}[{acc.var} * {acc.stride}]` on line {w.line} reads every `{acc.stride}`-th element: "
            f"store the elements this kernel reads contiguously where `{acc.array}` is produced (a structure of "
            f"arrays: this field in its own array), so the read becomes `{acc.array}[{acc.var}]` and a warp reads "
            "128 contiguous bytes."
        )
        return mech, fix
    fix = (
        f"Make `{acc.var}` the unit-stride index of `{acc.array}` on line {w.line}: store `{acc.array}` transposed "
        f"(once, where it is written) so the read becomes `{acc.array}[{acc.others} * <row length> + {acc.var}]` "
        "and a warp reads 128 contiguous bytes. If the layout cannot change, stage a tile through shared memory: "
        "read it with threadIdx.x along the contiguous dimension, then read the transposed element from a "
        "[32][33] shared tile (the padding keeps those reads conflict-free)."
    )
    return mech, fix


def _layout(c: Context) -> str:
    """Triton, torch.compile, PyTorch or a library: the layout to change where the tensor is produced."""
    if c.lang is L.TRITON:
        ref = c.line_ref() or "the load"
        return (
            f"On {ref}, build the pointer block so its last axis runs along the tensor's stride-1 dimension: "
            "`ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n` with `stride_n == 1` (pass a contiguous "
            "tensor, or load the block in its stored order and `tl.trans` it in registers instead of loading it "
            "transposed). On sm_90, a tensor descriptor (`tl.make_tensor_descriptor`) lets TMA fetch whole tiles."
        )
    if c.lang is L.INDUCTOR:
        return (
            "This kernel was generated by torch.compile and reads an input in a permuted layout: produce that tensor "
            "contiguous in the order this op consumes it (or keep one memory format end to end, e.g. channels_last), "
            "and check the generated loads with TORCH_LOGS=output_code."
        )
    if c.lang is L.PYTORCH:
        name = c.k.display_name
        if re.search(r"scatter_gather|index|gather|embedding", name, re.I):
            return (
                "This is PyTorch's gather/index kernel reading where scattered indices point (index_select, gather, "
                "embedding, advanced indexing): sort the indices first (`idx, perm = idx.sort()`, gather, then undo "
                "the permutation) so neighbouring lanes read neighbouring rows, or gather whole contiguous rows "
                "(index the leading dimension) instead of single elements."
            )
        if re.search(r"copy", name, re.I):
            return (
                "This is PyTorch's copy of a transposed or permuted view (`x.t().contiguous()`, "
                "`x.permute(...).contiguous()`, or an op that makes its input contiguous): each warp reads down a "
                "column. Drop the copy: hand the transposed view to its consumer (matmul/linear take it and "
                "cuBLAS transposes for free), keep the tensor in the layout it is produced in, or compile producer and "
                "consumer with torch.compile so the permute fuses into them."
            )
        return (
            "This PyTorch op reads a non-contiguous input (a transposed, permuted or strided view): make that input "
            "contiguous where it is produced, or compile the op with its producer (torch.compile) so the layout change "
            "fuses away."
        )
    return (
        f"{c.origin.library or 'The library'} reads its operands with a stride: pass them contiguous, with the "
        "library's layout flags (for a GEMM, transa/transb: in PyTorch a transposed view, not a strided slice) and "
        "leading dimensions that are multiples of 16 bytes."
    )


def bank_conflicts(c: Context) -> Text:
    """The padding (or swizzle) of the ``__shared__`` array the responsible line indexes."""
    mech = where_sentence(c, "excess shared-memory wavefronts")
    w = c.top
    if c.is_cuda:
        decl = shared_declaration(c.source, w.text) if w and w.text else None
        if w is None or decl is None or (w.instruction or "").startswith("ATOMS"):
            # shared atomics on data-chosen bins: padding a row cannot separate them; kernel.py's privatisation fix
            return mech, keep_with_line(c)
        typ, name, dims = decl
        now = f"__shared__ {typ} {name}" + "".join(f"[{d}]" for d in dims)
        macro = re.fullmatch(r".*\+\s*([A-Z_][A-Z0-9_]*)", dims[-1].strip())
        if macro:  # tile[32][32 + PAD]: the padding is already a knob
            mech += (
                f" `{name}` is declared `{now}` with `{macro.group(1)}` = 0: a row of 32 words puts the elements of "
                "one column in one bank, and a warp touching a column is served one word per wavefront."
            )
            return mech, (
                f"Set `{macro.group(1)}` to 1 so each row of `{name}` is padded by one word: the 32 elements of a column "
                f"then fall in 32 different banks and line {w.line} needs one wavefront per request. If the extra words "
                "matter, swizzle instead: index the column as `c ^ r` (row XOR column) on both the writes and the reads."
            )
        new = f"__shared__ {typ} {name}" + "".join(f"[{d}]" for d in dims[:-1]) + f"[{padded(dims[-1])}]"
        mech += (
            f" `{name}` is declared `{now}`: when a row is a multiple of 32 words, the elements of one column sit "
            "in one bank, and a warp touching a column is served one word per wavefront."
        )
        fix = (
            f"Pad each row of `{name}` by one word: declare it `{new};`, so the 32 elements of a column fall in 32 "
            f"different banks and line {w.line} needs one wavefront per request. If the extra words matter, swizzle "
            "instead: index the column as `c ^ r` (row XOR column) on both the writes and the reads."
        )
        return mech, fix
    if c.lang in (L.TRITON, L.INDUCTOR):
        ref = c.line_ref() or "the load feeding it"
        return mech, (
            f"Triton chooses the shared-memory layouts itself; replays here come from a layout conversion at {ref} "
            "(a tl.trans, a reduction over the non-contiguous axis, or a dot operand loaded in the other order). Load "
            "the block in the order it is consumed (the reduced or dot-K axis contiguous) so no transposing conversion "
            "is needed, and keep block dimensions powers of two of at least 16, which Triton swizzles."
        )
    return mech, (
        f"The conflicts are inside {c.origin.library or 'PyTorch'}'s kernel, which cannot be edited: change the call "
        "(contiguous inputs, the other memory format, shapes that are multiples of 8) so another kernel is picked."
    )


_LOCAL_ARRAY = re.compile(r"\b([\w:]+)\s+(\w+)\s*\[\s*(\d+)\s*\]\s*;")


_CONST_LOOP = re.compile(
    r"for\s*\(\s*(?:int|unsigned|long)?\s*(\w+)\s*=\s*[\w.]+\s*;\s*\1\s*<\s*(\d+|[A-Z_]+)\s*;"
)


def _static_line(c: Context, mnemonics: tuple[str, ...]) -> SourceLine | None:
    """The first source line holding one of ``mnemonics`` in the SASS listing (no counters needed)."""
    cands = [x for x in c.k.sass if x.mnemonic in mnemonics and x.file and x.line]
    # an address built from a register other than the stack pointer R1 is the run-time index worth naming
    dynamic = [x for x in cands if re.search(r"\[[^\]]*\bR(?!1\b)\d+", x.text)]
    for x in dynamic or cands:
        return SourceLine(
            file=x.file, line=x.line, text=c.k.source_line(x.file, x.line).strip(), instruction=x.opcode
        )
    return None


_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*([^,()]+?)\s*(?:,\s*([^,()]+?)\s*)?(?:,[^()]*)?\)")


def _int_value(expr: str, source: str) -> int | None:
    """An integer literal, or a ``#define NAME <int>`` of the source."""
    e = expr.strip()
    if e.isdigit():
        return int(e)
    m = re.search(rf"#\s*define\s+{re.escape(e)}\s+\(?\s*(\d+)\s*\)?\s*$", source, re.M)
    return int(m.group(1)) if m else None


def launch_bounds(c: Context) -> tuple[int, str, int | None, int | None] | None:
    """``(line, text, maxThreadsPerBlock, minBlocksPerMultiprocessor)`` of the ``__launch_bounds__`` on this
    kernel's declaration in the embedded source; None without one."""
    src = c.source
    if not src:
        return None
    name = re.escape(c.k.display_name.split("(")[0].split("<")[0].split("::")[-1].strip())
    clean = strip_comments(src)
    for m in _LAUNCH_BOUNDS.finditer(clean):
        # the declaration it belongs to: the next identifier followed by "(" after the bound
        if not re.match(rf"[\s\w*&:<>,]*?\b{name}\s*\(", clean[m.end() : m.end() + 400]):
            continue
        line = clean[: m.start()].count("\n") + 1
        text = src.splitlines()[line - 1].strip() if line <= len(src.splitlines()) else m.group(0)
        mx = _int_value(m.group(1), clean)
        mn = _int_value(m.group(2), clean) if m.group(2) else None
        return line, text, mx, mn
    return None


def _register_cap(c: Context, mech: str) -> Text | None:
    """Spills under the register cap that ``__launch_bounds__`` sets: the bound to change, on its line."""
    bound = launch_bounds(c) if "register spill" in c.d.headline else None
    if bound is None or not bound[2]:
        return None
    line, text, mx, mn = bound
    cap, regs = register_cap(c.k, (mx or 0) * (mn or 1)), c.k.registers_per_thread
    if cap is None or cap >= 255 or not regs or regs < cap:
        return None
    lb = re.search(r"__launch_bounds__\s*\([^)]*\)", text)
    said = lb.group(0) if lb else f"__launch_bounds__({mx})"
    mech += (
        f" The cap of {cap} comes from `{said}` on line {line}: ptxas must fit "
        + (f"{mn} blocks of {mx} threads" if mn and mn > 1 else f"a block of {mx} threads")
        + " in the SM's registers."
    )
    if mn and mn > 1 and mx:
        new, allows, how = f"__launch_bounds__({mx})", register_cap(c.k, mx), ""
    else:
        new, allows = "__launch_bounds__(256)", register_cap(c.k, 256)
        how = " and launch 256-thread blocks" + (
            f" ({(mx or 256) // 256}x as many)" if mx and mx > 256 else ""
        )
    at = (
        f" The LDL/STL sit on line {c.top.line}, but the cap, not that line, is what to change."
        if c.top
        else ""
    )
    fix = (
        f"Loosen the bound on line {line}: declare `{new}`{how} instead of `{said}`, which lets ptxas use up to "
        f"{allows} registers per thread instead of {cap}; check with -Xptxas -v that the spill stores fall to 0 "
        f"bytes.{at}"
    )
    return mech, fix


def local_memory(c: Context) -> Text:
    """The per-thread array indexed at run time on the responsible line, and where it can live instead."""
    mech = where_sentence(c, "local-memory sectors")
    if c.is_cuda:
        capped = _register_cap(c, mech)
        if capped is not None:
            return capped
        w = c.top or _static_line(c, ("LDL", "STL"))
        src = strip_comments(c.source)
        arrays = {m.group(2): (m.group(1), int(m.group(3))) for m in _LOCAL_ARRAY.finditer(src)}
        used = [a for a in arrays if w and re.search(rf"\b{re.escape(a)}\s*\[", w.text)]
        said = " ".join([c.d.headline, c.d.mechanism, c.d.fix, *(e.reference for e in c.d.evidence)])
        if w is None or not used or not re.search(r"dynamic|run-time", said):
            return mech, keep_with_line(c)
        name = used[0]
        typ, size = arrays[name]
        index = re.search(rf"\b{re.escape(name)}\s*\[([^\]]+)\]", w.text)
        idx = index.group(1).strip() if index else "?"
        loops = {m.group(1) for m in _CONST_LOOP.finditer(src)}
        if re.fullmatch(r"\w+", idx) and idx in loops:
            return mech, (
                f"`{name}[{idx}]` on line {w.line} is indexed by the counter of a fixed-trip loop: unroll that loop "
                "completely (`#pragma unroll`) so every index is a constant and ptxas keeps the array in registers."
            )
        elem = 4 if typ in ("float", "int", "unsigned", "uint32_t", "int32_t") else 8
        fix = (
            f"`{name}[{idx}]` on line {w.line} is indexed with a value computed at run time, so the array cannot live "
            f"in registers: move it to shared memory as `__shared__ {typ} {name}_s[{size}][BLOCK]` indexed "
            f"`{name}_s[{idx}][threadIdx.x]`; each lane keeps its own bank column, so the accesses are conflict-free."
        )
        tpb = c.k.threads_per_block
        if tpb:
            nbytes = size * tpb * elem
            fix += f" That is {nbytes // 1024} KB per block at {tpb} threads" + (
                ", above the 48 KB of static shared memory: allocate it dynamically "
                "(cudaFuncAttributeMaxDynamicSharedMemorySize) or use smaller blocks."
                if nbytes > 48 * 1024
                else "."
            )
        return mech, fix
    if c.lang in (L.TRITON, L.INDUCTOR):
        regs = c.k.registers_per_thread
        return mech, (
            "The program holds more values than fit in registers"
            + (f" ({regs} registers per thread)" if regs else "")
            + ": lower the BLOCK sizes or num_stages, or raise num_warps so each thread holds fewer elements of "
            "the block."
        )
    return mech, (
        f"{c.origin.library or 'PyTorch'}'s kernel spills for this configuration and cannot be edited: another "
        "dtype or shape (or a newer release) selects a different kernel."
    )


def _atomic_kind(c: Context) -> str:
    """``float``, ``int`` or ``unknown``: the type the responsible atomic updates."""
    ins = c.top.instruction if c.top else ""
    if re.search(r"\.F32|\.F64|\.F16|\.BF16", ins):
        return "float"
    if re.search(r"\.S32|\.U32|\.S64|\.U64|\.ADD(?!\.F)", ins):
        return "int"
    return "unknown"


_ATOMIC_TYPES = {
    "F32": "float",
    "F64": "double",
    "F16x2": "__half2",
    "S32": "int",
    "U32": "unsigned",
    "U64": "unsigned long long",
}


def _atomic_type(c: Context) -> str:
    """The operand type modifier of the responsible atomic (``F32`` in ``REDG.E.ADD.F32.FTZ``); ``S32`` when it has
    none (an integer add defaults to 32 bits)."""
    ins = c.top.instruction if c.top else ""
    m = re.search(r"\.(F32|F64|F16x2|S32|U32|U64|S64)\b", ins or "")
    return m.group(1) if m else "S32"


def _atomic_bins(text: str) -> tuple[str, int] | None:
    """``(index, n)`` when an atomic's address is ``array[x & (n-1)]`` or ``array[x % n]`` with n a power of two
    below 32: the lanes of a warp then share n addresses, lanes l, l+n, l+2n, ... the same one."""
    m = re.search(r"atomic\w*\s*\(\s*&?\s*\w+\s*\[\s*([^\]]*?(?:&\s*(\d+)|%\s*(\d+)))\s*\]", text)
    if not m:
        return None
    n = int(m.group(2)) + 1 if m.group(2) else int(m.group(3))
    if n < 2 or n > 16 or n & (n - 1):
        return None
    return m.group(1).strip(), n


def _atomic_call(text: str) -> tuple[str, str, str] | None:
    """``(array, index, value)`` of ``atomicAdd(&array[index], value)`` on a source line (brackets may nest:
    ``out[label[i]]``).

    Examples
    --------
    >>> _atomic_call("atomicAdd(&out[label[i]], val[i]);")
    ('out', 'label[i]', 'val[i]')
    """
    m = re.search(r"atomic\w*\s*\(\s*&\s*(\w+)\s*\[", text)
    if m is None:
        return None
    depth, j = 1, m.end()
    while j < len(text) and depth:
        depth += {"[": 1, "]": -1}.get(text[j], 0)
        j += 1
    rest = re.match(r"\s*,\s*", text[j:])
    if depth or rest is None:
        return None
    idx, k, paren = text[m.end() : j - 1].strip(), j + rest.end(), 0
    for e in range(k, len(text)):
        ch = text[e]
        if ch == ")" and paren == 0:
            return m.group(1), idx, text[k:e].strip()
        paren += {"(": 1, ")": -1}.get(ch, 0)
    return None


def _data_dependent_target(c: Context) -> bool:
    """The responsible atomic's address is computed from a value loaded from global memory (``out[label[i]]``: its
    REDG/ATOMG address register traces back to an LDG), so the lanes of a warp update addresses the data chooses."""
    w = c.top
    i = sass_index(c, w)
    if w is None or i is None or not (w.instruction or "").startswith(("RED", "ATOM")):
        return False
    s = c.k.sass[i]
    # `REDG.E.ADD.F32 desc[UR8][R2.64], R7`: the address is the bracket holding a vector register
    addr = [b for b in re.findall(r"\[[^\]]*\]", s.text) if re.search(r"\bR\d+", b)]
    if not addr:
        return False
    lines = list(c.k.sass)
    lines[i] = replace(s, text=f"{s.opcode} {addr[-1]}")
    return address_from_load(lines, i)


def _privatize(c: Context, mech: str, loaded: bool) -> Text:
    """Lanes of a warp update different, data-chosen addresses: a warp sum would mix them; privatize per block."""
    top = c.top
    call = _atomic_call(top.text) if top else None
    why = (
        ": the atomic's address register is computed from a value an LDG loaded just before"
        if loaded
        else ", as the L2 counters show (several sectors per update request)"
    )
    if top is not None and call is not None:
        arr, idx, val = call
        mech += (
            f" The target `{arr}[{idx}]` is chosen by the data{why}, so the lanes of a warp update different "
            f"elements of `{arr}`."
        )
        typ = _ATOMIC_TYPES.get(_atomic_type(c), "T")
        loop = (
            "in the loop"
            if has_loop(c.k)
            else "(give each block many elements first: a grid-stride loop over a grid of a few blocks per SM, so "
            "each copy absorbs many updates)"
        )
        fix = (
            f"Privatize `{arr}` per block on line {top.line} (`{clip(top.text)}`): keep a block copy in shared memory "
            f"(`extern __shared__ {typ} s_{arr}[];`, one slot per element of `{arr}`, zeroed before a "
            f"`__syncthreads()`), do `atomicAdd(&s_{arr}[{idx}], {val});` {loop} (shared-memory atomics are "
            f"applied in the SM), then after a `__syncthreads()` let the block's threads add the copy into `{arr}`, "
            f"one global atomicAdd per element of `{arr}` per block. Do not sum the warp's values with a shuffle: "
            f"its lanes carry different `{idx}`. If `{arr}` is too large for shared memory, sort the pairs by key "
            "(cub::DeviceRadixSort::SortPairs) and reduce each run (cub::DeviceReduce::ReduceByKey)."
        )
        return mech, fix
    mech += f" The lanes of a warp update addresses chosen by the data{why}."
    ref = c.line_ref() or "the atomic update"
    return mech, (
        f"Privatize the updated array per block at {ref}: accumulate into a shared-memory copy with shared atomics, "
        "then add the copy into global memory once per element per block. A warp shuffle sum does not apply: the "
        "lanes update different addresses. If the array is too large for shared memory, sort by key and reduce "
        "each run (cub::DeviceReduce::ReduceByKey)."
    )


def atomics(c: Context) -> Text:
    """A warp (or bin) reduction before the atomic on the responsible line; per-block privatization when the lanes
    of a warp update different, data-chosen addresses."""
    mech = where_sentence(c, "executed atomics")
    kind = _atomic_kind(c)
    top = c.top
    if c.is_cuda:
        loaded = _data_dependent_target(c)
        if loaded or distinct_addresses(c.k):
            return _privatize(c, mech, loaded)
    bins = _atomic_bins(top.text) if c.is_cuda and top else None
    if top is not None and bins is not None and kind != "int":
        idx, n = bins
        stop = n
        mech += (
            f" The address index `{idx}` takes only {n} values, so the lanes of every warp pile onto {n} addresses "
            "and each update waits for the one before it."
        )
        return mech, (
            f"Sum per bin inside the warp before the atomic on line {top.line}: lanes l, l+{n}, l+{2 * n}, ... share a "
            f"bin, so `for (int o = 16; o >= {stop}; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);` leaves the "
            f"{n} bin sums in lanes 0-{n - 1}, and only those lanes issue the atomicAdd ({32 // n}x fewer atomics). "
            f"Better still, accumulate per thread over a grid-stride loop, then per block in {n} shared-memory bins, and "
            "add those once per block."
        )
    if c.is_cuda:
        ref = c.line_ref() or "the atomic update"
        warp = (
            "`for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);`"
            if kind != "int"
            else "`v = __reduce_add_sync(0xffffffff, v);` (sm_80+, integers only) or a `__shfl_down_sync` loop"
        )
        return mech, (
            f"Replace the per-thread atomic{' on ' + ref if c.line_ref() else ''} with one atomic per warp: sum the "
            f"warp's 32 values with a warp shuffle, {warp}, "
            "and let lane 0 issue the atomicAdd (32x fewer atomics on the hot addresses). Better still, accumulate "
            "in registers over a grid-stride loop first, or keep per-block partial sums in shared memory and add "
            "them once per block."
        )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "Reduce inside the program before touching global memory: `tl.sum(vals, axis=0)` (per bin, if it "
            "accumulates into bins) and one `tl.atomic_add` per program, instead of one per element."
        )
    return mech, (
        "Many updates land on few addresses (index_add_, scatter_add_, index_put_(accumulate=True), bincount or "
        "histc with few bins): group equal targets first (sort the indices, or `torch.unique(idx, "
        "return_inverse=True)`) and reduce them densely, so each address is written once."
    )
