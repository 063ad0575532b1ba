"""The template notebooks: which stage runs which notebook with which parameters, and copies of the
templates for users (``kprof notebook``) that keep the shipped ones clean."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.errors import KprofError, KprofInputError
from kprof.report.assemble import atomic_write

if TYPE_CHECKING:
    import argparse

    from kprof.report.inputs import Inputs


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

KERNEL_LANE = ("kernel", "mechanism")
"""Stages that run in one notebook kernel when the report has kernel reports: each report is then
loaded and diagnosed once (:func:`load_profile`, :func:`kernel_entries`), not once per notebook."""
RUN_TOGETHER = KERNEL_LANE
"""The former name of :data:`KERNEL_LANE`."""


def stage_template(stage: str) -> str:
    """The template notebook of a stage key (``job:2`` is the second run of ``job``)."""
    return TEMPLATES[stage.split(":", 1)[0]]


def stage_title(stage: str) -> str:
    """The section title of a stage key."""
    base, _, n = stage.partition(":")
    return STAGE_TITLES[base] + (f" ({n})" if n else "")


def report_runs(stages: Sequence[str]) -> list[tuple[str, ...]]:
    """The notebook runs of a report, each in its own kernel, run side by side.

    With kernel reports, two runs: the kernel stages (:data:`KERNEL_LANE`, which read every report)
    and everything else (timeline, jobs, before/after) in the workflow's order, one kernel each, so
    that two cores share the work (on the samples, with an empty read cache: 8.2 and 8.1 s of CPU in the
    two kernels, 2.9 s in the reader of the kernel reports; measured from /proc) and no third
    kernel starts. The before/after notebook runs last in its kernel: the timelines it compares are
    loaded there already, and the kernel reports by then are in the read cache
    (:mod:`kprof.io.ncu_cache`); it joins the kernel stages when it is the only other stage. Without
    kernel reports, each stage runs alone. :func:`merge_notebooks` puts the sections back in the
    workflow's order.

    Examples
    --------
    >>> report_runs(["timeline", "job", "kernel", "mechanism", "compare"])
    [('timeline', 'job', 'compare'), ('kernel', 'mechanism')]
    >>> report_runs(["kernel", "mechanism", "compare"])
    [('kernel', 'mechanism', 'compare')]
    >>> report_runs(["timeline", "compare"])
    [('timeline',), ('compare',)]
    """
    kernel = tuple(s for s in stages if s in KERNEL_LANE) if "kernel" in stages else ()
    rest = tuple(s for s in stages if s not in kernel)
    if not kernel:
        return [(st,) for st in rest]
    if rest == ("compare",):
        return [(*kernel, "compare")]
    return [rest, kernel] if rest else [kernel]


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


def path_list(value: Any, name: str) -> list[str] | None:
    """A template's path parameter as a list: one path (a string, as ``papermill -p NAME FILE`` passes it,
    or a ``Path``) is a list of one, a list or tuple of paths stays as it is, None stays None.

    Raises
    ------
    KprofError
        Anything else, in one line: ``NAME must be a list of paths (or one path), not int``.

    Examples
    --------
    >>> path_list("runs/a.sqlite", "timeline_paths"), path_list(None, "kernel_paths")
    (['runs/a.sqlite'], None)
    """
    if value is None:
        return None
    if isinstance(value, str | os.PathLike):
        return [os.fspath(value)]
    if isinstance(value, list | tuple) and all(isinstance(v, str | os.PathLike) for v in value):
        return [os.fspath(v) for v in value]
    raise KprofError(f"{name} must be a list of paths (or one path), not {_what(value)}")


def pair_list(value: Any, name: str = "pairs") -> list[list[str]] | None:
    """A template's ``pairs`` parameter: ``[[before, after], ...]``; one pair ``[before, after]`` (two paths)
    is a list of one; None stays None.

    Raises
    ------
    KprofError
        Anything else, in one line: ``pairs must be a list of [before, after] pairs of paths, not str``.

    Examples
    --------
    >>> pair_list(["a_before.ncu-rep", "a_after.ncu-rep"])
    [['a_before.ncu-rep', 'a_after.ncu-rep']]
    """
    if value is None:
        return None
    paths = (str, os.PathLike)
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, paths) for v in value):
        return [[os.fspath(v) for v in value]]
    if isinstance(value, list | tuple) and all(
        isinstance(p, list | tuple) and len(p) == 2 and all(isinstance(v, paths) for v in p) for p in value
    ):
        return [[os.fspath(v) for v in p] for p in value]
    raise KprofError(f"{name} must be a list of [before, after] pairs of paths, not {_what(value)}")


def _what(value: Any) -> str:
    if isinstance(value, list | tuple):
        return (
            f"a {type(value).__name__} of {', '.join(sorted({type(v).__name__ for v in value})) or 'nothing'}"
        )
    return type(value).__name__


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
