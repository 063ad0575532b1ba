"""The classes of error the seventh blind gallery (data/validation/blind7, issue 23) exposed at 436a5cf (scored once:
bottleneck 15/17, verdict 10/17), on the workloads of their class and where the rules must stay silent.

2. "Healthy" at a roof reached by unnecessary work. A 16x16 shared-tiled SGEMM (one output per thread) at the L1 roof
   (95.2%, 1.25 shared loads per FFMA) and a one-element-per-thread shared-memory tree reduction (L1 83.7%, 5.6
   shared instructions per global load) were called healthy; so was a two-pass RMSNorm at the DRAM roof whose second
   loop reads its row again from DRAM (2.00x the input). The L1 roof is now judged by shared loads per FFMA against the
   register-tiled construction, and by shared instructions per global load against a warp-shuffle reduction; the
   DRAM roof by the DRAM reads of a second loop over the addresses an earlier loop read (from the SASS).
3. A cuBLAS FP32 GEMM at the FP32 roof on an sm_90 GPU is healthy, and now names TF32 as the lever with its precision
   cost and the tensor roof it moves to.
4. Partial reports: a SourceCounters-only report of a divergent kernel and a SpeedOfLight-only report of DAXPY at
   90.4% of DRAM were inconclusive. Divergence now reads SourceCounters' own thread/warp instruction sums; a DRAM
   stream at its roof without the memory tables is healthy with that caveat.
5. One-shot programs (a JIT compile then a few kernels; one cudaMallocManaged then one kernel) are start-up bound.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import pytest

from kprof import thresholds as th
from kprof.diagnose.kernel import diagnose_kernels, diagnose_launch
from kprof.diagnose.timeline import diagnose_timeline
from kprof.facts.kernel import build_facts, kernel_floor_ns, metric_value, repeated_dram_bytes
from kprof.facts.passes import repeated_pass
from kprof.io import load
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric, SassLine
from kprof.model import Bottleneck, Diagnosis, Verdict
from kprof.rules.kernel.matrix import shared_operand_reload, tf32_lever
from kprof.rules.kernel.passes import repeated_dram_pass
from kprof.rules.kernel.reduction import shared_tree_reduction
from tests.conftest import REPO
from tests.diagnose.timeline_builder import MS, US, Builder, launch_bound_iteration

B = Bottleneck
DATA = REPO / "data"
BLIND7 = "validation/blind7/"


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


@cache
def _kernel(rel: str) -> Diagnosis:
    prof = load(_path(rel))
    assert isinstance(prof, KernelProfile)
    return diagnose_kernels(prof)[0]


def _fired(d: Diagnosis) -> set[Bottleneck]:
    return ({d.bottleneck} if d.bottleneck else set()) | {f.bottleneck for f in d.findings}


def _with(k: KernelLaunch, **values: float) -> KernelLaunch:
    """``k`` with some metrics set to other values (a twin of the same kernel that differs in one respect)."""
    metrics = dict(k.metrics)
    for name, v in values.items():
        metrics[name.replace("__DOT__", ".")] = Metric(v)
    return dataclasses.replace(k, metrics=metrics)


def _facts(k: KernelLaunch):
    return build_facts(k, k.value("gpu__time_duration.sum"), "measured under ncu", source_format="ncu-csv-raw")


L1_PCT = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"


# ============================================================================ 2a. a GEMM's L1 roof reached by reloads


def test_shared_tiled_sgemm_at_the_l1_roof_is_a_fix_with_the_register_tile() -> None:
    d = _kernel(BLIND7 + "cuda_sgemm_tiled16.raw.csv.gz")
    assert d.bottleneck is B.L1_SHARED_BANDWIDTH_BOUND and d.verdict is Verdict.FIX, d.headline
    ev = {e.metric: e for e in d.evidence}
    assert ev["derived:shared_loads_per_ffma"].value == pytest.approx(1.25, abs=0.01)
    assert ev["derived:shared_loads_per_ffma"].reference_value == th.REGISTER_TILE_SHARED_LOADS_PER_FFMA
    assert "8x8" in d.fix and "float4" in d.fix and "0.0625" in d.fix
    lds = next(x for x in d.expect if x.metric == "derived:shared_loads_per_ffma")
    assert lds.target == th.REGISTER_TILE_SHARED_LOADS_PER_FFMA
    # the labeller's not-list: the FMA pipe is idle (not compute), TF32 is not the first finding
    assert not _fired(d) & {B.COMPUTE_BOUND, B.NO_TENSOR_CORES, B.SHARED_BANK_CONFLICTS, B.LATENCY_BOUND}
    dur = next(x for x in d.expect if x.metric == "gpu__time_duration.sum")
    assert dur.target is not None and dur.target >= 3.757e6  # the register-tiled twin: 3.757 ms under ncu


def test_the_register_tiled_twin_and_cublas_are_not_reload_bound() -> None:
    """0.0625 and 0.047 shared loads per FFMA: under the 0.25 wavefronts per FFMA the L1 serves."""
    for rel in ("cuda_sgemm_reg8x8.raw.csv.gz", "lib_sgemm_fp32.raw.csv.gz"):
        d = _kernel(BLIND7 + rel)
        assert B.L1_SHARED_BANDWIDTH_BOUND not in _fired(d), (rel, d.headline)
        assert shared_operand_reload(_facts(_launch(BLIND7 + rel))) is None
    assert _kernel(BLIND7 + "cuda_sgemm_reg8x8.raw.csv.gz").bottleneck is B.COMPUTE_BOUND


def test_reload_rule_needs_the_l1_roof_and_ffma_work() -> None:
    k = _launch(BLIND7 + "cuda_sgemm_tiled16.raw.csv.gz")
    assert shared_operand_reload(_facts(k)) is not None
    # the same counts below the roof: the stall reasons decide, not this rule
    assert shared_operand_reload(_facts(_with(k, **{L1_PCT: 70.0}))) is None
    # the tensor pipe doing the math: the FFMAs are an epilogue, not the product
    busy_tensor = _with(k, **{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed": 60.0})
    assert shared_operand_reload(_facts(busy_tensor)) is None


def test_the_sass_path_still_decides_when_the_report_has_sass() -> None:
    """The same kernel class with SASS (the sample) keeps its SASS verdict: no counter-path reload on top."""
    d = _kernel("samples/ncu/no_tensor_cores.ncu-rep.gz")
    assert d.bottleneck is B.NO_TENSOR_CORES
    assert shared_operand_reload(_facts(_launch("samples/ncu/no_tensor_cores.ncu-rep.gz"))) is None


# ============================================================================ 2b. a reduction's L1 roof reached by its tree


def test_shared_tree_reduction_at_the_l1_roof_is_a_fix_with_warp_shuffles() -> None:
    d = _kernel(BLIND7 + "cuda_reduce_tree.raw.csv.gz")
    assert d.bottleneck is B.L1_SHARED_BANDWIDTH_BOUND and d.verdict is Verdict.FIX, d.headline
    ev = {e.metric: e for e in d.evidence}
    assert ev["derived:shared_instructions_per_global_load"].value == pytest.approx(5.62, abs=0.01)
    assert "__shfl_down_sync" in d.fix and "many elements per thread" in d.fix
    assert not _fired(d) & {B.DRAM_BANDWIDTH_BOUND, B.LATENCY_BOUND, B.SHARED_BANK_CONFLICTS, B.WARP_DIVERGENCE}
    dram = next(x for x in d.expect if x.metric == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")
    assert dram.target == 100 * th.HEALTHY_FRACTION_OF_PEAK  # the shuffle twin reached 94.7%
    dur = next(x for x in d.expect if x.metric == "gpu__time_duration.sum")
    assert dur.target is not None and dur.target >= 236.2e3  # the shuffle twin: 236 us under ncu


@pytest.mark.parametrize(
    "rel",
    [
        BLIND7 + "cuda_reduce_shfl.raw.csv.gz",  # the shuffle twin: healthy at DRAM
        BLIND7 + "part_bank_conflict32.raw.csv.gz",  # a transpose through shared memory: writes what it reads
        "validation/heldout/hist_smem_uniform.ncu-rep.gz",  # a histogram: shared atomics, not loads and stores
        "validation/heldout/torch_cumsum_rows.raw.csv.gz",  # a scan: output as large as the input
        "validation/heldout/tree_reduce_sync.ncu-rep.gz",  # a tree at 71% of L1: below the roof, other rules decide
        "samples/ncu/shared_bank_conflicts.ncu-rep.gz",  # a mat-vec through shared memory at the L1 roof
    ],
)
def test_tree_rule_stays_silent_on_other_shared_memory_kernels(rel: str) -> None:
    assert shared_tree_reduction(_facts(_launch(rel))) is None


def test_tree_rule_needs_a_reduction() -> None:
    k = _launch(BLIND7 + "cuda_reduce_tree.raw.csv.gz")
    assert shared_tree_reduction(_facts(k)) is not None
    # the same tree writing half of what it reads is not a reduction
    half = _with(k, dram__bytes_write__DOT__sum=k.value("dram__bytes_read.sum") / 2)
    assert shared_tree_reduction(_facts(half)) is None


# ============================================================================ 2c. a DRAM roof reached by a second pass


def test_two_pass_rmsnorm_is_a_fix_at_the_single_pass_floor() -> None:
    d = _kernel(BLIND7 + "cuda_rmsnorm_2pass.ncu-rep.gz")
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.FIX, d.headline
    assert "twice" in d.headline and "2.00x" in d.headline
    assert "rmsnorm_2pass.cu:27" in d.mechanism and "rmsnorm_2pass.cu:13" in d.mechanism
    assert "registers" in d.fix and "shared memory" in d.fix
    k = _launch(BLIND7 + "cuda_rmsnorm_2pass.ncu-rep.gz")
    read = k.value("dram__bytes_read.sum")
    assert read is not None
    once = read - (repeated_dram_bytes(k) or 0.0)
    assert once == pytest.approx(536.9e6 + 0.9e6, rel=0.01)  # the input once, plus the 64 KB weight's reads
    reads = next(x for x in d.expect if x.metric == "dram__bytes_read.sum")
    assert reads.target == pytest.approx(once, rel=1e-6)
    # the duration target is the single-pass floor at the healthy roof, and the one-pass twin (260 us) meets it
    dur = next(x for x in d.expect if x.metric == "gpu__time_duration.sum")
    floor = kernel_floor_ns(k, None, th.HEALTHY_FRACTION_OF_PEAK)
    assert floor is not None and dur.target == pytest.approx(floor, rel=0.01) and dur.target >= 260.0e3
    assert not _fired(d) & {B.L2_BANDWIDTH_BOUND, B.LATENCY_BOUND, B.UNCOALESCED_GLOBAL_ACCESS}


def test_a_second_pass_that_hits_in_l2_is_not_dram_traffic() -> None:
    """The same SASS with DRAM reads at one pass: the second loop's bytes came from L2, the DRAM roof is the data's."""
    k = _launch(BLIND7 + "cuda_rmsnorm_2pass.ncu-rep.gz")
    once = _with(k, dram__bytes_read__DOT__sum=537.7e6)
    assert repeated_pass(once.sass) is not None and repeated_dram_bytes(once) == 0.0
    assert repeated_dram_pass(build_facts(once, once.value("gpu__time_duration.sum"), "ncu")) is None


def _listing(body: list[str], counts: dict[int, float] | None = None) -> tuple[SassLine, ...]:
    """A SASS listing from instruction texts, PCs 0x10 apart, every line executed 100 times unless ``counts`` says."""
    out = []
    for i, t in enumerate(body):
        n = (counts or {}).get(i, 100.0)
        out.append(SassLine(pc=0x1000 + 16 * i, text=t, counters={"inst_executed": n}))
    return tuple(out)


_PROLOGUE = [
    "S2R R0, SR_TID.X",
    "S2R R1, SR_CTAID.X",
    "ULDC.64 UR4, c[0x0][0x210]",
    "IMAD.WIDE.U32 R2, R1, 0x4000, RZ",
    "IMAD.WIDE R4, R0, 0x4, R2",
    "LEA R6, P0, R4, UR4, 0x2",
]


def _two_loops(second_start: str, second_base: str = "R6") -> tuple[SassLine, ...]:
    """Loop 1 (PCs of body lines 0..3) reads [R8] from R6 on; loop 2 starts at ``second_start`` and reads from it."""
    pre = len(_PROLOGUE)
    body = [
        *_PROLOGUE,
        "MOV R8, R6",
        "LDG.E.128 R12, desc[UR6][R8.64]",
        "IADD3 R8, R8, 0x800, RZ",
        f"@P1 BRA {0x1000 + 16 * (pre + 1):#x}",
        second_start,
        "LDG.E.128 R16, desc[UR6][R10.64]",
        "IADD3 R10, R10, 0x800, RZ",
        f"@P1 BRA {0x1000 + 16 * (pre + 5):#x}",
    ]
    return _listing(body)


def test_repeated_pass_needs_the_same_start_address() -> None:
    same = _two_loops("MOV R10, R6")
    rp = repeated_pass(same)
    assert rp is not None and rp.base == "c[0x0][0x210]" and rp.repeated_bytes == 100 * 32 * 16
    # the second loop reading the other half of the row (a constant offset) reads different addresses
    assert repeated_pass(_two_loops("IADD3 R10, R6, 0x8000, RZ")) is None
    # continuing from where the first loop stopped: R8 after the loop depends on its trip count
    assert repeated_pass(_two_loops("MOV R10, R8")) is None
    # without executed counts the bytes (and the path taken) are unknown
    static = tuple(dataclasses.replace(s, counters={}) for s in same)
    assert repeated_pass(static) is None


def test_a_table_every_block_reads_is_not_a_repeated_pass() -> None:
    """Addresses without the block index (a weight vector, a lookup table): every block reads the same bytes, which
    the caches serve; not each block's data read twice."""
    body = [
        "S2R R0, SR_TID.X",
        "ULDC.64 UR4, c[0x0][0x218]",
        "IMAD.WIDE R6, R0, 0x10, RZ",
        "IADD3 R6, R6, UR4, RZ",
        "MOV R8, R6",
        "LDG.E.128 R12, desc[UR6][R8.64]",
        "IADD3 R8, R8, 0x800, RZ",
        "@P1 BRA 0x1050",
        "MOV R10, R6",
        "LDG.E.128 R16, desc[UR6][R10.64]",
        "IADD3 R10, R10, 0x800, RZ",
        "@P1 BRA 0x1090",
    ]
    assert repeated_pass(_listing(body)) is None


