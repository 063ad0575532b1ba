"""``kprof report``: fill the template notebooks, execute them, export one self-contained HTML file.

Each input goes to the notebooks of its stage (docs/workflow.md): timeline captures to
``01_timeline``, Nsight Compute reports to ``02_kernel`` and ``03_mechanism``. Each
notebook runs once with all its inputs (papermill, in a fresh ``ipykernel`` running this
interpreter, inside a private temporary directory; the notebooks run in parallel, one
Python process each), the executed notebooks are joined
behind a header that lists every headline, and nbconvert exports the result with images
embedded, input cells hidden (``show_code`` keeps them) and nothing loaded from the network.
The output file is written atomically (a temporary file in the same directory, then
``os.replace``).

The notebook helpers (:func:`kernel_picker`, :func:`timeline_explorer`, :func:`publish`)
give the templates an ipywidgets view for live use and a static HTML view that survives
export.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import html as htmllib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kprof.errors import KprofError, KprofInputError
from kprof.lifetime import die_with_parent, hold, owned_tempdir, remove_stale, remove_stale_temporaries
from kprof.outputs import check_output, disk_full_is_bad_input, give_permissions, writing_output

if TYPE_CHECKING:
    import argparse

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from kprof.kernel_model import KernelLaunch
    from kprof.model import Diagnosis
    from kprof.timeline_model import Timeline

TEMPLATES: dict[str, str] = {
    "timeline": "01_timeline.ipynb",
    "kernel": "02_kernel.ipynb",
    "mechanism": "03_mechanism.ipynb",
    "job": "04_job.ipynb",
    "compare": "05_compare.ipynb",
}
"""Stage -> template notebook shipped in ``kprof/templates``. A report runs the ``job`` template
once per job, as stages ``job``, ``job:2``, ``job:3``... (see :func:`stage_template`)."""
STAGE_TITLES = {
    "timeline": "Timeline",
    "kernel": "Kernel",
    "mechanism": "Mechanism",
    "job": "Job (many ranks)",
    "compare": "Before and after",
}
"""Section titles; a report numbers its sections 1, 2, 3... in the order it shows them."""
RUN_TOGETHER = ("kernel", "mechanism", "compare")
"""Stages that run in one notebook kernel when the report has kernel reports: each report is then
loaded and diagnosed once (:func:`load_profile`, :func:`kernel_entries`), not once per notebook."""


def stage_template(stage: str) -> str:
    """The template notebook of a stage key (``job:2`` is the second run of ``job``)."""
    return TEMPLATES[stage.split(":", 1)[0]]


def stage_title(stage: str) -> str:
    """The section title of a stage key."""
    base, _, n = stage.partition(":")
    return STAGE_TITLES[base] + (f" ({n})" if n else "")


TIMELINE_FORMATS = ("nsys-rep", "nsys-sqlite", "kineto")
KERNEL_FORMATS = ("ncu-rep", "ncu-csv")
DIAGNOSES_MIME = "application/vnd.kprof.diagnoses+json"
"""Cell outputs of this type carry a notebook's diagnoses to the report's header (never rendered)."""
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"
CELL_TIMEOUT_S = 600
FIGURE_DPI = 90


# ====================================================================== inputs


def samples_dir() -> Path | None:
    """The shipped sample gallery (``data/samples`` with a ``manifest.json``), or None.

    Looked up beside the package (a source checkout), then in the current directory.
    """
    here = Path(__file__).resolve().parents[1] / "data" / "samples"
    for d in (here, Path.cwd() / "data" / "samples"):
        if (d / "manifest.json").is_file() or (d / "ncu").is_dir() or (d / "timeline").is_dir():
            return d
    return None


def _sample_files(d: Path) -> list[Path]:
    """The files the manifest lists (or, without a manifest, those under ``ncu/`` and ``timeline/``)."""
    m = d / "manifest.json"
    if m.is_file():
        data = json.loads(m.read_text(encoding="utf-8"))
        entries = data["files"] if isinstance(data, dict) and "files" in data else data
        return [d / str(e["file"]) for e in entries if isinstance(e, dict) and e.get("file")]
    return sorted(p for sub in ("timeline", "ncu") for p in (d / sub).glob("*") if p.is_file())


def sample_paths(stage: str | None = None) -> list[str]:
    """The sample files ``kprof report`` runs on when given no paths.

    One file per timeline sample (the nsys ``.sqlite`` export when there is one, which
    needs no nsys to read, else the ``.nsys-rep``, else the PyTorch trace) and every
    ``.ncu-rep`` report. ``stage`` (``"timeline"`` or ``"kernel"``) keeps only that stage's files.

    Raises
    ------
    KprofError
        When no sample gallery is found.
    """
    d = samples_dir()
    if d is None:
        raise KprofError(
            "no sample gallery found (data/samples beside the package or in the current directory); "
            "pass the profiles to report on: kprof report PATH ..."
        )
    timelines, kernels = profiles_among(_sample_files(d), csv=False)
    if stage == "timeline":
        return timelines
    if stage == "kernel":
        return kernels
    return timelines + kernels


_CAPTURE_SUFFIXES = (".nsys-rep", ".qdrep", ".sqlite", ".pt.trace.json", ".json")
_REPORT_SUFFIXES = (".ncu-rep", ".raw.csv", ".details.csv", ".csv")


def _strip(name: str, suffixes: Sequence[str]) -> str:
    name = name.removesuffix(".gz")
    for suffix in suffixes:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def profiles_among(
    files: Iterable[str | os.PathLike[str]], *, csv: bool = True
) -> tuple[list[str], list[str]]:
    """The profiles among ``files`` (others are skipped): ``(timelines, kernel reports)``, sorted.

    One file per timeline capture: the nsys ``.sqlite`` export when there is one (plain or
    gzip'd), which needs no nsys to read, else the ``.nsys-rep``, else the PyTorch trace. Every
    ``.ncu-rep``; with ``csv``, an ncu CSV export too unless a ``.ncu-rep`` of the same name is there.
    """
    from kprof.io import detect_format

    by_stem: dict[str, dict[str, str]] = {}
    reports: dict[str, dict[str, str]] = {}
    for f in files:
        p = Path(f)
        if not p.is_file():
            continue
        try:
            fmt = detect_format(p)
        except KprofError:
            continue
        if not _looks_like(p, fmt):
            continue
        if fmt in TIMELINE_FORMATS:
            by_stem.setdefault(str(p.parent / _strip(p.name, _CAPTURE_SUFFIXES)), {}).setdefault(fmt, str(p))
        elif fmt == "ncu-rep" or (csv and fmt in KERNEL_FORMATS):
            reports.setdefault(str(p.parent / _strip(p.name, _REPORT_SUFFIXES)), {}).setdefault(fmt, str(p))
    timelines = [
        fm.get("nsys-sqlite") or fm.get("nsys-rep") or fm["kineto"] for _, fm in sorted(by_stem.items())
    ]
    kernels = [fm.get("ncu-rep") or next(iter(fm.values())) for _, fm in sorted(reports.items())]
    return timelines, kernels


def _looks_like(p: Path, fmt: str) -> bool:
    """Whether a ``.json`` is a profiler trace and a ``.csv`` an ncu export (their suffixes are
    shared with any data file in a folder of results); the other formats are told by their suffix."""
    import gzip

    if fmt not in ("kineto", "ncu-csv"):
        return True
    try:
        with gzip.open(p, "rb") if p.name.endswith(".gz") else open(p, "rb") as f:
            head = f.read(1 << 20)
    except (OSError, EOFError):
        return False
    if fmt == "kineto":
        return b'"traceEvents"' in head
    return b"Kernel Name" in head[:8192]


def expand_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """``paths`` with each folder replaced by the profiles it holds (any depth, see :func:`profiles_among`).

    Raises
    ------
    KprofInputError
        A folder that holds no profile kprof reads.
    """
    out: list[str] = []
    for p in paths:
        s = os.fspath(p)
        if s and os.path.isdir(s):
            files = sorted(str(f) for f in Path(s).rglob("*") if f.is_file() and not f.name.startswith("."))
            timelines, kernels = profiles_among(files)
            if not timelines and not kernels:
                raise KprofInputError(
                    s,
                    "is a folder that holds no profile kprof reads (.nsys-rep, .sqlite, .json[.gz], .ncu-rep, .csv)",
                )
            out += timelines + kernels
        else:
            out.append(s)
    return out


_PAIR_NAME = re.compile(r"^(?P<stem>.*?)[_.-](?P<role>before|after)$", re.IGNORECASE)


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (".ncu-rep", ".csv", ".nsys-rep", ".sqlite", ".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def find_pairs(paths: Sequence[str]) -> list[tuple[str, str]]:
    """Before/after pairs among ``paths``: files named ``X_before.*`` and ``X_after.*`` (same folder).

    Examples
    --------
    >>> find_pairs(["a/t_before.ncu-rep", "a/t_after.ncu-rep", "a/other.ncu-rep"])
    [('a/t_before.ncu-rep', 'a/t_after.ncu-rep')]
    """
    roles: dict[tuple[str, str], dict[str, str]] = {}
    for p in paths:
        m = _PAIR_NAME.match(_stem(p))
        if m:
            roles.setdefault((str(Path(p).parent), m["stem"]), {})[m["role"].lower()] = p
    return [(r["before"], r["after"]) for r in roles.values() if "before" in r and "after" in r]


@dataclasses.dataclass(frozen=True, slots=True)
class Inputs:
    """The report's inputs, sorted by stage.

    ``timelines`` are single captures; ``jobs`` are groups of captures that are ranks of one
    job (:func:`kprof.jobs.find_jobs`); ``pairs`` are before/after pairs among all inputs.
    """

    timelines: tuple[str, ...]
    kernels: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    jobs: tuple[tuple[str, ...], ...] = ()

    def stages(self) -> list[str]:
        """The notebooks to run, in the workflow's order: timelines (single captures, then
        jobs), kernels, mechanisms, then the before/after comparisons."""
        out = []
        if self.timelines:
            out.append("timeline")
        out += ["job" if i == 0 else f"job:{i + 1}" for i in range(len(self.jobs))]
        if self.kernels:
            out += ["kernel", "mechanism"]
        if self.pairs:
            out.append("compare")
        return out

    def renamed(self, names: dict[str, str]) -> Inputs:
        """The same inputs under other names (``names`` maps each path to its new one)."""

        def rn(p: str) -> str:
            return names[p]

        return Inputs(
            tuple(map(rn, self.timelines)),
            tuple(map(rn, self.kernels)),
            tuple((rn(a), rn(b)) for a, b in self.pairs),
            tuple(tuple(map(rn, j)) for j in self.jobs),
        )


def display_names(paths: Sequence[str]) -> dict[str, str]:
    """The names a report shows for its inputs, never an absolute path of the machine that built it.

    An input under the current directory keeps its path relative to it (as typed, and valid in the
    commands the diagnoses suggest); the others are named relative to the deepest folder they share,
    or, when they share none but the root, by their last folders (as many as keep the names apart).

    Examples
    --------
    >>> import os
    >>> display_names([os.path.abspath("data/a.sqlite"), "/srv/x/runs/b.ncu-rep"])  # doctest: +SKIP
    {'/.../data/a.sqlite': 'data/a.sqlite', '/srv/x/runs/b.ncu-rep': 'b.ncu-rep'}
    """
    cwd = os.getcwd()
    absolute = {p: os.path.abspath(p) for p in paths}
    names: dict[str, str] = {}
    outside = {p: a for p, a in absolute.items() if os.path.commonpath([cwd, a]) != cwd}
    for p, a in absolute.items():
        if p not in outside:
            names[p] = os.path.relpath(a, cwd)
    if outside:
        common = os.path.commonpath([os.path.dirname(a) for a in outside.values()])
        if os.path.dirname(common) != common:  # a shared folder below the root
            names.update({p: os.path.relpath(a, common) for p, a in outside.items()})
        else:
            taken = set(names.values())
            for depth in range(1, 64):
                tail = {p: os.path.join(*Path(a).parts[-depth:]) for p, a in outside.items()}
                if len(set(tail.values())) == len(tail) and not taken & set(tail.values()):
                    break
            names.update(tail)
    return names


def link_inputs(names: dict[str, str], folder: Path) -> None:
    """Make ``folder/<name>`` a symbolic link to each input: the notebooks run in ``folder`` and
    open the inputs by the names the report shows (the files themselves are only read)."""
    for path, name in names.items():
        link = folder / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(os.path.abspath(path))


def report_runs(stages: Sequence[str]) -> list[tuple[str, ...]]:
    """The notebook runs of a report: each stage alone, except :data:`RUN_TOGETHER`, which share
    one kernel when there are kernel reports.

    Examples
    --------
    >>> report_runs(["timeline", "job", "kernel", "mechanism", "compare"])
    [('timeline',), ('job',), ('kernel', 'mechanism', 'compare')]
    >>> report_runs(["timeline", "compare"])
    [('timeline',), ('compare',)]
    """
    together = tuple(s for s in stages if s in RUN_TOGETHER) if "kernel" in stages else ()
    runs: list[tuple[str, ...]] = []
    for st in stages:
        if st in together:
            if st == together[0]:
                runs.append(together)
        else:
            runs.append((st,))
    return runs


def stage_parameters(stage: str, inputs: Inputs) -> dict[str, Any]:
    """The parameters of ``stage``'s template for these inputs (static views; ``in_report``: the
    report's header holds the verdicts, and each diagnosis is shown in full once)."""
    params: dict[str, Any] = {"interactive": False, "in_report": True}
    base, _, n = stage.partition(":")
    if stage == "timeline":
        params["timeline_paths"] = list(inputs.timelines)
    elif base == "job":
        params["timeline_paths"] = list(inputs.jobs[int(n or 1) - 1])
    elif stage in ("kernel", "mechanism"):
        params["kernel_paths"] = list(inputs.kernels)
        kernel_set = set(inputs.kernels)
        params["pairs"] = [list(p) for p in inputs.pairs if p[0] in kernel_set and p[1] in kernel_set]
    elif stage == "compare":
        params["pairs"] = [list(p) for p in inputs.pairs]
    else:
        raise ValueError(f"unknown stage {stage!r} (known: {', '.join(TEMPLATES)})")
    return params


