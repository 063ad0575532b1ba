"""Which unit a launch keeps busy: each unit's use over the kernel's elapsed time, and the instruction mix that
decides which pipes carry the program's own work.

:func:`unit_utilization` turns the roofline (:mod:`kprof.diagnose.roofline`) into one number per unit (``dram``,
``l2``, ``l1``, ``tensor``, ``fp32``, ``fp64``, ``xu``, ``int``, ``issue``), 0..1 of its peak on elapsed cycles;
the integer and XU pipes count only when the SASS shows that their instructions are the algorithm's work.
"""

from __future__ import annotations

import re
from typing import Any

from kprof import thresholds as th
from kprof.diagnose.roofline import Roofline, sm_active_fraction
from kprof.diagnose.sass import Dataflow, SassSummary, analyze_sass, dataflow
from kprof.facts.names import ISSUE_ACTIVE, ISSUE_ELAPSED
from kprof.kernel_model import KernelLaunch

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


_FP_THREAD_OPS = ("fadd", "fmul", "ffma", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma")


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


def issue_elapsed(k: KernelLaunch) -> float | None:
    """Instruction issue over the elapsed cycles (0..1): ``sm__inst_executed`` elapsed, else issue-active x the
    SMs' busy fraction."""
    v = k.value(ISSUE_ELAPSED)
    if v is not None:
        return v / 100.0
    hit, busy = k.first_value(*ISSUE_ACTIVE), sm_active_fraction(k)
    return hit[1] / 100.0 * busy if hit is not None and busy is not None else None


def unit_flags(k: KernelLaunch, sass: SassSummary, flow: Dataflow) -> dict[str, Any]:
    """The instruction-mix facts :func:`unit_utilization` needs, from the report's SASS (or counters)."""
    fp = fp_inst_share(k, sass)
    return {
        "fp_heavy": fp is not None and fp >= th.FP_HEAVY_SHARE,
        "issue": issue_elapsed(k),
        "xu_is_math": xu_is_math(sass),
        "int_is_work": int_is_work(sass, flow),
    }


def unit_utilization(
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