def test_no_other_report_in_the_galleries_has_a_repeated_pass() -> None:
    """Must not fire: every other .ncu-rep with SASS in samples and validation (loops over rows, k-loops, unrolled
    streams); the one-pass RMSNorm twin is a raw CSV (no SASS) and healthy at DRAM."""
    pytest.importorskip("ncu_report")
    found = []
    for p in sorted((DATA / "samples").rglob("*.ncu-rep*")) + sorted((DATA / "validation").rglob("*.ncu-rep*")):
        if "workloads" in p.parts:
            continue
        prof = load(p)
        assert isinstance(prof, KernelProfile)
        found += [f"{p.name}:{k.name}" for k in prof.launches if repeated_pass(k.sass) is not None]
    assert found == ["cuda_rmsnorm_2pass.ncu-rep.gz:rmsnorm_2pass"]
    d = _kernel(BLIND7 + "cuda_rmsnorm_1pass.raw.csv.gz")
    assert (d.bottleneck, d.verdict) == (B.DRAM_BANDWIDTH_BOUND, Verdict.HEALTHY)


# ============================================================================ 3. TF32 as the FP32 roof's lever


@pytest.mark.parametrize(
    "rel", [BLIND7 + "lib_sgemm_fp32.raw.csv.gz", "validation/lib/cublas_sgemm_fp32.raw.csv.gz"]
)
def test_cublas_fp32_gemm_is_healthy_and_names_tf32_with_its_cost(rel: str) -> None:
    d = _kernel(rel)
    assert (d.bottleneck, d.verdict) == (B.COMPUTE_BOUND, Verdict.HEALTHY), d.headline
    for words in (
        "torch.backends.cuda.matmul.allow_tf32 = True",
        'torch.set_float32_matmul_precision("high")',
        "cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)",
        "10 mantissa bits",
        "4.9e-04",
        "TFLOP/s on this GPU",
    ):
        assert words in d.fix, words
    assert "If this is a matrix product" not in d.fix  # the kernel's name says it is one
    tf32 = next(f for f in d.findings if f.bottleneck is B.NO_TENSOR_CORES)
    assert "8x" in tf32.headline and tf32.share is None


