"""Fixes in the kernel's language for memory mechanisms: bank conflicts, local memory, atomics (coalescing:
:mod:`.coalescing`)."""

from __future__ import annotations

import re
from dataclasses import replace

from kprof.diagnose.fixes.context import Context, L, Text, keep_with_line, sass_index, where_sentence
from kprof.diagnose.fixes.source import (
    clip,
    has_loop,
    padded,
    shared_declaration,
    strip_comments,
)
from kprof.diagnose.where import address_from_load
from kprof.model import SourceLine
from kprof.rules.kernel.atomics import distinct_addresses
from kprof.rules.kernel.local import register_cap


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
