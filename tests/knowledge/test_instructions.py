"""The expected-instruction table (kprof/knowledge/instructions.py), checked against the SASS of the samples."""

from __future__ import annotations

from pathlib import Path

import pytest

import kprof
from kprof.kernel_model import KernelLaunch
from kprof.knowledge import instructions as ki

REPO = Path(__file__).resolve().parents[2]
NCU = REPO / "data" / "samples" / "ncu"
VALIDATION = REPO / "data" / "validation"


def _launch(path: Path) -> KernelLaunch:
    if not path.exists():
        pytest.skip(f"{path} missing")
    return kprof.load(str(path))[-1]


def _opcodes(k) -> set[str]:
    return {s.opcode for s in k.sass}


def test_cublas_bf16_gemm_issues_what_the_table_expects_on_sm90() -> None:
    k = _launch(NCU / "tensor_core_bound.ncu-rep.gz")
    sm = ki.sm_of(k.compute_capability)
    assert sm == 90
    mma = [ki.parse_mma(o) for o in _opcodes(k) if ki.parse_mma(o)]
    assert mma and all(m.family == "HGMMA" and m.dtype == "bf16" for m in mma)
    expected = ki.matrix_path(sm, "bf16")
    assert expected is not None and expected.sass.split(".")[0] == "HGMMA" and expected.sass.endswith("BF16")
    assert all(ki.is_best_mma(o, sm) for o in _opcodes(k) if ki.parse_mma(o))
    # operands arrive by TMA, the async copy the table names for sm_90
    async_sass = ki.async_copy(sm)
    assert async_sass is not None and any(o.startswith(async_sass[0]) for o in _opcodes(k))


def test_triton_bf16_dot_lowers_as_the_table_says() -> None:
    k = _launch(NCU / "triton_bf16_dot.ncu-rep.gz")
    sm = ki.sm_of(k.compute_capability)
    warps = k.threads_per_block // 32
    lowering = ki.triton_dot(sm, "bf16", num_warps=warps, block_m=128)
    assert lowering is not None and lowering.sass == "HGMMA"
    mma = {ki.parse_mma(o).family for o in _opcodes(k) if ki.parse_mma(o)}
    assert mma == {"HGMMA"}
    assert any(
        o.startswith("LDGSTS") for o in _opcodes(k)
    )  # cp.async operands, not TMA (README of the sample)


def test_triton_ieee_dot_falls_back_to_ffma_as_the_table_says() -> None:
    k = _launch(NCU / "triton_fp32_ieee_dot.ncu-rep.gz")
    sm = ki.sm_of(k.compute_capability)
    line = k.source_line(next(s.file for s in k.sass if s.line == 39), 39)
    assert ki.triton_input_precision(line) == "ieee"
    assert ki.triton_dot(sm, "fp32", input_precision="ieee").sass == "FFMA"
    ops = _opcodes(k)
    assert not any(ki.parse_mma(o) for o in ops) and "FFMA" in {o.split(".")[0] for o in ops}
    # what it would issue with the default precision: TF32 on the warpgroup path
    assert ki.triton_dot(sm, "fp32", input_precision="tf32", num_warps=8).sass == "HGMMA"
    assert ki.matrix_path(sm, "fp32").sass == "HGMMA.64xNx8.F32.TF32"


def test_mma_sync_on_hopper_is_not_the_best_path() -> None:
    k = _launch(VALIDATION / "cuda" / "mma_full_grid.ncu-rep.gz")
    hmma = [o for o in _opcodes(k) if o.startswith("HMMA")]
    assert hmma == ["HMMA.16816.F32.BF16"]
    m = ki.parse_mma(hmma[0])
    assert (m.family, m.shape, m.accumulator, m.dtype) == ("HMMA", "16816", "F32", "bf16")
    assert ki.is_best_mma(hmma[0], 90) is False and ki.is_best_mma(hmma[0], 80) is True
    assert ki.matrix_path(80, "bf16").sass == "HMMA.16816.F32.BF16"  # the same instruction is sm_80's best


def test_fma_dtypes_of_the_samples() -> None:
    k = _launch(NCU / "no_tensor_cores.ncu-rep.gz")
    dts = {ki.fma_dtype(o) for o in _opcodes(k) if ki.fma_dtype(o)}
    assert dts == {"fp32"}  # HFMA2.MMA register moves are not FP16 math


@pytest.mark.parametrize(
    ("sm", "dtype", "sass"),
    [
        (70, "fp16", "HMMA.884.F32"),
        (75, "int8", "IMMA.8816.S8.S8"),
        (80, "tf32", "HMMA.1688.F32.TF32"),
        (80, "fp64", "DMMA.884"),
        (89, "fp8", "QMMA.16832.F32.E4M3.E4M3"),
        (90, "fp8", "QGMMA.64xNx32.F32.E4M3.E4M3"),
        (90, "int8", "IGMMA.64xNx32.S32.S8.S8"),
    ],
)
def test_matrix_paths(sm: int, dtype: str, sass: str) -> None:
    assert ki.matrix_path(sm, dtype).sass == sass


def test_no_path_where_the_hardware_has_none() -> None:
    assert ki.matrix_path(70, "bf16") is None  # Volta: FP16 only
    assert ki.matrix_path(86, "fp64") is None  # GA10x: no FP64 tensor throughput
    assert ki.matrix_path(61, "fp16") is None  # Pascal: no tensor cores
    assert ki.matrix_path(75, "fp16", "NVIDIA GeForce GTX 1660 Ti") is None  # TU116: no tensor cores
    assert ki.has_tensor_cores(75, "NVIDIA GeForce RTX 2080") is True
    assert ki.arch(120).sm == 100 and ki.arch(103).sm == 100 and ki.arch(60) is None


def test_triton_fallbacks() -> None:
    assert ki.triton_dot(75, "fp16").sass == "FFMA"  # below sm_80 Triton's tl.dot uses FMA
    assert ki.triton_dot(90, "bf16", num_warps=2).sass == "HMMA"  # not a multiple of 4 warps: mma v2
    assert ki.triton_dot(90, "bf16", batched=True).sass == "HMMA"
    assert ki.triton_dot(90, "fp8", num_warps=8, block_m=128).sass == "QGMMA"
    assert ki.triton_dot(None, "bf16") is None
