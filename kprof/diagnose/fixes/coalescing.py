"""Fixes in the kernel's language for uncoalesced global access: a data-dependent gather, a row walked by each
thread, a strided index to swap, or the layout to change where the tensor is produced."""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from kprof import thresholds as th
from kprof.diagnose.fixes.context import B, Context, L, Text, keep_with_line, pct, sass_index, where_sentence
from kprof.diagnose.fixes.source import strided_access, strip_comments, thread_varying
from kprof.diagnose.sass import GLOBAL_LOADS, dataflow
from kprof.diagnose.where import MEASURES, address_from_load
from kprof.model import SourceLine


def uncoalesced(c: Context) -> Text:
    """A data-dependent gather (its address from a load: keep more in flight), a row or a segment walked by each
    thread (a warp per row), else the strided index to swap or the layout to change, written for the kernel's
    language. A line that holds both a gather and a walk (``s += val[j] * x[col[j]]``) is judged by which carries
    most of its excess sectors (:func:`line_dependent_share`), and the other is named."""
    mech = where_sentence(c, "excess sectors")
    w = c.top
    i = sass_index(c, w)
    dep = line_dependent_share(c, w)
    if dep is None:
        dep = 1.0 if w is not None and i is not None and address_from_load(c.k.sass, i) else 0.0
    if dep >= th.DEPENDENT_LOAD_SHARE:
        return _gather(c, mech)
    rest = _gather_remains(c, dep)
    if c.is_cuda:
        walk = _row_walk(c, mech) or _segment_walk(c, mech)
        if walk is not None:
            return walk[0] + rest, walk[1]
        text = _strided_cuda(c, mech)
        return text[0] + rest, text[1]
    return mech + rest, _layout(c)


def line_dependent_share(c: Context, w: SourceLine | None) -> float | None:
    """Share of the excess global load sectors of ``w``'s line (or of its one instruction, without line info) that
    data-dependent loads carry (:attr:`~kprof.diagnose.sass.Dataflow.dependent_pcs`); None without ncu's per-PC
    sectors."""
    if w is None or not c.k.sass:
        return None
    entry = min(s.pc for s in c.k.sass)
    if w.line is not None:
        mine = [s for s in c.k.sass if s.line == w.line and s.file == w.file]
    else:
        mine = [s for s in c.k.sass if w.pc is not None and s.pc - entry == w.pc]
    dependent_pcs = dataflow(c.k.sass).dependent_pcs
    excess_of = MEASURES[B.UNCOALESCED_GLOBAL_ACCESS].per_pc  # the excess sectors `where` attributes
    total = dep = 0.0
    for s in mine:
        if s.mnemonic not in GLOBAL_LOADS:
            continue
        excess = excess_of(s)
        total += excess
        if s.pc in dependent_pcs:
            dep += excess
    return dep / total if total > 0 else None


def _gather_remains(c: Context, dep: float) -> str:
    """The sentence for the part of the line's excess that a gather on it carries, when it is not negligible."""
    if dep < GATHER_NAMED_SHARE:
        return ""
    w = c.top
    m = _GATHER_RE.search(w.text) if w is not None and w.text else None
    what = f"`{m.group(0)}`" if m else "The line's gather"
    return (
        f" {what} takes its address from data loaded at each step ({pct(dep)} of this line's excess sectors): "
        "that part stays scattered after the change below."
    )


GATHER_NAMED_SHARE = 0.10
"""A gather carrying at least this share of the responsible line's excess sectors is named in the mechanism (a
wording threshold: below it the remaining scatter changes the outcome by less than the run-to-run noise of a
memory-bound kernel's duration, about 2-5% on the samples, data/samples/ncu_noise.csv)."""

_GATHER_RE = re.compile(r"[A-Za-z_]\w*\s*\[[^\[\]]*\b[A-Za-z_]\w*\s*\[[^\[\]]+\][^\[\]]*\]")
"""``x[col[j]]``: an array indexed by an expression that reads another array."""


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


