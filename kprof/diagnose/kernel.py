"""Kernel stage: why one kernel launch is slow, from an Nsight Compute report.

The order DESIGN.md insists on:

1. **SpeedOfLight.** Which unit is closest to its peak: DRAM, L2, L1/shared, the tensor or
   FP32/FP64 pipes, or instruction issue; below 60% everywhere the kernel is latency bound.
2. **Roofline** (:mod:`kprof.diagnose.roofline`): achieved FLOP/s and bytes/s against the
   ceilings the report itself measured. A kernel whose limiting unit does *useful* work at
   >= :data:`~kprof.thresholds.HEALTHY_FRACTION_OF_PEAK` of its peak is ``healthy``: the
   advice is to do less work, never to tune a counter.
3. **Mechanisms.** Each rule estimates how much of the kernel's time it would remove if
   fixed (``savings``) from the two or three metrics that establish it; the largest one that
   explains the gap becomes the primary bottleneck, the others are findings ranked by their
   share of the gap. Counters that explain nothing (a cuBLAS GEMM's 168 registers, low
   occupancy and bank conflicts while its tensor pipes are at their peak) are never findings.

No rule looks at a kernel's or a file's name. Durations from ncu are labelled "measured under
ncu"; with a ``timeline`` the duration of the matching kernel is taken from it.

Derived metric names used in :class:`~kprof.model.Expectation` (``derived:...``) are
computed by :func:`metric_value`, so a later ``compare`` can read them from the after report.
"""

from __future__ import annotations

import math
import re
import shlex
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kprof import thresholds as th
from kprof.diagnose.localize import localized
from kprof.diagnose.roofline import Roofline, roofline
from kprof.diagnose.sass import SassSummary, analyze_sass
from kprof.kernel_model import KernelLaunch, KernelProfile
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Finding,
    Subject,
    SubjectKind,
    Verdict,
)

B = Bottleneck
UNDER_NCU = "measured under ncu"

# ------------------------------------------------------------------------------------ metrics
DURATION = "gpu__time_duration.sum"
GLD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
GST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
SLD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SLD_REQUESTS = ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_ld.sum")
SST_REQUESTS = ("smsp__sass_inst_executed_op_shared_st.sum", "smsp__inst_executed_op_shared_st.sum")
SLD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
L1_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts.sum"
L2_THEORETICAL_SECTORS = "memory_l2_theoretical_sectors_global"
L2_THEORETICAL_SECTORS_IDEAL = "memory_l2_theoretical_sectors_global_ideal"
SHARED_WAVEFRONTS = "memory_l1_wavefronts_shared"
SHARED_WAVEFRONTS_IDEAL = "memory_l1_wavefronts_shared_ideal"
LLD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
LST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
L1_SECTORS = "l1tex__t_sectors.sum"
GATOM_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",)
GRED_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",)
L2_READ_HIT_RATE = "lts__t_sector_op_read_hit_rate.pct"
ATOMIC_SLICE_MAX = "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed"
ATOMIC_SLICE_AVG = "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
THREADS_PER_INST_PRED_ON = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"
WAVES = "launch__waves_per_multiprocessor"
SM_ACTIVE = "sm__cycles_active.avg"
SM_ELAPSED = ("sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max")
ACHIEVED_OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"
ISSUE_ACTIVE = (
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
)
ELIGIBLE_WARPS = "smsp__warps_eligible.avg.per_cycle_active"
OCC_LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "block size (warps)": "launch__occupancy_limit_warps",
    "blocks per SM": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
_STALL_PATTERNS = (
    re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$"),
    re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.ratio$"),
)
_PCSAMP_STALL = re.compile(r"^smsp__pcsamp_warps_issue_stalled_(\w+?)$")
_NOT_STALLS = {"selected", "not_selected", "sleeping"}
GLOBAL_STALLS = ("long_scoreboard", "lg_throttle", "drain")
"""Stall reasons that global/local memory traffic causes (waiting on L1TEX results, a full LSU queue)."""
SHARED_STALLS = ("short_scoreboard", "mio_throttle")
"""Stall reasons that shared-memory traffic causes (waiting on MIO results, a full MIO queue)."""
LATENCY_STALLS = {"long_scoreboard", "short_scoreboard", "wait", "lg_throttle", "drain", "membar", "imc_miss"}

# Derived names for expectations (documented; computed by metric_value()).
DERIVED: dict[str, str] = {
    "derived:global_load_sectors_per_request": f"{GLD_SECTORS} / {GLD_REQUESTS}",
    "derived:global_store_sectors_per_request": f"{GST_SECTORS} / {GST_REQUESTS}",
    "derived:global_sectors_per_request": "(global load + store sectors) / (load + store requests)",
    "derived:shared_wavefronts_per_request": "(shared ld + st wavefronts) / (shared ld + st instructions)",
    "derived:local_memory_sectors": f"{LLD_SECTORS} + {LST_SECTORS}",
    "derived:global_atomic_requests": "global atom + red requests at L1",
    "derived:sm_active_fraction": f"{SM_ACTIVE} / sm__cycles_elapsed.avg",
    "derived:tail_wave_efficiency": f"{WAVES} / ceil({WAVES})",
}

# ncu sections each check needs, for the exact command that collects what is missing.
SECTION_OF = {
    "sol": "SpeedOfLight",
    "memory": "MemoryWorkloadAnalysis_Tables",
    "launch": "LaunchStats",
    "occupancy": "Occupancy",
    "stalls": "WarpStateStats",
    "instructions": "InstructionStats",
    "scheduler": "SchedulerStats",
    "roofline": "SpeedOfLight_RooflineChart",
    "source": "SourceCounters",
}

RESOURCE_OF_UNIT = {
    "dram": B.DRAM_BANDWIDTH_BOUND,
    "l2": B.L2_BANDWIDTH_BOUND,
    "l1": B.L1_SHARED_BANDWIDTH_BOUND,
    "tensor": B.TENSOR_CORE_BOUND,
    "fp32": B.COMPUTE_BOUND,
    "fp64": B.COMPUTE_BOUND,
    "issue": B.INSTRUCTION_BOUND,
}
UNIT_WORDS = {
    "dram": "DRAM bandwidth",
    "l2": "L2 cache bandwidth",
    "l1": "L1/shared-memory bandwidth",
    "tensor": "tensor-core throughput",
    "fp32": "FP32 pipe throughput",
    "fp64": "FP64 pipe throughput",
    "issue": "SM instruction issue",
}
MEMORY_UNITS = ("dram", "l2", "l1")
USEFUL_UNITS = ("dram", "l2", "l1", "tensor", "fp32", "fp64")
UNIT_PRIORITY = ("tensor", "fp64", "fp32", "dram", "l2", "l1", "issue")
"""When several units are near their peak, the one named is the first here: the FLOP pipes and DRAM carry the
program's own work (FLOPs, bytes that must cross the memory bus); caches carry traffic derived from it."""


# ------------------------------------------------------------------------------------ helpers
def _cap(text: str) -> str:
    """First letter upper case, the rest untouched (``str.capitalize`` would turn "L2" into "l2")."""
    return text[:1].upper() + text[1:]


def _fmt_ns(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.0f} ns"


def _sum_present(k: KernelLaunch, names: Iterable[str]) -> float | None:
    vals = [k.value(n) for n in names]
    present = [v for v in vals if v is not None]
    return sum(present) if present else None


def _first(k: KernelLaunch, names: Sequence[str]) -> tuple[str, float] | None:
    return k.first_value(*names)


def metric_value(k: KernelLaunch, name: str) -> float | None:
    """The value of an ncu metric, or of one of the documented ``derived:`` names (see :data:`DERIVED`).

    Returns None when the report lacks what it needs (missing is never 0).

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={GLD_SECTORS: Metric(3200.0), GLD_REQUESTS: Metric(100.0)})
    >>> metric_value(k, "derived:global_load_sectors_per_request")
    32.0
    """
    if not name.startswith("derived:"):
        return k.value(name)
    if name == "derived:global_load_sectors_per_request":
        return _ratio(k.value(GLD_SECTORS), k.value(GLD_REQUESTS))
    if name == "derived:global_store_sectors_per_request":
        return _ratio(k.value(GST_SECTORS), k.value(GST_REQUESTS))
    if name == "derived:global_sectors_per_request":
        return _ratio(
            _sum_present(k, (GLD_SECTORS, GST_SECTORS)), _sum_present(k, (GLD_REQUESTS, GST_REQUESTS))
        )
    if name == "derived:shared_wavefronts_per_request":
        hits = [h for h in (_first(k, SLD_REQUESTS), _first(k, SST_REQUESTS)) if h is not None]
        req = sum(h[1] for h in hits) if hits else None
        return _ratio(_sum_present(k, (SLD_WAVEFRONTS, SST_WAVEFRONTS)), req)
    if name == "derived:local_memory_sectors":
        return _sum_present(k, (LLD_SECTORS, LST_SECTORS))
    if name == "derived:global_atomic_requests":
        return _sum_present(k, GATOM_REQUESTS + GRED_REQUESTS)
    if name == "derived:sm_active_fraction":
        return _sm_active_fraction(k)
    if name == "derived:tail_wave_efficiency":
        w = k.value(WAVES)
        return w / math.ceil(w) if w and w > 0 else None
    return None


def _excess_share(
    loads: tuple[float | None, float | None, float],
    stores: tuple[float | None, float | None, float],
    ncu_actual: float | None,
    ncu_ideal: float | None,
) -> float | None:
    """Share of the memory units moved (sectors, wavefronts) that an ideal access pattern would not
    need, from ``(units, requests, ideal units per request)`` of loads and stores; ncu's own per-
    instruction ideal replaces ours when the report has it. None when nothing moved, or when ncu's
    ideal shows no excess beyond COALESCING_TOLERANCE."""
    actual = (loads[0] or 0.0) + (stores[0] or 0.0)
    if actual <= 0:
        return None
    ideal_total = (loads[1] or 0.0) * loads[2] + (stores[1] or 0.0) * stores[2]
    waste = max(0.0, 1.0 - ideal_total / actual)
    if ncu_actual and ncu_ideal is not None:
        waste = max(0.0, 1.0 - ncu_ideal / ncu_actual)
        if waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
            return None
    return waste


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _sm_active_fraction(k: KernelLaunch) -> float | None:
    active = k.value(SM_ACTIVE)
    hit = _first(k, SM_ELAPSED)
    if active is None or hit is None or hit[1] <= 0:
        return None
    return min(1.0, active / hit[1])


