"""The ten classes of error of issue 12, each on a workload of its class (built in code from the facts that
define it) and on workloads of other classes with the same pipes busy, where the rule must not fire.

The synthetic launches reuse tests/diagnose/test_kernel.py's H200-like base (132 SMs, neutral metrics); the real
reports (samples, the blind validation gallery, the corpus) are covered by test_invariants.py and
test_gallery.py.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from kprof import thresholds as th
from kprof.diagnose.kernel import DURATION, diagnose_launch, has_tensor_cores, kernel_floor_ns, metric_value
from kprof.diagnose.sass import analyze_sass, dataflow
from kprof.kernel_model import KernelLaunch, Metric, SassLine
from kprof.model import Bottleneck, Diagnosis, Verdict
from tests.diagnose.test_kernel import (
    DRAM,
    GLD_R,
    GLD_S,
    GST_R,
    GST_S,
    L1,
    L2,
    LONG_SB,
    MEM,
    SLD_C,
    SLD_R,
    SLD_W,
    SOL,
    WAVES,
    _check_contract,
    mk,
    sgemm_metrics,
    sgemm_sass,
)

B = Bottleneck
TENSOR_ACTIVE = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
TENSOR_ELAPSED = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
FMA_PIPE = "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed"
IDEAL = "memory_l2_theoretical_sectors_global_ideal"
ACTUAL = "memory_l2_theoretical_sectors_global"


def diag(k: KernelLaunch) -> Diagnosis:
    d = diagnose_launch(k)
    _check_contract(d)
    return d


def on(k: KernelLaunch, device: str, cc: str) -> KernelLaunch:
    return dataclasses.replace(k, device=device, compute_capability=cc)


def listing(*lines: tuple[str, float]) -> list[tuple[str, float]]:
    return list(lines)


# ----------------------------------------------------------------------------- 1. roof on elapsed cycles
def few_block_gemm(tensor_elapsed: float | None) -> KernelLaunch:
    """8 blocks of a tensor-core GEMM on 132 SMs: its 8 SMs' tensor pipes at 90% of *their* active cycles."""
    m: dict[str, float | None] = {
        TENSOR_ACTIVE: 90.0,
        SOL: 5.6,
        MEM: 4.0,
        DRAM: 1.0,
        L2: 3.0,
        L1: 5.0,
        WAVES: 0.06,
        "sm__cycles_active.avg": 61.0,
        "sm__cycles_elapsed.avg": 1000.0,
    }
    if tensor_elapsed is not None:
        m[TENSOR_ELAPSED] = tensor_elapsed
    return mk(m, grid=(8, 1, 1), block=(384, 1, 1), sass=("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24",))


@pytest.mark.parametrize("tensor_elapsed", [5.5, None], ids=["elapsed metric", "active metric only"])
def test_a_pipe_busy_on_few_sms_is_not_at_the_roof(tensor_elapsed: float | None) -> None:
    d = diag(few_block_gemm(tensor_elapsed))
    assert d.verdict is not Verdict.HEALTHY
    assert d.bottleneck is B.SMALL_GRID
    # the active-cycle value is put on elapsed time through the SMs' busy fraction: 90% x 6.1% = 5.5%
    assert metric_value(few_block_gemm(None), "derived:tensor_utilization") == pytest.approx(5.49, abs=0.01)


def test_a_full_grid_at_the_tensor_roof_is_healthy() -> None:
    k = mk({TENSOR_ELAPSED: 93.0, SOL: 93.0, MEM: 60.0, L1: 60.0}, grid=(132, 1, 1), block=(384, 1, 1))
    assert diag(k).verdict is Verdict.HEALTHY


def test_healthy_needs_a_block_per_sm() -> None:
    """DRAM at 85% from 100 blocks on 132 SMs: at the roof, but not healthy; the reason is said."""
    k = mk({DRAM: 85.0, MEM: 85.0, L2: 70.0, "sm__cycles_active.avg": 850.0}, grid=(100, 1, 1))
    d = diag(k)
    assert d.verdict is Verdict.FIX
    assert "does not fill the GPU" in d.headline and "100 blocks for 132 SMs" in d.headline