def test_tf32_lever_needs_a_gpu_that_takes_tf32_and_ffma_matrix_work() -> None:
    k = _launch(BLIND7 + "lib_sgemm_fp32.raw.csv.gz")
    assert tf32_lever(_facts(k), False) is not None
    volta = dataclasses.replace(k, compute_capability="7.0")  # tensor cores, but no TF32 before sm_80
    assert tf32_lever(_facts(volta), False) is None
    # the same counters with half the FP32 work in FADD/FMUL (n-body, a norm): not a matrix product
    rate = k.value("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed")
    assert rate is not None
    mixed = _with(k, **{"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed": rate})
    assert tf32_lever(_facts(mixed), False) is None


@pytest.mark.parametrize(
    "rel",
    [
        "validation/blind6/cuda_nbody_tile.raw.csv.gz",  # FP32 at its roof, FFMA 38% of the FP32 work, MUFU
        "validation/cuda/horner_poly.ncu-rep.gz",  # FP32 at its roof, no loaded multiplicand pair (SASS)
        BLIND7 + "cuda_sgemm_tiled16.raw.csv.gz",  # not at the FP32 roof
    ],
)
def test_no_tf32_advice_where_the_fp32_work_is_not_a_product_at_its_roof(rel: str) -> None:
    d = _kernel(rel)
    assert "allow_tf32" not in (d.fix or "") and B.NO_TENSOR_CORES not in _fired(d), d.fix


