"""Fixes in the kernel's language for latency, a busy resource short of its roof, and a healthy kernel."""

from __future__ import annotations

import re

from kprof import thresholds as th
from kprof.diagnose.fixes.context import B, Context, L, Text, keep_with_line, sass_index, where_sentence
from kprof.diagnose.fixes.source import has_loop, strip_comments
from kprof.diagnose.roofline import roofline
from kprof.diagnose.sass import access_bytes, dataflow
from kprof.diagnose.where import address_from_load
from kprof.facts.sass_traits import synchronous_mma_loop
from kprof.knowledge import instructions as ki
from kprof.model import Verdict


def latency(c: Context) -> Text:
    """What the warps wait on at the responsible line (a dependent gather, too little work per program)."""
    mech = where_sentence(c, "warp stall samples")
    if synchronous_mma_loop(c.k.sass) is not None:
        return mech, _pipeline_fix(c)
    i = sass_index(c, c.top)
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
        duration_ns = roofline(c.k).duration_ns
        if duration_ns is None or duration_ns < th.SHORT_LAUNCH_NS:
            return mech, (
                "The op does too little work per launch to keep the memory system busy: batch the calls, or fuse "
                "the op with its neighbours (torch.compile)."
            )
        return mech, (
            "PyTorch chose this kernel and its launch shape, so the call cannot put more loads in flight; "
            "torch.compile generates a kernel of its own for the op (Inductor sizes its blocks for the shape, and "
            "fuses the neighbouring ops), or write the op in Triton with several independent loads per thread; "
            "profile the new kernel again."
        )
    if c.lang is L.LIBRARY and "Flash" in (c.origin.library or ""):
        return mech, None  # SDPA's FlashAttention kernel: the backend advice (fixes/__init__.py) applies
    if c.lang is L.LIBRARY:
        lib = c.origin.library or "the library"
        duration_ns = roofline(c.k).duration_ns
        short = duration_ns is None or duration_ns < th.SHORT_LAUNCH_NS
        return mech, (
            f"This is {lib}'s kernel: its code, block size and work per thread are {lib}'s, so nothing inside it can "
            "be changed from the caller. "
            + (
                "Give it more work per call (batch the calls), so more loads are in flight per launch; "
                if short
                else ""
            )
            + ("a" if short else "A")
            + " different implementation of the op (torch.compile's generated kernel, another library entry point "
            "suited to this shape) or fusing it with the ops around it (so the data is read once) are the changes "
            "that can help; measure each against this one."
        )
    if c.is_cuda:
        wider = _wider_loads(c)
        if wider:
            return mech, wider
    return mech, keep_with_line(c)


def _wider_loads(c: Context) -> str | None:
    """CUDA C++ waiting on a narrow global load: how many bytes each thread loads now, and the wide load to use."""
    i = sass_index(c, c.top)
    if i is None:
        return None
    s = c.k.sass[i]
    top = c.top
    if s.mnemonic not in ("LDG", "LD") or top is None or "mostly long_scoreboard" not in top.detail:
        return None  # the warps wait on something else than this load's data
    dependent = dataflow(c.k.sass).dependent_pcs
    same_line = [x.pc for x in c.k.sass if top.line is not None and x.line == top.line and x.file == top.file]
    if s.pc in dependent or any(pc in dependent for pc in same_line) or address_from_load(c.k.sass, i):
        return None  # a chase or gather on this line: its next address needs loaded data, wider loads do not apply
    width = access_bytes(s.opcode)
    if width >= 16:
        return None
    per = 16 // width
    ref = c.line_ref() or "the waited-on load"
    return (
        f"On {ref}: each thread loads {width} byte{'s' if width != 1 else ''} per {s.opcode} (a warp "
        f"{32 * width} B per request), so few bytes are in flight per warp however many warps are resident. Let each "
        f"thread load {per} consecutive elements at once with one 16-byte load (a `uint4`/`float4` or `__half2` x4 "
        f"through `reinterpret_cast`, aligned to 16 bytes; the grid {per}x smaller, or a grid-stride loop) and "
        "compute them all, or unroll several independent loads per thread before using any of them."
    )