# ----------------------------------------------------------------------------- 2. healthy = required work
def test_dram_at_the_roof_moving_only_requested_bytes_is_healthy_without_stall_data() -> None:
    stalls = {n: None for n in (LONG_SB, "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio")}
    k = mk({DRAM: 90.0, MEM: 90.0, L2: 60.0, ACTUAL: 5e7, IDEAL: 5e7, **stalls})
    d = diag(k)
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY


def test_fp32_gemm_saturating_l1_by_reloads_is_a_fix_without_tensor_cores() -> None:
    """A 16x16 shared-tiled SGEMM on a GTX 1660 (no tensor cores): L1 at 95% because each FMA loads 8 B."""
    k = on(mk(sgemm_metrics(), sass=sgemm_sass()), "NVIDIA GeForce GTX 1660 Ti", "7.5")
    d = diag(k)
    assert d.verdict is Verdict.FIX and d.bottleneck is B.L1_SHARED_BANDWIDTH_BOUND
    assert "reload" in d.headline and "register tile" in d.fix.lower()
    assert (
        "tensor" in d.fix.lower() and "no tensor cores" in d.fix
    )  # says why not, never "use the tensor cores"
    assert d.evidence[0].metric == "sass:load_bytes_per_fma" and d.evidence[0].value > 1.0


def test_register_tiled_gemm_at_the_fma_roof_is_healthy_compute_bound() -> None:
    """8x8 register tiles: 0.25 loads per FMA, FMA pipe at 88%: the FLOPs are the math's; TF32 is advice."""
    sass = listing(
        ("S2R R0, SR_TID.X", 1e5),
        ("LDS.128 R8, [R2]", 1e7),
        ("LDS.128 R12, [R3]", 1e7),
        *((f"FFMA R{20 + i}, R{8 + i // 4}, R{12 + i % 4}, R{20 + i}", 1e7) for i in range(16)),
        ("@P0 BRA 0x10", 1e6),
    )
    m = sgemm_metrics() | {L1: 40.0, MEM: 40.0, SOL: 90.0, FMA_PIPE: 88.0}
    d = diag(mk(m, sass=sass))
    assert d.bottleneck is B.COMPUTE_BOUND and d.verdict is Verdict.HEALTHY
    assert any(f.bottleneck is B.NO_TENSOR_CORES for f in d.findings)


# ----------------------------------------------------------------------------- 3. matrix structure
HORNER = listing(
    ("S2R R0, SR_TID.X", 1e6),
    ("LDG.E R2, desc[UR4][R4.64]", 1e6),
    *(("FFMA R3, R3, R2, c[0x0][0x170]", 1e6) for _ in range(12)),
    ("STG.E desc[UR4][R6.64], R3", 1e6),
)
FMA_CHAIN = listing(("S2R R0, SR_TID.X", 1e6), *(("FFMA R3, R3, R4, R5", 1e6) for _ in range(16)))
TRANSCENDENTAL = listing(
    ("S2R R0, SR_TID.X", 1e6),
    ("LDG.E R2, desc[UR4][R4.64]", 1e6),
    *(("MUFU.EX2 R3, R2", 1e6) for _ in range(4)),
    *(("FFMA R3, R3, R2, R2", 1e6) for _ in range(6)),
)
COMPUTE_HEAVY = {L1: 10.0, MEM: 10.0, SOL: 85.0, FMA_PIPE: 85.0, DRAM: 1.0, L2: 2.0}


@pytest.mark.parametrize(
    "sass", [HORNER, FMA_CHAIN, TRANSCENDENTAL], ids=["horner", "fma chain", "transcendental"]
)
def test_fma_heavy_code_without_matrix_structure_never_gets_tensor_core_advice(sass: list) -> None:
    d = diag(mk(sgemm_metrics() | COMPUTE_HEAVY, sass=sass))
    assert d.bottleneck is not B.NO_TENSOR_CORES
    assert all(f.bottleneck is not B.NO_TENSOR_CORES for f in d.findings)
    assert "tensor core" not in d.fix.lower()