def sort_inputs(paths: Iterable[str | os.PathLike[str]]) -> Inputs:
    """Check every path and send it to its stage (raises :class:`KprofInputError` on a bad one).

    A folder stands for the profiles it holds (:func:`expand_dirs`)."""
    from kprof.io import detect_format

    timelines: list[str] = []
    kernels: list[str] = []
    for p in expand_dirs(paths):
        fmt = detect_format(p)  # before abspath, which turns an empty path into the current folder
        ap = os.path.abspath(os.fspath(p))
        (timelines if fmt in TIMELINE_FORMATS else kernels).append(ap)
    jobs: list[list[str]] = []
    if len(timelines) >= 2:
        from kprof.jobs import find_jobs

        jobs, timelines = find_jobs(timelines)
    return Inputs(
        tuple(timelines),
        tuple(kernels),
        tuple(find_pairs([*timelines, *kernels])),
        tuple(tuple(j) for j in jobs),
    )


# ====================================================================== notebook helpers

_LOADED: dict[tuple[str, int, int], Any] = {}
"""Profiles loaded in this process, by (absolute path, mtime, size): the notebooks that a report
runs in one kernel (:data:`RUN_TOGETHER`) read each file once."""


def load_profile(path: str | os.PathLike[str]) -> Any:
    """:func:`kprof.load`, once per file and process (a changed file is read again).

    Examples
    --------
    >>> load_profile("data/samples/ncu/small_grid.ncu-rep") is load_profile("data/samples/ncu/small_grid.ncu-rep")  # doctest: +SKIP
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


_VERDICT_ORDER = {"fix": 0, "inconclusive": 1, "healthy": 2}


def kernel_entries(paths: Sequence[str]) -> tuple[dict[str, Any], list[tuple[str, KernelLaunch, Diagnosis]]]:
    """Load and diagnose kernel reports: ``(profiles by path, [(path, launch, diagnosis), ...])``.

    Launches with a fix come first, then inconclusive, then healthy ones (stable: within a report,
    the launch whose fix wins the most time first). Each report is read once per process
    (:func:`load_profile`), however many notebooks ask.
    """
    from kprof.api import diagnose

    profiles: dict[str, Any] = {}
    entries: list[tuple[str, KernelLaunch, Diagnosis]] = []
    for path in paths:
        profile = load_profile(path)
        profiles[path] = profile
        launches = {k.id: k for k in profile}
        entries += [
            (path, launches[d.subject.launch], dataclasses.replace(d, file=path)) for d in diagnose(profile)
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


# ====================================================================== execution


def template_path(stage: str) -> Path:
    """The template notebook of ``stage`` (``timeline``, ``kernel``, ``mechanism``, ``job``, ``compare``)."""
    return Path(str(resources.files("kprof").joinpath("templates", stage_template(stage))))


def template_dir() -> Path:
    """The folder of the shipped template notebooks (``kprof/templates``)."""
    return Path(str(resources.files("kprof").joinpath("templates")))


def template_stage(name: str) -> str:
    """The stage of a template named as the user may: ``timeline``, ``01_timeline``, ``01_timeline.ipynb``.

    Raises
    ------
    KprofError
        No template has that name (the message lists them).

    Examples
    --------
    >>> template_stage("02_kernel.ipynb"), template_stage("job")
    ('kernel', 'job')
    """
    key = name.strip().removesuffix(".ipynb").lower()
    for stage, file in TEMPLATES.items():
        if key in (stage, file.removesuffix(".ipynb"), file.removesuffix(".ipynb").split("_", 1)[0]):
            return stage
    known = ", ".join(f"{s} ({f})" for s, f in TEMPLATES.items())
    raise KprofError(f"no template named {name!r}; the templates are: {known}, or all")


def copy_template(name: str, directory: str | os.PathLike[str] = ".", *, force: bool = False) -> Path:
    """Write a copy of a shipped template into ``directory`` for your own use, and return its path.

    Open and run the copy in Jupyter: the shipped template stays clean (it refuses to run where
    it was installed, see :func:`refuse_in_place`). The copy runs on the shipped samples until
    you set its parameters (first code cell) to your own profiles.

    Raises
    ------
    KprofError
        Unknown name, the copy exists (and not ``force``), or ``directory`` is not a folder.

    Examples
    --------
    >>> copy_template("kernel", "my_notebooks")  # doctest: +SKIP
    PosixPath('my_notebooks/02_kernel.ipynb')
    """
    import nbformat

    stage = template_stage(name)
    d = Path(directory)
    if d.exists() and not d.is_dir():
        raise KprofInputError(d, "is not a folder; give the folder for the copy with -o")
    out = d / TEMPLATES[stage]
    if out.exists() and not force:
        raise KprofInputError(out, "exists already; pass --force to replace it, or another folder with -o")
    if out.resolve().parent == template_dir().resolve():
        raise KprofInputError(out, "is the shipped template itself; give another folder with -o")
    nb = nbformat.read(template_path(stage), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    d.mkdir(parents=True, exist_ok=True)
    atomic_write(out, nbformat.writes(nb) + "\n")
    return out


def refuse_in_place(shipped: str | os.PathLike[str] | None = None) -> None:
    """Stop a template that runs where it was shipped (opened from ``kprof/templates`` in Jupyter).

    Jupyter starts a notebook's kernel in the notebook's folder and autosaves what it runs into
    the file; run in place, a template would fill the installed package with one user's outputs.
    The templates call this first: in the shipped folder it marks the templates read-only (Jupyter
    then no longer autosaves them, for users other than root) and raises an error that says how to
    get a copy (``kprof notebook NAME``). Anywhere else (a copy, ``kprof report``) it does nothing.

    Raises
    ------
    KprofError
        The current folder is the shipped templates' folder.
    """
    folder = Path(shipped) if shipped is not None else template_dir()
    if Path.cwd().resolve() != folder.resolve():
        return
    for p in folder.glob("*.ipynb"):
        with contextlib.suppress(OSError):
            p.chmod(p.stat().st_mode & ~0o222)
    raise KprofError(
        f"this is one of kprof's shipped templates ({folder}), which stay clean: make your own copy with "
        "`kprof notebook NAME -o DIR` (NAME: timeline, kernel, mechanism, job, compare or all) and open that"
    )


def notebook_cli(args: argparse.Namespace) -> int:
    """``kprof notebook NAME... [-o DIR] [--force]``: copies of the templates to run yourself."""
    names = list(args.names)
    if not names:
        for stage, file in TEMPLATES.items():
            print(f"{stage:<10} {file}")
        return 0
    stages = list(TEMPLATES) if "all" in (n.lower() for n in names) else [template_stage(n) for n in names]
    for stage in dict.fromkeys(stages):
        print(copy_template(stage, args.output, force=args.force))
    return 0


IPC_PATH_MAX = 107
"""Longest path of a Unix socket (``sun_path`` is 108 bytes on Linux, 104 on macOS, NUL included):
a longer IPC prefix fails with "File name too long", so the kernel then talks over loopback TCP."""


def _kernel_manager_class(workdir: Path, log: Path) -> type:
    """A kernel manager that starts ``ipykernel`` with this very interpreter, over IPC sockets in ``workdir``.

    The ``python3`` kernel spec found on the Jupyter path may name another Python (a
    ``python`` on PATH without kprof); running ``sys.executable`` avoids that. IPC sockets
    in the run's private directory open no TCP port and cannot collide with a parallel run.
    The kernel's own stdout/stderr (start-up chatter, warnings) go to ``log``, not to the
    user's terminal; errors inside cells are in the notebook.
    """
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    ipc_prefix = str(workdir / log.stem)  # one prefix per notebook: kernels never share a socket
    connection_file = str(
        workdir / f"{log.stem}.json"
    )  # in the run's folder: removed with it, even after a kill

    class ThisPythonKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.connection_file = connection_file
            if len(ipc_prefix) <= IPC_PATH_MAX - 8:
                self.transport = "ipc"
                self.ip = ipc_prefix
            else:  # a socket path longer than the system allows (a long TMPDIR): loopback TCP
                self.transport = "tcp"
                self.ip = "127.0.0.1"

        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            with open(log, "ab") as f:  # the child keeps its own copy of the descriptor
                kw.setdefault("stdout", f)
                kw.setdefault("stderr", f)
                await super().start_kernel(**kw)

        @property
        def kernel_spec(self) -> KernelSpec:
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(
                    argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    display_name="Python 3 (kprof)",
                    language="python",
                )
            return self._kernel_spec

    return ThisPythonKernelManager


def _executed_name(stage: str) -> str:
    """File name of a stage's executed notebook (``job:2`` -> ``04_job-2.ipynb``)."""
    base, _, n = stage.partition(":")
    name = TEMPLATES[base]
    return name if not n else name.replace(".ipynb", f"-{n}.ipynb")


