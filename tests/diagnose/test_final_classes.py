"""The two classes of error the final held-out gallery (data/validation/final) exposed, each fixed as a class: the real
report that showed it, the same report with the one fact the rule reads changed, and other kernels where the rule
must not fire.

1. **Excess sectors L1 absorbs.** A thread that reads a few consecutive narrow elements (four scalar loads of a
   misaligned float4, 2-byte loads of a 4-element vector) shows many sectors per request, but its next loads hit the
   same sectors in L1: L2 reads no more than ncu's ideal sectors. That excess is time only where L1 or L2 is the
   busiest unit; an issue-bound layer norm is not "uncoalesced".
2. **The DRAM floor bounds every fix.** A kernel at the DRAM roof whose duration is within 1/HEALTHY_FRACTION_OF_PEAK
   of its compulsory bytes at peak (the fewer of the DRAM bytes moved and ncu's ideal sectors x 32 B) is healthy:
   excess sectors that never reach DRAM cannot make it slower than that, nor an L2 fix faster.

Also: a raw CSV export (no SASS, so no access width) takes its ideal sectors per request from ncu's ideal sectors of
the executed instructions, not from an assumed 4-byte width; and its anonymous-namespace kernel names keep their base.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

import kprof
from kprof import thresholds as th
from kprof.diagnose.kernel import diagnose_launch
from kprof.facts.kernel import KernelFacts, at_dram_floor, build_facts, compulsory_dram_bytes
from kprof.facts.names import DURATION, L2_READ_SECTORS, L2_THEORETICAL_SECTORS_IDEAL, L2_WRITE_SECTORS
from kprof.kernel_model import KernelLaunch, Metric
from kprof.model import Bottleneck, Diagnosis, Verdict
from kprof.rules.kernel.memory import excess_stays_in_l1, uncoalesced

REPO = Path(__file__).resolve().parents[2]
B = Bottleneck

LAYER_NORM = "validation/final/torch_layer_norm.raw.csv.gz"
SCALE_VEC4 = "validation/final/scale_vec4_offset1.ncu-rep.gz"
MATVEC_COLS = "validation/final/matvec_cols.ncu-rep.gz"
STRIDED_CSV = "samples/ncu/uncoalesced_global_access.raw.csv"
CUBLAS_ODD = "validation/final/cublas_fp16_odd.raw.csv.gz"


@cache
def _launch(rel: str) -> KernelLaunch:
    p = REPO / "data" / rel
    if not p.exists():
        pytest.skip(f"{p} is not in this checkout")
    if ".ncu-rep" in p.name:
        pytest.importorskip("ncu_report")
    return kprof.load(str(p))[-1]


def _diag(k: KernelLaunch) -> Diagnosis:
    return diagnose_launch(k, source_format="ncu-csv-raw" if not k.sass else "ncu-rep")


def _set(k: KernelLaunch, values: dict[str, float | None]) -> KernelLaunch:
    m = dict(k.metrics)
    for key, v in values.items():
        if v is None:
            m.pop(key, None)
        else:
            m[key] = Metric(v, m[key].unit if key in m else "")
    return replace(k, metrics=m)


def _fired(d: Diagnosis) -> set[Bottleneck]:
    return ({d.bottleneck} if d.bottleneck else set()) | {f.bottleneck for f in d.findings if f.bottleneck}


def _facts(k: KernelLaunch) -> KernelFacts:
    return build_facts(k, k.value(DURATION), "measured under ncu", source_format="ncu-rep")


# ----------------------------------------------------------------------------- 1. excess absorbed by L1
def test_an_issue_bound_layer_norm_whose_excess_hits_l1_is_instruction_bound() -> None:
    k = _launch(LAYER_NORM)
    f = _facts(k)
    assert excess_stays_in_l1(f)  # 23.7M sectors L1 -> L2 against 42.0M ideal
    d = _diag(k)
    assert d.bottleneck is B.INSTRUCTION_BOUND and d.verdict is Verdict.FIX
    assert B.UNCOALESCED_GLOBAL_ACCESS not in _fired(d)
    # the wording is not the elementwise kernels' "non-contiguous input" (a layer norm reads its rows contiguously)
    assert "non-contiguous" not in d.fix and "fewer instructions per element" in d.fix


def test_the_same_layer_norm_whose_excess_reaches_l2_stays_uncoalesced() -> None:
    """Must not fire: the same counters with L1 sending 3x ncu's ideal sectors to L2."""
    k = _launch(LAYER_NORM)
    ideal = k.value(L2_THEORETICAL_SECTORS_IDEAL)
    assert ideal
    k = _set(k, {L2_READ_SECTORS: 3 * ideal, L2_WRITE_SECTORS: 0.0})
    assert not excess_stays_in_l1(_facts(k))
    assert _diag(k).bottleneck is B.UNCOALESCED_GLOBAL_ACCESS


def test_without_the_l2_sectors_the_excess_is_assumed_to_reach_l2() -> None:
    """Must not fire: a report without the L2 sectors from L1 cannot show the excess stayed in L1."""
    k = _set(_launch(LAYER_NORM), {L2_READ_SECTORS: None})
    assert not excess_stays_in_l1(_facts(k))
    assert _diag(k).bottleneck is B.UNCOALESCED_GLOBAL_ACCESS


