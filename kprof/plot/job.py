"""Plots of a multi-rank job, drawn from the ranks' summaries (:class:`~kprof.diagnose.job.RankSummary`).

- :func:`plot_step_times`: per rank, the distribution of step times over the aligned steps;
- :func:`plot_exposed_comm`: per rank, the median step split into compute, exposed NCCL time and
  the rest (idle);
- :func:`plot_straggler_timeline`: one row per rank of compute and NCCL kernels over one aligned
  step, each row from that rank's first kernel of the step.

Every function takes ``ax=None`` (a new figure when None), returns the Axes it drew on and never
calls ``show()``. They draw numbers computed by :mod:`kprof.diagnose.job`; verdicts stay there
(pass the ranks a diagnosis names as ``highlight``).

Examples
--------
>>> from kprof.jobs import summarize_ranks
>>> from kprof.plot.job import plot_straggler_timeline
>>> ax = plot_straggler_timeline(summarize_ranks("data/samples/multirank/ddp_straggler_rank*.sqlite"))  # doctest: +SKIP
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kprof.diagnose.job import JobStats, RankSummary, job_stats
from kprof.plot._common import COLORS, new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

COMPUTE_COLOR = COLORS["kernel"]
NCCL_COLOR = COLORS["sync"]
IDLE_COLOR = COLORS["gap"]
HIGHLIGHT_COLOR = COLORS["sync"]
BOX_LIMIT = 128
"""Up to this many ranks get a box each; more get a median line in a p10-p90 band."""

__all__ = ["plot_exposed_comm", "plot_step_times", "plot_straggler_timeline", "timeline_ranks"]


def _stats(summaries: Sequence[RankSummary] | JobStats) -> JobStats:
    return summaries if isinstance(summaries, JobStats) else job_stats(summaries)


def _rank_axis(ax: Axes, ranks: np.ndarray) -> None:
    n = len(ranks)
    step = max(1, int(np.ceil(n / 32)))
    ticks = np.arange(0, n, step)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(int(ranks[i])) for i in ticks], rotation=90 if n > 16 else 0)
    ax.set_xlabel("rank")
    ax.set_xlim(-0.7, n - 0.3)


def plot_step_times(
    summaries: Sequence[RankSummary] | JobStats,
    ax: Axes | None = None,
    *,
    highlight: Sequence[int] = (),
    show_compute: bool = True,
) -> Axes:
    """Per rank, the step times over the aligned steps (ms): a box per rank, or a band for many ranks.

    In a job that synchronizes every step the step times agree across ranks; what differs is
    how much of it each rank computes, drawn beside each box (``show_compute``).

    Parameters
    ----------
    summaries
        The ranks' summaries (or their :func:`~kprof.diagnose.job.job_stats`).
    ax
        Where to draw; a new figure when None.
    highlight
        Ranks to mark (e.g. the stragglers a diagnosis names).
    show_compute
        Also draw each step's compute time (non-NCCL kernels) per rank, as crosses.

    Returns
    -------
    matplotlib.axes.Axes
    """
    st = _stats(summaries)
    if ax is None:
        ax = new_axes((max(6.0, min(14.0, 0.25 * st.rank_count + 4)), 3.4))
    n = st.rank_count
    ms = st.step_ns / 1e6
    x = np.arange(n)
    if st.step_count == 0:
        ax.text(0.5, 0.5, "no aligned steps", ha="center", va="center", transform=ax.transAxes)
    elif n <= BOX_LIMIT:
        data = [row[np.isfinite(row)] for row in ms]
        ax.boxplot(data, positions=x, widths=0.6, showfliers=True, manage_ticks=False, patch_artist=True,
                   boxprops={"facecolor": "#DDEBF7", "edgecolor": COMPUTE_COLOR},
                   medianprops={"color": COMPUTE_COLOR, "linewidth": 1.5},
                   flierprops={"marker": ".", "markersize": 4})  # fmt: skip
    else:
        lo, med, hi = np.nanpercentile(ms, [10, 50, 90], axis=1)
        ax.fill_between(x, lo, hi, color="#DDEBF7", label="p10-p90 over steps")
        ax.plot(x, med, color=COMPUTE_COLOR, linewidth=1, label="median step")
    if show_compute and st.step_count:
        comp = st.compute_ns / 1e6
        xs = np.repeat(x, comp.shape[1]) + 0.38
        ax.scatter(
            xs, comp.ravel(), marker="x", s=14, color=COLORS["before"], label="compute per step", zorder=4
        )
        ax.legend(loc="lower right", fontsize=8)
    hl = [i for i, r in enumerate(st.ranks.tolist()) if r in set(highlight)]
    if hl and st.step_count:
        med = np.nanmedian(ms, axis=1)
        ax.scatter(x[hl], med[hl], color=HIGHLIGHT_COLOR, zorder=5, s=30, label="highlighted rank")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    _rank_axis(ax, st.ranks)
    ax.set_ylabel("ms per step")
    top = float(np.nanmax(ms)) if st.step_count and np.isfinite(ms).any() else 1.0
    ax.set_ylim(0, top * 1.12)
    ax.set_title(f"Step time per rank ({st.step_count} aligned steps, by {st.aligned_by})", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return ax


def plot_exposed_comm(
    summaries: Sequence[RankSummary] | JobStats, ax: Axes | None = None, *, highlight: Sequence[int] = ()
) -> Axes:
    """Per rank, the median step split into compute, exposed NCCL time (not overlapped) and the rest (ms).

    Returns
    -------
    matplotlib.axes.Axes
        The bars are in ``ax.containers`` in the order compute, exposed NCCL, other.
    """
    st = _stats(summaries)
    if ax is None:
        ax = new_axes((max(6.0, min(14.0, 0.25 * st.rank_count + 4)), 3.4))
    n = st.rank_count
    x = np.arange(n)
    comp = np.nan_to_num(st.median("compute_ns")) / 1e6
    exp = np.nan_to_num(st.median("exposed_ns")) / 1e6
    step = np.nan_to_num(st.median("step_ns")) / 1e6
    other = np.maximum(step - comp - exp, 0)
    width = 0.8
    ax.bar(x, comp, width, color=COMPUTE_COLOR, label="compute kernels")
    ax.bar(x, exp, width, bottom=comp, color=NCCL_COLOR, label="exposed NCCL (not overlapped)")
    ax.bar(x, other, width, bottom=comp + exp, color=IDLE_COLOR, label="other (GPU idle)")
    for i, r in enumerate(st.ranks.tolist()):
        if r in set(highlight):
            ax.annotate("slow", (i, step[i]), ha="center", va="bottom", fontsize=8, color=HIGHLIGHT_COLOR)
    _rank_axis(ax, st.ranks)
    ax.set_ylabel("median per step (ms)")
    ax.set_title("Where each rank's step goes", fontsize=10)
    ax.legend(loc="upper left", fontsize=8, bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return ax


def timeline_ranks(summaries: Sequence[RankSummary], max_rows: int = 16) -> list[int]:
    """The ranks a straggler timeline shows when there are too many: the most and the least compute per step.

    Examples
    --------
    >>> s = [RankSummary(path=str(r), rank=r, step_number=np.arange(1), step_ns=np.ones(1),
    ...                  compute_ns=np.array([r]), nccl_ns=np.zeros(1), exposed_ns=np.zeros(1),
    ...                  busy_ns=np.ones(1)) for r in range(10)]
    >>> timeline_ranks(s, max_rows=4)
    [0, 1, 8, 9]
    """
    if len(summaries) <= max_rows:
        return sorted(s.rank for s in summaries)
    med = sorted(
        ((float(np.median(s.compute_ns)) if s.step_count else 0.0, s.rank) for s in summaries),
        key=lambda t: t[0],
    )
    half = max_rows // 2
    chosen = [r for _, r in med[-half:]] + [r for _, r in med[: max_rows - half]]
    return sorted(set(chosen))


def plot_straggler_timeline(
    summaries: Sequence[RankSummary],
    ax: Axes | None = None,
    *,
    ranks: Sequence[int] | None = None,
    max_rows: int = 16,
) -> Axes:
    """One row per rank: compute (blue) and NCCL (red) kernels over one aligned step.

    Each row starts at that rank's first kernel of the step (the ranks' clocks are not
    shared). A straggler shows as a longer blue stretch before the collective, the other
    ranks as long red NCCL bars: their kernels started on time and waited.

    Parameters
    ----------
    summaries
        The ranks' summaries; each carries one steady step's kernels (``sample_step``).
    ranks
        The ranks to draw (default: all, or the ``max_rows`` with the most and least compute).

    Returns
    -------
    matplotlib.axes.Axes
        One collection per rank and kind in ``ax.collections``, with gid ``compute-rank<N>`` or
        ``nccl-rank<N>``; the y tick labels name the ranks.
    """
    by_rank = {s.rank: s for s in summaries}
    chosen = list(ranks) if ranks is not None else timeline_ranks(summaries, max_rows)
    rows = [by_rank[r] for r in chosen if r in by_rank]
    if ax is None:
        ax = new_axes((10.0, 0.45 * max(len(rows), 2) + 1.4))
    steps = Counter(s.sample_step for s in rows if s.sample_step is not None)
    common = steps.most_common(1)[0][0] if steps else None
    span = 0.0
    labels = []
    for y, s in enumerate(rows):
        for (st_, en), kind, color, label in (
            (s.sample_compute, "compute", COMPUTE_COLOR, "compute kernels"),
            (s.sample_nccl, "nccl", NCCL_COLOR, "NCCL kernels"),
        ):
            if len(st_):
                bars = list(zip((st_ / 1e6).tolist(), ((en - st_) / 1e6).tolist(), strict=True))
                coll = ax.broken_barh(bars, (y - 0.35, 0.7), facecolors=color, label=label)
                coll.set_gid(f"{kind}-rank{s.rank}")
                span = max(span, float(en.max()) / 1e6)
        tag = f"rank {s.rank}"
        if s.sample_step is not None and s.sample_step != common:
            tag += f" (step {s.sample_step})"
        labels.append(tag)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, span * 1.02 if span else 1)
    ax.set_xlabel("ms from the rank's first kernel of the step")
    ttl = f"Kernels of step {common} per rank" if common is not None else "Kernels per rank (no steady step)"
    ax.set_title(ttl, fontsize=10)
    handles, hlabels = ax.get_legend_handles_labels()
    if handles:
        uniq = dict(zip(hlabels, handles, strict=True))
        # outside the axes: inside, it covered the end of the last rank's step (the bars run to the right edge)
        ax.legend(
            uniq.values(),
            uniq.keys(),
            loc="upper left",
            bbox_to_anchor=(1.005, 1.0),
            fontsize=8,
            frameon=False,
        )
    ax.grid(axis="x", alpha=0.3)
    return ax
