"""What each bottleneck id means, when kprof gives it, the thresholds it judges with and their sources.

:func:`explain` answers ``kprof explain ID`` and the MCP tool ``explain``: an agent or a person who
reads ``"bottleneck": "sync_bound"`` in a diagnosis can ask what that id stands for, which numbers
decide it and where those numbers come from, without reading the rule's code.

Every threshold is quoted from :mod:`kprof.thresholds` (its value and the docstring beside it, which
says where the value comes from), never restated here, so the two cannot drift apart. Each entry names
the module whose rule gives the id; ``tests/test_explain.py`` checks that every id of
:class:`~kprof.model.Bottleneck` has an entry and that each listed threshold exists and is read by that
module.
"""

from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass
from typing import Any

from kprof import thresholds as th
from kprof.errors import KprofError
from kprof.model import Bottleneck


@dataclass(frozen=True, slots=True, kw_only=True)
class Threshold:
    """One named threshold: its value and where the value comes from (the docstring in ``kprof.thresholds``)."""

    name: str
    value: Any
    source: str

    def to_dict(self) -> dict[str, Any]:
        v = self.value
        return {"name": self.name, "value": list(v) if isinstance(v, tuple) else v, "source": self.source}


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """What a bottleneck id means and how kprof decides it.

    Examples
    --------
    >>> e = explain("sync_bound")
    >>> e.level, e.thresholds[0].name
    ('timeline', 'CLOCK_ALIGNMENT_SLACK_NS')
    """

    bottleneck: str
    level: str
    """``timeline``, ``job``, ``kernel (resource)`` or ``kernel (mechanism)``."""
    meaning: str
    when: str
    """The rule: what kprof measures and when it gives this id."""
    fix: str
    """What the diagnosis recommends, in general terms (each diagnosis words it for its own case)."""
    thresholds: tuple[Threshold, ...]
    rule: str
    """The module whose rule gives this id."""
    also: tuple[str, ...] = ()
    """Modules whose shared judgement the rule relies on, where some of its thresholds are read: the verdict that
    ranks every kernel mechanism, the facts that decide which pipes do the program's work."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "bottleneck": self.bottleneck,
            "level": self.level,
            "meaning": self.meaning,
            "when": self.when,
            "fix": self.fix,
            "thresholds": [t.to_dict() for t in self.thresholds],
            "rule": self.rule,
            "also": list(self.also),
        }

    def to_text(self) -> str:
        lines = [
            f"{self.bottleneck} ({self.level})",
            f"  meaning: {self.meaning}",
            f"  when:    {self.when}",
            f"  fix:     {self.fix}",
            f"  rule:    {self.rule}",
        ]
        if self.also:
            lines.append(f"  also:    {', '.join(self.also)}")
        if self.thresholds:
            lines.append("  thresholds (kprof/thresholds.py):")
            for t in self.thresholds:
                lines.append(f"    {t.name} = {t.value!r}: {t.source}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Entry:
    level: str
    meaning: str
    when: str
    fix: str
    thresholds: tuple[str, ...]
    rule: str
    also: tuple[str, ...] = ()


_TIMELINE = "kprof/diagnose/timeline/"
_CLASSIFY = _TIMELINE + "classify.py"
_CONTEXT = _TIMELINE + "context.py"
_JOB = "kprof/diagnose/job/"
_JOB_STATS = _JOB + "stats.py"
_RULES = "kprof/rules/kernel/"
_RESOURCE = _RULES + "resource.py"
_VERDICT = _RULES + "verdict.py"
_UNITS = "kprof/facts/units.py"

_ENTRIES: dict[str, _Entry] = {
    # ------------------------------------------------------------------ timeline
    "host_launch_bound": _Entry(
        "timeline",
        "The GPU sits idle between many short launches: the host issues work (Python, framework dispatch, "
        "launch calls) more slowly than the GPU runs it.",
        "Of the steady state's idle gaps, those during which the host was still issuing work (not blocked in a "
        "sync or copy, not in start-up calls, not in stretches of HOST_COMPUTE_MIN_STRETCH_NS without any CUDA "
        "call) hold the largest share of its wall time, and the kernels hold neither GPU_BOUND_BUSY_FRACTION of "
        "it nor GPU_SHARE_OVER_CAUSE times that share. Host-caused idle time above MAX_DISPATCH_PER_LAUNCH_NS "
        "per launch is not dispatch overhead, and the verdict is then inconclusive with the host-sampling "
        "capture to run; so it is with fewer than MIN_LAUNCHES_FOR_LAUNCH_BOUND launches (a rate needs a loop). "
        "The expected wall time keeps the kernels' own time plus GRAPH_KERNEL_GAP_NS between them: no launch "
        "path runs kernels gaplessly.",
        "Issue fewer, larger launches: CUDA graphs (torch.compile mode='reduce-overhead', torch.cuda.graphs; "
        "cudaStreamBeginCapture and cudaGraphLaunch in CUDA C++), fused kernels, larger batches. When each "
        "iteration runs one group of kernels MIN_REPEATS_FOR_BATCHING or more times, one call on the stacked "
        "input comes first (if the calls are independent).",
        (
            "GPU_BOUND_BUSY_FRACTION",
            "GPU_SHARE_OVER_CAUSE",
            "HOST_COMPUTE_MIN_STRETCH_NS",
            "MAX_DISPATCH_PER_LAUNCH_NS",
            "MIN_LAUNCHES_FOR_LAUNCH_BOUND",
            "GRAPH_KERNEL_GAP_NS",
            "TYPICAL_LAUNCH_OVERHEAD_NS",
            "MIN_FINDING_SHARE",
            "MIN_REPEATS_FOR_BATCHING",
        ),
        _TIMELINE + "launch.py",
        (_CLASSIFY, _CONTEXT),
    ),
    "host_compute_bound": _Entry(
        "timeline",
        "The GPU waits while the host computes something other than launching work: data loading and "
        "preprocessing, Python logic, a CPU loop.",
        "Idle gaps that lie mostly in stretches of at least HOST_COMPUTE_MIN_STRETCH_NS in which the launching "
        "threads made no CUDA call hold the largest share of the steady state's wall time (the kernels hold "
        "neither GPU_BOUND_BUSY_FRACTION of it nor GPU_SHARE_OVER_CAUSE times that share). The diagnosis names "
        "the CPU operator, annotated range or OS runtime call that best covers those gaps (covering at least "
        "DOMINANT_SHARE of them), and words the fix for it; with fewer than MIN_ITERATIONS_FOR_WARMUP_DROP such "
        "gaps the verdict is inconclusive (one-time host work or too few iterations to tell).",
        "Move the host work off the critical path: DataLoader workers with pin_memory and prefetch, "
        "preprocessing on the GPU, or overlapping it on another thread; not CUDA graphs (the gaps hold no "
        "launches). When most of those gaps begin while the host is blocked in a sync (DOMINANT_SHARE of their "
        "time), the queue was drained on purpose: queue the next GPU work before the host code, or read the "
        "value back without blocking (pinned copy and an event).",
        (
            "HOST_COMPUTE_MIN_STRETCH_NS",
            "GPU_BOUND_BUSY_FRACTION",
            "GPU_SHARE_OVER_CAUSE",
            "DOMINANT_SHARE",
            "MIN_ITERATIONS_FOR_WARMUP_DROP",
            "MIN_FINDING_SHARE",
        ),
        _TIMELINE + "host_compute.py",
        (_CLASSIFY, _TIMELINE + "sync.py"),
    ),
    "sync_bound": _Entry(
        "timeline",
        "The host blocks on the GPU repeatedly (.item(), cudaStreamSynchronize, a device-to-host copy in the "
        "loop), so the queue drains and the GPU idles until the host issues work again.",
        "The GPU went idle while the host was blocked in a synchronizing call (matched within "
        "CLOCK_ALIGNMENT_SLACK_NS of the GPU work it waited for): a sync, a blocking or pageable copy to the "
        "host (.item(), .cpu(), nonzero's count). When the host issues work faster than the GPU runs it between "
        "those calls (its mean interval between launches, where no blocking call starts in between, times "
        "the launches, is below the steady state's GPU-busy time; at least MIN_LAUNCHES_FOR_LAUNCH_BOUND "
        "launches), each such gap is the call's whole: the wait's end, its return and the re-dispatch after it; "
        "otherwise only when the host had been blocked at least half as long as the gap lasts. Those gaps "
        "decide when they are the largest idle cause of a steady state below GPU_BOUND_BUSY_FRACTION busy and "
        "removing them would leave it at least GPU_BOUND_BUSY_FRACTION busy (the syncs serialize host and GPU, "
        "however large the kernels' share), or when the kernels hold less than DOMINANT_SHARE of the wall or "
        "less than GPU_SHARE_OVER_CAUSE times that idle. A blocking copy whose own transfer takes at least "
        "BLOCKING_COPY_SHARE of the call is a transfer, not a sync. The call is named from the capture (an "
        "explicit synchronize, a scalar or tensor read back, a count read back before a compaction kernel), "
        "and the fix with it.",
        "Remove the synchronization from the loop: drop an explicit synchronize, keep values on the GPU (check "
        "them every N steps, torch.where instead of Python control flow or boolean-mask indexing), or copy them "
        "asynchronously to a pinned buffer and wait on an event one step later.",
        (
            "CLOCK_ALIGNMENT_SLACK_NS",
            "BLOCKING_COPY_SHARE",
            "GPU_BOUND_BUSY_FRACTION",
            "MIN_LAUNCHES_FOR_LAUNCH_BOUND",
            "DOMINANT_SHARE",
            "GPU_SHARE_OVER_CAUSE",
            "MIN_FINDING_SHARE",
        ),
        _TIMELINE + "sync.py",
        (_CLASSIFY, _CONTEXT, _TIMELINE + "gaps.py"),
    ),
    "transfer_bound": _Entry(
        "timeline",
        "Copies between host and device dominate, or are pageable or not overlapped with compute.",
        "Copy time not overlapped by compute plus GPU idle behind blocking copies (whose own transfer takes at "
        "least BLOCKING_COPY_SHARE of the call) holds the largest share of the steady state's wall time. The "
        "expectation is bounded by the host link (HOST_LINK_PEAK_BYTES_PER_S): when the copies cannot hide "
        "behind the compute there is, only keeping the data on the GPU reaches the target, and the fix says so.",
        "Copy less (keep data on the GPU), copy from pinned memory with non_blocking=True (pinning is advised "
        "only for pageable copies), and overlap copies with compute on a separate stream.",
        (
            "DOMINANT_SHARE",
            "BLOCKING_COPY_SHARE",
            "GPU_BOUND_BUSY_FRACTION",
            "GPU_SHARE_OVER_CAUSE",
            "HOST_LINK_PEAK_BYTES_PER_S",
        ),
        _TIMELINE + "transfer.py",
        (_CLASSIFY, _CONTEXT),
    ),
    "gpu_bound": _Entry(
        "timeline",
        "The time is in GPU work: the kernels themselves set the speed.",
        "The union of kernel, copy, memset and graph intervals on the busiest GPU covers at least "
        "GPU_BOUND_BUSY_FRACTION of the steady state's wall time, or the kernels hold more than DOMINANT_SHARE "
        "of it and GPU_SHARE_OVER_CAUSE times the largest idle cause (shares decide), unless that cause is idle "
        "behind blocking calls whose removal would leave the steady state GPU_BOUND_BUSY_FRACTION busy "
        "(sync_bound). The diagnosis names the "
        "TOP_KERNELS kernels by their share of GPU time, each with the exact ncu command that profiles it. Below "
        "GPU_BOUND_BUSY_FRACTION, an idle cause that holds at least GPU_BOUND_RECOVERABLE_SHARE of the wall makes "
        "it a fix: that cause's own fix, with the time it recovers as the bound.",
        "Profile the named kernels with Nsight Compute (step 2); at the timeline level there is nothing to "
        "change but doing less work (fusing elementwise chains, a lower precision for matrix multiplies), except "
        "the recoverable idle time of a steady state below GPU_BOUND_BUSY_FRACTION busy.",
        (
            "GPU_BOUND_BUSY_FRACTION",
            "GPU_SHARE_OVER_CAUSE",
            "GPU_BOUND_RECOVERABLE_SHARE",
            "DOMINANT_SHARE",
            "TOP_KERNELS",
        ),
        _TIMELINE + "gpu_bound.py",
        (_CLASSIFY, _TIMELINE + "kernels.py"),
    ),
    "startup_bound": _Entry(
        "timeline",
        "One-time work (context creation, module and library loading, handle creation, teardown) dominates a "
        "capture that holds no repeated work after it.",
        "One-time work (start-up: the first call that created the context, by CONTEXT_CREATION_RATIO; module "
        "loading; compile and autotune ranges; teardown after the last GPU work) takes more than STARTUP_SHARE "
        "of the captured wall time and nothing after it is repeated work: fewer than "
        "MIN_ITERATIONS_FOR_WARMUP_DROP iterations, and less than REPEATED_WORK_SHARE of the launches are of "
        "kernels that run in each third of them. Otherwise the steady state leads and start-up and teardown "
        "are findings with their share of the capture.",
        "Capture the steady state only (nsys --capture-range=cudaProfilerApi around the loop, or a profiler "
        "schedule with warm-up steps), or amortize start-up over a longer run.",
        (
            "STARTUP_SHARE",
            "MIN_ITERATIONS_FOR_WARMUP_DROP",
            "REPEATED_WORK_SHARE",
            "CONTEXT_CREATION_RATIO",
        ),
        _TIMELINE + "startup.py",
        (_TIMELINE + "iterations.py", _CONTEXT),
    ),
    # ------------------------------------------------------------------ job
    "straggler": _Entry(
        "job",
        "One or a few ranks are slower than the others, and the others wait for them at every collective.",
        "A rank's compute per step exceeds the typical rank's by more than STRAGGLER_MIN_EXCESS (and by at "
        "least STRAGGLER_MIN_STEP_SHARE of the step), the other ranks' exposed NCCL time per step grows by at "
        "least STRAGGLER_WAIT_MATCH of that excess, and at most STRAGGLER_MAX_FRACTION of the ranks are slow.",
        "Find what the slow rank does differently (its own timeline diagnosis follows the job's): its data, "
        "its GPU's clocks or its neighbours on the node.",
        (
            "STRAGGLER_MIN_EXCESS",
            "STRAGGLER_MIN_STEP_SHARE",
            "STRAGGLER_WAIT_MATCH",
            "STRAGGLER_MAX_FRACTION",
        ),
        _JOB + "straggler.py",
        (_JOB_STATS,),
    ),
    "communication_bound": _Entry(
        "job",
        "Exposed collective (NCCL) time dominates the step: ranks are balanced, the time is communication.",
        "No straggler and no load imbalance, and on every rank the exposed NCCL time per step (collective time "
        "not overlapped with compute) is larger than both the rank's compute and its idle time per step.",
        "Overlap communication with compute (DDP bucket sizes, FSDP prefetch), communicate less (gradient "
        "accumulation, compression) or use a faster interconnect path.",
        ("LOAD_IMBALANCE_SPREAD", "STRAGGLER_MIN_EXCESS"),
        _JOB + "balance.py",
        (_JOB + "classify.py",),
    ),
    "load_imbalance": _Entry(
        "job",
        "The work is split unevenly across ranks: many ranks differ, not a few outliers.",
        "No straggler was found (more than STRAGGLER_MAX_FRACTION of the ranks are slow, or none alone), compute "
        "per step differs across ranks by more than LOAD_IMBALANCE_SPREAD of the typical rank's, and the slowest "
        "rank's excess is at least STRAGGLER_MIN_STEP_SHARE of the step.",
        "Balance the work: equal shard sizes, sequence-length bucketing, or a partition by measured cost.",
        ("LOAD_IMBALANCE_SPREAD", "STRAGGLER_MAX_FRACTION", "STRAGGLER_MIN_STEP_SHARE"),
        _JOB + "balance.py",
        (_JOB + "classify.py",),
    ),
    # ------------------------------------------------------------------ kernel, resource
    "dram_bandwidth_bound": _Entry(
        "kernel (resource)",
        "DRAM bandwidth is the saturated unit.",
        "DRAM throughput is the highest SpeedOfLight unit at HEALTHY_FRACTION_OF_PEAK or more of its peak; with "
        "DRAM bytes close to what the tensors need, the kernel is healthy. An L2 passing a DRAM stream through "
        "(read hit rate below L2_STREAMING_READ_HIT_RATE, with DRAM moving at least L2_STREAM_DRAM_SHARE of the L2's "
        "sector traffic) is named DRAM bound too. A report without the memory "
        "tables is healthy at that roof when neither L2 nor L1 is busier than DRAM by more than UNIT_TIE_MARGIN, "
        "at lower confidence. When two loops of each block read the same addresses (the SASS: the same parameter, "
        "block and thread address at both loops' first iteration) and DRAM serves the second read, the second "
        "pass is avoidable traffic and the verdict is a fix: one pass, with the data kept on chip. Below the roof "
        "DRAM is not the limit (latency_bound).",
        "Move fewer bytes: fuse with neighbouring kernels, use a smaller data type, reuse data from shared "
        "memory or L2; read data once where a kernel reads it twice.",
        (
            "HEALTHY_FRACTION_OF_PEAK",
            "LATENCY_BOUND_FRACTION",
            "L2_STREAMING_READ_HIT_RATE",
            "L2_STREAM_DRAM_SHARE",
            "UNIT_TIE_MARGIN",
        ),
        _RESOURCE,
        (_RULES + "passes.py", _RULES + "healthy.py"),
    ),
    "l2_bandwidth_bound": _Entry(
        "kernel (resource)",
        "L2 bandwidth is the saturated unit.",
        "L2 throughput is the highest SpeedOfLight unit at or above HEALTHY_FRACTION_OF_PEAK of its peak, and the "
        "L2 is not merely passing a DRAM stream through. Below the roof, with warps waiting on its results, the "
        "limit is the requests in flight (latency_bound). A healthy L2 quotes its byte counter against the L2 peak "
        "only when their ratio is the L2's throughput percentage (BANDWIDTH_SHARE_AGREEMENT), otherwise under the "
        "name of what the counter counts, without the peak. An L2 at its roof is a fix, not healthy, when its traffic "
        "is avoidable: the SMs read each byte L2_REREAD_FACTOR times or more from L2 (re-reads that on-chip reuse "
        "removes), or the coalesced global stores write L2_REWRITE_FACTOR times or more the bytes the kernel can "
        "write distinct (its DRAM writes plus the L2 capacity): a value kept in global memory and stored every "
        "iteration, whose fix is a register accumulator stored once and `__restrict__` pointers.",
        "Reuse data closer to the SMs (shared memory tiles, registers), or improve locality so that each "
        "block's working set stays in L1; accumulate in registers and store once.",
        (
            "HEALTHY_FRACTION_OF_PEAK",
            "LATENCY_BOUND_FRACTION",
            "BANDWIDTH_SHARE_AGREEMENT",
            "L2_REREAD_FACTOR",
            "L2_REWRITE_FACTOR",
        ),
        _RESOURCE,
        (_RULES + "healthy.py", _RULES + "memory.py"),
    ),
    "l1_shared_bandwidth_bound": _Entry(
        "kernel (resource)",
        "The L1/shared-memory pipe is the saturated unit.",
        "L1/shared throughput is the highest SpeedOfLight unit at or above HEALTHY_FRACTION_OF_PEAK of its peak, "
        "or above LATENCY_BOUND_FRACTION with the warps stalled on its full queues (lg_throttle, mio_throttle, "
        "tex_throttle). Saturating it with work the algorithm does not need is a fix, not healthy: FFMAs that "
        "reload their operands from shared memory (from the SASS data flow; in a report without SASS, more shared "
        "wavefronts per FFMA warp instruction than the L1 serves at the FMA pipe's rate, COALESCING_TOLERANCE "
        "past it, with FFMA at least MATRIX_LIKE_FFMA_SHARE of the instructions), measured against the "
        "register-tiled construction's REGISTER_TILE_SHARED_LOADS_PER_FFMA; or a reduction (DRAM writes at most "
        "REDUCTION_MAX_OUTPUT_SHARE of its reads) whose shared-memory tree issues more shared instructions per "
        "global load than a warp-shuffle reduction's REDUCTION_SHARED_PER_LOAD. Neither fix keeps today's "
        "instructions: the register tile keeps the FFMAs and its own shared loads (their issue time bounds the "
        "expected duration); the shuffle reduction rewrites the kernel, and the floor that binds is its input at "
        "the healthy DRAM roof. A healthy L1 quotes its byte counter (global and local loads only on the H200) "
        "against the L1 peak only when their ratio is the L1's throughput percentage (BANDWIDTH_SHARE_AGREEMENT).",
        "Load fewer bytes from shared memory per useful operation: register micro-tiles (8x8 outputs per thread, "
        "float4 shared reads) for a matrix product; many elements per thread and warp shuffles for a reduction; "
        "fewer bank conflicts.",
        (
            "HEALTHY_FRACTION_OF_PEAK",
            "LATENCY_BOUND_FRACTION",
            "COALESCING_TOLERANCE",
            "MATRIX_LIKE_FFMA_SHARE",
            "REGISTER_TILE_SHARED_LOADS_PER_FFMA",
            "REDUCTION_MAX_OUTPUT_SHARE",
            "REDUCTION_SHARED_PER_LOAD",
            "BANDWIDTH_SHARE_AGREEMENT",
        ),
        _RESOURCE,
        (_RULES + "matrix.py", _RULES + "reduction.py", _RULES + "healthy.py"),
    ),
    "compute_bound": _Entry(
        "kernel (resource)",
        "The FP32/FP64/INT pipes are the saturated unit.",
        "A compute pipe is the highest SpeedOfLight unit at or above LATENCY_BOUND_FRACTION of its peak; at "
        "HEALTHY_FRACTION_OF_PEAK doing work the algorithm needs, the kernel is healthy. The integer pipes (ALU, "
        "IMAD) count when at least INT_WORK_DATA_MAJORITY of the executed integer instructions compute on loaded "
        "data (a hash, bit manipulation) and they are at least INT_WORK_MIN_SHARE of what executes, as the SASS "
        "data flow shows; integer math on the thread index is overhead (instruction_bound).",
        "Do less arithmetic (algebraic simplification, lower precision, 32-bit integer math where the values fit), "
        "or move matrix work to tensor cores.",
        (
            "HEALTHY_FRACTION_OF_PEAK",
            "LATENCY_BOUND_FRACTION",
            "INT_WORK_DATA_MAJORITY",
            "INT_WORK_MIN_SHARE",
        ),
        _RESOURCE,
        (_UNITS,),
    ),
    "tensor_core_bound": _Entry(
        "kernel (resource)",
        "The tensor-core pipes are the saturated unit.",
        "The tensor pipe is the highest SpeedOfLight unit; at HEALTHY_FRACTION_OF_PEAK of its peak the kernel "
        "is healthy (the advice is then to do less work, not to tune). Integer MMA (IMMA/IGMMA) counts like any "
        "other. A slower tensor path than the GPU has for the same inputs (mma.sync HMMA/IMMA where wgmma "
        "exists) busy above LATENCY_BOUND_FRACTION and busier than every memory level is a fix: use the faster path.",
        "Do less work: lower precision (FP8/BF16 where accuracy allows), smaller or fewer matrix products.",
        ("HEALTHY_FRACTION_OF_PEAK", "LATENCY_BOUND_FRACTION"),
        _RESOURCE,
    ),
    "latency_bound": _Entry(
        "kernel (resource)",
        "Neither compute nor memory is saturated: warps stall waiting on latency.",
        "Every SpeedOfLight unit is below LATENCY_BOUND_FRACTION of its peak, or the busiest unit is a memory "
        "level below HEALTHY_FRACTION_OF_PEAK whose own queue is not full (warps wait on its results: too few "
        "requests in flight, Little's law), and no mechanism rule explains at least MIN_PRIMARY_SAVINGS of the "
        "time; the top warp stall reasons say what the warps wait for. Also a matrix-multiply k-loop whose "
        "operand loads are synchronous (LDG and STS, no LDGSTS/UTMALDG: Triton num_stages=1) with the tensor pipe "
        "below HEALTHY_FRACTION_OF_PEAK: the fix is software pipelining, not more warps.",
        "Expose more parallelism (more warps or more independent work per thread), prefetch, or shorten "
        "dependency chains.",
        ("LATENCY_BOUND_FRACTION", "HEALTHY_FRACTION_OF_PEAK", "MIN_PRIMARY_SAVINGS"),
        _RESOURCE,
        (_VERDICT,),
    ),
    # ------------------------------------------------------------------ kernel, mechanism
    "uncoalesced_global_access": _Entry(
        "kernel (mechanism)",
        "A warp's global loads or stores touch more 32-byte sectors than the bytes it uses need.",
        "Sectors per request exceed COALESCING_TOLERANCE times the ideal for the access width, and the excess "
        "traffic explains at least MIN_MECHANISM_SAVINGS (a finding) or MIN_PRIMARY_SAVINGS (the bottleneck) "
        "of the kernel's time.",
        "Make consecutive threads access consecutive addresses (transpose through shared memory, change the "
        "data layout to structure-of-arrays, vectorize).",
        ("COALESCING_TOLERANCE", "SECTOR_BYTES", "MIN_MECHANISM_SAVINGS", "MIN_PRIMARY_SAVINGS"),
        _RULES + "memory.py",
        (_VERDICT,),
    ),
    "shared_bank_conflicts": _Entry(
        "kernel (mechanism)",
        "Threads of a warp hit the same shared-memory bank at different addresses, so accesses serialize.",
        "Shared wavefronts per request (loads, stores or shared atomics) exceed COALESCING_TOLERANCE times the "
        "ideal for the access width (SHARED_BANKS banks of SHARED_BANK_BYTES), and the extra wavefronts explain "
        "enough of the time; an L1 saturated by those replays is never healthy.",
        "Pad the shared array (tile[32][33]), swizzle the index, or change which thread reads which element; "
        "for shared atomics on data-chosen bins (histograms), privatise the bins per lane (h[bin * 32 + lane]).",
        ("COALESCING_TOLERANCE", "SHARED_BANKS", "SHARED_BANK_BYTES", "MIN_MECHANISM_SAVINGS"),
        _RULES + "shared.py",
        (_VERDICT,),
    ),
    "local_memory_spill": _Entry(
        "kernel (mechanism)",
        "Thread-private data lives in local memory (register spills, or arrays indexed at run time) and its "
        "traffic goes through L1/L2.",
        "Local load/store sectors (or LDL/STL in the SASS) are a share of the memory traffic whose removal "
        "would save at least MIN_MECHANISM_SAVINGS of the kernel's time. A spill is told from an indexed array by the "
        "SASS (stores after the register limit against a stack array indexed at run time), or without it by ncu's "
        "share of local requests that are spills (LOCAL_SPILL_REQUEST_SHARE). A spill below the register count the "
        "block size allows was held by the build (-maxrregcount, or a minimum-blocks __launch_bounds__): ptxas "
        "spills only when a limit binds.",
        "Keep the data in registers (constant indices, unrolled loops, fewer live values) or in shared memory; "
        "remove the register cap that forces a spill.",
        ("MIN_MECHANISM_SAVINGS", "MIN_PRIMARY_SAVINGS", "LOCAL_SPILL_REQUEST_SHARE"),
        _RULES + "local.py",
        (_VERDICT,),
    ),
    "atomic_contention": _Entry(
        "kernel (mechanism)",
        "Many threads update the same few addresses atomically, so the updates serialize in L2.",
        "At least ATOMIC_MIN_SHARE of global requests are atomics and one L2 slice's atomic unit runs "
        "ATOMIC_HOT_SLICE_RATIO times the average slice.",
        "Reduce in registers or shared memory first (warp shuffles, block reduction) and issue one atomic per "
        "block, or privatize the counters.",
        ("ATOMIC_MIN_SHARE", "ATOMIC_HOT_SLICE_RATIO"),
        _RULES + "atomics.py",
    ),
    "warp_divergence": _Entry(
        "kernel (mechanism)",
        "Threads of a warp take different branches, so each path runs with part of the warp idle.",
        "Executed warp instructions average fewer than DIVERGENCE_ACTIVE_THREADS active threads of WARP_SIZE "
        "(InstructionStats' ratio, or SourceCounters' thread and warp instruction sums in a report without it).",
        "Make the branch uniform per warp (sort or bin the work, move the condition to the block level) or "
        "compute both sides without a branch.",
        ("DIVERGENCE_ACTIVE_THREADS", "WARP_SIZE"),
        _RULES + "divergence.py",
    ),
    "small_grid": _Entry(
        "kernel (mechanism)",
        "The grid has too few blocks to fill the GPU.",
        "The SMs are active less than SMALL_GRID_ACTIVE_SM_FRACTION of the elapsed time and the grid has fewer "
        "blocks than the GPU can hold at once.",
        "Launch more blocks (split the work finer, split-K for reductions) or batch several problems into one "
        "launch.",
        ("SMALL_GRID_ACTIVE_SM_FRACTION", "MIN_MECHANISM_SAVINGS"),
        _RULES + "launch.py",
    ),
    "tail_effect": _Entry(
        "kernel (mechanism)",
        "The last wave of blocks runs on part of the GPU while the rest idles.",
        "The grid takes more than TAIL_MIN_WAVES waves and its partial last wave leaves enough of the GPU idle "
        "to save at least MIN_MECHANISM_SAVINGS of the time.",
        "Size the grid to a whole number of waves, or use a persistent (grid-stride) kernel.",
        ("TAIL_MIN_WAVES", "MIN_MECHANISM_SAVINGS"),
        _RULES + "launch.py",
    ),
    "occupancy_limited": _Entry(
        "kernel (mechanism)",
        "Registers or shared memory cap the warps per SM, and latency is exposed for lack of warps.",
        "Theoretical occupancy is below OCCUPANCY_LOW_FRACTION, the grid fills at least OCCUPANCY_MIN_WAVES "
        "waves, schedulers issue in fewer than ISSUE_EXPOSED_LATENCY of cycles, and the limiting unit is below "
        "HEALTHY_FRACTION_OF_PEAK; never for a matrix-multiply k-loop with synchronous operand loads (the tile "
        "caps the warps by design: latency_bound).",
        "Free the limiting resource (__launch_bounds__, fewer registers per thread, less shared memory per "
        "block) or give each warp more independent work.",
        (
            "OCCUPANCY_LOW_FRACTION",
            "OCCUPANCY_MIN_WAVES",
            "ISSUE_EXPOSED_LATENCY",
            "HEALTHY_FRACTION_OF_PEAK",
        ),
        _RULES + "occupancy.py",
    ),
    "no_tensor_cores": _Entry(
        "kernel (mechanism)",
        "Matrix work runs on the FP32 FMA pipes; the SASS holds no MMA instruction.",
        "FFMA is at least MATRIX_LIKE_FFMA_SHARE of the instructions, special functions stay under "
        "MATRIX_LIKE_MAX_SFU_SHARE, the arithmetic intensity is past the FP32 ridge (or MATRIX_LIKE_MIN_INTENSITY "
        "without peaks), and no HMMA/HGMMA issued. A matrix product at the FP32 roof is healthy and this is "
        "advice: on a GPU that takes TF32 (sm_80+) it names TF32 with its rounding cost (TF32_ROUNDING_ERROR) and "
        "the report's TF32 tensor roof; in a report without SASS the counters stand for the data flow (FFMA at "
        "least MATRIX_FFMA_OF_FP32 of the FP32 instructions, operands staged through shared memory).",
        "Use tensor cores: cuBLAS/cuBLASLt (TF32 or BF16 where the precision allows), WMMA/MMA in CUDA C++, or "
        "tl.dot in Triton.",
        (
            "MATRIX_LIKE_FFMA_SHARE",
            "MATRIX_LIKE_MAX_SFU_SHARE",
            "MATRIX_LIKE_MIN_INTENSITY",
            "HEALTHY_FRACTION_OF_PEAK",
            "MATRIX_FFMA_OF_FP32",
            "TF32_ROUNDING_ERROR",
        ),
        _RULES + "matrix.py",
    ),
    "instruction_bound": _Entry(
        "kernel (mechanism)",
        "Instruction issue is the limit: index arithmetic, special functions or conversions fill the issue slots.",
        "Issue is the busiest unit while memory and the math pipes stay below LATENCY_BOUND_FRACTION of their "
        "peaks, and arithmetic on the data (FP math, integer math on loaded values) is below FP_HEAVY_SHARE of "
        "the executed instructions; never when the tensor pipe carries the SM's throughput. Also FP32 data "
        "computed in FP64 (F2F.F64.F32 in, F2F.F32.F64 out, FP64 math, 32-bit global accesses) with issue above "
        "LATENCY_BOUND_FRACTION: keep the arithmetic in FP32; divergence inside the FP64 routines (at least "
        "DIVERGENCE_INSIDE_FP64_SHARE of the divergent branches on their lines) is its consequence. Also 16-bit "
        "data widened to FP32 and rounded back every step (a float -> half conversion whose result a loop widens "
        "again, the conversions at least CONSTRUCT_MIN_SHARE of the executed instructions) with issue above "
        "LATENCY_BOUND_FRACTION: the FP32 pipe's busy time is then conversion work, never healthy.",
        "Issue fewer instructions: the diagnosis names the source construct the SASS shows on the responsible line "
        "(a run-time integer division, 64-bit index math, a double literal, half <-> float round trips, sinf's slow "
        "path, __syncthreads() in a loop; kprof/knowledge/constructs.py) and rewrites that line; without one, hoist "
        "index math out of loops, vectorize loads, use intrinsics or tables for special functions.",
        ("LATENCY_BOUND_FRACTION", "FP_HEAVY_SHARE", "DIVERGENCE_INSIDE_FP64_SHARE", "CONSTRUCT_MIN_SHARE"),
        _RULES + "instructions.py",
        (
            _RULES + "precision.py",
            _RULES + "divergence.py",
            _RULES + "conversions.py",
            "kprof/facts/constructs.py",
        ),
    ),
}


@functools.lru_cache(maxsize=1)
def _threshold_sources() -> dict[str, str]:
    """The docstring under each constant of :mod:`kprof.thresholds` (its source), by name."""
    tree = ast.parse(inspect.getsource(th))
    out: dict[str, str] = {}
    body = tree.body
    for node, nxt in zip(body, [*body[1:], None], strict=True):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        doc = ""
        if (
            isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            doc = " ".join(nxt.value.value.split())
        out[target.id] = doc
    # a constant without its own docstring shares the next one's (SHARED_BANKS / SHARED_BANK_BYTES)
    names = list(out)
    for i, name in enumerate(names):
        if not out[name]:
            out[name] = next((out[n] for n in names[i + 1 :] if out[n]), "")
    return out


def known_ids() -> tuple[str, ...]:
    """The bottleneck ids kprof gives today (:class:`~kprof.model.Bottleneck`), in vocabulary order."""
    return tuple(b.value for b in Bottleneck)


def explain(bottleneck: str | Bottleneck) -> Explanation:
    """What ``bottleneck`` means, when kprof gives it, and the thresholds it is judged with.

    Parameters
    ----------
    bottleneck
        A bottleneck id (``"sync_bound"``) or :class:`~kprof.model.Bottleneck`.

    Raises
    ------
    KprofError
        The id is not in kprof's vocabulary (the message lists the ids).

    Examples
    --------
    >>> explain("gpu_bound").thresholds[0].value
    0.8
    """
    key = bottleneck.value if isinstance(bottleneck, Bottleneck) else str(bottleneck).strip()
    if key not in known_ids() or key not in _ENTRIES:
        raise KprofError(f"explain: unknown bottleneck id {key!r} (known: {', '.join(known_ids())})")
    e = _ENTRIES[key]
    sources = _threshold_sources()
    return Explanation(
        bottleneck=key,
        level=e.level,
        meaning=e.meaning,
        when=e.when,
        fix=e.fix,
        thresholds=tuple(
            Threshold(name=n, value=getattr(th, n), source=sources.get(n, "")) for n in e.thresholds
        ),
        rule=e.rule,
        also=e.also,
    )


LEVELS = (
    ("timeline", "Timeline level (step 1)"),
    ("job", "Job level (many ranks)"),
    ("kernel (resource)", "Kernel level: the saturated resource (step 2)"),
    ("kernel (mechanism)", "Kernel level: the mechanism (step 3)"),
)
"""The levels of the vocabulary, in the order of the workflow, with their headings in docs/rules.md."""

PRINCIPLES = """\
kprof answers one question about a GPU program: what is limiting it, and what specifically should
change? It reads a profile and returns a *diagnosis*: a bottleneck id from the vocabulary below, a
verdict, the two or three metrics that establish it, the mechanism, the fix, and the metric that
should move if the fix is right. This page lists every bottleneck id: what it means, when kprof gives
it, the thresholds it is judged with (their values and where the values come from) and what it
recommends. It is generated from kprof's own rule registry (`kprof explain`), so it says what the
installed version does; `kprof explain ID` prints one entry.

