"""Kernel stage: why one kernel launch is slow, from an Nsight Compute report.

The order docs/rules.md sets out:

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
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose.localize import localized
from kprof.diagnose.roofline import (
    ALU_PIPE_METRICS,
    COMPUTE_SOL,
    FMA_PIPE_METRICS,
    FMAHEAVY_PIPE_METRICS,
    FP64_PIPE_METRICS,
    MEMORY_SOL,
    SOL_LEVEL_METRICS,
    TENSOR_PIPE_METRICS,
    XU_PIPE_METRICS,
    Roofline,
    roofline,
    sm_active_fraction,
)
from kprof.diagnose.sass import Dataflow, SassSummary, access_bytes, analyze_sass, dataflow
from kprof.diagnose.validity import damaged_launch
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
LDSM_REQUESTS = ("smsp__inst_executed_op_ldsm.sum", "smsp__sass_inst_executed_op_ldsm.sum")
"""ldmatrix (LDSM) instructions: their wavefronts are counted in the shared *load* wavefronts
(``..._mem_shared_op_ld``), but not in the shared-load instruction counts, so a load's wavefronts per request divide
by both (like by like)."""
SST_REQUESTS = ("smsp__sass_inst_executed_op_shared_st.sum", "smsp__inst_executed_op_shared_st.sum")
SLD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
SATOM_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
SATOM_REQUESTS = ("smsp__sass_inst_executed_op_shared_atom.sum", "smsp__inst_executed_op_shared_atom.sum")
SATOM_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"
L1_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts.sum"
L1_WAVEFRONT_PCT = "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"
LSU_REQUEST_PCT = "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed"
L2_THEORETICAL_SECTORS = "memory_l2_theoretical_sectors_global"
L2_THEORETICAL_SECTORS_IDEAL = "memory_l2_theoretical_sectors_global_ideal"
SHARED_WAVEFRONTS = "memory_l1_wavefronts_shared"
SHARED_WAVEFRONTS_IDEAL = "memory_l1_wavefronts_shared_ideal"
LLD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
LST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
L1_SECTORS = "l1tex__t_sectors.sum"
GATOM_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",)
GRED_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",)
L2_ATOMIC_REQUESTS = (
    "lts__t_requests_srcunit_tex_op_red.sum",
    "lts__t_requests_srcunit_tex_op_atom_dot_alu.sum",
    "lts__t_requests_srcunit_tex_op_atom_dot_cas.sum",
)
"""Atomic and reduction operations the L2 slices apply (one per active lane's address at a warp's RED/ATOM: the L1
forwards a warp's same-address updates one by one). A warp that reduces first sends one."""
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
ATOMIC_STALLS = ("drain", "lg_throttle", "membar", "long_scoreboard")
"""Stall reasons of warps waiting on atomics: results (long_scoreboard), a full queue, fences, draining at exit."""
"""Stall reasons that global/local memory traffic causes (waiting on L1TEX results, a full LSU queue)."""
SHARED_STALLS = ("short_scoreboard", "mio_throttle")
"""Stall reasons that shared-memory traffic causes (waiting on MIO results, a full MIO queue)."""
LATENCY_STALLS = {"long_scoreboard", "short_scoreboard", "wait", "lg_throttle", "drain", "membar", "imc_miss"}
UNIT_THROTTLES = {"l1": ("lg_throttle", "mio_throttle", "tex_throttle")}
"""Stall reasons that say a memory level's own queue is full (backpressure from the unit, not waiting on a result):
the load/store (LSU) and MIO queues feed L1/shared memory and the texture pipe. DRAM and L2 have no such stall of
their own; a warp waiting on them shows ``long_scoreboard``."""

# Quantities kprof quotes that are not one ncu metric. Evidence and expectations name either a metric the report
# holds, or one of these (computed by metric_value(), so `kprof compare` reads the same quantity from an after
# report). Evidence may also name an ncu rule (``rule:<identifier>``) or a per-PC source counter summed over
# the SASS (``sass:<counter>``). tests/diagnose/test_invariants.py checks every diagnosis against this list.
DERIVED: dict[str, str] = {
    "derived:global_load_sectors_per_request": f"{GLD_SECTORS} / {GLD_REQUESTS}",
    "derived:global_store_sectors_per_request": f"{GST_SECTORS} / {GST_REQUESTS}",
    "derived:global_sectors_per_request": "(global load + store sectors) / (load + store requests)",
    "derived:global_excess_sector_share": (
        f"1 - {L2_THEORETICAL_SECTORS_IDEAL} / {L2_THEORETICAL_SECTORS} (ncu's own ideal for each executed "
        "instruction's width and active lanes)"
    ),
    "derived:shared_wavefronts_per_request": "(shared ld + st wavefronts) / (shared ld + st instructions)",
    "derived:shared_load_wavefronts_per_request": f"{SLD_WAVEFRONTS} / shared load instructions (LDS and LDSM: "
    "the wavefronts count both)",
    "derived:shared_store_wavefronts_per_request": f"{SST_WAVEFRONTS} / shared store instructions",
    "derived:l1_wavefronts_per_lsu_request": (
        "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed / "
        "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed (both peaks are 1 per cycle per SM)"
    ),
    "derived:local_memory_sectors": f"{LLD_SECTORS} + {LST_SECTORS}",
    "derived:local_sector_share": "local sectors / (global + local sectors at L1)",
    "derived:global_atomic_requests": "global atom + red requests at L1",
    "derived:l2_atomic_requests": "L2 atomic + reduction requests from the SMs: "
    + " + ".join(L2_ATOMIC_REQUESTS),
    "derived:sm_active_fraction": f"{SM_ACTIVE} / elapsed SM cycles",
    "derived:sm_active_pct": f"100 x {SM_ACTIVE} / elapsed SM cycles (% of the time the SMs are busy)",
    "derived:tail_wave_efficiency": f"{WAVES} / ceil({WAVES})",
    "derived:dram_bytes": "dram__bytes.sum, or dram__bytes_read.sum + dram__bytes_write.sum (H200 reports)",
    "derived:fp32_tflops": "FP32 FLOP/s: (fadd + fmul + 2 x ffma) thread instructions per second / 1e12",
    "derived:fp32_utilization": "% of peak: achieved FP32 FLOP/s / peak (roofline), or the FMA pipe's elapsed-cycle use",
    "derived:fp32_flop_per_dram_byte": "FP32 FLOP/s / DRAM bytes/s (fadd + fmul + 2 x ffma)",
    "derived:tensor_tflops": "tensor-core FLOP/s / 1e12 (the roofline's tensor FLOP count over the duration)",
    "derived:tensor_utilization": "% of peak: tensor pipe's elapsed-cycle use, or tensor FLOP/s / peak",
    "derived:fp64_utilization": "% of peak: FP64 pipe's elapsed-cycle use, or FP64 FLOP/s / peak",
    "derived:xu_utilization": "% of peak: the XU pipe's elapsed-cycle use, counted as work only when the SASS shows "
    "special functions (MUFU), not conversions, fill it",
    "derived:l1_utilization": "% of peak: l1tex__throughput elapsed, or its active-cycle form x the SMs' busy fraction",
    "derived:int_utilization": "% of peak: the busier of the integer pipes over elapsed cycles (sm__pipe_alu_cycles_active "
    "and sm__pipe_fmaheavy_cycles_active, which runs IMAD), counted as work only when most executed integer "
    "instructions operate on loaded data (sass:int_data_share)",
    "derived:work_inst_share": "arithmetic on the data among executed warp instructions: derived:fp_inst_share plus "
    "sass:int_data_share",
    "sass:int_data_share": "integer instructions (IMAD, IADD3, LOP3, SHF, ...) with an operand computed from loaded "
    "data, among executed SASS instructions (SASS data flow)",
    "derived:shared_atomic_wavefronts_per_request": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum / shared "
    "atomic instructions (smsp__sass_inst_executed_op_shared_atom.sum or smsp__inst_executed_op_shared_atom.sum)",
    "sass:ffma_share": "FFMA among executed SASS instructions (per-PC inst_executed; listed when not collected)",
    "sass:fp_arith_share": "FP32/FP16/FP64 arithmetic and MMA among executed SASS instructions",
    "derived:fp_inst_share": "FP arithmetic among executed warp instructions: the SASS mix, else the FP thread "
    "instruction counters x smsp__cycles_elapsed.avg / 32 / smsp__inst_executed.sum",
    "sass:fma_from_loads_share": "FMAs whose two multiplicands were both loaded from memory (SASS data flow)",
    "sass:load_bytes_per_fma": "bytes per thread loaded by LDS/LDSM/LDG/LD per executed FMA (SASS)",
    "sass:operand_reuse": "FMA multiplicand uses per loaded value (SASS data flow)",
    "sass:dependent_load_share": "global loads whose address is computed from loaded data (SASS data flow)",
    "sass:local_instructions": "executed (or listed) LDL + STL instructions",
    "sass:global_atomics": "executed RED/ATOM instructions on global memory",
}

# ncu sections each check needs# ncu sections each check needs, for the exact command that collects what is missing.
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
    "xu": B.COMPUTE_BOUND,
    "int": B.COMPUTE_BOUND,
    "issue": B.INSTRUCTION_BOUND,
}
UNIT_WORDS = {
    "dram": "DRAM bandwidth",
    "l2": "L2 cache bandwidth",
    "l1": "L1/shared-memory bandwidth",
    "tensor": "tensor-core throughput",
    "fp32": "FP32 pipe throughput",
    "fp64": "FP64 pipe throughput",
    "xu": "special-function (XU) pipe throughput",
    "int": "integer pipe (ALU and IMAD) throughput",
    "issue": "SM instruction issue",
}
MEMORY_UNITS = ("dram", "l2", "l1")
USEFUL_UNITS = ("dram", "l2", "l1", "tensor", "fp32", "fp64", "xu", "int")
UNIT_PRIORITY = ("tensor", "fp64", "fp32", "xu", "int", "dram", "l2", "l1", "issue")
"""When several units are near their peak, the one named is the first here: the FLOP pipes and DRAM carry the
program's own work (FLOPs, bytes that must cross the memory bus); caches carry traffic derived from it."""


# ------------------------------------------------------------------------------------ helpers
def _cap(text: str) -> str:
    """First letter upper case, the rest untouched (``str.capitalize`` would turn "L2" into "l2")."""
    return text[:1].upper() + text[1:]


def _pc(fraction: float) -> str:
    """A fraction as the percentage evidence quotes (one decimal, no trailing zero): 0.9071 -> "90.7"."""
    return f"{round(100 * fraction, 1):g}"


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
    """The value of an ncu metric, or of one of the documented ``derived:``/``sass:`` names (see :data:`DERIVED`).

    ``sass:<counter>`` sums a per-PC source counter (e.g. ``sass:smsp__pcsamp_warps_issue_stalled_wait``)
    over the SASS listing. Returns None when the report lacks what it needs (missing is never 0).

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={GLD_SECTORS: Metric(3200.0), GLD_REQUESTS: Metric(100.0)})
    >>> metric_value(k, "derived:global_load_sectors_per_request")
    32.0
    """
    if name.startswith("sass:"):
        return _sass_value(k, name)
    if not name.startswith("derived:"):
        return k.value(name)
    simple: dict[str, Callable[[], float | None]] = {
        "derived:global_load_sectors_per_request": lambda: _ratio(
            k.value(GLD_SECTORS), k.value(GLD_REQUESTS)
        ),
        "derived:global_store_sectors_per_request": lambda: _ratio(
            k.value(GST_SECTORS), k.value(GST_REQUESTS)
        ),
        "derived:global_sectors_per_request": lambda: _ratio(
            _sum_present(k, (GLD_SECTORS, GST_SECTORS)), _sum_present(k, (GLD_REQUESTS, GST_REQUESTS))
        ),
        "derived:global_excess_sector_share": lambda: _excess(
            k.value(L2_THEORETICAL_SECTORS), k.value(L2_THEORETICAL_SECTORS_IDEAL)
        ),
        "derived:shared_wavefronts_per_request": lambda: _ratio(
            _sum_present(k, (SLD_WAVEFRONTS, SST_WAVEFRONTS)), _shared_requests(k, "ld", "st")
        ),
        "derived:shared_load_wavefronts_per_request": lambda: _ratio(
            k.value(SLD_WAVEFRONTS), _shared_requests(k, "ld")
        ),
        "derived:shared_store_wavefronts_per_request": lambda: _ratio(
            k.value(SST_WAVEFRONTS), _shared_requests(k, "st")
        ),
        "derived:shared_atomic_wavefronts_per_request": lambda: _ratio(
            k.value(SATOM_WAVEFRONTS), _shared_requests(k, "atom")
        ),
        "derived:l1_wavefronts_per_lsu_request": lambda: _ratio(
            k.value(L1_WAVEFRONT_PCT), k.value(LSU_REQUEST_PCT)
        ),
        "derived:local_memory_sectors": lambda: _sum_present(k, (LLD_SECTORS, LST_SECTORS)),
        "derived:local_sector_share": lambda: _local_share(k),
        "derived:global_atomic_requests": lambda: _sum_present(k, GATOM_REQUESTS + GRED_REQUESTS),
        "derived:l2_atomic_requests": lambda: _sum_present(k, L2_ATOMIC_REQUESTS),
        "derived:sm_active_fraction": lambda: sm_active_fraction(k),
        "derived:sm_active_pct": lambda: _times100(sm_active_fraction(k)),
        "derived:tail_wave_efficiency": lambda: _tail_efficiency(k.value(WAVES)),
        "derived:dram_bytes": lambda: dram_bytes(k),
        "derived:fp_inst_share": lambda: fp_inst_share(k),
    }
    if name in simple:
        return simple[name]()
    roof = roofline(k)
    if name == "derived:fp32_tflops":
        fl = roof.flops.get("fp32")
        return fl / 1e12 if fl is not None else None
    if name == "derived:tensor_tflops":
        tl = roof.flops.get("tensor")
        return tl / 1e12 if tl is not None else None
    if name == "derived:fp32_flop_per_dram_byte":
        return _ratio(roof.flops.get("fp32"), roof.bytes_per_s.get("dram"))
    if name == "derived:work_inst_share":
        return work_inst_share(k)
    units = _units(roof, **_unit_flags(k, analyze_sass(k.sass), dataflow(k.sass)))
    key = {
        "derived:fp32_utilization": "fp32",
        "derived:tensor_utilization": "tensor",
        "derived:fp64_utilization": "fp64",
        "derived:xu_utilization": "xu",
        "derived:int_utilization": "int",
        "derived:l1_utilization": "l1",
    }.get(name)
    if key is not None and key in units:
        return 100.0 * units[key]
    return None


def _sass_value(k: KernelLaunch, name: str) -> float | None:
    what = name.removeprefix("sass:")
    if not k.sass:
        return None
    if what not in {n.removeprefix("sass:") for n in DERIVED if n.startswith("sass:")}:
        vals = [line.counters[what] for line in k.sass if what in line.counters]
        return sum(vals) if vals else None
    s, flow = analyze_sass(k.sass), dataflow(k.sass)
    if s.empty:
        return None
    return {
        "ffma_share": s.share(s.ffma),
        "fp_arith_share": s.share(s.fp32 + s.fp16 + s.fp64 + s.mma),
        "fma_from_loads_share": flow.fma_from_loads_share if flow.fma else None,
        "load_bytes_per_fma": flow.per_fma(flow.load_bytes),
        "operand_reuse": flow.operand_reuse,
        "dependent_load_share": flow.dependent_load_share if flow.global_loads else None,
        "int_data_share": flow.int_data_share(s.instructions),
        "local_instructions": s.local_loads + s.local_stores,
        "global_atomics": s.global_atomics,
    }.get(what)