def run_name(run: Sequence[str]) -> str:
    """File name of a run's executed notebook (``02_kernel+03_mechanism.ipynb``)."""
    return "+".join(_executed_name(st).removesuffix(".ipynb") for st in run) + ".ipynb"


def run_notebook(run: Sequence[str], parameters: dict[str, dict[str, Any]]) -> Any:
    """The templates of ``run`` as one notebook, each section's parameters injected after its
    parameters cell (as papermill does for one notebook, tagged ``injected-parameters``)."""
    import nbformat

    out = nbformat.v4.new_notebook()
    for i, stage in enumerate(run):
        nb = nbformat.read(template_path(stage), as_version=4)
        if i == 0:
            out.metadata.update(nb.metadata)
        for cell in nb.cells:
            out.cells.append(cell)
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                src = "# Parameters (kprof report)\n" + "\n".join(
                    f"{k} = {v!r}" for k, v in parameters[stage].items()
                )
                injected = nbformat.v4.new_code_cell(src)
                injected.metadata["tags"] = ["injected-parameters"]
                out.cells.append(injected)
    for i, cell in enumerate(out.cells):
        cell["id"] = f"kp-run-{i}"
    return out


def execute_run(
    run: Sequence[str],
    parameters: dict[str, dict[str, Any]],
    workdir: Path,
    cwd: str | os.PathLike[str] | None = None,
) -> Any:
    """Run the templates of ``run`` in one kernel (papermill), in ``cwd`` (default ``workdir``);
    returns the executed notebook (nbformat). The input paths in ``parameters`` are opened
    relative to ``cwd``."""
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    name = run_name(run)
    src = workdir / f"in-{name}"
    nbformat.write(run_notebook(run, parameters), src)
    log = workdir / f"kernel-{name.removesuffix('.ipynb').replace(':', '-')}.log"
    try:
        return papermill.execute_notebook(
            str(src),
            str(workdir / name),
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            execution_timeout=CELL_TIMEOUT_S,
            kernel_manager_class=_kernel_manager_class(workdir, log),
            resources={"metadata": {"path": str(cwd if cwd is not None else workdir)}},
        )
    except PapermillExecutionError as exc:
        msg = " ".join(str(exc.evalue).split())
        if exc.ename in ("KprofInputError", "MissingToolError", "KprofError"):
            raise KprofError(msg) from None
        raise RuntimeError(f"template {' + '.join(map(stage_template, run))} failed in cell "
                           f"{exc.exec_count}: {exc.ename}: {msg}") from None  # fmt: skip


