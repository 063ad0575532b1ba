"""The capture commands kprof runs and suggests: one builder, so every one keeps kprof's flags.

``kprof profile`` runs these argument lists; every ``next_step`` that names an ``nsys`` or ``ncu``
command prints them (:func:`shell`). Whatever the suggestion, an ncu capture gets
``--import-source yes`` (the mechanism names source lines only when the report has them) and
``--clock-control none`` (ncu otherwise locks the clocks to base: the samples, ``kprof profile``
and compare's noise floor, measured on the H200 in ``data/samples/ncu_noise.csv``, all assume the
GPU's own clocks), and an nsys capture traces CUDA, NVTX and the OS runtime without CPU sampling.

Paths come from the profile being diagnosed: the capture after a change is written beside it
(``x_before.ncu-rep`` -> ``x_after.ncu-rep``, ``x.ncu-rep`` -> ``x_after.ncu-rep``) and
``kprof compare`` names both files.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

NSYS_TRACE = "cuda,nvtx,osrt"
"""CUDA API + GPU activity, NVTX ranges, OS runtime calls (what the host did in the gaps)."""
NSYS_FLAGS = ("-t", NSYS_TRACE, "-s", "none", "--cpuctxsw=none")
"""No CPU sampling or context-switch tracing: they add overhead and nothing kprof reads."""
NCU_DEFAULT_SET = "full"
NCU_FLAGS = ("--import-source", "yes", "--clock-control", "none")
"""Source lines in the report, and the GPU's own clocks (ncu locks them to base by default)."""
PROGRAM = "<your program and its arguments>"
"""What a suggestion prints where the profile does not record the program's command line."""

OTHER_RANKS = "<the captures of the other ranks>"
"""What a suggestion prints for the files of the job's other ranks, which one rank's capture does not name."""

_PLACEHOLDER = re.compile(r"^<[^<>]*>$")


def shell(argv: Sequence[str]) -> str:
    """``argv`` as one shell line: arguments quoted where the shell needs it, ``<placeholders>`` left
    as they are for the reader to replace.

    Examples
    --------
    >>> shell(["ncu", "-k", "regex:^k<4>$", "-o", "my dir/x", "<your program and its arguments>"])
    "ncu -k 'regex:^k<4>$' -o 'my dir/x' <your program and its arguments>"
    """
    return " ".join(a if _PLACEHOLDER.match(a) else shlex.quote(a) for a in argv)


def _program(cmd: Sequence[str] | str | None) -> list[str]:
    """The program's argument list; a string is a command line as recorded (split as the shell would)."""
    if cmd is None:
        return [PROGRAM]
    if isinstance(cmd, str):
        if _PLACEHOLDER.match(cmd.strip()):  # "<your command>": for the reader to replace, one word
            return [cmd.strip()]
        try:
            return shlex.split(cmd) or [PROGRAM]
        except ValueError:  # unbalanced quotes in a recorded command line: keep it whole
            return [cmd]
    return list(cmd) or [PROGRAM]


