"""``kprof profile``: run nsys and ncu with the right flags, explain their failures, diagnose.

The workflow of docs/workflow.md in one command (``kprof profile auto -- CMD...``):

1. **nsys** with CUDA, NVTX and OS-runtime tracing and no CPU sampling
   (``nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none``), then ``nsys export --type sqlite``.
2. The **timeline diagnosis** (:func:`kprof.diagnose`). Unless its verdict is ``gpu_bound``
   it stops here and says why a kernel profiler would not help.
3. **ncu** on the kernels that hold most of the GPU time, one launch each, past warm-up
   (``ncu --set full --import-source yes --clock-control none -k NAME --launch-skip N
   --launch-count 1``), with ``--replay-mode application`` for cooperative launches.
4. The **kernel diagnosis** of each report, with durations taken from the timeline, and the report.

Every tool is run from an argument list (never a shell), its output streamed to stderr as it
comes; kprof's own progress lines start with ``kprof:``. Failures raise :class:`CaptureError`
(or :class:`~kprof.errors.MissingToolError`) whose message is a short paragraph that ends
with the fix; the CLI prints it and exits 2.

Machines without counter access get the no-counters mode (:mod:`kprof.capture_sass`):
the timeline plus static SASS analysis, with the confidence that such evidence deserves.

Modules: :mod:`~kprof.capture.tools` (finding and running the tools, the errors),
:mod:`~kprof.capture.targets` (which kernels to profile), :mod:`~kprof.capture.captures` (one nsys or
ncu capture), :mod:`~kprof.capture.diagnosis` (diagnosing what was captured),
:mod:`~kprof.capture.workflow` (the steps of each ``kprof profile`` tool); this module holds the
command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO

from kprof.capture.captures import (
    _available_kernels as _available_kernels,
)
from kprof.capture.captures import (
    _program_failed as _program_failed,
)
from kprof.capture.captures import (
    _strip_ext as _strip_ext,
)
from kprof.capture.captures import (
    capture_ncu,
    capture_nsys,
)
from kprof.capture.captures import (
    default_output as default_output,
)
from kprof.capture.diagnosis import (
    WHY_NO_NCU as WHY_NO_NCU,
)
from kprof.capture.diagnosis import (
    _diagnose_child as _diagnose_child,
)
from kprof.capture.diagnosis import (
    _ensure_ncu_report as _ensure_ncu_report,
)
from kprof.capture.diagnosis import (
    diagnose_kernel_report as diagnose_kernel_report,
)
from kprof.capture.diagnosis import (
    diagnose_timeline as diagnose_timeline,
)
from kprof.capture.diagnosis import (
    load_timeline as load_timeline,
)
from kprof.capture.diagnosis import (
    why_no_ncu as why_no_ncu,
)
from kprof.capture.targets import (
    TOP_KERNEL_MIN_SHARE as TOP_KERNEL_MIN_SHARE,
)
from kprof.capture.targets import (
    TOP_KERNELS_MAX,
    KernelTarget,
    top_kernels,
    warmup_launches,
)
from kprof.capture.targets import (
    WARMUP_FRACTION as WARMUP_FRACTION,
)
from kprof.capture.targets import (
    WARMUP_MAX as WARMUP_MAX,
)
from kprof.capture.targets import (
    matching_launches as matching_launches,
)
from kprof.capture.tools import (
    APP_RETURNED_ERROR as APP_RETURNED_ERROR,
)
from kprof.capture.tools import (
    ERR_NVGPUCTRPERM as ERR_NVGPUCTRPERM,
)
from kprof.capture.tools import (
    NO_KERNELS_PROFILED as NO_KERNELS_PROFILED,
)
from kprof.capture.tools import (
    OUTPUT_TAIL_LINES as OUTPUT_TAIL_LINES,
)
from kprof.capture.tools import (
    SQLITE_MAGIC as SQLITE_MAGIC,
)
from kprof.capture.tools import (
    CaptureError,
    CounterPermissionError,
    NoKernelProfiledError,
    ProgramFailedError,
    counter_permission_message,
    find_tool,
    nsys_export_argv,
)
from kprof.capture.tools import (
    ToolRun as ToolRun,
)
from kprof.capture.tools import (
    regex_filter as regex_filter,
)
from kprof.capture.tools import (
    run_tool as run_tool,
)
from kprof.capture.workflow import (
    EXIT_OK as EXIT_OK,
)
from kprof.capture.workflow import (
    RUNNERS,
    ProfileOptions,
    Session,
)
from kprof.capture.workflow import (
    profile_auto as profile_auto,
)
from kprof.capture.workflow import (
    profile_ncu as profile_ncu,
)
from kprof.capture.workflow import (
    profile_nsys as profile_nsys,
)
from kprof.capture.workflow import (
    profile_sass as profile_sass,
)
from kprof.capture.workflow import (
    run_ncu_targets as run_ncu_targets,
)
from kprof.capture.workflow import (
    run_nsys_stage as run_nsys_stage,
)
from kprof.commands import NCU_DEFAULT_SET, ncu_argv, nsys_profile_argv
from kprof.errors import KprofError


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``kprof profile TOOL`` subcommands and their options (called from :func:`kprof.cli.build_parser`).

    Each tool is a subcommand whose last argument swallows the rest of the line, so that the
    profiled command keeps its own options: ``kprof profile nsys -o out -- python3 app.py --steps 3``.
    """
    sub = p.add_subparsers(dest="tool", metavar="TOOL", required=True)
    tools = {
        "nsys": "capture the timeline (nsys), export it, diagnose it",
        "ncu": "profile one kernel (ncu), diagnose it",
        "auto": "the whole workflow: nsys, then ncu on the top kernels if the GPU is the limit, then the report",
        "sass": "read the SASS of a binary statically (no GPU, no counters)",
    }
    for tool, text in tools.items():
        t = sub.add_parser(tool, help=text, description=text[0].upper() + text[1:] + ".")
        if tool != "sass":
            t.add_argument(
                "-o",
                "--output",
                default=None,
                metavar="BASE",
                help="output path without extension (default: kprof_<program>): BASE.nsys-rep, BASE.sqlite, ...",
            )
        t.add_argument(
            "--kernel",
            default=None,
            metavar="REGEX",
            help="kernel-name regex (ncu: required; auto, sass, --no-counters: only matching kernels)",
        )
        if tool in ("ncu", "auto"):
            _ncu_options(t, tool)
        if tool == "auto":
            t.add_argument(
                "--top",
                type=int,
                default=TOP_KERNELS_MAX,
                metavar="N",
                help=f"profile at most N kernels (default {TOP_KERNELS_MAX})",
            )
        if tool != "sass":
            _capture_options(t)
        if tool in ("nsys", "auto"):
            t.add_argument(
                "--graph-nodes",
                action="store_true",
                help="nsys --cuda-graph-trace=node (kernels inside CUDA graphs)",
            )
        t.add_argument(
            "--json", action="store_true", help='print {"diagnoses": [...], "files": [...], ...} as JSON'
        )
        t.add_argument(
            "cmd",
            nargs=argparse.REMAINDER,
            metavar="BINARY ..." if tool == "sass" else "-- CMD ...",
            help="the binaries to read" if tool == "sass" else "the command to profile, after --",
        )