def execute_template(stage: str, parameters: dict[str, Any], workdir: Path) -> Any:
    """Run one template with papermill in ``workdir``; returns the executed notebook (nbformat)."""
    return execute_run((stage,), {stage: parameters}, workdir)


def _collect_diagnoses(nb: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if DIAGNOSES_MIME in data:
                found.extend(data[DIAGNOSES_MIME].get("diagnoses", []))
    return found


def _clean_outputs(nb: Any, show_code: bool) -> Any:
    """Drop what cannot be read offline: widget views (their static HTML stays), widget state,
    the diagnoses carrier, papermill's parameter cells (kept with ``show_code``), and the cells
    tagged ``report-skip`` (what the report's header already says)."""
    nb.metadata.pop("widgets", None)
    cells = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if not show_code and ("parameters" in tags or "injected-parameters" in tags):
            continue
        if "report-skip" in tags:  # a notebook's own verdict table: the report's header has them all
            continue
        if cell.get("cell_type") == "code":
            outputs = []
            for o in cell.get("outputs", []):
                data = o.get("data")
                if data is not None:
                    data.pop(DIAGNOSES_MIME, None)
                    had_widget = data.pop(WIDGET_VIEW_MIME, None) is not None
                    if not data or (had_widget and set(data) <= {"text/plain"}):
                        continue
                    if set(data) == {"text/plain"} and not str(data["text/plain"]).strip():
                        continue
                outputs.append(o)
            cell["outputs"] = outputs
        cells.append(cell)
    nb.cells = cells
    return nb


_SECTION = re.compile(r"^# (?:\d+[a-z]?\. )?(?P<title>.*)$")


def _number_sections(cells: list[Any]) -> list[str]:
    """Number the templates' titles (their ``# `` headings) 1, 2, 3... in the order shown; returns them."""
    titles: list[str] = []
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        first, _, rest = str(cell["source"]).partition("\n")
        m = _SECTION.match(first)
        if m:
            titles.append(f"{len(titles) + 1}. {m['title']}")
            cell["source"] = f"# {titles[-1]}" + (f"\n{rest}" if rest else "")
    return titles


def _header_cells(inputs: Inputs, diagnoses: list[dict[str, Any]], titles: list[str]) -> list[Any]:
    import nbformat

    from kprof.html import heading, overview
    from kprof.model import Diagnosis

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    intro = (
        "# kprof report\n\n"
        "Why is this GPU code slow, and what should change? Read in the order kprof works: "
        "**timeline first** (is the time even inside a kernel?), **kernel second** (which resource "
        "is saturated, where is the kernel on the roofline?), **mechanism third** (what in the code "
        "explains the gap to the roofline). The table below holds every verdict with its fix; each "
        "diagnosis is shown in full once, in the section of its input, with the plots that support it.\n"
    )
    diags = []
    for d in diagnoses:
        with contextlib.suppress(ValueError):
            diags.append(Diagnosis.from_dict(d))
    head = overview(diags, title="Headlines: the verdict of every input, timeline captures first")
    n_ranks = sum(len(j) for j in inputs.jobs)
    n_in = len(inputs.timelines) + len(inputs.kernels) + n_ranks
    jobs_desc = f", {n_ranks} rank capture(s) of {len(inputs.jobs)} job(s)" if inputs.jobs else ""
    note = heading(
        f"{n_in} input file{'s' if n_in != 1 else ''}: {len(inputs.timelines)} timeline capture(s){jobs_desc}, "
        f"{len(inputs.kernels)} kernel report(s). Generated {now} by kprof.",
        level=6,
    )
    out = nbformat.v4.new_code_cell(source="# kprof report header")
    out.outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": note.text, "text/html": note.html}),
        nbformat.v4.new_output("display_data", data={"text/plain": head.text, "text/html": head.html}),
    ]
    toc = "**Sections:** " + " · ".join(titles)
    return [nbformat.v4.new_markdown_cell(intro), out, nbformat.v4.new_markdown_cell(toc)]


