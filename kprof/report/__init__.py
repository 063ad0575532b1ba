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

Modules: :mod:`~kprof.report.inputs` (what to report on), :mod:`~kprof.report.templates` (which
notebook, which parameters; ``kprof notebook``), :mod:`~kprof.report.views` (what the notebooks
call), :mod:`~kprof.report.execute` (papermill), :mod:`~kprof.report.assemble` (one HTML page);
this module builds the report and runs the notebooks in parallel.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kprof.errors import KprofError
from kprof.lifetime import owned_tempdir, remove_stale, remove_stale_temporaries
from kprof.outputs import check_output, disk_full_is_bad_input, writing_output
from kprof.report.assemble import (
    _clean_outputs as _clean_outputs,
)
from kprof.report.assemble import (
    _collect_diagnoses as _collect_diagnoses,
)
from kprof.report.assemble import (
    _footer,
    atomic_write,
    export_html,
    merge_notebooks,
)
from kprof.report.assemble import (
    _header_cells as _header_cells,
)
from kprof.report.assemble import (
    _number_sections as _number_sections,
)
from kprof.report.execute import (
    CELL_TIMEOUT_S as CELL_TIMEOUT_S,
)
from kprof.report.execute import (
    IPC_PATH_MAX as IPC_PATH_MAX,
)
from kprof.report.execute import (
    _executed_name,
    execute_run,
    execute_template,
    run_name,
    run_notebook,
)
from kprof.report.execute import (
    _kernel_manager_class as _kernel_manager_class,
)
from kprof.report.inputs import (
    KERNEL_FORMATS as KERNEL_FORMATS,
)
from kprof.report.inputs import (
    TIMELINE_FORMATS as TIMELINE_FORMATS,
)
from kprof.report.inputs import (
    Inputs,
    display_names,
    expand_dirs,
    find_pairs,
    link_inputs,
    profiles_among,
    sample_paths,
    samples_dir,
    sort_inputs,
)
from kprof.report.templates import (
    KERNEL_LANE as KERNEL_LANE,
)
from kprof.report.templates import (
    RUN_TOGETHER as RUN_TOGETHER,
)
from kprof.report.templates import (
    STAGE_TITLES,
    TEMPLATES,
    copy_template,
    notebook_cli,
    pair_list,
    path_list,
    refuse_in_place,
    report_runs,
    stage_parameters,
    stage_template,
    stage_title,
    template_dir,
    template_path,
    template_stage,
)
from kprof.report.views import (
    DIAGNOSES_MIME as DIAGNOSES_MIME,
)
from kprof.report.views import (
    FIGURE_DPI as FIGURE_DPI,
)
from kprof.report.views import (
    GAP_CAUSE_LABELS as GAP_CAUSE_LABELS,
)
from kprof.report.views import (
    WIDGET_VIEW_MIME as WIDGET_VIEW_MIME,
)
from kprof.report.views import (
    Explorer,
    compare_loaded,
    diagnoses_of,
    figure_html,
    kernel_entries,
    kernel_label,
    kernel_picker,
    load_profile,
    publish,
    timeline_explorer,
    timeline_gaps,
)
from kprof.report.views import (
    figure_png as figure_png,
)

if TYPE_CHECKING:
    import argparse


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
    paths = list(paths or []) or _sample_inputs()
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

    runs = report_runs(stages)
    say(f"{_describe(inputs)} -> {len(stages)} notebooks in {len(runs)} kernel(s)")
    # the notebooks open the inputs by the names the report shows, never their absolute paths
    names = display_names([*inputs.timelines, *inputs.kernels, *(p for j in inputs.jobs for p in j)])
    inputs = inputs.renamed(names)
    n_jobs = max(1, min(len(runs), jobs if jobs is not None else len(runs)))
    done: dict[str, tuple[float, Any]] = {}
    with disk_full_is_bad_input(), owned_tempdir("kprof-report-") as workdir:
        base = str(workdir / "inputs")
        link_inputs(names, Path(base))
        tasks = [(run, {st: stage_parameters(st, inputs) for st in run}, workdir, base) for run in runs]
        results = (_run_one(*t) for t in tasks) if n_jobs == 1 else _run_parallel(tasks, n_jobs, here=True)
        for i, (run, dt, nb) in enumerate(results, 1):
            done[run_name(run)] = (dt, nb)
            say(f"[{i}/{len(runs)}] {' + '.join(map(_executed_name, run))} executed in {dt:.1f} s")
        parts = [(run, done[run_name(run)][1]) for run in runs]  # merge_notebooks orders the sections
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


