"""``kprof report``: fill the template notebooks, execute them, export one self-contained HTML file.

Each input goes to the notebooks of its stage (DESIGN.md's workflow): timeline captures to
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
    "timeline": "1. Timeline",
    "kernel": "2. Kernel",
    "mechanism": "3. Mechanism",
    "job": "1b. Job (many ranks)",
    "compare": "5. Before and after",
}


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
    from kprof.io import detect_format

    by_stem: dict[str, dict[str, str]] = {}
    kernels: list[str] = []
    for p in _sample_files(d):
        if not p.is_file():
            continue
        try:
            fmt = detect_format(p)
        except KprofError:
            continue
        if fmt in TIMELINE_FORMATS:
            name = p.name
            for suffix in (".nsys-rep", ".sqlite", ".json.gz", ".json", ".pt.trace.json.gz"):
                if name.endswith(suffix):
                    name = name[: -len(suffix)]
                    break
            by_stem.setdefault(str(p.parent / name), {})[fmt] = str(p)
        elif fmt == "ncu-rep":
            kernels.append(str(p))
    timelines = []
    for stem in sorted(by_stem):
        fmts = by_stem[stem]
        timelines.append(fmts.get("nsys-sqlite") or fmts.get("nsys-rep") or fmts["kineto"])
    if stage == "timeline":
        return timelines
    if stage == "kernel":
        return sorted(kernels)
    return timelines + sorted(kernels)


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


def stage_parameters(stage: str, inputs: Inputs) -> dict[str, Any]:
    """The papermill parameters of ``stage``'s template for these inputs (static views only)."""
    params: dict[str, Any] = {"interactive": False}
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
    """Check every path and send it to its stage (raises :class:`KprofInputError` on a bad one)."""
    from kprof.io import detect_format

    timelines: list[str] = []
    kernels: list[str] = []
    for p in paths:
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
    from kprof.plot.timeline import default_window, plot_timeline

    name = os.path.basename(tl.source)
    full = plot_timeline(tl, gaps=gaps)
    static = figure_html(full.figure, f"timeline of {name}")
    text = f"timeline of {name}: whole capture"
    if window is None:
        window = default_window(tl)
    if window is not None:
        zoom = plot_timeline(tl, gaps=gaps, window=window)
        static += figure_html(zoom.figure, f"timeline of {name}, zoomed")
        text += f" and a {(window[1] - window[0]) / 1e6:.3g} ms window at the end (steady state)"
    widget = None
    span = tl.span_ns()
    if interactive and span is not None:
        widget = _timeline_widget(tl, gaps, span, window)
    return Explorer(f'<div class="kp-timeline-views">{static}</div>', text, widget)


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

    class ThisPythonKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.ip = ipc_prefix

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


def execute_template(stage: str, parameters: dict[str, Any], workdir: Path) -> Any:
    """Run one template with papermill in ``workdir``; returns the executed notebook (nbformat)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out = workdir / _executed_name(stage)
    log = workdir / f"kernel-{stage.replace(':', '-')}.log"
    try:
        return papermill.execute_notebook(
            str(template_path(stage)),
            str(out),
            parameters=parameters,
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
            execution_timeout=CELL_TIMEOUT_S,
            kernel_manager_class=_kernel_manager_class(workdir, log),
            resources={"metadata": {"path": str(workdir)}},
        )
    except PapermillExecutionError as exc:
        msg = " ".join(str(exc.evalue).split())
        if exc.ename in ("KprofInputError", "MissingToolError", "KprofError"):
            raise KprofError(msg) from None
        raise RuntimeError(
            f"template {stage_template(stage)} failed in cell {exc.exec_count}: {exc.ename}: {msg}"
        ) from None


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
    the diagnoses carrier, papermill's parameter cells (kept with ``show_code``)."""
    nb.metadata.pop("widgets", None)
    cells = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if not show_code and ("parameters" in tags or "injected-parameters" in tags):
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