def test_excess_absorbed_by_l1_at_the_l1_roof_stays_uncoalesced() -> None:
    """Must not fire: matvec_cols (one thread per row) keeps its excess in L1 too, but L1 is the busiest unit (99%)."""
    k = _launch(MATVEC_COLS)
    f = _facts(k)
    assert excess_stays_in_l1(f) and f.limiter()[0] == "l1"
    m = uncoalesced(f)
    assert m is not None and m.savings > th.MIN_PRIMARY_SAVINGS
    assert _diag(k).bottleneck is B.UNCOALESCED_GLOBAL_ACCESS


def test_a_strided_gather_whose_excess_reaches_l2_stays_uncoalesced() -> None:
    """Must not fire: 32 sectors per request that L2 serves (L1 sends 4.5x the ideal sectors)."""
    k = _launch(STRIDED_CSV)
    assert not excess_stays_in_l1(_facts(k))
    assert _diag(k).bottleneck is B.UNCOALESCED_GLOBAL_ACCESS


# ----------------------------------------------------------------------------- 2. the DRAM floor
def test_a_misaligned_float4_fallback_at_the_dram_floor_is_healthy() -> None:
    k = _launch(SCALE_VEC4)
    f = _facts(k)
    need = compulsory_dram_bytes(k)
    peak = f.roof.peak_bytes_per_s["dram"]
    d_ns = k.value(DURATION)
    assert (
        need and d_ns and need / peak * 1e9 >= th.HEALTHY_FRACTION_OF_PEAK * d_ns
    )  # within 1/0.8 of the floor
    assert at_dram_floor(f)
    d = _diag(k)
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY
    assert not (_fired(d) & {B.L2_BANDWIDTH_BOUND, B.UNCOALESCED_GLOBAL_ACCESS})


def test_excess_that_reaches_dram_is_not_the_floor() -> None:
    """Must not fire: the same kernel if the instructions had asked for half the bytes DRAM moved."""
    k = _launch(SCALE_VEC4)
    ideal = k.value(L2_THEORETICAL_SECTORS_IDEAL)
    assert ideal
    k = _set(k, {L2_THEORETICAL_SECTORS_IDEAL: ideal / 2})
    assert not at_dram_floor(_facts(k))
    d = _diag(k)
    assert d.verdict is Verdict.FIX


def test_without_the_ideal_sectors_dram_bytes_alone_are_not_the_floor() -> None:
    """Must not fire: DRAM bytes alone cannot tell compulsory bytes from excess that reached DRAM."""
    k = _set(_launch(SCALE_VEC4), {L2_THEORETICAL_SECTORS_IDEAL: None})
    assert compulsory_dram_bytes(k) is None and not at_dram_floor(_facts(k))


@pytest.mark.parametrize(
    "rel", ["validation/cuda/particle_charge_density.ncu-rep.gz", "validation/cuda/column_read.ncu-rep.gz"]
)
def test_dram_near_the_roof_with_excess_bytes_is_not_at_the_floor(rel: str) -> None:
    """Must not fire: DRAM at 80-87% of peak carrying 3-8.5x the bytes the instructions asked for."""
    k = _launch(rel)
    f = _facts(k)
    assert f.util["dram"] >= th.HEALTHY_FRACTION_OF_PEAK - 0.01
    assert not at_dram_floor(f)
    assert _diag(k).verdict is Verdict.FIX


# ----------------------------------------------------------------------------- CSV: ncu's ideal, not a 4-byte guess
def test_a_csv_export_takes_its_ideal_from_ncus_ideal_sectors() -> None:
    """cuBLAS's align1 FP16 GEMM: 2-byte loads, so 2 sectors per request are ideal (an assumed 4 B gave 3.93)."""
    k = _launch(CUBLAS_ODD)
    m = uncoalesced(_facts(k))
    assert m is not None
    ideal = k.value(L2_THEORETICAL_SECTORS_IDEAL)
    requests = k.value("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum") + k.value(
        "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
    )
    assert ideal
    assert m.evidence[0].reference_value == round(ideal / requests, 2)
    assert "ncu's ideal sectors" in (m.evidence[0].reference or "")


def test_a_csv_export_without_ncus_ideal_keeps_the_assumed_width() -> None:
    """Must not fire: no ideal sectors in the export, so the width stays the stated assumption."""
    k = _set(
        _launch(STRIDED_CSV),
        {L2_THEORETICAL_SECTORS_IDEAL: None, "memory_l2_theoretical_sectors_global": None},
    )
    m = uncoalesced(_facts(k))
    assert m is not None and "assumed" in (m.evidence[0].reference or "")


def test_an_elementwise_kernel_keeps_the_non_contiguous_wording() -> None:
    """Must not fire: the OffsetCalculator wording stays for PyTorch's strided elementwise kernels."""
    k = _launch(LAYER_NORM)
    name = "void at::native::elementwise_kernel<128, 4, Func>(int, Func)"
    k = replace(k, name="elementwise_kernel", demangled_name=name)
    d = _diag(k)
    assert d.bottleneck is B.INSTRUCTION_BOUND
    assert "non-contiguous" in d.fix


def test_a_report_with_sass_keeps_the_per_instruction_ideal() -> None:
    """Must not fire: the .ncu-rep twin of the strided gather holds SASS and per-PC ideal sectors; its ideal stays the
    loads' own (ncu's ideal sectors of the executed loads), not the kernel-wide ideal per request."""
    k = _launch("samples/ncu/uncoalesced_global_access.ncu-rep.gz")
    m = uncoalesced(_facts(k))
    assert m is not None
    assert "ncu's ideal sectors of the executed loads" in (m.evidence[0].reference or "")