# ============================================================================ 4. partial reports say what they show


@pytest.mark.parametrize("rel", [BLIND7 + "part_branch_div.raw.csv.gz", BLIND7 + "part_branch_div.ncu-rep.gz"])
def test_source_counters_only_report_gives_its_divergence(rel: str) -> None:
    d = _kernel(rel)
    assert (d.bottleneck, d.verdict) == (B.WARP_DIVERGENCE, Verdict.FIX), d.headline
    lanes = d.evidence[0]
    assert lanes.value == pytest.approx(16.6, abs=0.05)
    assert lanes.metric in ("derived:threads_per_inst_executed", "smsp__thread_inst_executed_per_inst_executed.ratio")
    assert metric_value(_launch(rel), "derived:threads_per_inst_executed") == pytest.approx(16.643, abs=1e-3)
    assert any(e.value == 524288 for e in d.evidence)  # the divergent branch targets, one per warp
    assert d.confidence.value <= th.CONFIDENCE_ESTIMATED and "SpeedOfLight" in d.next_step
    assert "SM instruction throughput" not in {e.name for e in d.evidence}  # not collected: not quoted as 0
    assert not _fired(d) & {B.COMPUTE_BOUND, B.LATENCY_BOUND}


@pytest.mark.parametrize("rel", [BLIND7 + "part_daxpy_sol.raw.csv.gz", BLIND7 + "part_daxpy_sol.ncu-rep.gz"])
def test_speed_of_light_only_dram_stream_is_healthy_with_the_caveat(rel: str) -> None:
    d = _kernel(rel)
    assert (d.bottleneck, d.verdict) == (B.DRAM_BANDWIDTH_BOUND, Verdict.HEALTHY), d.headline
    assert "memory tables were not collected" in d.headline
    assert d.confidence.value == th.CONFIDENCE_PARTIAL and "MemoryWorkloadAnalysis_Tables" in d.next_step
    assert not _fired(d) & {B.LATENCY_BOUND, B.L2_BANDWIDTH_BOUND}


