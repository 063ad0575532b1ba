"""The classes of error the tenth blind gallery (data/validation/blind10) exposed at 3a822fd (scored once: bottleneck
7/8, verdict 7/8): an accumulator kept in global memory and stored after every FFMA (``y[r * nvec] += ...``
through pointers that may alias) was called "Healthy: a DRAM stream at its roof" with DRAM at 9.3% and L2 at 81.6%,
because its L2 reads mostly miss. Its L2 traffic never reaches DRAM: 71.3 M coalesced store sectors (2.28 GB) for
114.5 MB of DRAM writes. Two rules now read that:

- an L2 passes a DRAM stream through only when DRAM moves L2_STREAM_DRAM_SHARE or more of the L2's sector traffic
  (streams measured 0.48-0.96, re-written or spilled L2 traffic 0.02-0.33);
- stores re-writing the same lines (coalesced global store sectors L2_REWRITE_FACTOR or more times what the kernel
  can write distinct: DRAM writes plus the L2 capacity) are l2_bandwidth_bound / fix, with the register accumulator
  and ``__restrict__`` as the fix.

Must not fire: streams, copies and gathers at the DRAM roof, uncoalesced (strided) stores (their excess sectors are
the coalescing rule's), spills and local arrays (local stores are not global stores).

The second half holds the classes the independent review of the same gallery found (docs/review/rubric_review_4.md,
at 3a822fd): statements the profile contradicts, each tested on the file that showed it and on one where the
statement must stay as it was.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import pytest

from kprof import thresholds as th
from kprof.diagnose.kernel import diagnose_kernels
from kprof.facts.kernel import UNDER_NCU, build_facts, dram_bytes, sm_throughput_pipe
from kprof.io import load
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric
from kprof.model import Bottleneck, Verdict
from kprof.rules.kernel.local import build_cap, local_kind
from kprof.rules.kernel.memory import l2_rewrites
from kprof.rules.kernel.resource import l2_passes_dram_stream
from tests.conftest import REPO

DATA = REPO / "data"
ALIAS = "validation/blind10/cuda_alias_reload.raw.csv.gz"
STREAMS = (  # DRAM streams through L2 (hit rate < 50%), measured DRAM share of L2 sectors 0.48-0.96
    "samples/ncu/dram_bandwidth_bound.ncu-rep.gz",
    "validation/cuda/triad_f4.ncu-rep.gz",
    "validation/lib/triton_softmax.ncu-rep.gz",
    "validation/heldout/stencil5_smem.ncu-rep.gz",
    "validation/lib/torch_index_select_random.ncu-rep.gz",
    "validation/blind9/k1_copy_coalesced_v2.raw.csv.gz",
)
NOT_REWRITES = (
    *STREAMS,
    "samples/ncu/pair_transpose_before.ncu-rep.gz",  # 32 sectors per store request: uncoalesced, not re-written
    "validation/blind9/k1_copy_strided_v1.raw.csv.gz",  # strided loads and stores
    "samples/ncu/local_memory_spill.ncu-rep.gz",  # local stores
    "validation/blind8/cuda_spill_cap.ncu-rep.gz",
    "validation/cuda/digit_histogram.ncu-rep.gz",  # a run-time indexed local array
    "validation/blind10/cuda_regcap_spill.raw.csv.gz",
)


def _path(rel: str) -> Path:
    p = DATA / rel
    if not p.exists():
        pytest.skip(f"{p} not in this checkout")
    if ".ncu-rep" in p.name:
        pytest.importorskip("ncu_report")
    return p


@cache
def _launch(rel: str) -> KernelLaunch:
    prof = load(_path(rel))
    assert isinstance(prof, KernelProfile)
    return prof.launches[0]


def _facts(k: KernelLaunch):
    return build_facts(k, k.value("gpu__time_duration.sum"), UNDER_NCU)


def _with(k: KernelLaunch, **values: float) -> KernelLaunch:
    metrics = dict(k.metrics)
    for name, v in values.items():
        metrics[name] = Metric(v)
    return dataclasses.replace(k, metrics=metrics)


def test_the_accumulator_stored_every_iteration_is_l2_bound_with_the_register_fix() -> None:
    (d,) = diagnose_kernels(load(_path(ALIAS)))
    assert (d.bottleneck, d.verdict) == (Bottleneck.L2_BANDWIDTH_BOUND, Verdict.FIX), d.headline
    assert "repeated stores" in d.headline
    assert "register" in d.fix and "__restrict__" in d.fix
    # 71,271,832 store sectors against (114.5 MB + 60 MiB) / 32 B = 5.54 M: about 12.9x, quoted as such
    stored = next(e for e in d.evidence if e.metric == "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
    assert stored.value == 71_271_832
    assert "12.9x" in stored.reference
    # the targets lie between the floor (each byte stored once) and today's value, and the time target is
    # reachable: the register accumulator measured 566.0 -> 179.2 us plain (3.16x), the target asks for less
    dur = next(x for x in d.expect if x.metric == "gpu__time_duration.sum")
    assert dur.value_now is not None and dur.target is not None
    assert dur.value_now / 3.16 < dur.target < dur.value_now
    sectors = next(x for x in d.expect if x.metric == stored.metric)
    assert sectors.target is not None and 0 < sectors.target < stored.value


def test_the_accumulator_s_l2_is_not_a_dram_stream() -> None:
    f = _facts(_launch(ALIAS))
    moved, sectors = dram_bytes(f.k), f.v("lts__t_sectors.sum")
    assert moved is not None and sectors
    assert moved / (sectors * th.SECTOR_BYTES) < th.L2_STREAM_DRAM_SHARE  # 0.07
    assert f.v("lts__t_sector_op_read_hit_rate.pct") < 50  # the hit rate alone would call it a stream
    assert not l2_passes_dram_stream(f)


@pytest.mark.parametrize("rel", STREAMS)
def test_streams_still_pass_through_l2(rel: str) -> None:
    assert l2_passes_dram_stream(_facts(_launch(rel)))


@pytest.mark.parametrize("rel", NOT_REWRITES)
def test_repeated_stores_stay_silent_on_streams_strided_stores_and_spills(rel: str) -> None:
    assert l2_rewrites(_facts(_launch(rel))) is None


def test_repeated_stores_need_the_l2_busy_and_the_factor() -> None:
    k = _launch(ALIAS)
    assert l2_rewrites(_facts(k)) is not None
    # L2 below LATENCY_BOUND_FRACTION: not the limiter, silent
    idle = _with(k, **{"lts__throughput.avg.pct_of_peak_sustained_elapsed": 40.0})
    assert l2_rewrites(_facts(idle)) is None
    # the same stores with DRAM receiving what they wrote (2.28 GB): each byte stored once, silent
    written = _with(k, **{"dram__bytes_write.sum": 2.3e9})
    assert l2_rewrites(_facts(written)) is None


# ============================================================ the review's classes (docs/review/rubric_review_4.md)
# Statements the profile contradicts, each a class: the SM percentage read as issue when a pipe sets it, the integer
# unit named after both pipes, "no unit above X%" beside a busier SM, "spill vs indexed array unknown" beside ncu's
# spill count, spill reloads counted as L2 re-reads, FP64 routines named that never executed, "would rise with
# SourceCounters" on a report that has them, "no mechanism explains it" before the construct that explains it.
BLIND10 = "validation/blind10/"
LOCAL_WITH_SASS = (  # (file, what the SASS shows): ncu's spill share must agree with it
    ("validation/blind8/cuda_spill_cap.ncu-rep.gz", "register_spill"),
    ("validation/final/sort_cols_1024.ncu-rep.gz", "register_spill"),
    ("validation/lib/sdpa_flash_bf16.ncu-rep.gz", "register_spill"),
    ("samples/ncu/local_memory_spill.ncu-rep.gz", "dynamic_index"),
    ("validation/blind8/cuda_local_index.ncu-rep.gz", "dynamic_index"),
    ("validation/cuda/digit_histogram.ncu-rep.gz", "dynamic_index"),
)


def _first(rel: str):
    return diagnose_kernels(load(_path(rel)))[0]


def test_a_pipe_that_sets_the_sm_throughput_is_named_not_read_as_issue() -> None:
    f = _facts(_launch(BLIND10 + "cuda_fp64_acc.ncu-rep.gz"))
    src = sm_throughput_pipe(f)
    assert src is not None and src[0].startswith("XU")
    assert src[2] < 0.5  # instruction issue 41.6% of elapsed against sm__throughput 90.2%
    d = _first(BLIND10 + "cuda_fp64_acc.ncu-rep.gz")
    assert "the SM issues at" not in d.headline and "set by the XU" in d.headline
    # the lane-branch kernel: the 91% beside divergence is XU's too
    lane = _first(BLIND10 + "cuda_lane_branch.ncu-rep.gz")
    sm = next(e for e in lane.evidence if e.name.startswith("SM"))
    assert sm.name == "SM throughput" and "XU" in sm.reference


def test_an_sm_whose_issue_is_its_throughput_is_still_issue() -> None:
    f = _facts(_launch(BLIND10 + "cuda_size_t_loop.raw.csv.gz"))
    assert sm_throughput_pipe(f) is None  # sm__throughput 59.3% = issue 59.3%
    d = _first(BLIND10 + "cuda_size_t_loop.raw.csv.gz")
    assert d.bottleneck is Bottleneck.LATENCY_BOUND
    # not "no unit is above 52.2%" while the SM issues at 59.3%
    assert "no unit is above" not in d.headline and "the SM issues at 59.3%" in d.headline


def test_the_integer_unit_is_named_after_its_busier_pipe() -> None:
    d = _first(BLIND10 + "cuda_bucket_mod.ncu-rep.gz")
    assert "IMAD, the FMA-heavy pipe" in d.headline  # FMA-heavy 67.1% > ALU 63.5%
    assert "ALU and IMAD" not in d.headline


def test_a_named_construct_replaces_no_mechanism_explains_it() -> None:
    d = _first(BLIND10 + "cuda_bucket_mod.ncu-rep.gz")
    assert "runtime" in d.mechanism or "run time" in d.mechanism
    assert "no single mechanism" not in d.mechanism
    assert "SourceCounters" not in d.confidence.would_raise  # the report has them


@pytest.mark.parametrize(("rel", "kind"), LOCAL_WITH_SASS)
def test_ncu_s_spill_share_agrees_with_the_sass(rel: str, kind: str) -> None:
    f = _facts(_launch(rel))
    assert f.sass.local_kind == kind
    pct = f.v("derived__local_spilling_requests_pct")
    assert pct is not None
    assert (pct / 100 >= th.LOCAL_SPILL_REQUEST_SHARE) == (kind == "register_spill")


def test_a_spill_without_sass_names_the_build_cap() -> None:
    rel = BLIND10 + "cuda_regcap_spill.raw.csv.gz"
    f = _facts(_launch(rel))
    assert f.sass.empty and local_kind(f) == "register_spill"  # derived__local_spilling_requests_pct = 100
    d = _first(rel)
    assert d.bottleneck is Bottleneck.LOCAL_MEMORY_SPILL
    assert "unknown" not in d.headline
    assert "-maxrregcount=32" in d.fix  # 32 registers, 128-thread blocks could have 255: the build caps them
    # the spill reloads (18.07 M of 22.28 M L2 read sectors missed L1 as local loads) are not L2 re-reads
    assert all(x.bottleneck is not Bottleneck.L2_BANDWIDTH_BOUND for x in d.findings)


def test_a_block_size_cap_is_not_called_a_build_cap() -> None:
    # 1024-thread blocks allow at most 64 registers: the block size, not the build, caps sort_cols_1024
    k = _launch("validation/final/sort_cols_1024.ncu-rep.gz")
    assert k.registers_per_thread == 64 and build_cap(k) is None


def test_fp64_routines_are_named_only_when_they_executed() -> None:
    d = _first(BLIND10 + "cuda_fp64_acc.ncu-rep.gz")  # F2F + DADD, no MUFU.RCP64H, no DFMA
    assert "MUFU.RCP64H" not in d.mechanism and "DFMA" not in d.mechanism
    assert "MUFU.EX2" not in d.fix and "`float acc = 0;`" in d.fix
    assert "XU pipe" in d.mechanism  # the conversions set the pace
    mish = _first("validation/blind4/mish_fp64.ncu-rep.gz")  # log1p(exp(...)) in double: the routines ran
    assert "MUFU.RCP64H" in mish.mechanism and "DFMA" in mish.mechanism


def test_more_warps_is_not_offered_when_the_warp_slots_are_full() -> None:
    d = _first(BLIND10 + "cuda_size_t_loop.raw.csv.gz")  # 92.2% of the warp slots active
    assert "more resident warps" not in d.fix and "92.2%" in d.fix
