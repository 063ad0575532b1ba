"""``kprof mcp``: kprof as a Model Context Protocol server, for agents that tune GPU code.

An agent that tunes a kernel loops: profile, read the diagnosis, change the code, profile again,
check that the change did what the diagnosis expected. The server gives it that loop as four tools
(stdio transport; start it with ``kprof mcp``):

``diagnose(paths, ranks=None)``
    ``kprof diagnose --json PATHS``: ``{"diagnoses": [...]}``, the capture's verdict first.
``compare(before, after)``
    ``kprof compare --json BEFORE AFTER``: ``{"comparisons": [...]}`` with the speedup and whether
    each ``expect`` of the before diagnosis was met.
``profile(tool, command, ...)``
    ``kprof profile TOOL --json -- COMMAND``: runs nsys or ncu with kprof's flags where they are
    installed, then diagnoses: ``{"diagnoses", "files", "commands", "notes", "report", ...}``.
``explain(bottleneck)``
    ``kprof explain --json ID``: what an id means, when kprof gives it, its thresholds and their sources.

Each tool runs the command line's own code (:func:`kprof.cli.main`) and returns the JSON it prints,
so the results are the documented JSON byte for byte. A failure is a tool error (``isError``) whose
text is the line the command line prints on stderr (``kprof: error: PATH: what is wrong``), one line
per bad input; what was diagnosed before the failure follows as JSON. A report that crashes NVIDIA's
``ncu_report`` is read in kprof's isolated reader process, so it becomes such an error and the server
keeps serving.

Paths are resolved against the server's working directory. Nothing kprof prints reaches the
protocol stream: the SDK moves stdout aside, and every tool captures the command line's output.
"""

from __future__ import annotations

import io
import json
import re
import threading
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kprof._version import __version__
from kprof.errors import MissingToolError

if TYPE_CHECKING:
    import argparse

    from mcp.server import MCPServer
    from mcp.types import CallToolResult

SERVER_NAME = "kprof"
INSTRUCTIONS = (
    "kprof tells why a GPU program or kernel is slow and what to change. Work in this order: diagnose a "
    "timeline first (.nsys-rep, nsys .sqlite, PyTorch profiler .json/.json.gz): if the verdict is not "
    "gpu_bound, fix what it names (host dispatch, syncs, copies) before touching kernels. When it is "
    "gpu_bound, profile the kernels it names (its next_step holds the ncu command, or call profile with "
    "tool='ncu'), then diagnose the .ncu-rep. After a change, profile again and call compare(before, after): "
    "each expectation says whether the metric the diagnosis predicted moved. explain(id) says what a "
    "bottleneck id means and which thresholds decide it."
)
_ERROR_LINE = re.compile(r"^kprof(?: [\w-]+)*: error: ")
_CLI_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class CliRun:
    """What one in-process run of the command line returned and printed."""

    status: int
    stdout: str
    stderr: str

    def errors(self) -> list[str]:
        """The one-line errors the command line printed (``kprof: error: ...``)."""
        return [line for line in self.stderr.splitlines() if _ERROR_LINE.match(line)]


def run_cli(argv: list[str]) -> CliRun:
    """Run ``kprof ARGV`` in this process and capture what it prints.

    Calls are serialized: the command line writes to ``sys.stdout``/``sys.stderr``, which are
    swapped for the duration of the call.

    Examples
    --------
    >>> run_cli(["explain", "--json", "gpu_bound"]).status
    0
    """
    from kprof.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _CLI_LOCK, redirect_stdout(out), redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse usage errors exit 2 after printing their one line
            status = exc.code if isinstance(exc.code, int) else 2
    return CliRun(status=status, stdout=out.getvalue(), stderr=err.getvalue())


def _tool_error(lines: list[str], partial: dict[str, Any] | None) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    content = [TextContent(type="text", text="\n".join(lines))]
    if partial:
        content.append(TextContent(type="text", text=json.dumps(partial, indent=2, ensure_ascii=False)))
    return CallToolResult(content=list(content), is_error=True)


def _result(run: CliRun, what: str) -> Any:
    """The JSON the command printed, or a tool error with its one-line errors (and any partial JSON).

    Typed ``Any`` because the tools are annotated ``-> dict[str, Any]`` (their structured output,
    which the SDK publishes as the output schema) and return a ``CallToolResult`` with ``isError``
    on failure, which the SDK passes through unchanged."""
    try:
        data = json.loads(run.stdout) if run.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    if run.status == 0 and isinstance(data, dict):
        return data
    lines = run.errors()
    if not lines:
        tail = [line for line in run.stderr.splitlines() if line.strip()][-1:]
        lines = tail or [f"kprof: error: {what}: exited with status {run.status} and printed no reason"]
    partial = (
        data if isinstance(data, dict) and any(v for v in data.values() if isinstance(v, list)) else None
    )
    return _tool_error(lines, partial)


def _opt(argv: list[str], flag: str, value: Any) -> None:
    if value is None or value is False:
        return
    if value is True:
        argv.append(flag)
    else:
        argv += [flag, str(value)]


# ----------------------------------------------------------------------------- the tools


