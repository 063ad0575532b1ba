"""Timeline chart: one row per GPU stream (kernels, copies, memsets, graphs, syncs) and host API rows.

Idle gaps of the GPU are shaded and the largest are labelled with their cause. A capture
of a million events draws in about a second: within the window, each row's events are
merged at the resolution of a pixel when there are more than ``max_events`` of them
(the aggregated view), so the number of rectangles drawn stays near the number of pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from kprof.plot._common import COLORS, fmt_ns, literal, new_axes, shorten

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from kprof.timeline_model import Timeline

DEFAULT_MAX_EVENTS = 20_000
"""Per row, above this many events in the window the row is merged at pixel resolution."""
PIXELS = 2000
"""Horizontal resolution that the aggregated view merges at (about twice a figure's width in pixels)."""
MAX_HOST_ROWS = 3
MAX_STREAM_ROWS = 16
MAX_GAP_LABELS = 8


@dataclass(frozen=True, slots=True)
class Gaps:
    """Idle intervals of the GPU and, per interval, a short cause label (``""`` when unknown)."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    cause: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.start_ns)


@dataclass(slots=True)
class _Row:
    label: str
    spans: list[tuple[np.ndarray, np.ndarray, str, str]] = field(default_factory=list)
    """(start_ns, end_ns, colour key, legend label) groups."""
    thin: list[tuple[np.ndarray, np.ndarray, str, str]] = field(default_factory=list)
    """Drawn as a thin bar at the bottom of the row (syncs)."""
    weight: int = 0


def as_gaps(gaps: Any) -> Gaps:
    """Accept a :class:`Gaps`, an object or DataFrame with ``start_ns``/``end_ns``/``cause``,
    or a sequence of ``(start_ns, end_ns, cause)`` tuples."""
    if isinstance(gaps, Gaps):
        return gaps
    if hasattr(gaps, "start_ns") and hasattr(gaps, "end_ns"):
        cause = getattr(gaps, "cause", None)
        if cause is None:
            cause = getattr(gaps, "causes", None)
        starts = np.asarray(gaps.start_ns, dtype=np.int64)
        return Gaps(
            starts,
            np.asarray(gaps.end_ns, dtype=np.int64),
            tuple(str(c) for c in cause) if cause is not None else ("",) * len(starts),
        )
    rows = list(gaps)
    if not rows:
        return Gaps(np.zeros(0, np.int64), np.zeros(0, np.int64), ())
    s, e, c = zip(*[(r[0], r[1], r[2] if len(r) > 2 else "") for r in rows], strict=True)
    return Gaps(np.asarray(s, np.int64), np.asarray(e, np.int64), tuple(str(x) for x in c))


def gpu_busy(tl: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """Union of every GPU operation (kernels, copies, memsets, graph launches) over all devices."""
    from kprof.diagnose.intervals import union

    tables = (tl.kernels, tl.copies, tl.memsets, tl.graphs)
    return union(
        np.concatenate([t.start_ns for t in tables]).astype(np.int64),
        np.concatenate([t.end_ns for t in tables]).astype(np.int64),
    )


HOST_ACTIVITY: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("sync", (2,)),
    ("blocking copy", (3,)),
    ("launching", (1,)),
    ("start-up", (6, 7)),
    ("other CUDA", (0, 4, 5)),
)
"""Labels of what the host did during a gap, from the API categories (:class:`~kprof.timeline_model.ApiCategory`)."""
UNTRACED = "Python/untraced"
"""Label of a gap during which the host made no CUDA call (Python, framework, other work)."""


def host_activity(tl: Timeline, starts: np.ndarray, ends: np.ndarray) -> tuple[str, ...]:
    """For each interval, what the host was doing for most of it: the API category whose calls
    cover the largest part of it (more than half), else time outside any CUDA call.

    A description of the host trace, not a diagnosis: the timeline diagnosis decides
    which of these caused the GPU to idle.
    """
    from kprof.diagnose.intervals import per_interval_overlap, union

    n = len(starts)
    if n == 0:
        return ()
    if not tl.has_host_trace or len(tl.api) == 0:
        return ("",) * n
    cover = np.zeros((len(HOST_ACTIVITY), n), np.int64)
    cat = np.asarray(tl.api.category)
    for i, (_label, cats) in enumerate(HOST_ACTIVITY):
        m = np.isin(cat, cats)
        if m.any():
            u = union(tl.api.start_ns[m], tl.api.end_ns[m])
            cover[i] = per_interval_overlap((starts, ends), u)
    best = np.argmax(cover, axis=0)
    length = np.maximum(ends - starts, 1)
    most = cover[best, np.arange(n)] * 2 > length
    return tuple(HOST_ACTIVITY[int(b)][0] if ok else UNTRACED for b, ok in zip(best, most, strict=True))


def idle_gaps(tl: Timeline, window: tuple[int, int] | None = None, min_ns: float = 0) -> Gaps:
    """The GPU's idle intervals within ``window`` (default: first to last GPU operation) of at
    least ``min_ns``, each labelled with what the host was doing in it (:func:`host_activity`)."""
    from kprof.diagnose.intervals import gaps

    busy = gpu_busy(tl)
    if len(busy[0]) == 0:
        return Gaps(np.zeros(0, np.int64), np.zeros(0, np.int64), ())
    lo, hi = window if window is not None else (int(busy[0][0]), int(busy[1][-1]))
    s, e = gaps(busy, lo, hi)
    if min_ns > 0:
        keep = (e - s) >= min_ns
        s, e = s[keep], e[keep]
    return Gaps(s, e, host_activity(tl, s, e))


def default_window(tl: Timeline, events: int = 400) -> tuple[int, int] | None:
    """A window of about ``events`` GPU operations at the end of the capture (the steady state,
    where start-up is over), or None when the capture has fewer than that."""
    tables = [t for t in (tl.kernels, tl.copies, tl.memsets, tl.graphs) if len(t)]
    if not tables:
        return None
    starts = np.sort(np.concatenate([t.start_ns for t in tables]))
    if len(starts) <= events:
        return None
    ends = np.concatenate([t.end_ns for t in tables])
    return int(starts[-events]), int(ends.max())


def _select(s: np.ndarray, e: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    m = (e > lo) & (s < hi)
    return np.maximum(s[m], lo), np.minimum(e[m], hi)


def _merge(s: np.ndarray, e: np.ndarray, resolution: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge intervals closer than ``resolution`` (vectorized: one sort, one cumulative max)."""
    if len(s) == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s = s[order]
    e = e[order]
    run = np.maximum.accumulate(e)
    new = np.empty(len(s), bool)
    new[0] = True
    np.greater(s[1:], run[:-1] + resolution, out=new[1:])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], run[last]