def merge_notebooks(parts: Sequence[tuple[Any, Any]], inputs: Inputs, show_code: bool) -> Any:
    """One notebook: the header (every verdict with its fix), then each executed run, its
    sections numbered in order."""
    import nbformat

    diagnoses: list[dict[str, Any]] = []
    for _run, nb in parts:
        diagnoses.extend(_collect_diagnoses(nb))
    merged = nbformat.v4.new_notebook()
    first = parts[0][1] if parts else None
    if first is not None:
        merged.metadata.update(
            {k: v for k, v in first.metadata.items() if k in ("kernelspec", "language_info")}
        )
    merged.metadata["title"] = "kprof report"
    body: list[Any] = []
    for _run, nb in parts:
        body.extend(_clean_outputs(nb, show_code).cells)
    titles = _number_sections(body)
    merged.cells = _header_cells(inputs, diagnoses, titles) + body
    for i, c in enumerate(merged.cells):
        c["id"] = f"kp-cell-{i}"
    return merged


def export_html(nb: Any, show_code: bool = False) -> str:
    """Export a notebook as one self-contained HTML page (no network resources needed)."""
    from nbconvert import HTMLExporter

    base = Path(str(resources.files("kprof.html").joinpath("templates", "nbconvert")))
    exporter = HTMLExporter(
        template_name="kprof",
        extra_template_basedirs=[str(base)],
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
        theme="light",
    )
    body, _ = exporter.from_notebook_node(nb)
    return str(body)


