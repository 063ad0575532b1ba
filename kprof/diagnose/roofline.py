"""Roofline numbers of one launch, from the report's own peak metrics (no hand-written GPU table).

:func:`roofline` returns a small frozen :class:`Roofline`: achieved FLOP/s per precision,
bytes/s per memory level, the matching ceilings, and the SpeedOfLight utilisations. The
plotting code draws it; the kernel diagnosis judges with it.

Where the numbers come from (the metrics ncu's own roofline sections use):

- FLOP/s achieved: ``smsp__sass_thread_inst_executed_op_{add,mul,fma}_pred_on.sum.per_cycle_elapsed``
  (an FMA counts 2) times ``smsp__cycles_elapsed.avg.per_second``; or, in a CSV export of
  plain counts, the ``.sum`` counts divided by ``gpu__time_duration.sum``.
- FLOP/s peak: ``sm__sass_thread_inst_executed_op_<x>fma_pred_on.sum.peak_sustained`` x 2 x
  ``sm__cycles_elapsed.avg.per_second``.
- Tensor: ``sm__inst_executed_pipe_tensor.sum.peak_sustained`` x 512 (ncu's own factor, in
  ``derived__sm__inst_executed_pipe_tensor_x512``) and the achieved counterpart; on GPUs whose
  report has no tensor roofline, the tensor pipe utilisation stands in.
- Bytes/s: ``<level>.sum.per_second`` against ``<level>.sum.peak_sustained`` x the unit's clock
  (``dram__cycles_elapsed.avg.per_second`` ...), for DRAM (``dram__bytes``), L2 (``lts__t_bytes``)
  and L1 (``l1tex__t_bytes``), with the older hierarchical-roofline names as fallbacks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kprof.kernel_model import KernelLaunch

PRECISIONS = ("fp32", "fp64", "fp16", "tensor")
LEVELS = ("dram", "l2", "l1")

_FP_OPS = {
    "fp32": ("fadd", "fmul", "ffma"),
    "fp64": ("dadd", "dmul", "dfma"),
    "fp16": ("hadd", "hmul", "hfma"),
}
# FLOP per predicated-on thread instruction (add, mul, fma), as ncu's own roofline sections count them: an FMA is 2;
# FP16 instructions are packed (HADD2/HMUL2/HFMA2: two lanes), so 2, 2 and 4 (SpeedOfLight_HierarchicalHalfRooflineChart
# defines derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4 and the hadd/hmul _x2 metrics). The ceiling is
# the fma weight times the fma peak: on Hopper the non-tensor FP16 peak is twice the FP32 one, not equal to it.
_FP_WEIGHTS = {"fp32": (1, 1, 2), "fp64": (1, 1, 2), "fp16": (2, 2, 4)}

# (byte counter, unit whose clock scales its per-cycle peak), preferred first.
_BYTE_COUNTERS: dict[str, tuple[tuple[str, str], ...]] = {
    "dram": (("dram__bytes", "dram"),),
    "l2": (
        ("lts__t_bytes", "lts"),
        ("derived__lts__lts2xbar_bytes", "lts"),
        ("l1tex__m_xbar2l1tex_read_bytes", "l1tex"),
    ),
    "l1": (
        ("l1tex__t_bytes", "l1tex"),
        ("derived__l1tex__lsu_writeback_bytes_mem_lgds", "l1tex"),
        ("derived__l1tex__lsu_writeback_bytes_mem_lg", "l1tex"),
    ),
}

# SpeedOfLight utilisation (percent of peak) of each memory level, preferred first.
BYTE_COUNTER_WORDS: dict[str, tuple[str, str]] = {
    "dram__bytes": ("DRAM bandwidth", "bytes read from and written to DRAM"),
    "lts__t_bytes": ("L2 bandwidth", "bytes through the L2 slices' tag stage"),
    "derived__lts__lts2xbar_bytes": (
        "L2-to-SM bandwidth",
        "bytes the L2 returned to the SMs through the crossbar (ncu's roofline counter)",
    ),
    "l1tex__m_xbar2l1tex_read_bytes": (
        "L2-to-L1 bandwidth",
        "bytes the L1s read from L2 through the crossbar",
    ),
    "l1tex__t_bytes": ("L1 bandwidth", "bytes through the L1's tag stage"),
    "derived__l1tex__lsu_writeback_bytes_mem_lgds": (
        "L1 global/local load bandwidth",
        "bytes the L1 returned to the registers for global and local loads (ncu's roofline counter; shared-memory "
        "accesses are not in it)",
    ),
    "derived__l1tex__lsu_writeback_bytes_mem_lg": (
        "L1 global/local load bandwidth",
        "bytes the L1 returned to the registers for global and local loads (shared-memory accesses are not in it)",
    ),
}
"""What each byte counter of :data:`_BYTE_COUNTERS` counts: (the rate's name, the bytes in words)."""

SOL_LEVEL_METRICS: dict[str, tuple[str, ...]] = {
    "dram": (
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "l2": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "l1": ("l1tex__throughput.avg.pct_of_peak_sustained_elapsed",),
}
SOL_LEVEL_ACTIVE_METRICS: dict[str, tuple[str, ...]] = {
    "l1": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
}
"""Per-SM units measured on the SMs' *active* cycles only (ncu 2023's SpeedOfLight shows L1 this way): scaled by
the SMs' busy fraction to put them on elapsed time, the only basis on which "at the roof" means anything."""
COMPUTE_SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_SOL = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"

# Pipe utilisations (percent of peak). Each pipe is judged on *elapsed* cycles: a pipe busy 90% of the cycles
# its SM was active, on an 8-block grid that keeps 8 of 132 SMs active, is 5.5% busy over the kernel's time.
# The ``_elapsed`` form is read when the report has it; otherwise the ``_active`` form times the SMs' busy
# fraction (sm__cycles_active.avg / elapsed cycles), which is the same quantity for an ``.avg`` metric.
TENSOR_PIPE_METRICS = (
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed",
)
TENSOR_TYPE_PIPE_METRICS = (
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_imma.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_dmma.avg.pct_of_peak_sustained_elapsed",
)
"""The tensor pipe per instruction type: warpgroup MMA (HGMMA/IGMMA/QGMMA), and mma.sync floating-point (HMMA),
integer (IMMA: INT8/INT4) and FP64 (DMMA). Integer MMA is tensor-core work like any other: without the
all-types metric, the busiest type is the pipe's use."""
FMA_PIPE_METRICS = ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",)
FP64_PIPE_METRICS = ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",)
XU_PIPE_METRICS = ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed",)
"""The transcendental and data-conversion unit (MUFU: sin, cos, exp2, log2, rcp, rsqrt; F2F/F2I/I2F)."""
ALU_PIPE_METRICS = (
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed",
)
"""The integer and logic pipe (IADD3, LOP3, SHF, ISETP, LEA, ...; also FP compares and min/max)."""
FMAHEAVY_PIPE_METRICS = ("sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_elapsed",)
"""The FMA-heavy half of the FMA pipe (sm_80+), which also executes the integer multiplies (IMAD, IMUL); before
sm_80 the whole FMA pipe did (``fma_pipe``)."""
SM_ACTIVE_CYCLES = "sm__cycles_active.avg"
SM_ELAPSED_CYCLES = ("sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max")
SM_CLOCKS = ("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second")


def _active_form(name: str) -> str:
    return name.replace("pct_of_peak_sustained_elapsed", "pct_of_peak_sustained_active")


def sm_active_fraction(k: KernelLaunch) -> float | None:
    """Fraction of the kernel's elapsed cycles the SMs were busy, on average (``sm__cycles_active.avg`` over
    the elapsed cycles: ``sm__cycles_elapsed.avg``, ``gpc__cycles_elapsed.max``, or the duration times the SM
    clock when a basic-set report has neither). None when the report lacks the numbers.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> sm_active_fraction(KernelLaunch(id=0, name="k", metrics={"sm__cycles_active.avg": Metric(60.0),
    ...                                                     "sm__cycles_elapsed.avg": Metric(1000.0)}))
    0.06
    """
    active = k.value(SM_ACTIVE_CYCLES)
    if active is None:
        return None
    elapsed = _first(k, SM_ELAPSED_CYCLES)
    if elapsed is None:
        clock, duration = _first(k, SM_CLOCKS), k.value(DURATION)
        elapsed = clock * duration * 1e-9 if clock and duration else None
    if not elapsed or elapsed <= 0:
        return None
    return min(1.0, active / elapsed)


def _elapsed_pct(k: KernelLaunch, names: tuple[str, ...], busy: float | None) -> float | None:
    """The first of ``names`` (``_elapsed`` forms) present, else its ``_active`` form scaled by ``busy``."""
    v = _first(k, names)
    if v is not None:
        return v
    if busy is None:
        return None
    for n in names:
        a = k.value(_active_form(n))
        if a is not None:
            return a * busy
    return None


DURATION = "gpu__time_duration.sum"


@dataclass(frozen=True, slots=True, kw_only=True)
class Roofline:
    """Where a launch sits on the roofline. Every mapping holds only what the report measured.

    Rates are per second (FLOP/s, byte/s); ``utilization`` values are fractions of peak (0..1).
    """

    duration_ns: float | None = None
    """``gpu__time_duration.sum``: measured under ncu (serialized, replayed), not the real duration."""
    flops: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Achieved FLOP/s per precision (``fp32``, ``fp64``, ``fp16``, ``tensor``)."""
    peak_flops: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    bytes_per_s: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Achieved bytes/s per memory level (``dram``, ``l2``, ``l1``)."""
    peak_bytes_per_s: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    tensor_path: str | None = None
    """Which tensor data path ``flops["tensor"]``/``peak_flops["tensor"]`` refer to (Hopper+ reports name it,
    e.g. ``hgmma_src_bf16_dst_fp32``): the busiest one, or the TF32 path when no tensor op ran (the ceiling
    FP32 matrix code would move to)."""
    tensor_path_peaks: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Every tensor data path's ceiling (FLOP/s), keyed like ``tensor_path``; ``peak_flops["tensor"]`` is the fastest
    dense one for the used path's input type."""
    utilization: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """SpeedOfLight fractions of peak: ``compute``, ``memory``, ``dram``, ``l2``, ``l1``, ``tensor_pipe``,
    ``fma_pipe``, ``fp64_pipe``, ``xu_pipe``, ``alu_pipe``, ``fmaheavy_pipe``, and ``flops_<precision>``
    (achieved / peak FLOP/s)."""

    def __post_init__(self) -> None:
        for name in (
            "flops",
            "peak_flops",
            "bytes_per_s",
            "peak_bytes_per_s",
            "tensor_path_peaks",
            "utilization",
        ):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    @property
    def total_flops(self) -> float | None:
        """All achieved FLOP/s (tensor included), or None when no FLOP counter was collected."""
        return sum(self.flops.values()) if self.flops else None

    def intensity(self, level: str = "dram") -> float | None:
        """Arithmetic intensity: FLOP per byte moved at ``level`` (None when either is missing or zero)."""
        f, b = self.total_flops, self.bytes_per_s.get(level)
        if f is None or not b:
            return None
        return f / b

    def ridge(self, precision: str = "fp32", level: str = "dram") -> float | None:
        """The intensity (FLOP/byte) where the ``level`` roof meets the ``precision`` ceiling."""
        p, b = self.peak_flops.get(precision), self.peak_bytes_per_s.get(level)
        if not p or not b:
            return None
        return p / b

    @property
    def has_sol(self) -> bool:
        """True when SpeedOfLight's compute and memory throughputs were collected."""
        return "compute" in self.utilization and "memory" in self.utilization


def _v(k: KernelLaunch, name: str) -> float | None:
    return k.value(name)


def _first(k: KernelLaunch, names: tuple[str, ...]) -> float | None:
    hit = k.first_value(*names)
    return hit[1] if hit else None


def _clock(k: KernelLaunch, unit: str) -> float | None:
    return _v(k, f"{unit}__cycles_elapsed.avg.per_second")


_TENSOR_PATH = re.compile(r"^sm__ops_path_tensor_(\w+?)\.sum\.per_second$")


_PATH_SRC = re.compile(r"src_([a-z0-9]+)")


def _tensor_paths(
    k: KernelLaunch, flops: dict[str, float], peak: dict[str, float], paths: dict[str, float]
) -> str | None:
    """Hopper+ reports: ``sm__ops_path_tensor_<path>.sum.per_second`` (ops = FLOP) and its
    ``.sum.peak_sustained_elapsed.per_second`` ceiling, one per data path. Returns the path used.

    The tensor ceiling is the fastest dense path for the used path's input type: on sm_90 ``mma.sync`` (HMMA)
    BF16 peaks at 2/3 of warpgroup MMA (HGMMA) BF16, and a kernel at the HMMA ceiling is 1.5x from the GPU's
    roof. ``paths`` receives every path's ceiling (FLOP/s)."""
    achieved: dict[str, float] = {}
    ceilings: dict[str, float] = {}
    for name in k.metrics:
        m = _TENSOR_PATH.match(name)
        if not m:
            continue
        path = m.group(1)
        # Specific paths only (op_<instruction>_src_<type>..., FP8 and FP64, which have no op_ form); the
        # src_<type> aggregates repeat the op_ paths' counts and would count every FLOP twice.
        if not (path.startswith("op_") or path.startswith("src_fp8") or path == "src_fp64"):
            continue
        a = _v(k, name)
        c = _v(k, f"sm__ops_path_tensor_{path}.sum.peak_sustained_elapsed.per_second")
        if a is not None:
            achieved[path] = a
        if c:
            ceilings[path] = c
    if not ceilings:
        return None
    paths.update(ceilings)
    total = sum(achieved.values())
    busiest = max(achieved, key=lambda p: achieved[p]) if total > 0 else None
    if busiest is None:
        dense = [p for p in ceilings if "sparsity_on" not in p]
        tf32 = [p for p in dense if "tf32" in p]
        pool = tf32 or dense or list(ceilings)
        busiest = max(pool, key=lambda p: ceilings[p])
    flops["tensor"] = total
    src = _PATH_SRC.search(busiest)
    same = [
        p
        for p in ceilings
        if src
        and _PATH_SRC.search(p)
        and _PATH_SRC.search(p).group(1) == src.group(1)  # type: ignore[union-attr]
        and ("sparsity_on" in p) == ("sparsity_on" in busiest)
    ]
    if same:
        peak["tensor"] = max(ceilings[p] for p in same)
    elif busiest in ceilings:
        peak["tensor"] = ceilings[busiest]
    return busiest.removeprefix("op_")


def roofline(k: KernelLaunch) -> Roofline:
    """Compute the roofline numbers of one launch (pure; missing metrics are left out, never zero).

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={
    ...     "dram__bytes.sum.per_second": Metric(3.0e12, "byte/s"),
    ...     "dram__bytes.sum.peak_sustained": Metric(2000.0, "byte/cycle"),
    ...     "dram__cycles_elapsed.avg.per_second": Metric(2.0e9, "hz")})
    >>> r = roofline(k)
    >>> r.bytes_per_s["dram"] / r.peak_bytes_per_s["dram"]
    0.75
    """
    duration = _v(k, DURATION)
    dur_s = duration * 1e-9 if duration else None
    flops, peak = _fp_flops(k, dur_s)
    path_peaks: dict[str, float] = {}
    tensor_path = _tensor_paths(k, flops, peak, path_peaks)
    if tensor_path is None:
        _tensor_pipe_flops(k, flops, peak)
    bps, peak_bps = _bandwidths(k, dur_s)
    util = _utilization(k)
    for prec in PRECISIONS:
        if prec in flops and peak.get(prec):
            util[f"flops_{prec}"] = flops[prec] / peak[prec]
    return Roofline(
        duration_ns=duration,
        tensor_path=tensor_path,
        tensor_path_peaks={p.removeprefix("op_"): v for p, v in path_peaks.items()},
        flops=flops,
        peak_flops=peak,
        bytes_per_s=bps,
        peak_bytes_per_s=peak_bps,
        utilization=util,
    )


def _fp_flops(k: KernelLaunch, dur_s: float | None) -> tuple[dict[str, float], dict[str, float]]:
    """(achieved FLOP/s, peak FLOP/s) per FP precision, from the thread-instruction counters (FMA counts twice)."""
    flops: dict[str, float] = {}
    peak: dict[str, float] = {}
    sm_clock = _clock(k, "sm")
    smsp_clock = _clock(k, "smsp") or sm_clock
    for prec, (add, mul, fma) in _FP_OPS.items():
        per_cycle = [
            _v(k, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
            for op in (add, mul, fma)
        ]
        wa, wm, wf = _FP_WEIGHTS[prec]
        if all(x is not None for x in per_cycle) and smsp_clock:
            a, m, f = (x or 0.0 for x in per_cycle)
            flops[prec] = (wa * a + wm * m + wf * f) * smsp_clock
        else:
            counts = [_v(k, f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum") for op in (add, mul, fma)]
            if any(c is not None for c in counts) and dur_s:
                a, m, f = (c or 0.0 for c in counts)
                flops[prec] = (wa * a + wm * m + wf * f) / dur_s
        # The report's own ceiling when its roofline section defined one, else the same product from the raw peak.
        pk_ops = _v(k, f"derived__sm__sass_thread_inst_executed_op_{fma}_pred_on_x{wf}")
        pk = _v(k, f"sm__sass_thread_inst_executed_op_{fma}_pred_on.sum.peak_sustained")
        if pk_ops is None and pk is not None:
            pk_ops = wf * pk
        if pk_ops is not None and sm_clock:
            peak[prec] = pk_ops * sm_clock
    return flops, peak


def _tensor_pipe_flops(k: KernelLaunch, flops: dict[str, float], peak: dict[str, float]) -> None:
    """Without per-path counters: tensor FLOP/s and peak from the tensor pipe's instructions (512 FLOP each)."""
    sm_clock = _clock(k, "sm")
    smsp_clock = _clock(k, "smsp") or sm_clock
    tensor_peak = _v(k, "derived__sm__inst_executed_pipe_tensor_x512")
    if tensor_peak is None:
        t = _v(k, "sm__inst_executed_pipe_tensor.sum.peak_sustained")
        tensor_peak = 512 * t if t is not None else None
    if tensor_peak and sm_clock:
        peak["tensor"] = tensor_peak * sm_clock
    tensor_achieved = _v(k, "derived__smsp__inst_executed_pipe_tensor_x512")
    if tensor_achieved is None:
        t = _v(k, "smsp__inst_executed_pipe_tensor.sum.per_cycle_elapsed")
        tensor_achieved = 512 * t if t is not None else None
    if tensor_achieved is not None and smsp_clock and "tensor" in peak:
        flops["tensor"] = tensor_achieved * smsp_clock


def _bandwidths(k: KernelLaunch, dur_s: float | None) -> tuple[dict[str, float], dict[str, float]]:
    """(achieved bytes/s, peak bytes/s) per memory level, from the first byte counter the report holds."""
    bps: dict[str, float] = {}
    peak_bps: dict[str, float] = {}
    for level, candidates in _BYTE_COUNTERS.items():
        for counter, unit in candidates:
            rate = _v(k, f"{counter}.sum.per_second")
            if rate is None:
                total = _v(k, f"{counter}.sum")
                rate = total / dur_s if total is not None and dur_s else None
            pk = _v(k, f"{counter}.sum.peak_sustained")
            clk = _clock(k, unit)
            if rate is None and pk is None:
                continue
            if rate is not None:
                bps[level] = rate
            if pk is not None and clk:
                peak_bps[level] = pk * clk
            break
    return bps, peak_bps


_PIPES = (
    ("tensor_pipe", TENSOR_PIPE_METRICS),
    ("fma_pipe", FMA_PIPE_METRICS),
    ("fp64_pipe", FP64_PIPE_METRICS),
    ("xu_pipe", XU_PIPE_METRICS),
    ("alu_pipe", ALU_PIPE_METRICS),
    ("fmaheavy_pipe", FMAHEAVY_PIPE_METRICS),
)


def _utilization(k: KernelLaunch) -> dict[str, float]:
    """SpeedOfLight compute/memory, each memory level and each pipe, 0..1 of peak over the elapsed cycles (an
    active-cycle percentage times the SMs' busy fraction where the report has only that)."""
    util: dict[str, float] = {}
    for key, name in (("compute", COMPUTE_SOL), ("memory", MEMORY_SOL)):
        sol = _v(k, name)
        if sol is not None:
            util[key] = sol / 100.0
    busy = sm_active_fraction(k)
    for level, names in SOL_LEVEL_METRICS.items():
        lv = _first(k, names)
        if lv is None and level in SOL_LEVEL_ACTIVE_METRICS and busy is not None:
            act = _first(k, SOL_LEVEL_ACTIVE_METRICS[level])
            lv = act * busy if act is not None else None
        if lv is not None:
            util[level] = lv / 100.0
    for key, names in _PIPES:
        pv = _elapsed_pct(k, names, busy)
        if pv is not None:
            util[key] = pv / 100.0
    first = next((n for n in TENSOR_PIPE_METRICS if k.value(n) is not None), None)
    if first in TENSOR_TYPE_PIPE_METRICS or ("tensor_pipe" in util and first is None):
        # no all-types tensor metric: the busiest instruction type (an IMMA kernel reads 0 on the HMMA metric)
        types = [v for n in TENSOR_TYPE_PIPE_METRICS if (v := _elapsed_pct(k, (n,), busy)) is not None]
        util["tensor_pipe"] = max([util["tensor_pipe"] * 100.0, *types]) / 100.0
    return util


TMA_LOAD_BYTES = "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum"
_ASYNC_COPIES = ("UTMALDG", "LDGSTS", "UBLKCP")


def unseen_traffic(k: KernelLaunch) -> dict[str, str]:
    """Memory levels whose byte counter misses most of this launch's traffic, with the reason.

    The roofline's L1 bytes are L1TEX's LSU writeback bytes (ncu's "L1 Roofline (Global/Local)"): data that
    TMA (``UTMALDG``, ``cp.async.bulk.tensor``) or ``cp.async`` (``LDGSTS``) copies from L2 straight into shared
    memory never passes the LSU writeback, so a kernel fed that way sits at a meaningless L1 intensity (the H200
    BF16 GEMM samples: 0.3-0.5 MB counted where gigabytes moved). Told from executed async copies in the SASS or
    from the TMA load bytes the report counts.
    """
    executed = any(
        s.mnemonic in _ASYNC_COPIES and (s.counters.get("inst_executed", 1.0) or 0.0) > 0 for s in k.sass
    )
    tma = k.value(TMA_LOAD_BYTES)
    if executed or (tma is not None and tma > 0):
        return {"l1": "loads by TMA or cp.async (UTMALDG, LDGSTS) bypass the L1 load/store counters"}
    return {}


__all__ = ["LEVELS", "PRECISIONS", "Roofline", "roofline", "sm_active_fraction", "unseen_traffic"]