def _api_groups(tl: Timeline) -> list[tuple[str, tuple[int, ...], str]]:
    return [
        ("api_launch", (1,), "host: launch"),
        ("api_sync", (2, 3), "host: sync / blocking copy"),
        ("api_copy", (4, 5), "host: async copy / memset"),
        ("api_startup", (6, 7), "host: start-up / alloc"),
        ("api_other", (0,), "host: other API"),
    ]


def _copy_key(direction: int) -> tuple[str, str]:
    if direction in (1, 11):
        return "copy_htod", "copy HtoD"
    if direction in (2, 12):
        return "copy_dtoh", "copy DtoH"
    if direction in (8, 13, 10):
        return "copy_dtod", "copy DtoD / PtoP"
    return "copy_other", "copy (other)"


def _rows(tl: Timeline, lo: int, hi: int, host: bool) -> list[_Row]:
    rows: dict[tuple[int, int], _Row] = {}

    def row(dev: int, stream: int) -> _Row:
        key = (int(dev), int(stream))
        if key not in rows:
            where = f"stream {key[1]}" if key[1] >= 0 else "device-wide"
            rows[key] = _Row(label=f"GPU{key[0]} {where}")
        return rows[key]

    def add(
        table: Any,
        key: str,
        legend: str,
        thin: bool = False,
        mask: np.ndarray | None = None,
        onto_existing: bool = False,
    ) -> None:
        """Draw ``table``'s events on their stream's row; with ``onto_existing``, only on rows that
        hold other work (a device-wide event, stream -1, on every row of its device), never a row
        of its own."""
        if len(table) == 0:
            return
        m = (table.end_ns > lo) & (table.start_ns < hi)
        if mask is not None:
            m &= mask
        if not m.any():
            return
        dev = np.asarray(table.device)[m]
        st = np.asarray(table.stream)[m]
        s = np.asarray(table.start_ns)[m]
        e = np.asarray(table.end_ns)[m]
        keys = dev.astype(np.int64) * (1 << 32) + (st.astype(np.int64) & 0xFFFFFFFF)
        for k in np.unique(keys):
            sel = keys == k
            dev_k, stream_k = int(k >> 32), int(np.int32(k & 0xFFFFFFFF))
            grp = (np.maximum(s[sel], lo), np.minimum(e[sel], hi), key, legend)
            if onto_existing:
                targets = [
                    r for (d_, s_), r in rows.items() if d_ == dev_k and (stream_k < 0 or s_ == stream_k)
                ]
            else:
                targets = [row(dev_k, stream_k)]
            for r in targets:
                (r.thin if thin else r.spans).append(grp)
                r.weight += 0 if onto_existing else int(sel.sum())

    add(tl.kernels, "kernel", "kernel")
    add(tl.graphs, "graph", "CUDA graph launch")
    if len(tl.copies):
        directions = np.asarray(tl.copies.direction)
        seen: dict[str, list[int]] = {}
        for d in np.unique(directions):
            k, _ = _copy_key(int(d))
            seen.setdefault(k, []).append(int(d))
        for k, ds in seen.items():
            _, legend = _copy_key(ds[0])
            add(tl.copies, k, legend, mask=np.isin(directions, ds))
    add(tl.memsets, "memset", "memset")
    if not (host and len(tl.api)):
        # Without host rows, the sync records show where the host blocked, as thin bars on the rows of
        # GPU work (a device-wide sync on each row of its device; never an empty row of its own). With
        # host rows, the blocking calls are drawn there already: a second orange entry would repeat them.
        add(tl.syncs, "sync", "sync (host blocked)", thin=True, onto_existing=True)

    gpu_rows = sorted(rows.values(), key=lambda r: -r.weight)[:MAX_STREAM_ROWS]
    gpu_rows.sort(key=lambda r: r.label)
    return (_host_rows(tl, lo, hi) if host and len(tl.api) else []) + gpu_rows