def dram_bytes(k: KernelLaunch) -> float | None:
    """Bytes moved to and from DRAM: ``dram__bytes.sum``, or read + write where the report splits them (H200)."""
    total = k.value("dram__bytes.sum")
    if total is not None:
        return total
    return _sum_present(k, ("dram__bytes_read.sum", "dram__bytes_write.sum"))


def _excess(actual: float | None, ideal: float | None) -> float | None:
    if not actual or ideal is None:
        return None
    return max(0.0, 1.0 - ideal / actual)


def _shared_requests(k: KernelLaunch, *ops: str) -> float | None:
    hits = [
        h
        for h in (
            _first(k, SLD_REQUESTS) if "ld" in ops else None,
            _first(k, LDSM_REQUESTS) if "ld" in ops else None,
            _first(k, SST_REQUESTS) if "st" in ops else None,
            _first(k, SATOM_REQUESTS) if "atom" in ops else None,
        )
        if h is not None
    ]
    return sum(h[1] for h in hits) if hits else None


def _local_share(k: KernelLaunch) -> float | None:
    local = _sum_present(k, (LLD_SECTORS, LST_SECTORS))
    if local is None:
        return None
    total = _sum_present(k, (GLD_SECTORS, GST_SECTORS, LLD_SECTORS, LST_SECTORS))
    return min(1.0, local / total) if total else None