def nsys_profile_argv(
    cmd: Sequence[str] | str | None,
    output: str,
    *,
    nsys: str = "nsys",
    cuda_profiler_range: bool = False,
    graph_nodes: bool = False,
    backtrace_syncs: bool = False,
    force: bool = True,
    trace: str = NSYS_TRACE,
    sample: str = "none",
    cpuctxsw: str = "none",
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``nsys profile`` command kprof runs (and suggests).

    ``trace``, ``sample`` and ``cpuctxsw`` change kprof's defaults where a suggestion needs more
    (``nccl`` tracing, CPU sampling to see what the host runs); ``extra`` adds other flags.

    Examples
    --------
    >>> nsys_profile_argv(["python3", "app.py"], "out")
    ['nsys', 'profile', '-t', 'cuda,nvtx,osrt', '-s', 'none', '--cpuctxsw=none', '-f', 'true', '-o', 'out', 'python3', 'app.py']
    """
    if backtrace_syncs and sample == "none":
        sample = (
            "process-tree"  # nsys collects CUDA backtraces only with CPU sampling on (nsys profile --help)
        )
    argv = [nsys, "profile", "-t", trace, "-s", sample, f"--cpuctxsw={cpuctxsw}"]
    if force:
        argv += ["-f", "true"]
    if cuda_profiler_range:
        argv += ["--capture-range=cudaProfilerApi", "--capture-range-end=stop"]
    if graph_nodes:
        argv += ["--cuda-graph-trace=node"]
    if backtrace_syncs:
        argv += ["--cudabacktrace=sync"]
    return [*argv, *extra, "-o", output, *_program(cmd)]


def ncu_argv(
    cmd: Sequence[str] | str | None,
    output: str,
    *,
    kernel_filter: str,
    launch_skip: int | None = 0,
    launch_count: int = 1,
    section_set: str = NCU_DEFAULT_SET,
    sections: Sequence[str] = (),
    replay_mode: str | None = None,
    kernel_name_base: str | None = None,
    profile_from_start: bool = True,
    force: bool = True,
    ncu: str = "ncu",
) -> list[str]:
    """The ``ncu`` command kprof runs (and suggests): one launch, source imported, the GPU's own clocks.

    ``kernel_filter`` is what ``-k`` gets: an exact function name, or ``regex:...``. ``sections``
    (``SourceCounters``, ...) replace ``--set`` when only those are missing. ``launch_skip=None``
    leaves ``--launch-skip`` out (the first matching launch). ``force`` (``-f``) overwrites an
    existing report: kprof's own captures do, its suggestions never do (ncu then refuses to
    replace a report the user has).

    Examples
    --------
    >>> ncu_argv(["./app"], "k1", kernel_filter="regex:gemm", launch_skip=3)  # doctest: +NORMALIZE_WHITESPACE
    ['ncu', '--set', 'full', '--import-source', 'yes', '--clock-control', 'none', '-k', 'regex:gemm',
     '--launch-skip', '3', '--launch-count', '1', '-f', '-o', 'k1', './app']
    """
    what = [a for s in sections for a in ("--section", s)] if sections else ["--set", section_set]
    argv = [ncu, *what, *NCU_FLAGS]
    if kernel_name_base:
        argv += ["--kernel-name-base", kernel_name_base]
    argv += ["-k", kernel_filter]
    if launch_skip is not None:
        argv += ["--launch-skip", str(launch_skip)]
    argv += ["--launch-count", str(launch_count)]
    if replay_mode and replay_mode != "kernel":
        argv += ["--replay-mode", replay_mode]
    if not profile_from_start:
        argv += ["--profile-from-start", "off"]
    return [*argv, *(["-f"] if force else []), "-o", output, *_program(cmd)]


def exact_kernel_filter(name: str) -> str:
    """``-k`` value that matches exactly this function name.

    Examples
    --------
    >>> exact_kernel_filter("smem_column_sum"), exact_kernel_filter("k<float, 4>")
    ('regex:^smem_column_sum$', 'regex:^k<float, 4>$')
    """
    return "regex:^" + re.escape(name).replace("\\ ", " ") + "$"  # spaces unescaped: readable in a shell


_REPORT_SUFFIXES = (
    ".ncu-rep.gz",
    ".ncu-rep",
    ".raw.csv.gz",
    ".details.csv.gz",
    ".csv.gz",
    ".raw.csv",
    ".details.csv",
    ".csv",
    ".nsys-rep",
    ".sqlite.gz",
    ".sqlite",
    ".pt.trace.json.gz",
    ".json.gz",
    ".json",
)


def report_stem(path: str) -> str:
    """``path`` without its profile suffix (``.ncu-rep``, ``.details.csv``, ``.sqlite``, ...).

    Examples
    --------
    >>> report_stem("runs/x_before.ncu-rep"), report_stem("y.details.csv")
    ('runs/x_before', 'y')
    """
    for suffix in _REPORT_SUFFIXES:
        if path.lower().endswith(suffix):
            return path[: -len(suffix)]
    return os.path.splitext(path)[0]


def after_stem(path: str) -> str:
    """Where the capture after a change goes, beside ``path``: ``x_before`` -> ``x_after``, ``x`` -> ``x_after``.

    Examples
    --------
    >>> after_stem("runs/pair_before.ncu-rep"), after_stem("runs/k.ncu-rep")
    ('runs/pair_after', 'runs/k_after')
    """
    stem = report_stem(path)
    m = re.match(r"^(.*?)([_.-])before$", stem, re.IGNORECASE)
    return f"{m[1]}{m[2]}after" if m else f"{stem}_after"


def kernel_report_stem(stem: str, i: int, kernel: str) -> str:
    """Where the ncu report of the ``i``-th kernel a timeline names goes: beside the capture, named after
    its stem and the kernel (``run1`` -> ``run1.k1.gemm``), as ``kprof profile auto`` writes them.

    Examples
    --------
    >>> kernel_report_stem("runs/run1", 2, "void k<float>(int)")
    'runs/run1.k2.void_k_float_int_'
    """
    return f"{stem}.k{i}.{re.sub(r'[^A-Za-z0-9_.-]+', '_', kernel)[:60]}"


def ncu_command(
    kernel: str,
    output: str,
    *,
    program: Sequence[str] | str | None = None,
    exact: bool = True,
    **kw: object,
) -> str:
    """The shell line of :func:`ncu_argv` for a suggestion: ``kernel`` is a function name (matched
    exactly unless ``exact=False``, then it is the ``-k`` value), ``output`` the report's stem.

    Examples
    --------
    >>> ncu_command("k", "runs/k_after", launch_skip=None)
    "ncu --set full --import-source yes --clock-control none -k 'regex:^k$' --launch-count 1 -o runs/k_after <your program and its arguments>"
    """
    flt = exact_kernel_filter(kernel) if exact else kernel
    kw.setdefault("force", False)  # a suggestion never overwrites a report the user has
    return shell(ncu_argv(program, output, kernel_filter=flt, **kw))  # type: ignore[arg-type]


def nsys_command(output: str = "out", *, program: Sequence[str] | str | None = None, **kw: object) -> str:
    """The shell line of :func:`nsys_profile_argv` for a suggestion.

    Examples
    --------
    >>> nsys_command("run2", program="python3 train.py", graph_nodes=True)
    'nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --cuda-graph-trace=node -o run2 python3 train.py'
    """
    kw.setdefault("force", False)  # a suggestion never overwrites a capture the user has
    return shell(nsys_profile_argv(program, output, **kw))  # type: ignore[arg-type]


def timeline_after_change(
    source: str | None, *, program: Sequence[str] | str | None = None, **kw: object
) -> str:
    """The nsys command that captures the same program again after a change, beside the diagnosed
    capture (``x.sqlite`` -> ``x_after``), and the ``kprof compare`` of the two files, each in backticks.

    Examples
    --------
    >>> print(timeline_after_change("runs/step.sqlite", program="python3 train.py"))
    `nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none -o runs/step_after python3 train.py`, then `kprof compare runs/step.sqlite runs/step_after.nsys-rep`
    """
    before = source or "before.nsys-rep"
    after = after_stem(before)
    return f"`{nsys_command(after, program=program, **kw)}`, then `{compare_command(before, after + '.nsys-rep')}`"


def compare_command(before: str, after: str) -> str:
    """``kprof compare BEFORE AFTER`` with both paths quoted for the shell."""
    return shell(["kprof", "compare", before, after])


def kernel_after_change(
    kernel: str, source: str | None, *, cooperative: bool = False, program: Sequence[str] | str | None = None
) -> str:
    """The ``next_step`` of a kernel diagnosis with a fix: profile the same launch again beside the
    diagnosed report, then compare the two files.

    Examples
    --------
    >>> print(kernel_after_change("transpose", "runs/t_before.ncu-rep"))  # doctest: +NORMALIZE_WHITESPACE
    After the change, profile the same launch again: `ncu --set full --import-source yes --clock-control none
    -k 'regex:^transpose$' --launch-count 1 -o runs/t_after <your program and its arguments>`, then check it
    with `kprof compare runs/t_before.ncu-rep runs/t_after.ncu-rep`.
    """
    before = source or re.sub(r"\W+", "_", kernel)[:40] + ".ncu-rep"
    after = after_stem(before)
    cmd = ncu_command(
        kernel,
        after,
        program=program,
        launch_skip=None,
        replay_mode="application" if cooperative else None,
    )
    coop = (
        " (cooperative launch: kernel replay would break its grid synchronization, hence --replay-mode application)"
        if cooperative
        else ""
    )
    return (
        f"After the change, profile the same launch again: `{cmd}`{coop}, then check it with "
        f"`{compare_command(before, after + '.ncu-rep')}`."
    )


def kernel_recapture(
    kernel: str,
    source: str | None,
    *,
    sections: Sequence[str] = (),
    cooperative: bool = False,
    program: Sequence[str] | str | None = None,
) -> str:
    """An ncu command that profiles the launch again with what the report lacks (``sections``, or
    the full set), written beside the diagnosed report as ``<stem>_full``."""
    base = report_stem(source) if source else re.sub(r"\W+", "_", kernel)[:40]
    return ncu_command(
        kernel,
        f"{base}_full",
        program=program,
        launch_skip=None,
        sections=sections,
        replay_mode="application" if cooperative else None,
    )


__all__ = [
    "NCU_DEFAULT_SET",
    "NCU_FLAGS",
    "NSYS_FLAGS",
    "NSYS_TRACE",
    "OTHER_RANKS",
    "PROGRAM",
    "after_stem",
    "compare_command",
    "exact_kernel_filter",
    "kernel_after_change",
    "kernel_recapture",
    "kernel_report_stem",
    "ncu_argv",
    "ncu_command",
    "nsys_command",
    "nsys_profile_argv",
    "report_stem",
    "shell",
    "timeline_after_change",
]