def _sample_inputs() -> list[str | os.PathLike[str]]:
    """What a report without inputs runs on: the shipped samples, and the straggler job's ranks."""
    paths: list[str | os.PathLike[str]] = list(sample_paths())
    from kprof.jobs import sample_job_paths

    with contextlib.suppress(KprofError):  # a gallery without multi-rank samples still reports
        paths += sample_job_paths("ddp_straggler")
    return paths


def _describe(inputs: Inputs) -> str:
    """``N inputs (T timeline, K kernel, ...)`` for the progress line."""
    n_ranks = sum(len(j) for j in inputs.jobs)
    n_in = len(inputs.timelines) + len(inputs.kernels) + n_ranks
    parts_desc = [f"{len(inputs.timelines)} timeline", f"{len(inputs.kernels)} kernel"]
    if inputs.jobs:
        parts_desc.append(f"{n_ranks} rank captures in {len(inputs.jobs)} job(s)")
    if inputs.pairs:
        parts_desc.append(f"{len(inputs.pairs)} before/after pair(s)")
    return f"{n_in} inputs ({', '.join(parts_desc)})"


Task = tuple[tuple[str, ...], dict[str, dict[str, Any]], Path, str]
"""A run of a report: its stages, each stage's parameters, the work folder, the folder it runs in."""


def _run_one(
    run: tuple[str, ...], params: dict[str, dict[str, Any]], workdir: Path, cwd: str
) -> tuple[tuple[str, ...], float, Any]:
    t0 = time.perf_counter()
    nb = execute_run(run, params, workdir, cwd)
    return run, time.perf_counter() - t0, nb


def _run_parallel(
    tasks: Sequence[Task], n_jobs: int, *, here: bool = False
) -> Iterator[tuple[tuple[str, ...], float, Any]]:
    """Run each run of templates in its own Python process (``python -m kprof.report JOB``), at
    most ``n_jobs`` at once; yield ``(run, seconds, notebook)`` as they finish.

    Plain subprocesses rather than multiprocessing: nothing re-imports the caller's main
    module, so this works from scripts without a ``__main__`` guard and from Jupyter.
    On a failure the other runs are stopped and the error is raised here. ``here``: the first run
    executes in this process once the others have started (its kernel is a process anyway; this
    one would only wait), which spares a Python start and the imports of papermill.
    """
    import nbformat

    pending = list(tasks)
    mine = pending.pop(0) if here and len(pending) > 1 else None
    if mine is not None:
        n_jobs = max(1, n_jobs - 1)
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
            if mine is not None:
                task, mine = mine, None
                yield _run_one(*task)
                continue
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


def skip_iri_grammar() -> None:
    """In kprof's own report processes, leave out the one optional module that makes ``import nbformat`` slow.

    nbformat imports jsonschema, which imports ``rfc3987_syntax`` (its checker of the ``iri`` formats,
    installed with jupyterlab's dependencies) when it is there; that module compiles a Lark grammar as
    it is imported: ``python -c "import nbformat"`` took 1.52 s of CPU with it and 0.2 s without on the
    2-core development machine, paid by the ``kprof report`` process and by its notebook worker (papermill
    and nbconvert import nbformat). No notebook, papermill or nbconvert schema uses those formats. Called
    by ``kprof report`` and ``python -m kprof.report`` only, before anything imports jsonschema: a
    program that calls :func:`build_report` keeps its modules as they are.
    """
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # import -> ImportError


def cli(args: argparse.Namespace) -> int:
    """``kprof report PATH... -o report.html [--show-code]``."""
    skip_iri_grammar()
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
    "compare_loaded",
    "copy_template",
    "diagnoses_of",
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
    "pair_list",
    "path_list",
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
