"""What the template notebooks call: profiles loaded once per process, kernel launches with their
diagnoses in order, figures embedded as images, and views (:class:`Explorer`) that are ipywidgets
live and static HTML once exported."""

from __future__ import annotations

import base64
import dataclasses
import html as htmllib
import io
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from kprof.kernel_model import KernelLaunch
    from kprof.model import Diagnosis
    from kprof.timeline_model import Timeline


DIAGNOSES_MIME = "application/vnd.kprof.diagnoses+json"
"""Cell outputs of this type carry a notebook's diagnoses to the report's header (never rendered)."""

WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

FIGURE_DPI = 90

_LOADED: dict[tuple[str, int, int], Any] = {}
"""Profiles loaded in this process, by (absolute path, mtime, size): the notebooks that a report
runs in one kernel (:data:`RUN_TOGETHER`) read each file once."""


def load_profile(path: str | os.PathLike[str]) -> Any:
    """:func:`kprof.load`, once per file and process (a changed file is read again).

    Examples
    --------
    >>> load_profile("data/samples/ncu/small_grid.ncu-rep.gz") is load_profile("data/samples/ncu/small_grid.ncu-rep.gz")  # doctest: +SKIP
    True
    """
    from kprof.io import load

    p = os.path.abspath(os.fspath(path))
    try:
        st = os.stat(p)
        key = (p, st.st_mtime_ns, st.st_size)
    except OSError:
        return load(path)  # the loader says what is wrong with it
    if key not in _LOADED:
        _LOADED[key] = load(path)
    return _LOADED[key]


_DIAGNOSED: dict[int, tuple[Any, list[Diagnosis]]] = {}
"""Diagnoses made in this process, by the id of the profile (kept with it, so an id is never reused):
the notebooks of one kernel diagnose each profile once."""


def diagnoses_of(profile: Any) -> list[Diagnosis]:
    """:func:`kprof.diagnose` of a loaded profile, once per profile and process: the kernel and mechanism
    notebooks list the same launches, and the before/after notebook compares profiles the timeline and
    kernel notebooks diagnosed already.

    Examples
    --------
    >>> p = load_profile("data/samples/ncu/small_grid.ncu-rep.gz")  # doctest: +SKIP
    >>> diagnoses_of(p) is diagnoses_of(p)  # doctest: +SKIP
    True
    """
    hit = _DIAGNOSED.get(id(profile))
    if hit is not None and hit[0] is profile:
        return hit[1]
    from kprof.api import diagnose

    found = diagnose(profile)
    _DIAGNOSED[id(profile)] = (profile, found)
    return found


def compare_loaded(before: Any, after: Any) -> list[Any]:
    """:func:`kprof.compare` of two loaded profiles, their diagnoses taken from :func:`diagnoses_of`."""
    from kprof.api import diagnose
    from kprof.diagnose.compare import compare_profiles

    def judged(profile: Any, timeline: Any) -> list[Diagnosis]:
        return diagnoses_of(profile) if timeline is None else diagnose(profile, timeline=timeline)

    return compare_profiles(
        before, after, diagnose=judged, file_before=before.source, file_after=after.source
    )


_VERDICT_ORDER = {"fix": 0, "inconclusive": 1, "healthy": 2}


def kernel_entries(paths: Sequence[str]) -> tuple[dict[str, Any], list[tuple[str, KernelLaunch, Diagnosis]]]:
    """Load and diagnose kernel reports: ``(profiles by path, [(path, launch, diagnosis), ...])``.

    Launches with a fix come first, then inconclusive, then healthy ones (stable: within a report,
    the launch whose fix wins the most time first). Each report is read and diagnosed once per process
    (:func:`load_profile`, :func:`diagnoses_of`), however many notebooks ask.
    """
    profiles: dict[str, Any] = {}
    entries: list[tuple[str, KernelLaunch, Diagnosis]] = []
    for path in paths:
        profile = load_profile(path)
        profiles[path] = profile
        launches = {k.id: k for k in profile}
        entries += [
            (path, launches[d.subject.launch], dataclasses.replace(d, file=path))
            for d in diagnoses_of(profile)
        ]
    entries.sort(key=lambda e: _VERDICT_ORDER[e[2].verdict.value])
    return profiles, entries


