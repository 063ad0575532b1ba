"""Fixes in the kernel's language for the launch: grid size, tail waves, occupancy."""

from __future__ import annotations

import re

from kprof.diagnose.fixes.context import Context, L, Text, keep_with_line, where_sentence
from kprof.diagnose.fixes.source import SHARED_DECL, clip, hot_loop, strip_comments
from kprof.facts.sass_traits import ASYNC_COPIES


def grid(c: Context) -> Text:
    """How to launch more blocks: split the hot loop, more programs, batched calls."""
    blocks = c.evidence_value("launch__grid_size")
    target = c.evidence_reference("launch__grid_size")
    n = f"{int(blocks)} blocks" if blocks else "this few blocks"
    want = f"at least {int(target)}" if target else "a few per SM"
    if c.is_cuda and blocks and target:
        loop = hot_loop(c.k)
        if loop is not None and re.search(r"gridDim", loop[1]):
            return "", (
                f"The loop on line {loop[0]} (`{clip(loop[1])}`) already strides by the grid, so the work spreads "
                f"over however many blocks are launched: launch {want} blocks (the resident blocks per SM "
                "from cudaOccupancyMaxActiveBlocksPerMultiprocessor, times the SM count) instead of "
                f"{int(blocks)}."
            )
        if loop is not None:
            line, text, bound = loop
            ratio = max(2, -(-int(target) // int(blocks)))
            return "", (
                f"Split the loop on line {line} (`{clip(text)}`) across {ratio}x as many blocks: launch "
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


def tail(c: Context) -> Text:
    """How to size the grid to whole waves, for the kernel's language."""
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


_DYNAMIC_SMEM = "launch__shared_mem_per_block_dynamic"


def _fill_extent(source: str, name: str) -> tuple[int, str, str, bool] | None:
    """How far the kernel fills the dynamic shared array ``name``: ``(line, loop text, element count, from the
    block's own data)`` of the loop ``for (int k = ...; k < B | k <= B; ...) name[k] = src[...]`` (count ``B`` or
    ``B + 1``); the last is True when the value stored comes from an address that depends on blockIdx (the block's
    slice of the data is staged through the buffer), False for a table every block loads alike."""
    clean = strip_comments(source)
    block_vars = {m.group(1) for m in re.finditer(r"\b(\w+)\s*=\s*[^;]*\bblockIdx\b[^;]*;", clean)}
    for n, raw in enumerate(source.splitlines(), 1):
        text = strip_comments(raw)
        loop = re.search(r"for\s*\([^;]*?\b(\w+)\s*=[^;]*;\s*\1\s*(<=?)\s*([^;]+?)\s*;[^)]*\)\s*(.*)", text)
        if loop is None:
            continue
        var, op, bound, body = loop.groups()
        store = re.search(rf"\b{re.escape(name)}\s*\[\s*{re.escape(var)}\s*\]\s*=\s*([^;]+);", body)
        if store is None:
            continue
        rhs = store.group(1)
        own = "blockIdx" in rhs or any(re.search(rf"(?<![.\w]){re.escape(v)}\b", rhs) for v in block_vars)
        count = f"{bound} + 1" if op == "<=" else bound
        return n, raw.strip(), count, own
    return None


def _next_limit(c: Context) -> str:
    """``", so up to 6 blocks fit (the registers' limit)"``: what limits once shared memory does not."""
    from kprof.facts.names import OCC_LIMITS

    others = {w: c.k.value(m) for w, m in OCC_LIMITS.items() if w != "shared memory"}
    known = {w: v for w, v in others.items() if v is not None}
    if not known:
        return ""
    w = min(known, key=lambda x: known[x])
    return f"; then up to {int(known[w])} blocks fit on an SM ({w} being the next limit)"


def _slices(c: Context, mech: str, name: str, typ: str, size: float) -> Text | None:
    """Per-warp (or per-thread) slices of the dynamic buffer, ``p = name + warp * S``, each filled only to ``B`` with
    ``B`` not ``S``: the launch sizes the buffer for slices of ``S``."""
    src = strip_comments(c.source)
    for m in re.finditer(rf"\b(\w+)\s*=\s*{re.escape(name)}\s*\+\s*(\w+)\s*\*\s*(\w+)\s*;", src):
        alias, who, stride = m.groups()
        fill = _fill_extent(c.source, alias)
        if fill is None or fill[2].replace(" ", "") == stride:
            continue
        line, text, count, _ = fill
        decl_line = src[: m.start()].count("\n") + 1
        mech += (
            f" The dynamic shared buffer `{name}` gets {int(size):,} B per block from the launch, cut into slices of "
            f"`{stride}` elements (`{alias} = {name} + {who} * {stride}`, line {decl_line}), but each slice is filled "
            f"only up to `{count}` (line {line}: `{clip(text)}`): the unused rest of every slice is what keeps the "
            "other blocks off the SM."
        )
        by = re.search(rf"\b{re.escape(who)}\s*=\s*([^,;]+)", src)
        rhs = by.group(1) if by else ""
        n = (
            "(blockDim.x / 32)"
            if re.search(r"threadIdx\.x\s*(>>\s*5|/\s*(32|warpSize))", rhs)
            else "blockDim.x"
            if re.fullmatch(r"\s*threadIdx\.x\s*", rhs)
            else "<slices per block>"
        )
        return mech, (
            f"Size the slices to what they hold: pass `{stride}` = `{count}` and `{n} * {count} * sizeof({typ})` as "
            f"the third `<<<...>>>` argument (the dynamic shared-memory bytes) instead of {int(size):,} B"
            f"{_next_limit(c)}."
        )
    return None


def _sized_to_use(c: Context, mech: str, name: str) -> Text | None:
    """A dynamic shared buffer sized at launch far beyond what the kernel fills: size it to what it uses."""
    size = c.k.value(_DYNAMIC_SMEM)
    decl = re.search(rf"extern\s+__shared__\s+([\w:]+)\s+{re.escape(name)}\b", strip_comments(c.source))
    if size and decl is not None and _fill_extent(c.source, name) is None:
        return _slices(c, mech, name, decl.group(1), size)
    fill = _fill_extent(c.source, name)
    if not size or fill is None or fill[3]:
        return None
    line, text, count, _ = fill
    decl = re.search(rf"extern\s+__shared__\s+([\w:]+)\s+{re.escape(name)}\b", strip_comments(c.source))
    typ = decl.group(1) if decl else "float"
    mech += (
        f" The dynamic shared buffer `{name}` gets {int(size):,} B per block from the launch, but the kernel fills only "
        f"its first `{count}` elements (line {line}: `{clip(text)}`), a table every block loads alike: "
        "the unused rest of the allocation is what keeps the other blocks off the SM."
    )
    return mech, (
        f"Size the allocation to what the kernel uses: pass `({count}) * sizeof({typ})` as the third `<<<...>>>` "
        f"argument (the dynamic shared-memory bytes) instead of {int(size):,} B{_next_limit(c)}. Nothing in the kernel "
        "needs splitting: only the launch argument changes."
    )


def occupancy(c: Context) -> Text:
    """The declaration that sets the limiting resource (shared memory), or the Triton knobs."""
    mech = where_sentence(c, "warp stall samples")
    if c.is_cuda and "shared memory" in c.d.fix:
        dyn = re.search(r"extern\s+__shared__\s+[\w:]+\s+(\w+)\s*\[\s*\]", strip_comments(c.source))
        if dyn:
            sized = _sized_to_use(c, mech, dyn.group(1))
            if sized is not None:
                return sized
            size = c.k.shared_mem_per_block
            return mech, (
                f"The dynamic shared buffer `{dyn.group(1)}` is sized at launch"
                + (f" ({size} B per block)" if size else "")
                + " and decides how few blocks fit on an SM: pass a smaller size (the third `<<<...>>>` argument) and "
                "process the data in smaller pieces, so more blocks are resident and their loads overlap."
            )
        decls = list(SHARED_DECL.finditer(strip_comments(c.source)))
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
        dynamic = c.k.value(_DYNAMIC_SMEM)
        if not c.source and dynamic and 2 * dynamic >= (c.k.shared_mem_per_block or dynamic):
            return mech, (
                f"{int(dynamic):,} B of each block's shared memory are dynamic: the launch sets them (the third "
                "`<<<...>>>` argument, or cudaLaunchKernelEx's dynamicSmemBytes), not the kernel. Pass the bytes the "
                "block actually addresses; only if the kernel stages its own slice of the data through that buffer, "
                "give each block a smaller slice. (The report has no source to tell which: profile with "
                "`--import-source yes` and -lineinfo.)"
            )
    if c.lang in (L.TRITON, L.INDUCTOR):
        if not any(x.mnemonic in ASYNC_COPIES for x in c.k.sass):
            # no cp.async/TMA in the SASS: the kernel already runs with num_stages=1 (or has no loop to pipeline)
            return mech, (
                "num_warps and the BLOCK sizes set the registers and shared memory of each program: use smaller "
                "BLOCK sizes (or fewer live values per program), so more programs fit on an SM."
            )
        return mech, (
            "num_warps, num_stages and the BLOCK sizes set the registers and shared memory of each program: lower "
            "num_stages (each stage keeps a copy of the operand tiles in shared memory) or the BLOCK sizes, so more "
            "programs fit on an SM."
        )
    if c.lang in (L.PYTORCH, L.LIBRARY):
        return mech, None
    return mech, keep_with_line(c) if c.top and c.top.line is not None else None
