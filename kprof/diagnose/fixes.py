"""Fixes in the kernel's own language, at the line responsible.

:func:`localized_text` takes a diagnosis whose bottleneck the counters decided
(:mod:`kprof.diagnose.kernel`), the lines responsible (:mod:`kprof.diagnose.where`) and the
kernel's language (:mod:`kprof.diagnose.language`), and returns

- a sentence for the mechanism that says what the responsible line does at the instruction level
  (``LDG.E.CONSTANT`` with 32 sectors per request; ``col`` follows threadIdx.x and is multiplied by
  ``rows``), and
- the fix written for that language: CUDA C++ gets the change on that line; Triton gets
  ``tl.dot``'s ``input_precision``, block sizes, ``num_warps``/``num_stages``; PyTorch gets the call
  site (TF32 flags, dtype, layout, ``torch.compile``); a library kernel gets the call (dtype,
  shapes, batching), never "rewrite the kernel".

The verdict and numbers are never changed here: only their wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kprof.diagnose.language import Language, Origin
from kprof.diagnose.where import address_from_load
from kprof.kernel_model import KernelLaunch
from kprof.knowledge import instructions as ki
from kprof.model import Bottleneck, Diagnosis, SourceLine, Verdict

B = Bottleneck
L = Language


@dataclass(frozen=True, slots=True)
class Context:
    """What a fix is written from."""

    k: KernelLaunch
    d: Diagnosis
    origin: Origin
    where: tuple[SourceLine, ...]
    sm: int | None

    @property
    def top(self) -> SourceLine | None:
        return self.where[0] if self.where else None

    @property
    def lang(self) -> Language:
        return self.origin.language

    @property
    def is_cuda(self) -> bool:
        return self.lang in (L.CUDA, L.UNKNOWN)

    def line_ref(self, w: SourceLine | None = None, *, text: bool = True) -> str:
        """``line 22 (`pe = pos_t[...]`)``, or ``""`` without line info."""
        w = w if w is not None else self.top
        if w is None or w.line is None:
            return ""
        t = _clip(w.text) if text else ""
        return f"line {w.line}" + (f" (`{t}`)" if t else "")

    @property
    def source(self) -> str:
        """The text of the top line's file, when embedded."""
        w = self.top
        if w and w.file:
            return self.k.source_files.get(w.file) or ""
        # no line carries the waste (no per-PC counters): the user's own file, when the report embeds one
        return next(
            (self.k.source_files.get(f) or "" for f in self.origin.files if self.k.source_files.get(f)), ""
        )

    def evidence_value(self, metric: str) -> float | None:
        for e in self.d.evidence:
            if e.metric == metric and isinstance(e.value, int | float):
                return float(e.value)
        return None

    def evidence_reference(self, metric: str) -> float | None:
        for e in self.d.evidence:
            if e.metric == metric and e.reference_value is not None:
                return float(e.reference_value)
        return None


def _clip(text: str, n: int = 90) -> str:
    t = " ".join(text.split())
    t = re.sub(r"\s*(//|#).*$", "", t) or t  # drop a trailing comment
    return t if len(t) <= n else t[: n - 3] + "..."


def _pct(share: float | None) -> str:
    if share is None:
        return ""
    v = 100 * share
    return f"{v:.0f}%" if v >= 10 else f"{v:.2g}%"


def _where_sentence(c: Context, what: str) -> str:
    """``Line 22 (`...`) carries 100% of the excess L2 sectors: its LDG.E.CONSTANT moves 32 sectors ...``."""
    w = c.top
    if w is None:
        return ""
    loc = (
        c.line_ref()
        if w.line is not None
        else f"the instruction at SASS offset {w.pc:#x}"
        if w.pc is not None
        else ""
    )
    if not loc:
        return ""
    s = f"{loc[0].upper()}{loc[1:]} carries {_pct(w.share)} of the {w.quantity or what}"
    if w.instruction:
        s += f" ({w.instruction}" + (f", {w.detail}" if w.detail else "") + ")"
    others = [x for x in c.where[1:] if x.line is not None or x.pc is not None]
    if others:
        s += "; then " + ", ".join(
            (f"line {x.line}" if x.line is not None else f"SASS {x.pc:#x}") + f" ({_pct(x.share)})"
            for x in others
        )
    return s + "."