## The workflow (order matters)

1. **Timeline first** (Nsight Systems `.nsys-rep` / `.sqlite`, PyTorch profiler `.json[.gz]`): is the
   time even inside a kernel? The union of kernel intervals on the GPU against the wall time of the
   steady state says whether the GPU, the host (launches, Python, data loading), synchronization or
   copies set the speed. When the GPU is the limit, the diagnosis names the kernels that matter and
   the exact `ncu` command that profiles them.
2. **Kernel second** (Nsight Compute `.ncu-rep`, or its `--csv` export): which resource is saturated
   (compute, a memory level, or neither: latency), and where the kernel sits on its roofline.
3. **Mechanism third**: what explains the gap to the roofline: uncoalesced accesses, bank conflicts,
   spills, divergence, atomics, occupancy, grid size and tail waves, and from the SASS whether the
   expected instruction issued (tensor-core MMA for matrix work, async copies).

`docs/workflow.md` walks through the three steps on the shipped samples.

## How the verdicts are decided

- **Counters are hints, not verdicts.** Only a mechanism that explains the measured gap to the
  roofline is a finding; a number that merely looks unhealthy (low occupancy, many registers, some
  bank conflicts) is not.
- **Healthy** means the saturated unit does work the algorithm needs: at its roof on elapsed cycles,
  with a grid that fills the GPU, and with the traffic or operations at that unit close to what the
  work requires. A healthy kernel's advice is to do less work, not to tune it.