def _host_rows(tl: Timeline, lo: int, hi: int) -> list[_Row]:
    """One row per host thread with the most CUDA calls in the window (at most MAX_HOST_ROWS), in thread order."""
    out: list[_Row] = []
    thread = np.asarray(tl.api.thread)
    m = (tl.api.end_ns > lo) & (tl.api.start_ns < hi)
    cat = np.asarray(tl.api.category)
    counts = np.bincount(thread[m], minlength=len(tl.threads) or 1) if m.any() else np.zeros(1, np.int64)
    top = [int(t) for t in np.argsort(-counts)[:MAX_HOST_ROWS] if counts[t] > 0]
    for t in sorted(top):
        name = tl.threads[t] if t < len(tl.threads) else f"thread {t}"
        r = _Row(label=f"host {shorten(name, 24)}")
        sel_t = m & (thread == t)
        for key, cats, legend in _api_groups(tl):
            sel = sel_t & np.isin(cat, cats)
            if sel.any():
                r.spans.append(
                    (
                        np.maximum(tl.api.start_ns[sel], lo),
                        np.minimum(tl.api.end_ns[sel], hi),
                        key,
                        legend,
                    )
                )
        out.append(r)
    return out


def plot_timeline(
    tl: Timeline,
    *,
    window: tuple[int, int] | None = None,
    gaps: Any = None,
    ax: Axes | None = None,
    host: bool = True,
    max_events: int = DEFAULT_MAX_EVENTS,
    min_gap_ns: int | None = None,
    title: str | None = None,
) -> Axes:
    """Draw a timeline: host API rows, then one row per GPU stream; idle GPU gaps shaded.

    Parameters
    ----------
    tl
        The capture (:class:`kprof.timeline_model.Timeline`).
    window
        ``(start_ns, end_ns)`` on the capture's clock; default the whole capture.
    gaps
        Idle gaps with causes to shade and label: a :class:`Gaps`, anything with
        ``start_ns``/``end_ns``/``cause`` columns, or ``(start_ns, end_ns, cause)`` tuples.
        By default the GPU's idle intervals are shaded without a cause.
    ax
        Axes to draw on; a new figure is made when None.
    host
        Draw the host API rows (the threads with the most calls in the window).
    max_events
        Per row, above this many events in the window the row is merged at pixel
        resolution (the aggregated view); the title then says so.
    min_gap_ns
        Gaps shorter than this are not shaded (default: one pixel).
    title
        Axes title (default: the file name, the window and the view).

    Returns
    -------
    matplotlib.axes.Axes
        The axes; the x axis is milliseconds from the window's start.

    Examples
    --------
    >>> tl = kprof.load("capture.sqlite")  # doctest: +SKIP
    >>> ax = plot_timeline(tl, window=default_window(tl))  # doctest: +SKIP
    """
    span = tl.span_ns()
    if window is None:
        window = span if span is not None else (0, 1)
    lo, hi = int(window[0]), int(window[1])
    if hi <= lo:
        hi = lo + 1
    resolution = (hi - lo) / PIXELS
    rows = _rows(tl, lo, hi, host)
    n_rows = max(1, len(rows))
    if ax is None:
        ax = new_axes((11.0, 1.5 + 0.42 * n_rows))
    drawn_legend: dict[str, Any] = {}
    aggregated = _draw_rows(ax, rows, lo, resolution, max_events, drawn_legend)
    min_len = min_gap_ns if min_gap_ns is not None else resolution
    g = as_gaps(gaps) if gaps is not None else idle_gaps(tl, (lo, hi), min_len)
    if len(g):
        _draw_gaps(ax, g, lo, hi, min_len, n_rows, drawn_legend)

    ax.set_xlim(0, (hi - lo) / 1e6)
    ax.set_ylim(n_rows - 0.5, -1.5)
    ax.set_yticks(range(-1, len(rows)))
    ax.set_yticklabels(["GPU idle (cause)", *(r.label for r in rows)], fontsize=8)
    ax.axhline(-0.5, color="0.6", linewidth=0.6)
    ax.set_xlabel("time from window start [ms]")
    if title is None:
        import os

        title = literal(os.path.basename(tl.source)) or "timeline"
        title += f" — {fmt_ns(hi - lo)} window"
        if span is not None and (lo, hi) != span:
            title += f" at +{fmt_ns(lo - span[0])}"
        if aggregated:
            title += f" (aggregated view: {aggregated:,} events merged at {fmt_ns(resolution)})"
    ax.set_title(title, fontsize=9)  # a given title is drawn as given (mathtext allowed)
    if drawn_legend:
        ax.legend(
            list(drawn_legend.values()), list(drawn_legend.keys()), fontsize=7, frameon=False,
            loc="upper left", bbox_to_anchor=(1.005, 1.0),
        )  # fmt: skip
    ax.grid(True, axis="x", linewidth=0.4, alpha=0.4)
    return ax