def test_horner_at_the_fma_roof_is_compute_bound_healthy() -> None:
    d = diag(mk(sgemm_metrics() | COMPUTE_HEAVY, sass=HORNER))
    assert d.bottleneck is B.COMPUTE_BOUND and d.verdict is Verdict.HEALTHY


def test_shared_tiled_gemm_is_matrix_work() -> None:
    flow = dataflow(
        [SassLine(pc=16 * i, text=t, counters={"inst_executed": c}) for i, (t, c) in enumerate(sgemm_sass())]
    )
    assert (
        flow.fma_from_loads_share == 1.0
        and flow.per_fma(flow.global_load_bytes) < th.MATRIX_MAX_GLOBAL_BYTES_PER_FMA
    )
    assert diag(mk(sgemm_metrics(), sass=sgemm_sass())).bottleneck is B.NO_TENSOR_CORES


@pytest.mark.parametrize(
    ("device", "cc", "has"),
    [
        ("NVIDIA GeForce GTX 1650", "7.5", False),
        ("NVIDIA GeForce GTX 1660 SUPER", "7.5", False),
        ("Tesla P100-PCIE-16GB", "6.0", False),
        ("NVIDIA T400 4GB", "7.5", False),
        ("Tesla T4", "7.5", True),
        ("NVIDIA A10G", "8.6", True),
    ],
)
def test_tensor_cores_by_gpu(device: str, cc: str, has: bool) -> None:
    k = KernelLaunch(id=0, name="k", device=device, compute_capability=cc)
    assert has_tensor_cores(k) is has
    d = diag(on(mk(sgemm_metrics(), sass=sgemm_sass()), device, cc))
    assert (d.bottleneck is B.NO_TENSOR_CORES) is has


# ----------------------------------------------------------------------------- 4. access width
def streaming_128(remainder_executed: float) -> KernelLaunch:
    """A float4 copy: 16 sectors per request is ideal; a scalar remainder loop that runs (almost) never."""
    sass = listing(
        ("S2R R0, SR_TID.X", 1e6),
        ("LDG.E.128 R4, desc[UR4][R2.64]", 1e6),
        ("STG.E.128 desc[UR4][R8.64], R4", 1e6),
        ("LDG.E R4, desc[UR4][R2.64]", remainder_executed),
        ("STG.E desc[UR4][R8.64], R4", remainder_executed),
    )
    m = {GLD_S: 1.6e7, GLD_R: 1e6, GST_S: 1.6e7, GST_R: 1e6, DRAM: 90.0, MEM: 90.0, L2: 70.0}
    return mk(m, sass=sass)


def test_unexecuted_scalar_remainder_is_not_the_access_width() -> None:
    s = analyze_sass(streaming_128(0.0).sass)
    assert s.global_load_bytes_per_thread == 16
    d = diag(streaming_128(0.0))
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY


def test_generic_ld_128_counts_as_a_128_bit_access() -> None:
    s = analyze_sass([SassLine(pc=0, text="LD.E.128 R4, [R2.64]", counters={"inst_executed": 10})])
    assert s.global_load_bytes_per_thread == 16


def test_ncu_per_instruction_ideal_sets_the_ideal() -> None:
    """ncu's per-PC ideal sectors: the quoted ideal is the measured sectors/request x ideal/actual."""
    sass = [
        SassLine(pc=0, text="S2R R0, SR_TID.X", counters={"inst_executed": 1e6}),
        SassLine(
            pc=16,
            text="LDG.E R4, desc[UR4][R2.64]",
            counters={"inst_executed": 1e6, ACTUAL: 3.2e7, IDEAL: 4e6},
        ),
    ]
    k = dataclasses.replace(
        mk({GLD_S: 3.2e7, ACTUAL: 3.2e7, IDEAL: 4e6, L2: 90.0, MEM: 90.0}), sass=tuple(sass)
    )
    d = diag(k)
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS
    assert d.evidence[0].value == 32.0 and d.evidence[0].reference_value == 4.0
    assert "ncu's ideal sectors" in d.evidence[0].reference