def test_a_basic_set_report_whose_l2_is_busier_than_dram_is_not_called_a_healthy_stream() -> None:
    """column_read_basic: L2 at 92.7% over DRAM at 79.8% (excess sectors hitting in L2): never healthy without the
    memory tables; torch_add_sol_only (DRAM 90.8%, L2 no busier) is."""
    d = _kernel("validation/cuda/column_read_basic.ncu-rep.gz")
    assert d.verdict is not Verdict.HEALTHY
    d = _kernel("validation/lib/torch_add_sol_only.ncu-rep.gz")
    assert (d.bottleneck, d.verdict) == (B.DRAM_BANDWIDTH_BOUND, Verdict.HEALTHY)


def test_a_partial_report_leads_with_the_mechanism_ahead_of_the_grid() -> None:
    """The memory-tables-only transpose (32-way conflicts) launched on 64 blocks: the conflicts lead, the grid follows."""
    k = _launch(BLIND7 + "part_bank_conflict32.raw.csv.gz")
    small = dataclasses.replace(k, grid=(64, 1, 1))
    small = _with(small, launch__grid_size=64.0)
    d = diagnose_launch(small, source_format="ncu-csv-raw")
    assert d.bottleneck is B.SHARED_BANK_CONFLICTS, d.headline
    assert B.SMALL_GRID in {f.bottleneck for f in d.findings}