def kernel_label(profiles: dict[str, Any], path: str, launch: KernelLaunch) -> str:
    """A kernel's name on the charts: the file's name, plus the launch id when a report holds several."""
    name = os.path.basename(path)
    for suffix in (".gz", ".ncu-rep", ".csv"):
        name = name.removesuffix(suffix)
    return name if len(profiles[path].launches) == 1 else f"{name} #{launch.id}"


def figure_png(fig: Figure | SubFigure, dpi: int = FIGURE_DPI) -> str:
    """A figure as a ``data:image/png;base64,...`` URI."""
    buf = io.BytesIO()
    fig.figure.savefig(buf, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def figure_html(fig: Figure | SubFigure, alt: str, dpi: int = FIGURE_DPI) -> str:
    """An ``<img>`` with the figure embedded (alt text escaped)."""
    return f'<img class="kp-figure" src="{figure_png(fig, dpi)}" alt="{htmllib.escape(alt)}">'


class Explorer:
    """An ipywidgets view for live use, with a static HTML view that survives export.

    Jupyter renders the widget (its mime type ranks first); an exported or untrusted
    notebook shows the static HTML; the text is the plain fallback.
    """

    def __init__(self, static_html: str, text: str, widget: Any = None) -> None:
        self.static_html = static_html
        self.text = text
        self.widget = widget

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data: dict[str, Any] = {"text/plain": self.text, "text/html": self.static_html}
        if self.widget is not None:
            bundle = self.widget._repr_mimebundle_()
            if isinstance(bundle, tuple):
                bundle = bundle[0]
            if bundle and WIDGET_VIEW_MIME in bundle:
                data[WIDGET_VIEW_MIME] = bundle[WIDGET_VIEW_MIME]
        return data


def publish(diagnoses: Sequence[Diagnosis]) -> Any:
    """A displayable that carries ``diagnoses`` to the report header (an invisible cell output)."""

    class _Carrier:
        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
            return {DIAGNOSES_MIME: {"diagnoses": [d.to_dict() for d in diagnoses]}, "text/plain": ""}

    return _Carrier()


def timeline_gaps(tl: Timeline) -> Any:
    """The capture's idle GPU gaps with their causes, as the timeline diagnosis reads them, or None
    (the plot then shades the idle gaps without a cause)."""
    try:
        from kprof.diagnose import timeline as diagnose_timeline
    except ImportError:
        return None
    fn = getattr(diagnose_timeline, "gap_causes", None)
    if not callable(fn):
        return None
    g = fn(tl)
    from kprof.plot.timeline import Gaps

    return Gaps(
        start_ns=g.start_ns,
        end_ns=g.end_ns,
        cause=tuple(GAP_CAUSE_LABELS.get(str(c), str(c)) for c in g.cause),
    )


GAP_CAUSE_LABELS = {
    "host": "host issuing",
    "host_compute": "host computing",
    "sync": "after sync",
    "copy": "copy",
    "startup": "start-up",
    "device_wait": "queued work",
    "unknown": "",
}
"""How the timeline plot labels the diagnosis's gap causes (:data:`kprof.diagnose.timeline.GAP_CAUSES`)."""


def _details(summary: str, body: str, open_: bool) -> str:
    return (
        f'<details class="kp-pick"{" open" if open_ else ""}><summary>{summary}</summary>'
        f'<div class="kp-pick-body">{body}</div></details>'
    )


def _diag_label(d: Diagnosis | None, k: KernelLaunch, file: str) -> str:
    from kprof.plot._common import launch_label

    verdict = d.verdict.value if d is not None else "?"
    bottleneck = (d.bottleneck.value if d.bottleneck else "undetermined") if d is not None else "no diagnosis"
    return f"[{verdict}] {bottleneck} — {launch_label(k, 48)} ({os.path.basename(file)})"


def kernel_picker(
    entries: Sequence[tuple[str, KernelLaunch, Diagnosis | None]],
    views: Sequence[Callable[[KernelLaunch], Axes]],
    *,
    interactive: bool = True,
    show_diagnosis: bool = True,
    static_limit: int = 40,
) -> Explorer:
    """Pick a kernel launch and see its diagnosis and plots.

    Parameters
    ----------
    entries
        ``(file, launch, diagnosis)`` per launch, most important first.
    views
        Plot functions ``launch -> Axes`` drawn for the picked launch (e.g. SOL bars).
    interactive
        Build the live ipywidgets dropdown (the static view is always built).
    show_diagnosis
        Show the launch's diagnosis above its plots.
    static_limit
        Launches drawn in the static view (one ``<details>`` each, the first open).

    Returns
    -------
    Explorer
        Display it in a notebook.
    """
    parts = []
    for i, (file, k, d) in enumerate(entries[:static_limit]):
        body = d.to_html() if (d is not None and show_diagnosis) else ""
        for view in views:
            ax = view(k)
            body += figure_html(ax.figure, f"{view.__name__} of {k.display_name}")
        parts.append(_details(htmllib.escape(_diag_label(d, k, file)), body, i == 0))
    more = len(entries) - static_limit
    if more > 0:
        parts.append(f'<p class="kp-caption">{more} more launches not drawn.</p>')
    static = '<div class="kp-picker">' + "".join(parts) + "</div>"
    text = "\n".join(_diag_label(d, k, f) for f, k, d in entries)
    widget = None
    if interactive and entries:
        widget = _kernel_widget(entries, views, show_diagnosis)
    return Explorer(static, text, widget)


def _kernel_widget(
    entries: Sequence[tuple[str, KernelLaunch, Diagnosis | None]],
    views: Sequence[Callable[[KernelLaunch], Axes]],
    show_diagnosis: bool,
) -> Any:
    import ipywidgets as w
    from IPython.display import display

    options = [(_diag_label(d, k, f), i) for i, (f, k, d) in enumerate(entries)]
    pick = w.Dropdown(options=options, value=0, description="kernel", layout=w.Layout(width="95%"))
    out = w.Output()

    def show(change: Any = None) -> None:
        _file, k, d = entries[pick.value]
        out.clear_output(wait=True)
        with out:
            if d is not None and show_diagnosis:
                display(d)
            for view in views:
                display(view(k).figure)

    pick.observe(show, names="value")
    show()
    return w.VBox([pick, out])


def timeline_explorer(
    tl: Timeline,
    *,
    gaps: Any = None,
    window: tuple[int, int] | None = None,
    interactive: bool = True,
) -> Explorer:
    """The whole capture and a zoomed window; live, a slider moves the window.

    Parameters
    ----------
    tl
        The capture.
    gaps
        Gaps with causes for :func:`kprof.plot.plot_timeline`.
    window
        The zoomed window (default :func:`kprof.plot.timeline.default_window`).
    interactive
        Build the live ipywidgets slider (the static view is always built).
    """
    from kprof.model import _fmt
    from kprof.plot.timeline import default_window, plot_timeline

    name = os.path.basename(tl.source)
    full = plot_timeline(tl, gaps=gaps)
    static = figure_html(full.figure, f"timeline of {name}")
    if window is None:
        window = default_window(tl)
    if window is not None:
        zoom = plot_timeline(tl, gaps=gaps, window=window)
        static += figure_html(zoom.figure, f"timeline of {name}, zoomed")
        text = (
            f"Two charts of {name}: the whole capture, then a {_fmt(window[1] - window[0], 'ns')} window "
            "at its end (the steady state)."
        )
    else:
        text = f"One chart of {name}: the whole capture (its GPU work fits in one chart)."
    caption = f'<p class="kp-caption">{htmllib.escape(text)}</p>'
    widget = None
    span = tl.span_ns()
    if interactive and span is not None:
        widget = _timeline_widget(tl, gaps, span, window)
    return Explorer(f'<div class="kp-timeline-views">{static}{caption}</div>', text, widget)


def _timeline_widget(tl: Timeline, gaps: Any, span: tuple[int, int], window: tuple[int, int] | None) -> Any:
    import ipywidgets as w
    from IPython.display import display

    from kprof.plot.timeline import plot_timeline

    total_ms = (span[1] - span[0]) / 1e6
    lo, hi = window if window is not None else span
    slider = w.FloatRangeSlider(
        value=((lo - span[0]) / 1e6, (hi - span[0]) / 1e6),
        min=0.0,
        max=total_ms,
        step=max(total_ms / 1000, 1e-3),
        description="window ms",
        continuous_update=False,
        readout_format=".3f",
        layout=w.Layout(width="95%"),
    )
    out = w.Output()

    def show(change: Any = None) -> None:
        a, b = slider.value
        out.clear_output(wait=True)
        with out:
            display(
                plot_timeline(tl, gaps=gaps, window=(span[0] + int(a * 1e6), span[0] + int(b * 1e6))).figure
            )

    slider.observe(show, names="value")
    show()
    return w.VBox([slider, out])
