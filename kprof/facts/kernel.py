"""What the kernel rules read, computed once per launch: :class:`KernelFacts`.

:func:`build_facts` gathers the roofline, the SASS summary and data flow, each unit's use on elapsed cycles and
the sections the report lacks; :func:`metric_value` computes every documented ``derived:``/``sass:`` quantity
(:data:`~kprof.facts.names.DERIVED`) so that evidence, expectations and ``kprof compare`` quote one value under
one name; :func:`kernel_floor_ns` is the physical floor no predicted duration may cross.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kprof import thresholds as th
from kprof.diagnose.roofline import (
    COMPUTE_SOL,
    SOL_LEVEL_METRICS,
    XU_PIPE_METRICS,
    Roofline,
    roofline,
    sm_active_fraction,
)
from kprof.diagnose.sass import Dataflow, SassSummary, analyze_sass, dataflow
from kprof.facts.names import (
    DERIVED,
    DRAM_READ_BYTES,
    DURATION,
    FFMA_THREAD_INST,
    FFMA_THREAD_RATE,
    GATOM_REQUESTS,
    GLD_INSTRUCTIONS,
    GLD_REQUESTS,
    GLD_SECTORS,
    GRED_REQUESTS,
    GST_REQUESTS,
    GST_SECTORS,
    ISSUE_ACTIVE,
    ISSUE_ELAPSED,
    L1_WAVEFRONT_PCT,
    L2_ATOMIC_REQUESTS,
    L2_READ_SECTORS,
    L2_THEORETICAL_SECTORS,
    L2_THEORETICAL_SECTORS_IDEAL,
    L2_WRITE_SECTORS,
    LDSM_REQUESTS,
    LLD_SECTORS,
    LST_SECTORS,
    LSU_REQUEST_PCT,
    OCC_LIMITS,
    SATOM_REQUESTS,
    SATOM_WAVEFRONTS,
    SLD_REQUESTS,
    SLD_WAVEFRONTS,
    SMSP_ELAPSED,
    SOURCE_THREAD_INST,
    SST_REQUESTS,
    SST_WAVEFRONTS,
    THEORETICAL_OCC,
    THREADS_PER_INST,
    WAVES,
)
from kprof.facts.passes import RepeatedPass, repeated_pass
from kprof.facts.sass_traits import fp64_promotion
from kprof.facts.stalls import stall_reasons
from kprof.facts.units import (
    MEMORY_UNITS,
    UNIT_PRIORITY,
    UNIT_WORDS,
    fp_inst_share,
    has_tensor_cores,
    issue_elapsed,
    unit_flags,
    unit_utilization,
    work_inst_share,
)
from kprof.kernel_model import KernelLaunch
from kprof.model import Evidence, _fmt

UNDER_NCU = "measured under ncu"


def sum_present(k: KernelLaunch, names: Iterable[str]) -> float | None:
    """The sum of the metrics of ``names`` the report holds; None when it holds none."""
    vals = [k.value(n) for n in names]
    present = [v for v in vals if v is not None]
    return sum(present) if present else None


_FROM_COUNTERS: dict[str, Callable[[KernelLaunch], float | None]] = {
    "derived:global_load_sectors_per_request": lambda k: ratio(k.value(GLD_SECTORS), k.value(GLD_REQUESTS)),
    "derived:global_store_sectors_per_request": lambda k: ratio(k.value(GST_SECTORS), k.value(GST_REQUESTS)),
    "derived:global_sectors_per_request": lambda k: ratio(
        sum_present(k, (GLD_SECTORS, GST_SECTORS)), sum_present(k, (GLD_REQUESTS, GST_REQUESTS))
    ),
    "derived:global_excess_sector_share": lambda k: _excess(
        k.value(L2_THEORETICAL_SECTORS), k.value(L2_THEORETICAL_SECTORS_IDEAL)
    ),
    "derived:shared_wavefronts_per_request": lambda k: ratio(
        sum_present(k, (SLD_WAVEFRONTS, SST_WAVEFRONTS)), shared_requests(k, "ld", "st")
    ),
    "derived:shared_load_wavefronts_per_request": lambda k: ratio(
        k.value(SLD_WAVEFRONTS), shared_requests(k, "ld")
    ),
    "derived:shared_store_wavefronts_per_request": lambda k: ratio(
        k.value(SST_WAVEFRONTS), shared_requests(k, "st")
    ),
    "derived:shared_atomic_wavefronts_per_request": lambda k: ratio(
        k.value(SATOM_WAVEFRONTS), shared_requests(k, "atom")
    ),
    "derived:l1_wavefronts_per_lsu_request": lambda k: ratio(
        k.value(L1_WAVEFRONT_PCT), k.value(LSU_REQUEST_PCT)
    ),
    "derived:local_memory_sectors": lambda k: sum_present(k, (LLD_SECTORS, LST_SECTORS)),
    "derived:local_sector_share": lambda k: _local_share(k),
    "derived:global_atomic_requests": lambda k: sum_present(k, GATOM_REQUESTS + GRED_REQUESTS),
    "derived:l2_atomic_requests": lambda k: sum_present(k, L2_ATOMIC_REQUESTS),
    "derived:sm_active_fraction": lambda k: sm_active_fraction(k),
    "derived:sm_active_pct": lambda k: _times100(sm_active_fraction(k)),
    "derived:tail_wave_efficiency": lambda k: _tail_efficiency(k.value(WAVES)),
    "derived:dram_bytes": lambda k: dram_bytes(k),
    "derived:fp_inst_share": lambda k: fp_inst_share(k),
    "derived:work_inst_share": lambda k: work_inst_share(k),
    "derived:threads_per_inst_executed": lambda k: threads_per_instruction(k)[0],
    "derived:ffma_warp_instructions": lambda k: ffma_warp_instructions(k),
    "derived:shared_loads_per_ffma": lambda k: ratio(_first(k, SLD_REQUESTS), ffma_warp_instructions(k)),
    "derived:shared_load_wavefronts_per_ffma": lambda k: ratio(
        k.value(SLD_WAVEFRONTS), ffma_warp_instructions(k)
    ),
    "derived:shared_instructions_per_global_load": lambda k: ratio(
        shared_requests(k, "ld", "st"), _first(k, GLD_INSTRUCTIONS)
    ),
    "derived:repeated_pass_bytes": lambda k: rp.repeated_bytes if (rp := repeated_pass_of(k)) else None,
    "derived:single_pass_dram_read_bytes": lambda k: _single_pass_reads(k),
}
"""The derived quantities computed from the launch's counters alone (see :data:`~kprof.facts.names.DERIVED`)."""