def atomic_write(path: Path, data: str) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    hold(fd)  # owned while written: a later run removes it only once this process is gone
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        give_permissions(tmp, path)  # an earlier report keeps its mode; a new one follows the umask
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _footer(timings: list[tuple[str, float]], total: float) -> Any:
    import nbformat

    parts = ", ".join(f"{name} {dt:.1f} s" for name, dt in timings)
    html = f'<p class="kp-report-footer">Built by kprof in {total:.1f} s ({htmllib.escape(parts)}).</p>'
    cell = nbformat.v4.new_code_cell(source="# kprof report footer")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/plain": f"built in {total:.1f} s", "text/html": html}
        )
    ]
    return cell


def build_report(
    paths: Sequence[str | os.PathLike[str]] | None,
    output: str | os.PathLike[str],
    show_code: bool = False,
    *,
    log: TextIO | None = sys.stderr,
    jobs: int | None = None,
) -> Path:
    """Fill, execute and export the template notebooks as one self-contained HTML report.

    Parameters
    ----------
    paths
        Timeline captures and kernel reports; None or empty runs on the shipped samples.
    output
        The HTML file to write (atomically: an interrupted run leaves the old file, or none).
    show_code
        Keep the notebooks' input cells in the report.
    log
        Where progress goes, one line per notebook with its time (None: silent).
    jobs
        Notebooks executed at once, each in its own Python process and kernel (default:
        all of them at once; 1 runs them one after the other in this process).

    Returns
    -------
    pathlib.Path
        The written report.

    Raises
    ------
    KprofInputError
        A path is missing, unreadable or not a supported profile.
    KprofError
        An input could not be read while the notebooks ran (the message names it).

    Examples
    --------
    >>> build_report(["capture.sqlite", "kernels.ncu-rep"], "report.html")  # doctest: +SKIP
    PosixPath('report.html')
    """
    t_start = time.perf_counter()
    paths = list(paths or [])
    if not paths:
        paths = list(sample_paths())
        from kprof.jobs import sample_job_paths

        with contextlib.suppress(KprofError):  # a gallery without multi-rank samples still reports
            paths += sample_job_paths("ddp_straggler")
    out_path = check_output(output, paths)  # before any work: never an input, a profile, a protected file
    started = time.time()
    remove_stale_temporaries(started)  # what killed runs left, once their owner is gone
    remove_stale(out_path.parent, [f".{out_path.name}.*.tmp", f".{out_path.name}.*.probe"], started)
    inputs = sort_inputs(paths)
    stages = inputs.stages()
    if not stages:
        raise KprofError("nothing to report on: no input files")

    def say(msg: str) -> None:
        if log is not None:
            print(f"kprof report: {msg}", file=log, flush=True)

    n_ranks = sum(len(j) for j in inputs.jobs)
    n_in = len(inputs.timelines) + len(inputs.kernels) + n_ranks
    parts_desc = [f"{len(inputs.timelines)} timeline", f"{len(inputs.kernels)} kernel"]
    if inputs.jobs:
        parts_desc.append(f"{n_ranks} rank captures in {len(inputs.jobs)} job(s)")
    if inputs.pairs:
        parts_desc.append(f"{len(inputs.pairs)} before/after pair(s)")
    runs = report_runs(stages)
    say(f"{n_in} inputs ({', '.join(parts_desc)}) -> {len(stages)} notebooks in {len(runs)} kernel(s)")
    # the notebooks open the inputs by the names the report shows, never their absolute paths
    names = display_names([*inputs.timelines, *inputs.kernels, *(p for j in inputs.jobs for p in j)])
    inputs = inputs.renamed(names)
    n_jobs = max(1, min(len(runs), jobs if jobs is not None else len(runs)))
    done: dict[str, tuple[float, Any]] = {}
    with disk_full_is_bad_input(), owned_tempdir("kprof-report-") as workdir:
        base = str(workdir / "inputs")
        link_inputs(names, Path(base))
        tasks = [(run, {st: stage_parameters(st, inputs) for st in run}, workdir, base) for run in runs]
        results = (_run_one(*t) for t in tasks) if n_jobs == 1 else _run_parallel(tasks, n_jobs)
        for i, (run, dt, nb) in enumerate(results, 1):
            done[run_name(run)] = (dt, nb)
            say(f"[{i}/{len(runs)}] {' + '.join(map(_executed_name, run))} executed in {dt:.1f} s")
        parts = [(run, done[run_name(run)][1]) for run in runs]
        timings = [(run_name(run).removesuffix(".ipynb"), done[run_name(run)][0]) for run in runs]
        t0 = time.perf_counter()
        merged = merge_notebooks(parts, inputs, show_code)
        merged.cells.append(_footer(timings, time.perf_counter() - t_start))
        body = export_html(merged, show_code)
        with writing_output(out_path):
            atomic_write(out_path, body)
        dt = time.perf_counter() - t0
    total = time.perf_counter() - t_start
    say(f"exported in {dt:.1f} s; wrote {out_path} ({len(body) / 1e6:.1f} MB) in {total:.1f} s")
    return out_path