def _ncu_options(t: argparse.ArgumentParser, tool: str) -> None:
    """The ncu options of ``kprof profile ncu`` and ``auto``."""
    if tool == "ncu":
        t.add_argument(
            "--launch-skip",
            type=int,
            default=None,
            metavar="N",
            help="matching launches to skip first (default: past warm-up when --timeline is given, else 0)",
        )
        t.add_argument(
            "--timeline",
            default=None,
            metavar="PATH",
            help="a timeline of the same program: detects cooperative launches and skips warm-up",
        )
    t.add_argument("--launch-count", type=int, default=1, metavar="N", help="launches to profile (default 1)")
    t.add_argument(
        "--set",
        dest="section_set",
        default=NCU_DEFAULT_SET,
        metavar="NAME",
        help="ncu section set (default full)",
    )
    t.add_argument(
        "--replay-mode",
        choices=["kernel", "application"],
        default=None,
        help="ncu replay mode (default: application for cooperative launches seen in the timeline, else kernel)",
    )


def _capture_options(t: argparse.ArgumentParser) -> None:
    """The options of every tool that captures (all but ``sass``)."""
    t.add_argument(
        "--cuda-profiler-range",
        action="store_true",
        help="record only between cudaProfilerStart/Stop (nsys --capture-range=cudaProfilerApi, "
        "ncu --profile-from-start off)",
    )
    t.add_argument(
        "--no-counters",
        action="store_true",
        help="no ncu: the timeline plus a static SASS reading of --binary (machines without counter access)",
    )
    t.add_argument(
        "--binary",
        default=None,
        metavar="PATH",
        help="the executable, library or .cubin that holds the kernels (for the static SASS reading)",
    )
    t.add_argument("--no-report", action="store_true", help="do not build the HTML report at the end")


def print_session(session: Session, opts: ProfileOptions, out: IO[str] | None = None) -> None:
    """Print what the session has not printed yet: JSON at the end, or the rest of the text."""
    out = out or sys.stdout
    if opts.json:
        json.dump(
            {
                "diagnoses": [d.to_dict() for d in session.diagnoses],
                "files": session.files,
                "commands": session.commands,
                "notes": session.notes,
                "report": session.report,
                "report_command": session.report_command,
            },
            out,
            indent=2,
            ensure_ascii=False,
        )
        out.write("\n")
        return
    blocks = [d.to_text() for d in session.diagnoses[session.printed :]]
    session.printed = len(session.diagnoses)
    blocks += session.notes
    tail: list[str] = []
    if session.files:
        tail.append("Files: " + ", ".join(session.files))
    if session.report:
        tail.append(f"Report: {session.report}")
    elif session.report_command:
        tail.append(f"Report: {session.report_command}")
    if tail:
        blocks.append("\n".join(tail))
    text = "\n\n".join(b.rstrip() for b in blocks if b.strip())
    if text:
        out.write(("\n" if session.diagnoses else "") + text + "\n")
    out.flush()


def cli(args: argparse.Namespace) -> int:
    """Entry point of ``kprof profile`` (called by :mod:`kprof.cli`); KprofErrors propagate (exit 2)."""
    opts = ProfileOptions.from_args(args)
    session = Session(stream=None if opts.json else sys.stdout)
    try:
        RUNNERS[opts.tool](opts, session)
    except KprofError:
        if session.diagnoses and opts.json:  # what was diagnosed before the failure is still worth printing
            print_session(session, opts)
        raise
    print_session(session, opts)
    return session.status


__all__ = [
    "CaptureError",
    "CounterPermissionError",
    "KernelTarget",
    "NoKernelProfiledError",
    "ProfileOptions",
    "ProgramFailedError",
    "Session",
    "capture_ncu",
    "capture_nsys",
    "cli",
    "counter_permission_message",
    "find_tool",
    "ncu_argv",
    "nsys_export_argv",
    "nsys_profile_argv",
    "top_kernels",
    "warmup_launches",
]
