"""The three classes of error the fourth blind gallery (data/validation/blind4) exposed at 3589783, each on the
workload of its class and on kernels of other classes where the rule must stay silent.

1. Integer tensor-core work is tensor-core work. ``torch._int_mm`` ran cuBLASLt's sm80 CUTLASS IMMA kernel on the
   H200: its SM throughput (74.5%) is the tensor pipe busy with IMMA, which no FP counter shows. It was called
   ``instruction_bound`` ("FP arithmetic share 0%"); it is ``tensor_core_bound``: the mma.sync IMMA path at 74.5%
   of its ceiling, whose ceiling is 2/3 of the IGMMA (wgmma) path's for the same INT8 inputs.
2. An MMA k-loop whose operand loads are synchronous (Triton ``num_stages=1``: LDG into registers, STS, barrier, no
   LDGSTS/UTMALDG) exposes the load latency every iteration: ``latency_bound`` with software pipelining as the fix,
   never ``occupancy_limited`` ("lower num_stages", which is already 1).
3. FP32 data computed in FP64 (``const double beta`` promotes ``exp``/``log1p``/``tanh``): F2F.F64.F32 in,
   F2F.F32.F64 out, DFMA in between, all global accesses 32-bit. The FP64 math is the mechanism; the divergence
   inside the FP64 routines is its consequence, not the primary. Genuine FP64 kernels (FP64 loads and stores) and a
   single conversion never fire it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kprof.diagnose.kernel import DURATION, diagnose_kernels, diagnose_launch, kernel_floor_ns
from kprof.diagnose.roofline import roofline
from kprof.facts.sass_traits import fp64_promotion, synchronous_mma_loop
from kprof.io import load
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric, SassLine
from kprof.model import Bottleneck, Diagnosis, Verdict
from tests.conftest import REPO

B = Bottleneck
VAL = REPO / "data" / "validation"
SAMPLES = REPO / "data" / "samples" / "ncu"


def _path(p: Path) -> Path:
    if not p.exists():
        pytest.skip(f"{p} not in this checkout")
    if ".ncu-rep" in p.name:
        pytest.importorskip("ncu_report")
    return p


@cache
def _diag(p: Path) -> Diagnosis:
    prof = load(_path(p))
    assert isinstance(prof, KernelProfile)
    return diagnose_kernels(prof)[0]


@cache
def _launch(p: Path) -> KernelLaunch:
    prof = load(_path(p))
    assert isinstance(prof, KernelProfile)
    return prof[0]


def _fired(d: Diagnosis) -> set[Bottleneck]:
    return ({d.bottleneck} if d.bottleneck else set()) | {f.bottleneck for f in d.findings}


def _floor_ok(p: Path, d: Diagnosis, fix_unit: str | None) -> None:
    """Every predicted duration stays at or above the kernel's physical floor with the work on ``fix_unit``."""
    k = _launch(p)
    floor = kernel_floor_ns(k, fix_unit)
    for e in d.expect:
        if e.metric == DURATION and e.target is not None and floor is not None:
            assert e.target >= floor * 0.999, (e.target, floor)


# ----------------------------------------------------------------------------- 1. integer MMA
INT8 = VAL / "blind4" / "lib_int8_int_mm.raw.csv.gz"


def test_int8_imma_gemm_is_tensor_core_bound_on_the_slower_path() -> None:
    d = _diag(INT8)
    assert d.bottleneck is B.TENSOR_CORE_BOUND and d.verdict is Verdict.FIX, d.headline
    assert B.INSTRUCTION_BOUND not in _fired(d)
    assert "imma_src_int8" in d.headline and "igmma_src_int8" in d.headline, d.headline
    units = {e.unit for e in d.evidence if e.metric and "ops_path_tensor" in e.metric}
    assert units == {"TOPS"}, units  # integer operations, not FLOP
    assert "IGMMA" in d.fix and "cannot be edited" in d.fix, d.fix
    assert "FP arithmetic share" not in str(d.to_dict())
    _floor_ok(INT8, d, "tensor")


