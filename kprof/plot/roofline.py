"""Roofline chart: hierarchical roofs from the report's own peaks, kernels as points.

The numbers come from :func:`kprof.diagnose.roofline.roofline` (the report's own
peak metrics, no hand-written GPU table); this module only draws them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kprof.plot._common import SERIES, as_launches, launch_label, literal, new_axes, si

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from kprof.diagnose.roofline import Roofline

LEVEL_STYLE = {"dram": ("DRAM", "o", "-"), "l2": ("L2", "s", "--"), "l1": ("L1", "^", ":")}
PRECISION_LABEL = {"fp32": "FP32", "fp64": "FP64", "fp16": "FP16", "tensor": "Tensor"}


@dataclass(frozen=True, slots=True)
class RooflinePoint:
    """One kernel's position: total FLOP/s against FLOP per byte at each memory level."""

    label: str
    flops: float
    intensity: dict[str, float]
    """FLOP per byte per level (``dram``, ``l2``, ``l1``), only levels the report measured."""


def _point(k: Any) -> tuple[RooflinePoint | None, Roofline]:
    from kprof.diagnose.roofline import roofline, unseen_traffic

    r = roofline(k)
    f = r.total_flops
    unseen = unseen_traffic(k) if hasattr(k, "sass") else {}
    inten = {lv: i for lv in LEVEL_STYLE if lv not in unseen and (i := r.intensity(lv)) is not None and i > 0}
    if not f or f <= 0 or not inten:
        return None, r
    return RooflinePoint(label=launch_label(k), flops=float(f), intensity=inten), r


def roofline_points(
    launches: Any, labels: Sequence[str] | None = None
) -> tuple[list[RooflinePoint | None], list[str], list[Roofline]]:
    """Prepare the points of a roofline chart, one per launch in order.

    Returns the points (None for a launch that cannot be placed: no floating-point work
    or no byte counters), the labels of those launches, and every launch's
    :class:`~kprof.diagnose.roofline.Roofline`.
    """
    points: list[RooflinePoint | None] = []
    skipped: list[str] = []
    roofs: list[Roofline] = []
    ls = as_launches(launches)
    names = [literal(x) for x in labels] if labels is not None else [launch_label(k) for k in ls]
    if len(names) != len(ls):
        raise ValueError(f"{len(names)} labels for {len(ls)} launches")
    for k, name in zip(ls, names, strict=True):
        p, r = _point(k)
        if p is not None:
            p = RooflinePoint(label=name, flops=p.flops, intensity=p.intensity)
        points.append(p)
        roofs.append(r)
        if p is None:
            skipped.append(name)
    return points, skipped, roofs


def _hidden_levels(
    launches: Any, labels: Sequence[str] | None, levels: Sequence[str]
) -> list[tuple[str, str, str]]:
    """(label, level, reason) for each drawn level whose bytes the launch's counters cannot see."""
    from kprof.diagnose.roofline import unseen_traffic

    ls = as_launches(launches)
    names = (
        [literal(x) for x in labels]
        if labels is not None and len(labels) == len(ls)
        else [launch_label(k) for k in ls]
    )
    out = []
    for k, name in zip(ls, names, strict=True):
        if hasattr(k, "sass"):
            for lv, why in unseen_traffic(k).items():
                if lv in levels:
                    out.append((name, lv, why))
    return out


_INT_PATH = re.compile(r"src_(int\d+)")


def _precision_label(prec: str, roofs: Sequence[Roofline]) -> str:
    """``Tensor``, or ``Tensor (INT8)`` when the tensor work drawn is integer MMA (IMMA/IGMMA paths count integer
    operations, and their ceiling is the integer one)."""
    if prec == "tensor":
        ints = {
            m.group(1).upper()
            for r in roofs
            if r.tensor_path and (r.flops.get("tensor") or 0) > 0 and (m := _INT_PATH.search(r.tensor_path))
        }
        if ints and all(
            _INT_PATH.search(r.tensor_path or "") for r in roofs if (r.flops.get("tensor") or 0) > 0
        ):
            return f"Tensor ({'/'.join(sorted(ints))})"
    return PRECISION_LABEL.get(prec, prec)


def _peaks(roofs: Sequence[Roofline]) -> tuple[dict[str, float], dict[str, float]]:
    """The ceilings to draw: the first report value of each level, and of FP32 plus each
    precision that some kernel executed."""
    used = {p for r in roofs for p, v in r.flops.items() if v and v > 0} | {"fp32"}
    flops: dict[str, float] = {}
    ran: dict[str, float] = {}
    bw: dict[str, float] = {}
    for r in roofs:
        for p, v in r.peak_flops.items():
            if v and v > 0 and p in used:
                flops.setdefault(p, v)
                # A precision's ceiling depends on the data path (the tensor ceiling of a kernel that ran
                # no tensor op is the TF32 path's): prefer the highest ceiling among kernels that ran it.
                if (r.flops.get(p) or 0) > 0:
                    ran[p] = max(ran.get(p, 0.0), v)
        for lv, v in r.peak_bytes_per_s.items():
            if v and v > 0:
                bw.setdefault(lv, v)
    flops.update(ran)
    return flops, bw