def _times100(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def _tail_efficiency(w: float | None) -> float | None:
    return w / math.ceil(w) if w and w > 0 else None


def _excess_share(
    loads: tuple[float | None, float | None, float],
    stores: tuple[float | None, float | None, float],
    ncu_actual: float | None,
    ncu_ideal: float | None,
    *more: tuple[float | None, float | None, float],
) -> float | None:
    """Share of the memory units moved (sectors, wavefronts) that an ideal access pattern would not
    need, from ``(units, requests, ideal units per request)`` of loads and stores (and ``more`` kinds:
    shared atomics); ncu's own per-instruction ideal replaces ours when the report has it. None when
    nothing moved, or when ncu's ideal shows no excess beyond COALESCING_TOLERANCE."""
    groups = (loads, stores, *more)
    actual = sum(g[0] or 0.0 for g in groups)
    if actual <= 0:
        return None
    ideal_total = sum((g[1] or 0.0) * g[2] for g in groups)
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


def stall_reasons(k: KernelLaunch) -> dict[str, float]:
    """Warp stall reasons (cycles per issued instruction, or PC samples), largest first; {} when not collected.

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
        return f"smsp__average_warp_latency_issue_stalled_{reason}.ratio", "cycles/instruction"
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio", "cycles/issued instruction"


def _stalls(k: KernelLaunch) -> tuple[dict[str, float], str]:
    for pat, kind in zip(_STALL_PATTERNS, ("per_issue", "latency"), strict=True):
        out = {}
        for name, m in k.metrics.items():
            hit = pat.match(name)
            if hit and not isinstance(m.value, str):
                reason = hit.group(1)
                if reason not in _NOT_STALLS and float(m.value) > 0:
                    out[reason] = float(m.value)
        if out:
            return dict(sorted(out.items(), key=lambda kv: -kv[1])), kind
    samples: dict[str, float] = {}
    for line in k.sass:
        for cname, v in line.counters.items():
            hit = _PCSAMP_STALL.match(cname)
            if hit and hit.group(1) not in _NOT_STALLS and not cname.endswith("_not_issued"):
                samples[hit.group(1)] = samples.get(hit.group(1), 0.0) + v
    out = dict(sorted(((r, v) for r, v in samples.items() if v > 0), key=lambda kv: -kv[1]))
    return out, "pc_samples"


def _stall_evidence(k: KernelLaunch, reason: str, value: float, reference: str) -> Evidence:
    metric, unit = stall_metric(k, reason)
    return Evidence(
        name=f"top warp stall: {reason}", value=round(value, 2), unit=unit, reference=reference, metric=metric
    )


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
    k: KernelLaunch, what: str = "--set full", *, cooperative: bool = False, source: str | None = None
) -> str:
    """The exact ncu command that profiles this launch again: kprof's capture flags (:mod:`kprof.commands`),
    ``what`` (``--set full`` or ``--section X ...``), written beside the diagnosed report."""
    sections = tuple(what.split()[1::2]) if what.startswith("--section") else ()
    return commands.kernel_recapture(k.name or "NAME", source, sections=sections, cooperative=cooperative)


def _after_command(k: KernelLaunch, cooperative: bool = False, source: str | None = None) -> str:
    return commands.kernel_after_change(k.name or "kernel", source, cooperative=cooperative)


# ------------------------------------------------------------------------------------ facts
_NO_TENSOR_CORE_GPU = re.compile(r"GTX\s*16\d\d|TU11[67]|\bMX\s*[45]\d0\b|\bT(?:400|600|1000|1200)\b", re.I)
"""Turing parts built without tensor cores (TU116/TU117: GeForce GTX 16xx, MX450/550, Quadro T400-T1200);
every other GPU of compute capability 7.0 or later has them, none before 7.0 (Volta introduced them)."""


def has_tensor_cores(k: KernelLaunch) -> bool | None:
    """Whether the profiled GPU has tensor cores: from its name and compute capability, or the report's tensor
    peak (``sm__inst_executed_pipe_tensor.sum.peak_sustained`` is 0 on a GPU without them). None when unknown.

    Examples
    --------
    >>> has_tensor_cores(KernelLaunch(id=0, name="k", device="NVIDIA GeForce GTX 1660 Ti", compute_capability="7.5"))
    False
    >>> has_tensor_cores(KernelLaunch(id=0, name="k", device="NVIDIA H200", compute_capability="9.0"))
    True
    """
    if k.device and _NO_TENSOR_CORE_GPU.search(k.device):
        return False
    peak = k.value("sm__inst_executed_pipe_tensor.sum.peak_sustained")
    if peak is not None and peak <= 0:
        return False
    if k.compute_capability:
        try:
            major = int(str(k.compute_capability).split(".")[0])
        except ValueError:
            return None
        return major >= 7
    return None


@dataclass(slots=True)
class _Facts:
    k: KernelLaunch
    roof: Roofline
    sass: SassSummary
    flow: Dataflow
    duration_ns: float | None
    duration_label: str
    util: dict[str, float]
    missing: set[str] = field(default_factory=set)
    source_format: str = "ncu-rep"
    cooperative: bool = False
    source: str | None = None

    def v(self, name: str) -> float | None:
        return self.k.value(name)

    @property
    def sm_count(self) -> int | None:
        v = self.k.device_attributes.get("multiprocessor_count")
        return int(v) if isinstance(v, int | float) else None

    @property
    def sm_busy(self) -> float | None:
        return sm_active_fraction(self.k)

    @property
    def tensor_cores(self) -> bool | None:
        return has_tensor_cores(self.k)

    def fills_gpu(self) -> bool:
        """True when the grid gives every SM work for most of the kernel's time: at least one block per SM
        (or a wave) and, when measured, SMs busy >= SMALL_GRID_ACTIVE_SM_FRACTION of the elapsed cycles."""
        busy = self.sm_busy
        if busy is not None and busy < th.SMALL_GRID_ACTIVE_SM_FRACTION:
            return False
        blocks, sms, waves = self.k.blocks, self.sm_count, self.v(WAVES)
        if blocks is not None and sms is not None:
            return blocks >= sms
        if waves is not None:
            return waves >= th.OCCUPANCY_MIN_WAVES
        return busy is not None

    @property
    def u_max(self) -> float:
        return max(self.util.values()) if self.util else 0.0

    def limiter(self) -> tuple[str, float]:
        """The busiest unit; within 5 points of it, the one whose work is the program's (priority order).

        Instruction issue is not a candidate when most executed instructions are arithmetic on the data (FP math,
        or integer math on loaded values; FP_HEAVY_SHARE): the issue slots then carry the work itself, and the
        FP or integer pipe is the unit to name."""
        util = dict(self.util)
        work = self.work_share()
        if work is not None and work >= th.FP_HEAVY_SHARE and len(util) > 1:
            util.pop("issue", None)
        if not util:
            return "issue", 0.0
        top = max(util.values())
        close = [u for u in UNIT_PRIORITY if u in util and util[u] >= top - 0.05]
        unit = close[0] if close else max(util, key=lambda u: util[u])
        return unit, util[unit]

    def l2_carries_dram_traffic(self) -> bool:
        """True when L2 reads mostly miss: the L2 is passing a DRAM stream through, so the stream is DRAM's."""
        hit = self.v(L2_READ_HIT_RATE)
        return hit is not None and hit / 100.0 < th.L2_STREAMING_READ_HIT_RATE and "dram" in self.util

    def mem_max(self) -> tuple[str, float]:
        levels = [(u, self.util[u]) for u in MEMORY_UNITS if u in self.util]
        return max(levels, key=lambda x: x[1]) if levels else ("dram", 0.0)

    def fp_share(self) -> float | None:
        """FP arithmetic among executed instructions (:func:`fp_inst_share`); None when the report cannot say."""
        return fp_inst_share(self.k, self.sass)

    def work_share(self) -> float | None:
        """Arithmetic on the data among executed instructions (:func:`work_inst_share`): FP math plus integer
        math on loaded values; None when the report cannot say."""
        return work_inst_share(self.k, self.sass, self.flow)

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


_FP_THREAD_OPS = ("fadd", "fmul", "ffma", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma")
ISSUE_ELAPSED = "sm__inst_executed.avg.pct_of_peak_sustained_elapsed"


def fp_inst_share(k: KernelLaunch, sass: SassSummary | None = None) -> float | None:
    """FP arithmetic (FP32/FP16/FP64 and MMA) among the executed warp instructions.

    From the SASS (per-PC ``inst_executed``, else the listing); without SASS (a CSV export), from the thread
    instruction counters: ``sum of smsp__sass_thread_inst_executed_op_<fp op>_pred_on.sum.per_cycle_elapsed x
    smsp__cycles_elapsed.avg / 32 / smsp__inst_executed.sum`` (full warps assumed, so it can only be low).
    """
    s = sass if sass is not None else analyze_sass(k.sass)
    if not s.empty:
        return s.share(s.fp32 + s.fp16 + s.fp64 + s.mma)
    rates = [
        k.value(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
        for op in _FP_THREAD_OPS
    ]
    cycles, executed = k.value("smsp__cycles_elapsed.avg"), k.value("smsp__inst_executed.sum")
    if not any(r is not None for r in rates) or not cycles or not executed:
        return None
    return min(1.0, sum(r or 0.0 for r in rates) * cycles / th.WARP_SIZE / executed)


def work_inst_share(
    k: KernelLaunch, sass: SassSummary | None = None, flow: Dataflow | None = None
) -> float | None:
    """Arithmetic on the data among the executed warp instructions: FP arithmetic (:func:`fp_inst_share`) plus the
    integer instructions with an operand computed from loaded data (:attr:`Dataflow.int_data_ops`: a hash of a
    loaded key, bits extracted from a loaded word). Index math, address math and loop control derive from the
    thread index and the kernel's parameters, not from loaded data, and do not count. Without SASS, the FP share.
    """
    s = sass if sass is not None else analyze_sass(k.sass)
    fp = fp_inst_share(k, s)
    if s.empty:
        return fp
    fl = flow if flow is not None else dataflow(k.sass)
    data_int = fl.int_data_share(s.instructions) or 0.0
    return min(1.0, (fp or 0.0) + data_int)


def int_is_work(sass: SassSummary, flow: Dataflow) -> bool:
    """True when most executed integer instructions operate on loaded data (the algorithm's integer work: hashing,
    bit manipulation) and they are a large part of what executes, so a busy integer pipe is doing the work the
    algorithm needs rather than index arithmetic."""
    if sass.empty or not flow.int_ops:
        return False
    share = flow.int_data_share(sass.instructions) or 0.0
    return flow.int_data_ops >= th.INT_WORK_DATA_MAJORITY * flow.int_ops and share >= th.INT_WORK_MIN_SHARE


_XU_CONVERSIONS = ("F2F", "F2I", "I2F", "FRND", "I2FP", "F2IP")


def xu_is_math(sass: SassSummary) -> bool:
    """True when special functions (MUFU) outnumber the conversions that share the XU pipe in the SASS."""
    conversions = sum(sass.by_mnemonic.get(m, 0.0) for m in _XU_CONVERSIONS)
    return sass.special_function > 0 and sass.special_function >= conversions


def _issue_elapsed(k: KernelLaunch) -> float | None:
    """Instruction issue over the elapsed cycles (0..1): ``sm__inst_executed`` elapsed, else issue-active x the
    SMs' busy fraction."""
    v = k.value(ISSUE_ELAPSED)
    if v is not None:
        return v / 100.0
    hit, busy = _first(k, ISSUE_ACTIVE), sm_active_fraction(k)
    return hit[1] / 100.0 * busy if hit is not None and busy is not None else None


def _unit_flags(k: KernelLaunch, sass: SassSummary, flow: Dataflow) -> dict[str, Any]:
    """The instruction-mix facts :func:`_units` needs, from the report's SASS (or counters)."""
    fp = fp_inst_share(k, sass)
    return {
        "fp_heavy": fp is not None and fp >= th.FP_HEAVY_SHARE,
        "issue": _issue_elapsed(k),
        "xu_is_math": xu_is_math(sass),
        "int_is_work": int_is_work(sass, flow),
    }


def _units(
    roof: Roofline,
    fp_heavy: bool | None = None,
    issue: float | None = None,
    xu_is_math: bool = False,
    int_is_work: bool = False,
) -> dict[str, float]:
    """Each unit's use over the kernel's elapsed time (0..1).

    FP32: achieved FLOP/s over peak; for a kernel whose executed instructions are mostly FP arithmetic
    (``fp_heavy``), the FMA pipe's elapsed-cycle use when larger (it also counts the FMA pipe's issue slots that
    a FLOP count does not show, e.g. on GPUs where an FFMA warp instruction occupies the pipe two cycles). The FMA
    pipe alone stands in when the report has no FLOP counts. For such a kernel the instruction issue over elapsed
    cycles (``issue``) is the FP32 pipe's roof as well: the issue slots carry the math.

    Integer (``int``): the busier of the ALU pipe and the FMA-heavy pipe (IMAD; the whole FMA pipe before sm_80),
    only when the integer instructions are the algorithm's work (``int_is_work``, see :func:`int_is_work`).
    """
    u = roof.utilization
    out: dict[str, float] = {}
    for level in MEMORY_UNITS:
        if level in u:
            out[level] = u[level]
    if roof.tensor_path is not None and "flops_tensor" in u and roof.flops.get("tensor"):
        # the report names its tensor data paths: judge against the fastest path for the input type (an HMMA
        # kernel whose pipe is busy sits below the HGMMA roof of the same GPU)
        out["tensor"] = u["flops_tensor"]
    else:
        tensor = [u[x] for x in ("tensor_pipe", "flops_tensor") if x in u]
        if tensor:
            out["tensor"] = max(tensor)
    fp32 = u.get("flops_fp32")
    if "fma_pipe" in u and (fp32 is None or fp_heavy):
        fp32 = max(fp32 or 0.0, u["fma_pipe"])
    if fp_heavy and issue is not None and fp32 is not None:
        # Most issue slots carry FP math: the SMs' instruction issue is the FP32 pipe's feed, its roof too.
        fp32 = max(fp32, issue)
    if fp32 is not None:
        out["fp32"] = fp32
    if "xu_pipe" in u and xu_is_math:
        out["xu"] = u["xu_pipe"]
    if int_is_work:
        pipes = [
            u[x] for x in ("alu_pipe", "fmaheavy_pipe" if "fmaheavy_pipe" in u else "fma_pipe") if x in u
        ]
        if pipes:
            out["int"] = max(pipes)
    fp64 = [u[x] for x in ("fp64_pipe", "flops_fp64") if x in u]
    if fp64:
        out["fp64"] = max(fp64)
    if "compute" in u:
        out["issue"] = u["compute"]
    return out


def _facts(k: KernelLaunch, duration_ns: float | None, label: str) -> _Facts:
    roof = roofline(k)
    sass = analyze_sass(k.sass)
    flow = dataflow(k.sass)
    f = _Facts(
        k=k,
        roof=roof,
        sass=sass,
        flow=flow,
        duration_ns=duration_ns,
        duration_label=label,
        util=_units(roof, **_unit_flags(k, sass, flow)),
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
    fix_unit: str | None = None
    """The unit the fix moves the work to (``"tensor"``), for the floor of the predicted duration."""


def kernel_floor_ns(k: KernelLaunch, fix_unit: str | None = None, fraction: float = 1.0) -> float | None:
    """The shortest duration (ns) physics allows this kernel's work, or None when the report cannot say.

    The larger of: the bytes that must cross DRAM over the DRAM peak, and each precision's FLOPs over the peak
    of the unit that would run them (the tensor path for FP32 work when ``fix_unit == "tensor"``). The bytes
    that must move are the fewer of the DRAM bytes moved and the bytes the executed global instructions asked
    for (ncu's ideal sectors x 32 B): a fix of the access pattern can bring DRAM traffic down to the requested
    bytes, not below; data the caches already serve need not cross DRAM at all.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={
    ...     "gpu__time_duration.sum": Metric(1000.0), "dram__bytes_read.sum": Metric(3.0e6),
    ...     "dram__bytes.sum.peak_sustained": Metric(1500.0), "dram__cycles_elapsed.avg.per_second": Metric(2.0e9)})
    >>> kernel_floor_ns(k)
    1000.0

    ``fraction`` < 1 gives the shortest *reachable* duration: the bytes and FLOPs at that fraction of their peaks
    (a target for a fix is set at the healthy roof, HEALTHY_FRACTION_OF_PEAK, never at 100% of a peak no code
    reaches). When the fix keeps the instruction (``fix_unit`` None), matrix (and FP64) work stays on its pipe:
    it needs at least the pipe's measured busy time at 100% (``d x`` the pipe's elapsed utilisation), whatever the
    peak of a faster instruction (an mma.sync kernel never reaches the HGMMA peak by launching more blocks).
    """
    roof = roofline(k)
    d = k.value(DURATION)
    floors: list[float] = []
    moved = dram_bytes(k)
    peak_bw = roof.peak_bytes_per_s.get("dram")
    if moved is None and d and peak_bw and "dram" in roof.utilization:
        moved = roof.utilization["dram"] * peak_bw * d * 1e-9
    ideal = k.value(L2_THEORETICAL_SECTORS_IDEAL)
    if moved is not None and ideal is not None:
        moved = min(moved, ideal * th.SECTOR_BYTES)
    if moved is not None and peak_bw:
        floors.append(moved / (peak_bw * fraction) * 1e9)
    if d:
        for prec, rate in roof.flops.items():
            unit = "tensor" if (prec == "fp32" and fix_unit == "tensor") else prec
            peak = roof.peak_flops.get(unit)
            if peak:
                floors.append(rate * d * 1e-9 / (peak * fraction) * 1e9)
        if fix_unit is None:
            for pipe in ("tensor_pipe", "fp64_pipe"):
                if pipe in roof.utilization:
                    floors.append(d * roof.utilization[pipe])
    return max(floors) if floors else None


def _time_expectation(f: _Facts, savings: float, fix_unit: str | None = None) -> Expectation | None:
    """Duration down by ``savings``, never below the reachable floor (:func:`kernel_floor_ns` at the healthy
    fraction of each peak) for the unit the fix uses; None when that leaves no gain to predict."""
    d = f.v(DURATION)
    if d is None:
        return None
    target = d * (1.0 - savings)
    floor = kernel_floor_ns(f.k, fix_unit, th.HEALTHY_FRACTION_OF_PEAK)
    if floor is not None:
        target = max(target, min(d, floor))
    if round(target, 0) >= round(d, 0):
        return None
    return Expectation(
        metric=DURATION,
        direction=Direction.DOWN,
        target=round(target, 0),
        unit="ns",
        value_now=round(d, 0),
        label=f"kernel duration ({UNDER_NCU})",
    )


def _scale_to_limiter(f: _Facts, unit_util: float | None, stalls: tuple[str, ...] = ()) -> float:
    """How much of a unit's waste shows in the kernel's time.

    A unit at its roof (>= the healthy fraction) sets the pace: its waste is time, in proportion to how
    busy it is next to the busiest unit. Below that, the kernel waits rather than streams, and the waste
    costs the share of warp stall cycles spent on that unit (``stalls``: the reasons it causes), when the
    report has the stall breakdown.
    """
    if unit_util is None:  # the report does not say how busy the unit is: the waste share is an upper bound
        by_util, unit_util = 1.0, 0.0
    else:
        by_util = 1.0 if f.u_max <= 0 else max(0.0, min(1.0, unit_util / f.u_max))
    if not stalls or unit_util >= th.HEALTHY_FRACTION_OF_PEAK:
        return by_util
    reasons = stall_reasons(f.k)
    total = sum(reasons.values())
    if total <= 0:
        return by_util
    return min(by_util, sum(reasons.get(r, 0.0) for r in stalls) / total)


def _global_ideal(f: _Facts, which: str, spr: float | None) -> tuple[float, str]:
    """Ideal sectors per request of the global ``which`` ("loads"/"stores") and the formula it came from.

    ncu's SourceCounters hold, per executed instruction, the sectors it moved and the sectors it would need with
    coalesced addresses for its real width and active lanes: their ratio over the executed loads (or stores)
    scales the measured sectors per request to the ideal. Without them, the executed access width (per-PC
    ``inst_executed``-weighted; the static listing when not collected) times the active lanes gives it.
    """
    key = "load" if which == "loads" else "store"
    actual, ideal = f.flow.sectors.get(key), f.flow.sectors.get(f"{key}_ideal")
    if spr is not None and actual and ideal is not None:
        return max(1.0, spr * ideal / actual), (
            f"ncu's ideal sectors of the executed {which} ({int(ideal)} of {int(actual)} sectors moved)"
        )
    width = f.sass.global_load_bytes_per_thread if which == "loads" else f.sass.global_store_bytes_per_thread
    if which == "loads" and not f.sass.weighted and f.sass.global_load_max_bytes:
        width = (
            f.sass.global_load_max_bytes
        )  # a listing without executed counts: the widest load, conservatively
    w = width if width is not None else 4.0
    active = f.v(THREADS_PER_INST_PRED_ON) or f.v(THREADS_PER_INST) or float(th.WARP_SIZE)
    lanes = min(float(th.WARP_SIZE), max(1.0, active))
    ideal_spr = max(1.0, w * lanes / th.SECTOR_BYTES)
    src = "executed" if f.sass.weighted else "widest listed" if not f.sass.empty else "assumed (no SASS)"
    return ideal_spr, f"{w:.3g} B ({src} width) x {lanes:.3g} active lanes / {th.SECTOR_BYTES} B sectors"


def _dependent_excess_share(f: _Facts) -> float | None:
    """Share of the excess global sectors that data-dependent loads cause (per-PC counts), else of the
    executed global loads that are data-dependent; None without SASS."""
    sec = f.flow.sectors
    if "load" in sec and "load_ideal" in sec:
        total = (sec["load"] - sec["load_ideal"]) + (sec.get("store", 0.0) - sec.get("store_ideal", 0.0))
        dep = sec.get("dependent", 0.0) - sec.get("dependent_ideal", 0.0)
        return max(0.0, dep) / total if total > 0 else 0.0
    if f.flow.global_loads:
        return f.flow.dependent_load_share
    return None


def _uncoalesced(f: _Facts) -> _Mech | None:
    """Excess global sectors per request: lanes of a warp touch more 32-byte sectors than their bytes need.

    Physics: a warp's access moves whole 32 B sectors; ``width x lanes / 32`` is the minimum per request. The
    waste share (1 - ideal/actual sectors, ncu's own per-instruction ideal when the report has it) costs time
    in proportion to how much the busiest memory level is the limiter. When the excess comes from loads whose
    addresses are computed from loaded data (:func:`_dependent_excess_share`), the scatter is the data's: the
    waste still makes the traffic useless (so the unit is not "healthy"), but re-indexing cannot remove it and
    the rule saves nothing; the resource diagnosis explains it as latency.
    """
    k = f.k
    ld_s, ld_r, st_s, st_r = (k.value(n) for n in (GLD_SECTORS, GLD_REQUESTS, GST_SECTORS, GST_REQUESTS))
    if (ld_r is None or ld_s is None) and (st_r is None or st_s is None):
        return _from_ncu_rule(f, "UncoalescedGlobalAccess") or _l1_wavefront_excess(f)
    spr_ld, spr_st = _ratio(ld_s, ld_r), _ratio(st_s, st_r)
    (ideal_ld, why_ld), (ideal_st, why_st) = (
        _global_ideal(f, "loads", spr_ld),
        _global_ideal(f, "stores", spr_st),
    )
    ncu_waste = metric_value(k, "derived:global_excess_sector_share")
    waste = _excess_share((ld_s, ld_r, ideal_ld), (st_s, st_r, ideal_st), None, None)
    if ncu_waste is not None:
        waste = ncu_waste
    if waste is None or waste < 1.0 - 1.0 / th.COALESCING_TOLERANCE:
        return None
    worst_ld = spr_ld is not None and spr_ld > ideal_ld * th.COALESCING_TOLERANCE
    worst_st = spr_st is not None and spr_st > ideal_st * th.COALESCING_TOLERANCE
    if not (worst_ld or worst_st):
        return None
    mem_unit, mem_util = f.mem_max()
    dependent = _dependent_excess_share(f)
    data_dependent = dependent is not None and dependent >= th.DEPENDENT_LOAD_SHARE
    known = any(u in f.util for u in MEMORY_UNITS)
    savings = (
        0.0 if data_dependent else waste * _scale_to_limiter(f, mem_util if known else None, GLOBAL_STALLS)
    )
    which = (
        "loads"
        if (worst_ld and (not worst_st or (spr_ld or 0) / ideal_ld >= (spr_st or 0) / ideal_st))
        else "stores"
    )
    spr, idl, why = (spr_ld, ideal_ld, why_ld) if which == "loads" else (spr_st, ideal_st, why_st)
    spr_r, idl_r, waste_pct = round(spr or 0.0, 2), round(idl, 2), round(100 * waste, 1)
    op = "load" if which == "loads" else "store"
    ev = [
        Evidence(
            name=f"global {which}: sectors per request",
            value=spr_r,
            unit="sectors/request",
            reference=f"ideal {idl_r:g}: {why}",
            reference_value=idl_r,
            metric=f"derived:global_{op}_sectors_per_request",
        ),
        Evidence(
            name="global sectors that carry no requested data",
            value=waste_pct,
            unit="%",
            reference="0% when every warp reads contiguous, aligned addresses",
            metric="derived:global_excess_sector_share"
            if ncu_waste is not None
            else f"{GLD_SECTORS}, {GST_SECTORS}",
        ),
        Evidence(
            name=f"{UNIT_WORDS[mem_unit]} used",
            value=round(100 * mem_util, 1),
            unit="% of peak",
            reference="the waste is paid in the busiest memory level",
            metric=_unit_metric(f, mem_unit),
        ),
    ]
    exp = [
        Expectation(
            metric=f"derived:global_{op}_sectors_per_request",
            direction=Direction.DOWN,
            target=round(idl, 1),
            unit="sectors/request",
            value_now=spr_r,
            label=f"global {op} sectors per request",
        )
    ]
    t = _time_expectation(f, savings)
    if t and not data_dependent:
        exp.append(t)
    return _Mech(
        bottleneck=B.UNCOALESCED_GLOBAL_ACCESS,
        savings=savings,
        headline=(
            f"Uncoalesced global {which}: {spr_r:g} sectors per request against an ideal {idl_r:g}, "
            f"so {waste_pct:g}% of the global memory traffic carries no requested data."
        ),
        evidence=ev,
        mechanism=_uncoalesced_words(f, op),
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


_GLOBAL_OPS = {"load": ("LDG", "LD"), "store": ("STG", "ST")}


def _worst_global_access(f: _Facts, op: str) -> tuple[str, float, float, int, float] | None:
    """The executed global ``op`` ("load"/"store") instruction with the most sectors beyond its ideal, as
    (opcode, sectors per request, ideal sectors per request, bytes per lane, active lanes), from the per-PC
    source counters; None without them."""
    best: tuple[float, str, float, float, int, float] | None = None
    for s in f.k.sass:
        if s.mnemonic not in _GLOBAL_OPS[op]:
            continue
        n = s.counters.get("inst_executed") or s.counters.get("sass__inst_executed")
        actual = s.counters.get("memory_l2_theoretical_sectors_global")
        ideal = s.counters.get("memory_l2_theoretical_sectors_global_ideal")
        if not n or actual is None or ideal is None or actual <= ideal:
            continue
        lanes = s.counters.get("thread_inst_executed")
        active = min(float(th.WARP_SIZE), float(lanes) / float(n)) if lanes else float(th.WARP_SIZE)
        cand = (
            float(actual - ideal),
            s.opcode,
            float(actual) / float(n),
            float(ideal) / float(n),
            access_bytes(s.opcode),
            active,
        )
        if best is None or cand[0] > best[0]:
            best = cand
    return best[1:] if best is not None else None


def _uncoalesced_words(f: _Facts, op: str) -> str:
    """Why the warp's accesses touch too many sectors, with the lanes' distance only where the counters give it.

    A warp whose lanes sit a uniform stride ``S`` bytes apart (``S`` >= the access width ``w``) spans ``lanes x S``
    bytes, so it touches about ``lanes x S / 32`` sectors: the measured sectors per request of the worst executed
    instruction give ``S = sectors x 32 / lanes``; once each lane has a sector of its own (sectors = lanes) the
    distance is only known to be >= 32 bytes. Without per-instruction counters no distance is stated.
    """
    tail = "so the memory system moves whole 32-byte sectors for a few useful bytes each."
    worst = _worst_global_access(f, op)
    if worst is None:
        return (
            f"Neighbouring lanes of a warp do not {op} consecutive addresses, so each warp-wide {op} touches more "
            f"32-byte sectors than its bytes need, {tail}"
        )
    opcode, spr, ideal, width, lanes = worst
    where = f"{opcode} moves {spr:.3g} sectors per request against an ideal {ideal:.3g}"
    if spr >= 0.9 * lanes:
        return (
            f"Each lane of a warp {op}s from a 32-byte sector of its own ({where}): neighbouring lanes' addresses "
            f"are 32 bytes or more apart where {width} bytes would be contiguous, {tail}"
        )
    stride = spr * th.SECTOR_BYTES / max(1.0, lanes)
    return (
        f"Neighbouring lanes of a warp {op} addresses about {stride:.0f} bytes apart instead of {width} ({where}, "
        f"what a uniform stride of that size gives), {tail}"
    )


def _l1_wavefront_excess(f: _Facts) -> _Mech | None:
    """Basic-set reports (SpeedOfLight without the memory tables): the L1 data pipe's wavefronts against its LSU
    requests, both as a percentage of a 1-per-cycle-per-SM peak, give wavefronts per request; a coalesced,
    conflict-free 4-byte warp access needs one (8-byte two, 16-byte four). With no shared-memory instruction in
    the SASS the excess is global memory's (uncoalesced); estimated, at lower confidence."""
    wpr = metric_value(f.k, "derived:l1_wavefronts_per_lsu_request")
    if wpr is None or f.sass.empty or f.sass.shared_loads + f.sass.shared_stores > 0:
        return None
    # Without executed counts the listing's mean width would count a cold scalar remainder loop as much as the
    # vector loop: the widest listed load is the conservative ideal for an estimate.
    width = (f.sass.global_load_bytes_per_thread if f.sass.weighted else f.sass.global_load_max_bytes) or 4.0
    ideal = max(1.0, width * th.WARP_SIZE / (th.SHARED_BANKS * th.SHARED_BANK_BYTES))
    if wpr <= ideal * th.COALESCING_TOLERANCE:
        return None
    waste = 1.0 - ideal / wpr
    # the scattered sectors cross L1, L2 and DRAM alike: the waste is paid in the busiest memory level
    mem_unit, mem_util = f.mem_max()
    savings = waste * _scale_to_limiter(f, mem_util, GLOBAL_STALLS)
    wpr_r = round(wpr, 2)
    ev = [
        Evidence(
            name="L1 wavefronts per LSU request",
            value=wpr_r,
            unit="wavefronts/request",
            reference=f"ideal {ideal:g} = {width:.3g} B x {th.WARP_SIZE} lanes / 128 B per wavefront ("
            + ("executed" if f.sass.weighted else "widest listed")
            + " load width); no shared-memory instructions in the SASS, so the wavefronts are global memory's",
            reference_value=ideal,
            metric="derived:l1_wavefronts_per_lsu_request",
        ),
        Evidence(
            name=f"{UNIT_WORDS[mem_unit]} used",
            value=round(100 * mem_util, 1),
            unit="% of peak",
            reference="the waste is paid in the busiest memory level",
            metric=_unit_metric(f, mem_unit),
        ),
    ]
    exp = [
        Expectation(
            metric="derived:l1_wavefronts_per_lsu_request",
            direction=Direction.DOWN,
            target=round(ideal, 1),
            unit="wavefronts/request",
            value_now=wpr_r,
            label="L1 wavefronts per LSU request",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.UNCOALESCED_GLOBAL_ACCESS,
        savings=savings,
        headline=(
            f"Uncoalesced global access (estimated): {wpr_r:g} L1 wavefronts per memory request against an ideal "
            f"{ideal:g}; {UNIT_WORDS[mem_unit]} is at {_pc(mem_util)}% of its peak moving sectors nobody asked for."
        ),
        evidence=ev,
        mechanism=(
            "Neighbouring lanes of a warp access addresses far apart, so each warp-wide access is split into many "
            "L1 wavefronts (one per group of sectors) instead of one per 128 bytes."
        ),
        fix=(
            "Make consecutive threads (threadIdx.x) access consecutive addresses: swap the index roles (the thread "
            "index should move along the contiguous dimension), or stage the tile through shared memory."
        ),
        expect=exp,
        confidence=0.5,
        would_raise="the memory tables (--section MemoryWorkloadAnalysis_Tables) for the sectors per request",
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
            metric=_unit_metric(f, unit),
        ),
    ]
    t = _time_expectation(f, savings)
    if bott is B.UNCOALESCED_GLOBAL_ACCESS:
        head = (
            f"Uncoalesced global access: {_pc(waste)}% of the global memory sectors carry no requested data"
        )
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
        head = f"Shared-memory bank conflicts: {_pc(waste)}% of the shared-memory wavefronts are replays"
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
        headline=head + f", and {UNIT_WORDS[unit]} is the busiest unit ({_pc(f.util[unit])}% of peak).",
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
    """Shared-memory wavefronts per request above the access width's ideal: lanes of a warp hit the same bank.

    Physics: 32 banks x 4 B serve 128 B per wavefront, so a conflict-free warp access of ``w`` bytes per lane
    needs ``w x 32 / 128`` wavefronts. ncu's per-instruction ideal wavefronts (LDSM and matrix-operand reads
    included) override that when the report has them. Shared atomics (ATOMS, a histogram's ``atomicAdd`` on a
    ``__shared__`` array) are served the same way: a warp's 32 four-byte updates of different words in the same
    bank take one wavefront per word, so random bins replay each ATOMS several times. The replays cost time in
    proportion to the L1/shared pipe's share of the kernel's limit.
    """
    k = f.k
    wf_ld, wf_st, wf_at = k.value(SLD_WAVEFRONTS), k.value(SST_WAVEFRONTS), k.value(SATOM_WAVEFRONTS)
    rq_ld, rq_st, rq_at = _shared_requests(k, "ld"), _shared_requests(k, "st"), _shared_requests(k, "atom")
    if (wf_ld is None or not rq_ld) and (wf_st is None or not rq_st) and (wf_at is None or not rq_at):
        return _from_ncu_rule(f, "UncoalescedSharedAccess") or _from_ncu_rule(f, "SharedMemoryConflicts")

    def ideal(width: float | None) -> float:
        w = width if width is not None else 4.0
        return max(1.0, w * th.WARP_SIZE / (th.SHARED_BANKS * th.SHARED_BANK_BYTES))

    i_ld, i_st = ideal(f.sass.shared_load_bytes_per_thread), ideal(f.sass.shared_store_bytes_per_thread)
    # like by like: with per-instruction counters, the loads' ideal is ncu's ideal wavefronts of the shared load
    # instructions (LDS, LDSM: an ldmatrix.x4 needs 4) over those instructions, not a width average
    pc_ld_ideal = sum(
        float(sl.counters.get(SHARED_WAVEFRONTS_IDEAL) or 0.0)
        for sl in k.sass
        if sl.mnemonic in ("LDS", "LDSM")
    )
    if pc_ld_ideal > 0 and rq_ld:
        i_ld = max(1.0, pc_ld_ideal / rq_ld)
    # 32-bit atomics (atomicAdd on int/unsigned/float): one wavefront per warp when conflict-free
    i_at = ideal(None)
    # ncu's SourceCounters count the ideal wavefronts per instruction (width, active lanes, LDSM and
    # matrix-operand reads included): when they match the actual ones there is no conflict to fix.
    ncu_actual, ncu_ideal = k.value(SHARED_WAVEFRONTS), k.value(SHARED_WAVEFRONTS_IDEAL)
    if ncu_actual is None and not wf_at:
        # the per-instruction counters (SourceCounters) hold each shared access's wavefronts and its ideal for its
        # real width and kind (LDSM included): their sums are ncu's own verdict on conflicts
        per_pc = [
            (float(a), float(i))
            for sl in k.sass
            if (a := sl.counters.get(SHARED_WAVEFRONTS)) is not None
            and (i := sl.counters.get(SHARED_WAVEFRONTS_IDEAL)) is not None
        ]
        if per_pc and sum(a for a, _ in per_pc) > 0:
            ncu_actual, ncu_ideal = sum(a for a, _ in per_pc), sum(i for _, i in per_pc)
    waste = _excess_share(
        (wf_ld, rq_ld, i_ld),
        (wf_st, rq_st, i_st),
        ncu_actual,
        ncu_ideal,
        (wf_at, rq_at, i_at),
    )
    if waste is None:
        return None
    kinds = {
        "loads": (_ratio(wf_ld, rq_ld), i_ld, f.sass.shared_load_bytes_per_thread, SLD_CONFLICTS),
        "stores": (_ratio(wf_st, rq_st), i_st, f.sass.shared_store_bytes_per_thread, SST_CONFLICTS),
        "atomics": (_ratio(wf_at, rq_at), i_at, 4.0, SATOM_CONFLICTS),
    }
    bad = {
        kind: wpr / idl
        for kind, (wpr, idl, _, _) in kinds.items()
        if wpr is not None and wpr > idl * th.COALESCING_TOLERANCE
    }
    if not bad:
        return None
    total_wf = k.value(L1_WAVEFRONTS)
    actual = (wf_ld or 0.0) + (wf_st or 0.0) + (wf_at or 0.0)
    shared_share = min(1.0, actual / total_wf) if total_wf else 1.0
    l1 = f.util.get("l1", 0.0)
    savings = waste * shared_share * _scale_to_limiter(f, f.util.get("l1"), SHARED_STALLS)
    which = max(bad, key=lambda kind: bad[kind])  # the kind furthest from its ideal (loads first on a tie)
    op = {"loads": "load", "stores": "store", "atomics": "atomic"}[which]
    wpr, idl, width, conflicts_metric = kinds[which]
    wpr_r, waste_pct = round(wpr or 0.0, 2), round(100 * waste, 1)
    conflicts = k.value(conflicts_metric)
    per_request = f"derived:shared_{op}_wavefronts_per_request"
    ev = [
        Evidence(
            name=f"shared-memory {which}: wavefronts per request",
            value=wpr_r,
            unit="wavefronts/request",
            reference=(
                f"ideal {idl:g} = {width or 4:.3g} B x {th.WARP_SIZE} lanes / ({th.SHARED_BANKS} banks x "
                f"{th.SHARED_BANK_BYTES} B per wavefront)"
            ),
            reference_value=idl,
            metric=per_request,
        ),
        Evidence(
            name="L1/shared-memory bandwidth used",
            value=round(100 * l1, 1),
            unit="% of peak",
            reference="conflicts cost time when the L1/shared pipe is the busiest unit",
            metric=_unit_metric(f, "l1"),
        ),
    ]
    if conflicts is not None:
        ev.append(
            Evidence(
                name=f"bank conflicts on shared {which}",
                value=int(conflicts),
                unit="",
                reference="0 for conflict-free access",
                metric=conflicts_metric,
            )
        )
    exp = [
        Expectation(
            metric=per_request,
            direction=Direction.DOWN,
            target=round(idl, 1),
            unit="wavefronts/request",
            value_now=wpr_r,
            label=f"shared-memory wavefronts per {op}",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    if which == "atomics":
        mechanism = (
            "The lanes of a warp update different 4-byte words that share a bank (random bins of a shared-memory "
            "histogram: 256 bins in 32 banks), so each shared atomic (ATOMS) is replayed once per conflicting word; "
            "lanes that hit the same word cost no replay on sm_70+, different words of one bank do."
        )
        fix = (
            "Privatise the bins per lane so a warp's updates fall in different banks: one sub-histogram per lane "
            "laid out h[bin * 32 + lane] (or per warp with a padded stride), summed at the end of the block; or "
            "accumulate in registers/warp-aggregate (__match_any_sync) before the shared atomic."
        )
    else:
        mechanism = (
            "Several lanes of a warp address different 4-byte words in the same bank (typically a column of a "
            "row-major tile whose row length is a multiple of 32 words), so the access is split into one "
            "wavefront per conflicting word."
        )
        fix = (
            "Pad the shared array by one word per row (e.g. tile[32][33]) or swizzle the index (XOR the column "
            "with the row), so the lanes of a warp fall in different banks."
        )
    return _Mech(
        bottleneck=B.SHARED_BANK_CONFLICTS,
        savings=savings,
        headline=(
            f"Shared-memory bank conflicts: {wpr_r:g} wavefronts per shared {op} against an ideal {idl:g}; "
            f"{waste_pct:g}% of the shared-memory wavefronts are replays."
        ),
        evidence=ev,
        mechanism=mechanism,
        fix=fix,
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
    share = metric_value(k, "derived:local_sector_share")
    share_metric = "derived:local_sector_share"
    if share is None:
        if not f.sass.weighted:
            return None
        share = f.sass.share(f.sass.local_loads + f.sass.local_stores)
        share_metric = "sass:local_instructions"
    _, mem_util = f.mem_max()
    known = any(u in f.util for u in MEMORY_UNITS)
    savings = share * _scale_to_limiter(f, mem_util if known else None, GLOBAL_STALLS)
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
            metric="derived:local_memory_sectors",
        ),
        Evidence(
            name="share of L1 traffic that is local memory"
            if share_metric == "derived:local_sector_share"
            else "share of executed instructions that are LDL/STL",
            value=round(100 * share, 1),
            unit="%",
            reference="0%",
            metric=share_metric,
        ),
    ]
    if has_sass_local:
        ev.append(
            Evidence(
                name="LDL/STL instructions in the SASS" + (" (executed)" if f.sass.weighted else " (listed)"),
                value=int(f.sass.local_loads + f.sass.local_stores),
                unit="instructions",
                reference=f"kind: {kind}" + (f"; at {lines}" if lines else ""),
                metric="sass:local_instructions",
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
            f"Local-memory traffic from {what}: {round(100 * share, 1):g}% of the "
            + ("L1 traffic" if share_metric == "derived:local_sector_share" else "executed instructions")
            + " is LDL/STL"
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
    # Serialized on a few addresses (one hot L2 slice): reducing first removes the wait the atomics cause, i.e.
    # the share of the warps' stall cycles spent on the memory queue (drain, lg_throttle, membar, scoreboard)
    # when the report has the stall breakdown. Without the per-slice numbers, only the atomics' share of the
    # requests is attributed.
    total = sum(stalls.values())
    queue = sum(stalls.get(r, 0.0) for r in ATOMIC_STALLS) / total if total > 0 else 1.0
    savings = gap * queue if hot else gap * share
    ev = [
        Evidence(
            name="global atomic requests",
            value=int(atom_count),
            unit="requests",
            reference=f"{100 * share:.0f}% of global memory requests",
            metric="derived:global_atomic_requests" if atom is not None else "sass:global_atomics",
        ),
        (
            Evidence(
                name="busiest L2 slice's atomic unit",
                value=round(slice_max or 0.0, 2),
                unit="% of peak",
                reference=f"average slice {slice_avg:.2g}%: the atomics pile onto one slice (few addresses)",
                reference_value=round(slice_avg or 0.0, 3),
                metric=f"{ATOMIC_SLICE_MAX}, {ATOMIC_SLICE_AVG}",
            )
            if hot
            else Evidence(
                name="busiest unit",
                value=round(100 * f.u_max, 1),
                unit="% of peak",
                reference=f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}%: the atomics serialize instead of using bandwidth",
                metric=_unit_metric(f, f.limiter()[0]),
            )
        ),
    ]
    if top:
        ev.append(
            _stall_evidence(k, top, stalls[top], "lg_throttle/drain/membar point at a congested memory queue")
        )
    # The fix reduces before the atomic. A warp-wide RED/ATOM is already one request at L1; what falls is the
    # number of updates the L2 applies: one per lane today, one per warp (lane 0) after a warp reduction, one per
    # block after a block reduction when they are already one per warp.
    exp: list[Expectation] = []
    l2_ops = _sum_present(k, L2_ATOMIC_REQUESTS)
    if l2_ops is not None and atom is not None and l2_ops > 0:
        # one update per lane (l2_ops ~ 32 x requests): every lane of a warp updates one address, and a warp
        # reduction leaves one; fewer per request means several addresses per warp (bins), whose count after the
        # reduction the counters do not give: no count is predicted then
        per_warp = l2_ops >= 0.9 * th.WARP_SIZE * atom
        target = atom if per_warp else float(k.blocks or 0) if l2_ops <= atom * 1.1 else 0.0
        if 0 < target < l2_ops:
            exp.append(
                Expectation(
                    metric="derived:l2_atomic_requests",
                    direction=Direction.DOWN,
                    target=round(target, 0),
                    unit="requests",
                    value_now=int(l2_ops),
                    label="atomic updates applied by L2 ("
                    + (
                        "one per warp after a warp reduction"
                        if per_warp
                        else "one per block after a block reduction"
                    )
                    + ")",
                )
            )
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.ATOMIC_CONTENTION,
        savings=savings,
        headline=(
            f"Atomic contention: {100 * share:.0f}% of global memory requests are atomics and "
            + (
                f"they pile onto one L2 slice (its atomic unit at {slice_max:.3g}% of peak, the average slice at "
                f"{slice_avg:.2g}%), so they serialize on a few addresses."
                if hot and slice_max is not None and slice_avg is not None
                else f"no unit is above {_pc(f.u_max)}% of its peak, so the atomics serialize on a few addresses."
            )
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
    """Lanes masked off in executed warp instructions: the SM issues an instruction for fewer useful lanes.

    Physics: divergent paths run one after another, each in the warp's issue slots. That costs time when issue is
    what limits the kernel; with the schedulers issuing below LATENCY_BOUND_FRACTION of their slots (the SMs wait on
    memory), the masked lanes occupy slots that were free anyway.
    """
    r = f.v(THREADS_PER_INST)
    if r is None or r >= th.DIVERGENCE_ACTIVE_THREADS:
        return None
    issue_util = f.util.get("issue")
    if issue_util is not None and issue_util < th.LATENCY_BOUND_FRACTION:
        return None
    tpb = f.k.threads_per_block
    partial = tpb is not None and tpb % th.WARP_SIZE != 0 and tpb < th.WARP_SIZE
    efficiency = r / th.WARP_SIZE
    issue = f.util.get("issue", 0.0)
    savings = (1.0 - efficiency) * _scale_to_limiter(f, f.util.get("issue"))
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
        inflates=("issue", "fp32", "fp64", "tensor", "xu"),
        waste=1.0 - efficiency,
    )


def _grid(f: _Facts) -> _Mech | None:
    k = f.k
    sms = f.sm_count
    blocks = k.blocks
    waves = f.v(WAVES)
    active = sm_active_fraction(k)
    if blocks is None or sms is None:
        return None
    if blocks < sms or (waves is not None and waves < th.TAIL_MIN_WAVES):
        frac = active if active is not None else min(1.0, blocks / sms)
        if frac >= th.SMALL_GRID_ACTIVE_SM_FRACTION:
            return None
        # Spread over every SM, the same work would take the busy time over the busy fraction a full grid reaches.
        savings = 1.0 - frac / th.SMALL_GRID_TARGET_SM_BUSY
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
                    metric="derived:sm_active_pct",
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
                metric="derived:sm_active_pct",
                direction=Direction.UP,
                target=round(100 * th.SMALL_GRID_TARGET_SM_BUSY, 1),
                unit="%",
                value_now=round(100 * active, 1) if active is not None else None,
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
                f"Grid too small: {blocks} blocks for {sms} SMs ({round(waves, 3):g} waves); "
                + (
                    f"the SMs are busy {_pc(frac)}% of the time."
                    if active is not None
                    else f"at most {_pc(frac)}% of the SMs have a block."
                )
                if waves is not None
                else f"Grid too small: {blocks} blocks for {sms} SMs."
            ),
            evidence=ev,
            mechanism=_small_grid_words(f, blocks, sms, frac),
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
        # Only the last wave idles: the loss is that wave's empty share over all (whole) waves, if waves took
        # equal time. Blocks of unequal length fill the tail, so the loss can be no larger than the SMs' measured
        # idle time (1 - busy fraction) when the report has it.
        savings = 1.0 - eff
        if active is not None:
            savings = min(savings, 1.0 - active)
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
        if active is not None:
            ev.append(
                Evidence(
                    name="SM busy fraction",
                    value=round(100 * active, 1),
                    unit="%",
                    reference="the tail can cost at most the SMs' idle time",
                    metric="derived:sm_active_pct",
                )
            )
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


_PER_SM_PIPES = {
    "tensor_pipe": "tensor (MMA) pipe",
    "fma_pipe": "FMA pipe",
    "fp64_pipe": "FP64 pipe",
    "xu_pipe": "special-function (XU) pipe",
    "alu_pipe": "integer (ALU) pipe",
    "l1": "L1/shared memory",
}


def _small_grid_words(f: _Facts, blocks: int, sms: int, frac: float) -> str:
    """What the SMs that have a block do, from the counters: a pipe at its roof on their active cycles (the work
    is fine where it runs; the idle SMs are the loss), or warps waiting on memory (too few warps per busy SM to
    hide its latency), else only the idle SMs."""
    used = min(blocks, sms)
    head = (
        f"Each block runs on one SM: {blocks} blocks keep at most {used} of the {sms} SMs busy, and the SMs are "
        f"busy {_pc(frac)}% of the elapsed time, so the other SMs idle for the whole run."
    )
    if frac <= 0:
        return head
    per_sm = {p: f.roof.utilization[p] / frac for p in _PER_SM_PIPES if p in f.roof.utilization}
    top = max(per_sm, key=lambda p: per_sm[p]) if per_sm else None
    reasons = stall_reasons(f.k)
    total = sum(reasons.values())
    top_stall = next(iter(reasons), None)
    if top is not None and per_sm[top] >= th.HEALTHY_FRACTION_OF_PEAK:
        return head + (
            f" Where a block runs, the {_PER_SM_PIPES[top]} is busy {_pc(min(1.0, per_sm[top]))}% of the SM's active "
            "cycles: the work itself runs at that pipe's rate, and spreading it over every SM is the whole gain."
        )
    if top_stall in GLOBAL_STALLS and total > 0 and reasons[top_stall] / total >= th.DOMINANT_SHARE:
        return head + (
            f" The busy SMs' warps mostly wait on global memory ({top_stall}: {100 * reasons[top_stall] / total:.0f}% "
            f"of the stall cycles), and {max(1, round(f.k.threads_per_block or 0) // th.WARP_SIZE)} warps per block "
            "are too few to hide that latency."
        )
    return head


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
        ev.append(_stall_evidence(k, top, stalls[top], STALL_WORDS.get(top, (top, ""))[0]))
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
            f"Occupancy limited by {limiter}: {round(theo, 1):g}% of the warp slots can be filled, and with latency exposed "
            f"(issue active {_pc(issue)}%) more warps would hide it."
            if issue is not None
            else f"Occupancy limited by {limiter}: {round(theo, 1):g}% of the warp slots can be filled."
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


@dataclass(frozen=True, slots=True)
class _MatrixWork:
    """What makes FP32 work a matrix product (see :func:`_matrix_structure`)."""

    ffma_share: float
    from_loads: float
    reuse: float | None
    global_bytes_per_fma: float | None
    load_bytes_per_fma: float | None
    intensity: float | None
    """FP32 FLOP per DRAM byte."""
    ridge: float | None
    because: str


def _matrix_structure(f: _Facts) -> _MatrixWork | None:
    """FP32 FMA work with the data flow of a matrix product, or None.

    Physics: a matrix product's k-loop multiplies two *loaded* operands per FMA (``A[i][k] * B[k][j]``) and
    reuses each loaded operand for many outputs: in registers (an outer product), through a shared-memory tile,
    or through the caches (FLOP per DRAM byte past the FP32 ridge). A Horner polynomial, a transcendental
    expansion or a dependent FMA chain multiplies computed values or constants (no loaded multiplicand pair);
    a dot product or mat-vec loads fresh operands for each FMA (no reuse). When the report has the roofline,
    the intensity must also be past the FP32 ridge: below it the kernel is memory-bound at its floor and faster
    math would not show.
    """
    s, flow = f.sass, f.flow
    if s.empty or s.has_mma or s.ffma <= 0 or flow.fma <= 0:
        return None
    if (
        s.share(s.ffma) < th.MATRIX_LIKE_FFMA_SHARE
        or s.share(s.special_function) > th.MATRIX_LIKE_MAX_SFU_SHARE
    ):
        return None
    if flow.fma_from_loads_share < th.MATRIX_LOADED_OPERAND_SHARE:
        return None
    fp32, dram_bps = f.roof.flops.get("fp32"), f.roof.bytes_per_s.get("dram")
    intensity = fp32 / dram_bps if fp32 is not None and dram_bps else None
    ridge = f.roof.ridge("fp32", "dram")
    reuse, gbpf = flow.operand_reuse, flow.per_fma(flow.global_load_bytes)
    if intensity is not None and intensity < (ridge or th.MATRIX_LIKE_MIN_INTENSITY):
        return None
    if reuse is not None and reuse >= th.MATRIX_REUSE_MIN:
        because = f"each loaded operand feeds {reuse:.2g} FMAs from registers"
    elif gbpf is not None and gbpf <= th.MATRIX_MAX_GLOBAL_BYTES_PER_FMA and flow.shared_load_bytes > 0:
        because = f"operands staged in shared memory ({gbpf:.2g} global bytes per FMA)"
    elif intensity is not None:
        because = f"{intensity:.3g} FP32 FLOP per DRAM byte, past the ridge: reuse through the caches"
    else:
        return None
    return _MatrixWork(
        ffma_share=s.share(s.ffma),
        from_loads=flow.fma_from_loads_share,
        reuse=reuse,
        global_bytes_per_fma=gbpf,
        load_bytes_per_fma=flow.per_fma(flow.load_bytes),
        intensity=intensity,
        ridge=ridge,
        because=because,
    )


def _fma_balance_bytes(f: _Facts) -> float:
    """Bytes per thread an FMA may load from L1/shared before L1 saturates ahead of the FMA pipe:
    L1 bytes per cycle per SM over thread FFMAs per cycle per SM (1 B on GA10x/Hopper, 2 B on A100/V100)."""
    peak = f.v("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
    sms = f.sm_count
    lanes = peak / sms if peak and sms else th.FP32_LANES_PER_SM
    return th.L1_BYTES_PER_CYCLE_PER_SM / lanes


def _matrix_evidence(f: _Facts, mw: _MatrixWork) -> list[Evidence]:
    s = f.sass
    ev = [
        Evidence(
            name="FMAs whose two multiplicands are loaded operands",
            value=round(100 * mw.from_loads, 1),
            unit="%",
            reference=f"k-loop of a matrix product; {mw.because}; no HMMA/HGMMA/IMMA in the SASS",
            metric="sass:fma_from_loads_share",
        ),
        Evidence(
            name="FFMA share of executed instructions" if s.weighted else "FFMA share of the SASS listing",
            value=round(100 * mw.ffma_share, 1),
            unit="%",
            reference=f">= {100 * th.MATRIX_LIKE_FFMA_SHARE:.0f}%: the FP32 pipes carry the work",
            metric="sass:ffma_share",
        ),
    ]
    if mw.intensity is not None:
        needed = mw.ridge or th.MATRIX_LIKE_MIN_INTENSITY
        ev.append(
            Evidence(
                name="arithmetic intensity (FP32 FLOP per DRAM byte)",
                value=round(mw.intensity, 1),
                unit="FLOP/byte",
                reference=f"past the FP32 ridge point ({needed:.3g} FLOP/byte)"
                if mw.ridge
                else f"above {needed:g} FLOP/byte",
                reference_value=round(needed, 1),
                metric="derived:fp32_flop_per_dram_byte",
            )
        )
    return ev


def _register_tiling_advice(f: _Facts, mw: _MatrixWork) -> str:
    balance = _fma_balance_bytes(f)
    now = mw.load_bytes_per_fma
    if now is None or now <= balance * th.COALESCING_TOLERANCE:
        return ""
    return (
        f"Compute a register tile per thread (e.g. 8x8 outputs from a 128x128x8 block tile, float4 shared loads): "
        f"today each FMA loads {now:.2g} bytes from shared/global memory, and the L1 keeps up with the FMA pipe "
        f"only below {balance:.2g} B per FMA ({th.L1_BYTES_PER_CYCLE_PER_SM:.0f} B/cycle/SM over the FMA lanes)."
    )


def _no_tensor_cores(f: _Facts) -> _Mech | None:
    """Matrix work (:func:`_matrix_structure`) on the FP32 pipes of a GPU that has tensor cores.

    The saving is bounded by what the tensor path can reach: the FP32 FLOPs at the tensor peak (x the healthy
    fraction) and the DRAM bytes at the DRAM peak. When the FP32 pipe itself is at its roof the FLOPs are the
    ones the math needs in FP32: the kernel is healthy and this is advice (TF32/BF16 if the precision allows).
    """
    if f.tensor_cores is False:
        return None
    mw = _matrix_structure(f)
    if mw is None or (mw.intensity is None and f.tensor_cores is None):
        return None
    fp32 = f.roof.flops.get("fp32")
    tensor_peak = f.roof.peak_flops.get("tensor")
    dram = f.util.get("dram", 0.0)
    grounded = bool(fp32 and tensor_peak)
    if fp32 and tensor_peak:
        # the same FLOPs at the tensor-pipe target (TENSOR_FIX_TARGET_FRACTION of the tensor peak, the value the
        # tensor-pipe expectation names) and the same DRAM bytes at the DRAM roof: the longer of the two is the time
        savings = max(
            0.0,
            1.0
            - max(fp32 / (tensor_peak * th.TENSOR_FIX_TARGET_FRACTION), dram / th.HEALTHY_FRACTION_OF_PEAK),
        )
    else:
        # No tensor ceiling in the report: only the FP32 pipes' share of the time is known to move.
        savings = f.util.get("fp32", 0.0)
    savings = min(savings, 1.0)
    ev = _matrix_evidence(f, mw)
    pipe_hit = _first(f.k, TENSOR_PIPE_METRICS)
    exp = [
        Expectation(
            metric=pipe_hit[0] if pipe_hit else "derived:tensor_utilization",
            direction=Direction.UP,
            target=round(100 * th.TENSOR_FIX_TARGET_FRACTION, 1),
            unit="%",
            value_now=round(pipe_hit[1], 1) if pipe_hit else metric_value(f.k, "derived:tensor_utilization"),
            label="tensor pipe utilisation",
        )
    ]
    t = _time_expectation(f, savings, fix_unit="tensor") if grounded else None
    if t:
        exp.append(t)
    tiling = _register_tiling_advice(f, mw)
    tensor_words = (
        "use the tensor cores: call cuBLAS/cuBLASLt or CUTLASS, or write the inner product with WMMA/mma.sync "
        "(wgmma on Hopper) in TF32 (FP32 inputs, 10-bit mantissa) or BF16/FP16 inputs with FP32 accumulation, "
        "if that precision is acceptable."
    )
    at_fp32_roof = f.util.get("fp32", 0.0) >= th.HEALTHY_FRACTION_OF_PEAK
    # L1/shared ahead of the FP32 pipe is the reload story: say it only when the counters show it (L1 the busiest
    # unit, above the FP32 pipe), and show L1 in the evidence in place of the instruction mix
    l1, fp32_u = f.util.get("l1"), f.util.get("fp32", 0.0)
    l1_first = l1 is not None and l1 > fp32_u and f.limiter()[0] == "l1"
    reload = ""
    if l1_first and l1 is not None:
        reload = (
            f" The L1/shared pipe saturates first ({_pc(l1)}% of peak against the FP32 pipe's {_pc(fp32_u)}%): "
            + (
                "each FMA reloads its operands from shared memory"
                if f.flow.shared_load_bytes > 0
                else "each FMA reloads its operands from global memory through L1"
            )
            + (
                f", {mw.load_bytes_per_fma:.2g} bytes per FMA against the {_fma_balance_bytes(f):.2g} B the L1 "
                "delivers per FMA lane and cycle."
                if mw.load_bytes_per_fma is not None
                else "."
            )
        )
        ev[1] = Evidence(
            name=f"{UNIT_WORDS['l1']} used",
            value=round(100 * l1, 1),
            unit="% of peak",
            reference=f"the busiest unit; the FP32 pipe is at {_pc(fp32_u)}%: the FMAs wait on their operand loads",
            metric=_unit_metric(f, "l1"),
        )
    return _Mech(
        bottleneck=B.NO_TENSOR_CORES,
        savings=savings,
        headline=(
            f"Matrix work on the FP32 pipes: {round(100 * mw.from_loads, 1):g}% of the FMAs multiply two loaded "
            f"operands ({mw.because}) and no instruction is a tensor-core MMA"
            + (
                f"; the L1/shared pipe, at {_pc(l1)}% of peak, is the busiest unit."
                if l1_first and l1
                else "."
            )
        ),
        evidence=ev,
        mechanism=(
            "The kernel multiplies tiles of matrices with scalar fused multiply-adds; the tensor cores, which do the "
            "same products many times faster, stay idle." + reload
        ),
        fix=(tiling + " Then " + tensor_words) if tiling else _cap(tensor_words),
        expect=exp,
        confidence=(0.8 if f.sass.weighted else 0.65) - (0 if grounded else 0.15),
        would_raise=("" if f.sass.weighted else "SourceCounters (executed instruction mix)")
        or ("" if grounded else "the roofline sections (the tensor ceiling the fix would move to)"),
        inflates=("fp32", "l1", "issue"),
        waste=0.0,
        blocks_healthy=not at_fp32_roof,
        fix_unit="tensor",
    )


def _operand_reload(f: _Facts) -> _Mech | None:
    """A matrix product whose FMAs reload their operands from L1/shared (or L2) faster than the unit can serve.

    Physics: the L1 serves L1_BYTES_PER_CYCLE_PER_SM; the FMA pipe consumes (FFMA lanes) per cycle. A thread
    tile of TM x TN outputs loads (TM + TN) operands per TM x TN FMAs; when the loaded bytes per FMA exceed
    L1 bytes/cycle over FMA lanes/cycle, L1/shared saturates before the math: the traffic at the saturated
    unit is reloads, not work the algorithm needs, so the unit being at its roof is a fix, never healthy.
    On a GPU with tensor cores :func:`_no_tensor_cores` usually wins the ranking (the tensor path removes the
    reloads too); on one without, this is the lever.
    """
    mw = _matrix_structure(f)
    if mw is None or mw.load_bytes_per_fma is None:
        return None
    unit, util = max(
        ((u, f.util[u]) for u in ("l1", "l2") if u in f.util), key=lambda x: x[1], default=(None, 0.0)
    )
    if unit is None or util < th.LATENCY_BOUND_FRACTION or util < f.u_max - 0.05:
        return None
    balance = _fma_balance_bytes(f)
    ratio = mw.load_bytes_per_fma
    if ratio <= balance * th.COALESCING_TOLERANCE:
        return None
    others = max((v for u, v in f.util.items() if u not in (unit, "issue")), default=0.0)
    after = max(util * balance / ratio, others)
    savings = max(0.0, 1.0 - after / max(f.u_max, 1e-9))
    ev = [
        Evidence(
            name="bytes loaded per FMA (shared + global, per thread)",
            value=round(ratio, 2),
            unit="B/FMA",
            reference=f"the L1 keeps up with the FMA pipe below {balance:.2g} B/FMA "
            f"({th.L1_BYTES_PER_CYCLE_PER_SM:.0f} B/cycle/SM over the FMA lanes)",
            reference_value=round(balance, 2),
            metric="sass:load_bytes_per_fma",
        ),
        Evidence(
            name=f"{UNIT_WORDS[unit]} used",
            value=round(100 * util, 1),
            unit="% of peak",
            reference="saturated by operand reloads, not by the work the product needs",
            metric=_unit_metric(f, unit),
        ),
        *_matrix_evidence(f, mw)[:1],
    ]
    exp = [
        Expectation(
            metric=_unit_metric(f, unit),
            direction=Direction.DOWN,
            value_now=round(100 * util, 1),
            unit="%",
            label=f"{UNIT_WORDS[unit]} used",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    no_tc = f.tensor_cores is False
    return _Mech(
        bottleneck=RESOURCE_OF_UNIT[unit],
        savings=savings,
        headline=(
            f"{_cap(UNIT_WORDS[unit])} saturated by operand reloads: a matrix product loads {round(ratio, 2):g} bytes "
            f"per FMA, above the {balance:.2g} B the L1 can serve per FMA."
        ),
        evidence=ev,
        mechanism=(
            "Each FMA of the matrix product fetches its operands from shared memory or L1/L2 again instead of reusing "
            "them from registers, so the memory pipe carries many times the bytes the product needs and saturates "
            "before the FP32 pipes."
        ),
        fix=_register_tiling_advice(f, mw)
        + (" This GPU has no tensor cores: register tiling is the lever." if no_tc else ""),
        expect=exp,
        confidence=0.75 if f.sass.weighted else 0.6,
        would_raise="" if f.sass.weighted else "SourceCounters (executed instruction mix)",
        inflates=(unit,),
        waste=max(0.0, 1.0 - balance / ratio),
        blocks_healthy=True,
    )


L2_READ_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
DRAM_READ_SECTORS = "dram__sectors_read.sum"


def _l2_rereads(f: _Facts) -> _Mech | None:
    """L2 at its roof while carrying each byte many times: re-reads that reuse in shared memory or registers removes.

    The excess sectors of uncoalesced accesses (ncu's theoretical minus ideal sectors) are left out: they are
    :func:`_uncoalesced`'s waste, not data read twice.

    Physics: ncu flushes the caches before each replay pass (``--cache-control all``, the default), so every byte
    the kernel reads crosses DRAM into L2 once; the L2 sectors the SMs read over the DRAM sectors read is the number
    of times each byte is fetched from L2 (L2_REREAD_FACTOR). The compulsory share of the L2 traffic is the inverse;
    the rest is the waste, and with it gone the kernel runs at the pace of its next unit.
    """
    l2 = f.util.get("l2")
    reads, dram_reads = f.v(L2_READ_SECTORS), f.v(DRAM_READ_SECTORS)
    excess = (f.v(L2_THEORETICAL_SECTORS) or 0.0) - (f.v(L2_THEORETICAL_SECTORS_IDEAL) or 0.0)
    if reads is not None and excess > 0:
        reads = max(
            0.0, reads - excess
        )  # sectors of uncoalesced accesses are that rule's waste, not re-reads
    if dram_reads is None:
        dram_rd_bytes = f.v("dram__bytes_read.sum")
        dram_reads = dram_rd_bytes / th.SECTOR_BYTES if dram_rd_bytes is not None else None
    if l2 is None or reads is None or not dram_reads or l2 < th.LATENCY_BOUND_FRACTION or l2 < f.u_max - 0.05:
        return None
    factor = reads / dram_reads
    if factor < th.L2_REREAD_FACTOR:
        return None
    waste = 1.0 - 1.0 / factor
    others = max((v for u, v in f.util.items() if u not in ("l2", "issue")), default=0.0)
    after = max(l2 * (1.0 - waste), others)
    savings = max(0.0, 1.0 - after / max(f.u_max, 1e-9))
    factor_r = round(factor, 1)
    ev = [
        Evidence(
            name="L2 cache bandwidth used",
            value=round(100 * l2, 1),
            unit="% of peak",
            reference="the busiest unit",
            metric=_unit_metric(f, "l2"),
        ),
        Evidence(
            name="L2 sectors read by the SMs",
            value=int(reads),
            unit="sectors",
            reference=f"{factor_r:g}x the {int(dram_reads)} sectors read from DRAM: each byte is fetched {factor_r:g} "
            "times from L2 (caches are flushed before the kernel, so DRAM delivers each byte once)",
            reference_value=int(dram_reads),
            metric=L2_READ_SECTORS,
        ),
    ]
    exp = [
        Expectation(
            metric=L2_READ_SECTORS,
            direction=Direction.DOWN,
            target=round(dram_reads * th.L2_REREAD_FACTOR, 0),
            unit="sectors",
            value_now=reads,
            label="L2 sectors read by the SMs",
        )
    ]
    t = _time_expectation(f, savings)
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.L2_BANDWIDTH_BOUND,
        savings=savings,
        headline=(
            f"L2 saturated by re-reads: L2 at {_pc(l2)}% of peak while each byte is fetched {factor_r:g} times from "
            "it; the traffic is mostly data the kernel already read."
        ),
        evidence=ev,
        mechanism=(
            "Blocks (or iterations) read the same data again from L2 instead of keeping it on chip: small tiles "
            "reload their operands for every step, or neighbouring elements are re-fetched by many threads."
        ),
        fix=(
            "Reuse on chip: larger tiles staged in shared memory (each operand loaded once per block and used by "
            "all its threads), keep reused values in registers, or swizzle/cluster the blocks that share data."
        ),
        expect=exp,
        confidence=0.7,
        would_raise="",
        inflates=("l2",),
        waste=waste,
        blocks_healthy=True,
    )


def _path_metric(path: str) -> str:
    return "sm__ops_path_tensor_" + ("" if path.startswith("src_") else "op_") + path


def _slow_tensor_path(f: _Facts) -> _Mech | None:
    """Tensor work at the ceiling of a slower data path than the GPU offers for the same input type.

    Physics: each tensor data path has its own ceiling (ncu's ``sm__ops_path_tensor_<path>`` peaks); on sm_90 the
    ``mma.sync`` path (HMMA) peaks at 2/3 of warpgroup MMA (HGMMA) for BF16/FP16. A kernel at >= the healthy
    fraction of its path's ceiling is at *that* roof, and the GPU's roof for its data is the fastest path's.
    """
    path, achieved, best = f.roof.tensor_path, f.roof.flops.get("tensor"), f.roof.peak_flops.get("tensor")
    used_peak = f.roof.tensor_path_peaks.get(path or "")
    if not path or not achieved or not best or not used_peak or best <= used_peak * th.COALESCING_TOLERANCE:
        return None
    used = achieved / used_peak
    if used < th.HEALTHY_FRACTION_OF_PEAK:
        return None  # not even at its own path's ceiling: the gap is elsewhere
    best_path = max(
        (p for p, v in f.roof.tensor_path_peaks.items() if v == best), key=len, default="the fastest path"
    )
    savings = max(0.0, 1.0 - achieved / (best * th.HEALTHY_FRACTION_OF_PEAK))
    tf = round(achieved / 1e12, 1)
    ev = [
        Evidence(
            name=f"tensor FLOP/s on the {path} path",
            value=tf,
            unit="TFLOP/s",
            reference=f"{round(100 * used, 1):g}% of that path's ceiling ({used_peak / 1e12:.0f} TFLOP/s)",
            reference_value=round(used_peak / 1e12, 1),
            metric=f"{_path_metric(path)}.sum.per_second",
        ),
        Evidence(
            name="fastest tensor path for the same inputs",
            value=round(best / 1e12, 1),
            unit="TFLOP/s",
            reference=f"{best_path}: the roof of this GPU for the kernel's data type",
            metric=f"{_path_metric(best_path)}.sum.peak_sustained_elapsed.per_second",
        ),
    ]
    exp = [
        Expectation(
            metric="derived:tensor_utilization",
            direction=Direction.UP,
            target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
            unit="%",
            value_now=metric_value(f.k, "derived:tensor_utilization"),
            label="tensor FLOP/s as % of the fastest path's peak",
        )
    ]
    t = _time_expectation(f, savings, fix_unit="tensor")
    if t:
        exp.append(t)
    return _Mech(
        bottleneck=B.TENSOR_CORE_BOUND,
        savings=savings,
        headline=(
            f"Tensor cores at the ceiling of a slower path: {tf:g} TFLOP/s on {path} is {round(100 * used, 1):g}% of "
            f"that path's peak but {_pc(achieved / best)}% of the {best / 1e12:.0f} TFLOP/s that {best_path} reaches "
            "on this GPU."
        ),
        evidence=ev,
        mechanism=(
            "The matrix instructions the kernel issues (e.g. mma.sync, SASS HMMA, on Hopper) have a lower peak than "
            "the GPU's fastest tensor path for the same inputs (warpgroup MMA, SASS HGMMA, fed by TMA)."
        ),
        fix=(
            "Use the fastest MMA the GPU has for this data type: on sm_90, warpgroup MMA (wgmma / HGMMA) with TMA "
            "loads, through CUTLASS 3.x, cuBLAS(Lt), or Triton's Hopper matmul, instead of mma.sync/WMMA."
        ),
        expect=exp,
        confidence=0.75,
        would_raise="",
        inflates=("tensor",),
        waste=0.0,
        blocks_healthy=True,
        fix_unit="tensor",
    )


def _instruction_bound(f: _Facts) -> _Mech | None:
    """The SM issues near its peak while no memory level or FP pipe is busy: the instructions are overhead.

    Only when instructions that are not arithmetic on the data dominate issue: a kernel whose executed instructions
    are mostly FMAs (a cuBLAS SGEMM issues ~80% FFMA) spends its issue slots on the math it must do, and so does
    one whose integer instructions compute on loaded values (a hash's multiplies, shifts and xors of a loaded key);
    that is compute-bound, not overhead. Overhead is what the algorithm does not need: index and address math
    from the thread index, loop control, conversions.
    """
    issue = f.util.get("issue")
    if issue is None or issue < th.LATENCY_BOUND_FRACTION:
        return None
    work = f.work_share()
    if work is not None and work >= th.FP_HEAVY_SHARE:
        return None
    useful_unit = max((u for u in USEFUL_UNITS if u in f.util), key=lambda u: f.util[u], default=None)
    useful = f.util[useful_unit] if useful_unit else 0.0
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
            metric=COMPUTE_SOL,
        ),
        Evidence(
            name=f"busiest useful unit: {UNIT_WORDS[useful_unit]}" if useful_unit else "busiest useful unit",
            value=round(100 * useful, 1),
            unit="% of peak",
            reference="what the instructions achieve (memory levels, FP and tensor pipes)",
            metric=_unit_metric(f, useful_unit) if useful_unit else COMPUTE_SOL,
        ),
    ]
    if work is not None:
        ev.append(
            Evidence(
                name=(
                    "FP arithmetic share of executed instructions"
                    if f.sass.empty
                    else "arithmetic on the data (FP, and integer on loaded values) in the SASS listing"
                    if not f.sass.weighted
                    else "arithmetic on the data (FP, and integer on loaded values) among executed instructions"
                ),
                value=round(100 * work, 1),
                unit="%",
                reference=f"below {100 * th.FP_HEAVY_SHARE:.0f}%: most issue slots carry index math, loop control "
                "and conversions, not the computation",
                reference_value=round(100 * th.FP_HEAVY_SHARE, 1),
                metric="derived:fp_inst_share" if f.sass.empty else "derived:work_inst_share",
            )
        )
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
            f"Instruction bound: the SM issues at {_pc(issue)}% of its peak while the memory and FP pipes reach "
            f"only {_pc(useful)}%: most instructions are overhead (index math, conversions, special functions)."
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
    _operand_reload,
    _l2_rereads,
    _uncoalesced,
    _bank_conflicts,
    _local_memory,
    _atomics,
    _divergence,
    _grid,
    _occupancy,
    _no_tensor_cores,
    _slow_tensor_path,
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
            + _ncu_command(f.k, "--set full", cooperative=f.cooperative, source=f.source)
        )
    if len(secs) > 2:
        return _ncu_command(f.k, "--set full", cooperative=f.cooperative, source=f.source)
    return _ncu_command(
        f.k, " ".join(f"--section {s}" for s in secs), cooperative=f.cooperative, source=f.source
    )


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
                metric="derived:fp32_tflops",
            )
        )
    if f.roof.bytes_per_s.get("dram") is not None:
        ev.append(
            Evidence(
                name="DRAM throughput",
                value=round(f.roof.bytes_per_s["dram"] / 1e9, 1),
                unit="GB/s",
                reference="no peak in the report to compare with",
                metric=_bandwidth_metric(f, "dram"),
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
        next_step=f"Profile it with the full set: `{_ncu_command(k, cooperative=f.cooperative, source=f.source)}`",
    )


def _healthy(
    f: _Facts, unit: str, util: float, stated_threshold: float, advice: Sequence[_Mech] = ()
) -> Diagnosis:
    """The limiting unit does the work the algorithm needs at >= the healthy fraction of its elapsed-cycle peak,
    with a grid that fills the GPU: to go faster, do less work. ``advice``: mechanisms that change the work
    itself (matrix work that could move to the tensor cores) become findings."""
    k = f.k
    bott = RESOURCE_OF_UNIT[unit]
    if unit == "l2" and f.l2_carries_dram_traffic():
        return _healthy_dram_stream(f, util, stated_threshold)
    ev: list[Evidence] = [
        Evidence(
            name=f"{UNIT_WORDS[unit]} used",
            value=round(100 * util, 1),
            unit="% of peak",
            reference=f">= {100 * stated_threshold:.0f}% of peak over the kernel's elapsed cycles counts as at the "
            "roof (ncu: > 80% is high throughput)",
            reference_value=round(100 * stated_threshold, 1),
            metric=_unit_metric(f, unit),
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
                metric=_bandwidth_metric(f, unit),
            )
        )
    elif unit == "tensor" and f.roof.flops.get("tensor") and f.roof.peak_flops.get("tensor"):
        ev.append(
            Evidence(
                name="achieved tensor-core throughput",
                value=round(f.roof.flops["tensor"] / 1e12, 1),
                unit="TFLOP/s",
                reference=f"peak {f.roof.peak_flops['tensor'] / 1e12:.0f} TFLOP/s for this input type (from the report)",
                reference_value=round(f.roof.peak_flops["tensor"] / 1e12, 1),
                metric="derived:tensor_tflops",
            )
        )
    elif unit == "fp32" and f.roof.flops.get("fp32") and f.roof.peak_flops.get("fp32"):
        ev.append(
            Evidence(
                name="achieved FP32 throughput",
                value=round(f.roof.flops["fp32"] / 1e12, 1),
                unit="TFLOP/s",
                reference=f"peak {f.roof.peak_flops['fp32'] / 1e12:.0f} TFLOP/s (from the report)",
                reference_value=round(f.roof.peak_flops["fp32"] / 1e12, 1),
                metric="derived:fp32_tflops",
            )
        )
    d = f.duration_evidence()
    if d:
        ev.append(d)
    if unit == "dram":
        expect = [
            Expectation(
                metric="derived:dram_bytes",
                direction=Direction.DOWN,
                value_now=dram_bytes(k),
                unit="byte",
                label="DRAM bytes moved",
            )
        ]
    elif unit == "l2" and f.v("lts__t_sectors.sum") is not None:
        expect = [
            Expectation(
                metric="lts__t_sectors.sum",
                direction=Direction.DOWN,
                value_now=f.v("lts__t_sectors.sum"),
                unit="sector",
                label="L2 sectors accessed",
            )
        ]
    else:
        expect = [
            Expectation(
                metric=DURATION,
                direction=Direction.DOWN,
                value_now=f.v(DURATION),
                unit="ns",
                label=f"kernel duration ({UNDER_NCU}), once less work is done",
            )
        ]
    fix = {
        "dram": "Move fewer bytes: fuse this kernel with its producer or consumer, use narrower types (bf16/fp8, int8 indices), "
        "or skip work that is not needed; the kernel itself is already at the DRAM roof.",
        "l2": "Move fewer bytes through L2: fuse kernels, reuse data from shared memory or registers, use narrower types.",
        "l1": "Issue fewer L1/shared accesses per result (register tiling, wider accesses) or do less work; the pipe is at its peak.",
        "tensor": "Do fewer FLOPs: skip or batch work, lower precision (FP8 with scaling) where accuracy allows, or fuse "
        "the epilogue; the tensor cores are already at their roof.",
        "fp32": "Do fewer FLOPs; the FP32 pipes are at their roof."
        + (
            " Matrix work could move to the tensor cores (TF32 or BF16 inputs) if the precision allows."
            if advice
            else ""
        ),
        "fp64": "Do fewer FP64 FLOPs (mixed precision where accuracy allows); the FP64 pipes are at their roof.",
        "xu": "Evaluate fewer special functions: hoist them out of loops, use identities (one sincos instead of sin "
        "and cos, exp2 with a folded scale), or polynomial approximations on the FMA pipe where accuracy allows; "
        "the special-function pipe is at its roof.",
        "int": "Do fewer integer operations per result: 32-bit arithmetic where the values fit (a 64-bit multiply is "
        "several IMADs, a 64-bit shift two funnel shifts), fewer rounds or a cheaper mixing function where the "
        "algorithm allows; the integer pipes are at their roof.",
    }.get(unit, "Do less work.")
    return Diagnosis(
        subject=_subject(k),
        bottleneck=bott,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: {UNIT_WORDS[unit]} at {_pc(util)}% of peak, at its roofline "
            f"(>= {100 * stated_threshold:.0f}%); to go faster, do less work."
        ),
        evidence=tuple(ev[:3]),
        mechanism=(
            f"The kernel keeps its limiting unit ({UNIT_WORDS[unit]}) busy with useful work over its whole run, on a "
            "grid that fills the GPU; no mechanism (coalescing, bank conflicts, spills, divergence, grid size) "
            "explains a gap, so other counters (occupancy, registers, conflicts) are not problems here."
        ),
        fix=fix,
        expect=tuple(expect),
        confidence=Confidence(
            value=0.85, would_raise="a timeline capture to confirm the kernel's share of the step"
        ),
        next_step="Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets.",
        findings=tuple(
            Finding(bottleneck=m.bottleneck, headline=m.headline, evidence=tuple(m.evidence[:3]), share=None)
            for m in advice
        ),
    )


def _bandwidth_metric(f: _Facts, unit: str) -> str:
    """The ``<counter>.sum.per_second`` the roofline read for a memory level (the first the report holds)."""
    from kprof.diagnose.roofline import _BYTE_COUNTERS

    for counter, _ in _BYTE_COUNTERS[unit]:
        if f.v(f"{counter}.sum.per_second") is not None:
            return f"{counter}.sum.per_second"
        if f.v(f"{counter}.sum") is not None:
            return f"{counter}.sum / {DURATION}"
    return f"derived:{unit}_utilization"


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
            metric=_unit_metric(f, "l2"),
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
            metric=_unit_metric(f, "dram"),
        ),
    ]
    return Diagnosis(
        subject=_subject(k),
        bottleneck=B.DRAM_BANDWIDTH_BOUND,
        verdict=Verdict.HEALTHY,
        headline=(
            f"Healthy: a DRAM stream at its roof: DRAM at {_pc(dram)}% of peak and the L2 that carries it at "
            f"{_pc(l2)}% (>= {100 * stated_threshold:.0f}%); to go faster, move fewer bytes."
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
                metric="derived:dram_bytes",
                direction=Direction.DOWN,
                value_now=dram_bytes(k),
                unit="byte",
                label="DRAM bytes moved",
            ),
        ),
        confidence=Confidence(
            value=0.75, would_raise="a timeline capture to confirm the kernel's share of the step"
        ),
        next_step="Look at the timeline: the remaining lever is how often this kernel runs and how much data it gets.",
    )