Task = tuple[tuple[str, ...], dict[str, dict[str, Any]], Path, str]
"""A run of a report: its stages, each stage's parameters, the work folder, the folder it runs in."""


def _run_one(
    run: tuple[str, ...], params: dict[str, dict[str, Any]], workdir: Path, cwd: str
) -> tuple[tuple[str, ...], float, Any]:
    t0 = time.perf_counter()
    nb = execute_run(run, params, workdir, cwd)
    return run, time.perf_counter() - t0, nb


def _run_parallel(tasks: Sequence[Task], n_jobs: int) -> Iterator[tuple[tuple[str, ...], float, Any]]:
    """Run each run of templates in its own Python process (``python -m kprof.report JOB``), at
    most ``n_jobs`` at once; yield ``(run, seconds, notebook)`` as they finish.

    Plain subprocesses rather than multiprocessing: nothing re-imports the caller's main
    module, so this works from scripts without a ``__main__`` guard and from Jupyter.
    On a failure the other runs are stopped and the error is raised here.
    """
    import nbformat

    pending = list(tasks)
    running: dict[str, tuple[subprocess.Popen[bytes], Path, tuple[str, ...]]] = {}
    # the children's stderr goes to a file (a pipe read only at the end could fill and block them)
    try:
        while pending or running:
            while pending and len(running) < n_jobs:
                run, params, workdir, cwd = pending.pop(0)
                key = run_name(run).removesuffix(".ipynb").replace(":", "-")
                job = workdir / f"{key}.job.json"
                job.write_text(
                    json.dumps({"run": list(run), "params": params, "workdir": str(workdir), "cwd": cwd})
                )
                with open(workdir / f"{key}.stderr.log", "wb") as err:
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "kprof.report", str(job), str(os.getpid())],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                running[key] = (proc, workdir, run)
            finished = [k for k, (p, _, _) in running.items() if p.poll() is not None]
            if not finished:
                time.sleep(0.05)
                continue
            for key in finished:
                proc, workdir, run = running.pop(key)
                stderr = (workdir / f"{key}.stderr.log").read_text(errors="replace")
                result_file = workdir / f"{key}.result.json"
                what = " + ".join(map(stage_template, run))
                if not result_file.is_file():
                    tail = " ".join(stderr.strip().splitlines()[-1:]) or f"exit status {proc.returncode}"
                    raise RuntimeError(f"template {what}: its process died ({tail})")
                result = json.loads(result_file.read_text())
                if not result["ok"]:
                    if result["kind"] == "input":
                        raise KprofError(result["message"])
                    if result.get("errno"):  # e.g. a full disk: the caller says what it means
                        raise OSError(result["errno"], result["message"])
                    raise RuntimeError(result["message"])
                nb = nbformat.read(workdir / run_name(run), as_version=4)
                yield run, float(result["seconds"]), nb
    finally:
        for proc, _, _ in running.values():
            if proc.poll() is None:
                proc.terminate()
        for proc, _, _ in running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()


