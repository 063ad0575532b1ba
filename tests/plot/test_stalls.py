"""Warp-stall breakdown and SpeedOfLight bars."""

from __future__ import annotations

import pytest

from kprof.kernel_model import KernelLaunch, Metric
from kprof.plot import plot_sol, plot_warp_stalls, sol_values, warp_stalls

from .synth import launch

STALLS = {"long_scoreboard": 12.0, "wait": 2.0, "barrier": 1.0, "short_scoreboard": 0.5, "mio_throttle": 0.25}


def _bars(ax, gid):
    return [p for p in ax.patches if p.get_gid() == gid] or [
        p for c in ax.containers for p in c if c.get_gid() == gid
    ]


def test_warp_stalls_reads_cycles_per_issue():
    reasons, unit = warp_stalls(launch(stalls=STALLS))
    assert next(iter(reasons)) == "long_scoreboard"
    assert reasons["long_scoreboard"] == 12.0
    assert unit == "cycles per issued instruction"


def test_stall_bars_are_sorted_and_other_sums_the_rest():
    ax = plot_warp_stalls(launch(stalls=STALLS), top=3)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0].startswith("long scoreboard")
    assert labels[-1] == "other"
    assert len(labels) == 4
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx([12.0, 2.0, 1.0, 0.75])
    assert ax.yaxis_inverted()  # largest on top
    assert ax.get_xlabel() == "cycles per issued instruction"


def test_before_after_stalls_are_grouped_with_a_legend():
    before = launch(stalls=STALLS)
    after = launch(stalls={"long_scoreboard": 3.0, "wait": 2.0})
    ax = plot_warp_stalls([before, after], labels=["before", "after"])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["before", "after"]
    assert len(ax.patches) == 2 * len(ax.get_yticks())


def test_missing_stalls_are_said_not_drawn_as_zero():
    ax = plot_warp_stalls(KernelLaunch(id=3, name="bare"))
    assert "not collected" in ax.get_title()
    assert not ax.patches


def test_sol_bars_show_percent_of_peak():
    k = launch(sol={"compute": 40.0, "memory": 75.0, "dram": 70.0, "l2": 20.0})
    assert sol_values(k) == pytest.approx({"compute": 40.0, "memory": 75.0, "dram": 70.0, "l2": 20.0})
    ax = plot_sol(k)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Compute (SM)", "Memory", "DRAM", "L2"]
    assert [p.get_width() for p in ax.patches] == pytest.approx([40.0, 75.0, 70.0, 20.0])
    assert ax.get_xlim() == (0, 110)
    assert {t.get_text() for t in ax.texts} >= {"40%", "75%", "70%", "20%"}
    assert "% of peak" in ax.get_xlabel()


def test_sol_without_metrics_says_so():
    ax = plot_sol(KernelLaunch(id=0, name="k", metrics={"x": Metric(1.0, "")}))
    assert "no SpeedOfLight" in ax.get_title()