# ------------------------------------------------------------------------------------ CUDA C++ source reading
_ASSIGN = re.compile(
    r"(?:^|[;{(,\s])(?:const\s+)?(?:[A-Za-z_][\w:<>]*\s+)?([A-Za-z_]\w*)\s*=\s*([^;{},=][^;{},]*)[;,)]"
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def strip_comments(source: str) -> str:
    """C/C++ source without its comments (they mention variables in prose)."""
    return _COMMENT.sub(" ", source)


_THREAD_X = re.compile(r"threadIdx\.x|laneid|lane_id|\blane\b|\btid\b")


_WARP_UNIFORM = re.compile(r"threadIdx\.x\s*(>>\s*5|/\s*(32|warpSize))")


def _uses(expr: str, var: str) -> bool:
    """``var`` appears in ``expr`` as a variable (not as a member, as in ``blockIdx.x``)."""
    return re.search(rf"(?<![.\w]){re.escape(var)}\b", expr) is not None


def thread_varying(source: str) -> set[str]:
    """Variables whose value changes from one lane of a warp to the next (derived from ``threadIdx.x``).

    Examples
    --------
    >>> sorted(thread_varying("int row = blockIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x; long i = col + 1;"))
    ['col', 'i']
    """
    out: set[str] = set()
    assigns = [(m.group(1), m.group(2)) for m in _ASSIGN.finditer(strip_comments(source))]
    for _ in range(6):  # a few rounds of propagation through assignments
        grew = False
        for name, rhs in assigns:
            if name in out:
                continue
            if _WARP_UNIFORM.search(rhs) and not _THREAD_X.search(_WARP_UNIFORM.sub(" ", rhs)):
                continue  # threadIdx.x / 32: the same for all lanes of a warp
            if _THREAD_X.search(rhs) or any(_uses(rhs, v) for v in out):
                out.add(name)
                grew = True
        if not grew:
            break
    return out


def _top_level_terms(expr: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in expr:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch in "+-" and depth == 0 and cur.strip():
            terms.append(cur)
            cur = ""
            continue
        cur += ch
    if cur.strip():
        terms.append(cur)
    return [t.strip() for t in terms]


_CAST = re.compile(r"\(\s*(?:long|int|unsigned|size_t|int64_t|uint64_t|long long|unsigned long)\s*\)")


@dataclass(frozen=True, slots=True)
class StridedAccess:
    """``array[... var * stride ...]``: the lane-varying ``var`` is multiplied by ``stride``."""

    array: str
    var: str
    stride: str
    others: str
    """The rest of the index (what would become the slow part once the roles swap)."""


def strided_access(line: str, varying: set[str]) -> StridedAccess | None:
    """The first subscript on ``line`` whose lane-varying variable carries a non-unit stride.

    Examples
    --------
    >>> a = strided_access("const float pe = pos_t[(long)col * rows + row];", {"col"})
    >>> a.array, a.var, a.stride, a.others
    ('pos_t', 'col', 'rows', 'row')
    >>> strided_access("const float xv = x[idx];", {"idx"}) is None
    True
    """
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\[([^\[\]]+)\](\s*\[([^\[\]]+)\])?", line):
        array, first, second = m.group(1), m.group(2), m.group(4)
        if second is not None:  # array[a][b]: a lane-varying a strides by a whole row
            if any(_uses(first, v) for v in varying) and not any(_uses(second, v) for v in varying):
                var = next(v for v in varying if _uses(first, v))
                return StridedAccess(array, var, "the row length", second.strip())
            continue
        terms = _top_level_terms(_CAST.sub("", first))
        for i, t in enumerate(terms):
            factors = [f.strip().strip("()") for f in re.split(r"\*", t)]
            lane = [f for f in factors if f in varying or f == "threadIdx.x"]
            if not lane:
                continue
            rest = [f for f in factors if f not in lane]
            if rest and not all(re.fullmatch(r"1|1L|1l", f) for f in rest):
                others = " + ".join(x for j, x in enumerate(terms) if j != i) or "0"
                return StridedAccess(array, lane[0], " * ".join(rest), _CAST.sub("", others).strip())
    return None


_SHARED_DECL = re.compile(r"__shared__\s+([\w:]+)\s+(\w+)((?:\s*\[[^\]]+\])+)\s*;")


def shared_declaration(source: str, line: str) -> tuple[str, str, list[str]] | None:
    """``(type, name, dims)`` of the ``__shared__`` array that ``line`` indexes, when it is 2-D or more."""
    decls = {
        m.group(2): (m.group(1), m.group(2), re.findall(r"\[([^\]]+)\]", m.group(3)))
        for m in _SHARED_DECL.finditer(source)
    }
    for name in re.findall(r"([A-Za-z_]\w*)\s*\[", line):
        if name in decls and len(decls[name][2]) >= 2:
            return decls[name]
    return None


def _padded(dim: str) -> str:
    d = dim.strip()
    return str(int(d) + 1) if d.isdigit() else f"{d} + 1"


# ------------------------------------------------------------------------------------ per bottleneck
Text = tuple[str, str | None]
"""(sentence for the mechanism, new fix or None to keep the fix kernel.py wrote)."""


def _keep_with_line(c: Context) -> str | None:
    """The fix kernel.py wrote (CUDA C++), anchored on the responsible line."""
    ref = c.line_ref()
    if not ref or not c.d.fix:
        return None
    return f"On {ref}: {c.d.fix[0].lower()}{c.d.fix[1:]}"


def _sass_index(c: Context, w: SourceLine | None) -> int | None:
    if w is None or w.pc is None or not c.k.sass:
        return None
    entry = min(s.pc for s in c.k.sass)
    return next((i for i, s in enumerate(c.k.sass) if s.pc - entry == w.pc), None)


def _uncoalesced(c: Context) -> Text:
    mech = _where_sentence(c, "excess sectors")
    w = c.top
    i = _sass_index(c, w)
    if w is not None and i is not None and address_from_load(c.k.sass, i):
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
    if c.is_cuda:
        acc = strided_access(w.text, thread_varying(c.source)) if w and w.text else None
        if w is None or acc is None:
            return mech, _keep_with_line(c)
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
    if c.lang is L.TRITON:
        ref = c.line_ref() or "the load"
        return mech, (
            f"On {ref}, build the pointer block so its last axis runs along the tensor's stride-1 dimension: "
            "`ptr + offs_m[:, None] * stride_m + offs_n[None, :] * stride_n` with `stride_n == 1` (pass a contiguous "
            "tensor, or load the block in its stored order and `tl.trans` it in registers instead of loading it "
            "transposed). On sm_90, a tensor descriptor (`tl.make_tensor_descriptor`) lets TMA fetch whole tiles."
        )
    if c.lang is L.INDUCTOR:
        return mech, (
            "This kernel was generated by torch.compile and reads an input in a permuted layout: produce that tensor "
            "contiguous in the order this op consumes it (or keep one memory format end to end, e.g. channels_last), "
            "and check the generated loads with TORCH_LOGS=output_code."
        )
    if c.lang is L.PYTORCH:
        name = c.k.display_name
        if re.search(r"scatter_gather|index|gather|embedding", name, re.I):
            return mech, (
                "This is PyTorch's gather/index kernel reading where scattered indices point (index_select, gather, "
                "embedding, advanced indexing): sort the indices first (`idx, perm = idx.sort()`, gather, then undo "
                "the permutation) so neighbouring lanes read neighbouring rows, or gather whole contiguous rows "
                "(index the leading dimension) instead of single elements."
            )
        if re.search(r"copy", name, re.I):
            return mech, (
                "This is PyTorch's copy of a transposed or permuted view (`x.t().contiguous()`, "
                "`x.permute(...).contiguous()`, or an op that makes its input contiguous): each warp reads down a "
                "column. Drop the copy: hand the transposed view to its consumer (matmul/linear take it and "
                "cuBLAS transposes for free), keep the tensor in the layout it is produced in, or compile producer and "
                "consumer with torch.compile so the permute fuses into them."
            )
        return mech, (
            "This PyTorch op reads a non-contiguous input (a transposed, permuted or strided view): make that input "
            "contiguous where it is produced, or compile the op with its producer (torch.compile) so the layout change "
            "fuses away."
        )
    return mech, (
        f"{c.origin.library or 'The library'} reads its operands with a stride: pass them contiguous, with the "
        "library's layout flags (for a GEMM, transa/transb: in PyTorch a transposed view, not a strided slice) and "
        "leading dimensions that are multiples of 16 bytes."
    )


def _bank_conflicts(c: Context) -> Text:
    mech = _where_sentence(c, "excess shared-memory wavefronts")
    w = c.top
    if c.is_cuda:
        decl = shared_declaration(c.source, w.text) if w and w.text else None
        if w is None or decl is None or (w.instruction or "").startswith("ATOMS"):
            # shared atomics on data-chosen bins: padding a row cannot separate them; kernel.py's privatisation fix
            return mech, _keep_with_line(c)
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
        new = f"__shared__ {typ} {name}" + "".join(f"[{d}]" for d in dims[:-1]) + f"[{_padded(dims[-1])}]"
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


def _local_memory(c: Context) -> Text:
    mech = _where_sentence(c, "local-memory sectors")
    if c.is_cuda:
        w = c.top or _static_line(c, ("LDL", "STL"))
        src = strip_comments(c.source)
        arrays = {m.group(2): (m.group(1), int(m.group(3))) for m in _LOCAL_ARRAY.finditer(src)}
        used = [a for a in arrays if w and re.search(rf"\b{re.escape(a)}\s*\[", w.text)]
        said = " ".join([c.d.headline, c.d.mechanism, c.d.fix, *(e.reference for e in c.d.evidence)])
        if w is None or not used or not re.search(r"dynamic|run-time", said):
            return mech, _keep_with_line(c)
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
    ins = c.top.instruction if c.top else ""
    if re.search(r"\.F32|\.F64|\.F16|\.BF16", ins):
        return "float"
    if re.search(r"\.S32|\.U32|\.S64|\.U64|\.ADD(?!\.F)", ins):
        return "int"
    return "unknown"


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


def _atomics(c: Context) -> Text:
    mech = _where_sentence(c, "executed atomics")
    kind = _atomic_kind(c)
    top = c.top
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


def _divergence(c: Context) -> Text:
    w = c.top
    mech = ""
    if w is not None and w.line is not None:
        mech = (
            f"{c.line_ref()[0].upper()}{c.line_ref()[1:]} is where the warps split"
            + (f" ({w.detail})" if w.detail else "")
            + f"; {_pct(w.share)} of the idle lane slots are in the paths after it."
        )
    if c.is_cuda:
        cond = re.search(r"\b(if|switch|while)\s*\((.*)\)", w.text) if w else None
        if w and cond and "threadIdx.x" in cond.group(2):
            uniform = cond.group(2).replace("threadIdx.x", "(threadIdx.x / 32)")
            return mech, (
                f"Branch on the warp, not the lane: on line {w.line} write `{cond.group(1)} ({uniform})` instead of "
                f"`{cond.group(1)} ({cond.group(2)})`, and hand each warp the 32 elements of its path (index the data by "
                "warp and lane accordingly), so all 32 lanes of a warp take the same path and no lane slot idles."
            )
        if w and w.line is not None:
            return mech, (
                f"The condition on line {w.line} differs between lanes of a warp: group the elements by path before "
                "this kernel (sort or bin them by the condition) so each warp sees one path, or make short paths "
                "branch-free (compute both and select)."
            )
        return mech, None
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "Triton programs do not branch per lane: idle lanes come from masks (a BLOCK much larger than the valid "
            "`offs < n`, or tl.where evaluating both sides). Size BLOCK to the data so few lanes are masked off."
        )
    return mech, (
        f"The divergence is inside {c.origin.library or 'PyTorch'}'s kernel for these inputs: it depends on the "
        "values and shapes passed, not on code you can edit."
    )


def _fma_dtype(c: Context) -> str:
    for w in c.where:
        dt = ki.fma_dtype(w.instruction) if w.instruction else None
        if dt:
            return dt
    return "fp32"


_DTYPE_WORDS = {"fp32": "FP32", "fp64": "FP64", "fp16": "FP16", "bf16": "BF16", "tf32": "TF32"}


def _no_tensor_cores(c: Context) -> Text:
    dt = _fma_dtype(c)
    path = ki.matrix_path(c.sm, dt, c.k.device)
    a = ki.arch(c.sm)
    mech = _where_sentence(c, "FP arithmetic")
    if path is not None and a is not None:
        mech += f" On sm_{c.sm} ({a.name}) the tensor cores do this product as {path.sass}; none was issued."
    if path is None:
        if a is None:
            return mech, None  # the architecture is unknown: keep the generic advice
        fix = (
            f"This GPU has no tensor-core path for {_DTYPE_WORDS.get(dt, dt)} products: raise FMA density instead "
            "(register tiling: each thread computes a block of outputs from operands held in registers)."
        )
        return mech, fix
    if c.is_cuda:
        ref = c.line_ref(text=False) or "the inner product"
        inputs = (
            "TF32 inputs (FP32 range, 10-bit mantissa)"
            if dt == "fp32"
            else f"{_DTYPE_WORDS.get(dt, dt)} inputs"
        )
        wmma = {
            "fp32": "16x16x8 `wmma::precision::tf32` fragments",
            "fp64": "8x8x4 `double` fragments",
            "fp16": "16x16x16 `half` fragments",
            "bf16": "16x16x16 `__nv_bfloat16` fragments",
        }.get(dt)
        shared = [m.group(2) for m in _SHARED_DECL.finditer(strip_comments(c.source))]
        src = f" from `{'`/`'.join(shared[:2])}`" if shared else " from shared-memory tiles"
        cublas = {
            "fp32": "cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32",
            "fp64": "cublasDgemm",
            "fp16": "cublasGemmEx with CUDA_R_16F",
            "bf16": "cublasGemmEx with CUDA_R_16BF",
        }.get(dt, "cublasGemmEx")
        acc = "FP64" if dt == "fp64" else "FP32"
        base = ki.matrix_path(min(c.sm or 80, 89), dt, c.k.device) if wmma else None
        if wmma and base is not None:
            fix = (
                f"Replace the FMA loop on {ref} with a tensor-core tile product: nvcuda::wmma with {wmma} loaded{src} "
                f"(`load_matrix_sync`, `mma_sync`, `store_matrix_sync`; SASS {base.sass}): {inputs}, {acc} "
                "accumulation. "
            )
            if path.sass.split(" ")[0] != base.sass:
                fix += (
                    f"For this GPU's full tensor rate use {path.ptx.split(' (')[0]} (SASS {path.sass}) through "
                    f"{path.cuda}. "
                )
            fix += f"Or call cuBLAS ({cublas}). "
        else:
            fix = (
                f"Move the product on {ref} to the tensor cores with {inputs}: {path.cuda} ({path.ptx}, SASS "
                f"{path.sass}), or call cuBLAS ({cublas}). "
            )
        if dt == "fp32":
            fix += "If exact FP32 products are required, keep FFMA and raise FMA density with register tiling instead."
        return mech, fix.strip()
    if c.lang in (L.TRITON, L.INDUCTOR):
        text = c.top.text if c.top else ""
        prec = ki.triton_input_precision(text)
        warps = (c.k.threads_per_block or 0) // 32 or None
        target = ki.triton_dot(c.sm, "fp32", input_precision="tf32", num_warps=warps)
        emits = "MMA instructions"
        if target is not None:
            emits = f"{target.sass} ({'wgmma' if target.sass.endswith('GMMA') else 'mma.sync'})"
            if target.sass == "HGMMA":
                emits += " on sm_90 (BLOCK_M a multiple of 64, num_warps a multiple of 4" + (
                    f"; this launch has num_warps={warps})" if warps else ")"
                )
        ref = c.line_ref(text=False) or "the tl.dot"
        if dt == "fp32" and prec == "ieee":
            if "input_precision" in text:
                mech += ' `input_precision="ieee"` asks Triton for exact FP32 products, which it computes with FFMA.'
            else:
                mech += (
                    " `allow_tf32=False` asks Triton for exact FP32 products, which it computes with FFMA."
                )
            fix = (
                f'On {ref}, pass `input_precision="tf32"` (Triton\'s default on NVIDIA GPUs: inputs rounded to a '
                f"10-bit mantissa, FP32 accumulation) and Triton emits {emits}; "
                '`"tf32x3"` gets close to FP32 accuracy for three times the tensor-core work. Or load the operands as '
                'bf16 if that precision is acceptable. Keep `"ieee"` only if exact FP32 products are a requirement: '
                "then the FP32 pipe is the roof."
            )
            return mech, fix
        fix = (
            f"On {ref}, tl.dot ran on FMA: with FP32 operands that means exact FP32 was requested "
            '(`input_precision="ieee"`, `allow_tf32=False` or TRITON_F32_DEFAULT=ieee); pass `input_precision="tf32"` '
            f"so Triton emits {emits}, or load bf16/fp16 operands. A dot with a block dimension below 16 does not compile "
            "to MMA either: keep BLOCK_M, BLOCK_N, BLOCK_K >= 16."
        )
        return mech, fix
    lib = c.origin.library or ""
    if c.lang is L.PYTORCH or lib in ("cuBLAS", "cuDNN", ""):
        conv = "cuDNN" in lib or re.search(r"conv|fprop|dgrad|wgrad", c.k.display_name, re.I)
        flag = (
            "`torch.backends.cudnn.allow_tf32 = True` (the default for convolutions)"
            if conv
            else '`torch.backends.cuda.matmul.allow_tf32 = True` (or `torch.set_float32_matmul_precision("high")`)'
        )
        return mech, (
            f"TF32 is off for this FP32 {'convolution' if conv else 'matrix product'}, so "
            f"{lib or 'PyTorch'} ran an FFMA kernel: set {flag}, or run the op in bf16 under "
            '`torch.autocast("cuda", dtype=torch.bfloat16)`; the library then picks a tensor-core kernel '
            f"({path.sass.split(' ')[0]}). Outside PyTorch: cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH). "
            "Keep FP32 only if exact FP32 products are required."
        )
    return mech, None


def _tensor_core(c: Context) -> Text:
    if c.d.verdict is not Verdict.FIX or c.top is None:
        return "", None
    ins = c.top.instruction
    best = ki.is_best_mma(ins, c.sm)
    m = ki.parse_mma(ins)
    mech = _where_sentence(c, "MMA instructions")
    if best is False and m is not None:
        path = ki.matrix_path(c.sm, m.dtype, c.k.device)
        if path is None:
            return mech, None
        mech += f" {ins} is mma.sync; on sm_{c.sm} the warpgroup path ({path.sass}) has the higher peak."
        if c.is_cuda:
            return mech, (
                f"Issue the product on {c.line_ref(text=False) or 'the MMA line'} with {path.ptx.split(' (')[0]} "
                f"instead of mma.sync ({path.cuda}; operands in shared memory, loaded by TMA; SASS {path.sass}), "
                "or call cuBLAS/cuBLASLt for a plain GEMM."
            )
        if c.lang in (L.TRITON, L.INDUCTOR):
            return mech, (
                "Triton fell back from wgmma to mma.sync: use num_warps=4 or 8 and BLOCK_M a multiple of 64, "
                "and a 2-D (not batched 3-D) tl.dot, so it emits HGMMA."
            )
    if c.lang in (L.TRITON, L.INDUCTOR):
        ops = {x.mnemonic for x in c.k.sass}
        if (c.sm or 0) >= 90 and "LDGSTS" in ops and "UTMALDG" not in ops:
            return mech, (
                "The operand tiles arrive by cp.async (LDGSTS), not TMA: on sm_90 load them through tensor "
                "descriptors (`tl.make_tensor_descriptor(...)` and `desc.load([off_m, off_k])`) so TMA (UTMALDG) "
                "fetches whole tiles without occupying the warps, and make the kernel persistent (grid = number of SMs, "
                "a tl.range loop over tiles) to overlap one tile's epilogue with the next tile's loads."
            )
        return mech, (
            "Keep the tensor cores fed: tiles of at least 128x128x64, num_stages=3-4 and num_warps=8, and a "
            "persistent kernel (grid = number of SMs) that overlaps one tile's epilogue with the next tile's loads."
        )
    if c.lang is L.LIBRARY and "Flash" in (c.origin.library or ""):
        return mech, (
            "This is SDPA's FlashAttention-2 kernel (mma.sync based): on Hopper try the cuDNN backend "
            "(`with torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION):`), which uses wgmma/TMA"
            + _flash_shape_advice(c)
        )
    return mech, None


_BRA_TARGET = re.compile(r"\bBRA\b[^0-9]*0x([0-9a-fA-F]+)")
_FOR_BOUND = re.compile(r"\bfor\s*\([^;]*;\s*\w+\s*<=?\s*([A-Za-z_][\w.>-]*)\s*;")


def has_loop(k: KernelLaunch) -> bool:
    """True when the SASS holds a backward branch (a ``BRA`` to a lower address that executed, when counted): the
    kernel has a loop, so pipelining across iterations (num_stages, cp.async stages) can apply."""
    for s in k.sass:
        hit = _BRA_TARGET.search(s.text) if s.mnemonic == "BRA" else None
        if hit is not None and int(hit.group(1), 16) < s.pc and s.counters.get("inst_executed", 1.0) > 0:
            return True
    return False


def hot_loop(k: KernelLaunch) -> tuple[int, str, str] | None:
    """The most executed loop of the kernel whose trip count is a run-time bound: (line, text, bound) of the
    ``for`` line that the hottest backward branch (a ``BRA`` to a lower address) maps to, when its bound is not the
    thread or block index (a loop each thread runs serially, whose iterations more blocks could share); None
    without per-PC counters, line info or such a loop."""
    best: tuple[float, int, str] | None = None
    for s in k.sass:
        if s.mnemonic != "BRA" or not s.line or not s.file:
            continue
        hit = _BRA_TARGET.search(s.text)
        n = s.counters.get("inst_executed") or 0.0
        if hit is None or int(hit.group(1), 16) >= s.pc or n <= 0:
            continue
        text = k.source_line(s.file, s.line).strip()
        if best is None or n > best[0]:
            best = (float(n), s.line, text)
    if best is None:
        return None
    m = _FOR_BOUND.search(best[2])
    if m is None or re.search(r"threadIdx|blockIdx|blockDim|gridDim", m.group(1)):
        return None
    return best[1], best[2], m.group(1)


_FLASH_HEAD_DIM = re.compile(r"Flash_(?:fwd|bwd)_kernel_traits<\(int\)(\d+)")


def _flash_shape_advice(c: Context) -> str:
    """The shape advice for a FlashAttention launch, only where it can apply: head_dim a multiple of 64 when the
    kernel's template says it is not (``Flash_fwd_kernel_traits<(int)kHeadDim, ...>``), more heads or sequences per
    call when the grid does not fill the GPU. Ends the sentence."""
    out = []
    m = _FLASH_HEAD_DIM.search(c.k.display_name)
    if m is None or int(m.group(1)) % 64:
        out.append("keep head_dim a multiple of 64 with bf16/fp16 inputs")
    sms = c.k.device_attributes.get("multiprocessor_count")
    if c.k.blocks is not None and isinstance(sms, int | float) and c.k.blocks < 2 * sms:
        out.append("batch more heads or sequences per call (the grid does not fill the GPU twice over)")
    return (", and " + ", and ".join(out) + ".") if out else "."


def _grid(c: Context) -> Text:
    blocks = c.evidence_value("launch__grid_size")
    target = c.evidence_reference("launch__grid_size")
    n = f"{int(blocks)} blocks" if blocks else "this few blocks"
    want = f"at least {int(target)}" if target else "a few per SM"
    if c.is_cuda and blocks and target:
        loop = hot_loop(c.k)
        if loop is not None and re.search(r"gridDim", loop[1]):
            return "", (
                f"The loop on line {loop[0]} (`{_clip(loop[1])}`) already strides by the grid, so the work spreads "
                f"over however many blocks are launched: launch {want} blocks (the resident blocks per SM "
                "from cudaOccupancyMaxActiveBlocksPerMultiprocessor, times the SM count) instead of "
                f"{int(blocks)}."
            )
        if loop is not None:
            line, text, bound = loop
            ratio = max(2, -(-int(target) // int(blocks)))
            return "", (
                f"Split the loop on line {line} (`{_clip(text)}`) across {ratio}x as many blocks: launch "
                f"{int(blocks) * ratio} blocks, give each block `{bound} / {ratio}` of the iterations (block "
                f"`blockIdx.x % {ratio}` takes its slice), and add the partial results at the end (an atomicAdd into "
                "the output, or a second small kernel that sums them). Alternatively, a grid-stride loop over the "
                "iterations sized from the SM count."
            )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return "", (
            f"The launch grid gives {n}: use smaller BLOCK sizes so there are more programs ({want}), or split the "
            "reduced dimension across programs (split-K with tl.atomic_add, or a second pass)."
        )
    if c.lang is L.PYTORCH:
        name = c.k.display_name
        if re.search(r"SoftMax|softmax|LogSoftMax", name):
            return "", (
                f"PyTorch's softmax gives each row one block, so {n} means {int(blocks) if blocks else 'few'} rows: "
                "a row this long needs a kernel that splits it across blocks. torch.compile can (Inductor splits the "
                "max and sum reductions of a long row across blocks, then combines them), or write "
                "the two-pass (online) softmax yourself; if several such softmaxes run, one call over the stacked "
                "inputs gives more rows per launch."
            )
        return "", (
            f"The op launches {n} because its shape gives little parallel work (a reduction over few long rows, "
            "a small tensor): torch.compile splits long reductions across blocks (a split reduction), and if the "
            "same op runs on several tensors of this shape, one call over the stacked inputs gives each launch "
            "more blocks."
        )
    if c.lang is L.LIBRARY:
        return "", (
            f"{c.origin.library or 'The library'} gets too small a problem ({n}): batch the calls (one strided-batched "
            "call, torch.bmm, or one GEMM over concatenated inputs), or let it split K (cuBLASLt split-K/stream-K)."
        )
    return "", None


def _tail(c: Context) -> Text:
    if c.lang in (L.TRITON, L.INDUCTOR):
        return "", (
            "Choose BLOCK sizes so the number of programs is a whole number of waves, or make the kernel persistent "
            "(grid = number of SMs, each program loops over tiles with tl.range)."
        )
    if c.lang in (L.PYTORCH, L.LIBRARY):
        return (
            "",
            "The wave count follows from the tensor shapes: pad or batch the inputs so the last wave fills.",
        )
    return "", None


def _occupancy(c: Context) -> Text:
    mech = _where_sentence(c, "warp stall samples")
    if c.is_cuda and "shared memory" in c.d.fix:
        dyn = re.search(r"extern\s+__shared__\s+[\w:]+\s+(\w+)\s*\[\s*\]", strip_comments(c.source))
        if dyn:
            size = c.k.shared_mem_per_block
            return mech, (
                f"The dynamic shared buffer `{dyn.group(1)}` is sized at launch"
                + (f" ({size} B per block)" if size else "")
                + " and decides how few blocks fit on an SM: pass a smaller size (the third `<<<...>>>` argument) and "
                "process the data in smaller pieces, so more blocks are resident and their loads overlap."
            )
        decls = list(_SHARED_DECL.finditer(strip_comments(c.source)))
        if decls:
            first = decls[0]
            line = (
                c.source[: c.source.find(first.group(0))].count("\n") + 1
                if first.group(0) in c.source
                else None
            )
            at = f" (line {line})" if line else ""
            return mech, (
                f"`{' '.join(first.group(0).split())}`{at} sets the shared memory of each block and with it how few "
                f"blocks fit on an SM: {c.d.fix[0].lower()}{c.d.fix[1:]}"
            )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "num_warps, num_stages and the BLOCK sizes set the registers and shared memory of each program: lower "
            "num_stages (each stage keeps a copy of the operand tiles in shared memory) or the BLOCK sizes, so more "
            "programs fit on an SM."
        )
    if c.lang in (L.PYTORCH, L.LIBRARY):
        return mech, None
    return mech, _keep_with_line(c) if c.top and c.top.line is not None else None


def _latency(c: Context) -> Text:
    mech = _where_sentence(c, "warp stall samples")
    i = _sass_index(c, c.top)
    gather = i is not None and c.k.sass[i].mnemonic in ("LDG", "LD") and address_from_load(c.k.sass, i)
    if gather and c.lang is L.PYTORCH:
        return mech, (
            "PyTorch's gather waits on loads whose addresses come from loaded indices (index_select, gather, "
            "embedding or advanced indexing with scattered indices): sort the indices first (`idx, perm = idx.sort()`, gather, then undo "
            "the permutation) so neighbouring lanes read neighbouring rows, and gather whole contiguous rows rather "
            "than single elements."
        )
    if gather and c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "The waited-on load takes its address from a loaded index: sort or bucket the indices so neighbouring "
            "lanes gather neighbouring rows, and give each program several independent gathers (larger BLOCK, "
            "num_warps=8) so more are in flight."
        )
    if c.is_cuda and gather:
        where = c.line_ref() or "this load"
        mech += (
            " That load's address is computed from a value loaded just before (a pointer chase, hash probe or index "
            "lookup), so each warp waits one full memory latency per step."
        )
        return mech, (
            f"Keep more of these dependent loads in flight at {where}: give each thread several independent chains "
            "(walk 4-8 lists or probe 4-8 keys per thread, interleaved), keep occupancy high, and where the data "
            "allows, reorder it so that neighbouring lanes' targets are adjacent (sort the keys, lay a list out in "
            "traversal order)."
        )
    if c.lang in (L.TRITON, L.INDUCTOR):
        warps = (c.k.threads_per_block or 0) // 32
        now = (
            f" (this launch: num_warps={warps}, {c.k.threads_per_block} threads per program)" if warps else ""
        )
        return mech, (
            f"Each program moves too few bytes to hide memory latency{now}: raise BLOCK to 1024-4096 elements "
            "with num_warps=4-8, so each thread issues several 16-byte loads and far fewer programs are launched"
            + (
                "; the loop can also keep loads in flight across iterations with num_stages >= 3."
                if has_loop(c.k)
                else "."
            )
        )
    if c.lang is L.PYTORCH:
        return mech, (
            "The op does too little work per launch to keep the memory system busy: batch the calls, or fuse the op "
            "with its neighbours (torch.compile)."
        )
    if c.lang is L.LIBRARY:
        return mech, None
    return mech, _keep_with_line(c)


_RUNTIME_DIV = re.compile(r"[%/]=?\s*\(?\s*([A-Za-z_]\w*)\b(?!\s*\()")


def _instructions(c: Context) -> Text:
    mech = _where_sentence(c, "overhead instructions")
    w = c.top
    if c.is_cuda and w is not None and w.text:
        divisors = [d for d in _RUNTIME_DIV.findall(strip_comments(w.text)) if not d.isupper()]
        ops = {x.opcode for x in c.k.sass}
        if divisors and any(o.startswith("MUFU.RCP") for o in ops) and any(o.startswith("I2F") for o in ops):
            names = ", ".join(f"`{d}`" for d in dict.fromkeys(divisors))
            mech += (
                f" Line {w.line} divides by {names}, known only at run time: each 32-bit integer division or modulo "
                "compiles to a sequence of about 20 instructions (I2F, MUFU.RCP, F2I and IMAD fix-ups) per element."
            )
            return mech, (
                f"Take the run-time divisions out of line {w.line} and its neighbours: precompute, on the host, a "
                "multiply-shift pair per divisor (division by invariant integers, as CUTLASS's FastDivmod does) and pass "
                "those instead, so each `/` and `%` becomes one IMAD.HI and a shift; or, where the sizes are fixed, make "
                "them template/constexpr parameters (powers of two become shifts and masks). Collapsing contiguous "
                "dimensions first removes divisions altogether."
            )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return mech, (
            "Index arithmetic dominates: make strides and sizes tl.constexpr where they are fixed, use larger BLOCKs "
            "so the offsets are computed once per many elements, and prefer block pointers/tensor descriptors."
        )
    if c.lang is L.PYTORCH:
        return mech, (
            "PyTorch computes an offset per dimension per element for this non-contiguous, many-dimensional input: "
            "make the input contiguous once (or merge dimensions with view/flatten), or let torch.compile generate "
            "the indexing."
        )
    return mech, _keep_with_line(c)


def _resource(c: Context) -> Text:
    mech = _where_sentence(c, "traffic")
    if c.d.verdict is Verdict.HEALTHY:
        return _healthy(c)
    if c.lang in (L.TRITON, L.INDUCTOR) and "tl.dot" in c.source:
        warps = (c.k.threads_per_block or 0) // 32
        grouped = bool(
            re.search(r"GROUP_SIZE|GROUP_M\b|group_id|pid_m\s*=\s*first_pid_m", strip_comments(c.source))
        )
        return mech, (
            "The tiles are too small to reuse what they load: each operand is re-read from L2 for every small "
            + (f"tile (this launch: num_warps={warps}). " if warps else "tile. ")
            + "Use BLOCK_M=128, BLOCK_N=128-256, BLOCK_K=64 with num_warps=4-8 and num_stages=3"
            + (
                "; the programs are already grouped along M, which pays once the tiles are large"
                if grouped
                else ", and group programs along M (GROUP_M) for L2 reuse"
            )
            + "; Triton then emits wgmma on sm_90."
        )
    if c.lang in (L.TRITON, L.INDUCTOR):
        return (
            mech,
            "Raise BLOCK so each program moves more contiguous bytes per load, and fuse neighbouring ops.",
        )
    if c.is_cuda:
        return mech, _keep_with_line(c)
    compute = c.d.bottleneck is B.COMPUTE_BOUND
    if c.lang is L.PYTORCH:
        return mech, (
            "This PyTorch op runs below the roof of its busiest unit: "
            + (
                "run it in bf16/fp16 (torch.autocast) if the precision allows, or fuse it with its neighbours "
                "(torch.compile)."
                if compute
                else "pass it contiguous inputs (strided ones take PyTorch's slower generic kernels), fuse it with its "
                "neighbours (torch.compile) so the tensor crosses memory once, and use bf16 where the precision allows."
            )
        )
    return mech, (
        f"{c.origin.library or 'The library'} runs this call below its roof: give it contiguous operands, sizes that "
        "are multiples of 8 (16-bit types) or 16 (8-bit), and more work per call (batch the calls)."
    )


def _healthy(c: Context) -> Text:
    if c.lang is L.PYTORCH:
        return "", (
            "This PyTorch kernel is at its roof; to go faster launch less of it: fuse it with its producer or "
            "consumer (torch.compile), use bf16 activations where the precision allows, or skip the op."
        )
    compute = c.d.bottleneck in (B.TENSOR_CORE_BOUND, B.COMPUTE_BOUND)
    less = "do fewer FLOPs" if compute else "move fewer bytes"
    if c.lang is L.LIBRARY:
        mma = next((m for w in c.where if (m := ki.parse_mma(w.instruction)) is not None), None)
        lower = (
            "; or, if the accuracy allows, FP8 inputs (sm_89+: torch._scaled_mm, Transformer Engine)"
            if compute and mma is not None and mma.dtype in ("fp16", "bf16") and (c.sm or 0) >= 89
            else ""
        )
        sms = c.k.device_attributes.get("multiprocessor_count")
        small = c.k.blocks is not None and isinstance(sms, int | float) and c.k.blocks < sms
        mech = ""
        if compute and mma is not None:
            tma = any(x.mnemonic in ("UTMALDG", "UBLKCP") for x in c.k.sass)
            mech = (
                f"It issues {c.where[0].instruction}"
                + (" fed by TMA (UTMALDG) loads" if tma else "")
                + (f" on a {c.k.blocks}-block grid" if c.k.blocks else "")
                + ": the fastest matrix instruction this GPU has for these inputs, kept busy."
            )
        return mech, (
            f"{c.origin.library or 'The library'} runs this call at its roof; to go faster {less}: skip work the "
            "result does not need (fewer or smaller calls)"
            + (", or batch small calls into one (this grid does not fill the GPU)" if small else "")
            + f"{lower}."
        )
    if c.lang in (L.TRITON, L.INDUCTOR):
        if compute:
            return "", (
                "This Triton kernel is at its roof; to go faster do fewer FLOPs: skip work (e.g. causal or padded "
                "blocks with an early `continue`), or narrower tl.dot operands where the precision allows."
            )
        return "", (
            "This Triton kernel is at its roof; to go faster move fewer bytes: fuse it with the kernel before or after "
            "it (one program loads once and does both), or load narrower types (e.g. store tl.bfloat16)."
        )
    return "", None


WRITERS: dict[Bottleneck, Callable[[Context], Text]] = {
    B.UNCOALESCED_GLOBAL_ACCESS: _uncoalesced,
    B.SHARED_BANK_CONFLICTS: _bank_conflicts,
    B.LOCAL_MEMORY_SPILL: _local_memory,
    B.ATOMIC_CONTENTION: _atomics,
    B.WARP_DIVERGENCE: _divergence,
    B.NO_TENSOR_CORES: _no_tensor_cores,
    B.TENSOR_CORE_BOUND: _tensor_core,
    B.SMALL_GRID: _grid,
    B.TAIL_EFFECT: _tail,
    B.OCCUPANCY_LIMITED: _occupancy,
    B.LATENCY_BOUND: _latency,
    B.INSTRUCTION_BOUND: _instructions,
    B.DRAM_BANDWIDTH_BOUND: _resource,
    B.L2_BANDWIDTH_BOUND: _resource,
    B.L1_SHARED_BANDWIDTH_BOUND: _resource,
    B.COMPUTE_BOUND: _resource,
}


def localized_text(c: Context) -> Text:
    """(sentence to add to the mechanism, fix in the kernel's language or None to keep the current one)."""
    if c.d.bottleneck is None or (c.d.verdict is Verdict.INCONCLUSIVE and not c.where and c.is_cuda):
        return "", None
    if c.d.verdict is Verdict.HEALTHY:
        return _healthy(c)
    writer = WRITERS.get(c.d.bottleneck)
    mech, fix = writer(c) if writer is not None else ("", None)
    if fix is None and c.lang is L.LIBRARY and "Flash" in (c.origin.library or ""):
        hmma = any(ki.is_best_mma(x.opcode, c.sm) is False for x in c.k.sass if ki.parse_mma(x.opcode))
        fix = (
            "This is SDPA's FlashAttention-2 kernel"
            + (", built on mma.sync (HMMA), below Hopper's wgmma rate" if hmma and (c.sm or 0) >= 90 else "")
            + ": try the cuDNN attention backend (`with torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION):`), "
            "which uses wgmma and TMA on sm_90" + _flash_shape_advice(c)
        )
    if fix is None and c.lang is L.LIBRARY:
        fix = (
            f"{c.origin.library or 'The library'}'s kernel cannot be edited; what can change is the call: the dtype "
            "(a tensor-core type where the precision allows), contiguous operands with sizes that are multiples of 8 "
            "(16-bit types) or 16 (8-bit), and more work per call (batched calls), which lets it pick another kernel."
        )
    elif fix is None and c.lang is L.PYTORCH:
        fix = (
            "PyTorch's kernel cannot be edited; what can change is the call: contiguous inputs, a dtype the op is fast "
            "in (bf16 under torch.autocast), more work per call (batch), or torch.compile to fuse it with its "
            "neighbours."
        )
    return mech, fix


__all__ = [
    "Context",
    "StridedAccess",
    "localized_text",
    "shared_declaration",
    "strided_access",
    "thread_varying",
]