# ----------------------------------------------------------------------------- 5. data-dependent loads
def pointer_chase() -> KernelLaunch:
    sass = [
        SassLine(pc=0, text="S2R R0, SR_TID.X", counters={"inst_executed": 1e5}),
        SassLine(pc=16, text="IMAD.WIDE R2, R0, 0x8, R4", counters={"inst_executed": 1e5}),
        SassLine(
            pc=32,
            text="LDG.E.64 R2, desc[UR4][R2.64]",
            counters={"inst_executed": 1e7, ACTUAL: 3.2e8, IDEAL: 2e7},
        ),
        SassLine(pc=48, text="@P0 BRA 0x20", counters={"inst_executed": 1e7}),
    ]
    m = {
        GLD_S: 3.2e8,
        GLD_R: 1e7,
        ACTUAL: 3.2e8,
        IDEAL: 2e7,
        DRAM: 30.0,
        L2: 35.0,
        MEM: 35.0,
        SOL: 5.0,
        L1: 20.0,
    }
    return dataclasses.replace(mk(m), sass=tuple(sass))


def test_pointer_chase_is_latency_not_uncoalesced() -> None:
    k = pointer_chase()
    assert dataflow(k.sass).dependent_load_share == 1.0
    d = diag(k)
    assert d.bottleneck is B.LATENCY_BOUND
    assert "consecutive threads" not in d.fix
    assert "in flight" in d.fix and "loaded data" in d.headline
    assert any(e.metric == "sass:dependent_load_share" for e in d.evidence)


def test_a_strided_gather_from_index_math_stays_uncoalesced() -> None:
    k = pointer_chase()
    sass = [dataclasses.replace(s, text=s.text.replace("LDG.E.64 R2,", "LDG.E.64 R6,")) for s in k.sass]
    d = diag(dataclasses.replace(k, sass=tuple(sass)))
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS


def test_a_base_pointer_loaded_once_per_block_is_not_a_dependence() -> None:
    """A batched GEMM loads its matrix pointer from an array indexed by blockIdx: the same for every lane."""
    lines = [
        "S2R R1, SR_CTAID.Z",
        "LEA R6, P0, R1, c[0x0][0x160], 0x3",
        "LDG.E.64 R82, desc[UR4][R6.64]",
        "S2R R0, SR_TID.X",
        "LEA R82, P0, R0, R82, 0x2",
        "LDG.E R64, desc[UR4][R82.64]",
    ]
    flow = dataflow([SassLine(pc=16 * i, text=t) for i, t in enumerate(lines)])
    assert flow.global_loads == 2 and flow.dependent_global_loads == 0


# ----------------------------------------------------------------------------- 6. partial reports
def test_bank_conflicts_are_diagnosed_without_speed_of_light() -> None:
    k = mk(
        {
            SOL: None,
            MEM: None,
            DRAM: None,
            L2: None,
            L1: None,
            SLD_W: 1.65e7,
            SLD_R: 1e6,
            SLD_C: 1.55e7,
            "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio": 30.0,
        },
        sass=[("LDS R2, [R3]", 1e6)],
    )
    d = diag(k)
    assert d.bottleneck is B.SHARED_BANK_CONFLICTS and d.verdict is Verdict.FIX
    assert d.confidence.value <= 0.5 and "SpeedOfLight" in d.confidence.would_raise
    assert "--section SpeedOfLight" in d.next_step
    assert any(e.value is None and "SpeedOfLight" in e.name for e in d.evidence)


def test_nothing_decisive_without_speed_of_light_stays_inconclusive() -> None:
    d = diag(mk({SOL: None, MEM: None, DRAM: None, L2: None, L1: None}))
    assert d.verdict is Verdict.INCONCLUSIVE and d.bottleneck is None