def test_int8_tensor_pipe_is_read_from_the_imma_metric_without_the_all_types_one() -> None:
    """A report with the per-type tensor metrics only (HMMA 0%, IMMA 74.5%) reads the pipe as 74.5% busy."""
    m = {
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed": Metric(0.0),
        "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_elapsed": Metric(74.5),
    }
    assert roofline(KernelLaunch(id=0, name="k", metrics=m)).utilization["tensor_pipe"] == pytest.approx(
        0.745
    )
    only_hmma = {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed": Metric(40.0)}
    assert roofline(KernelLaunch(id=0, name="k", metrics=only_hmma)).utilization[
        "tensor_pipe"
    ] == pytest.approx(0.40)


@pytest.mark.parametrize(
    ("path", "bottleneck"),
    [
        # genuine instruction overhead (6-D index math), no tensor pipe: still instruction_bound
        (VAL / "cuda" / "strided_copy_6d.ncu-rep.gz", B.INSTRUCTION_BOUND),
        # the fastest path already (HGMMA / nvjet, FP8 QGMMA): no slower-path finding
        (VAL / "blind4" / "triton_mm_good.ncu-rep.gz", B.TENSOR_CORE_BOUND),
        (VAL / "blind4" / "lib_fp8_scaled_mm.raw.csv.gz", B.TENSOR_CORE_BOUND),
        (SAMPLES / "tensor_core_bound.ncu-rep.gz", B.TENSOR_CORE_BOUND),
    ],
    ids=lambda x: x.name if isinstance(x, Path) else x.value,
)
def test_integer_mma_reading_leaves_other_classes_alone(path: Path, bottleneck: Bottleneck) -> None:
    d = _diag(path)
    assert d.bottleneck is bottleneck, d.headline
    assert "slower path" not in d.headline and not any("slower path" in f.headline for f in d.findings)


# ----------------------------------------------------------------------------- 2. synchronous MMA k-loop
POOR = VAL / "blind4" / "triton_mm_poor.ncu-rep.gz"


def test_unpipelined_triton_matmul_is_latency_bound_with_pipelining_as_the_fix() -> None:
    d = _diag(POOR)
    assert d.bottleneck is B.LATENCY_BOUND and d.verdict is Verdict.FIX, d.headline
    assert B.OCCUPANCY_LIMITED not in _fired(d)
    assert "synchronously" in d.headline and "no cp.async or TMA" in d.headline
    assert d.where and d.where[0].line == 37 and "tl.dot" in d.where[0].text
    assert "num_stages=3" in d.fix and "BK=64" in d.fix and "line 37" in d.fix, d.fix
    assert "lower num_stages" not in d.fix.lower() or "do not lower num_stages" in d.fix.lower()
    assert any(e.metric == "sass:async_copies" and e.value == 0 for e in d.evidence)
    _floor_ok(POOR, d, None)


@pytest.mark.parametrize(
    "path",
    [
        VAL / "blind4" / "triton_mm_good.ncu-rep.gz",  # num_stages=3: LDGSTS
        SAMPLES / "triton_bf16_dot.ncu-rep.gz",
        SAMPLES / "tensor_core_bound.ncu-rep.gz",  # cuBLAS nvjet, TMA
        VAL / "lib" / "cublas_gemm_bf16.ncu-rep.gz",
        VAL / "lib" / "triton_matmul_bf16.ncu-rep.gz",
        VAL / "cuda" / "mma_full_grid.ncu-rep.gz",  # mma.sync on register operands: no loads in the loop
    ],
    ids=lambda p: p.name,
)
def test_pipelined_or_register_fed_gemms_are_not_synchronous_loops(path: Path) -> None:
    assert synchronous_mma_loop(_launch(path).sass) is None
    d = _diag(path)
    assert d.bottleneck is B.TENSOR_CORE_BOUND, d.headline


@pytest.mark.parametrize(
    "path",
    [
        VAL / "blind4" / "poly_smem_lowocc.ncu-rep.gz",
        VAL / "blind4" / "embag_lowocc.ncu-rep.gz",
        SAMPLES / "occupancy_limited.ncu-rep.gz",
    ],
    ids=lambda p: p.name,
)
def test_occupancy_limited_non_gemm_kernels_still_say_so(path: Path) -> None:
    d = _diag(path)
    assert d.bottleneck is B.OCCUPANCY_LIMITED, d.headline


def _loop(body: list[str]) -> list[SassLine]:
    """A listing: ``body`` at 0x10.., then a backward branch to 0x10; each instruction executed 100 times."""
    lines = [
        SassLine(pc=0x10 + 0x10 * i, text=t, counters={"inst_executed": 100.0}) for i, t in enumerate(body)
    ]
    end = 0x10 + 0x10 * len(body)
    lines.append(SassLine(pc=end, text="@P0 BRA 0x10", counters={"inst_executed": 100.0}))
    return lines


def test_synchronous_mma_loop_needs_mma_loads_and_no_async_copy() -> None:
    sync = [
        "LDG.E.128 R4, desc[UR4][R2.64]",
        "STS.128 [R9], R4",
        "BAR.SYNC.DEFER_BLOCKING 0x0",
        "HMMA.16816.F32.BF16 R12, R16, R20, R12",
    ]
    assert synchronous_mma_loop(_loop(sync)) is not None
    assert synchronous_mma_loop(_loop(["LDGSTS.E.BYPASS.128 [R9], desc[UR4][R2.64]", *sync[2:]])) is None
    assert (
        synchronous_mma_loop(_loop(["LDG.E R4, desc[UR4][R2.64]", "FFMA R5, R4, R4, R5"])) is None
    )  # no MMA
    assert synchronous_mma_loop(_loop(["LDS.128 R4, [R9]", "HMMA.16816.F32.BF16 R12, R16, R20, R12"])) is None


# ----------------------------------------------------------------------------- 3. FP64 promotion
MISH = VAL / "blind4" / "mish_fp64.ncu-rep.gz"


def test_fp32_data_computed_in_fp64_is_the_primary_not_divergence() -> None:
    d = _diag(MISH)
    assert d.bottleneck is B.INSTRUCTION_BOUND and d.verdict is Verdict.FIX, d.headline
    assert B.WARP_DIVERGENCE not in _fired(d)
    assert "FP64 math on FP32 data" in d.headline and "F2F.F64.F32" in d.headline
    assert "`const float beta = 1.0f;`" in d.fix and "line 7" in d.fix, d.fix
    assert "expf" in d.fix and "tanhf" in d.fix
    assert d.where and {w.line for w in d.where} <= {10, 11}
    assert (
        "consequence" not in d.headline and "active lanes" in d.mechanism
    )  # divergence explained, not primary
    _floor_ok(MISH, d, "fp32")
    # ranked by the time the fix removes: between the FP64 share of issue and the floor (0.245 of 0.731 ms plain)
    t = next(e.target for e in d.expect if e.metric == DURATION)
    dur = _launch(MISH).value(DURATION)
    assert t is not None and dur is not None and 0.3 < t / dur < 0.8


@pytest.mark.parametrize(
    "path",
    [
        VAL / "heldout" / "duffing_rk4.ncu-rep.gz",  # FP64 data (LDG.E.64 / STG.E.64) and FP64 math: genuine
        VAL / "lib" / "cublas_dgemm_fp64.raw.csv.gz",  # DGEMM (DMMA), no SASS
        SAMPLES / "warp_divergence.ncu-rep.gz",  # divergence of its own, no FP64
    ],
    ids=lambda p: p.name,
)
def test_genuine_fp64_and_plain_divergence_are_not_promotion(path: Path) -> None:
    assert fp64_promotion(_launch(path).sass) is None
    d = _diag(path)
    assert "FP64 math on FP32 data" not in d.headline
    assert not any("FP64 math on FP32 data" in f.headline for f in d.findings)


def _listing(ops: list[str]) -> list[SassLine]:
    return [SassLine(pc=0x10 * i, text=t, counters={"inst_executed": 64.0}) for i, t in enumerate(ops)]


def test_fp64_promotion_needs_both_conversions_and_32_bit_data() -> None:
    promoted = [
        "LDG.E R2, desc[UR4][R2.64]",
        "F2F.F64.F32 R4, R2",
        "DFMA R6, R4, R8, R10",
        "F2F.F32.F64 R5, R6",
        "STG.E desc[UR4][R12.64], R5",
    ]
    p = fp64_promotion(_listing(promoted))
    assert p is not None and p.widen == 64.0 and p.narrow == 64.0
    single = [x for x in promoted if not x.startswith("F2F.F32")]  # one conversion: a double accumulator
    assert fp64_promotion(_listing(single)) is None
    fp64_data = ["LDG.E.64 R2, desc[UR4][R2.64]", *promoted[1:]]  # a 64-bit load: FP64 data
    assert fp64_promotion(_listing(fp64_data)) is None
    no_math = [x for x in promoted if not x.startswith("DFMA")]
    assert fp64_promotion(_listing(no_math)) is None


def test_promotion_fires_only_when_issue_or_the_fp64_pipe_limits() -> None:
    """The same promoted listing on a launch that waits (issue 20%): no FP64-promotion diagnosis."""
    ops = _listing(
        [
            "LDG.E R2, desc[UR4][R2.64]",
            "F2F.F64.F32 R4, R2",
            "DFMA R6, R4, R8, R10",
            "F2F.F32.F64 R5, R6",
            "STG.E desc[UR4][R12.64], R5",
        ]
    )
    m = {
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": Metric(20.0),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": Metric(15.0),
        "gpu__time_duration.sum": Metric(1000.0),
    }
    d = diagnose_launch(KernelLaunch(id=0, name="k", metrics=m, sass=tuple(ops)))
    assert "FP64 math on FP32 data" not in d.headline


def test_int8_imma_gemm_with_sass_reads_the_same() -> None:
    """The .ncu-rep path: the same launch with a SASS listing (IMMA fed by LDSM/LDGSTS, library code without line
    info) is still tensor_core_bound on the slower path, its MMAs counted as arithmetic, never overhead."""
    from dataclasses import replace

    k = _launch(INT8)
    body = [
        "LDGSTS.E.BYPASS.128 [R9], desc[UR4][R2.64]",
        "LDSM.16.M88.4 R12, [R10]",
        "IMMA.16832.S8.S8 R16, R12, R20, R16",
        "IMMA.16832.S8.S8 R24, R12, R22, R24",
        "IADD3 R2, R2, 0x40, RZ",
    ]
    sass = tuple(SassLine(pc=0x10 * i, text=t, counters={"inst_executed": 1.0e6}) for i, t in enumerate(body))
    d = diagnose_launch(replace(k, sass=sass))
    assert d.bottleneck is B.TENSOR_CORE_BOUND and d.verdict is Verdict.FIX, d.headline
    assert B.INSTRUCTION_BOUND not in _fired(d)
    assert "IGMMA" in d.fix, d.fix


def test_pipelining_fix_follows_the_language_and_the_architecture() -> None:
    """CUDA C++ on sm_80+: cp.async or TMA stages; before sm_80 (no cp.async): register double buffering; Triton:
    num_stages and BLOCK_K, never 'lower num_stages'."""
    from kprof.diagnose.fixes import Context
    from kprof.diagnose.fixes.roof import latency
    from kprof.diagnose.language import Language, Origin

    k, d = _launch(POOR), _diag(POOR)
    cuda = Origin(Language.CUDA)
    _, hopper = latency(Context(k=k, d=d, origin=cuda, where=d.where, sm=90))
    _, turing = latency(Context(k=k, d=d, origin=cuda, where=d.where, sm=75))
    _, triton = latency(Context(k=k, d=d, origin=Origin(Language.TRITON), where=d.where, sm=90))
    assert hopper and "cp.async" in hopper and "TMA" in hopper and "line 37" in hopper
    assert turing and "through registers" in turing and "memcpy_async" not in turing
    assert triton and "num_stages=3" in triton and "Do not lower num_stages" in triton


def test_triton_occupancy_fix_lowers_num_stages_only_when_the_sass_has_async_copies() -> None:
    from kprof.diagnose.fixes import Context
    from kprof.diagnose.fixes.launch import occupancy
    from kprof.diagnose.language import Language, Origin

    triton = Origin(Language.TRITON)
    good = VAL / "blind4" / "triton_mm_good.ncu-rep.gz"
    _, without = occupancy(Context(k=_launch(POOR), d=_diag(POOR), origin=triton, where=(), sm=90))
    _, with_async = occupancy(Context(k=_launch(good), d=_diag(good), origin=triton, where=(), sm=90))
    assert without and "num_stages" not in without  # no LDGSTS/UTMALDG: num_stages is already 1
    assert with_async and "lower num_stages" in with_async
