"""Impossible values inside otherwise valid profiles (issue 31) and ncu's own out-of-range values (issue 23,
point 1), on files planted from the samples (:mod:`tests.reliability.planted`).

- GPU rows of 0 ns (every kernel, half of them, every copy) gave confident ``sync_bound`` / ``transfer_bound``
  fixes: now they are set aside and named, and a table whose every row is 0 ns leaves no verdict. One such row
  among 80 keeps the intact sample's verdict, named.
- A percent of peak 1000x too large ("L2 cache bandwidth at 90840% of peak") leaves no verdict, naming it.
- A GPU clock 5 ms late against the host's, and GPU work on a device the GPU list does not describe, keep their
  verdict and are named.
- A negative value ncu writes itself (an L2 hit count at -2102 sectors, a tensor pipe's minimum at -1.8%, as in
  genuine reports) keeps the intact verdict and is named as a counter artefact; a negative count that the
  verdict reads leaves no verdict; one that no rule reads changes nothing but is named.

Each test compares with the intact sample's own verdict, so none passes by diagnosing nothing. The guards that
no real capture or report trips these checks are in :mod:`tests.reliability.test_impossible_data`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import kprof
from kprof.diagnose.kernel import diagnose_launch
from kprof.kernel_model import KernelLaunch, Metric, ncu_derived
from tests.reliability.planted import (
    CASES,
    GLD_SECTORS,
    L2_SOL,
    RED_HIT,
    TENSOR_MIN,
    THREADS_PER_INST,
    TIMELINE,
    UNREAD_COUNT,
)
from tests.reliability.test_impossible_data import _damaged, _diagnose_json, _first


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, dict[str, Any]]]:
    return _diagnose_json({cid: c.build for cid, c in CASES.items()}, tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="module")
def intact() -> dict[Path, Any]:
    """The first diagnosis of each sample the cases start from, as it is."""
    return {p: kprof.diagnose(p)[0] for p in sorted({c.sample for c in CASES.values()})}


def _outcome(outcomes: dict[str, tuple[str, dict[str, Any]]], case: str) -> dict[str, Any]:
    path, r = outcomes[case]
    d = _first(path, r)
    assert d is not None, r["stderr"]
    return d


def _same_verdict(d: dict[str, Any], intact: dict[Path, Any], case: str) -> None:
    want = intact[CASES[case].sample]
    assert (d["verdict"], d["bottleneck"]) == (want.verdict.value, want.bottleneck.value), d["headline"]


# ----------------------------------------------------------------------------- GPU rows of 0 ns


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("nsys-every-kernel-0ns-memsets-kept", ("every one of its 80 kernel rows lasts 0 ns",)),
        ("kineto-every-kernel-dur-0", ("every one of its 91 kernel rows lasts 0 ns",)),
        ("nsys-every-memcpy-0ns", ("every one of its 12 memory copy rows lasts 0 ns",)),
        ("kineto-every-memcpy-dur-0", ("every one of its 192 memory copy rows lasts 0 ns",)),
        ("nsys-every-kernel-0ns-copies-kept", ("every one of its 18 kernel rows lasts 0 ns",)),
        ("nsys-half-the-kernels-0ns", ("40 of 80 kernel rows", "under 300 ns")),
    ],
)
def test_gpu_rows_of_0ns_leave_no_verdict(
    case: str,
    words: tuple[str, ...],
    outcomes: dict[str, tuple[str, dict[str, Any]]],
    intact: dict[Path, Any],
) -> None:
    """Each gave a confident fix (sync_bound 0.82-0.83, transfer_bound 0.88) before; the intact samples are
    fixes or healthy at >= 0.79."""
    assert intact[CASES[case].sample].verdict.value != "inconclusive"
    d = _outcome(outcomes, case)
    _damaged(d, *words)
    assert d["evidence"], "the rows are the evidence"


def test_one_row_of_0ns_is_named_and_keeps_the_verdict(
    outcomes: dict[str, tuple[str, dict[str, Any]]], intact: dict[Path, Any]
) -> None:
    d = _outcome(outcomes, "nsys-one-kernel-0ns")
    _same_verdict(d, intact, "nsys-one-kernel-0ns")
    assert "1 of 80 kernel rows set aside: lasts under 300 ns" in d["mechanism"], d["mechanism"]


def test_a_trace_in_whole_microseconds_keeps_its_0us_rows(tmp_path: Path) -> None:
    """Kineto traces of integer ``ts``/``dur`` record anything under 1 us as 0 us (the corpus's ResNet-50 trace
    holds 292 such kernels): rounding, not damage. The same trace at ns resolution would lose those rows."""
    tr = json.loads(gzip.decompress((TIMELINE / "host_launch_bound.json.gz").read_bytes()))
    for e in tr["traceEvents"]:
        for f in ("ts", "dur"):
            if isinstance(e.get(f), float):
                e[f] = int(e[f])  # whole microseconds, truncated as old Kineto versions wrote them
    p = tmp_path / "whole_us.json"
    p.write_text(json.dumps(tr))
    tl = kprof.load(p)
    zero = int((tl.kernels.duration_ns == 0).sum())
    assert zero > 1000, zero  # most of its 3,000 kernels last 0.8-1 us: 0 us once truncated
    assert tl.damaged == (), tl.damaged
    assert kprof.diagnose(p)[0].bottleneck.value == "host_launch_bound"


# ----------------------------------------------------------------------------- percent of peak above 100


@pytest.mark.parametrize(
    "case", ["details-percent-x1000", "details-percent-x1000-relabelled", "raw-pct-of-peak-x1000"]
)
def test_a_percent_of_peak_far_above_100_leaves_no_verdict(
    case: str, outcomes: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    """Before: "L2 cache bandwidth at 90840% of peak ... the memory tables were not collected" (details page), or
    healthy at "DRAM bandwidth at 78200.5% of peak" (raw page)."""
    d = _outcome(outcomes, case)
    _damaged(d, "no unit runs above its peak")
    assert "pct_of_peak_sustained_elapsed" in d["headline"], d["headline"]
    assert "memory tables" not in d["headline"] + d["mechanism"]
    assert all(e["metric"] for e in d["evidence"]) and len(d["evidence"]) >= 2, d["evidence"]


def test_one_speed_of_light_value_above_its_peak_leaves_no_verdict(
    outcomes: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    d = _outcome(outcomes, "raw-l2-throughput-150pct")
    _damaged(d, f"{L2_SOL} is 150%")


# ----------------------------------------------------------------------------- clock and device


@pytest.mark.parametrize(
    ("case", "wait"),
    [
        ("kineto-gpu-clock-5ms-late", "GPU work launched before a device-wide synchronization"),
        ("nsys-gpu-clock-5ms-late", "GPU work launched before a device-wide synchronization"),
        ("nsys-gpu-clock-5ms-late-blocking-copy", "the copy of a blocking device-to-host cudaMemcpy"),
    ],
)
def test_a_late_gpu_clock_is_named(
    case: str, wait: str, outcomes: dict[str, tuple[str, dict[str, Any]]]
) -> None:
    """Before: the same verdicts (healthy gpu_bound, a gpu_bound fix, startup_bound) with no word of the clock."""
    d = _outcome(outcomes, case)
    assert d["verdict"] != "inconclusive", d["headline"]
    assert "The GPU clock runs at least 4.9" in d["mechanism"], d["mechanism"]
    assert f"{wait} ended 4.9" in d["mechanism"] and "ms after the call returned" in d["mechanism"]


def test_an_early_gpu_clock_leaves_no_verdict(outcomes: dict[str, tuple[str, dict[str, Any]]]) -> None:
    """GPU work before the calls that launched it: set aside (rule 2), so a whole shifted capture has none left."""
    path, r = outcomes["kineto-gpu-clock-5ms-early"]
    _damaged(_first(path, r))


@pytest.mark.parametrize("case", ["kineto-work-on-device-3", "nsys-work-on-device-3"])
def test_work_on_a_device_the_capture_does_not_describe_is_named(
    case: str, outcomes: dict[str, tuple[str, dict[str, Any]]], intact: dict[Path, Any]
) -> None:
    d = _outcome(outcomes, case)
    _same_verdict(d, intact, case)
    assert (
        "GPU operations ran on device 3, which the capture's GPU list does not describe (it lists device 0: "
        in (d["mechanism"])
    ), d["mechanism"]


# ----------------------------------------------------------------------------- ncu's own negative values


@pytest.mark.parametrize(
    ("case", "metric", "shown"),
    [
        ("raw-red-lookup-hit-minus-2102", RED_HIT, "-2102 sector"),
        ("raw-tensor-min-pct-minus-1.8", TENSOR_MIN, "-1.8%"),
    ],
)
def test_a_negative_value_ncu_writes_keeps_the_verdict_and_is_named(
    case: str,
    metric: str,
    shown: str,
    outcomes: dict[str, tuple[str, dict[str, Any]]],
    intact: dict[Path, Any],
) -> None:
    """Before: "The data is damaged ... (ncu reports no negative value)"."""
    d = _outcome(outcomes, case)
    _same_verdict(d, intact, case)
    assert (
        f"The report holds {shown} for {metric}, a counter artefact that ncu writes itself" in d["mechanism"]
    )
    assert "damaged" not in d["headline"]


def test_a_negative_ratio_the_verdict_reads_is_set_aside(
    outcomes: dict[str, tuple[str, dict[str, Any]]], intact: dict[Path, Any]
) -> None:
    """A value ncu writes itself never blocks, even where a rule reads it: the rule sees it as not collected."""
    log: set[str] = set()
    diagnose_launch(kprof.load(CASES["raw-threads-per-instruction-negative"].sample)[0].reading(log))
    assert THREADS_PER_INST in log, "the divergence rule reads it on this report"
    d = _outcome(outcomes, "raw-threads-per-instruction-negative")
    _same_verdict(d, intact, "raw-threads-per-instruction-negative")
    assert f"The report holds -3 for {THREADS_PER_INST}, a counter artefact" in d["mechanism"], d["mechanism"]


def test_a_negative_count_the_verdict_reads_leaves_no_verdict(
    outcomes: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    d = _outcome(outcomes, "raw-global-load-sectors-negative")
    _damaged(d, GLD_SECTORS, "The rules that judge this launch read")
    assert "edited" not in d["mechanism"], "nothing in the file's structure shows an edit"


def test_a_negative_count_no_rule_reads_changes_nothing_but_is_named(
    outcomes: dict[str, tuple[str, dict[str, Any]]], intact: dict[Path, Any]
) -> None:
    log: set[str] = set()
    diagnose_launch(kprof.load(CASES["raw-unread-count-negative"].sample)[0].reading(log))
    assert GLD_SECTORS in log and UNREAD_COUNT not in log
    d = _outcome(outcomes, "raw-unread-count-negative")
    _same_verdict(d, intact, "raw-unread-count-negative")
    assert f"The report holds -5 for {UNREAD_COUNT}, which no measurement gives" in d["mechanism"], d[
        "mechanism"
    ]


@pytest.mark.parametrize(
    ("name", "derived"),
    [
        (RED_HIT, True),  # hits: computed from lookups and misses
        ("lts__t_sector_op_read_hit_rate.pct", True),
        (TENSOR_MIN, True),  # a per-unit minimum, as a percentage
        ("sm__pipe_fma_cycles_active.min", True),
        ("smsp__thread_inst_executed_per_inst_executed.ratio", True),
        ("derived__memory_l2_theoretical_sectors_global_excessive", True),
        ("dram__bytes_read.sum", False),  # counted
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", False),
        ("dram__bytes_read.sum.per_second", False),  # a count over the kernel's time
        ("gpu__time_duration.sum", False),
        ("sm__cycles_elapsed.avg.per_cycle_elapsed", False),
        ("launch__registers_per_thread", False),
        ("smsp__sass_inst_executed_memdesc_explicit_hitprop_evict_first", False),  # "hitprop" is not a hit
    ],
)
def test_which_metrics_ncu_can_write_negative(name: str, derived: bool) -> None:
    assert (ncu_derived(name) is not None) is derived, ncu_derived(name)


@pytest.mark.parametrize(
    ("name", "value", "odd"),
    [
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 90840.0, True),
        ("dram__throughput.max.pct_of_peak_sustained_elapsed", 111.0, True),
        ("l1tex__throughput.avg.pct_of_peak_sustained_active", 150.0, True),
        ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 104.0, False),  # ncu's overshoot: within 110%
        # one unit's count over the units' mean active cycles: 1,622% in the small_grid sample
        ("smsp__issue_inst0.max.pct_of_peak_sustained_active", 1622.0, False),
        (
            "lts__t_sector_op_write_hit_rate.pct",
            371.9,
            False,
        ),  # a hit rate, not a utilisation (a real 371.9%)
    ],
)
def test_which_percentages_cannot_pass_their_peak(name: str, value: float, odd: bool) -> None:
    k = KernelLaunch(id=0, name="k", metrics={name: Metric(value, "%")})
    assert bool(k.odd_values()) is odd, k.odd_values()


def test_a_capture_with_calls_but_no_gpu_work_loads(tmp_path: Path) -> None:
    """The clock check has no GPU row to match (the corpus's CUPTI range-profiler trace is one such file)."""
    tr = json.loads(gzip.decompress((TIMELINE / "gpu_bound.json.gz").read_bytes()))
    tr["traceEvents"] = [
        e for e in tr["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")
    ]
    p = tmp_path / "no_gpu.json"
    p.write_text(json.dumps(tr))
    tl = kprof.load(p)
    assert len(tl.api) > 0 and tl.gpu_op_count == 0
    assert kprof.diagnose(p)[0].verdict.value == "inconclusive"
