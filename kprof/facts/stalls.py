"""Warp stall reasons: where the warps of a launch wait, read once from the report.

The report gives them as per-issue ratios (``smsp__average_warps_issue_stalled_<reason>_per_issue_active``), as
latencies (``smsp__average_warp_latency_issue_stalled_<reason>``) or as PC samples summed over the SASS
(``smsp__pcsamp_warps_issue_stalled_<reason>``); :func:`stall_reasons` returns whichever it has, largest first, and
:func:`stall_metric` names what the numbers are. :data:`STALL_WORDS` says what each reason means and what removes it.
"""

from __future__ import annotations

import re

from kprof.facts.quantities import STALL_LATENCY, STALL_PER_ISSUE
from kprof.kernel_model import KernelLaunch

_STALL_PATTERNS = (
    re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
    re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.ratio$"),
)
PCSAMP_STALL = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+?)$")
"""A per-PC stall sample counter of the SourceCounters section; group 1 is the reason."""
NOT_STALLS = {"selected", "not_selected", "sleeping"}
"""Sample reasons that are not stalls (the warp issued, or chose to sleep)."""
GLOBAL_STALLS = ("long_scoreboard", "lg_throttle", "drain")
"""Stall reasons that global/local memory traffic causes (waiting on L1TEX results, a full LSU queue)."""
ATOMIC_STALLS = ("drain", "lg_throttle", "membar", "long_scoreboard")
"""Stall reasons of warps waiting on atomics: results (long_scoreboard), a full queue, fences, draining at exit."""
SHARED_STALLS = ("short_scoreboard", "mio_throttle")
"""Stall reasons that shared-memory traffic causes (waiting on MIO results, a full MIO queue)."""
LATENCY_STALLS = {"long_scoreboard", "short_scoreboard", "wait", "lg_throttle", "drain", "membar", "imc_miss"}
UNIT_THROTTLES = {"l1": ("lg_throttle", "mio_throttle", "tex_throttle")}
"""Stall reasons that say a memory level's own queue is full (backpressure from the unit, not waiting on a result):
the load/store (LSU) and MIO queues feed L1/shared memory and the texture pipe. DRAM and L2 have no such stall of
their own; a warp waiting on them shows ``long_scoreboard``."""


def stall_reasons(k: KernelLaunch) -> dict[str, float]:
    """Warp stall reasons (warp cycles per issued instruction, or PC samples), largest first; {} when not collected.

    :func:`stall_metric` names what the numbers are.
    """
    return _stalls(k)[0]


def stall_metric(k: KernelLaunch, reason: str) -> tuple[str, str]:
    """``(metric, unit)`` of :func:`stall_reasons`' value for ``reason``: a per-issue ratio the report holds, or
    the per-PC sample counter summed over the SASS (``sass:smsp__pcsamp_warps_issue_stalled_<reason>``)."""
    kind = _stalls(k)[1]
    if kind == "pc_samples":
        return f"sass:smsp__pcsamp_warps_issue_stalled_{reason}", "PC samples"
    if kind == "latency":
        return f"smsp__average_warp_latency_issue_stalled_{reason}.ratio", STALL_LATENCY
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio", STALL_PER_ISSUE


def _stalls(k: KernelLaunch) -> tuple[dict[str, float], str]:
    for pat, kind in zip(_STALL_PATTERNS, ("per_issue", "latency"), strict=True):
        out = {}
        for name, m in k.metrics.items():
            hit = pat.match(name)
            if hit and not isinstance(m.value, str):
                reason = hit.group(1)
                if reason not in NOT_STALLS and float(m.value) > 0:
                    out[reason] = float(m.value)
        if out:
            return dict(sorted(out.items(), key=lambda kv: -kv[1])), kind
    samples: dict[str, float] = {}
    for line in k.sass:
        for cname, v in line.counters.items():
            hit = PCSAMP_STALL.match(cname)
            if hit and hit.group(1) not in NOT_STALLS and not cname.endswith("_not_issued"):
                samples[hit.group(1)] = samples.get(hit.group(1), 0.0) + v
    out = dict(sorted(((r, v) for r, v in samples.items() if v > 0), key=lambda kv: -kv[1]))
    return out, "pc_samples"


STALL_WORDS = {
    "long_scoreboard": (
        "waiting for global/local memory (L1TEX) results",
        "keep more bytes in flight per warp: "
        "wider (128-bit) loads, unrolled independent loads, cp.async/TMA prefetch, or more resident warps",
    ),
    "short_scoreboard": (
        "waiting for shared memory or special-function results",
        "fewer shared-memory round trips (register tiling, wider LDS) and fewer MUFU operations",
    ),
    "barrier": (
        "waiting at __syncthreads",
        "balance the work between the warps of a block and synchronise less often",
    ),
    "membar": ("waiting on memory fences", "drop or narrow the fences (scope .cta instead of .gpu)"),
    "lg_throttle": (
        "the load/store queue is full",
        "issue fewer, wider global/local memory instructions (vector loads)",
    ),
    "mio_throttle": (
        "the shared-memory/MIO queue is full",
        "fewer, wider shared-memory instructions; fix bank conflicts",
    ),
    "math_pipe_throttle": (
        "a math pipe is saturated",
        "move work to another pipe or reduce the operation count",
    ),
    "tex_throttle": ("the texture pipe is full", "fewer texture/LDG.CONSTANT requests"),
    "wait": (
        "fixed-latency dependencies between consecutive instructions",
        "more independent instructions (ILP): unroll and interleave independent chains",
    ),
    "dispatch_stall": ("the dispatcher could not issue", "check for register-bank or pipe contention"),
    "no_instruction": ("instruction-cache misses", "smaller code: less unrolling or fewer template variants"),
    "branch_resolving": (
        "branch targets being resolved",
        "fewer divergent branches; predicate short branches",
    ),
    "drain": ("waiting for memory stores to drain at exit", "fewer trailing stores or atomics"),
    "imc_miss": ("constant-cache misses", "uniform constant accesses; fewer distinct constant addresses"),
    "sleeping": ("sleeping warps", "fewer nanosleep/backoff loops"),
}