def _ms(t: np.ndarray | float, lo: int) -> Any:
    """Milliseconds from the window's start ``lo``."""
    return (np.asarray(t, dtype=np.float64) - lo) / 1e6


def _draw_rows(
    ax: Axes, rows: list[_Row], lo: int, resolution: float, max_events: int, drawn_legend: dict[str, Any]
) -> int:
    """Each row's spans (and thin marks); a row of more than ``max_events`` is merged at pixel resolution.
    Returns how many events were merged."""
    aggregated = 0
    for y, r in enumerate(rows):
        for groups, y0, h in ((r.spans, y - 0.38, 0.76), (r.thin, y + 0.22, 0.16)):
            for s, e, key, legend in groups:
                if len(s) > max_events:
                    aggregated += len(s)
                    s, e = _merge(s, e, resolution)
                w = np.maximum(e - s, resolution / 2)
                xr = np.column_stack((_ms(s, lo), w / 1e6))
                coll = ax.broken_barh(
                    cast(Any, xr), (y0, h), facecolors=COLORS[key], edgecolors="none", gid=f"row-{key}"
                )
                drawn_legend.setdefault(legend, coll)
    return aggregated


def _draw_gaps(
    ax: Axes, g: Gaps, lo: int, hi: int, min_len: float, n_rows: int, drawn_legend: dict[str, Any]
) -> None:
    """The idle gaps, shaded behind everything, the largest labelled with their cause."""
    gs, ge = _select(g.start_ns, g.end_ns, lo, hi)
    m = (g.end_ns > lo) & (g.start_ns < hi)
    causes = np.asarray(g.cause if g.cause else ("",) * len(g), dtype=object)[m]
    keep = (ge - gs) >= min_len
    gs, ge, causes = gs[keep], ge[keep], causes[keep]
    if not len(gs):
        return
    coll = ax.broken_barh(
        cast(Any, np.column_stack((_ms(gs, lo), (ge - gs) / 1e6))), (-1.5, n_rows + 1),
        facecolors=COLORS["gap"], alpha=0.35, edgecolors="none", zorder=0, gid="gaps",
    )  # fmt: skip
    drawn_legend.setdefault("GPU idle", coll)
    if len(causes) == len(gs):
        _label_gaps(ax, gs, ge, causes, lo, hi)