def _unit_metric(f: _Facts, unit: str) -> str:
    """The metric a unit's utilisation was read from (the one the report holds), or its documented derived name."""
    if unit in MEMORY_UNITS:
        hit = _first(f.k, SOL_LEVEL_METRICS[unit])
        if hit is not None:
            return hit[0]
        return f"derived:{unit}_utilization" if unit == "l1" else SOL_LEVEL_METRICS[unit][0]
    if unit == "issue":
        return COMPUTE_SOL
    if unit == "xu" and f.v(XU_PIPE_METRICS[0]) is not None:
        return XU_PIPE_METRICS[0]
    return f"derived:{unit}_utilization"


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


def _why_not_healthy(f: _Facts, unit: str, found: Sequence[_Mech]) -> str:
    """Why a unit at >= the healthy fraction is not called healthy (one clause)."""
    if not f.fills_gpu():
        blocks, sms = f.k.blocks, f.sm_count
        grid = f" ({blocks} blocks for {sms} SMs)" if blocks is not None and sms else ""
        return f"the grid does not fill the GPU{grid}"
    wrong = next((m for m in found if m.blocks_healthy), None)
    if wrong is not None:
        return (
            "its work is not the work the algorithm needs: "
            + wrong.headline[:1].lower()
            + wrong.headline[1:].rstrip(".")
        )
    waste = max((m.waste for m in found if unit in m.inflates), default=0.0)
    if waste > 0:
        return f"{_pc(waste)}% of its traffic is waste, so its useful work is below the roof"
    if unit in MEMORY_UNITS and "memory" in f.missing:
        return "whether its traffic is useful (coalesced, conflict-free) cannot be told without the memory tables"
    return "its useful share is below the roof"


