"""Job plots: what was drawn (artists, labels), from summaries built in code and from the real job."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection

from kprof.diagnose.job import RankSummary, job_stats
from kprof.plot.job import (
    BOX_LIMIT,
    plot_exposed_comm,
    plot_step_times,
    plot_straggler_timeline,
    timeline_ranks,
)

from ..conftest import SAMPLES

MS = 1_000_000


def summary(r: int, compute_ms: float, exposed_ms: float, steps: int = 6) -> RankSummary:
    n = steps
    comp = np.full(n, int(compute_ms * MS))
    exp = np.full(n, int(exposed_ms * MS))
    return RankSummary(
        path=f"rank{r}.sqlite",
        rank=r,
        step_number=np.arange(n),
        step_ns=np.full(n, 10 * MS) + np.arange(n) * 100_000,
        compute_ns=comp,
        nccl_ns=exp + MS // 2,
        exposed_ns=exp,
        busy_ns=comp + exp,
        sample_step=3,
        sample_compute=(np.array([0, 2 * MS]), np.array([MS, int(compute_ms * MS)])),
        sample_nccl=(np.array([int(compute_ms * MS)]), np.array([int((compute_ms + exposed_ms) * MS)])),
        nccl_kernel_count=n,
    )


JOB = [summary(0, 5.0, 4.0), summary(1, 8.5, 0.5), summary(2, 5.1, 3.9)]


def test_step_times_boxes_per_rank_and_compute_crosses() -> None:
    ax = plot_step_times(JOB, highlight=[1])
    assert isinstance(ax, Axes)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    assert ax.get_xlabel() == "rank" and ax.get_ylabel() == "ms per step"
    assert "5 aligned steps" in ax.get_title()  # the first of 6 left out as warm-up
    boxes = [p for p in ax.patches if p.get_gid() is None]
    assert len(boxes) == 3  # one box per rank
    # compute crosses: one per rank and step; the highlighted rank marked at its median step time
    offsets = [c.get_offsets() for c in ax.collections]
    crosses = next(o for o in offsets if len(o) == 3 * 5)
    assert sorted(set(np.round(crosses[:, 1], 2).tolist())) == [5.0, 5.1, 8.5]
    marked = next(o for o in offsets if len(o) == 1)
    assert marked[0, 0] == 1
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"compute per step", "highlighted rank"}
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 10.0


def test_step_times_band_for_many_ranks() -> None:
    many = [summary(r, 5.0, 1.0) for r in range(BOX_LIMIT + 1)]
    ax = plot_step_times(many, show_compute=False)
    assert not ax.patches  # no boxes
    assert any(line.get_label() == "median step" for line in ax.lines)
    assert any(isinstance(c, PolyCollection) for c in ax.collections)  # the p10-p90 band
    assert len(ax.get_xticks()) <= 33  # thinned rank labels


def test_exposed_comm_stacks_compute_exposed_and_idle() -> None:
    ax = plot_exposed_comm(JOB, highlight=[1])
    labels = [c.get_label() for c in ax.containers]
    assert labels == ["compute kernels", "exposed NCCL (not overlapped)", "other (GPU idle)"]
    comp, exp, other = ax.containers
    assert [round(b.get_height(), 2) for b in comp] == [5.0, 8.5, 5.1]
    assert [round(b.get_height(), 2) for b in exp] == [4.0, 0.5, 3.9]
    st = job_stats(JOB)
    step = st.median("step_ns") / 1e6
    assert [round(b.get_y() + b.get_height(), 3) for b in other] == pytest.approx(step.tolist(), abs=1e-3)
    assert [t.get_text() for t in ax.texts] == ["slow"]


def test_straggler_timeline_rows_per_rank() -> None:
    ax = plot_straggler_timeline(JOB)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0", "rank 1", "rank 2"]
    gids = sorted(c.get_gid() for c in ax.collections)
    assert gids == sorted(f"{k}-rank{r}" for k in ("compute", "nccl") for r in range(3))
    slow = next(c for c in ax.collections if c.get_gid() == "compute-rank1")
    assert len(slow.get_paths()) == 2  # the two compute intervals of the sample step
    assert ax.get_title() == "Kernels of step 3 per rank"
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {"compute kernels", "NCCL kernels"}
    assert ax.get_xlim()[1] == pytest.approx(9.0 * 1.02)
    sub = plot_straggler_timeline(JOB, ranks=[1, 0])
    assert [t.get_text() for t in sub.get_yticklabels()] == ["rank 1", "rank 0"]


def test_timeline_rows_for_many_ranks() -> None:
    many = [summary(r, 5.0 + (3.0 if r == 40 else 0.0), 1.0) for r in range(64)]
    chosen = timeline_ranks(many, max_rows=6)
    assert 40 in chosen and len(chosen) == 6


def test_plots_take_an_ax() -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    plt.close(fig)
    assert plot_step_times(JOB, axes[0]) is axes[0]
    assert plot_exposed_comm(JOB, axes[1]) is axes[1]
    assert plot_straggler_timeline(JOB, axes[2]) is axes[2]


def test_real_straggler_job() -> None:
    files = [SAMPLES / "multirank" / f"ddp_straggler_rank{r}.sqlite" for r in (0, 1)]
    if not all(f.exists() for f in files):
        pytest.skip("no multirank samples")
    from kprof.jobs import summarize_ranks

    ss = summarize_ranks(files, workers=1)
    ax = plot_straggler_timeline(ss)
    comp = {c.get_gid(): c for c in ax.collections}
    assert set(comp) == {"compute-rank0", "nccl-rank0", "compute-rank1", "nccl-rank1"}
    ax = plot_exposed_comm(ss)
    comp_bars, exp_bars, _ = ax.containers
    assert comp_bars[1].get_height() > 1.5 * comp_bars[0].get_height()  # rank 1 computes longer
    assert exp_bars[0].get_height() > 3 * exp_bars[1].get_height()  # rank 0 waits in NCCL


def test_straggler_timeline_legend_covers_no_bar() -> None:
    ax = plot_straggler_timeline(JOB)
    ax.figure.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert not legend.overlaps(ax.get_window_extent())  # outside the axes: no rank's last kernels hidden