@dataclass(frozen=True, slots=True)
class SegmentWalk:
    """Each thread walks a segment of its own whose start it loads: ``for (j = ptr[r]; j < ptr[r + 1]; ++j)``
    with ``r`` lane-varying, and the line reads arrays at ``[j]`` (a CSR row, a bag of an embedding, a bucket)."""

    arrays: tuple[str, ...]
    """The arrays read at ``[j]`` on the line (``val``, ``col``)."""
    lane: str
    """The lane-varying variable that picks the segment (``r``)."""
    start: str
    bound: str
    loop: str
    reduction: bool


def segment_walk(line: str, header: str, source: str) -> SegmentWalk | None:
    """The one-thread-per-segment pattern: ``header`` is the loop's ``for`` (on ``line`` itself or just above).

    Examples
    --------
    >>> src = "int r = blockIdx.x * blockDim.x + threadIdx.x;"
    >>> w = segment_walk("s += val[j] * x[col[j]];", "for (int j = rowptr[r]; j < rowptr[r + 1]; ++j)", src)
    >>> w.arrays, w.lane, w.start, w.bound, w.reduction
    (('val', 'col'), 'r', 'rowptr[r]', 'rowptr[r + 1]', True)
    >>> segment_walk("s += a[j];", "for (int j = 0; j < n; ++j)", src) is None
    True
    """
    loop = _UNIT_LOOP.search(header)
    if loop is None:
        return None
    j, start, bound = loop.group(1), loop.group(2).strip(), loop.group(3).strip()
    varying = thread_varying(strip_comments(source))
    lane = next(
        (
            v
            for m in re.finditer(r"\[([^\[\]]+)\]", start)
            for v in re.findall(r"[A-Za-z_]\w*", m.group(1))
            if v in varying
        ),
        None,
    )
    if lane is None:
        return None  # the start is not loaded per lane: not a segment of its own
    body = line[loop.end() :] if line is header else line
    arrays = tuple(dict.fromkeys(re.findall(rf"([A-Za-z_]\w*)\s*\[\s*{re.escape(j)}\s*\]", body)))
    if not arrays:
        return None
    return SegmentWalk(arrays, lane, start, bound, j, "+=" in body)


def _loop_header(c: Context, w: SourceLine) -> str | None:
    """The ``for`` header of the loop ``w``'s line is in: the line itself, or one of the 3 lines above it."""
    if _UNIT_LOOP.search(w.text or ""):
        return w.text
    lines = c.source.splitlines()
    if w.line is None or not lines:
        return None
    for n in range(w.line - 2, max(-1, w.line - 5), -1):
        if 0 <= n < len(lines) and _UNIT_LOOP.search(lines[n]):
            return lines[n]
    return None


def _segment_walk(c: Context, mech: str) -> Text | None:
    """CUDA C++: each thread walks a segment that starts where a loaded offset says (CSR), one element a step."""
    w = c.top
    if w is None or not w.text:
        return None
    header = _loop_header(c, w)
    walk = segment_walk(w.text, header, c.source) if header else None
    if walk is None or header is None:
        return None
    names = " and ".join(f"`{a}[{walk.loop}]`" for a in walk.arrays)
    mech += (
        f" Each thread walks a segment of its own: the loop over `{walk.loop}` starts at `{walk.start}`, a different "
        f"place for each lane, and steps one element at a time, so at each step a warp's loads of {names} read 32 "
        "elements from 32 segments, one sector per lane."
    )
    row = "row" if walk.lane != "row" else walk.lane
    sub = lambda e: re.sub(rf"\b{re.escape(walk.lane)}\b", row, e)  # noqa: E731
    lanes = (
        f"`{row} = (blockIdx.x * blockDim.x + threadIdx.x) / 32`, `lane = threadIdx.x & 31`, and the lanes stride "
        f"over the segment (`for (int {walk.loop} = {sub(walk.start)} + lane; {walk.loop} < {sub(walk.bound)}; "
        f"{walk.loop} += 32)`)"
    )
    fix = (
        f"Give each segment to one warp instead of one thread on line {w.line}: {lanes}, so a warp's loads of "
        f"{names} read consecutive elements"
        + (
            "; then add the 32 partial sums with "
            "`for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);` and let lane 0 write the "
            "result"
            if walk.reduction
            else ""
        )
        + ". Launch 32x as many threads. Where segments are much shorter than 32 elements, give each 4, 8 or 16 "
        "lanes instead, so fewer lanes idle."
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
