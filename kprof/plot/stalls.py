"""Warp-stall breakdown and SpeedOfLight (SOL) bars of kernel launches.

The data functions (:func:`warp_stalls`, :func:`sol_values`) read the launch's metrics;
the plot functions draw them. Neither judges: a long bar is a hint, the diagnosis says
whether it explains the gap to the roofline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kprof.plot._common import SERIES, as_launches, launch_label, literal, new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from kprof.kernel_model import KernelLaunch

# ncu WarpStateStats: average warp cycles per issued instruction spent in each state
_STALL_RATIO = re.compile(r"^smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio$")
_STALL_LATENCY = re.compile(r"^smsp__average_warp_latency_issue_stalled_(\w+?)\.ratio$")
CYCLES = "cycles per issued instruction"
SAMPLES = "share of PC samples"

STALL_LABELS = {
    "long_scoreboard": "long scoreboard (L1TEX: global/local memory)",
    "short_scoreboard": "short scoreboard (MIO: shared memory, special math)",
    "barrier": "barrier (__syncthreads)",
    "membar": "memory barrier",
    "mio_throttle": "MIO throttle",
    "lg_throttle": "LG throttle (local/global queue)",
    "tex_throttle": "TEX throttle",
    "math_pipe_throttle": "math pipe throttle",
    "wait": "wait (fixed latency)",
    "not_selected": "not selected (eligible, another warp issued)",
    "selected": "selected (issuing)",
    "dispatch_stall": "dispatch stall",
    "drain": "drain",
    "imc_miss": "IMC miss (constant cache)",
    "branch_resolving": "branch resolving",
    "no_instruction": "no instruction (instruction cache)",
    "sleeping": "sleeping",
    "misc": "misc",
}

SOL_BARS: tuple[tuple[str, str], ...] = (
    ("compute", "Compute (SM)"),
    ("memory", "Memory"),
    ("dram", "DRAM"),
    ("l2", "L2"),
    ("l1", "L1/shared"),
    ("tensor_pipe", "Tensor pipe"),
    ("fma_pipe", "FMA pipe"),
)


def warp_stalls(launch: KernelLaunch) -> tuple[dict[str, float], str]:
    """Warp stall reasons of a launch, largest first, and what the numbers are.

    The reasons are those of :func:`kprof.facts.stalls.stall_reasons` (the diagnosis's
    own reading). With ncu's WarpStateStats metrics the values are warp cycles per issued
    instruction (unit ``"cycles per issued instruction"``); from PC sampling alone they are
    shares of the samples (unit ``"share of PC samples"``). Empty when neither was collected.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={
    ...     "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": Metric(12.5, ""),
    ...     "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": Metric(1.5, "")})
    >>> warp_stalls(k)
    ({'long_scoreboard': 12.5, 'wait': 1.5}, 'cycles per issued instruction')
    """
    from kprof.facts.stalls import stall_reasons

    reasons = stall_reasons(launch)
    if any(_STALL_RATIO.match(n) or _STALL_LATENCY.match(n) for n in launch.metrics):
        return reasons, CYCLES
    total = sum(reasons.values())
    return ({r: v / total for r, v in reasons.items()} if total > 0 else {}), SAMPLES


def sol_values(launch: KernelLaunch) -> dict[str, float]:
    """SpeedOfLight utilisation in percent of peak: compute, memory, DRAM, L2, L1, pipes.

    Only the values the report holds (see :func:`kprof.diagnose.roofline.roofline`).
    """
    from kprof.diagnose.roofline import roofline

    u = roofline(launch).utilization
    return {key: 100.0 * u[key] for key, _ in SOL_BARS if key in u}


def plot_warp_stalls(
    launches: Any,
    *,
    ax: Axes | None = None,
    top: int = 8,
    labels: Sequence[str] | None = None,
) -> Axes:
    """Horizontal bars of the warp stall reasons of one launch, or grouped bars for several.

    Parameters
    ----------
    launches
        A ``KernelLaunch``, a sequence of launches (e.g. before and after a change), or a
        ``KernelProfile`` (its launches).
    ax
        Axes to draw on; a new figure is made when None.
    top
        How many reasons to show (the largest over all launches); the rest are summed as
        ``other``.
    labels
        Legend labels, one per launch (default ``#id name``).

    Returns
    -------
    matplotlib.axes.Axes
        The axes. A launch without stall metrics is named in the title.

    Examples
    --------
    >>> ax = plot_warp_stalls(profile[0])  # doctest: +SKIP
    """
    ls = as_launches(launches)
    labels = [literal(x) for x in labels] if labels is not None else [launch_label(k) for k in ls]
    read = [warp_stalls(k) for k in ls]
    data = [d for d, _ in read]
    units = {u for d, u in read if d}
    if ax is None:
        ax = new_axes((7.0, 0.5 + 0.32 * (top + 1) * max(1, min(len(ls), 3))))
    totals: dict[str, float] = {}
    for d in data:
        for r, v in d.items():
            totals[r] = totals.get(r, 0.0) + v
    reasons = [r for r, _ in sorted(totals.items(), key=lambda kv: -kv[1])][:top]
    has_other = len(totals) > len(reasons)
    rows = [*reasons, "other"] if has_other else reasons
    n = max(1, len(ls))
    height = 0.8 / n
    for i, d in enumerate(data):
        vals = [d.get(r, 0.0) for r in reasons]
        if has_other:
            vals.append(sum(v for r, v in d.items() if r not in reasons))
        ys = [j + (i - (n - 1) / 2) * height for j in range(len(rows))]
        ax.barh(
            ys, vals, height=height * 0.95, color=SERIES[i % len(SERIES)], label=labels[i], gid=f"stalls-{i}"
        )
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([STALL_LABELS.get(r, r.replace("_", " ")) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(" / ".join(sorted(units)) if units else CYCLES)
    missing = [lab for lab, d in zip(labels, data, strict=True) if not d]
    title = "Warp stall reasons"
    if missing:
        title += f" (not collected for {', '.join(missing)})"
    ax.set_title(title, fontsize=10)
    if len(ls) > 1:
        ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.5)
    return ax


def plot_sol(
    launches: Any,
    *,
    ax: Axes | None = None,
    labels: Sequence[str] | None = None,
) -> Axes:
    """SpeedOfLight bars: compute, memory, DRAM, L2, L1 and pipe utilisation in % of peak.

    Parameters
    ----------
    launches
        A ``KernelLaunch``, a sequence of launches (grouped bars), or a ``KernelProfile``.
    ax
        Axes to draw on; a new figure is made when None.
    labels
        Legend labels, one per launch.

    Returns
    -------
    matplotlib.axes.Axes
        The axes, x from 0 to 100 %.

    Examples
    --------
    >>> ax = plot_sol([before[0], after[0]], labels=["before", "after"])  # doctest: +SKIP
    """
    ls = as_launches(launches)
    labels = [literal(x) for x in labels] if labels is not None else [launch_label(k) for k in ls]
    data = [sol_values(k) for k in ls]
    keys = [(k, name) for k, name in SOL_BARS if any(k in d for d in data)]
    if ax is None:
        ax = new_axes((6.0, 0.6 + 0.3 * max(1, len(keys)) * max(1, min(len(ls), 3))))
    n = max(1, len(ls))
    height = 0.8 / n
    for i, d in enumerate(data):
        ys = [j + (i - (n - 1) / 2) * height for j in range(len(keys))]
        vals = [d.get(k, 0.0) for k, _ in keys]
        bars = ax.barh(
            ys, vals, height=height * 0.95, color=SERIES[i % len(SERIES)], label=labels[i], gid=f"sol-{i}"
        )
        for b, (k, _), v in zip(bars, keys, vals, strict=True):
            text = f"{v:.0f}%" if k in d else "n/a"
            ax.annotate(
                text, (min(v, 100.0), b.get_y() + b.get_height() / 2), xytext=(3, 0), textcoords="offset points",
                va="center", fontsize=7,
            )  # fmt: skip
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([name for _, name in keys], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 110)
    ax.axvline(100, color="0.5", linewidth=0.8, linestyle=":")
    ax.set_xlabel("% of peak (SpeedOfLight, measured under ncu)")
    ax.set_title(
        "Speed of light" if keys else "Speed of light (no SpeedOfLight metrics in the report)", fontsize=10
    )
    if len(ls) > 1:
        ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.5)
    return ax


__all__ = ["STALL_LABELS", "plot_sol", "plot_warp_stalls", "sol_values", "warp_stalls"]
