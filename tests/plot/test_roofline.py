"""The roofline chart: roofs from the report's own peaks, kernels as points, before -> after arrows."""

from __future__ import annotations

import pytest
from matplotlib.text import Annotation

from kprof.plot import plot_roofline, roofline_points

from .synth import DRAM_HZ, PEAK_DRAM_PER_CYCLE, PEAK_FFMA_PER_CYCLE, SM_HZ, launch


def _lines(ax, prefix):
    return [ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith(prefix)]


def test_roofs_come_from_the_reports_peaks():
    ax = plot_roofline([launch(0, "a"), launch(1, "b", ffma_per_cycle=4000.0)])
    (dram,) = _lines(ax, "roof-dram")
    x, y = dram.get_data()
    bw = PEAK_DRAM_PER_CYCLE * DRAM_HZ
    assert y[0] / x[0] == pytest.approx(bw)  # slope: the peak bandwidth
    peak = 2 * PEAK_FFMA_PER_CYCLE * SM_HZ
    assert y[-1] == pytest.approx(peak)  # the roof meets the FP32 ceiling
    (ceiling,) = _lines(ax, "ceiling-fp32")
    assert ceiling.get_ydata()[0] == pytest.approx(peak)
    assert len(_lines(ax, "roof-")) == 3  # DRAM, L2, L1: hierarchical
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOP/byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("FP32 peak 50.7 TFLOP/s") for t in texts)


def test_kernels_are_points_at_their_intensity():
    k = launch(0, "a", ffma_per_cycle=1000.0, dram_bps=1e12)
    ax = plot_roofline(k)
    flops = 2 * 1000.0 * SM_HZ
    (p,) = _lines(ax, "point-dram")
    assert p.get_xdata()[0] == pytest.approx(flops / 1e12)
    assert p.get_ydata()[0] == pytest.approx(flops)
    lo, hi = ax.get_xlim()
    assert lo < flops / 1e12 < hi
    lo, hi = ax.get_ylim()
    assert lo < flops < hi
    # one kernel: its label is written beside it
    assert any(isinstance(t, Annotation) and t.get_text() == "#0 a" for t in ax.texts)


def test_many_kernels_get_a_legend_and_labels_override_names():
    ks = [launch(i, f"k{i}", ffma_per_cycle=500.0 * (i + 1)) for i in range(5)]
    ax = plot_roofline(ks, labels=[f"file{i}" for i in range(5)])
    assert len(_lines(ax, "point-dram")) == 5
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [f"file{i}" for i in range(5)]


def test_arrow_goes_from_before_to_after():
    before = launch(0, "t", ffma_per_cycle=500.0, dram_bps=2e12)
    after = launch(0, "t", ffma_per_cycle=2000.0, dram_bps=1e12)
    ax = plot_roofline(before, after=after)
    arrows = [t for t in ax.texts if t.get_gid() == "arrow"]
    assert len(arrows) == 1
    start, end = arrows[0].xyann, arrows[0].xy
    assert start == pytest.approx((2 * 500.0 * SM_HZ / 2e12, 2 * 500.0 * SM_HZ))
    assert end == pytest.approx((2 * 2000.0 * SM_HZ / 1e12, 2 * 2000.0 * SM_HZ))
    assert len(_lines(ax, "point-after")) == 1


def test_kernel_without_flops_is_named_not_drawn():
    ax = plot_roofline([launch(0, "fma"), launch(1, "copy", ffma_per_cycle=0.0)])
    assert len(_lines(ax, "point-dram")) == 1
    (note,) = [t for t in ax.texts if t.get_gid() == "skipped-note"]
    assert "#1 copy" in note.get_text()
    points, skipped, _ = roofline_points([launch(0, "fma"), launch(1, "copy", ffma_per_cycle=0.0)])
    assert points[1] is None and skipped == ["#1 copy"]


def test_draws_on_the_given_axes():
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2)
    try:
        assert plot_roofline(launch(), ax=b) is b
        assert not a.get_lines()
    finally:
        plt.close(fig)


def test_hidden_level_note_names_the_launches_by_their_labels():
    """Launches whose L1 bytes the counters cannot see (TMA loads) are named in the note by the labels given.
    It once took the roofs' legend labels instead, whenever those were as many as the launches (three here:
    L2 roof, L1 roof, kernel vs L2 bytes)."""
    pytest.importorskip("ncu_report")
    from pathlib import Path

    import kprof

    report = Path(__file__).resolve().parents[2] / "data" / "samples" / "ncu" / "tensor_core_bound.ncu-rep.gz"
    tc = kprof.load(report)[0]
    ax = plot_roofline([tc, tc, tc], labels=["a", "b", "c"], levels=("l2", "l1"))
    (note,) = [t for t in ax.texts if t.get_gid() == "skipped-note"]
    assert "no L1 point for a, b, c: loads by TMA" in note.get_text()