_BLOCK_K = re.compile(r"\b(BLOCK_K|BLOCK_SIZE_K|BK|BLOCK_K_SIZE|TILE_K)\s*:\s*tl\.constexpr")


def _pipeline_fix(c: Context) -> str | None:
    """An MMA k-loop fed by synchronous loads: software pipelining, in the kernel's language."""
    ref = c.line_ref() or "the k-loop"
    if c.lang in (L.TRITON, L.INDUCTOR):
        bk = _BLOCK_K.search(strip_comments(c.source))
        name = bk.group(1) if bk else "BLOCK_K"
        warps = (c.k.threads_per_block or 0) // 32
        return (
            f"The tl.dot on {ref} was compiled without software pipelining: the SASS holds no cp.async (LDGSTS) or "
            "TMA copy, which is what num_stages=1 produces. Launch it with num_stages=3 (or 4) and "
            f"{name}=64, e.g. `matmul_kernel[grid](..., {name}=64, num_stages=3, num_warps=8)` or the same in "
            "the autotune triton.Config, so Triton loads the next k-tiles asynchronously while this one multiplies"
            + (f" (this launch: num_warps={warps})" if warps else "")
            + "; on sm_90, tensor descriptors (`tl.make_tensor_descriptor`) let TMA fetch the tiles. Do not lower "
            "num_stages or add warps: the tile, not occupancy, sets the warps per SM."
        )
    if c.is_cuda and c.sm is not None and c.sm < 80:
        # no cp.async before sm_80: the loads of the next tile overlap the MMAs through registers
        return (
            f"Double-buffer the k-loop at {ref} through registers (sm_{c.sm} has no cp.async): issue the LDGs of "
            "tile k+1 into registers before the MMAs of tile k, store them to the other of two shared-memory "
            "buffers after those MMAs, and synchronise once per iteration, so the loads are in flight while the "
            "tensor cores work."
        )
    if c.is_cuda:
        return (
            f"Double-buffer the k-loop at {ref}: allocate 2-3 shared-memory stages per operand and load the tile of "
            "iteration k+1 (and k+2) with cp.async (`cuda::memcpy_async` or `__pipeline_memcpy_async`, SASS "
            "LDGSTS; `cp.async.wait_group` before use) or, on sm_90, TMA (`cp.async.bulk.tensor` with a "
            "CUtensorMap and an mbarrier, SASS UTMALDG) while the MMAs consume iteration k, instead of LDG into "
            "registers, STS and __syncthreads() every iteration."
        )
    return None


def resource(c: Context) -> Text:
    """A busy unit short of its roof, for the kernel's language (tile sizes, contiguous inputs, fusion)."""
    mech = where_sentence(c, "traffic")
    if c.d.verdict is Verdict.HEALTHY:
        return healthy(c)
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
        return mech, keep_with_line(c)
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


def _tf32(c: Context) -> str:
    """The TF32 sentence of a healthy FP32 matrix product (the rule's no_tensor_cores finding), "" otherwise."""
    if c.d.bottleneck is not B.COMPUTE_BOUND or not any(
        f.bottleneck is B.NO_TENSOR_CORES for f in c.d.findings
    ):
        return ""
    from kprof.facts.kernel import UNDER_NCU, build_facts
    from kprof.rules.kernel.healthy import tf32_sentence

    f = build_facts(c.k, c.k.value("gpu__time_duration.sum"), UNDER_NCU)
    return tf32_sentence(f, matrix_in_sass=not f.sass.empty)


def healthy(c: Context) -> Text:
    """Less work, for the kernel's language (the kernel is at its roof)."""
    mech, fix = _healthy(c)
    tf32 = _tf32(c)
    if tf32 and fix is not None and tf32 not in fix:
        fix = f"{fix} {tf32}"
    return mech, fix


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