def plot_roofline(
    launches: Any,
    *,
    after: Any = None,
    ax: Axes | None = None,
    levels: Sequence[str] = ("dram", "l2", "l1"),
    annotate: bool = True,
    labels: Sequence[str] | None = None,
) -> Axes:
    """Draw kernels on a hierarchical roofline built from the report's own peaks.

    Parameters
    ----------
    launches
        A ``KernelProfile``, one ``KernelLaunch`` or a sequence of them.
    after
        The same kernels after a change (profile, launch or sequence, matched in order):
        an arrow goes from each kernel before to the same kernel after.
    ax
        Axes to draw on; a new figure is made when None.
    levels
        Memory levels whose roofs and points are drawn (``dram``, ``l2``, ``l1``).
    labels
        One label per launch of ``launches`` (default ``#id name``); the after launches
        take the same labels.
    annotate
        Write each kernel's label next to its point when there are at most three kernels;
        more kernels (or ``annotate=False``) are named in a legend on the right.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on. Launches that cannot be placed (no floating-point work) are
        named in a note in the lower right corner.

    Examples
    --------
    >>> ax = plot_roofline(kprof.load("r.ncu-rep"))  # doctest: +SKIP
    >>> ax.figure.savefig("roofline.png")  # doctest: +SKIP
    """
    n_launches = len(as_launches(launches))
    if ax is None:
        ax = new_axes((9.5, 5.2) if n_launches > 3 else (7.5, 4.8))
    all_points, skipped, roofs = roofline_points(launches, labels)
    all_after: list[RooflinePoint | None] = []
    if after is not None:
        n_after = len(as_launches(after))
        after_labels = list(labels)[:n_after] if labels is not None and len(labels) >= n_after else None
        all_after, after_skipped, after_roofs = roofline_points(after, after_labels)
        roofs = roofs + after_roofs
        skipped += [f"{s} (after)" for s in after_skipped]
    points = [p for p in all_points if p is not None]
    after_points = [p for p in all_after if p is not None]
    peak_flops, peak_bw = _peaks(roofs)
    levels = [lv for lv in levels if lv in LEVEL_STYLE]

    # axis limits: cover points, ridge points and a decade around them
    xs = [i for p in points + after_points for lv, i in p.intensity.items() if lv in levels]
    ys = [p.flops for p in points + after_points]
    top = max(peak_flops.values()) if peak_flops else (max(ys) * 4 if ys else 1e12)
    ridges = [pf / b for pf in peak_flops.values() for lv, b in peak_bw.items() if lv in levels]
    x_all = xs + ridges
    if x_all:
        x_lo = 10 ** math.floor(math.log10(min(x_all)) - 0.5)
        x_hi = 10 ** math.ceil(math.log10(max(x_all)) + 0.5)
    else:
        x_lo, x_hi = 1e-2, 1e3
    y_cands = ys + [b * x_lo for b in peak_bw.values()]
    y_lo = 10 ** math.floor(math.log10(max(min(y_cands), 1.0)) - 0.5) if y_cands else top / 1e6
    y_hi = 10 ** math.ceil(math.log10(top) + 0.3)

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)

    # roofs: one memory diagonal per level up to the highest compute ceiling,
    # one horizontal ceiling per precision
    roof_top = max(peak_flops.values()) if peak_flops else None
    for lv in levels:
        if lv not in peak_bw:
            continue
        name, _marker, style = LEVEL_STYLE[lv]
        b = peak_bw[lv]
        x_end = roof_top / b if roof_top else x_hi
        ax.plot(
            [x_lo, x_end], [b * x_lo, b * x_end], color="0.25", linestyle=style, linewidth=1.3,
            label=f"{name} roof {si(b, 'B/s')}", gid=f"roof-{lv}",
        )  # fmt: skip
    bw_max = max((peak_bw[lv] for lv in levels if lv in peak_bw), default=None)
    ceilings: list[tuple[float, list[str]]] = []  # equal peaks share one line and one label
    for prec, pf in sorted(peak_flops.items(), key=lambda kv: -kv[1]):
        if ceilings and abs(ceilings[-1][0] - pf) <= 0.01 * pf:
            ceilings[-1][1].append(prec)
        else:
            ceilings.append((pf, [prec]))
    for pf, precs in ceilings:
        x_start = pf / bw_max if bw_max else x_lo
        ax.plot(
            [x_start, x_hi],
            [pf, pf],
            color="0.45",
            linewidth=1.0,
            linestyle="-",
            gid=f"ceiling-{'-'.join(precs)}",
        )
        names = "/".join(_precision_label(p, roofs) for p in precs)
        integer = precs == ["tensor"] and names != PRECISION_LABEL["tensor"]  # integer MMA counts operations
        ax.annotate(
            f"{names} peak {si(pf, 'OP/s' if integer else 'FLOP/s')}",
            (x_hi, pf),
            xytext=(-4, 3),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=8,
            color="0.3",
        )

    # kernels: same colour per kernel, marker per memory level
    for i, p in enumerate(points):
        color = SERIES[i % len(SERIES)]
        for lv in levels:
            if lv in p.intensity:
                _, marker, _ = LEVEL_STYLE[lv]
                ax.plot(
                    p.intensity[lv], p.flops, marker=marker, color=color, linestyle="none", markersize=7,
                    markeredgecolor="white", gid=f"point-{lv}", label=None,
                )  # fmt: skip
        if annotate and len(points) <= 3:
            lv0 = next((lv for lv in levels if lv in p.intensity), None)
            if lv0 is not None:
                ax.annotate(
                    p.label, (p.intensity[lv0], p.flops), xytext=(6, -10), textcoords="offset points",
                    fontsize=8, color=color,
                )  # fmt: skip

    # before -> after arrows, matched in order, at the first level both measured
    colors = {id(p): SERIES[i % len(SERIES)] for i, p in enumerate(points)}
    for bp, ap in zip(all_points, all_after, strict=False):
        if bp is None or ap is None:
            continue
        lv0 = next((lv for lv in levels if lv in bp.intensity and lv in ap.intensity), None)
        if lv0 is None:
            continue
        color = colors[id(bp)]
        _, marker, _ = LEVEL_STYLE[lv0]
        ax.plot(
            ap.intensity[lv0], ap.flops, marker=marker, color=color, markerfacecolor="white", linestyle="none",
            markersize=8, gid="point-after",
        )  # fmt: skip
        ax.annotate(
            "", xy=(ap.intensity[lv0], ap.flops), xytext=(bp.intensity[lv0], bp.flops),
            arrowprops={"arrowstyle": "->", "color": color, "linewidth": 1.5}, gid="arrow",
        )  # fmt: skip

    # legend: roofs plus one proxy per marker
    handles, labels = ax.get_legend_handles_labels()
    from matplotlib.lines import Line2D

    for lv in levels:
        if any(lv in p.intensity for p in points):
            name, marker, _ = LEVEL_STYLE[lv]
            handles.append(Line2D([], [], marker=marker, color="0.3", linestyle="none"))
            labels.append(f"kernel vs {name} bytes")
    if after_points:
        handles.append(Line2D([], [], marker="o", color="0.3", markerfacecolor="white", linestyle="none"))
        labels.append("after the change")
    if handles:
        roofs_legend = ax.legend(handles, labels, loc="upper left", fontsize=8, frameon=False)
        ax.add_artist(roofs_legend)
    if len(points) > 3 or (points and not annotate):
        kernel_handles = [
            Line2D([], [], marker="o", color=SERIES[i % len(SERIES)], linestyle="none")
            for i in range(len(points))
        ]
        ax.legend(
            kernel_handles, [p.label for p in points], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
            frameon=False, title="kernels", title_fontsize=8,
        )  # fmt: skip
    notes = []
    if skipped:
        shown = ", ".join(skipped[:4]) + (f" and {len(skipped) - 4} more" if len(skipped) > 4 else "")
        notes.append(f"not on the chart (no floating-point work): {shown}")
    hidden = _hidden_levels(launches, labels, levels)
    if after is not None:
        hidden += [(f"{n} (after)", lv, why) for n, lv, why in _hidden_levels(after, None, levels)]
    for lv in sorted({lv for _, lv, _ in hidden}):
        hidden_names = [n for n, x, _ in hidden if x == lv]
        why = next(w for _, x, w in hidden if x == lv)
        shown = ", ".join(hidden_names[:3]) + (
            f" and {len(hidden_names) - 3} more" if len(hidden_names) > 3 else ""
        )
        notes.append(f"no {LEVEL_STYLE[lv][0]} point for {shown}: {why}")
    if notes:
        ax.text(
            0.99, 0.02, "\n".join(notes), transform=ax.transAxes,
            ha="right", va="bottom", fontsize=7, color="0.35", wrap=True, gid="skipped-note",
        )  # fmt: skip
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("Performance [FLOP/s]")
    ax.set_title("Roofline (peaks from the report; ncu-replayed rates)", fontsize=10)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    return ax


__all__ = ["RooflinePoint", "plot_roofline", "roofline_points"]
