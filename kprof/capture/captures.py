"""One capture each: nsys (then its SQLite export) and ncu on one kernel, with the failures told apart
(the program failed, no counter access, no launch matched the filter, the tool failed)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from kprof.capture.tools import (
    APP_RETURNED_ERROR,
    ERR_NVGPUCTRPERM,
    NO_KERNELS_PROFILED,
    SQLITE_MAGIC,
    CaptureError,
    CounterPermissionError,
    NoKernelProfiledError,
    ProgramFailedError,
    ToolRun,
    _has_magic,
    _say,
    _unlink,
    counter_permission_message,
    find_tool,
    nsys_export_argv,
    run_tool,
)
from kprof.commands import NCU_DEFAULT_SET, ncu_argv, nsys_profile_argv


def _strip_ext(path: str) -> str:
    for ext in (".nsys-rep", ".sqlite", ".ncu-rep", ".qdstrm", ".html"):
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


def default_output(cmd: Sequence[str]) -> str:
    """``kprof_<name>`` from the profiled command: the script for an interpreter, else the program.

    Examples
    --------
    >>> default_output(["python3", "-u", "bench/train.py", "--steps", "3"]), default_output(["./build/app"])
    ('kprof_train', 'kprof_app')
    """
    prog = Path(cmd[0]).name if cmd else "profile"
    name = prog
    if re.match(r"^(python[\d.]*|pypy[\d.]*|bash|sh)$", prog):
        scripts = [a for a in cmd[1:] if not a.startswith("-")]
        if scripts:
            name = Path(scripts[0]).stem
        if "-m" in cmd[1:]:
            i = list(cmd).index("-m")
            if i + 1 < len(cmd):
                name = cmd[i + 1].split(".")[-1]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(name).stem or name)
    return f"kprof_{name}"


def _program_failed(
    tool: str, run: ToolRun, cmd: Sequence[str], kept: Sequence[str] = ()
) -> ProgramFailedError:
    kept_txt = f" What was recorded is kept: {', '.join(kept)}." if kept else ""
    return ProgramFailedError(
        f"the profiled command exited with status {run.returncode} under {tool}: `{shlex.join(cmd)}`. Its own "
        f"output is above (last lines: {run.tail(3) or 'none'}). A failing run is not a profile of the program; "
        f"fix it first (run the command without kprof until it exits 0), then profile again.{kept_txt}",
        files=kept,
    )


def capture_nsys(
    cmd: Sequence[str],
    base: str,
    *,
    cuda_profiler_range: bool = False,
    graph_nodes: bool = False,
    log: list[str] | None = None,
) -> tuple[str, str]:
    """Run nsys on ``cmd`` and export the report; return ``(BASE.nsys-rep, BASE.sqlite)``."""
    nsys = find_tool("nsys")
    rep, sqlite, qdstrm = base + ".nsys-rep", base + ".sqlite", base + ".qdstrm"
    _unlink(rep, sqlite, qdstrm)
    argv = nsys_profile_argv(
        cmd, base, nsys=nsys, cuda_profiler_range=cuda_profiler_range, graph_nodes=graph_nodes
    )
    _say(f"nsys: capturing the timeline: {shlex.join(argv)}")
    if log is not None:
        log.append(shlex.join(argv))
    run = run_tool(argv)
    have_rep = os.path.isfile(rep) and os.path.getsize(rep) > 0
    if run.returncode != 0 and have_rep:
        raise _program_failed("nsys", run, cmd, kept=[rep])
    if not have_rep:
        if os.path.exists(qdstrm):
            raise CaptureError(
                f"nsys recorded the run ({qdstrm}) but could not turn it into a report: its importer failed, "
                "usually because libraries it needs are missing (on the lent H200: `source .gpu/env.sh` first). "
                f"Run `QdstrmImporter -i {qdstrm}` from the nsys directory to see which.",
                files=[qdstrm],
            )
        if run.returncode != 0:
            errors = [ln for ln in run.output if "rror" in ln]
            why = errors[-1].strip() if errors else run.tail(3)
            raise CaptureError(
                f"nsys exited with status {run.returncode} and wrote no report ({why or 'no output'}). If the "
                "profiled command itself failed, its output is above: fix it and try again; otherwise check the "
                "nsys options (`nsys profile --help`)."
            )
        if cuda_profiler_range:
            raise CaptureError(
                "nsys wrote no report: with --cuda-profiler-range it records only between cudaProfilerStart() "
                "and cudaProfilerStop(), and the program never called cudaProfilerStart(). Bracket the steady "
                "state with torch.cuda.profiler.start()/stop() (CuPy: cupy.cuda.profiler.start()/stop(); C++: "
                "cudaProfilerStart()/cudaProfilerStop()), or drop --cuda-profiler-range to record the whole run."
            )
        raise CaptureError(
            f"nsys exited normally but wrote no report {rep} ({run.tail(3) or 'no output'}). Check that the "
            "directory is writable and has space."
        )
    export = nsys_export_argv(rep, sqlite, nsys=nsys)
    _say(f"nsys: exporting to SQLite: {shlex.join(export)}")
    if log is not None:
        log.append(shlex.join(export))
    exp = run_tool(export)
    ok = os.path.isfile(sqlite) and _has_magic(sqlite, SQLITE_MAGIC)
    if exp.returncode != 0 or not ok:
        raise CaptureError(
            f"`nsys export` failed (exit status {exp.returncode}: {exp.tail(3) or 'no output'}); the report "
            f"{rep} is kept. Try the export by hand: `{shlex.join(export)}`.",
            files=[rep],
        )
    return rep, sqlite


def capture_ncu(
    cmd: Sequence[str],
    base: str,
    *,
    kernel_filter: str,
    launch_skip: int = 0,
    launch_count: int = 1,
    section_set: str = NCU_DEFAULT_SET,
    replay_mode: str | None = None,
    profile_from_start: bool = True,
    timeline_names: Sequence[str] = (),
    log: list[str] | None = None,
) -> str:
    """Run ncu on ``cmd``; return the ``BASE.ncu-rep`` it wrote.

    Raises :class:`CounterPermissionError`, :class:`NoKernelProfiledError`,
    :class:`ProgramFailedError` or :class:`CaptureError`, each with the fix.
    ``timeline_names`` (the kernels a timeline saw) only enrich the no-match message.
    """
    ncu = find_tool("ncu")
    rep = base + ".ncu-rep"
    _unlink(rep)
    argv = ncu_argv(
        cmd,
        base,
        kernel_filter=kernel_filter,
        launch_skip=launch_skip,
        launch_count=launch_count,
        section_set=section_set,
        replay_mode=replay_mode,
        profile_from_start=profile_from_start,
        ncu=ncu,
    )
    _say(f"ncu: {shlex.join(argv)}")
    if log is not None:
        log.append(shlex.join(argv))
    run = run_tool(argv)
    have_rep = os.path.isfile(rep) and os.path.getsize(rep) > 0
    if run.has(ERR_NVGPUCTRPERM):
        raise CounterPermissionError(counter_permission_message())
    # "==ERROR== The application returned an error code (3)." (ncu 2025.3 exits with the program's status)
    if run.has(APP_RETURNED_ERROR) or (run.returncode != 0 and not run.lines_with("==ERROR==")):
        raise _program_failed("ncu", run, cmd, kept=[rep] if have_rep else [])
    if run.has(NO_KERNELS_PROFILED) or (run.returncode == 0 and not have_rep):
        raise _no_kernel_profiled(run, kernel_filter, launch_skip, profile_from_start, timeline_names)
    if run.returncode != 0:
        errors = run.lines_with("==ERROR==")
        raise CaptureError(
            f"ncu failed (exit status {run.returncode}): {' | '.join(errors[-3:])}. See the ncu output above; "
            "for a cooperative or persistent kernel, pass --replay-mode application."
        )
    return rep


def _no_kernel_profiled(
    run: ToolRun,
    kernel_filter: str,
    launch_skip: int,
    profile_from_start: bool,
    timeline_names: Sequence[str],
) -> NoKernelProfiledError:
    """The error for an ncu run that profiled no launch: which launches the program made, and what to change."""
    skip = (
        f" after skipping {launch_skip} matching launches (--launch-skip {launch_skip})"
        if launch_skip
        else ""
    )
    names = ""
    available = _available_kernels(run)
    if available:
        shown = ", ".join(f"`{n}`" for n in available[:8]) + (" ..." if len(available) > 8 else "")
        names = f" The program launched: {shown}."
    elif timeline_names:
        shown = ", ".join(f"`{n}`" for n in list(dict.fromkeys(timeline_names))[:6])
        names = f" The timeline's kernels by GPU time: {shown}."
    range_hint = (
        " With --cuda-profiler-range, ncu counts only launches between cudaProfilerStart() and "
        "cudaProfilerStop()."
        if not profile_from_start
        else ""
    )
    return NoKernelProfiledError(
        f"no kernel launch matched `-k {kernel_filter}`{skip}: ncu ran the program and profiled nothing, so "
        "it wrote no report. ncu matches the function name without namespace, template arguments or "
        "parameters (e.g. `vectorized_elementwise_kernel`, not `void at::native::...<...>(...)`); "
        "`regex:` searches anywhere in that name."
        f"{names}{range_hint} Fix the --kernel pattern or lower --launch-skip; for a program that starts "
        "child processes, check they are profiled (ncu --target-processes all)."
    )


def _available_kernels(run: ToolRun) -> list[str]:
    """The names ncu lists after "No kernels were profiled." (``Available Kernels:`` then ``1. name``)."""
    out: list[str] = []
    listing = False
    for line in run.output:
        if line.strip().startswith("Available Kernels:"):
            listing = True
            continue
        if listing:
            m = re.match(r"^\s*\d+\.\s+(\S.*)$", line)
            if not m:
                break
            out.append(m.group(1).strip())
    return out