_RAW_PIPES = {
    "tensor_pipe": ("tensor pipe", TENSOR_PIPE_METRICS),
    "fma_pipe": ("FMA pipe", FMA_PIPE_METRICS),
    "fmaheavy_pipe": ("FMA-heavy pipe", FMAHEAVY_PIPE_METRICS),
    "fp64_pipe": ("FP64 pipe", FP64_PIPE_METRICS),
    "xu_pipe": ("special-function (XU) pipe", XU_PIPE_METRICS),
    "alu_pipe": ("integer (ALU) pipe", ALU_PIPE_METRICS),
}


def _busiest_any(f: _Facts) -> tuple[str, float, str, str]:
    """The busiest unit over *every* unit the report measures, the pipes included: ``(key, utilisation, words,
    metric)``. :meth:`_Facts.limiter` judges the tensor path against the fastest instruction's peak (an HMMA kernel
    sits below the HGMMA roof) and counts pipes only when their work is the program's; a sentence such as "no unit
    is above X%" must still hold for the tensor pipe's busy cycles. Instruction issue is left out (not a unit).
    Pipes enter only with an ``_elapsed`` metric the report holds (the value quoted is that metric's)."""
    useful = [(u, f.util[u]) for u in UNIT_PRIORITY if u in f.util and u != "issue"]
    if useful:
        u, v = max(useful, key=lambda x: x[1])  # first in priority order among equals
        best = (u, v, UNIT_WORDS[u], _unit_metric(f, u))
    else:
        best = ("issue", 0.0, UNIT_WORDS["issue"], COMPUTE_SOL)
    for key, (words, names) in _RAW_PIPES.items():
        hit = _first(f.k, names)
        if hit is not None and hit[1] / 100.0 > best[1] + 1e-9:
            best = (key, hit[1] / 100.0, words, hit[0])
    return best


