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

One module per family, as the rules (:mod:`kprof.rules.kernel`): :mod:`.coalescing` (uncoalesced global access),
:mod:`.memory` (bank conflicts, local memory, atomics), :mod:`.compute` (tensor cores, divergence, instruction overhead), :mod:`.launch` (grid,
tail, occupancy), :mod:`.roof` (latency, the resource verdicts, healthy); :mod:`.source` reads CUDA C++ source
and the SASS loop structure, :mod:`.context` is what every writer reads.
"""

from __future__ import annotations

from collections.abc import Callable

from kprof.diagnose.fixes.coalescing import uncoalesced
from kprof.diagnose.fixes.compute import (
    divergence,
    flash_shape_advice,
    fp64_promotion,
    instructions,
    no_tensor_cores,
    tensor_core,
)
from kprof.diagnose.fixes.constructs import construct_text
from kprof.diagnose.fixes.context import B, Context, L, Text
from kprof.diagnose.fixes.launch import grid, occupancy, tail
from kprof.diagnose.fixes.memory import atomics, bank_conflicts, local_memory
from kprof.diagnose.fixes.roof import healthy, latency, resource
from kprof.diagnose.fixes.source import (
    StridedAccess,
    has_loop,
    hot_loop,
    shared_declaration,
    strided_access,
    thread_varying,
)
from kprof.facts.sass_traits import fp64_promotion as fp64_promotion_facts
from kprof.knowledge import instructions as ki
from kprof.model import Bottleneck, Verdict

WRITERS: dict[Bottleneck, Callable[[Context], Text]] = {
    B.UNCOALESCED_GLOBAL_ACCESS: uncoalesced,
    B.SHARED_BANK_CONFLICTS: bank_conflicts,
    B.LOCAL_MEMORY_SPILL: local_memory,
    B.ATOMIC_CONTENTION: atomics,
    B.WARP_DIVERGENCE: divergence,
    B.NO_TENSOR_CORES: no_tensor_cores,
    B.TENSOR_CORE_BOUND: tensor_core,
    B.SMALL_GRID: grid,
    B.TAIL_EFFECT: tail,
    B.OCCUPANCY_LIMITED: occupancy,
    B.LATENCY_BOUND: latency,
    B.INSTRUCTION_BOUND: instructions,
    B.DRAM_BANDWIDTH_BOUND: resource,
    B.L2_BANDWIDTH_BOUND: resource,
    B.L1_SHARED_BANDWIDTH_BOUND: resource,
    B.COMPUTE_BOUND: resource,
}


def localized_text(c: Context) -> Text:
    """(sentence to add to the mechanism, fix in the kernel's language or None to keep the current one)."""
    mech, fix, _ = localized_with_construct(c)
    return mech, fix


def localized_with_construct(c: Context) -> tuple[str, str | None, bool]:
    """:func:`localized_text`, and whether it is the construct on the responsible line and its change (the
    construct then explains the gap that the resource verdict's mechanism left open)."""
    if c.d.bottleneck is None or (c.d.verdict is Verdict.INCONCLUSIVE and not c.where and c.is_cuda):
        return "", None, False
    if c.d.verdict is Verdict.HEALTHY:
        return (*healthy(c), False)
    named = construct_text(c)  # the construct the SASS shows on the responsible line, and the change to it
    if named is not None and named[1] is not None:
        return (*named, True)
    return (*_by_bottleneck(c), False)


def _by_bottleneck(c: Context) -> Text:
    """The per-bottleneck writers' text, when no construct explains the bottleneck."""
    assert c.d.bottleneck is not None
    writer = WRITERS.get(c.d.bottleneck)
    promoted = (
        fp64_promotion_facts(c.k.sass)
        if c.d.bottleneck in (B.INSTRUCTION_BOUND, B.COMPUTE_BOUND) and c.d.verdict is Verdict.FIX
        else None
    )
    if promoted is not None:
        mech, fix = fp64_promotion(c, promoted)
    else:
        mech, fix = writer(c) if writer is not None else ("", None)
    if fix is None and c.lang is L.LIBRARY and "Flash" in (c.origin.library or ""):
        hmma = any(ki.is_best_mma(x.opcode, c.sm) is False for x in c.k.sass if ki.parse_mma(x.opcode))
        fix = (
            "This is SDPA's FlashAttention-2 kernel"
            + (", built on mma.sync (HMMA), below Hopper's wgmma rate" if hmma and (c.sm or 0) >= 90 else "")
            + ": try the cuDNN attention backend (`with torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION):`), "
            "which uses wgmma and TMA on sm_90" + flash_shape_advice(c)
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
    "has_loop",
    "hot_loop",
    "localized_text",
    "localized_with_construct",
    "shared_declaration",
    "strided_access",
    "thread_varying",
]
