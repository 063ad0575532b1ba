"""The one table of quantities: which unit each metric a diagnosis quotes is printed in.

Evidence and expectations name the metric they come from (an ncu metric, a ``derived:*`` or ``sass:*`` quantity,
a timeline quantity); :data:`QUANTITIES` says, for each, what it measures and the units its value may carry, and
:func:`units_for` looks a metric (or, for timeline evidence without a metric, its name) up. The units are those
:func:`kprof.model._fmt` prints: times in ``ns`` (or ``us``/``µs``/``ms``/``s``), bytes in ``B``/``byte``, shares in
``%`` (``% of peak`` for a unit's throughput against its peak), counts bare or with what they count.

A unit comes from the quantity, never from the sentence: the per-issue stall ratios
(``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio``, the warps waiting on that reason per
issue-active cycle) sum, over a scheduler's cycles, the warps waiting; divided by the cycles that issued an
instruction they are warp-cycles per issued instruction, which is how NVIDIA's own CPIStall rule reads them ("each
warp ... spends N cycles being stalled ... between issuing two instructions"), never cycles of the SM.
"""

from __future__ import annotations

import re

TIME = frozenset({"ns", "us", "µs", "ms", "s"})
BYTES = frozenset({"B", "byte", "bytes", "kB", "MB", "GB", "TB"})
PERCENT = frozenset({"%"})
OF_PEAK = frozenset({"% of peak", "%"})
COUNT = frozenset({""})
STALL_PER_ISSUE = "warp cycles/issued instruction"
"""The unit of a per-issue stall ratio (see the module docstring)."""
STALL_LATENCY = "cycles/instruction"
"""The unit of a per-instruction stall latency (``smsp__average_warp_latency_issue_stalled_<reason>.ratio``)."""

QUANTITIES: tuple[tuple[str, str, frozenset[str]], ...] = (
    # (metric regex, what it measures, units)
    (
        r"^smsp__average_warps_issue_stalled_\w+_per_issue_active\.ratio$",
        "warp cycles stalled on a reason per issued instruction",
        frozenset({STALL_PER_ISSUE}),
    ),
    (
        r"^smsp__average_warp_latency_issue_stalled_\w+\.ratio$",
        "stall latency per instruction",
        frozenset({STALL_LATENCY}),
    ),
    (r"^sass:smsp__pcsamp_warps_issue_stalled_\w+$", "warp stall samples", frozenset({"PC samples"})),
    (
        r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$",
        "cycles with an instruction issued",
        frozenset({"% of cycles", "%"}),
    ),
    (r"^sm__warps_active\.avg\.pct_of_peak_sustained_active$", "achieved occupancy", PERCENT),
    (
        r"^sm__maximum_warps_per_active_cycle_pct(, launch__occupancy_limit_\w+)?$",
        "theoretical occupancy",
        PERCENT,
    ),
    (
        r"\.pct_of_peak_sustained_(elapsed|active)(, \S+\.pct_of_peak_sustained_elapsed)*$",
        "throughput of a unit",
        OF_PEAK,
    ),
    (r"^gpu__time_duration\.sum$", "kernel duration", TIME),
    (r"^launch__grid_size$", "blocks in the grid", frozenset({"blocks"})),
    (r"^launch__waves_per_multiprocessor$", "waves per SM", frozenset({"waves"})),
    (r"^derived:tail_wave_efficiency$", "waves over whole waves", COUNT),
    (
        r"^smsp__thread_inst_executed_per_inst_executed\.ratio$|^derived:threads_per_inst_executed$",
        "active threads per warp instruction",
        frozenset({"threads"}),
    ),
    (r"^smsp__inst_executed\.sum$", "warp instructions executed", frozenset({"inst"})),
    (
        r"^sass:(async_copies|fp64_widening_conversions|half_conversions|local_instructions|global_atomics)$",
        "instructions executed",
        frozenset({"inst"}),
    ),
    (r"^derived:\w*sectors_per_request$", "sectors per request", frozenset({"sectors/request"})),
    (
        r"^derived:\w*wavefronts_per_(lsu_)?request$",
        "wavefronts per request",
        frozenset({"wavefronts/request"}),
    ),
    (
        r"^derived:(local_memory_sectors)$|^lts__t_sectors\w*\.sum$|^l1tex__t_sectors_pipe_lsu_mem_global_op_(ld|st)\.sum$",
        "sectors",
        frozenset({"sectors"}),
    ),
    (r"^derived:\w*atomic_requests$", "requests", frozenset({"requests"})),
    (
        r"^derived:shared_instructions_per_global_load$",
        "shared-memory instructions per global load instruction",
        frozenset({"inst/load"}),
    ),
    (r"^derived:shared_loads_per_ffma$", "shared-memory load instructions per FFMA", frozenset({"LDS/FFMA"})),
    (
        r"^derived:(dram_bytes|repeated_pass_bytes|single_pass_dram_read_bytes)$|^dram__bytes(_read|_write)?\.sum$",
        "DRAM bytes",
        BYTES,
    ),
    (r"^dram__bytes(_read|_write)?\.sum\.per_second$", "DRAM bandwidth", frozenset({"GB/s"})),
    (
        r"^(derived__)?(lts|l1tex)__\w*bytes\w*\.sum\.per_second$",
        "L2 or L1 bandwidth (roofline.py's byte counters)",
        frozenset({"GB/s"}),
    ),
    (
        r"^derived:(fp32|tensor)_tflops$|^sm__ops_path_tensor_[\w.]+per_second$",
        "operations per second",
        frozenset({"TFLOP/s", "TOPS"}),
    ),
    (r"^derived:fp32_flop_per_dram_byte$", "arithmetic intensity", frozenset({"FLOP/byte"})),
    (r"^sass:load_bytes_per_fma$", "bytes loaded per FMA", frozenset({"B/FMA"})),
    (r"^derived:\w+_utilization$", "throughput of a unit", OF_PEAK),
    (r"^derived:sm_active_pct$", "SM busy share of the elapsed time", PERCENT),
    (r"^(derived|sass):\w+_share$", "share", PERCENT),
    (r"^lts__t_sector\w*_hit_rate\.pct$", "hit rate", PERCENT),
    (
        r"^l1tex__t_sectors_pipe_lsu_mem_global_op_ld\.sum, l1tex__t_sectors_pipe_lsu_mem_global_op_st\.sum$",
        "share of the global sectors",
        PERCENT,
    ),
    (
        r"^l1tex__data_bank_conflicts_\w+\.sum$|^smsp__sass_branch_targets_threads_divergent\.sum$",
        "count",
        COUNT,
    ),
    (r"^(rule:)?[A-Z]\w+$", "an ncu rule's estimate", frozenset({"%", "% est. speedup"})),
    # timeline quantities (kprof.diagnose.timeline.metrics.METRICS)
    (r"^\w+_ns$", "time", TIME),
    (r"^gpu_busy_fraction$", "GPU-busy share of the wall time", PERCENT),
    (r"^gpu_time_share$", "share of the GPU time", PERCENT),
    (r"^(launch|sync|kernel|allocation)_count$|^allocation_calls$", "calls", COUNT),
    (r"^pageable_copy_bytes$", "bytes", BYTES),
)
"""(metric regex, the quantity, its units), first match wins."""