# ============================================================================ 5. one-shot programs are start-up bound


def test_one_jit_compile_then_nineteen_kernels_is_start_up_bound() -> None:
    b = Builder()
    b.call("cudaMalloc_v3020", 150 * MS)  # the first CUDA call creates the context
    b.host(387 * MS, nvtx="compile_fx_inner")  # one Inductor compile
    for j in range(19):
        b.host(20 * US)
        b.launch(f"void triton_poi_fused_{j}(float*)", 100 * US)
    b.sync()
    d = diagnose_timeline(b.build())[0]
    assert (d.bottleneck, d.verdict) == (B.STARTUP_BOUND, Verdict.FIX), d.headline
    assert "compilation and autotuning 387 ms" in d.headline and "Compile once" in d.fix


def test_one_managed_allocation_then_one_kernel_is_start_up_bound() -> None:
    b = Builder()
    b.host(30 * MS)
    b.call("cudaMallocManaged_v6000", 83 * MS)  # the first CUDA call: context creation
    b.launch("void touch(float*)", 70 * MS)
    b.sync()
    d = diagnose_timeline(b.build())[0]
    assert (d.bottleneck, d.verdict) == (B.STARTUP_BOUND, Verdict.FIX), d.headline
    assert "cudaMallocManaged" in d.headline and "cudaMallocManaged" in d.fix
    assert d.bottleneck is not B.HOST_COMPUTE_BOUND


def test_the_same_start_up_before_a_repeated_loop_is_a_finding_not_the_verdict() -> None:
    """Must not fire as the verdict: the compile, then 300 launch-bound iterations (steady state leads)."""
    b = Builder()
    b.call("cudaMallocManaged_v6000", 83 * MS)
    b.host(387 * MS, nvtx="compile_fx_inner")
    for _ in range(300):
        launch_bound_iteration(b)
    d = diagnose_timeline(b.build())[0]
    assert d.bottleneck is B.HOST_LAUNCH_BOUND
    assert B.STARTUP_BOUND in {f.bottleneck for f in d.findings}


@pytest.mark.parametrize(
    "rel",
    [
        "validation/blind7/tl_compile_oneshot.sqlite.gz",
        "validation/blind7/tl_managed_oneshot.sqlite.gz",
        "validation/timeline/profiles/one_shot_inference.sqlite.gz",
        "validation/timeline/profiles/one_launch_cudamalloc.sqlite.gz",
    ],
)
def test_one_shot_captures_in_the_galleries_are_start_up_bound(rel: str) -> None:
    d = diagnose_timeline(load(_path(rel)))[0]
    assert (d.bottleneck, d.verdict) == (B.STARTUP_BOUND, Verdict.FIX), d.headline


# ============================================================================ the labeller's fixes meet the expectations


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("cuda_sgemm_tiled16.raw.csv.gz", "cuda_sgemm_reg8x8.raw.csv.gz"),
        ("cuda_reduce_tree.raw.csv.gz", "cuda_reduce_shfl.raw.csv.gz"),
        ("cuda_rmsnorm_2pass.ncu-rep.gz", "cuda_rmsnorm_1pass.raw.csv.gz"),
    ],
)
def test_each_fixed_twin_meets_every_expectation_of_the_diagnosis(before: str, after: str) -> None:
    """The twin with the recommended construction (register tile, shuffles, one pass) is the after profile: every
    expectation of the before diagnosis is met by its metrics (the targets are reachable, never past the floor)."""
    from kprof.diagnose.compare import check_expectation

    d = _kernel(BLIND7 + before)
    k_after = _launch(BLIND7 + after)
    checked = 0
    for x in d.expect:
        got = metric_value(k_after, x.metric)
        assert got is not None, x.metric
        check = check_expectation(x, x.value_now, got, th.NCU_DURATION_NOISE)
        assert check.met, f"{before}: {x.label}: {check.reason} ({x.value_now} -> {got}, target {x.target})"
        checked += 1
    assert checked >= 2