def stall_reasons(k: KernelLaunch) -> dict[str, float]:
    """Warp stall reasons (cycles per issued instruction, or PC samples), largest first; {} when not collected."""
    for pat in _STALL_PATTERNS:
        out = {}
        for name, m in k.metrics.items():
            hit = pat.match(name)
            if hit and not isinstance(m.value, str):
                reason = hit.group(1)
                if reason not in _NOT_STALLS and float(m.value) > 0:
                    out[reason] = float(m.value)
        if out:
            return dict(sorted(out.items(), key=lambda kv: -kv[1]))
    samples: dict[str, float] = {}
    for line in k.sass:
        for cname, v in line.counters.items():
            hit = _PCSAMP_STALL.match(cname)
            if hit and hit.group(1) not in _NOT_STALLS:
                samples[hit.group(1)] = samples.get(hit.group(1), 0.0) + v
    return dict(sorted(((r, v) for r, v in samples.items() if v > 0), key=lambda kv: -kv[1]))


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


def _ncu_command(
    k: KernelLaunch, what: str = "--set full", *, cooperative: bool = False, suffix: str = ""
) -> str:
    """The exact ncu command that profiles this launch again (one launch, source imported)."""
    name = k.name or "NAME"
    kreg = f"regex:^{name}$" if re.fullmatch(r"\w+", name) else shlex.quote(f"regex:^{re.escape(name)}$")
    safe = re.sub(r"\W+", "_", name)[:40] + suffix
    replay = " --replay-mode application" if cooperative else ""
    return f"ncu {what}{replay} --import-source yes -k {kreg} -c 1 -o {safe} <your program and its arguments>"


def _after_command(k: KernelLaunch, cooperative: bool = False) -> str:
    safe = re.sub(r"\W+", "_", k.name or "kernel")[:40]
    coop = (
        (
            " (cooperative launch: kernel replay would break its grid synchronization, hence "
            "--replay-mode application)"
        )
        if cooperative
        else ""
    )
    return (
        f"After the change, profile the same launch again: `{_ncu_command(k, cooperative=cooperative, suffix='_after')}`"
        f"{coop}, then check it with `kprof compare {safe}.ncu-rep {safe}_after.ncu-rep`."
    )


# ------------------------------------------------------------------------------------ facts
@dataclass(slots=True)
class _Facts:
    k: KernelLaunch
    roof: Roofline
    sass: SassSummary
    duration_ns: float | None
    duration_label: str
    util: dict[str, float]
    missing: set[str] = field(default_factory=set)
    source_format: str = "ncu-rep"
    cooperative: bool = False

    def v(self, name: str) -> float | None:
        return self.k.value(name)

    @property
    def sm_count(self) -> int | None:
        v = self.k.device_attributes.get("multiprocessor_count")
        return int(v) if isinstance(v, int | float) else None

    @property
    def u_max(self) -> float:
        return max(self.util.values()) if self.util else 0.0

    def limiter(self) -> tuple[str, float]:
        """The busiest unit; within 5 points of it, the one whose work is the program's (priority order)."""
        if not self.util:
            return "issue", 0.0
        top = max(self.util.values())
        close = [u for u in UNIT_PRIORITY if u in self.util and self.util[u] >= top - 0.05]
        unit = close[0] if close else max(self.util, key=lambda u: self.util[u])
        return unit, self.util[unit]

    def l2_carries_dram_traffic(self) -> bool:
        """True when L2 reads mostly miss: the L2 is passing a DRAM stream through, so the stream is DRAM's."""
        hit = self.v(L2_READ_HIT_RATE)
        return hit is not None and hit / 100.0 < th.L2_STREAMING_READ_HIT_RATE and "dram" in self.util

    def mem_max(self) -> tuple[str, float]:
        levels = [(u, self.util[u]) for u in MEMORY_UNITS if u in self.util]
        return max(levels, key=lambda x: x[1]) if levels else ("dram", 0.0)

    def duration_evidence(self) -> Evidence | None:
        if self.duration_ns is None:
            return None
        return Evidence(
            name=f"duration ({self.duration_label})",
            value=round(self.duration_ns / 1e3, 3),
            unit="µs",
            reference="ncu serializes and replays the kernel: compare only with other ncu durations"
            if self.duration_label == UNDER_NCU
            else "from the timeline capture",
            metric=DURATION if self.duration_label == UNDER_NCU else None,
        )


def _units(roof: Roofline) -> dict[str, float]:
    u = roof.utilization
    out: dict[str, float] = {}
    for level in MEMORY_UNITS:
        if level in u:
            out[level] = u[level]
    tensor = [u[x] for x in ("tensor_pipe", "flops_tensor") if x in u]
    if tensor:
        out["tensor"] = max(tensor)
    fp32 = u.get("flops_fp32", u.get("fma_pipe"))
    if fp32 is not None:
        out["fp32"] = fp32
    fp64 = [u[x] for x in ("fp64_pipe", "flops_fp64") if x in u]
    if fp64:
        out["fp64"] = max(fp64)
    if "compute" in u:
        out["issue"] = u["compute"]
    return out


def _facts(k: KernelLaunch, duration_ns: float | None, label: str) -> _Facts:
    roof = roofline(k)
    f = _Facts(
        k=k,
        roof=roof,
        sass=analyze_sass(k.sass),
        duration_ns=duration_ns,
        duration_label=label,
        util=_units(roof),
    )
    if not roof.has_sol:
        f.missing.add("sol")
    if k.value(GLD_REQUESTS) is None and k.value(GST_REQUESTS) is None and k.value(SLD_WAVEFRONTS) is None:
        f.missing.add("memory")
    if k.value(WAVES) is None or k.grid is None:
        f.missing.add("launch")
    if k.value(THEORETICAL_OCC) is None or k.value(OCC_LIMITS["registers"]) is None:
        f.missing.add("occupancy")
    if not stall_reasons(k):
        f.missing.add("stalls")
    if k.value(THREADS_PER_INST) is None:
        f.missing.add("instructions")
    if _first(k, ISSUE_ACTIVE) is None:
        f.missing.add("scheduler")
    if not roof.flops:
        f.missing.add("roofline")
    if f.sass.empty or not f.sass.weighted:
        f.missing.add("source")
    return f


# ------------------------------------------------------------------------------------ mechanisms
@dataclass(slots=True)
class _Mech:
    bottleneck: Bottleneck
    savings: float
    """Fraction of the kernel's time that fixing it would remove (0..1)."""
    headline: str
    evidence: list[Evidence]
    mechanism: str
    fix: str
    expect: list[Expectation]
    confidence: float
    would_raise: str
    inflates: tuple[str, ...] = ()
    """Units whose work it inflates with waste."""
    waste: float = 0.0
    """Fraction of those units' work that is waste."""
    blocks_healthy: bool = False
    """True when the roof itself is the wrong one (matrix work off the tensor cores)."""


def _time_expectation(f: _Facts, savings: float) -> Expectation | None:
    d = f.v(DURATION)
    if d is None:
        return None
    return Expectation(
        metric=DURATION,
        direction=Direction.DOWN,
        target=round(d * (1.0 - savings), 0),
        unit="ns",
        value_now=round(d, 0),
        label=f"kernel duration ({UNDER_NCU})",
    )


def _scale_to_limiter(f: _Facts, unit_util: float, stalls: tuple[str, ...] = ()) -> float:
    """How much of a unit's waste shows in the kernel's time.

    A unit at its roof (>= the healthy fraction) sets the pace: its waste is time, in proportion to how
    busy it is next to the busiest unit. Below that, the kernel waits rather than streams, and the waste
    costs the share of warp stall cycles spent on that unit (``stalls``: the reasons it causes), when the
    report has the stall breakdown.
    """
    by_util = 1.0 if f.u_max <= 0 else max(0.0, min(1.0, unit_util / f.u_max))
    if not stalls or unit_util >= th.HEALTHY_FRACTION_OF_PEAK:
        return by_util
    reasons = stall_reasons(f.k)
    total = sum(reasons.values())
    if total <= 0:
        return by_util
    return min(by_util, sum(reasons.get(r, 0.0) for r in stalls) / total)