_UTILIZATION_OF = {
    "derived:fp32_utilization": "fp32",
    "derived:tensor_utilization": "tensor",
    "derived:fp64_utilization": "fp64",
    "derived:xu_utilization": "xu",
    "derived:int_utilization": "int",
    "derived:l1_utilization": "l1",
}
"""The derived utilisations: a unit's use over the elapsed cycles (:func:`~kprof.facts.units.unit_utilization`)."""


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
    if name in _FROM_COUNTERS:
        return _FROM_COUNTERS[name](k)
    roof = roofline(k)
    if name in ("derived:fp32_tflops", "derived:tensor_tflops"):
        flops = roof.flops.get(name.removeprefix("derived:").removesuffix("_tflops"))
        return flops / 1e12 if flops is not None else None
    if name == "derived:fp32_flop_per_dram_byte":
        return ratio(roof.flops.get("fp32"), roof.bytes_per_s.get("dram"))
    units = unit_utilization(roof, **unit_flags(k, analyze_sass(k.sass), dataflow(k.sass)))
    key = _UTILIZATION_OF.get(name)
    if key is not None and key in units:
        return 100.0 * units[key]
    return None


def _sass_value(k: KernelLaunch, name: str) -> float | None:
    """A ``sass:`` quantity: a documented SASS fact, or a per-PC counter summed over the listing."""
    what = name.removeprefix("sass:")
    if not k.sass:
        return None
    if what not in {n.removeprefix("sass:") for n in DERIVED if n.startswith("sass:")}:
        vals = [line.counters[what] for line in k.sass if what in line.counters]
        return sum(vals) if vals else None
    s, flow = analyze_sass(k.sass), dataflow(k.sass)
    if s.empty:
        return None
    promo = fp64_promotion(k.sass) if what.startswith("fp64_") else None
    if what.startswith("half_"):
        from kprof.facts.constructs import constructs, of_kind

        trip = next(iter(of_kind(constructs(k), "half_round_trip")), None)
        if trip is None:
            return None
        return trip.executed if what == "half_conversions" else 100.0 * trip.share
    return {
        "ffma_share": s.share(s.ffma),
        "fp_arith_share": s.share(s.fp32 + s.fp16 + s.fp64 + s.mma),
        "fma_from_loads_share": flow.fma_from_loads_share if flow.fma else None,
        "load_bytes_per_fma": flow.per_fma(flow.load_bytes),
        "operand_reuse": flow.operand_reuse,
        "dependent_load_share": flow.dependent_load_share if flow.global_loads else None,
        "int_data_share": flow.int_data_share(s.instructions),
        "local_instructions": s.local_loads + s.local_stores,
        "local_instruction_share": s.share(s.local_loads + s.local_stores),
        "global_atomics": s.global_atomics,
        "async_copies": s.async_copies,
        "fp64_widening_conversions": promo.widen if promo else None,
        "fp64_inst_share": 100.0 * promo.fp64_share if promo else None,
    }.get(what)


