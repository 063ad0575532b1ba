"""Kernel diagnosis: every rule on profiles designed in code, then the real samples and the corpus.

The synthetic launches are H200-like (132 SMs, 64 warps per SM); each case sets only the metrics
its mechanism is about, on top of a neutral, well-behaved base.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kprof import thresholds as th
from kprof.diagnose.compare import check_expectation
from kprof.diagnose.kernel import (
    DURATION,
    diagnose_kernels,
    diagnose_launch,
    metric_value,
    stall_reasons,
)
from kprof.diagnose.roofline import roofline
from kprof.io import load
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric, SassLine
from kprof.model import Bottleneck, Diagnosis, Direction, Verdict
from tests.conftest import manifest_entries

B = Bottleneck
SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
L2 = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
L1 = "l1tex__throughput.avg.pct_of_peak_sustained_active"
TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
THREADS = "smsp__thread_inst_executed_per_inst_executed.ratio"
WAVES = "launch__waves_per_multiprocessor"
THEO = "sm__maximum_warps_per_active_cycle_pct"
ACH = "sm__warps_active.avg.pct_of_peak_sustained_active"
LONG_SB = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
GLD_S, GLD_R = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
)
GST_S, GST_R = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
)
SLD_W, SLD_R = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
)
SLD_C = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"

H200 = {"multiprocessor_count": 132, "max_warps_per_multiprocessor": 64, "display_name": "NVIDIA H200"}


def base_metrics() -> dict[str, float]:
    """A neutral launch: 16 waves, full occupancy, coalesced, nothing saturated (45% everywhere)."""
    return {
        DURATION: 100_000.0,
        SOL: 45.0,
        MEM: 45.0,
        DRAM: 45.0,
        L2: 45.0,
        L1: 30.0,
        TENSOR: 0.0,
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 20.0,
        ISSUE: 45.0,
        THREADS: 32.0,
        "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio": 32.0,
        WAVES: 16.0,
        THEO: 100.0,
        ACH: 90.0,
        "launch__occupancy_limit_registers": 8.0,
        "launch__occupancy_limit_shared_mem": 32.0,
        "launch__occupancy_limit_warps": 8.0,
        "launch__occupancy_limit_blocks": 32.0,
        "sm__cycles_active.avg": 990.0,
        "sm__cycles_elapsed.avg": 1000.0,
        LONG_SB: 10.0,
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 1.0,
        GLD_S: 4_000_000.0,
        GLD_R: 1_000_000.0,
        GST_S: 4_000_000.0,
        GST_R: 1_000_000.0,
        "lts__t_sector_op_read_hit_rate.pct": 90.0,
    }


def mk(
    overrides: dict[str, float | None] | None = None,
    *,
    name: str = "k",
    grid: tuple[int, int, int] = (16 * 132 * 8, 1, 1),
    block: tuple[int, int, int] = (256, 1, 1),
    regs: int = 32,
    sass: tuple[str, ...] | list[tuple[str, float]] = (),
    launch_id: int = 0,
) -> KernelLaunch:
    metrics = base_metrics()
    for key, v in (overrides or {}).items():
        if v is None:
            metrics.pop(key, None)
        else:
            metrics[key] = v
    lines = []
    for i, item in enumerate(sass):
        text, count = (item, None) if isinstance(item, str) else item
        lines.append(
            SassLine(pc=16 * i, text=text, counters={} if count is None else {"inst_executed": count})
        )
    return KernelLaunch(
        id=launch_id,
        name=name,
        demangled_name=f"void {name}(float*)",
        grid=grid,
        block=block,
        registers_per_thread=regs,
        device="NVIDIA H200",
        device_attributes=H200,
        metrics={k: Metric(v, "ns" if k == DURATION else "") for k, v in metrics.items()},
        sass=tuple(lines),
    )


def diag(k: KernelLaunch, **kw: Any) -> Diagnosis:
    d = diagnose_launch(k, **kw)
    _check_contract(d)
    return d


def _check_contract(d: Diagnosis) -> None:
    """What every kernel Diagnosis must carry (DESIGN.md, "What a diagnosis is")."""
    assert d.expect, "every diagnosis fills expect"
    assert 1 <= len(d.evidence) <= 3
    assert d.next_step.strip()
    shares = [f.share for f in d.findings if f.share is not None]
    assert shares == sorted(shares, reverse=True), "findings ranked by share of the gap"
    assert Diagnosis.from_dict(json.loads(json.dumps(d.to_dict()))) == d
    for e in d.evidence:
        if "duration" in e.name:
            assert "measured under ncu" in e.name or "timeline" in e.name


# ----------------------------------------------------------------------------- healthy
def test_stream_at_dram_roof_is_healthy_and_advice_is_less_work() -> None:
    d = diag(mk({DRAM: 91.0, L2: 93.0, MEM: 91.0, "lts__t_sector_op_read_hit_rate.pct": 0.0}))
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY
    assert not d.findings
    ev = d.evidence[0]
    assert ev.value == 91.0 and ev.reference_value == 100 * th.HEALTHY_FRACTION_OF_PEAK
    assert "fewer bytes" in d.fix.lower()
    # H200 reports hold dram__bytes_read.sum / _write.sum, not dram__bytes.sum: the documented sum of both
    assert d.expect[0].metric == "derived:dram_bytes" and d.expect[0].direction is Direction.DOWN


def test_just_below_the_roof_is_not_healthy() -> None:
    """DRAM at 79% while warps wait on loads (long_scoreboard): not at the roof, so not healthy, and not named
    DRAM bound either: a level with spare bandwidth is not the limit, the bytes in flight are (latency)."""
    d = diag(mk({DRAM: 100 * th.HEALTHY_FRACTION_OF_PEAK - 1, L2: 70.0, MEM: 79.0, SOL: 20.0}))
    assert d.verdict is Verdict.FIX
    assert d.bottleneck is B.LATENCY_BOUND
    assert d.evidence[0].metric == DRAM and d.evidence[0].value == 79.0


def test_l2_saturated_by_a_dram_stream_is_named_dram() -> None:
    d = diag(mk({DRAM: 75.0, L2: 84.0, MEM: 84.0, "lts__t_sector_op_read_hit_rate.pct": 0.0}))
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY
    assert {e.name for e in d.evidence} >= {"L2 cache bandwidth used", "L2 read hit rate"}


def test_l2_saturated_by_l2_hits_is_l2_bound() -> None:
    d = diag(mk({DRAM: 10.0, L2: 88.0, MEM: 88.0, "lts__t_sector_op_read_hit_rate.pct": 95.0}))
    assert d.bottleneck is B.L2_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY


def cublas_like(
    extra: dict[str, float | None] | None = None, name: str = "nvjet_sm90_tst_256x128"
) -> KernelLaunch:
    """cuBLAS on Hopper: tensor pipe at 97%, 168 registers, 18.75% occupancy, and 'bank conflicts'."""
    m: dict[str, float | None] = {
        TENSOR: 96.9,
        SOL: 93.6,
        MEM: 94.7,
        L1: 98.1,
        L2: 48.3,
        DRAM: 20.8,
        ISSUE: 16.3,
        THEO: 18.75,
        ACH: 14.8,
        "launch__occupancy_limit_registers": 1.0,
        "launch__occupancy_limit_shared_mem": 1.0,
        "launch__occupancy_limit_warps": 5.0,
        WAVES: 1.0,
        GLD_S: None,
        GLD_R: None,
        GST_S: None,
        GST_R: None,
        SLD_W: 43_700_000.0,
        SLD_R: 1_705_468.0,
        SLD_C: 204_000.0,
        "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio": 4.8,
    }
    m.update(extra or {})
    return mk(
        m,
        name=name,
        grid=(132, 1, 1),
        block=(384, 1, 1),
        regs=168,
        sass=("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24",),
    )


def test_cublas_gemm_with_scary_counters_is_healthy() -> None:
    d = diag(cublas_like())
    assert d.bottleneck is B.TENSOR_CORE_BOUND and d.verdict is Verdict.HEALTHY
    assert not d.findings, "counters that explain no gap are not problems"
    text = " ".join([d.headline, d.fix, *(e.name for e in d.evidence)]).lower()
    assert (
        "occupancy" not in d.headline.lower() and "register" not in text and "bank" not in d.headline.lower()
    )
    assert "fewer flops" in d.fix.lower()


def test_cublas_verdict_does_not_depend_on_the_kernel_name() -> None:
    a = diag(cublas_like(name="nvjet_sm90_tst_256x128"))
    b = diag(cublas_like(name="my_kernel"))
    assert (a.bottleneck, a.verdict, a.headline) == (b.bottleneck, b.verdict, b.headline)


def test_tensor_cores_below_the_roof_are_not_healthy() -> None:
    d = diag(cublas_like({TENSOR: 60.0, SOL: 60.0, L1: 62.0, MEM: 62.0}))
    assert d.verdict is not Verdict.HEALTHY


# ----------------------------------------------------------------------------- memory mechanisms
def test_uncoalesced_loads_near_the_dram_roof_are_not_healthy() -> None:
    k = mk({DRAM: 88.0, L2: 92.0, MEM: 92.0, GLD_S: 32_000_000.0, GST_S: 4_000_000.0, SOL: 5.0})
    d = diag(k)
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS and d.verdict is Verdict.FIX
    spr = d.evidence[0]
    assert spr.value == 32.0 and spr.reference_value == pytest.approx(4.0)
    exp = {e.metric: e for e in d.expect}
    assert exp["derived:global_load_sectors_per_request"].target == pytest.approx(4.0, abs=0.1)
    assert exp[DURATION].direction is Direction.DOWN and exp[DURATION].target < 100_000.0
    assert metric_value(k, "derived:global_load_sectors_per_request") == 32.0


def test_vector_loads_are_not_called_uncoalesced() -> None:
    # 16 sectors per request is ideal for LDG.E.128 (32 lanes x 16 B = 512 B)
    k = mk(
        {GLD_S: 16_000_000.0, GLD_R: 1_000_000.0},
        sass=[("LDG.E.128 R4, [R2.64]", 1e6), ("STG.E [R6.64], R4", 1e6)],
    )
    assert diag(k).bottleneck is not B.UNCOALESCED_GLOBAL_ACCESS


def test_ncu_ideal_sectors_take_precedence() -> None:
    # the listing suggests 4-byte loads, but ncu's source counters say the ideal equals the actual
    k = mk(
        {
            GLD_S: 16_000_000.0,
            "memory_l2_theoretical_sectors_global": 2e7,
            "memory_l2_theoretical_sectors_global_ideal": 2e7,
        }
    )
    assert diag(k).bottleneck is not B.UNCOALESCED_GLOBAL_ACCESS


def test_bank_conflicts_when_shared_pipe_is_saturated() -> None:
    d = diag(mk({L1: 99.5, MEM: 99.0, SLD_W: 16_500_000.0, SLD_R: 1_000_000.0, SLD_C: 15_500_000.0}))
    assert d.bottleneck is B.SHARED_BANK_CONFLICTS and d.verdict is Verdict.FIX
    assert d.evidence[0].value == 16.5 and d.evidence[0].reference_value == 1
    # the expectation is the quantity the evidence quotes (wavefronts per shared *load*), with its value
    assert (
        d.expect[0].metric == "derived:shared_load_wavefronts_per_request" and d.expect[0].value_now == 16.5
    )
    assert "33" in d.fix  # the padding


def test_conflicts_that_ncu_calls_ideal_are_not_conflicts() -> None:
    k = mk(
        {
            L1: 99.5,
            MEM: 99.0,
            SLD_W: 16_500_000.0,
            SLD_R: 1_000_000.0,
            "memory_l1_wavefronts_shared": 2e7,
            "memory_l1_wavefronts_shared_ideal": 2e7,
        }
    )
    assert diag(k).bottleneck is not B.SHARED_BANK_CONFLICTS


def local_case(address: str) -> KernelLaunch:
    return mk(
        {
            "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": 6.7e7,
            "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": 1.0e8,
            L2: 93.0,
            MEM: 90.0,
        },
        regs=255,
        sass=[(f"STL [{address}], R5", 1e6), (f"LDL R5, [{address}]", 1e6), ("FFMA R1, R2, R3, R1", 1e6)],
    )


def test_register_spill_is_named_as_such() -> None:
    d = diag(local_case("R1+0x10"))
    assert d.bottleneck is B.LOCAL_MEMORY_SPILL
    assert "register spill" in d.headline and "255 registers" in d.headline
    assert "register" in d.fix.lower()


def test_dynamically_indexed_array_is_not_a_spill() -> None:
    d = diag(local_case("R6"))
    assert d.bottleneck is B.LOCAL_MEMORY_SPILL
    assert "not a register spill" in d.headline
    assert "unroll" in d.fix or "shared memory" in d.fix
    assert d.expect[0].metric == "derived:local_memory_sectors" and d.expect[0].target == 0


def atomic_case(hot: bool) -> KernelLaunch:
    m: dict[str, float | None] = {
        SOL: 0.2,
        MEM: 0.9,
        DRAM: 0.2,
        L2: 0.9,
        L1: 0.5,
        ISSUE: 0.2,
        GST_S: None,
        GST_R: None,
        GLD_R: 131_072.0,
        GLD_S: 524_288.0,
        "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": 131_072.0,
        DURATION: 1_843_328.0,
        "smsp__average_warps_issue_stalled_drain_per_issue_active.ratio": 3000.0,
    }
    if hot:
        m["lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed"] = 33.3
        m["lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed"] = 0.35
    return mk(m)


def test_atomics_on_one_hot_slice() -> None:
    d = diag(atomic_case(hot=True))
    assert d.bottleneck is B.ATOMIC_CONTENTION and d.verdict is Verdict.FIX
    assert d.confidence.value == pytest.approx(0.8)
    assert any("slice" in e.name for e in d.evidence)
    assert "shuffle" in d.fix or "__reduce_add_sync" in d.fix


def test_atomics_without_slice_metrics_are_less_certain() -> None:
    d = diag(atomic_case(hot=False))
    assert d.bottleneck is B.ATOMIC_CONTENTION
    assert d.confidence.value < 0.8 and d.confidence.would_raise


def test_atomics_are_not_contention_when_memory_is_busy() -> None:
    k = mk({"l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": 1_000_000.0, DRAM: 85.0, MEM: 85.0})
    assert diag(k).bottleneck is not B.ATOMIC_CONTENTION


# ----------------------------------------------------------------------------- compute/launch mechanisms
def test_warp_divergence_beats_instruction_bound() -> None:
    d = diag(mk({THREADS: 4.1, SOL: 90.0, MEM: 1.0, DRAM: 0.2, L2: 0.8, L1: 0.1, ISSUE: 53.0}))
    assert d.bottleneck is B.WARP_DIVERGENCE
    assert d.evidence[0].value == 4.1 and d.evidence[0].reference_value == th.WARP_SIZE
    assert d.expect[0].metric == THREADS and d.expect[0].direction is Direction.UP
    assert all(f.bottleneck is not B.WARP_DIVERGENCE for f in d.findings)


def test_instruction_bound_without_divergence() -> None:
    d = diag(mk({SOL: 90.0, MEM: 5.0, DRAM: 2.0, L2: 3.0, L1: 5.0, ISSUE: 90.0}))
    assert d.bottleneck is B.INSTRUCTION_BOUND and d.verdict is Verdict.FIX


def test_small_grid() -> None:
    k = mk(
        {WAVES: 0.0038, "sm__cycles_active.avg": 60.0, SOL: 0.2, MEM: 2.8, DRAM: 2.8, L2: 3.4, L1: 6.6},
        grid=(8, 1, 1),
        block=(128, 1, 1),
    )
    d = diag(k)
    assert d.bottleneck is B.SMALL_GRID and d.verdict is Verdict.FIX
    exp = {e.metric: e for e in d.expect}
    assert exp["launch__grid_size"].target >= 132 and exp["launch__grid_size"].value_now == 8
    assert exp["derived:sm_active_pct"].direction is Direction.UP
    assert exp["derived:sm_active_pct"].value_now == d.evidence[2].value == 6.0
    assert metric_value(k, "derived:sm_active_fraction") == pytest.approx(0.06)


def test_tail_effect() -> None:
    # 1.5 waves: the second wave half full, the SMs busy 76% of the time
    d = diag(
        mk(
            {
                WAVES: 1.5,
                SOL: 50.0,
                MEM: 50.0,
                DRAM: 50.0,
                ISSUE: 70.0,
                LONG_SB: 1.0,
                "sm__cycles_active.avg": 760.0,
            }
        )
    )
    assert d.bottleneck is B.TAIL_EFFECT
    assert d.expect[0].metric == "derived:tail_wave_efficiency"
    assert d.expect[0].value_now == pytest.approx(0.75)
    # the tail costs at most the SMs' idle time (24%), not the half-empty wave's 25%
    t = next(e for e in d.expect if e.metric == DURATION)
    assert t.target == pytest.approx(76_000.0)


def test_a_tail_the_sms_do_not_idle_through_is_not_a_finding() -> None:
    """1.5 waves of uneven blocks that keep every SM 99% busy: the arithmetic tail costs nothing measurable."""
    d = diag(mk({WAVES: 1.5, SOL: 50.0, MEM: 50.0, DRAM: 50.0, ISSUE: 70.0, LONG_SB: 1.0}))
    assert d.bottleneck is not B.TAIL_EFFECT and all(f.bottleneck is not B.TAIL_EFFECT for f in d.findings)


def occupancy_case(issue: float) -> KernelLaunch:
    return mk(
        {
            THEO: 12.5,
            ACH: 12.4,
            "launch__occupancy_limit_shared_mem": 4.0,
            "launch__occupancy_limit_registers": 42.0,
            "launch__occupancy_limit_warps": 32.0,
            WAVES: 1.0,
            ISSUE: issue,
            SOL: 7.0,
            MEM: 10.8,
            DRAM: 10.8,
            L2: 14.1,
            L1: 4.3,
            LONG_SB: 23.7,
        },
        grid=(528, 1, 1),
        block=(64, 1, 1),
    )


def test_occupancy_limited_names_its_limiter() -> None:
    d = diag(occupancy_case(issue=7.4))
    assert d.bottleneck is B.OCCUPANCY_LIMITED
    assert "shared memory" in d.headline and "shared memory" in d.fix
    assert d.expect[0].metric == ACH and d.expect[0].direction is Direction.UP


def test_low_occupancy_with_hidden_latency_is_not_a_finding() -> None:
    d = diag(occupancy_case(issue=80.0))
    assert d.bottleneck is not B.OCCUPANCY_LIMITED
    assert all(f.bottleneck is not B.OCCUPANCY_LIMITED for f in d.findings)


def sgemm_sass(mufu: bool = False) -> list[tuple[str, float]]:
    """The k-loop of a shared-tiled SGEMM: stage a tile (LDG -> STS), then FMAs on two shared operands."""
    lines = [
        ("S2R R0, SR_TID.X", 1e6),
        ("LDG.E R4, desc[UR4][R2.64]", 3.4e7),
        ("STS [R7], R4", 3.4e7),
        ("LDS R12, [R5]", 2.7e8),
        ("LDS.128 R8, [R6]", 6.7e7),
        ("FFMA R1, R12, R8, R1", 2.7e8),
        ("IADD3 R5, R5, 0x4, RZ", 1e8),
        ("@P0 BRA 0x10", 3.4e7),
    ]
    if mufu:
        lines.append(("MUFU.SIN R7, R7", 2e8))
    return lines


def sgemm_metrics() -> dict[str, float | None]:
    return {
        L1: 94.8,
        MEM: 94.5,
        SOL: 74.0,
        DRAM: 0.5,
        L2: 18.4,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed": 2_000.0,
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed": 0.0,
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed": 0.0,
        "smsp__cycles_elapsed.avg.per_second": 2.0e9,
        "sm__cycles_elapsed.avg.per_second": 2.0e9,
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 16_896.0,
        "dram__bytes.sum.per_second": 2.2e10,
        "dram__bytes.sum.peak_sustained": 2_400.0,
        "dram__cycles_elapsed.avg.per_second": 2.0e9,
        "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.per_second": 0.0,
        "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second": 5.3e14,
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.per_second": 0.0,
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained_elapsed.per_second": 1.06e15,
    }


def test_matrix_work_without_tensor_cores_beats_the_l1_roof() -> None:
    d = diag(mk(sgemm_metrics(), sass=sgemm_sass()))
    assert d.bottleneck is B.NO_TENSOR_CORES and d.verdict is Verdict.FIX
    assert "TF32" in d.fix or "tf32" in d.fix.lower()
    assert d.expect[0].direction is Direction.UP and "tensor" in d.expect[0].metric


def test_transcendental_code_is_not_matrix_work() -> None:
    d = diag(mk(sgemm_metrics(), sass=sgemm_sass(mufu=True)))
    assert d.bottleneck is not B.NO_TENSOR_CORES


def test_roofline_uses_the_reports_own_peaks() -> None:
    r = roofline(mk(sgemm_metrics()))
    assert r.flops["fp32"] == pytest.approx(2 * 2_000.0 * 2.0e9)
    assert r.peak_flops["fp32"] == pytest.approx(2 * 16_896.0 * 2.0e9)
    assert r.peak_bytes_per_s["dram"] == pytest.approx(4.8e12)
    # no tensor op ran: the ceiling FP32 matrix work would move to is the dense TF32 path
    assert r.tensor_path == "hgmma_src_tf32_dst_fp32_sparsity_off" and r.peak_flops["tensor"] == 5.3e14
    assert r.intensity("dram") == pytest.approx(8.0e12 / 2.2e10)
    assert r.ridge("fp32", "dram") == pytest.approx(2 * 16_896.0 / 2_400.0)


def test_roofline_from_plain_counts_and_missing_peaks() -> None:
    k = KernelLaunch(
        id=0,
        name="k",
        metrics={
            DURATION: Metric(1_000_000.0, "ns"),
            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": Metric(1_000_000_000, "inst"),
            "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": Metric(0, "inst"),
            "dram__bytes.sum": Metric(4_000_000, "byte"),
        },
    )
    r = roofline(k)
    assert r.flops["fp32"] == pytest.approx(2e12) and r.bytes_per_s["dram"] == pytest.approx(4e9)
    assert "fp32" not in r.peak_flops and not r.has_sol
    assert "fp64" not in r.flops  # never counted: missing, not 0


# ----------------------------------------------------------------------------- latency and missing data
def test_latency_bound_names_the_stall() -> None:
    d = diag(mk({SOL: 20.0, MEM: 35.0, DRAM: 21.0, L2: 28.0, L1: 35.0, LONG_SB: 12.5}))
    assert d.bottleneck is B.LATENCY_BOUND and d.verdict is Verdict.FIX
    assert "long_scoreboard" in d.evidence[1].name
    assert "in flight" in d.fix


def test_no_speed_of_light_is_inconclusive_with_the_exact_command() -> None:
    k = mk({SOL: None, MEM: None, DRAM: None, L2: None, L1: None}, name="few_blocks_reduce")
    d = diag(k)
    assert d.verdict is Verdict.INCONCLUSIVE and d.bottleneck is None
    for part in (
        "ncu --set full",
        "--import-source yes",
        "--clock-control none",  # kprof's capture flags (kprof.commands), as kprof profile runs them
        "-k 'regex:^few_blocks_reduce$'",
        "--launch-count 1",
    ):
        assert part in d.next_step
    assert d.confidence.value <= 0.3


def test_basic_set_cannot_call_a_saturated_l1_healthy() -> None:
    m = {n: None for n in (GLD_S, GLD_R, GST_S, GST_R)}
    m.update({L1: 95.0, MEM: 95.0})
    d = diag(mk(m))
    assert d.verdict is Verdict.INCONCLUSIVE and d.bottleneck is B.L1_SHARED_BANDWIDTH_BOUND
    assert "--section MemoryWorkloadAnalysis_Tables" in d.next_step


def test_template_kernel_names_are_quoted_in_the_command() -> None:
    k = mk({SOL: None, MEM: None}, name="k<4>")
    assert "'regex:^k<4>$'" in diag(k).next_step


def test_ncu_duration_is_labelled_and_timeline_duration_replaces_it() -> None:
    from kprof.timeline_model import KernelTable, Timeline

    k = mk({SOL: 20.0, MEM: 35.0, DRAM: 21.0, L2: 28.0, L1: 35.0}, name="lat")
    d_ncu = diag(k)
    assert any(e.name == "duration (measured under ncu)" for e in d_ncu.evidence)
    table = KernelTable(
        start_ns=np.array([0, 1000, 5000], dtype=np.int64),
        end_ns=np.array([40_000, 41_000, 45_000], dtype=np.int64),
        device=np.zeros(3, np.int16),
        stream=np.zeros(3, np.int32),
        correlation=np.arange(3, dtype=np.int64),
        name_id=np.array([0, 0, 1], dtype=np.int32),
        names=("void lat(float*)", "other"),
        launch_type=np.array([2, 2, 1], dtype=np.int8),
    )
    tl = Timeline(source="t.sqlite", format="nsys", kernels=table)
    (d,) = diagnose_kernels(KernelProfile(source="x.ncu-rep", launches=(k,)), timeline=tl)
    dur = next(e for e in d.evidence if e.name.startswith("duration"))
    assert dur.name == "duration (timeline)" and dur.value == pytest.approx(40.0)
    # the timeline says the launch is cooperative: kernel replay would break it
    assert "--replay-mode application" in d.next_step


def test_most_important_first() -> None:
    healthy = mk({DRAM: 91.0, L2: 93.0, MEM: 91.0, DURATION: 5_000_000.0}, launch_id=0)
    slow = mk({THREADS: 4.0, SOL: 90.0, DURATION: 1_000_000.0}, launch_id=1)
    short = mk({THREADS: 4.0, SOL: 90.0, DURATION: 10_000.0}, launch_id=2)
    ds = diagnose_kernels(KernelProfile(source="x", launches=(healthy, short, slow)))
    assert [d.subject.launch for d in ds] == [1, 0, 2]


def test_stall_reasons_are_ranked_and_exclude_issuing() -> None:
    k = mk(
        {
            "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 99.0,
            "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 20.0,
        }
    )
    r = stall_reasons(k)
    assert list(r)[:2] == ["barrier", "long_scoreboard"] and "selected" not in r


def test_derived_metrics_are_missing_not_zero() -> None:
    k = KernelLaunch(id=0, name="k")
    for name in (
        "derived:global_load_sectors_per_request",
        "derived:local_memory_sectors",
        "derived:sm_active_fraction",
    ):
        assert metric_value(k, name) is None


# ----------------------------------------------------------------------------- real samples
@pytest.mark.parametrize("entry", manifest_entries("ncu"), ids=lambda e: e["file"])
def test_sample_is_diagnosed_as_the_manifest_says(entry: dict, samples_dir: Path) -> None:
    path = samples_dir / entry["file"]
    if entry["kind"] == "ncu-rep":
        pytest.importorskip("ncu_report")
    prof = load(path)
    assert isinstance(prof, KernelProfile)
    d = diagnose_kernels(prof)[0]
    _check_contract(d)
    want = entry["shows"]
    assert (d.bottleneck.value if d.bottleneck else None, d.verdict.value) == (
        want["bottleneck"],
        want["verdict"],
    )


def test_manifest_lists_kernel_samples() -> None:
    entries = manifest_entries("ncu")
    if not entries:
        pytest.skip("no sample gallery")
    kinds = {e["kind"] for e in entries}
    assert {"ncu-rep", "ncu-csv-raw", "ncu-csv-details"} <= kinds


def test_cublas_sample_is_healthy_with_no_findings(samples_dir: Path) -> None:
    pytest.importorskip("ncu_report")
    path = samples_dir / "ncu" / "tensor_core_bound.ncu-rep.gz"
    if not path.exists():
        pytest.skip("sample missing")
    d = diagnose_kernels(load(path))[0]
    assert d.verdict is Verdict.HEALTHY and d.bottleneck is B.TENSOR_CORE_BOUND and not d.findings
    assert d.evidence[0].value > 100 * th.HEALTHY_FRACTION_OF_PEAK


# ----------------------------------------------------------------------------- corpus (A10G, ncu 2023.1)
def _corpus(corpus_dir: Path, name: str) -> KernelProfile:
    p = corpus_dir / "ESMM-Research" / name
    if not p.exists():
        pytest.skip(f"{p} missing")
    if p.suffix == ".ncu-rep":
        pytest.importorskip("ncu_report")
    prof = load(p)
    assert isinstance(prof, KernelProfile)
    return prof


def test_corpus_custom_metrics_only_is_diagnosed_from_what_is_there(corpus_dir: Path) -> None:
    """Custom --metrics without SpeedOfLight (issue 12, class 6): the launch statistics still show two tails
    (1.6 and 1.07 waves on 80 SMs); said at low confidence, naming the missing section. The rest is
    inconclusive with the full-set command."""
    ds = diagnose_kernels(_corpus(corpus_dir, "profile_2025-09-02.ncu-rep"))
    assert len(ds) == 12
    for d in ds:
        _check_contract(d)
        if d.verdict is Verdict.FIX:
            assert d.bottleneck is B.TAIL_EFFECT and d.confidence.value <= 0.5
            assert "SpeedOfLight" in d.next_step and "SpeedOfLight" in d.confidence.would_raise
        else:
            assert d.verdict is Verdict.INCONCLUSIVE and "--set full" in d.next_step
    assert sorted(d.subject.launch for d in ds if d.verdict is Verdict.FIX) == [3, 6]


def test_corpus_roofline_report(corpus_dir: Path) -> None:
    ds = {
        d.subject.launch: d
        for d in diagnose_kernels(_corpus(corpus_dir, "profile_output_2025-03-10.ncu-rep"))
    }
    warptiling = ds[3]
    _check_contract(warptiling)
    # FP32 SGEMM on an A10G: matrix work on FFMA, with the 64-block grid on 80 SMs as a finding
    assert warptiling.bottleneck is B.NO_TENSOR_CORES
    assert B.SMALL_GRID in {f.bottleneck for f in warptiling.findings}


def test_corpus_basic_set(corpus_dir: Path) -> None:
    ds = {d.subject.launch: d for d in diagnose_kernels(_corpus(corpus_dir, "profile_2025-03-31.ncu-rep"))}
    for d in ds.values():
        _check_contract(d)
    # the naive SGEMM: the L1 data pipe at 97% of its wavefront peak with 8.25 wavefronts per LSU request and no
    # shared-memory instruction in the SASS: uncoalesced global loads, estimated from the basic set's breakdown
    assert ds[0].bottleneck is B.UNCOALESCED_GLOBAL_ACCESS and ds[0].verdict is Verdict.FIX
    assert ds[0].evidence[0].value == pytest.approx(8.25, abs=0.01) and ds[0].confidence.value <= 0.5
    # the coalesced version still saturates L1; without the memory tables, whether that is waste is unknown
    assert ds[1].verdict is Verdict.INCONCLUSIVE and ds[1].bottleneck is B.L1_SHARED_BANDWIDTH_BOUND
    # a register-tiled SGEMM (each loaded operand feeds 8 FMAs) on 64 blocks for 80 SMs: both are named
    two = ds[4]
    assert two.verdict is Verdict.FIX
    assert {two.bottleneck} | {f.bottleneck for f in two.findings} >= {B.SMALL_GRID, B.NO_TENSOR_CORES}
    assert ds[5].verdict is Verdict.INCONCLUSIVE and ds[5].bottleneck is None


def test_corpus_csv_details_without_peaks(corpus_dir: Path) -> None:
    ds = diagnose_kernels(_corpus(corpus_dir, "metrics.csv"))
    assert len(ds) == 9
    for d in ds:
        _check_contract(d)
        assert d.verdict is Verdict.INCONCLUSIVE
    basic = next(d for d in ds if d.subject.launch == 0)
    names = {e.name for e in basic.evidence}
    assert {"duration (measured under ncu)", "achieved FP32 throughput"} <= names
    assert basic.evidence[0].value is None  # SpeedOfLight: missing, never 0


@pytest.mark.parametrize("pair", ["pair_transpose", "pair_smem_column_sum"])
def test_before_expectations_are_met_by_the_after_sample(pair: str, samples_dir: Path) -> None:
    """The fix each pair applies is the one kprof recommends: every expectation moves the predicted way."""
    pytest.importorskip("ncu_report")
    before, after = (samples_dir / "ncu" / f"{pair}_{role}.ncu-rep.gz" for role in ("before", "after"))
    if not (before.exists() and after.exists()):
        pytest.skip(f"{pair} not in the sample gallery")
    d = diagnose_kernels(load(before))[0]
    k_after = load(after)[0]
    assert d.expect
    for e in d.expect:
        now = metric_value(k_after, e.metric)
        assert now is not None and e.value_now is not None, e.metric
        moved = now < e.value_now if e.direction is Direction.DOWN else now > e.value_now
        assert moved, f"{e.metric}: {e.value_now} -> {now}"
        if e.target is not None and e.metric != DURATION:
            assert now == pytest.approx(e.target, rel=0.35), e.metric
    # the predicted duration (issue 12, class 9): the fix delivered at least half of the predicted gain (kprof
    # compare's rule), and the target was not past what the after kernel reached by more than the noise
    (dur,) = [e for e in d.expect if e.metric == DURATION]
    check = check_expectation(dur, dur.value_now, metric_value(k_after, DURATION), th.NCU_DURATION_NOISE)
    assert check.met, check.reason


@pytest.mark.parametrize("name", ["pair_transpose_before", "uncoalesced_global_access"])
def test_an_ideal_has_one_value_in_headline_evidence_and_expectation(name: str) -> None:
    """Issue 28: the headline said "an ideal 4.01" sectors where the line and the expectation said 4: ncu's
    counted ideal is quoted to a tenth of a sector (an ideal from the width formula keeps the value its
    formula text gives, tests/diagnose/test_kernel_classes.py)."""
    import re

    p = Path(__file__).resolve().parents[2] / "data" / "samples" / "ncu" / f"{name}.ncu-rep.gz"
    if not p.is_file():
        pytest.skip(f"{p.name} not in the sample gallery")
    pytest.importorskip("ncu_report")
    d = diagnose_kernels(load(p))[0]
    m = re.search(r"against an ideal ([0-9.]+)", d.headline)
    assert m, d.headline
    ev = next(e for e in d.evidence if e.reference_value is not None and "per request" in e.name)
    assert float(m[1]) == ev.reference_value and ev.reference.startswith(f"ideal {m[1]}")
    assert round(ev.reference_value, 1) == ev.reference_value  # no hundredths of a sector
    per_request = next(x for x in d.expect if x.metric == ev.metric)
    assert per_request.target >= ev.reference_value  # the ideal, plus what a data-dependent part leaves
    for w in d.where:
        if "ideal" in w.detail:  # the lines quote their own ideal the same way (3 significant digits)
            assert re.search(r"ideal \d+(\.\d)?\b", w.detail), w.detail