# ----------------------------------------------------------------------------- 7. FMA-heavy library kernels
def cublas_sgemm(fma_pipe: float) -> KernelLaunch:
    """cuBLAS SGEMM: ~80% of issued instructions FFMA, the SM issuing at 92%, occupancy capped by registers."""
    sass = listing(
        ("S2R R0, SR_TID.X", 1e5),
        ("LDS.128 R8, [R2]", 1e7),
        ("LDS.128 R12, [R3]", 1e7),
        *((f"FFMA R{20 + i}, R{8 + i // 4}, R{12 + i % 4}, R{20 + i}", 1e7) for i in range(16)),
        ("IADD3 R2, R2, 0x200, RZ", 1e7),
        ("BAR.SYNC.DEFER_BLOCKING 0x0", 1e7),
        ("@P0 BRA 0x10", 1e7),
    )
    m = sgemm_metrics() | {
        SOL: 92.0,
        FMA_PIPE: fma_pipe,
        L1: 50.0,
        MEM: 50.0,
        "launch__occupancy_limit_registers": 1.0,
    }
    return mk(m, sass=sass, regs=232)


@pytest.mark.parametrize("fma_pipe", [86.0, 70.0])
def test_fma_heavy_sgemm_is_never_instruction_bound(fma_pipe: float) -> None:
    d = diag(cublas_sgemm(fma_pipe))
    assert d.bottleneck is not B.INSTRUCTION_BOUND
    assert all(f.bottleneck is not B.INSTRUCTION_BOUND for f in d.findings)
    assert "overhead" not in d.headline


def test_fma_heavy_sgemm_at_its_roof_is_compute_bound_healthy() -> None:
    d = diag(cublas_sgemm(86.0))
    assert d.bottleneck is B.COMPUTE_BOUND and d.verdict is Verdict.HEALTHY


def test_index_math_heavy_kernel_is_still_instruction_bound() -> None:
    sass = listing(
        ("S2R R0, SR_TID.X", 1e5),
        *(("IMAD R2, R2, R3, R4", 1e7) for _ in range(8)),
        ("FFMA R1, R2, R3, R1", 1e7),
    )
    d = diag(mk({SOL: 90.0, MEM: 5.0, DRAM: 2.0, L2: 3.0, L1: 5.0}, sass=sass))
    assert d.bottleneck is B.INSTRUCTION_BOUND
    assert any(e.metric == "derived:work_inst_share" and e.value < 50 for e in d.evidence)


# ----------------------------------------------------------------------------- 8. metrics that exist
def test_h200_dram_bytes_are_read_plus_write() -> None:
    k = mk({"dram__bytes_read.sum": 3e9, "dram__bytes_write.sum": 1e9, DRAM: 91.0, MEM: 91.0})
    assert metric_value(k, "derived:dram_bytes") == 4e9
    d = diag(k)
    assert d.expect[0].metric == "derived:dram_bytes" and d.expect[0].value_now == 4e9
    assert all("dram__bytes.sum" not in (e.metric or "") for e in d.evidence)


def test_pc_sample_stalls_are_named_as_samples() -> None:
    stall_free = {n: None for n in (LONG_SB, "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio")}
    sass = [
        SassLine(
            pc=0,
            text="LDG.E R2, desc[UR4][R4.64]",
            counters={"smsp__pcsamp_warps_issue_stalled_long_scoreboard": 900.0},
        ),
        SassLine(pc=16, text="FADD R3, R2, R2", counters={"smsp__pcsamp_warps_issue_stalled_wait": 50.0}),
    ]
    k = dataclasses.replace(
        mk({SOL: 20.0, MEM: 30.0, DRAM: 25.0, L2: 28.0, L1: 30.0, **stall_free}), sass=tuple(sass)
    )
    d = diag(k)
    stall = next(e for e in d.evidence if e.name.startswith("top warp stall"))
    assert (
        stall.unit == "PC samples" and stall.metric == "sass:smsp__pcsamp_warps_issue_stalled_long_scoreboard"
    )
    assert stall.value == 900.0 and metric_value(k, stall.metric) == 900.0


def test_fp32_intensity_counts_fp32_flops_only() -> None:
    m = sgemm_metrics() | {"sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.per_second": 5e14}
    k = mk(m)
    assert metric_value(k, "derived:fp32_flop_per_dram_byte") == pytest.approx(8.0e12 / 2.2e10)