def _first(k: KernelLaunch, names: Iterable[str]) -> float | None:
    hit = k.first_value(*names)
    return hit[1] if hit is not None else None


def threads_per_instruction(k: KernelLaunch) -> tuple[float | None, str]:
    """Active threads per executed warp instruction and the name it is quoted under: ncu's InstructionStats ratio,
    else SourceCounters' kernel-wide ``thread_inst_executed / inst_executed`` (a ``--section SourceCounters``
    report), under ``derived:threads_per_inst_executed``. (None, the ratio's name) when the report has neither."""
    v = k.value(THREADS_PER_INST)
    if v is not None:
        return v, THREADS_PER_INST
    threads, warps = (k.value(n) for n in SOURCE_THREAD_INST)
    return ratio(threads, warps), "derived:threads_per_inst_executed"


def ffma_warp_instructions(k: KernelLaunch) -> float | None:
    """FFMA warp instructions executed: the thread FFMAs (their count, or their rate per elapsed cycle x the SM
    sub-partitions' elapsed cycles) over 32 lanes; None when the report has neither."""
    n = k.value(FFMA_THREAD_INST)
    if n is None:
        rate, cycles = k.value(FFMA_THREAD_RATE), k.value(SMSP_ELAPSED)
        n = rate * cycles if rate is not None and cycles else None
    return n / th.WARP_SIZE if n is not None else None


def repeated_pass_of(k: KernelLaunch) -> RepeatedPass | None:
    """The launch's repeated pass over the same data, from its SASS (:func:`kprof.facts.passes.repeated_pass`)."""
    return repeated_pass(k.sass, k.blocks)


def repeated_dram_bytes(k: KernelLaunch) -> float | None:
    """DRAM read bytes that a repeated pass costs: the DRAM reads beyond what a single pass reads, at most the bytes
    the later loop reads again; 0 when that is under MIN_MECHANISM_SAVINGS of the DRAM traffic (the second pass hit
    in L2: what is left is measurement noise and explains nothing of a DRAM-bound kernel's time). None without a
    repeated pass or ``dram__bytes_read.sum``."""
    rp, read, moved = repeated_pass_of(k), k.value(DRAM_READ_BYTES), dram_bytes(k)
    if rp is None or read is None:
        return None
    again = min(rp.repeated_bytes, max(0.0, read - rp.per_block_bytes))
    return again if moved and again >= th.MIN_MECHANISM_SAVINGS * moved else 0.0


def _single_pass_reads(k: KernelLaunch) -> float | None:
    again, read = repeated_dram_bytes(k), k.value(DRAM_READ_BYTES)
    return read - again if again is not None and read is not None else None


def dram_bytes(k: KernelLaunch) -> float | None:
    """Bytes moved to and from DRAM: ``dram__bytes.sum``, or read + write where the report splits them (H200)."""
    total = k.value("dram__bytes.sum")
    if total is not None:
        return total
    return sum_present(k, ("dram__bytes_read.sum", "dram__bytes_write.sum"))