def _occupancy_words(f: _Facts) -> str:
    """Achieved against theoretical occupancy, and the block size when it is one or two warps: the warps resident
    to hide each other's latency."""
    ach, theo = f.v(ACHIEVED_OCC), f.v(THEORETICAL_OCC)
    tpb = f.k.threads_per_block or 0
    out = ""
    if ach is not None and theo is not None:
        out = f" Achieved occupancy is {ach:.3g}% against a theoretical {theo:.3g}%"
        if tpb and tpb <= 2 * th.WARP_SIZE:
            out += (
                f": each block is {max(1, tpb // th.WARP_SIZE)} warp of {tpb} threads and retires after a few "
                "instructions, so the SMs spend their time starting and retiring blocks instead of holding warps "
                "whose loads overlap."
                if tpb <= th.WARP_SIZE
                else f": each block is only {tpb // th.WARP_SIZE} warps, so few warps are resident to overlap "
                "their loads."
            )
        elif ach < 0.5 * theo:
            out += ": blocks start and finish unevenly, so fewer warps are resident than the limits allow."
        else:
            out += ", too few warps to hide each other's latency." if theo <= 25 else "."
    return out


def _latency_words(f: _Facts, busiest: tuple[str, float, str, str], stalls: dict[str, float]) -> str:
    """Why a kernel with no saturated unit waits, from its top stall reason and its occupancy."""
    top = next(iter(stalls), None)
    total = sum(stalls.values())
    head = (
        f"No unit is saturated over the elapsed time: the busiest, {busiest[2]}, is at {_pc(busiest[1])}% of its "
        "peak."
    )
    if top is None:
        return head + " Too little independent work is in flight to keep any unit busy." + _occupancy_words(f)
    share = f", {100 * stalls[top] / total:.0f}% of the stall cycles" if total > 0 else ""
    if top in GLOBAL_STALLS:
        return (
            head
            + f" Warps mostly wait on global memory results ({top}{share}): too few loads are in flight per SM to "
            "cover the memory latency (the bandwidth drawn is the bytes in flight over the latency)."
            + _occupancy_words(f)
        )
    second = next((r for r in stalls if r != top), None)
    return (
        head
        + f" Warps mostly stall on {STALL_WORDS.get(top, (top, ''))[0]} ({top}{share})"
        + (f", then {STALL_WORDS.get(second, (second, ''))[0]} ({second})" if second else "")
        + ": each warp's next instruction waits on one before it, and the resident warps are too few to fill "
        "those cycles with independent work." + _occupancy_words(f)
    )