def _uncoalesced(f: _Facts) -> _Mech | None:
    k = f.k
    ld_s, ld_r, st_s, st_r = (k.value(n) for n in (GLD_SECTORS, GLD_REQUESTS, GST_SECTORS, GST_REQUESTS))
    if (ld_r is None or ld_s is None) and (st_r is None or st_s is None):
        return _from_ncu_rule(f, "UncoalescedGlobalAccess")
    active = k.value(THREADS_PER_INST_PRED_ON) or k.value(THREADS_PER_INST) or float(th.WARP_SIZE)
    lanes = min(float(th.WARP_SIZE), max(1.0, active)) / th.WARP_SIZE

    def ideal(width: float | None) -> float:
        w = width if width is not None else 4.0
        return max(1.0, w * th.WARP_SIZE * lanes / th.SECTOR_BYTES)

    ideal_ld, ideal_st = (
        ideal(f.sass.global_load_bytes_per_thread),
        ideal(f.sass.global_store_bytes_per_thread),
    )
    # ncu's SourceCounters know each instruction's real width and active lanes: their ideal wins.
    waste = _excess_share(
        (ld_s, ld_r, ideal_ld),
        (st_s, st_r, ideal_st),
        k.value(L2_THEORETICAL_SECTORS),
        k.value(L2_THEORETICAL_SECTORS_IDEAL),
    )
    if waste is None:
        return None
    spr_ld = _ratio(ld_s, ld_r)
    spr_st = _ratio(st_s, st_r)
    worst_ld = spr_ld is not None and spr_ld > ideal_ld * th.COALESCING_TOLERANCE
    worst_st = spr_st is not None and spr_st > ideal_st * th.COALESCING_TOLERANCE
    if not (worst_ld or worst_st):
        return None
    mem_unit, mem_util = f.mem_max()
    savings = waste * _scale_to_limiter(f, mem_util, GLOBAL_STALLS)
    which = (
        "loads"
        if (worst_ld and (not worst_st or (spr_ld or 0) / ideal_ld >= (spr_st or 0) / ideal_st))
        else "stores"
    )
    spr, idl = (spr_ld, ideal_ld) if which == "loads" else (spr_st, ideal_st)
    metric = GLD_SECTORS if which == "loads" else GST_SECTORS
    width = f.sass.global_load_bytes_per_thread if which == "loads" else f.sass.global_store_bytes_per_thread
    w = int(width) if width else 4
    ev = [
        Evidence(
            name=f"global {which}: sectors per request",
            value=round(spr or 0.0, 2),
            unit="sectors/request",
            reference=f"ideal {idl:.3g} for {w}-byte accesses ({th.WARP_SIZE} lanes x {w} B / {th.SECTOR_BYTES} B sectors)",
            reference_value=round(idl, 2),
            metric=f"{metric} / {metric.replace('_sectors_', '_requests_')}",
        ),
        Evidence(
            name="global sectors that carry no requested data",
            value=round(100 * waste, 1),
            unit="%",
            reference="0% when every warp reads contiguous, aligned addresses",
            metric=f"{GLD_SECTORS}, {GST_SECTORS}",
        ),
        Evidence(
            name=f"{UNIT_WORDS[mem_unit]} used",
            value=round(100 * mem_util, 1),
            unit="% of peak",
            reference="the waste is paid in the busiest memory level",
            metric={"dram": "gpu__dram_throughput", "l2": "lts__throughput", "l1": "l1tex__throughput"}[
                mem_unit
            ],
        ),
    ]
    exp = [
        Expectation(
            metric=f"derived:global_{'load' if which == 'loads' else 'store'}_sectors_per_request",
            direction=Direction.DOWN,
            target=round(idl, 1),
            unit="sectors/request",
            value_now=round(spr or 0.0, 2),
            label=f"global {which[:-1]} sectors per request",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.UNCOALESCED_GLOBAL_ACCESS,
        savings=savings,
        headline=(
            f"Uncoalesced global {which}: {spr:.1f} sectors per request against an ideal {idl:.3g}, "
            f"so {100 * waste:.0f}% of the global memory traffic carries no requested data."
        ),
        evidence=ev,
        mechanism=(
            f"Neighbouring lanes of a warp access addresses more than {w} bytes apart, so each warp-wide "
            f"{which[:-1]} touches many 32-byte sectors and the memory system moves whole sectors for a few "
            "useful bytes each."
        ),
        fix=(
            "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the index roles, "
            "change the data layout (structure of arrays), or stage the tile through shared memory and "
            "access global memory row by row."
        ),
        expect=exp,
        confidence=0.85 if not f.sass.empty else 0.7,
        would_raise="SourceCounters (--import-source yes) to point at the exact line"
        if "source" in f.missing
        else "",
        inflates=MEMORY_UNITS,
        waste=waste,
    )


# When kprof's own counters are absent (a --page details CSV keeps ncu's rule results but drops the
# memory tables), ncu's rules still quote the measured excess ("3670016 excessive sectors (78% of the
# total ...)"). That measurement, not the rule's verdict or its speedup estimate, is used: kprof still
# decides whether the waste explains the gap (the inflated unit must be the busy one), at lower confidence.
_RULE_WASTE = {
    "UncoalescedGlobalAccess": (
        re.compile(r"\(([\d.]+)% of the total"),
        B.UNCOALESCED_GLOBAL_ACCESS,
        MEMORY_UNITS,
    ),
    "UncoalescedSharedAccess": (re.compile(r"\(([\d.]+)% of the total"), B.SHARED_BANK_CONFLICTS, ("l1",)),
    "SharedMemoryConflicts": (
        re.compile(r"represent ([\d.]+)% of the overall"),
        B.SHARED_BANK_CONFLICTS,
        ("l1",),
    ),
}


def _from_ncu_rule(f: _Facts, rule_name: str) -> _Mech | None:
    r = f.k.rule(rule_name)
    if r is None or rule_name not in _RULE_WASTE:
        return None
    pattern, bott, units = _RULE_WASTE[rule_name]
    m = pattern.search(r.message)
    if not m:
        return None
    waste = min(1.0, float(m.group(1)) / 100.0)
    if waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
        return None
    unit = max((u for u in units if u in f.util), key=lambda u: f.util[u], default=None)
    if unit is None:
        return None
    savings = waste * _scale_to_limiter(f, f.util[unit])
    what = "global memory sectors" if bott is B.UNCOALESCED_GLOBAL_ACCESS else "shared-memory wavefronts"
    ev = [
        Evidence(
            name=f"excess {what} (quoted by ncu's {rule_name} rule)",
            value=round(100 * waste, 1),
            unit="%",
            reference="0% for coalesced, conflict-free access; measured by ncu's source counters",
            metric=rule_name,
        ),
        Evidence(
            name=f"{UNIT_WORDS[unit]} used",
            value=round(100 * f.util[unit], 1),
            unit="% of peak",
            reference="the waste is paid in this unit, the busiest one",
            metric=_unit_metric(unit),
        ),
    ]
    t = _time_expectation(f, savings)
    if bott is B.UNCOALESCED_GLOBAL_ACCESS:
        head = f"Uncoalesced global access: {100 * waste:.0f}% of the global memory sectors carry no requested data"
        mech = (
            "Neighbouring lanes of a warp access scattered addresses, so each warp-wide access touches many "
            "32-byte sectors and the memory system moves whole sectors for a few useful bytes each."
        )
        fix = (
            "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the index roles, change "
            "the data layout (structure of arrays), or stage the tile through shared memory."
        )
        exp_metric, label = "derived:global_sectors_per_request", "global sectors per request"
    else:
        head = f"Shared-memory bank conflicts: {100 * waste:.0f}% of the shared-memory wavefronts are replays"
        mech = (
            "Several lanes of a warp address different words in the same bank (typically a column of a "
            "row-major tile), so each access is split into one wavefront per conflicting word."
        )
        fix = "Pad the shared array by one word per row (e.g. tile[32][33]) or swizzle the index."
        exp_metric, label = "derived:shared_wavefronts_per_request", "shared-memory wavefronts per request"
    exp = [Expectation(metric=exp_metric, direction=Direction.DOWN, label=label)]
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=bott,
        savings=savings,
        headline=head + f", and {UNIT_WORDS[unit]} is the busiest unit ({100 * f.util[unit]:.0f}% of peak).",
        evidence=ev,
        mechanism=mech,
        fix=fix,
        expect=exp,
        confidence=0.6,
        would_raise="kprof's own sector/wavefront counts: the raw page (--page raw) or the .ncu-rep itself",
        inflates=units,
        waste=waste,
    )


