"""Running templates: one or more stages' notebooks joined into one, their parameters injected, executed
by papermill in an ``ipykernel`` of this very interpreter."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kprof.errors import KprofError
from kprof.report.templates import TEMPLATES, stage_template, template_path

CELL_TIMEOUT_S = 600

IPC_PATH_MAX = 107
"""Longest path of a Unix socket (``sun_path`` is 108 bytes on Linux, 104 on macOS, NUL included):
a longer IPC prefix fails with "File name too long", so the kernel then talks over loopback TCP."""


def _kernel_manager_class(workdir: Path, log: Path, user_cwd: str | None = None) -> type:
    """A kernel manager that starts ``ipykernel`` with this very interpreter, over IPC sockets in ``workdir``.

    The kernel runs in the report's private folder; ``user_cwd`` (default: the current folder) goes
    to it as ``KPROF_CWD``, so the commands its diagnoses suggest name the user's files relative to the
    folder ``kprof report`` was started in (:mod:`kprof.io.program`).

    The ``python3`` kernel spec found on the Jupyter path may name another Python (a
    ``python`` on PATH without kprof); running ``sys.executable`` avoids that. IPC sockets
    in the run's private directory open no TCP port and cannot collide with a parallel run.
    The kernel's own stdout/stderr (start-up chatter, warnings) go to ``log``, not to the
    user's terminal; errors inside cells are in the notebook.
    """
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager

    from kprof.io.program import CWD_ENV
    from kprof.io.program import user_cwd as _user_cwd

    env = {**os.environ, CWD_ENV: user_cwd or _user_cwd()}
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
                kw.setdefault("env", env)
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
            cell.metadata["kprof_stage"] = stage  # the report puts the sections in the workflow's order
            out.cells.append(cell)
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                src = "# Parameters (kprof report)\n" + "\n".join(
                    f"{k} = {v!r}" for k, v in parameters[stage].items()
                )
                injected = nbformat.v4.new_code_cell(src)
                injected.metadata["tags"] = ["injected-parameters"]
                injected.metadata["kprof_stage"] = stage
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