# ----------------------------------------------------------------------------- 9. expectations obey physics
def test_tensor_core_target_is_never_below_the_tensor_floor() -> None:
    k = mk(sgemm_metrics(), sass=sgemm_sass())
    d = diag(k)
    t = next(e for e in d.expect if e.metric == DURATION)
    floor = kernel_floor_ns(k, fix_unit="tensor")
    assert floor is not None and t.target is not None and t.target >= floor
    # the FP32 FLOPs at the TF32 peak: 8e12 FLOP/s x 100 us / 5.3e14 FLOP/s
    assert floor == pytest.approx(8.0e12 * 100e-6 / 5.3e14 * 1e9, rel=1e-6)


def test_a_mechanism_saves_at_most_its_share() -> None:
    """Uncoalesced loads that cost 78% of the DRAM traffic while DRAM is 40% busy and warps mostly wait on
    something else: the saving is the waste times the share of stalls on global memory, not the whole gap."""
    m = {
        GLD_S: 3.2e7,
        ACTUAL: 3.2e7,
        IDEAL: 7e6,
        DRAM: 40.0,
        L2: 45.0,
        MEM: 45.0,
        SOL: 30.0,
        LONG_SB: 5.0,
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 5.0,
    }
    d = diag(mk(m))
    assert d.bottleneck is B.UNCOALESCED_GLOBAL_ACCESS
    t = next(e for e in d.expect if e.metric == DURATION)
    assert t.target is not None
    saving = 1 - t.target / 100_000.0
    stall_share = 5.0 / (5.0 + 5.0 + 1.0)  # long_scoreboard among long_scoreboard, barrier, wait
    assert 0 < saving <= (1 - 7e6 / 3.2e7) * stall_share + 1e-3


# ----------------------------------------------------------------------------- 10. one number, one value
def test_headline_evidence_and_expectation_quote_one_value() -> None:
    d = diag(
        mk(
            {
                L1: 99.5,
                MEM: 99.0,
                SLD_W: 1.65e7,
                SLD_R: 1e6,
                SLD_C: 1.55e7,
                "smsp__sass_inst_executed_op_shared_st.sum": 5e6,
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 5e6,
            }
        )
    )
    assert d.bottleneck is B.SHARED_BANK_CONFLICTS
    quoted = d.evidence[0].value
    assert f"{quoted:g} wavefronts per shared load" in d.headline
    exp = next(e for e in d.expect if e.metric.startswith("derived:shared"))
    assert exp.value_now == quoted and exp.metric == "derived:shared_load_wavefronts_per_request"


def test_never_below_the_roof_for_a_value_above_it() -> None:
    """L1 at 90.7% with its traffic waste (uncoalesced loads): the reference must not say 'below the 80%'."""
    d = diag(
        mk(
            {
                L1: 90.7,
                MEM: 90.7,
                DRAM: 20.0,
                L2: 30.0,
                SOL: 30.0,
                GLD_S: 1.6e7,
                "sm__cycles_active.avg": 700.0,
            }
        )
    )
    for e in d.evidence:
        for m in re.finditer(r"below (?:the )?(\d+)%", e.reference):
            assert not (
                isinstance(e.value, float) and e.unit.startswith("%") and e.value >= float(m.group(1))
            )


def test_ideal_formula_equals_its_value() -> None:
    """Without per-PC counts the ideal is width x active lanes / 32 B, and the text shows exactly that."""
    k = mk(
        {
            GLD_S: 3.2e7,
            L2: 90.0,
            MEM: 90.0,
            "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio": 30.0,
        }
    )
    d = diag(k)
    e = d.evidence[0]
    w, lanes = re.search(r"(\d+(?:\.\d+)?) B .* x (\d+(?:\.\d+)?) active lanes", e.reference).groups()  # type: ignore[union-attr]
    assert e.reference_value == pytest.approx(float(w) * float(lanes) / 32, abs=0.01)


def test_metric_value_of_pc_counter() -> None:
    k = KernelLaunch(
        id=0,
        name="k",
        metrics={DURATION: Metric(1.0)},
        sass=(SassLine(pc=0, text="NOP", counters={"smsp__pcsamp_sample_count": 3.0}),),
    )
    assert metric_value(k, "sass:smsp__pcsamp_sample_count") == 3.0
    assert metric_value(k, "sass:smsp__pcsamp_warps_issue_stalled_wait") is None