def diagnose(paths: list[str] | str, ranks: list[str] | str | None = None) -> dict[str, Any]:
    """Diagnose profiles, most important first: what limits the program and what to change.

    paths: timeline captures (.nsys-rep, nsys .sqlite, PyTorch profiler .json/.json.gz) and kernel
    reports (.ncu-rep, ncu --csv exports), or folders of them; one path may be given as a string.
    Captures that are ranks of one job are diagnosed as a job.
    ranks: quoted globs, each the captures of one job's ranks ('traces/rank*.json.gz'), or one glob.
    Returns {"diagnoses": [...]}: for a timeline the capture's verdict first; for an ncu report one
    per kernel launch. Each has bottleneck, verdict, headline, evidence, mechanism, fix, expect,
    confidence, next_step and findings.
    """
    argv = ["diagnose", "--json"]
    for g in [ranks] if isinstance(ranks, str) else ranks or []:
        argv += ["--ranks", g]
    files = [paths] if isinstance(paths, str) else list(paths)  # one path as a string, as an agent writes it
    return _result(run_cli([*argv, "--", *files]), "diagnose")


def compare(before: str, after: str) -> dict[str, Any]:
    """Check a fix: compare a profile before a change with one after it.

    Both are timelines or both are kernel reports of the same program. Returns {"comparisons": [...]}
    with the verdict (improved, regressed, unchanged, inconclusive), the speedup, the noise threshold
    used, both diagnoses, and for each expect of the before diagnosis whether it was met.
    """
    return _result(run_cli(["compare", "--json", "--", before, after]), "compare")


def profile(
    tool: Literal["nsys", "ncu", "auto", "sass"],
    command: list[str],
    kernel: str | None = None,
    output: str | None = None,
    launch_skip: int | None = None,
    launch_count: int | None = None,
    timeline: str | None = None,
    top: int | None = None,
    section_set: str | None = None,
    replay_mode: Literal["kernel", "application"] | None = None,
    cuda_profiler_range: bool = False,
    graph_nodes: bool = False,
    no_counters: bool = False,
    binary: str | None = None,
    report: bool = False,
) -> dict[str, Any]:
    """Capture with the right flags, then diagnose (needs nsys / ncu on the server's machine).

    tool: 'nsys' (timeline), 'ncu' (one kernel; kernel regex required), 'auto' (timeline, then ncu
    on the top kernels when the GPU is the limit), 'sass' (static SASS of the binaries in command).
    command: the program and its arguments, e.g. ["python3", "train.py", "--steps", "20"].
    output: base path of the files written (default kprof_<program>). report: also build the
    HTML report (slow). Returns {"diagnoses", "files", "commands", "notes", "report", "report_command"}.
    """
    argv = ["profile", tool, "--json"]
    _opt(argv, "--kernel", kernel)
    if tool != "sass":
        _opt(argv, "--output", output)
        _opt(argv, "--cuda-profiler-range", cuda_profiler_range)
        _opt(argv, "--no-counters", no_counters)
        _opt(argv, "--binary", binary)
        _opt(argv, "--no-report", not report)
    if tool == "ncu":
        _opt(argv, "--launch-skip", launch_skip)
        _opt(argv, "--timeline", timeline)
    if tool in ("ncu", "auto"):
        _opt(argv, "--launch-count", launch_count)
        _opt(argv, "--set", section_set)
        _opt(argv, "--replay-mode", replay_mode)
    if tool == "auto":
        _opt(argv, "--top", top)
    if tool in ("nsys", "auto"):
        _opt(argv, "--graph-nodes", graph_nodes)
    return _result(run_cli([*argv, "--", *command]), f"profile {tool}")


def explain(bottleneck: str) -> dict[str, Any]:
    """What a bottleneck id means, when kprof gives it, and the thresholds that decide it (with sources).

    bottleneck: an id from a diagnosis, e.g. 'sync_bound', 'uncoalesced_global_access'.
    Returns {"explanations": [{"bottleneck", "level", "meaning", "when", "fix", "thresholds", "rule"}]}.
    """
    return _result(run_cli(["explain", "--json", "--", bottleneck]), "explain")


TOOLS = (diagnose, compare, profile, explain)


def build_server() -> MCPServer:
    """The MCP server with kprof's tools (not started).

    Raises
    ------
    MissingToolError
        The ``mcp`` package is not installed (``pip install 'kprof[mcp]'``).

    Examples
    --------
    >>> server = build_server()  # doctest: +SKIP
    >>> server.run("stdio")  # doctest: +SKIP
    """
    try:
        from mcp.server import MCPServer
        from mcp.types import ToolAnnotations
    except ImportError as exc:
        raise MissingToolError(
            "`kprof mcp` needs the Model Context Protocol SDK: pip install 'kprof[mcp]' (or pip install mcp)"
        ) from exc
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    for fn in (diagnose, compare, explain):
        server.add_tool(fn, annotations=read_only)
    server.add_tool(profile, annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    return server


def cli(args: argparse.Namespace) -> int:
    """``kprof mcp``: serve the tools over stdio until the client closes the connection."""
    server = build_server()
    server.run("stdio")
    return 0


__all__ = ["INSTRUCTIONS", "SERVER_NAME", "TOOLS", "CliRun", "build_server", "cli", "run_cli"]