def _dependent_words(f: _Facts) -> tuple[Evidence, str, str] | None:
    """Evidence, mechanism and fix when most global loads are data-dependent (pointer chase, gather, probe)."""
    share = _dependent_excess_share(f)
    if share is None or share < th.DEPENDENT_LOAD_SHARE or f.flow.dependent_global_loads <= 0:
        return None
    loads = f.flow.dependent_load_share
    ev = Evidence(
        name="global loads whose address comes from loaded data",
        value=round(100 * loads, 1),
        unit="%",
        reference="a pointer chase, a gather through an index array or a hash probe: the data decides the addresses",
        metric="sass:dependent_load_share",
    )
    mechanism = (
        f"{_pc(loads)}% of the executed global loads take their address from a value loaded before them, so each "
        "lane touches its own sector by nature and each load waits for the one it depends on: too few loads are "
        "in flight to cover the memory latency. Making consecutive threads read consecutive addresses is not "
        "possible here; the data decides the addresses."
    )
    fix = (
        "Keep more independent loads in flight: more resident warps (occupancy), several independent lookups per "
        "thread interleaved (ILP), prefetch the next index or node before using the current one, or reorder/sort "
        "the data (and the queries) so that neighbouring lanes touch neighbouring addresses."
    )
    return ev, mechanism, fix