- **Inconclusive** means the evidence is insufficient; the diagnosis then names the capture or the
  experiment that would settle it (`next_step`). A missing metric is never read as zero.
- **The steady state leads.** A capture of a whole process holds start-up and teardown; when
  repeated work follows start-up, the diagnosis is the steady state's and start-up is a finding with
  its share (`startup_bound` leads only when nothing after start-up repeats).
- **Durations measured under ncu are not the kernel's real duration** (ncu serializes and replays
  launches); with a timeline of the same run, kernel durations come from it.
- **Expectations obey physics.** A predicted duration is never below the floor (compulsory bytes at
  peak bandwidth, required FLOPs at peak rate); a fix's predicted gain is bounded by the share of time
  its cause holds.
- **Where, in the kernel's own language.** When the report has source (`-lineinfo`,
  `--import-source yes`), a mechanism names the lines responsible, and the fix is written for the
  language the kernel was written in. Kernel and file names may choose the wording of a fix; they
  never decide a verdict.
"""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def rules_markdown() -> str:
    """docs/rules.md: the principles, the vocabulary, and each id's entry with its thresholds.

    ``tests/test_docs.py`` regenerates it and compares, so the page cannot drift from the code;
    ``kprof explain --markdown > docs/rules.md`` writes it.

    Examples
    --------
    >>> rules_markdown().splitlines()[0]
    '# How kprof judges'
    """
    out = [
        "# How kprof judges",
        "",
        "<!-- Generated by `kprof explain --markdown > docs/rules.md` from kprof/explain.py and",
        "     kprof/thresholds.py; tests/test_docs.py fails when it is out of date. Do not edit by hand. -->",
        "",
        PRINCIPLES.rstrip(),
        "",
        "## The vocabulary",
        "",
        "| id | level | meaning |",
        "|---|---|---|",
    ]
    entries = [explain(b) for b in known_ids()]
    for e in entries:
        out.append(f"| [`{e.bottleneck}`](#{e.bottleneck}) | {e.level} | {_cell(e.meaning)} |")
    for level, heading in LEVELS:
        out += ["", f"## {heading}"]
        for e in (e for e in entries if e.level == level):
            out += [
                "",
                f"### {e.bottleneck}",
                "",
                f"{e.meaning}",
                "",
                f"**When kprof gives it.** {e.when}",
                "",
                f"**What it recommends.** {e.fix}",
                "",
                f"**Rule:** `{e.rule}`.",
            ]
            if e.thresholds:
                out += [
                    "",
                    "| threshold | value | where the value comes from |",
                    "|---|---|---|",
                ]
                for t in e.thresholds:
                    out.append(f"| `{t.name}` | `{t.value!r}` | {_cell(t.source)} |")
    return "\n".join(out) + "\n"


def cli(args: Any) -> int:
    """``kprof explain ID [--json | --markdown]``."""
    import json
    import sys

    if getattr(args, "markdown", False):
        if args.ids:
            raise KprofError("explain: --markdown writes the page of every id; give no ID with it")
        sys.stdout.write(rules_markdown())
        return 0
    ids = list(args.ids) or list(known_ids())
    out = [explain(i) for i in ids]
    if args.json:
        json.dump({"explanations": [e.to_dict() for e in out]}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print("\n\n".join(e.to_text() for e in out))
    return 0


__all__ = [
    "LEVELS",
    "PRINCIPLES",
    "Explanation",
    "Threshold",
    "cli",
    "explain",
    "known_ids",
    "rules_markdown",
]