def _excess(actual: float | None, ideal: float | None) -> float | None:
    if not actual or ideal is None:
        return None
    return max(0.0, 1.0 - ideal / actual)


def shared_requests(k: KernelLaunch, *ops: str) -> float | None:
    """Shared-memory instructions of the kinds ``ops`` (``ld`` includes LDSM, ``st``, ``atom``)."""
    hits = [
        h
        for h in (
            k.first_value(*SLD_REQUESTS) if "ld" in ops else None,
            k.first_value(*LDSM_REQUESTS) if "ld" in ops else None,
            k.first_value(*SST_REQUESTS) if "st" in ops else None,
            k.first_value(*SATOM_REQUESTS) if "atom" in ops else None,
        )
        if h is not None
    ]
    return sum(h[1] for h in hits) if hits else None


def _local_share(k: KernelLaunch) -> float | None:
    local = sum_present(k, (LLD_SECTORS, LST_SECTORS))
    if local is None:
        return None
    total = sum_present(k, (GLD_SECTORS, GST_SECTORS, LLD_SECTORS, LST_SECTORS))
    return min(1.0, local / total) if total else None


def _times100(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def _tail_efficiency(w: float | None) -> float | None:
    return w / math.ceil(w) if w and w > 0 else None


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, None when either is missing or ``b`` is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


@dataclass(slots=True)
class KernelFacts:
    """What the kernel rules read about one launch, computed once (:func:`build_facts`)."""

    k: KernelLaunch
    roof: Roofline
    sass: SassSummary
    flow: Dataflow
    duration_ns: float | None
    duration_label: str
    util: dict[str, float]
    """Each unit's use over the elapsed cycles, 0..1 (:func:`~kprof.facts.units.unit_utilization`)."""
    stalls: dict[str, float]
    """Warp stall reasons, largest first (:func:`~kprof.facts.stalls.stall_reasons`); {} when not collected."""
    missing: set[str] = field(default_factory=set)
    """The ncu sections (keys of :data:`~kprof.facts.names.SECTION_OF`) the report lacks."""
    source_format: str = "ncu-rep"
    cooperative: bool = False
    source: str | None = None
    program: str | None = None
    """The profiled program as it runs from the current folder, when known (the suggested ncu commands run it)."""

    def v(self, name: str) -> float | None:
        return self.k.value(name)

    @property
    def top_stall(self) -> str | None:
        """The stall reason with the most cycles (or samples), None when the report has none."""
        return next(iter(self.stalls), None)

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
        """The busiest unit; within UNIT_TIE_MARGIN of it, the one whose work is the program's (priority order).

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
        close = [u for u in UNIT_PRIORITY if u in util and util[u] >= top - th.UNIT_TIE_MARGIN]
        unit = close[0] if close else max(util, key=lambda u: util[u])
        return unit, util[unit]

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


def build_facts(
    k: KernelLaunch,
    duration_ns: float | None,
    label: str,
    *,
    source_format: str = "ncu-rep",
    cooperative: bool = False,
    source: str | None = None,
    program: str | None = None,
) -> KernelFacts:
    """The facts of launch ``k``; ``duration_ns`` is labelled ``label`` (from a timeline, or measured under ncu)."""
    roof = roofline(k)
    sass = analyze_sass(k.sass)
    flow = dataflow(k.sass)
    stalls = stall_reasons(k)
    return KernelFacts(
        k=k,
        roof=roof,
        sass=sass,
        flow=flow,
        duration_ns=duration_ns,
        duration_label=label,
        util=unit_utilization(roof, **unit_flags(k, sass, flow)),
        stalls=stalls,
        missing=_missing_sections(k, roof, sass, stalls),
        source_format=source_format,
        cooperative=cooperative,
        source=source,
        program=program,
    )


def _missing_sections(
    k: KernelLaunch, roof: Roofline, sass: SassSummary, stalls: dict[str, float]
) -> set[str]:
    """The sections (keys of :data:`~kprof.facts.names.SECTION_OF`) whose metrics the report lacks."""
    missing = set()
    if not roof.has_sol:
        missing.add("sol")
    if k.value(GLD_REQUESTS) is None and k.value(GST_REQUESTS) is None and k.value(SLD_WAVEFRONTS) is None:
        missing.add("memory")
    if k.value(WAVES) is None or k.grid is None:
        missing.add("launch")
    if k.value(THEORETICAL_OCC) is None or k.value(OCC_LIMITS["registers"]) is None:
        missing.add("occupancy")
    if not stalls:
        missing.add("stalls")
    if k.value(THREADS_PER_INST) is None:
        missing.add("instructions")
    if k.first_value(*ISSUE_ACTIVE) is None:
        missing.add("scheduler")
    if not roof.flops:
        missing.add("roofline")
    if sass.empty or not sass.weighted:
        missing.add("source")
    return missing


def fp32_from_issue(f: KernelFacts) -> bool:
    """True when the FP32 unit's utilisation is the SMs' instruction issue (an FP-heavy kernel whose issue slots
    run ahead of both its FLOP rate and its FMA pipe, :func:`~kprof.facts.units.unit_utilization`): then that is
    the number quoted, and it must be called what it is."""
    u = f.roof.utilization
    fp32 = f.util.get("fp32")
    # the FP32 value is the largest of the FLOP rate, the FMA pipe and (FP-heavy kernels) the issue: above both
    # of the others, it is the issue
    return fp32 is not None and fp32 > max(u.get("fma_pipe", 0.0), u.get("flops_fp32", 0.0)) + 1e-9


def unit_words(f: KernelFacts, unit: str) -> str:
    """The unit in words, as :data:`UNIT_WORDS`, except FP32 read from the instruction issue (:func:`fp32_from_issue`)
    and the integer unit, named after the busier of its two pipes."""
    if unit == "fp32" and fp32_from_issue(f):
        return "FP32 instruction issue"
    if unit == "int":
        # the busier of the two integer pipes is the one the utilisation quotes (:func:`unit_utilization`)
        u = f.roof.utilization
        alu, imad = u.get("alu_pipe"), u.get("fmaheavy_pipe", u.get("fma_pipe"))
        if alu is not None and imad is not None:
            return (
                "integer pipe (ALU) throughput"
                if alu >= imad
                else "integer pipe (IMAD, the FMA-heavy pipe) throughput"
            )
    return UNIT_WORDS[unit]


def fp32_issue_note(f: KernelFacts) -> str:
    """What "FP32 instruction issue" is (:func:`unit_words`), for an evidence's reference; "" otherwise."""
    if not fp32_from_issue(f):
        return ""
    fma = f.roof.utilization.get("fma_pipe")
    return "the SMs' issue slots, which carry the FP32 math" + (
        f" (the FMA pipe itself at {100 * fma:.3g}%)" if fma is not None else ""
    )


def unit_metric(f: KernelFacts, unit: str) -> str:
    """The metric a unit's utilisation was read from (the one the report holds), or its documented derived name."""
    if unit == "fp32" and fp32_from_issue(f):
        return ISSUE_ELAPSED if f.k.value(ISSUE_ELAPSED) is not None else "derived:fp32_utilization"
    if unit in MEMORY_UNITS:
        hit = f.k.first_value(*SOL_LEVEL_METRICS[unit])
        if hit is not None:
            return hit[0]
        return f"derived:{unit}_utilization" if unit == "l1" else SOL_LEVEL_METRICS[unit][0]
    if unit == "issue":
        return COMPUTE_SOL
    if unit == "xu" and f.v(XU_PIPE_METRICS[0]) is not None:
        return XU_PIPE_METRICS[0]
    return f"derived:{unit}_utilization"


def bandwidth_metric(f: KernelFacts, unit: str) -> str:
    """The ``<counter>.sum.per_second`` the roofline read for a memory level (the first the report holds)."""
    from kprof.diagnose.roofline import _BYTE_COUNTERS

    for counter, _ in _BYTE_COUNTERS[unit]:
        if f.v(f"{counter}.sum.per_second") is not None:
            return f"{counter}.sum.per_second"
        if f.v(f"{counter}.sum") is not None:
            return f"{counter}.sum / {DURATION}"
    return f"derived:{unit}_utilization"


def compulsory_dram_bytes(k: KernelLaunch) -> float | None:
    """The bytes that must cross DRAM, when the report says which bytes the kernel asked for: the fewer of the DRAM
    bytes moved (read + written) and the bytes of ncu's ideal sectors of the executed global instructions (x 32 B),
    less the DRAM reads of a repeated pass over data read before (:func:`repeated_dram_bytes`: the instructions asked
    for those bytes, but the algorithm needs them once). None without either: DRAM bytes alone cannot tell
    compulsory traffic from excess sectors that reached DRAM."""
    moved, ideal = dram_bytes(k), k.value(L2_THEORETICAL_SECTORS_IDEAL)
    if not moved or ideal is None:
        return None
    return min(moved, ideal * th.SECTOR_BYTES) - (repeated_dram_bytes(k) or 0.0)


def at_dram_floor(f: KernelFacts) -> bool:
    """DRAM at its roof while moving only compulsory bytes: the duration is within 1/HEALTHY_FRACTION_OF_PEAK of the
    time :func:`compulsory_dram_bytes` take at the DRAM peak, and DRAM is at HEALTHY_FRACTION_OF_PEAK on elapsed
    cycles. No change to the access pattern (coalescing, reuse in L1/L2) can make such a kernel faster than that
    floor at the healthy roof: excess sectors that L1 or L2 absorb are not DRAM time, and only less data is."""
    dram = f.util.get("dram")
    need, peak, d = compulsory_dram_bytes(f.k), f.roof.peak_bytes_per_s.get("dram"), f.k.value(DURATION)
    if dram is None or dram < th.HEALTHY_FRACTION_OF_PEAK or not (need and peak and d):
        return False
    return need / (peak * th.HEALTHY_FRACTION_OF_PEAK) * 1e9 >= d


def l2_sectors_from_l1(k: KernelLaunch) -> float | None:
    """Sectors L1 sent on to L2 for reads and writes (``lts__t_sectors_srcunit_tex_op_read`` + ``_write``); None
    without the reads."""
    reads = k.value(L2_READ_SECTORS)
    if reads is None:
        return None
    return reads + (k.value(L2_WRITE_SECTORS) or 0.0)


def kernel_floor_ns(k: KernelLaunch, fix_unit: str | None = None, fraction: float = 1.0) -> float | None:
    """The shortest duration (ns) physics allows this kernel's work, or None when the report cannot say.

    The larger of: the bytes that must cross DRAM over the DRAM peak, and each precision's FLOPs over the peak
    of the unit that would run them (the tensor path for FP32 work when ``fix_unit == "tensor"``). The bytes
    that must move are the fewer of the DRAM bytes moved and the bytes the executed global instructions asked
    for (ncu's ideal sectors x 32 B): a fix of the access pattern can bring DRAM traffic down to the requested
    bytes, not below; data the caches already serve need not cross DRAM at all, nor the DRAM reads of a second pass
    over data the kernel read before (:func:`repeated_dram_bytes`).

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
    parts = kernel_floor_parts(k, fix_unit, fraction)
    return max(ns for ns, _ in parts) if parts else None


_PEAK_WORDS = {"fp32": "FP32", "fp64": "FP64", "fp16": "FP16", "bf16": "BF16", "tensor": "tensor-core"}


def kernel_floor_parts(
    k: KernelLaunch, fix_unit: str | None = None, fraction: float = 1.0, issue_kept: float | None = None
) -> list[tuple[float, str]]:
    """The terms of :func:`kernel_floor_ns`, each ``(ns, what it is in words)``: the compulsory DRAM bytes at the
    DRAM peak, each precision's FLOPs at its unit's peak, a kept pipe's busy time; [] when the report gives none.

    ``issue_kept``: the share of today's warp instructions a fix keeps (1.0 for a fix that overlaps the same work
    better, None when it changes the instruction stream): they need at least their issue time at the SMs' peak
    issue rate (one warp instruction per scheduler per cycle), the duration x the issue's elapsed utilisation."""
    roof = roofline(k)
    d = k.value(DURATION)
    floors: list[tuple[float, str]] = []
    moved = dram_bytes(k)
    peak_bw = roof.peak_bytes_per_s.get("dram")
    if moved is None and d and peak_bw and "dram" in roof.utilization:
        moved = roof.utilization["dram"] * peak_bw * d * 1e-9
    ideal = k.value(L2_THEORETICAL_SECTORS_IDEAL)
    if moved is not None and ideal is not None:
        moved = min(moved, ideal * th.SECTOR_BYTES)
    if moved is not None:
        moved -= repeated_dram_bytes(k) or 0.0  # a second pass over data read once before need not cross DRAM
    if moved is not None and peak_bw:
        floors.append(
            (
                moved / (peak_bw * fraction) * 1e9,
                f"{_fmt(moved, 'B')} over DRAM at {_fmt(fraction, 'fraction')} of its {_fmt(peak_bw / 1e9, 'GB/s')} peak",
            )
        )
    if d:
        for prec, rate in roof.flops.items():
            unit = "tensor" if (prec == "fp32" and fix_unit == "tensor") else prec
            if prec == "fp64" and fix_unit == "fp32":
                unit = "fp32"  # promoted FP64 math kept in FP32 (kprof.rules.kernel.precision)
            peak = roof.peak_flops.get(unit)
            if peak:
                floors.append(
                    (
                        rate * d * 1e-9 / (peak * fraction) * 1e9,
                        f"the {_PEAK_WORDS.get(prec, prec)} FLOPs at {_fmt(fraction, 'fraction')} of the "
                        f"{_PEAK_WORDS.get(unit, unit)} peak",
                    )
                )
        if fix_unit is None:
            for pipe in ("tensor_pipe", "fp64_pipe"):
                if pipe in roof.utilization:
                    floors.append(
                        (
                            d * roof.utilization[pipe],
                            f"the {pipe.split('_')[0]} pipe's busy time at 100% of its rate",
                        )
                    )
    issue = issue_elapsed(k) if issue_kept is not None and d else None
    if issue and d and issue_kept is not None:
        inst = k.value("smsp__inst_executed.sum")
        what = f"the {_fmt(int(inst * issue_kept))} warp instructions" if inst else "the warp instructions"
        floors.append((d * issue * issue_kept, f"{what} it keeps at the SMs' peak issue rate"))
    return floors