def _worker(job_file: str) -> int:
    """``python -m kprof.report JOB``: run one run of templates as :func:`_run_parallel` asked,
    and leave the outcome beside the executed notebook."""
    job = json.loads(Path(job_file).read_text())
    run, workdir = tuple(job["run"]), Path(job["workdir"])
    out = workdir / f"{run_name(run).removesuffix('.ipynb').replace(':', '-')}.result.json"
    try:
        _, dt, _ = _run_one(run, job["params"], workdir, job["cwd"])
        result: dict[str, Any] = {"ok": True, "seconds": dt}
    except KprofError as exc:
        result = {"ok": False, "kind": "input", "message": str(exc)}
    except Exception as exc:
        result = {"ok": False, "kind": "internal", "message": f"{type(exc).__name__}: {exc}"}
        if isinstance(exc, OSError) and exc.errno:
            result["errno"] = exc.errno
    atomic_write(out, json.dumps(result))
    return 0


def cli(args: argparse.Namespace) -> int:
    """``kprof report PATH... -o report.html [--show-code]``."""
    build_report(args.paths, args.output, show_code=args.show_code)
    return 0


__all__ = [
    "STAGE_TITLES",
    "TEMPLATES",
    "Explorer",
    "Inputs",
    "atomic_write",
    "build_report",
    "cli",
    "copy_template",
    "display_names",
    "execute_run",
    "execute_template",
    "expand_dirs",
    "export_html",
    "figure_html",
    "find_pairs",
    "kernel_entries",
    "kernel_label",
    "kernel_picker",
    "link_inputs",
    "load_profile",
    "merge_notebooks",
    "notebook_cli",
    "profiles_among",
    "publish",
    "refuse_in_place",
    "report_runs",
    "run_name",
    "run_notebook",
    "sample_paths",
    "samples_dir",
    "sort_inputs",
    "stage_parameters",
    "stage_template",
    "stage_title",
    "template_dir",
    "template_path",
    "template_stage",
    "timeline_explorer",
    "timeline_gaps",
]


if __name__ == "__main__":
    die_with_parent(
        int(sys.argv[2]) if len(sys.argv) > 2 else None
    )  # a killed report takes its workers along
    sys.exit(_worker(sys.argv[1]))
