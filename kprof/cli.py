"""The ``kprof`` command line: a thin wrapper over the library.

Exit codes: 0 success, 2 bad input (one line naming the file and what is wrong),
1 an internal error (one line; set ``KPROF_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from kprof._version import __version__
from kprof.errors import KprofError, KprofInputError

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2 like every other bad input."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _err(msg: str) -> None:
    print(f"kprof: error: {msg}", file=sys.stderr)


def _internal(where: str, exc: BaseException) -> int:
    if os.environ.get("KPROF_DEBUG"):
        raise exc
    msg = " ".join(str(exc).split()) or type(exc).__name__
    _err(f"{where}: internal error ({type(exc).__name__}: {msg}); rerun with KPROF_DEBUG=1 and report it")
    return EXIT_INTERNAL


def cmd_diagnose(args: argparse.Namespace) -> int:
    from kprof.api import diagnose

    paths: list[str] = list(args.paths)
    rank_globs: list[str] = list(getattr(args, "ranks", None) or [])
    if not paths and not rank_globs:
        _err("diagnose: give PATH ... or --ranks GLOB (see kprof diagnose --help)")
        return EXIT_BAD_INPUT
    status = EXIT_OK
    empty: dict[str, KprofError] = {}  # a folder with no profile: its one line, where it was given
    if any(os.path.isdir(p) for p in paths):  # a folder stands for the profiles in it, as in kprof report
        from kprof.report.inputs import expand_dirs

        expanded: list[str] = []
        for p in paths:
            try:
                expanded += expand_dirs([p])
            except KprofError as exc:
                empty[p] = exc
                expanded.append(p)
        paths = expanded
    captures: list[Any] = []  # timeline captures and jobs, in the order given (each its verdict first)
    launches: list[Any] = []  # kernel launches of every report, ordered across reports below

    def emit(diags: list[Any]) -> None:
        (launches if diags and diags[0].subject.kind == "kernel" else captures).extend(diags)

    def fail(where: str, exc: Exception) -> None:
        nonlocal status
        if isinstance(exc, KprofError):
            _err(str(exc))
            status = EXIT_BAD_INPUT
            return
        _internal(where, exc)
        if status == EXIT_OK:
            status = EXIT_INTERNAL

    # jobs: each --ranks GLOB is one job (ranks from metadata, else in the glob's order); among
    # the positional paths, timeline captures whose metadata names distinct ranks of one job
    jobs: list[list[str]] = []
    for g in rank_globs:
        try:
            from kprof.jobs import expand_paths

            jobs.append(expand_paths(g))
        except Exception as exc:
            fail(g, exc)
    first_of: dict[str, list[str]] = {}
    in_job: set[str] = set()
    if len(paths) - len(empty) >= 2:
        from kprof.jobs import find_jobs

        try:
            auto, _rest = find_jobs([p for p in paths if p not in empty])
        except Exception:  # a file it could not read: each path alone then, each bad one its own line
            if os.environ.get("KPROF_DEBUG"):
                raise
            auto = []
        for j in auto:
            first_of[j[0]] = j
            in_job.update(j)
    engine = "dask" if args.scheduler and args.engine == "local" else args.engine

    def run_job(files: list[str]) -> None:
        from kprof.jobs import diagnose_job

        try:
            diags = diagnose_job(files, engine=engine, workers=args.workers, scheduler=args.scheduler)
        except Exception as exc:
            fail(files[0] if len(files) == 1 else f"job of {len(files)} ranks ({files[0]}, ...)", exc)
            return
        emit(diags)

    for files in jobs:
        run_job(files)
    for path in paths:
        if path in empty:
            fail(path, empty[path])
            continue
        if path in first_of:
            run_job(first_of[path])
            continue
        if path in in_job:
            continue
        try:
            diags = diagnose(path)
        except Exception as exc:
            fail(path, exc)
            continue
        emit(diags)
    ordered = captures + sorted(launches, key=lambda d: _VERDICT_RANK.get(d.verdict.value, 1))
    if args.json:
        json.dump({"diagnoses": [d.to_dict() for d in ordered]}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif ordered:
        print("\n\n".join(d.to_text() for d in ordered))
    return status


def cmd_compare(args: argparse.Namespace) -> int:
    """``kprof compare BEFORE AFTER [--json]``: 0 on success, 2 on bad input (one line on stderr)."""
    from kprof.api import compare

    try:
        comparisons = compare(args.before, args.after)
    except KprofError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except Exception as exc:
        return _internal(f"{args.before} vs {args.after}", exc)
    if args.json:
        json.dump(
            {"comparisons": [c.to_dict() for c in comparisons]}, sys.stdout, indent=2, ensure_ascii=False
        )
        sys.stdout.write("\n")
    else:
        print("\n\n".join(c.to_text() for c in comparisons))
    return EXIT_OK


_VERDICT_RANK = {"fix": 0, "inconclusive": 1, "healthy": 2}
"""Kernel launches across reports: a change to make first, then what cannot be told, then healthy
kernels (stable: within a report, the launches whose fix wins the most time first)."""


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _not_yet(name: str, issue: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        _err(f"`kprof {name}` is not available in this version yet ({issue})")
        return EXIT_INTERNAL

    return run


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kprof",
        description="Tell why a GPU program or kernel is slow and what to change, from "
        "Nsight Systems, PyTorch profiler and Nsight Compute outputs.",
    )
    p.add_argument("--version", action="version", version=f"kprof {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    _add_diagnose(sub)

    c = sub.add_parser("compare", help="check a fix: compare BEFORE and AFTER profiles")
    c.add_argument("before", metavar="BEFORE")
    c.add_argument("after", metavar="AFTER")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_compare)

    r = sub.add_parser("report", help="fill the template notebooks and export one HTML report")
    r.add_argument("paths", nargs="*", metavar="PATH", help="inputs (default: the shipped samples)")
    r.add_argument("-o", "--output", default="report.html")
    r.add_argument("--show-code", action="store_true", help="keep the notebooks' input cells")
    r.set_defaults(func=_report)

    _add_tools(sub)
    return p


def _add_diagnose(sub: Any) -> None:
    """``kprof diagnose`` and its options."""
    d = sub.add_parser(
        "diagnose",
        help="diagnose profiles: timelines first, then kernel launches, fixes first",
        description="Diagnose timeline captures (.nsys-rep, nsys .sqlite, PyTorch profiler "
        ".json/.json.gz) and kernel reports (.ncu-rep, ncu --csv exports). Order: the timeline captures "
        "and jobs first, in the order given (each one's verdict first, as the workflow reads them), then "
        "the kernel launches of all reports: those with a fix first, then inconclusive, then healthy "
        "(within a report, the launch whose fix wins the most time first).",
    )
    d.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="profiles, or folders: every profile in a folder (any depth; one file per capture: the .sqlite "
        "export before the .nsys-rep and the PyTorch trace, the .ncu-rep before its CSV exports), as kprof "
        "report reads them",
    )
    d.add_argument("--json", action="store_true", help='print {"diagnoses": [...]} as JSON')
    j = d.add_argument_group(
        "jobs (many ranks)",
        "Timeline captures whose metadata names distinct ranks of one job (PyTorch profiler distributedInfo, "
        "the launcher's RANK in an nsys capture) are diagnosed as one job: the job's verdict (straggler, "
        "communication_bound, load_imbalance, or the bottleneck the ranks share) first, then each rank's.",
    )
    j.add_argument(
        "--ranks",
        metavar="GLOB",
        action="append",
        help="one capture per rank of one job, as a quoted glob ('traces/rank*.json.gz'); ranks come from the "
        "files' metadata, else from the natural order of the names (may repeat: one job each)",
    )
    j.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="where each rank is reduced: a local process pool (default) or a Dask cluster",
    )
    j.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="Dask scheduler address (tcp://host:8786); implies --engine dask",
    )
    j.add_argument(
        "--workers", type=_positive_int, metavar="N", help="worker processes (default: the CPU count)"
    )
    d.set_defaults(func=cmd_diagnose)


def _add_tools(sub: Any) -> None:
    """``kprof notebook``, ``profile``, ``explain``, ``mcp`` and ``export-trace``."""
    nb = sub.add_parser(
        "notebook",
        help="copy template notebooks to run yourself (the shipped ones stay clean)",
        description="Write copies of kprof's template notebooks into DIR, to open and run in Jupyter. "
        "With no NAME, list the templates.",
    )
    nb.add_argument(
        "names", nargs="*", metavar="NAME", help="timeline, kernel, mechanism, job, compare, or all"
    )
    nb.add_argument(
        "-o", "--output", default=".", metavar="DIR", help="folder for the copies (default: here)"
    )
    nb.add_argument("--force", action="store_true", help="replace copies that exist")
    nb.set_defaults(func=_notebook)

    pr = sub.add_parser(
        "profile",
        help="run nsys or ncu with the right flags, then diagnose",
        description="Capture and diagnose: `profile nsys -- CMD` (timeline), `profile ncu --kernel REGEX -- CMD` "
        "(one kernel), `profile auto -- CMD` (timeline, then ncu on the top kernels if the GPU is the limit), "
        "`profile sass BINARY` (static SASS, no counters needed).",
    )
    from kprof.capture import add_arguments as _profile_arguments

    _profile_arguments(pr)
    pr.set_defaults(func=_profile)

    ex = sub.add_parser("explain", help="what a bottleneck id means, its thresholds and their sources")
    ex.add_argument("ids", nargs="*", metavar="ID", help="bottleneck ids (default: all)")
    ex.add_argument("--json", action="store_true", help='print {"explanations": [...]} as JSON')
    ex.add_argument(
        "--markdown", action="store_true", help="print the page of every id (what docs/rules.md holds)"
    )
    ex.set_defaults(func=_explain)
    sub.add_parser("mcp", help="serve kprof's tools to agents (Model Context Protocol, stdio)").set_defaults(
        func=_mcp
    )
    et = sub.add_parser(
        "export-trace",
        help="write a capture as a Chrome trace (Perfetto, chrome://tracing) with kprof's findings on top",
    )
    et.add_argument(
        "capture", metavar="CAPTURE", help=".nsys-rep, nsys .sqlite or PyTorch profiler .json(.gz)"
    )
    et.add_argument(
        "-o", "--output", default=None, help="the trace to write (default: NAME.trace.json.gz here)"
    )
    et.set_defaults(func=_export_trace)


def _delegate(module: str, name: str, issue: str) -> Any:
    """Run ``module.cli(args)``; until that module exists, say which issue brings it."""

    def run(args: argparse.Namespace) -> int:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            return int(_not_yet(name, issue)(args))
        return int(mod.cli(args))

    return run


_report = _delegate("kprof.report", "report", "issue 5: presentation")
_profile = _delegate("kprof.capture", "profile", "issue 6: capture")
_explain = _delegate("kprof.explain", "explain", "issue 18")
_mcp = _delegate("kprof.mcp_server", "mcp", "issue 18")
_export_trace = _delegate("kprof.export_trace", "export-trace", "issue 18")


def _notebook(args: argparse.Namespace) -> int:
    from kprof.report import notebook_cli

    return notebook_cli(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    started = time.time()
    try:
        return int(args.func(args))
    except KprofInputError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except KprofError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _quiet_shutdown()
        sweep_after_interrupt(started)
        _err("interrupted")
        return 130
    except _Terminated:
        _quiet_shutdown()
        sweep_after_interrupt(started)
        _err("terminated")
        return 143
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # a bug: one line, not a traceback (KPROF_DEBUG=1 shows it)
        return _internal(f"kprof {args.command}", exc)


def sweep_after_interrupt(started: float) -> None:
    """Remove what this run's helper processes left in the temporary folder (kprof.lifetime)."""
    from kprof.lifetime import sweep_after_interrupt as sweep

    sweep(started)


def _quiet_shutdown() -> None:
    """After an interruption, tasks that the notebook client abandoned are collected at exit and
    asyncio logs "Task exception was never retrieved" for each: noise after kprof's own one-line
    message (measured under load in kprof report's Ctrl-C test). The interruption is the news."""
    logging.getLogger("asyncio").disabled = True


class _Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C so that temporary files and child processes are cleaned up."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def entry() -> None:
    """Console-script entry point. SIGTERM unwinds like Ctrl-C (exit 143), so an interrupted
    run leaves no temporary file or half-written output behind."""
    with contextlib.suppress(ValueError):  # not in the main thread: keep the default
        signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(main())


if __name__ == "__main__":
    entry()