def _resource_diagnosis(
    f: _Facts, mechs: list[_Mech], needs: set[str], found: Sequence[_Mech] = ()
) -> Diagnosis:
    """No mechanism explains the gap: the resource (or latency) is the answer, with the stalls as the explanation."""
    k = f.k
    unit, util = f.limiter()
    latency = (
        max(f.util.get("issue", 0.0), f.mem_max()[1], *(f.util.get(u, 0.0) for u in USEFUL_UNITS))
        < th.LATENCY_BOUND_FRACTION
    )
    at_roof = util >= th.HEALTHY_FRACTION_OF_PEAK
    stalls = stall_reasons(k)
    top = next(iter(stalls), None)
    dependent = _dependent_words(f) if (latency or unit in MEMORY_UNITS) else None
    if dependent is not None and not latency:
        # The memory level is busy with the sectors of data-dependent loads (a chase, gather or probe: one
        # sector per lane by nature). Its *useful* work is what counts: below the roof, the kernel waits on
        # loads it cannot issue before the previous one returns; that is latency, whatever the raw utilisation.
        waste = max((m.waste for m in found if unit in m.inflates), default=0.0)
        if util * (1.0 - waste) < th.HEALTHY_FRACTION_OF_PEAK:
            latency = True
    # A memory level below its roof is not what limits the kernel unless its own queue is full (UNIT_THROTTLES):
    # the bandwidth a kernel draws is the bytes it keeps in flight over the memory latency (Little's law), so a
    # level with spare bandwidth while warps wait on its results means too few requests in flight: latency.
    # Naming the level ("L2 bound at 63%, short of the roof") would send the user to reduce traffic that is not
    # the limit. Compute pipes keep their name below the roof: their busy cycles are the work itself, and the gap
    # is how well they are fed.
    below_roof = (
        not latency and not at_roof and unit in MEMORY_UNITS and top not in UNIT_THROTTLES.get(unit, ())
    )
    if below_roof:
        latency = True
    why = _why_not_healthy(f, unit, found) if at_roof and not latency else ""
    busiest = _busiest_any(f)
    plain_latency = latency and not below_roof and dependent is None
    ev: list[Evidence] = [
        Evidence(
            name=f"busiest unit: {busiest[2] if plain_latency else UNIT_WORDS[unit]}",
            value=round(100 * (busiest[1] if plain_latency else util), 1),
            unit="% of peak",
            reference=(
                "busy with the scattered sectors of data-dependent loads, not with work it streams"
                if latency and dependent is not None
                else f"below the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof: not saturated, the kernel waits on "
                "its results"
                if below_roof
                else f"below {100 * th.LATENCY_BOUND_FRACTION:.0f}% everywhere: latency bound (ncu's SOL rule)"
                if latency
                else f"at or above the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof, but {why}"
                if at_roof
                else f"below the {100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% that counts as at the roof"
            ),
            reference_value=round(
                100
                * (th.LATENCY_BOUND_FRACTION if latency and not below_roof else th.HEALTHY_FRACTION_OF_PEAK),
                1,
            ),
            metric=busiest[3] if plain_latency else _unit_metric(f, unit),
        )
    ]
    if dependent is not None:
        ev.append(dependent[0])
    if top:
        ev.append(_stall_evidence(k, top, stalls[top], STALL_WORDS.get(top, (top, ""))[0]))
    d = f.duration_evidence()
    if d:
        ev.append(d)
    missing_cmd = _missing_command(f, needs)
    inconclusive = bool(missing_cmd) and (
        ("memory" in f.missing and unit in MEMORY_UNITS) or (latency and "stalls" in f.missing)
    )
    if latency:
        bott = B.LATENCY_BOUND
        stall_words = STALL_WORDS.get(top, (top, ""))[0] if top else ""
        headline = (
            f"Latency bound by data-dependent loads: the global loads' addresses come from loaded data (a chase, "
            f"gather or probe), so few loads are in flight; {UNIT_WORDS[unit]} at {_pc(util)}% of peak carries "
            "their scattered sectors."
            if dependent is not None
            else f"Latency bound: the busiest unit, {UNIT_WORDS[unit]}, is at {_pc(util)}% of peak, below the "
            f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof"
            + (f", and warps mostly stall {stall_words}." if top else ".")
            if below_roof
            else f"Latency bound: no unit is above {_pc(busiest[1])}% of its peak"
            + (f"; warps mostly stall {stall_words}." if top else ".")
        )
        mechanism = (
            f"{_cap(UNIT_WORDS[unit])} could deliver more than it does: the bandwidth a kernel draws is the bytes it "
            "keeps in flight divided by the memory latency (Little's law), and at "
            f"{_pc(util)}% of peak the unit is not saturated"
            + (f" while warps mostly stall {stall_words}" if top else "")
            + ": too few independent requests are outstanding per warp to cover the latency."
            if below_roof
            else _latency_words(f, busiest, stalls)
        )
        fix = (
            _cap(STALL_WORDS[top][1]) + "."
            if top in STALL_WORDS
            else "Keep more independent work in flight: more resident warps, unrolled independent loads, async copies."
        )
        if dependent is not None:
            mechanism, fix = dependent[1], dependent[2]
        # The fix keeps the work and overlaps it better: the unit that carries the work (the busiest one; DRAM when
        # the L2 only passes a DRAM stream through) rises toward its roof, and the duration falls in proportion.
        # Issue-active is no target: it moves with whatever the fix changes, not with the work.
        work_unit, work_util, work_words, work_metric = busiest
        if work_unit == "l2" and f.l2_carries_dram_traffic():
            work_unit, work_util = "dram", f.util["dram"]
            work_words, work_metric = UNIT_WORDS["dram"], _unit_metric(f, "dram")
        expect = []
        if work_unit != "issue" and 0 < work_util < th.HEALTHY_FRACTION_OF_PEAK:
            expect.append(
                Expectation(
                    metric=work_metric,
                    direction=Direction.UP,
                    target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
                    unit="%",
                    value_now=round(100 * work_util, 1),
                    label=f"{work_words} used",
                )
            )
            t = _time_expectation(f, max(0.0, 1.0 - work_util / th.HEALTHY_FRACTION_OF_PEAK))
            if t:
                expect.append(t)
        else:
            issue_hit = _first(k, ISSUE_ACTIVE)
            expect = [
                Expectation(
                    metric=issue_hit[0] if issue_hit else ISSUE_ACTIVE[0],
                    direction=Direction.UP,
                    target=None,
                    unit="%",
                    value_now=round(issue_hit[1], 1) if issue_hit else None,
                    label="scheduler issue-active",
                )
            ]
        if below_roof:
            # The same bytes at the roof: the level whose bandwidth the stream draws (DRAM when the L2 only passes
            # a DRAM stream through) rises toward the roof, and the duration falls in proportion.
            level = "dram" if unit == "l2" and f.l2_carries_dram_traffic() else unit
            now = f.util.get(level, util)
            expect = [
                Expectation(
                    metric=_unit_metric(f, level),
                    direction=Direction.UP,
                    target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
                    unit="%",
                    value_now=round(100 * now, 1),
                    label=f"{UNIT_WORDS[level]} used",
                )
            ]
            t = _time_expectation(f, max(0.0, 1.0 - now / th.HEALTHY_FRACTION_OF_PEAK))
            if t:
                expect.append(t)
    else:
        bott = RESOURCE_OF_UNIT[unit]
        headline = (
            f"{_cap(UNIT_WORDS[unit])} at {_pc(util)}% of peak, but {why}."
            if at_roof
            else f"{_cap(UNIT_WORDS[unit])} bound at {_pc(util)}% of peak, short of the "
            f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% that counts as at the roof."
        )
        work = f.work_share()
        mechanism = (
            f"{_cap(UNIT_WORDS[unit])} is the busiest unit, but it does not reach its peak and no "
            "single mechanism measured here explains the difference."
            if not at_roof
            else f"{_cap(UNIT_WORDS[unit])} is at its roof over the kernel's elapsed time, but {why}."
        )
        if not at_roof and unit not in MEMORY_UNITS and unit != "issue" and top == "math_pipe_throttle":
            mechanism = (
                f"{_cap(UNIT_WORDS[unit])} is the busiest unit and warps mostly wait for a saturated math pipe "
                "(math_pipe_throttle): the kernel is limited by the arithmetic it issues"
                + (
                    f", and {_pc(work)}% of the executed instructions are arithmetic on the data, the algorithm's "
                    "own work, not index math"
                    if work is not None and work >= th.FP_HEAVY_SHARE
                    else ""
                )
                + f". The pipe is at {_pc(util)}% of its peak, short of the "
                f"{100 * th.HEALTHY_FRACTION_OF_PEAK:.0f}% roof: dependent chains and the split between pipes leave "
                "issue cycles unused."
            )
        fix = {
            "dram": "Move fewer bytes (fusion, narrower types) and keep more loads in flight (128-bit loads, unrolling).",
            "l2": "Improve reuse in shared memory/registers so fewer requests reach L2.",
            "l1": "Use wider shared/global accesses and register tiling so fewer L1 wavefronts are needed.",
            "tensor": "Feed the tensor cores better: larger tiles, deeper async pipelines (TMA/cp.async), fewer epilogue stalls.",
            "fp32": "Raise FMA density: fewer non-FMA instructions per FLOP.",
            "fp64": "Raise FP64 FMA density (DFMA instead of DMUL+DADD).",
            "xu": "Evaluate fewer special functions per result, or move some to polynomial approximations on the FMA pipe.",
            "int": "The integer pipes do the algorithm's own work (integer math on the loaded data): do fewer integer "
            "operations per result (32-bit arithmetic where the values fit: a 64-bit multiply is several IMADs, a "
            "64-bit shift two funnel shifts), and give each thread independent chains (several keys per thread, "
            "interleaved) so both integer pipes issue every cycle.",
            "issue": "Execute fewer instructions per result.",
        }[unit]
        if at_roof and not f.fills_gpu():
            fix = (
                "Give every SM work: launch at least one block per SM (split the work finer, split-K, or a "
                "grid-stride loop sized from the SM count). " + fix
            )
        if dependent is not None:
            mechanism, fix = dependent[1], dependent[2]
        as_pct = unit in MEMORY_UNITS or unit == "issue"
        expect = [
            Expectation(
                metric=_unit_metric(f, unit) if as_pct else DURATION,
                direction=Direction.UP if as_pct and not at_roof else Direction.DOWN,
                target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1) if as_pct and not at_roof else None,
                unit="%" if as_pct else "ns",
                value_now=round(100 * util, 1) if as_pct else f.v(DURATION),
                label=f"{UNIT_WORDS[unit]} used" if as_pct else f"kernel duration ({UNDER_NCU})",
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
            why_missing = "the stall reasons that would say what it waits on were not collected"
        elif at_roof:
            why_missing = (
                "whether that traffic is useful (coalesced, conflict-free) or waste cannot be told: "
                "the memory tables were not collected"
            )
        else:
            why_missing = "the sections that would tell why were not collected"
        head = (
            f"{_cap(UNIT_WORDS[unit])} at {_pc(util)}% of peak; {why_missing}."
            if not latency
            else f"Latency bound (no unit above {_pc(util)}% of peak); {why_missing}."
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
        next_step=(f"`{missing_cmd}`" if missing_cmd else _after_command(k, f.cooperative, f.source)),
        findings=findings,
    )


@localized
def diagnose_launch(
    k: KernelLaunch,
    *,
    duration_ns: float | None = None,
    source_format: str = "ncu-rep",
    cooperative: bool = False,
    source: str | None = None,
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
    source
        The report's path: the suggested commands write the next capture beside it and compare the two.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={"gpu__time_duration.sum": Metric(1000.0, "ns")})
    >>> diagnose_launch(k).verdict.value
    'inconclusive'
    """
    if (damaged := damaged_launch(k)) is not None:  # a value no measurement gives: no verdict
        return damaged
    label = "timeline" if duration_ns is not None else UNDER_NCU
    f = _facts(k, duration_ns if duration_ns is not None else k.value(DURATION), label)
    f.source_format = source_format
    f.cooperative = cooperative
    f.source = source
    found = [m for m in (rule(f) for rule in MECHANISMS) if m is not None]
    if "sol" in f.missing:
        return _partial_report(f, found)
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
    if at_roof and not wrong_roof and f.fills_gpu():
        unit = at_roof[0]
        if not (unit in MEMORY_UNITS and "memory" in f.missing and not _traffic_is_required(f, unit)):
            advice = [m for m in found if m.bottleneck is B.NO_TENSOR_CORES]
            return _healthy(f, unit, f.util[unit], th.HEALTHY_FRACTION_OF_PEAK, advice)
    # The time a fix can win is bounded by the work that stays: the busiest unit's useful share, and
    # the instruction issue that remains once the waste is gone (the kernel still executes its instructions),
    # and by the physical floor of the work (kernel_floor_ns) on the unit the fix uses.
    floor = u_roof
    if "issue" in f.util:
        issue_waste = max((m.waste for m in found if "issue" in m.inflates), default=0.0)
        floor = max(floor, f.util["issue"] * (1.0 - issue_waste))
    gap = max(1e-9, 1.0 - floor)
    for m in found:
        _bound_savings(f, m, None if m.blocks_healthy else gap)
    mechs = sorted((m for m in found if m.savings >= th.MIN_MECHANISM_SAVINGS), key=lambda m: -m.savings)
    unit, util = f.limiter()
    needs = {"memory"} if unit in MEMORY_UNITS else {"instructions"} if unit == "issue" else set()

    if mechs and mechs[0].savings >= th.MIN_PRIMARY_SAVINGS:
        return _mechanism_diagnosis(f, mechs, gap)
    # Below the roof the stall reasons decide between latency and the unit (a memory level is the limit only when
    # its own queue is full): they are needed for every kernel whose busiest memory level is not at its roof.
    wants_stalls = util < th.LATENCY_BOUND_FRACTION or (
        unit in MEMORY_UNITS and util < th.HEALTHY_FRACTION_OF_PEAK
    )
    return _resource_diagnosis(f, mechs, needs | ({"stalls"} if wants_stalls else set()), found)


def _bound_savings(f: _Facts, m: _Mech, gap: float | None) -> None:
    """Clamp a mechanism's saving to the gap it can close and to the physical floor, and restate its duration."""
    d = f.v(DURATION)
    s = m.savings if gap is None else min(m.savings, gap)
    floor = kernel_floor_ns(f.k, m.fix_unit, th.HEALTHY_FRACTION_OF_PEAK) if d else None
    if d and floor is not None:
        s = min(s, max(0.0, 1.0 - floor / d))
    if s != m.savings:
        m.savings = s
        t = _time_expectation(f, s, m.fix_unit)
        kept = [e for e in m.expect if e.metric != DURATION]
        m.expect = kept + ([t] if t is not None and len(kept) < len(m.expect) else [])


def _mechanism_diagnosis(f: _Facts, mechs: list[_Mech], gap: float) -> Diagnosis:
    k = f.k
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
        next_step=_after_command(k, f.cooperative, f.source)
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


def _traffic_is_required(f: _Facts, unit: str) -> bool:
    """Without the memory tables: whether ncu's per-instruction ideal sectors show the global traffic as the
    traffic the instructions asked for (no excess), so a DRAM roof is the work's own."""
    return unit == "dram" and (metric_value(f.k, "derived:global_excess_sector_share") or 1.0) < (
        1.0 - 1.0 / th.COALESCING_TOLERANCE
    )


def _partial_report(f: _Facts, found: list[_Mech]) -> Diagnosis:
    """No SpeedOfLight (``--set basic`` without it, ``--section`` lists, custom ``--metrics``): diagnose from the
    mechanisms the report's counters establish on their own (coalescing, bank conflicts, local memory, grid
    size, divergence), at lower confidence and naming the missing section; inconclusive when none does.

    Without utilisations a mechanism's saving cannot be scaled to the limiter: its waste share is an upper bound,
    and it is said so."""
    usable = [
        m for m in found if m.savings >= th.MIN_PRIMARY_SAVINGS and m.bottleneck is not B.NO_TENSOR_CORES
    ]
    if not usable:
        return _inconclusive_no_sol(f)
    usable.sort(key=lambda m: -m.savings)
    for m in usable:
        _bound_savings(f, m, None)
    top = usable[0]
    k = f.k
    ev = list(top.evidence[:2])
    ev.append(
        Evidence(
            name="compute and memory throughput (SpeedOfLight)",
            value=None,
            unit="% of peak",
            reference="missing from the report: how much of the kernel's time this waste costs is an upper bound",
            metric=f"{COMPUTE_SOL}, {MEMORY_SOL}",
        )
    )
    return Diagnosis(
        subject=_subject(k),
        bottleneck=top.bottleneck,
        verdict=Verdict.FIX,
        headline=top.headline.rstrip(".")
        + " (the report has no SpeedOfLight section: the cost is an upper bound).",
        evidence=tuple(ev),
        mechanism=top.mechanism,
        fix=top.fix,
        expect=tuple(top.expect),
        confidence=Confidence(
            value=min(0.5, top.confidence - 0.25),
            would_raise="the SpeedOfLight section, to weigh the waste against the unit that limits the kernel",
        ),
        next_step=f"Collect the missing section: `{_ncu_command(k, '--section SpeedOfLight', cooperative=f.cooperative, source=f.source)}`",
        findings=tuple(
            Finding(bottleneck=m.bottleneck, headline=m.headline, evidence=tuple(m.evidence[:3]), share=None)
            for m in usable[1:]
        ),
    )


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
            source=profile.source,
        )
        dur = (statistics.median(tl) if tl else k.value(DURATION)) or 0.0
        weight = {Verdict.FIX: 1.0, Verdict.INCONCLUSIVE: 0.5, Verdict.HEALTHY: 0.1}[d.verdict]
        scored.append((dur * weight, k.id, d))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [d for _, _, d in scored]


__all__ = ["DERIVED", "diagnose_kernels", "diagnose_launch", "metric_value", "stall_reasons"]