def _bank_conflicts(f: _Facts) -> _Mech | None:
    k = f.k
    wf_ld, wf_st = k.value(SLD_WAVEFRONTS), k.value(SST_WAVEFRONTS)
    rq_ld_hit, rq_st_hit = _first(k, SLD_REQUESTS), _first(k, SST_REQUESTS)
    rq_ld = rq_ld_hit[1] if rq_ld_hit else None
    rq_st = rq_st_hit[1] if rq_st_hit else None
    if (wf_ld is None or not rq_ld) and (wf_st is None or not rq_st):
        return _from_ncu_rule(f, "UncoalescedSharedAccess") or _from_ncu_rule(f, "SharedMemoryConflicts")

    def ideal(width: float | None) -> float:
        w = width if width is not None else 4.0
        return max(1.0, w * th.WARP_SIZE / (th.SHARED_BANKS * th.SHARED_BANK_BYTES))

    i_ld, i_st = ideal(f.sass.shared_load_bytes_per_thread), ideal(f.sass.shared_store_bytes_per_thread)
    # ncu's SourceCounters count the ideal wavefronts per instruction (width, active lanes, LDSM and
    # matrix-operand reads included): when they match the actual ones there is no conflict to fix.
    waste = _excess_share(
        (wf_ld, rq_ld, i_ld),
        (wf_st, rq_st, i_st),
        k.value(SHARED_WAVEFRONTS),
        k.value(SHARED_WAVEFRONTS_IDEAL),
    )
    if waste is None:
        return None
    wpr_ld, wpr_st = _ratio(wf_ld, rq_ld), _ratio(wf_st, rq_st)
    bad_ld = wpr_ld is not None and wpr_ld > i_ld * th.COALESCING_TOLERANCE
    bad_st = wpr_st is not None and wpr_st > i_st * th.COALESCING_TOLERANCE
    if not (bad_ld or bad_st):
        return None
    total_wf = k.value(L1_WAVEFRONTS)
    actual = (wf_ld or 0.0) + (wf_st or 0.0)
    shared_share = min(1.0, actual / total_wf) if total_wf else 1.0
    l1 = f.util.get("l1", 0.0)
    savings = waste * shared_share * _scale_to_limiter(f, l1, SHARED_STALLS)
    which = "loads" if bad_ld and (not bad_st or (wpr_ld or 0) / i_ld >= (wpr_st or 0) / i_st) else "stores"
    wpr, idl = (wpr_ld, i_ld) if which == "loads" else (wpr_st, i_st)
    conflicts = k.value(SLD_CONFLICTS if which == "loads" else SST_CONFLICTS)
    ev = [
        Evidence(
            name=f"shared-memory {which}: wavefronts per request",
            value=round(wpr or 0.0, 2),
            unit="wavefronts/request",
            reference=f"ideal {idl:g} ({th.SHARED_BANKS} banks x {th.SHARED_BANK_BYTES} B serve 128 B per wavefront)",
            reference_value=idl,
            metric=f"{SLD_WAVEFRONTS if which == 'loads' else SST_WAVEFRONTS} / shared {which[:-1]} instructions",
        ),
        Evidence(
            name="L1/shared-memory bandwidth used",
            value=round(100 * l1, 1),
            unit="% of peak",
            reference="conflicts cost time when the L1/shared pipe is the busiest unit",
            metric="l1tex__throughput.avg.pct_of_peak_sustained_active",
        ),
    ]
    if conflicts is not None:
        ev.append(
            Evidence(
                name=f"bank conflicts on shared {which}",
                value=int(conflicts),
                unit="",
                reference="0 for conflict-free access",
                metric=SLD_CONFLICTS if which == "loads" else SST_CONFLICTS,
            )
        )
    exp = [
        Expectation(
            metric="derived:shared_wavefronts_per_request",
            direction=Direction.DOWN,
            target=round(min(i_ld, i_st) if which else idl, 1),
            unit="wavefronts/request",
            value_now=round(metric_value(k, "derived:shared_wavefronts_per_request") or 0.0, 2),
            label="shared-memory wavefronts per request",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.SHARED_BANK_CONFLICTS,
        savings=savings,
        headline=(
            f"Shared-memory bank conflicts: {wpr:.1f} wavefronts per shared {which[:-1]} against an ideal {idl:g}; "
            f"{100 * waste:.0f}% of the shared-memory cycles are replays."
        ),
        evidence=ev,
        mechanism=(
            "Several lanes of a warp address different 4-byte words in the same bank (typically a column of a "
            "row-major tile whose row length is a multiple of 32 words), so the access is split into one "
            "wavefront per conflicting word."
        ),
        fix=(
            "Pad the shared array by one word per row (e.g. tile[32][33]) or swizzle the index (XOR the column "
            "with the row), so the lanes of a warp fall in different banks."
        ),
        expect=exp,
        confidence=0.85,
        would_raise="SourceCounters (--import-source yes) to name the conflicting line"
        if "source" in f.missing
        else "",
        inflates=("l1",),
        waste=waste * shared_share,
    )


def _local_memory(f: _Facts) -> _Mech | None:
    k = f.k
    lld, lst = k.value(LLD_SECTORS), k.value(LST_SECTORS)
    local = (lld or 0.0) + (lst or 0.0)
    has_sass_local = f.sass.local_loads + f.sass.local_stores > 0
    if local <= 0 and not has_sass_local:
        return None
    if local <= 0 and (lld is not None or lst is not None):
        return None  # LDL/STL in the listing but never executed (a cold path)
    all_sectors = k.value(L1_SECTORS) or _sum_present(k, (GLD_SECTORS, GST_SECTORS, LLD_SECTORS, LST_SECTORS))
    share = min(1.0, local / all_sectors) if all_sectors else None
    if share is None:
        if not f.sass.weighted:
            return None
        share = f.sass.share(f.sass.local_loads + f.sass.local_stores)
    _, mem_util = f.mem_max()
    savings = share * _scale_to_limiter(f, mem_util, GLOBAL_STALLS)
    kind = f.sass.local_kind
    regs = k.registers_per_thread
    if kind == "dynamic_index":
        what = "a per-thread array indexed with run-time values (not a register spill)"
        fix = (
            "Make the indices compile-time constants (fully unroll the loops that index the array), or keep the "
            "table in shared memory laid out as table[j][threadIdx.x] so each access stays conflict-free."
        )
    elif kind == "register_spill":
        what = f"register spills ({regs} registers per thread)" if regs else "register spills"
        fix = (
            "Lower register pressure (fewer live values, smaller per-thread tiles, no big unrolled arrays) or allow "
            "more registers per thread (looser __launch_bounds__ / -maxrregcount); check ptxas -v spill stores."
        )
    else:
        what = "local memory (the SASS is not in the report, so spill vs indexed array is unknown)"
        fix = "Compile with -Xptxas -v: spill stores mean register pressure; a stack frame with no spills means an indexed array."
    lines = ", ".join(f"{fn.rsplit('/', 1)[-1]}:{ln}" for fn, ln in f.sass.local_lines[:3])
    ev = [
        Evidence(
            name="local-memory sectors (LDL/STL traffic)",
            value=int(local) if local else None,
            unit="sectors",
            reference="0 when every per-thread value lives in registers",
            metric=f"{LLD_SECTORS} + {LST_SECTORS}",
        ),
        Evidence(
            name="share of L1 traffic that is local memory",
            value=round(100 * share, 1),
            unit="%",
            reference="0%",
            metric=f"local sectors / {L1_SECTORS}",
        ),
    ]
    if has_sass_local:
        ev.append(
            Evidence(
                name="LDL/STL instructions in the SASS" + (" (executed)" if f.sass.weighted else " (listed)"),
                value=int(f.sass.local_loads + f.sass.local_stores),
                unit="instructions",
                reference=f"kind: {kind}" + (f"; at {lines}" if lines else ""),
                metric="SASS",
            )
        )
    exp = [
        Expectation(
            metric="derived:local_memory_sectors",
            direction=Direction.DOWN,
            target=0,
            unit="sectors",
            value_now=int(local) if local else None,
            label="local-memory sectors",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.LOCAL_MEMORY_SPILL,
        savings=savings,
        headline=(
            f"Local-memory traffic from {what}: {100 * share:.0f}% of the L1 traffic is LDL/STL"
            + (f" ({lines})" if lines else "")
            + "."
        ),
        evidence=ev,
        mechanism=(
            "Values that cannot live in registers go to the thread's local memory, which is backed by L1, L2 and "
            "DRAM: every access is a memory instruction with memory latency instead of a register read."
        ),
        fix=fix,
        expect=exp,
        confidence=0.85 if has_sass_local and local > 0 else 0.65,
        would_raise="the SASS (SourceCounters) to tell a spill from an indexed array" if kind is None else "",
        inflates=MEMORY_UNITS,
        waste=share,
    )


def _atomics(f: _Facts) -> _Mech | None:
    k = f.k
    atom = _sum_present(k, GATOM_REQUESTS + GRED_REQUESTS)
    gld, gst = k.value(GLD_REQUESTS), k.value(GST_REQUESTS)
    if atom is None:
        if f.sass.global_atomics <= 0 or not f.sass.weighted:
            return None
        share = f.sass.global_atomics / max(
            1.0, f.sass.global_atomics + f.sass.global_loads + f.sass.global_stores
        )
        atom_count = f.sass.global_atomics
    else:
        if atom <= 0:
            return None
        share = atom / max(1.0, atom + (gld or 0.0) + (gst or 0.0))
        atom_count = atom
    if share < th.ATOMIC_MIN_SHARE:
        return None
    gap = 1.0 - f.u_max
    if f.u_max >= th.LATENCY_BOUND_FRACTION:
        return None  # the memory system is busy: atomics are part of the work, not a serialization point
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    slice_max, slice_avg = k.value(ATOMIC_SLICE_MAX), k.value(ATOMIC_SLICE_AVG)
    hot = (
        slice_max is not None
        and slice_avg is not None
        and slice_max >= th.ATOMIC_HOT_SLICE_RATIO * max(slice_avg, 1e-9)
    )
    # Serialized on a few addresses (one hot L2 slice): reducing first removes nearly all of the wait.
    # Without the per-slice numbers, only the atomics' share of the requests is attributed.
    savings = gap if hot else gap * share
    ev = [
        Evidence(
            name="global atomic requests",
            value=int(atom_count),
            unit="requests",
            reference=f"{100 * share:.0f}% of global memory requests",
            metric=" + ".join(GATOM_REQUESTS + GRED_REQUESTS) if atom is not None else "SASS RED/ATOM",
        ),
        (
            Evidence(
                name="busiest L2 slice's atomic unit",
                value=round(slice_max or 0.0, 2),
                unit="% of peak",
                reference=f"average slice {slice_avg:.2g}%: the atomics pile onto one slice (few addresses)",
                reference_value=round(slice_avg or 0.0, 3),
                metric=f"{ATOMIC_SLICE_MAX} vs .avg",
            )
            if hot
            else Evidence(
                name="busiest unit",
                value=round(100 * f.u_max, 1),
                unit="% of peak",
                reference=f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}%: the atomics serialize instead of using bandwidth",
                metric="SpeedOfLight",
            )
        ),
    ]
    if top:
        ev.append(
            Evidence(
                name=f"top warp stall: {top}",
                value=round(stalls[top], 2),
                unit="cycles/issued instruction",
                reference="lg_throttle/drain/membar point at a congested memory queue",
                metric=f"smsp__average_warps_issue_stalled_{top}_per_issue_active.ratio",
            )
        )
    exp = [
        Expectation(
            metric="derived:global_atomic_requests",
            direction=Direction.DOWN,
            target=round(atom_count / 32.0, 0),
            unit="requests",
            value_now=int(atom_count),
            label="global atomic requests",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.ATOMIC_CONTENTION,
        savings=savings,
        headline=(
            f"Atomic contention: {100 * share:.0f}% of global memory requests are atomics and no unit is above "
            f"{100 * f.u_max:.0f}% of its peak, so the atomics serialize on a few addresses."
        ),
        evidence=ev,
        mechanism=(
            "Atomics to the same address are applied one after another by the L2 slice that owns it; when many "
            "threads update few addresses, the whole grid waits on that slice."
        ),
        fix=(
            "Reduce first, then do one atomic per warp or block: warp shuffles (__reduce_add_sync / __shfl_down_sync) "
            "and a shared-memory block reduction, or privatized per-block copies merged at the end."
        ),
        expect=exp,
        confidence=0.8 if hot else 0.6,
        would_raise=""
        if hot
        else "the per-slice L2 atomic activity (lts__d_atomic_input_cycles_active.max, MemoryWorkloadAnalysis)",
        inflates=("l2",),
        waste=0.0,
    )


def _divergence(f: _Facts) -> _Mech | None:
    r = f.v(THREADS_PER_INST)
    if r is None or r >= th.DIVERGENCE_ACTIVE_THREADS:
        return None
    tpb = f.k.threads_per_block
    partial = tpb is not None and tpb % th.WARP_SIZE != 0 and tpb < th.WARP_SIZE
    efficiency = r / th.WARP_SIZE
    issue = f.util.get("issue", 0.0)
    savings = (1.0 - efficiency) * _scale_to_limiter(f, issue)
    branch = f.v("smsp__sass_branch_targets_threads_divergent.sum")
    ev = [
        Evidence(
            name="active threads per executed warp instruction",
            value=round(r, 1),
            unit="threads",
            reference=f"{th.WARP_SIZE} when every lane of a warp takes the same path",
            reference_value=th.WARP_SIZE,
            metric=THREADS_PER_INST,
        ),
        Evidence(
            name="SM instruction throughput",
            value=round(100 * issue, 1),
            unit="% of peak",
            reference="divergence costs time in proportion to how busy the SM's issue is",
            metric="sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ),
    ]
    if branch is not None:
        ev.append(
            Evidence(
                name="divergent branch targets",
                value=int(branch),
                unit="",
                reference="0 without divergence",
                metric="smsp__sass_branch_targets_threads_divergent.sum",
            )
        )
    exp = [
        Expectation(
            metric=THREADS_PER_INST,
            direction=Direction.UP,
            target=float(th.DIVERGENCE_ACTIVE_THREADS + 4),
            unit="threads",
            value_now=round(r, 1),
            label="active threads per warp instruction",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.WARP_DIVERGENCE,
        savings=savings,
        headline=(
            f"Warp divergence: {r:.1f} of {th.WARP_SIZE} threads are active per executed instruction "
            f"({100 * efficiency:.0f}% SIMT efficiency)."
        ),
        evidence=ev,
        mechanism=(
            "Lanes of one warp take different branches (a switch or condition on threadIdx or on data), so the warp "
            "runs each path one after another with the other lanes masked off."
            + (" Blocks smaller than a warp also leave lanes empty." if partial else "")
        ),
        fix=(
            "Make the branch condition uniform per warp: map work so that all 32 lanes of a warp take the same path "
            "(e.g. select by warp index, or sort/bin the elements by path first), or turn short paths into "
            "predicated arithmetic."
        ),
        expect=exp,
        confidence=0.8,
        would_raise="SourceCounters (per-line divergence) to point at the branch"
        if "source" in f.missing
        else "",
        inflates=("issue", "fp32", "fp64", "tensor"),
        waste=1.0 - efficiency,
    )


def _grid(f: _Facts) -> _Mech | None:
    k = f.k
    sms = f.sm_count
    blocks = k.blocks
    waves = f.v(WAVES)
    active = _sm_active_fraction(k)
    if blocks is None or sms is None:
        return None
    if blocks < sms or (waves is not None and waves < th.TAIL_MIN_WAVES):
        frac = active if active is not None else min(1.0, blocks / sms)
        if frac >= th.SMALL_GRID_ACTIVE_SM_FRACTION:
            return None
        # Spread over every SM, the same work would take the busy fraction of the time.
        savings = 1.0 - frac
        if savings < th.MIN_MECHANISM_SAVINGS:
            return None
        per_sm = None
        occ = f.v(THEORETICAL_OCC)
        tpb = k.threads_per_block or 0
        max_warps = k.device_attributes.get("max_warps_per_multiprocessor")
        if occ and tpb and isinstance(max_warps, int | float):
            per_sm = max(1, int(occ / 100 * max_warps * th.WARP_SIZE // tpb))
        target_blocks = sms * (per_sm or 1)
        ev = [
            Evidence(
                name="blocks in the grid",
                value=blocks,
                unit="blocks",
                reference=f"{sms} SMs"
                + (f" x {per_sm} resident blocks each = {target_blocks}" if per_sm else ""),
                reference_value=target_blocks,
                metric="launch__grid_size",
            ),
            Evidence(
                name="waves per SM",
                value=round(waves, 3) if waves is not None else None,
                unit="waves",
                reference=">= 1 fills every SM",
                reference_value=1,
                metric=WAVES,
            ),
        ]
        if active is not None:
            ev.append(
                Evidence(
                    name="SM busy fraction",
                    value=round(100 * active, 1),
                    unit="%",
                    reference=f">= {100 * th.SMALL_GRID_ACTIVE_SM_FRACTION:.0f}% when the grid covers the GPU",
                    metric="sm__cycles_active.avg / elapsed cycles",
                )
            )
        exp = [
            Expectation(
                metric="launch__grid_size",
                direction=Direction.UP,
                target=target_blocks,
                unit="blocks",
                value_now=blocks,
                label="blocks in the grid",
            ),
            Expectation(
                metric="derived:sm_active_fraction",
                direction=Direction.UP,
                target=0.9,
                value_now=round(active, 3) if active is not None else None,
                label="SM busy fraction",
            ),
        ]
        t = _time_expectation(f, savings)
        if t:
            exp.append(t)
        return _Mech(
            bottleneck=B.SMALL_GRID,
            savings=savings,
            headline=(
                f"Grid too small: {blocks} blocks for {sms} SMs ({waves:.2g} waves); the SMs are busy "
                f"{100 * frac:.0f}% of the time."
                if waves is not None
                else f"Grid too small: {blocks} blocks for {sms} SMs."
            ),
            evidence=ev,
            mechanism=(
                "Each block runs on one SM; with fewer blocks than the GPU can hold, whole SMs idle and the busy ones "
                "have too few warps to hide memory latency."
            ),
            fix=(
                f"Launch at least {target_blocks} blocks (a multiple of the {sms} SMs): split the work finer "
                "(grid-stride loops sized from the SM count, split-K / split along another dimension), or use "
                "smaller blocks with less work each."
            ),
            expect=exp,
            confidence=0.85 if active is not None else 0.7,
            would_raise=""
            if active is not None
            else "sm__cycles_active.avg (SpeedOfLight) to measure the idle SMs",
            inflates=(),
        )
    if waves is not None and waves > th.TAIL_MIN_WAVES:
        eff = waves / math.ceil(waves)
        # Only the last wave idles: the loss is that wave's empty share over all (whole) waves.
        savings = 1.0 - eff
        if savings < th.MIN_MECHANISM_SAVINGS:
            return None
        ev = [
            Evidence(
                name="waves per SM",
                value=round(waves, 2),
                unit="waves",
                reference=f"the last of {math.ceil(waves)} waves is {100 * (waves - math.floor(waves)):.0f}% full",
                metric=WAVES,
            ),
            Evidence(
                name="blocks in the grid",
                value=blocks,
                unit="blocks",
                reference=f"{sms} SMs",
                metric="launch__grid_size",
            ),
        ]
        exp = [
            Expectation(
                metric="derived:tail_wave_efficiency",
                direction=Direction.UP,
                target=0.95,
                value_now=round(eff, 3),
                label="waves / whole waves",
            )
        ]
        t = _time_expectation(f, savings)
        if t:
            exp.append(t)
        return _Mech(
            bottleneck=B.TAIL_EFFECT,
            savings=savings,
            headline=(
                f"Tail effect: {waves:.2f} waves per SM, so the last wave leaves "
                f"{100 * (math.ceil(waves) - waves):.0f}% of a wave's slots idle."
            ),
            evidence=ev,
            mechanism="Blocks run in waves of (SMs x resident blocks); a partial last wave leaves SMs idle until it ends.",
            fix=(
                "Size the grid to a whole number of waves (or many waves): more, smaller blocks, or a persistent "
                "grid-stride kernel launched with exactly SMs x resident blocks."
            ),
            expect=exp,
            confidence=0.6,
            would_raise="a timeline run to confirm the kernel's share of the step",
            inflates=(),
        )
    return None


def _occupancy(f: _Facts) -> _Mech | None:
    k = f.k
    theo = f.v(THEORETICAL_OCC)
    if theo is None or theo / 100.0 >= th.OCCUPANCY_LOW_FRACTION:
        return None
    waves = f.v(WAVES)
    if waves is not None and waves < th.OCCUPANCY_MIN_WAVES:
        return None  # the grid does not even fill the slots there are: the grid, not occupancy, limits
    limits = {what: f.v(name) for what, name in OCC_LIMITS.items()}
    known = {w: v for w, v in limits.items() if v is not None}
    if not known:
        return None
    limiter = min(known, key=lambda w: known[w])
    others = [v for w, v in known.items() if w != limiter]
    tpb = k.threads_per_block or 0
    warps_per_block = max(1, math.ceil(tpb / th.WARP_SIZE)) if tpb else None
    max_warps_attr = k.device_attributes.get("max_warps_per_multiprocessor")
    max_warps = float(max_warps_attr) if isinstance(max_warps_attr, int | float) else None
    if warps_per_block is None or max_warps is None:
        return None
    cur_warps = known[limiter] * warps_per_block
    next_blocks = min(others) if others else known[limiter]
    target_warps = min(max_warps, next_blocks * warps_per_block)
    gain = target_warps / cur_warps if cur_warps else 1.0
    if gain <= 1.0:
        return None
    issue_hit = _first(k, ISSUE_ACTIVE)
    issue = issue_hit[1] / 100.0 if issue_hit else None
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    latency_exposed = (issue is None or issue < th.ISSUE_EXPOSED_LATENCY) and (
        top is None or top in LATENCY_STALLS
    )
    if not latency_exposed or f.u_max >= th.HEALTHY_FRACTION_OF_PEAK:
        return None
    savings = max(0.0, 1.0 - max(1.0 / gain, f.u_max))
    achieved = f.v(ACHIEVED_OCC)
    ev = [
        Evidence(
            name="theoretical occupancy",
            value=round(theo, 1),
            unit="%",
            reference=f"limited by {limiter}: {int(known[limiter])} blocks/SM x {warps_per_block} warps",
            reference_value=round(100 * target_warps / max_warps, 1),
            metric=f"{THEORETICAL_OCC}, {OCC_LIMITS[limiter]}",
        ),
        Evidence(
            name="scheduler issue-active",
            value=round(100 * issue, 1) if issue is not None else None,
            unit="% of cycles",
            reference=f"below {100 * th.ISSUE_EXPOSED_LATENCY:.0f}%: latency is exposed",
            metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
        ),
    ]
    if top:
        ev.append(
            Evidence(
                name=f"top warp stall: {top}",
                value=round(stalls[top], 2),
                unit="cycles/issued instruction",
                reference=STALL_WORDS.get(top, (top, ""))[0],
                metric=f"smsp__average_warps_issue_stalled_{top}_per_issue_active.ratio",
            )
        )
    how = {
        "registers": f"cut registers per thread (now {k.registers_per_thread}) with __launch_bounds__(threads, minBlocks) or smaller per-thread tiles",
        "shared memory": f"use less shared memory per block (now {k.shared_mem_per_block} B): smaller tiles, fewer buffers, or data in registers/L2",
        "block size (warps)": "use larger blocks (more warps per block)",
        "blocks per SM": f"use larger blocks: {tpb} threads per block hit the resident-block limit before the warp limit",
        "barriers": "use fewer named barriers per block",
    }[limiter]
    exp = [
        Expectation(
            metric=ACHIEVED_OCC,
            direction=Direction.UP,
            target=round(100 * target_warps / max_warps * 0.8, 1),
            unit="%",
            value_now=round(achieved, 1) if achieved is not None else None,
            label="achieved occupancy",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.OCCUPANCY_LIMITED,
        savings=savings,
        headline=(
            f"Occupancy limited by {limiter}: {theo:.0f}% of the warp slots can be filled, and with latency exposed "
            f"(issue active {100 * issue:.0f}%) more warps would hide it."
            if issue is not None
            else f"Occupancy limited by {limiter}: {theo:.0f}% of the warp slots can be filled."
        ),
        evidence=ev,
        mechanism=(
            f"Each block needs too much of one SM resource ({limiter}), so few warps are resident; when they all "
            "wait on memory, the scheduler has nothing to issue."
        ),
        fix=how[0].upper() + how[1:] + ", and launch enough blocks to fill the freed slots.",
        expect=exp,
        confidence=0.75 if top else 0.55,
        would_raise="" if top else "WarpStateStats (stall reasons) to confirm the latency is exposed",
        inflates=(),
    )


def _no_tensor_cores(f: _Facts) -> _Mech | None:
    s = f.sass
    if s.empty or s.has_mma or s.ffma <= 0:
        return None
    if (
        s.share(s.ffma) < th.MATRIX_LIKE_FFMA_SHARE
        or s.share(s.special_function) > th.MATRIX_LIKE_MAX_SFU_SHARE
    ):
        return None
    intensity = f.roof.intensity("dram")
    ridge = f.roof.ridge("fp32", "dram")
    if intensity is None:
        return None
    needed = ridge if ridge else th.MATRIX_LIKE_MIN_INTENSITY
    if intensity < needed:
        return None
    fp32 = f.roof.flops.get("fp32")
    tensor_peak = f.roof.peak_flops.get("tensor")
    dram = f.util.get("dram", 0.0)
    if fp32 and tensor_peak:
        savings = max(0.0, 1.0 - max(fp32 / (tensor_peak * th.HEALTHY_FRACTION_OF_PEAK), dram))
    else:
        savings = max(0.0, 1.0 - max(f.util.get("fp32", 0.0), dram))
    ev = [
        Evidence(
            name="FFMA share of executed instructions" if s.weighted else "FFMA share of the SASS listing",
            value=round(100 * s.share(s.ffma), 1),
            unit="%",
            reference="no HMMA/HGMMA/IMMA instruction in the SASS",
            metric="SASS",
        ),
        Evidence(
            name="arithmetic intensity (FP32 FLOP per DRAM byte)",
            value=round(intensity, 1),
            unit="FLOP/byte",
            reference=f"past the FP32 ridge point ({needed:.1f} FLOP/byte): matrix-like reuse"
            if ridge
            else f"above {needed:g} FLOP/byte: matrix-like reuse",
            reference_value=round(needed, 1),
            metric="smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed, dram__bytes.sum.per_second",
        ),
    ]
    if fp32 is not None:
        ev.append(
            Evidence(
                name="achieved FP32 throughput",
                value=round(fp32 / 1e12, 2),
                unit="TFLOP/s",
                reference=(
                    f"tensor ceiling of this GPU in the report: {tensor_peak / 1e12:.0f} TFLOP/s"
                    if tensor_peak
                    else "tensor ceiling not in the report"
                ),
                reference_value=round(tensor_peak / 1e12, 1) if tensor_peak else None,
                metric="roofline (SpeedOfLight_RooflineChart)",
            )
        )
    pipe = next(
        (
            n
            for n in (
                "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
            )
            if f.v(n) is not None
        ),
        None,
    )
    pipe_now = f.v(pipe) if pipe else None
    exp = [
        Expectation(
            metric=pipe or "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
            direction=Direction.UP,
            target=50.0,
            unit="%",
            value_now=round(pipe_now, 1) if pipe_now is not None else 0.0,
            label="tensor pipe utilisation",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.NO_TENSOR_CORES,
        savings=savings,
        headline=(
            f"Matrix work on the FP32 pipes: {100 * s.share(s.ffma):.0f}% of the instructions are FFMA, none are "
            f"tensor-core MMA, at {intensity:.0f} FLOP per DRAM byte."
        ),
        evidence=ev,
        mechanism=(
            "The kernel multiplies tiles of matrices with scalar fused multiply-adds; the tensor cores, which do the "
            "same products many times faster, stay idle."
        ),
        fix=(
            "Use the tensor cores: call cuBLAS/cuBLASLt or CUTLASS, or write the inner product with WMMA/mma.sync "
            "(wgmma on Hopper) in TF32 (FP32 inputs, 10-bit mantissa) or BF16/FP16 inputs with FP32 accumulation, "
            "if that precision is acceptable."
        ),
        expect=exp,
        confidence=0.8 if s.weighted else 0.7,
        would_raise="" if s.weighted else "SourceCounters (executed instruction mix)",
        inflates=("fp32", "l1", "issue"),
        waste=0.0,
        blocks_healthy=True,
    )


def _instruction_bound(f: _Facts) -> _Mech | None:
    issue = f.util.get("issue")
    if issue is None or issue < th.LATENCY_BOUND_FRACTION:
        return None
    useful = max((f.util[u] for u in USEFUL_UNITS if u in f.util), default=0.0)
    if useful >= issue * 0.9:
        return None
    savings = max(0.0, 1.0 - useful / issue) if issue > 0 else 0.0
    r = f.v(THREADS_PER_INST)
    if r is not None:
        savings *= min(1.0, r / th.WARP_SIZE)  # the part due to masked lanes is warp divergence's
    ev = [
        Evidence(
            name="SM instruction throughput",
            value=round(100 * issue, 1),
            unit="% of peak",
            reference="the busiest unit",
            metric="sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ),
        Evidence(
            name="busiest useful unit (memory or FP/tensor pipes)",
            value=round(100 * useful, 1),
            unit="% of peak",
            reference="what the instructions achieve",
            metric="SpeedOfLight / roofline",
        ),
    ]
    executed = f.v("smsp__inst_executed.sum")
    exp = [
        Expectation(
            metric="smsp__inst_executed.sum",
            direction=Direction.DOWN,
            target=round(executed * (1 - savings), 0) if executed else None,
            unit="inst",
            value_now=executed,
            label="warp instructions executed",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.INSTRUCTION_BOUND,
        savings=savings,
        headline=(
            f"Instruction bound: the SM issues at {100 * issue:.0f}% of its peak while the memory and FP pipes reach "
            f"only {100 * useful:.0f}%: most instructions are overhead (index math, conversions, special functions)."
        ),
        evidence=ev,
        mechanism="The SM spends its issue slots on instructions that neither move data nor compute the result.",
        fix=(
            "Execute fewer instructions per result: hoist index arithmetic out of loops, use 64-bit-free index math, "
            "vector loads (one LDG.128 instead of four LDG), fast-math intrinsics, and unroll to amortise loop overhead."
        ),
        expect=exp,
        confidence=0.6,
        would_raise="InstructionStats (the executed instruction mix) or SourceCounters",
        inflates=("issue",),
        waste=savings,
    )


MECHANISMS: tuple[Callable[[_Facts], _Mech | None], ...] = (
    _uncoalesced,
    _bank_conflicts,
    _local_memory,
    _atomics,
    _divergence,
    _grid,
    _occupancy,
    _no_tensor_cores,
    _instruction_bound,
)


# ------------------------------------------------------------------------------------ the diagnosis
def _subject(k: KernelLaunch) -> Subject:
    return Subject(
        kind=SubjectKind.KERNEL, name=k.display_name, grid=k.grid, block=k.block, launch=k.id, device=k.device
    )


def _missing_command(f: _Facts, needed: Iterable[str]) -> str:
    secs = [SECTION_OF[n] for n in needed if n in f.missing]
    if not secs:
        return ""
    if f.source_format == "ncu-csv-details":
        # The details page drops ncu's tables and source counters even when they were collected.
        return (
            f"ncu --import REPORT.ncu-rep --csv --page raw > REPORT.raw.csv (the details page leaves out "
            f"{', '.join(secs)}; or diagnose the .ncu-rep itself); if the report lacks them: "
            + _ncu_command(f.k, "--set full", cooperative=f.cooperative)
        )
    if len(secs) > 2:
        return _ncu_command(f.k, "--set full", cooperative=f.cooperative)
    return _ncu_command(f.k, " ".join(f"--section {s}" for s in secs), cooperative=f.cooperative)


def _inconclusive_no_sol(f: _Facts) -> Diagnosis:
    k = f.k
    ev: list[Evidence] = [
        Evidence(
            name="compute and memory throughput (SpeedOfLight)",
            value=None,
            unit="% of peak",
            reference="missing from the report: the unit that limits the kernel cannot be told",
            metric="sm__throughput.avg.pct_of_peak_sustained_elapsed, "
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        )
    ]
    d = f.duration_evidence()
    if d:
        ev.append(d)
    if f.roof.flops.get("fp32") is not None:
        ev.append(
            Evidence(
                name="achieved FP32 throughput",
                value=round(f.roof.flops["fp32"] / 1e12, 3),
                unit="TFLOP/s",
                reference="no peak in the report to compare with",
                metric="sm__sass_thread_inst_executed_op_{fadd,fmul,ffma}_pred_on.sum / duration",
            )
        )
    if f.roof.bytes_per_s.get("dram") is not None:
        ev.append(
            Evidence(
                name="DRAM throughput",
                value=round(f.roof.bytes_per_s["dram"] / 1e9, 1),
                unit="GB/s",
                reference="no peak in the report to compare with",
                metric="dram__bytes.sum / duration",
            )
        )
    return Diagnosis(
        subject=_subject(k),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=(
            f"No SpeedOfLight metrics for {k.name}: the report cannot say which unit limits it"
            + (f" (it ran {_fmt_ns(f.duration_ns)}, {f.duration_label})." if f.duration_ns else ".")
        ),
        evidence=tuple(ev[:3]),
        mechanism="The report was collected with custom metrics only; without the throughput of each unit as a "
        "fraction of its peak there is no roofline to judge against.",
        fix="",
        expect=(
            Expectation(
                metric=DURATION,
                direction=Direction.DOWN,
                value_now=f.v(DURATION),
                unit="ns",
                label=f"kernel duration ({UNDER_NCU}), once a fix is chosen from a full-set profile",
            ),
        ),
        confidence=Confidence(
            value=0.2, would_raise="the SpeedOfLight section (or --set full) for this kernel"
        ),
        next_step=f"Profile it with the full set: `{_ncu_command(k, cooperative=f.cooperative)}`",
    )


def _healthy(f: _Facts, unit: str, util: float, stated_threshold: float) -> Diagnosis:
    k = f.k
    bott = RESOURCE_OF_UNIT[unit]
    if unit == "l2" and f.l2_carries_dram_traffic():
        return _healthy_dram_stream(f, util, stated_threshold)
    ev: list[Evidence] = [
        Evidence(
            name=f"{UNIT_WORDS[unit]} used",
            value=round(100 * util, 1),
            unit="% of peak",
            reference=f">= {100 * stated_threshold:.0f}% of peak counts as at the roof (ncu: > 80% is high throughput)",
            reference_value=round(100 * stated_threshold, 1),
            metric=_unit_metric(unit),
        )
    ]
    if unit in MEMORY_UNITS and f.roof.bytes_per_s.get(unit) and f.roof.peak_bytes_per_s.get(unit):
        ev.append(
            Evidence(
                name=f"achieved {unit.upper()} bandwidth",
                value=round(f.roof.bytes_per_s[unit] / 1e9, 0),
                unit="GB/s",
                reference=f"peak {f.roof.peak_bytes_per_s[unit] / 1e9:.0f} GB/s (from the report)",
                reference_value=round(f.roof.peak_bytes_per_s[unit] / 1e9, 0),
                metric=f"{unit} bytes/s (roofline)",
            )
        )
    elif unit in ("tensor", "fp32", "fp64"):
        prec = unit
        if f.roof.flops.get(prec) and f.roof.peak_flops.get(prec):
            ev.append(
                Evidence(
                    name=f"achieved {prec} throughput",
                    value=round(f.roof.flops[prec] / 1e12, 1),
                    unit="TFLOP/s",
                    reference=f"peak {f.roof.peak_flops[prec] / 1e12:.0f} TFLOP/s (from the report)",
                    reference_value=round(f.roof.peak_flops[prec] / 1e12, 1),
                    metric="roofline",
                )
            )
    d = f.duration_evidence()
    if d:
        ev.append(d)
    work_metric, work_words = {
        "dram": ("dram__bytes.sum", "DRAM bytes moved"),
        "l2": ("lts__t_bytes.sum", "L2 bytes moved"),
        "l1": ("l1tex__t_bytes.sum", "L1 bytes moved"),
    }.get(unit, (DURATION, f"kernel duration ({UNDER_NCU})"))
    now = f.v(work_metric)
    expect = [
        Expectation(
            metric=work_metric,
            direction=Direction.DOWN,
            value_now=now,
            unit="byte" if unit in MEMORY_UNITS else "ns",
            label=work_words,
        )
    ]
    fix = {
        "dram": "Move fewer bytes: fuse this kernel with its producer or consumer, use narrower types (bf16/fp8, int8 indices), "
        "or skip work that is not needed; the kernel itself is already at the DRAM roof.",
        "l2": "Move fewer bytes through L2: fuse kernels, reuse data from shared memory or registers, use narrower types.",
        "l1": "Issue fewer L1/shared accesses per result (register tiling, wider accesses) or do less work; the pipe is at its peak.",
        "tensor": "Do fewer FLOPs: skip or batch work, lower precision (FP8 with scaling) where accuracy allows, or fuse "
        "the epilogue; the tensor cores are already at their roof.",
        "fp32": "Do fewer FLOPs or move matrix-like work to the tensor cores; the FP32 pipes are at their roof.",
        "fp64": "Do fewer FP64 FLOPs (mixed precision where accuracy allows); the FP64 pipes are at their roof.",
    }.get(unit, "Do less work.")
    conf = 0.85
    would = "a timeline capture to confirm the kernel's share of the step"
    return Diagnosis(
        subject=_subject(k),
        bottleneck=bott,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: {UNIT_WORDS[unit]} at {100 * util:.0f}% of peak, at its roofline "
            f"(>= {100 * stated_threshold:.0f}%); to go faster, do less work."
        ),
        evidence=tuple(ev[:3]),
        mechanism=(
            f"The kernel keeps its limiting unit ({UNIT_WORDS[unit]}) busy with useful work; no mechanism (coalescing, "
            "bank conflicts, spills, divergence, grid size) explains a gap, so other counters (occupancy, registers, "
            "conflicts) are not problems here."
        ),
        fix=fix,
        expect=tuple(expect),
        confidence=Confidence(value=conf, would_raise=would),
        next_step="Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets.",
        findings=(),
    )


def _healthy_dram_stream(f: _Facts, l2: float, stated_threshold: float) -> Diagnosis:
    """L2 at its roof while its reads miss to DRAM: a DRAM stream whose path (DRAM + L2) is saturated."""
    k = f.k
    dram = f.util.get("dram", 0.0)
    hit = f.v(L2_READ_HIT_RATE) or 0.0
    ev = [
        Evidence(
            name="L2 cache bandwidth used",
            value=round(100 * l2, 1),
            unit="% of peak",
            reference=f">= {100 * stated_threshold:.0f}% of peak counts as at the roof (ncu: > 80% is high throughput)",
            reference_value=round(100 * stated_threshold, 1),
            metric=_unit_metric("l2"),
        ),
        Evidence(
            name="L2 read hit rate",
            value=round(hit, 1),
            unit="%",
            reference=f"below {100 * th.L2_STREAMING_READ_HIT_RATE:.0f}%: the L2 passes a DRAM stream through",
            reference_value=round(100 * th.L2_STREAMING_READ_HIT_RATE, 1),
            metric=L2_READ_HIT_RATE,
        ),
        Evidence(
            name="DRAM bandwidth used",
            value=round(100 * dram, 1),
            unit="% of peak",
            reference="the bytes come from DRAM; its path through L2 is what is saturated",
            metric=_unit_metric("dram"),
        ),
    ]
    return Diagnosis(
        subject=_subject(k),
        bottleneck=B.DRAM_BANDWIDTH_BOUND,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: a DRAM stream at its roof: DRAM at {100 * dram:.0f}% of peak and the L2 that carries it at "
            f"{100 * l2:.0f}% (>= {100 * stated_threshold:.0f}%); to go faster, move fewer bytes."
        ),
        evidence=tuple(ev),
        mechanism=(
            "Every byte streams from DRAM through L2 (reads miss L2), and the L2 slices are the busier half of "
            "that path; no mechanism (coalescing, bank conflicts, spills, divergence, grid size) explains a gap."
        ),
        fix=(
            "Move fewer bytes: fuse this kernel with its producer or consumer, use narrower types, or skip work "
            "that is not needed; the memory path is already at its roof."
        ),
        expect=(
            Expectation(
                metric="dram__bytes.sum",
                direction=Direction.DOWN,
                value_now=f.v("dram__bytes.sum"),
                unit="byte",
                label="DRAM bytes moved",
            ),
        ),
        confidence=Confidence(
            value=0.75, would_raise="a timeline capture to confirm the kernel's share of the step"
        ),
        next_step="Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets.",
    )


def _unit_metric(unit: str) -> str:
    return {
        "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "tensor": "sm__pipe_tensor_*_cycles_active (tensor pipe)",
        "fp32": "FP32 FLOP/s / peak (roofline)",
        "fp64": "FP64 FLOP/s / peak (roofline)",
        "issue": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    }[unit]


# ncu rule identifiers -> the vocabulary, for quoting ncu's own hints when kprof cannot check them itself.
NCU_RULE_BOTTLENECK = {
    "UncoalescedGlobalAccess": B.UNCOALESCED_GLOBAL_ACCESS,
    "SharedMemoryConflicts": B.SHARED_BANK_CONFLICTS,
    "UncoalescedSharedAccess": B.SHARED_BANK_CONFLICTS,
    "ThreadDivergence": B.WARP_DIVERGENCE,
    "TheoreticalOccupancy": B.OCCUPANCY_LIMITED,
    "RegisterSpilling": B.LOCAL_MEMORY_SPILL,
}


def _ncu_rule_hints(k: KernelLaunch) -> tuple[Finding, ...]:
    """ncu's own rules (secondary evidence, unverified) for a diagnosis that could not check the mechanism."""
    out: list[Finding] = []
    for r in sorted(k.rules, key=lambda r: -(r.speedup_estimate or 0.0)):
        b = NCU_RULE_BOTTLENECK.get(r.name)
        if b is None and r.name == "LaunchConfiguration":
            b = (
                B.SMALL_GRID
                if "small grid" in r.title.lower()
                else B.TAIL_EFFECT
                if "tail" in r.title.lower()
                else None
            )
        if b is None or any(f.bottleneck is b for f in out):
            continue
        est = f" (ncu estimates {r.speedup_estimate:.0f}% speedup)" if r.speedup_estimate is not None else ""
        msg = " ".join(r.message.split())[:200]
        out.append(
            Finding(
                bottleneck=b,
                headline=f"ncu's rule {r.name}{est}, not verified by kprof: {msg}",
                evidence=(
                    Evidence(
                        name=f"ncu rule {r.name}",
                        value=r.speedup_estimate,
                        unit="% est. speedup",
                        reference="ncu's estimate, secondary evidence",
                        metric=r.name,
                    ),
                ),
                share=None,
            )
        )
    return tuple(out[:3])


def _resource_diagnosis(f: _Facts, mechs: list[_Mech], needs: set[str]) -> Diagnosis:
    """No mechanism explains the gap: the resource (or latency) is the answer, with the stalls as the explanation."""
    k = f.k
    unit, util = f.limiter()
    latency = (
        max(f.util.get("issue", 0.0), f.mem_max()[1], *(f.util.get(u, 0.0) for u in USEFUL_UNITS))
        < th.LATENCY_BOUND_FRACTION
    )
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    ev: list[Evidence] = [
        Evidence(
            name=f"busiest unit: {UNIT_WORDS[unit]}",
            value=round(100 * util, 1),
            unit="% of peak",
            reference=(
                f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}% everywhere: latency bound (ncu's SOL rule)"
                if latency
                else f"below the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% that counts as at the roof"
            ),
            reference_value=round(
                100 * (th.LATENCY_BOUND_FRACTION if latency else th.HEALTHY_FRACTION_OF_PEAK), 1
            ),
            metric=_unit_metric(unit),
        )
    ]
    if top:
        ev.append(
            Evidence(
                name=f"top warp stall: {top}",
                value=round(stalls[top], 2),
                unit="cycles/issued instruction",
                reference=STALL_WORDS.get(top, (top, ""))[0],
                metric=f"smsp__average_warps_issue_stalled_{top}_per_issue_active.ratio",
            )
        )
    d = f.duration_evidence()
    if d:
        ev.append(d)
    missing_cmd = _missing_command(f, needs)
    inconclusive = bool(missing_cmd) and (
        ("memory" in f.missing and unit in MEMORY_UNITS) or (latency and "stalls" in f.missing)
    )
    if latency:
        bott = B.LATENCY_BOUND
        headline = f"Latency bound: no unit is above {100 * util:.0f}% of its peak" + (
            f"; warps mostly stall {STALL_WORDS.get(top, (top, ''))[0]}." if top else "."
        )
        mechanism = (
            "Too little independent work is in flight to keep any unit busy; each warp waits on the "
            "result of its previous instruction."
        )
        fix = (
            _cap(STALL_WORDS[top][1]) + "."
            if top in STALL_WORDS
            else "Keep more independent work in flight: more resident warps, unrolled independent loads, async copies."
        )
        issue_hit = _first(k, ISSUE_ACTIVE)
        expect = [
            Expectation(
                metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
                direction=Direction.UP,
                target=round(min(100.0, 2 * issue_hit[1]), 1) if issue_hit else None,
                unit="%",
                value_now=round(issue_hit[1], 1) if issue_hit else None,
                label="scheduler issue-active",
            )
        ]
    else:
        bott = RESOURCE_OF_UNIT[unit]
        headline = (
            f"{_cap(UNIT_WORDS[unit])} bound at {100 * util:.0f}% of peak, short of the "
            f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% that counts as at the roof."
        )
        mechanism = (
            f"{_cap(UNIT_WORDS[unit])} is the busiest unit, but it does not reach its peak and no "
            "single mechanism measured here explains the difference."
        )
        fix = {
            "dram": "Move fewer bytes (fusion, narrower types) and keep more loads in flight (128-bit loads, unrolling).",
            "l2": "Improve reuse in shared memory/registers so fewer requests reach L2.",
            "l1": "Use wider shared/global accesses and register tiling so fewer L1 wavefronts are needed.",
            "tensor": "Feed the tensor cores better: larger tiles, deeper async pipelines (TMA/cp.async), fewer epilogue stalls.",
            "fp32": "Raise FMA density: fewer non-FMA instructions per FLOP; consider tensor cores for matrix work.",
            "fp64": "Raise FP64 FMA density (DFMA instead of DMUL+DADD).",
            "issue": "Execute fewer instructions per result.",
        }[unit]
        expect = [
            Expectation(
                metric=_unit_metric(unit) if unit in MEMORY_UNITS or unit == "issue" else DURATION,
                direction=Direction.UP if unit in MEMORY_UNITS or unit == "issue" else Direction.DOWN,
                target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1)
                if unit in MEMORY_UNITS or unit == "issue"
                else None,
                unit="%" if unit in MEMORY_UNITS or unit == "issue" else "ns",
                value_now=round(100 * util, 1) if unit in MEMORY_UNITS or unit == "issue" else f.v(DURATION),
                label=f"{UNIT_WORDS[unit]} used",
            )
        ]
    gap = max(1e-9, 1.0 - util)
    findings = tuple(
        Finding(
            bottleneck=m.bottleneck,
            headline=m.headline,
            evidence=tuple(m.evidence[:3]),
            share=round(min(1.0, m.savings / gap), 3),
        )
        for m in mechs
    )
    conf = 0.55 if top else 0.4
    if inconclusive:
        if latency:
            why = "the stall reasons that would say what it waits on were not collected"
        elif util >= th.HEALTHY_FRACTION_OF_PEAK:
            why = (
                "whether that traffic is useful (coalesced, conflict-free) or waste cannot be told: "
                "the memory tables were not collected"
            )
        else:
            why = "the sections that would tell why were not collected"
        head = (
            f"{_cap(UNIT_WORDS[unit])} at {100 * util:.0f}% of peak; {why}."
            if not latency
            else f"Latency bound (no unit above {100 * util:.0f}% of peak); {why}."
        )
        return Diagnosis(
            subject=_subject(k),
            bottleneck=bott,
            verdict=Verdict.INCONCLUSIVE,
            headline=head,
            evidence=tuple(ev[:3]),
            mechanism=mechanism,
            fix=fix,
            expect=tuple(expect),
            confidence=Confidence(
                value=0.3,
                would_raise="the missing sections: "
                + ", ".join(SECTION_OF[n] for n in sorted(needs & f.missing)),
            ),
            next_step=f"Collect the missing sections: `{missing_cmd}`",
            findings=findings + _ncu_rule_hints(k),
        )
    return Diagnosis(
        subject=_subject(k),
        bottleneck=bott,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(ev[:3]),
        mechanism=mechanism,
        fix=fix,
        expect=tuple(expect),
        confidence=Confidence(
            value=conf if not missing_cmd else conf - 0.15,
            would_raise=("the missing sections (" + missing_cmd + ")")
            if missing_cmd
            else "SourceCounters on the hottest lines (--import-source yes)",
        ),
        next_step=(f"`{missing_cmd}`" if missing_cmd else _after_command(k, f.cooperative)),
        findings=findings,
    )


@localized
def diagnose_launch(
    k: KernelLaunch,
    *,
    duration_ns: float | None = None,
    source_format: str = "ncu-rep",
    cooperative: bool = False,
) -> Diagnosis:
    """Diagnose one kernel launch (see the module docstring for the order of the checks).

    Parameters
    ----------
    k
        The launch, from :func:`kprof.io.ncu.load_ncu_report` or :func:`kprof.io.ncu_csv.load_ncu_csv`.
    duration_ns
        The kernel's real duration from a timeline, if known; otherwise ncu's duration is used and
        labelled "measured under ncu".
    source_format
        The profile's format (``ncu-rep``, ``ncu-csv-raw``, ``ncu-csv-details``): a details-page CSV drops
        the memory tables and source counters, and the advice for missing data says so.
    cooperative
        True when the launch is cooperative (grid-synchronizing): ncu's kernel replay breaks those, so the
        commands use ``--replay-mode application``.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={"gpu__time_duration.sum": Metric(1000.0, "ns")})
    >>> diagnose_launch(k).verdict.value
    'inconclusive'
    """
    label = "timeline" if duration_ns is not None else UNDER_NCU
    f = _facts(k, duration_ns if duration_ns is not None else k.value(DURATION), label)
    f.source_format = source_format
    f.cooperative = cooperative
    if "sol" in f.missing:
        return _inconclusive_no_sol(f)

    found = [m for m in (rule(f) for rule in MECHANISMS) if m is not None]
    # Useful work per unit: a unit's utilisation less the share of it that a mechanism shows to be waste
    # (sectors nobody asked for, replayed wavefronts, masked lanes). The kernel cannot finish faster than
    # its most loaded useful unit allows, so no mechanism can win more than the remaining gap.
    useful: dict[str, float] = {}
    for u in USEFUL_UNITS:
        if u in f.util:
            waste = max((m.waste for m in found if u in m.inflates), default=0.0)
            useful[u] = f.util[u] * (1.0 - waste)
    u_roof = max(useful.values(), default=0.0)
    wrong_roof = any(m.blocks_healthy for m in found)
    at_roof = [u for u in UNIT_PRIORITY if useful.get(u, 0.0) >= th.HEALTHY_FRACTION_OF_PEAK]
    if at_roof and not wrong_roof:
        unit = at_roof[0]
        if not (unit in MEMORY_UNITS and "memory" in f.missing):
            return _healthy(f, unit, f.util[unit], th.HEALTHY_FRACTION_OF_PEAK)
    # The time a fix can win is bounded by the work that stays: the busiest unit's useful share, and
    # the instruction issue that remains once the waste is gone (the kernel still executes its instructions).
    floor = u_roof
    if "issue" in f.util:
        issue_waste = max((m.waste for m in found if "issue" in m.inflates), default=0.0)
        floor = max(floor, f.util["issue"] * (1.0 - issue_waste))
    gap = max(1e-9, 1.0 - floor)
    for m in found:
        if not m.blocks_healthy and m.savings > gap:
            m.savings = gap
            t = _time_expectation(f, m.savings)
            m.expect = [t if e.metric == DURATION and t is not None else e for e in m.expect]
    mechs = sorted((m for m in found if m.savings >= th.MIN_MECHANISM_SAVINGS), key=lambda m: -m.savings)
    unit, util = f.limiter()
    needs = {"memory"} if unit in MEMORY_UNITS else {"instructions"} if unit == "issue" else set()

    if mechs and mechs[0].savings >= th.MIN_PRIMARY_SAVINGS:
        top = mechs[0]
        gap = max(top.savings, gap)
        ev = list(top.evidence[:3])
        d = f.duration_evidence()
        if d and len(ev) < 3:
            ev.append(d)
        missing = _missing_command(f, {"source"} if f.sass.empty else set())
        return Diagnosis(
            subject=_subject(k),
            bottleneck=top.bottleneck,
            verdict=Verdict.FIX,
            headline=top.headline,
            evidence=tuple(ev),
            mechanism=top.mechanism,
            fix=top.fix,
            expect=tuple(top.expect),
            confidence=Confidence(
                value=top.confidence, would_raise=top.would_raise or "a before/after pair (kprof compare)"
            ),
            next_step=_after_command(k, f.cooperative)
            + (f" For line-level detail: `{missing}`" if missing else ""),
            findings=tuple(
                Finding(
                    bottleneck=m.bottleneck,
                    headline=m.headline,
                    evidence=tuple(m.evidence[:3]),
                    share=round(min(1.0, m.savings / gap), 3),
                )
                for m in mechs[1:]
            ),
        )
    return _resource_diagnosis(f, mechs, needs | ({"stalls"} if util < th.LATENCY_BOUND_FRACTION else set()))


# ------------------------------------------------------------------------------------ timeline
def _timeline_matches(timeline: Any, k: KernelLaunch) -> tuple[list[float], bool]:
    """Durations (ns) of the timeline's kernels with this launch's name, and whether any was cooperative.

    Reads :class:`kprof.timeline_model.KernelTable` columns (``start_ns``, ``end_ns``, ``name_id``,
    ``names``, ``short_names``, ``launch_type``); anything else yields no match.
    """
    table = getattr(timeline, "kernels", None)
    names = tuple(getattr(table, "names", ()) or ())
    shorts = tuple(getattr(table, "short_names", ()) or ())
    ids = getattr(table, "name_id", None)
    if table is None or ids is None or not names:
        return [], False
    wanted = {n for n in (k.demangled_name, k.mangled_name) if n}
    hit_ids = {
        i for i in range(len(names)) if names[i] in wanted or (i < len(shorts) and shorts[i] == k.name)
    }
    if not hit_ids:
        return [], False
    rows = [r for r in range(len(ids)) if int(ids[r]) in hit_ids]
    starts, ends = table.start_ns, table.end_ns
    durations = [float(ends[r] - starts[r]) for r in rows]
    lt = getattr(table, "launch_type", None)
    coop = lt is not None and any(int(lt[r]) in (2, 3) for r in rows)
    return durations, coop


def diagnose_kernels(profile: KernelProfile, timeline: Any = None) -> list[Diagnosis]:
    """One :class:`~kprof.model.Diagnosis` per launch in ``profile``, most important first.

    Importance is the time a fix could win: the launch's duration times its gap to the roof.

    Parameters
    ----------
    profile
        A loaded ncu report or CSV export.
    timeline
        Optional :class:`~kprof.timeline_model.Timeline` of the same program: when a kernel of the
        same name is in it, its median duration replaces the one measured under ncu.

    Examples
    --------
    >>> import kprof
    >>> ds = diagnose_kernels(kprof.load("data/samples/small_grid.ncu-rep"))  # doctest: +SKIP
    >>> ds[0].bottleneck.value  # doctest: +SKIP
    'small_grid'
    """
    scored: list[tuple[float, int, Diagnosis]] = []
    for k in profile.launches:
        tl, coop = _timeline_matches(timeline, k) if timeline is not None else ([], False)
        d = diagnose_launch(
            k,
            duration_ns=statistics.median(tl) if tl else None,
            source_format=profile.format,
            cooperative=coop,
        )
        dur = (statistics.median(tl) if tl else k.value(DURATION)) or 0.0
        weight = {Verdict.FIX: 1.0, Verdict.INCONCLUSIVE: 0.5, Verdict.HEALTHY: 0.1}[d.verdict]
        scored.append((dur * weight, k.id, d))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [d for _, _, d in scored]


__all__ = ["DERIVED", "diagnose_kernels", "diagnose_launch", "metric_value", "stall_reasons"]