SM_PIPE_WORDS = {
    "xu_pipe": "XU (special-function and conversion) pipe",
    "fp64_pipe": "FP64 pipe",
    "alu_pipe": "ALU pipe",
    "fmaheavy_pipe": "FMA-heavy (IMAD) pipe",
    "fma_pipe": "FMA pipe",
    "tensor_pipe": "tensor pipe",
}
"""The pipes whose use ``sm__throughput`` takes the maximum of, besides the instruction issue."""


def sm_throughput_pipe(f: KernelFacts) -> tuple[str, float, float] | None:
    """(pipe words, pipe use, instruction issue over elapsed cycles) when ``sm__throughput`` is set by a pipe, not by
    the instruction issue: ncu's SM throughput is the busiest of its sub-metrics (issue and each pipe), so with issue
    more than UNIT_TIE_MARGIN below it, the pipe within UNIT_TIE_MARGIN of it is what the SM percentage measures."""
    sm, issue = f.roof.utilization.get("compute"), f.k.value(ISSUE_ELAPSED)
    if sm is None or issue is None or sm - issue / 100.0 <= th.UNIT_TIE_MARGIN:
        return None
    pipes = [(u, name) for name, u in f.roof.utilization.items() if name in SM_PIPE_WORDS]
    if not pipes:
        return None
    u, name = max(pipes)
    if u < sm - th.UNIT_TIE_MARGIN:
        return None
    return SM_PIPE_WORDS[name], u, issue / 100.0


def sm_busy_words(f: KernelFacts, busy: float) -> str:
    """``the SM issues at 90.2% of its peak``, or, when a pipe sets ncu's SM throughput (:func:`sm_throughput_pipe`),
    ``the SM is at 90.2% of its peak throughput, set by the XU (...) pipe at 90.2% (instruction issue 41.6%)``."""
    src = sm_throughput_pipe(f)
    b = f"{round(100 * busy, 1):g}"
    if src is None:
        return f"the SM issues at {b}% of its peak"
    words, u, issue = src
    return (
        f"the SM is at {b}% of its peak throughput, set by the {words} at {round(100 * u, 1):g}% "
        f"(instruction issue {round(100 * issue, 1):g}%)"
    )