EXPECT_UNITS: dict[str, frozenset[str]] = {
    "gpu_busy_fraction": frozenset({"", "fraction"}),
}
"""Metrics whose expectation holds the value as a fraction (0..1, printed as a percentage) where the evidence
quotes it in percent."""

NAMED: tuple[tuple[str, frozenset[str]], ...] = (
    (r"^(idle time covered by|GPU time in NCCL|CUDA graph time)", PERCENT),
    (r"^(what the host ran|where the host time goes|GPU operations|CUDA API calls|CPU operators)$", COUNT),
    (r"time|idle|start-up|steady state|floor|first CUDA call", TIME),
)
"""Timeline evidence without a metric (a time, a share, or words), looked up by its name."""

_COMPILED = tuple((re.compile(p), units) for p, _, units in QUANTITIES)
_NAMED = tuple((re.compile(p), units) for p, units in NAMED)


def units_for(metric: str | None, name: str = "", *, expectation: bool = False) -> frozenset[str] | None:
    """The units a value of ``metric`` may carry (for evidence without a metric, by its ``name``); None when the
    table has no row for it.

    Examples
    --------
    >>> sorted(units_for("gpu__time_duration.sum"))
    ['ms', 'ns', 's', 'us', 'µs']
    >>> units_for("launch__grid_size")
    frozenset({'blocks'})
    >>> sorted(units_for("gpu_busy_fraction", expectation=True))
    ['', 'fraction']
    """
    if metric is None:
        return next((u for p, u in _NAMED if p.search(name)), None)
    if expectation and metric in EXPECT_UNITS:
        return EXPECT_UNITS[metric]
    return next((u for p, u in _COMPILED if p.search(metric)), None)


def unit_of(metric: str) -> str:
    """The one unit of a metric whose row allows a single unit (what a rule writes beside it).

    Examples
    --------
    >>> unit_of("derived:shared_wavefronts_per_request")
    'wavefronts/request'
    >>> unit_of("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio")
    'warp cycles/issued instruction'
    """
    units = units_for(metric)
    if units is None or len(units) != 1:
        raise KeyError(f"{metric}: no single unit in kprof.facts.quantities")
    return next(iter(units))