def _label_gaps(ax: Axes, gs: np.ndarray, ge: np.ndarray, causes: np.ndarray, lo: int, hi: int) -> None:
    """Label the longest gaps in the top band, on two staggered lines, never two labels of one line closer
    than LABEL_SPACING of the window."""
    window_ms = (hi - lo) / 1e6
    axes_in = ax.bbox.width / ax.figure.dpi
    placed: list[tuple[float, int, float]] = []
    for i in np.argsort(-(ge - gs)):
        if len(placed) >= MAX_GAP_LABELS:
            break
        text = f"{literal(str(causes[i])) or 'idle'} {fmt_ns(ge[i] - gs[i])}"
        # half the label's width in ms (7 pt characters are about 0.55 em wide)
        half = 0.5 * (len(text) * 7 * 0.55 / 72 + 0.25) / max(axes_in, 1.0) * window_ms
        mid = min(max(float(_ms((gs[i] + ge[i]) / 2, lo)), half), window_ms - half)
        for level in (0, 1):
            if all(abs(mid - x) >= half + h for x, lv, h in placed if lv == level):
                break
        else:
            continue
        placed.append((mid, level, half))
        ax.annotate(
            text, (mid, -1.25 + 0.5 * level), ha="center", va="center",
            fontsize=7, color="0.1", gid="gap-label", annotation_clip=False,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.85, "linewidth": 0},
        )  # fmt: skip


__all__ = ["Gaps", "as_gaps", "default_window", "gpu_busy", "host_activity", "idle_gaps", "plot_timeline"]
