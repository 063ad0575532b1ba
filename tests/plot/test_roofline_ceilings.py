"""Issue 14 point 4: the roofline draws the ceilings the report defines and leaves out points whose bytes the
counters cannot see (TMA / cp.async traffic is not in the L1 load/store counters), with a note."""

from __future__ import annotations

from pathlib import Path

import pytest

import kprof
from kprof.diagnose.roofline import roofline, unseen_traffic
from kprof.plot import plot_roofline

NCU = Path(__file__).resolve().parents[2] / "data" / "samples" / "ncu"


def _k(name: str):
    p = NCU / name
    if not p.exists():
        pytest.skip(f"{p} missing")
    return kprof.load(str(p))[0]


def _lines(ax, gid):
    return [ln for ln in ax.get_lines() if ln.get_gid() == gid]


def test_fp16_ceiling_is_the_reports_not_the_fp32_one() -> None:
    k = _k("triton_bf16_dot.ncu-rep.gz")
    r = roofline(k)
    clock = k.value("sm__cycles_elapsed.avg.per_second")
    x4 = k.value("derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4")
    assert x4 is not None and r.peak_flops["fp16"] == pytest.approx(x4 * clock)
    assert r.peak_flops["fp16"] == pytest.approx(2 * r.peak_flops["fp32"])  # Hopper: packed HFMA2


def test_async_copy_kernels_get_no_l1_point_and_a_note() -> None:
    tma, cp_async, plain = (
        _k("tensor_core_bound.ncu-rep.gz"),
        _k("triton_bf16_dot.ncu-rep.gz"),
        _k("no_tensor_cores.ncu-rep.gz"),
    )
    assert "l1" in unseen_traffic(tma) and "l1" in unseen_traffic(cp_async) and not unseen_traffic(plain)
    # what the L1 counter saw: well under a megabyte, for kernels that moved gigabytes through shared memory
    assert roofline(cp_async).intensity("l1") > 1e5
    ax = plot_roofline([tma, cp_async, plain])
    assert len(_lines(ax, "point-l1")) == 1  # only the plain FFMA kernel, whose loads pass the LSU
    assert len(_lines(ax, "point-dram")) == 3
    note = next(t.get_text() for t in ax.texts if t.get_gid() == "skipped-note")
    assert "no L1 point for" in note and "TMA or cp.async" in note
    assert ax.get_xlim()[1] < 1e5  # no point at a meaningless intensity stretches the axis


def test_integer_mma_kernel_draws_the_integer_tensor_ceiling_in_operations() -> None:
    """An INT8 IMMA GEMM (blind4, torch._int_mm): its tensor point and ceiling are integer operations on the INT8
    paths (the IGMMA ceiling), never FLOP/s; a BF16 GEMM keeps the plain tensor label."""
    p = NCU.parents[1] / "validation" / "blind4" / "lib_int8_int_mm.raw.csv.gz"
    if not p.exists():
        pytest.skip(f"{p} missing")
    k = kprof.load(str(p))[0]
    r = roofline(k)
    assert r.tensor_path == "imma_src_int8_sparsity_off"
    assert r.peak_flops["tensor"] == pytest.approx(
        k.value("sm__ops_path_tensor_op_igmma_src_int8_sparsity_off.sum.peak_sustained_elapsed.per_second")
    )
    ax = plot_roofline(k)
    labels = [t.get_text() for t in ax.texts]
    assert any(t.startswith("Tensor (INT8) peak") and t.endswith("OP/s") for t in labels), labels
    bf16 = plot_roofline(_k("triton_bf16_dot.ncu-rep.gz"))
    assert any(t.get_text().startswith("Tensor peak") for t in bf16.texts)