def _header_cells(inputs: Inputs, diagnoses: list[dict[str, Any]], stages: list[str]) -> list[Any]:
    import nbformat

    from kprof.html import heading, overview
    from kprof.model import Diagnosis

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    intro = (
        "# kprof report\n\n"
        "Why is this GPU code slow, and what should change? Read in the order kprof works: "
        "**timeline first** (is the time even inside a kernel?), **kernel second** (which resource "
        "is saturated, where is the kernel on the roofline?), **mechanism third** (what in the code "
        "explains the gap to the roofline). Each section starts with its verdicts; plots follow.\n"
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
    toc = "**Sections:** " + " · ".join(stage_title(s) for s in stages)
    return [nbformat.v4.new_markdown_cell(intro), out, nbformat.v4.new_markdown_cell(toc)]


def merge_notebooks(parts: Sequence[tuple[str, Any]], inputs: Inputs, show_code: bool) -> Any:
    """One notebook: the header (headlines of every stage), then each executed template."""
    import nbformat

    diagnoses: list[dict[str, Any]] = []
    for _stage, nb in parts:
        diagnoses.extend(_collect_diagnoses(nb))
    merged = nbformat.v4.new_notebook()
    first = parts[0][1] if parts else None
    if first is not None:
        merged.metadata.update(
            {k: v for k, v in first.metadata.items() if k in ("kernelspec", "language_info")}
        )
    merged.metadata["title"] = "kprof report"
    merged.cells = _header_cells(inputs, diagnoses, [s for s, _ in parts])
    for _stage, nb in parts:
        merged.cells.extend(_clean_outputs(nb, show_code).cells)
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
    say(f"{n_in} inputs ({', '.join(parts_desc)}) -> {len(stages)} notebooks")
    n_jobs = max(1, min(len(stages), jobs if jobs is not None else len(stages)))
    done: dict[str, tuple[float, Any]] = {}
    with disk_full_is_bad_input(), tempfile.TemporaryDirectory(prefix="kprof-report-") as tmp:
        workdir = Path(tmp)
        tasks = [(stage, stage_parameters(stage, inputs), workdir) for stage in stages]
        if n_jobs == 1:
            for i, (stage, params, wd) in enumerate(tasks, 1):
                stage, dt, nb = _run_stage(stage, params, wd)
                done[stage] = (dt, nb)
                say(f"[{i}/{len(stages)}] {stage_template(stage)} executed in {dt:.1f} s")
        else:
            for i, (stage, dt, nb) in enumerate(_run_parallel(tasks, n_jobs), 1):
                done[stage] = (dt, nb)
                say(f"[{i}/{len(stages)}] {stage_template(stage)} executed in {dt:.1f} s")
        parts = [(stage, done[stage][1]) for stage in stages]
        timings = [(_executed_name(stage).removesuffix(".ipynb"), done[stage][0]) for stage in stages]
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


def _run_stage(stage: str, params: dict[str, Any], workdir: Path) -> tuple[str, float, Any]:
    t0 = time.perf_counter()
    nb = execute_template(stage, params, workdir)
    return stage, time.perf_counter() - t0, nb


def _run_parallel(
    tasks: Sequence[tuple[str, dict[str, Any], Path]], n_jobs: int
) -> Iterator[tuple[str, float, Any]]:
    """Run each template in its own Python process (``python -m kprof.report JOB``), at most
    ``n_jobs`` at once; yield ``(stage, seconds, notebook)`` as they finish.

    Plain subprocesses rather than multiprocessing: nothing re-imports the caller's main
    module, so this works from scripts without a ``__main__`` guard and from Jupyter.
    On a failure the other runs are stopped and the error is raised here.
    """
    import nbformat

    pending = list(tasks)
    running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    # the children's stderr goes to a file (a pipe read only at the end could fill and block them)
    try:
        while pending or running:
            while pending and len(running) < n_jobs:
                stage, params, workdir = pending.pop(0)
                job = workdir / f"{stage.replace(':', '-')}.job.json"
                job.write_text(json.dumps({"stage": stage, "params": params, "workdir": str(workdir)}))
                with open(workdir / f"{stage.replace(':', '-')}.stderr.log", "wb") as err:
                    proc = subprocess.Popen(
                        [sys.executable, "-m", "kprof.report", str(job)],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                    )
                running[stage] = (proc, workdir)
            finished = [s for s, (p, _) in running.items() if p.poll() is not None]
            if not finished:
                time.sleep(0.05)
                continue
            for stage in finished:
                proc, workdir = running.pop(stage)
                stderr = (workdir / f"{stage.replace(':', '-')}.stderr.log").read_text(errors="replace")
                result_file = workdir / f"{stage.replace(':', '-')}.result.json"
                if not result_file.is_file():
                    tail = " ".join(stderr.strip().splitlines()[-1:]) or f"exit status {proc.returncode}"
                    raise RuntimeError(f"template {stage_template(stage)}: its process died ({tail})")
                result = json.loads(result_file.read_text())
                if not result["ok"]:
                    if result["kind"] == "input":
                        raise KprofError(result["message"])
                    if result.get("errno"):  # e.g. a full disk: the caller says what it means
                        raise OSError(result["errno"], result["message"])
                    raise RuntimeError(result["message"])
                nb = nbformat.read(workdir / _executed_name(stage), as_version=4)
                yield stage, float(result["seconds"]), nb
    finally:
        for proc, _ in running.values():
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()


def _worker(job_file: str) -> int:
    """``python -m kprof.report JOB``: run one template as :func:`_run_parallel` asked, and
    leave the outcome beside the executed notebook."""
    job = json.loads(Path(job_file).read_text())
    stage, workdir = job["stage"], Path(job["workdir"])
    out = workdir / f"{stage.replace(':', '-')}.result.json"
    try:
        _, dt, _ = _run_stage(stage, job["params"], workdir)
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
    "execute_template",
    "export_html",
    "figure_html",
    "find_pairs",
    "kernel_picker",
    "merge_notebooks",
    "notebook_cli",
    "publish",
    "refuse_in_place",
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
    sys.exit(_worker(sys.argv[1]))
