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
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kprof.commands import NCU_DEFAULT_SET, ncu_argv, nsys_profile_argv
from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.model import Bottleneck, Diagnosis

if TYPE_CHECKING:
    from kprof.timeline_model import Timeline

# ----------------------------------------------------------------------------- constants
TOP_KERNELS_MAX = 3
"""ncu runs the whole program once per kernel (6-11 s each on the H200 for a PyTorch program,
much more with application replay); three kernels cover the time of nearly every program."""
TOP_KERNEL_MIN_SHARE = 0.10
"""Below a tenth of the GPU time, a kernel cannot change the total much even if made free;
the first kernel is always profiled."""
WARMUP_FRACTION = 10
"""Skip the first 1/WARMUP_FRACTION of a kernel's launches (at least 1, at most WARMUP_MAX)."""
WARMUP_MAX = 20
"""... but never more than this many: ncu intercepts every launch it skips, so a large skip
slows the capture, and twenty launches are past any warm-up seen in the H200 samples."""
OUTPUT_TAIL_LINES = 4000
SQLITE_MAGIC = b"SQLite format 3\x00"
EXIT_OK = 0

ERR_NVGPUCTRPERM = "ERR_NVGPUCTRPERM"
NO_KERNELS_PROFILED = "No kernels were profiled"
APP_RETURNED_ERROR = "The application returned an error code"


# ----------------------------------------------------------------------------- errors
class CaptureError(KprofError):
    """A capture failed; the message explains why and how to fix it (a short paragraph)."""

    def __init__(self, message: str, *, files: Sequence[str] = ()) -> None:
        self.files = tuple(files)
        super().__init__(" ".join(message.split()))


class CounterPermissionError(CaptureError):
    """ncu could not read the GPU performance counters (``ERR_NVGPUCTRPERM``)."""


class NoKernelProfiledError(CaptureError):
    """ncu ran the program but no kernel launch matched the filter."""


class ProgramFailedError(CaptureError):
    """The profiled command exited with a non-zero status."""


def counter_permission_message(cmd_hint: str = "") -> str:
    """The paragraph printed for ``ERR_NVGPUCTRPERM``."""
    return (
        "ncu has no access to the GPU performance counters (ERR_NVGPUCTRPERM): the driver restricts them "
        "to administrators. Fix: in a container, start it with `--cap-add SYS_ADMIN` (docker/podman; or "
        "run ncu as root inside it); on the host, set the driver option `NVreg_RestrictProfilingToAdminUsers=0` "
        "(a file in /etc/modprobe.d/, then reload the nvidia module or reboot), or run ncu with sudo. "
        "`ncu --version` succeeding proves nothing: it never touches a counter. Without counters, "
        "`kprof profile auto --no-counters --binary BINARY -- CMD` gives the timeline plus a static SASS "
        f"reading.{cmd_hint}"
    )


# ----------------------------------------------------------------------------- tools
_NSYS_GLOBS = (
    "/opt/nvidia/nsight-systems/*/bin/nsys",
    "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
    "/usr/local/cuda*/nsight-systems-*/bin/nsys",
    "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
)
_NCU_GLOBS = (
    "/usr/local/cuda*/bin/ncu",
    "/opt/nvidia/nsight-compute/*/ncu",
    "/usr/local/cuda*/nsight-compute-*/ncu",
)


def _candidates(patterns: Iterable[str]) -> list[str]:
    out: list[str] = []
    for pat in patterns:
        out += sorted(p for p in glob.glob(pat) if os.access(p, os.X_OK))
    return out


def find_tool(name: str) -> str:
    """The path of ``nsys`` or ``ncu`` on PATH, or :class:`MissingToolError` saying how to get it."""
    path = shutil.which(name)
    if path:
        return path
    if name == "nsys":
        found = _candidates(_NSYS_GLOBS)
        where = (
            f" One is installed here but not on PATH: {found[-1]} (add its directory to PATH)."
            if found
            else ""
        )
        raise MissingToolError(
            "nsys (Nsight Systems) is not on PATH, so the timeline cannot be captured." + where + " Install "
            "Nsight Systems (https://developer.nvidia.com/nsight-systems) or add its bin directory to PATH; "
            "Nsight Compute also ships a copy in <nsight-compute>/host/target-linux-x64/nsys. Without nsys, "
            "record the timeline with torch.profiler and run `kprof diagnose trace.json`."
        )
    if name == "ncu":
        found = _candidates(_NCU_GLOBS)
        where = (
            f" One is installed here but not on PATH: {found[-1]} (add its directory to PATH)."
            if found
            else ""
        )
        raise MissingToolError(
            "ncu (Nsight Compute) is not on PATH, so no kernel can be profiled."
            + where
            + " It ships with the "
            "CUDA toolkit (/usr/local/cuda/bin/ncu) and as Nsight Compute (/opt/nvidia/nsight-compute/<version>/ncu): "
            "add that directory to PATH. Without ncu, `kprof profile sass BINARY` reads the kernels' SASS statically."
        )
    raise MissingToolError(f"{name} is not on PATH")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRun:
    """One finished tool run: its argument list, exit status and (the tail of) its output."""

    argv: tuple[str, ...]
    returncode: int
    output: tuple[str, ...]
    seconds: float

    def has(self, text: str) -> bool:
        return any(text in line for line in self.output)

    def lines_with(self, prefix: str) -> list[str]:
        return [line.strip() for line in self.output if line.lstrip().startswith(prefix)]

    def tail(self, n: int = 5) -> str:
        lines = [line.strip() for line in self.output if line.strip()]
        return " | ".join(lines[-n:])


def _say(msg: str, *, stream: IO[str] | None = None) -> None:
    print(f"kprof: {msg}", file=stream or sys.stderr, flush=True)


def run_tool(argv: Sequence[str], *, echo: IO[str] | None = None, cwd: str | None = None) -> ToolRun:
    """Run ``argv`` (no shell), stream its merged stdout/stderr to ``echo`` (stderr) line by line.

    The profiled program's own output goes through here too, so kprof's stdout stays clean
    for the diagnosis. Progress bars that redraw with a carriage return (nsys's
    ``Processing N events: [==  ]``) are passed through to a terminal and dropped otherwise,
    so a log gets one line per message, not a hundred per bar. Lines marked
    ``==ERROR==``/``==WARNING==`` are always kept; otherwise the last :data:`OUTPUT_TAIL_LINES` are.
    """
    import io

    out = echo or sys.stderr
    tty = bool(getattr(out, "isatty", lambda: False)())
    kept: deque[str] = deque(maxlen=OUTPUT_TAIL_LINES)
    marked: list[str] = []
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
    except FileNotFoundError as exc:
        raise MissingToolError(f"{argv[0]} could not be started: {exc.strerror}") from exc
    except PermissionError as exc:
        raise CaptureError(f"{argv[0]} is not executable ({exc.strerror}); check its permissions") from exc
    assert proc.stdout is not None
    # newline="": lines end at \n, \r\n or \r, and keep their ending, so \r-redrawn bars can be told apart
    reader = io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace", newline="")
    try:
        for chunk in reader:
            if chunk.endswith("\r"):  # a progress bar redrawing itself
                if tty:
                    out.write(chunk)
                    out.flush()
                continue
            out.write(chunk if chunk.endswith("\n") else chunk + "\n")
            out.flush()
            line = chunk.rstrip("\r\n")
            if line.lstrip().startswith(("==ERROR==", "==WARNING==")):
                marked.append(line)
            kept.append(line)
        rc = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise
    lines = list(kept)
    seen = set(lines)
    extra = [m for m in marked if m not in seen]
    return ToolRun(
        argv=tuple(argv), returncode=rc, output=tuple(extra + lines), seconds=time.monotonic() - t0
    )


# ----------------------------------------------------------------------------- argument lists
def nsys_export_argv(report: str, sqlite: str, *, nsys: str = "nsys") -> list[str]:
    """``nsys export --type sqlite --force-overwrite true -o X.sqlite X.nsys-rep``.

    Examples
    --------
    >>> nsys_export_argv("x.nsys-rep", "x.sqlite")
    ['nsys', 'export', '--type', 'sqlite', '--force-overwrite', 'true', '-o', 'x.sqlite', 'x.nsys-rep']
    """
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", sqlite, report]


def regex_filter(regex: str) -> str:
    """``-k`` value for a user regex: ``gemm`` -> ``regex:gemm`` (already prefixed: unchanged)."""
    return regex if regex.startswith("regex:") else f"regex:{regex}"


# ----------------------------------------------------------------------------- which kernels
@dataclass(frozen=True, slots=True, kw_only=True)
class KernelTarget:
    """A kernel worth profiling with ncu, read from the timeline."""

    name: str
    """Full (demangled) name."""
    short_name: str
    """Function name without parameters or templates: what ``ncu -k`` matches by default."""
    gpu_time_ns: int
    share: float
    """Share of all kernel time in the capture (0..1)."""
    launches: int
    launch_skip: int
    """``ncu --launch-skip``: launches of ``short_name`` to pass before the profiled one."""
    skip_reason: str
    cooperative: bool = False
    """True when any launch was cooperative (grid sync): kernel replay would break it."""

    @property
    def kernel_filter(self) -> str:
        return self.short_name

    @property
    def replay_mode(self) -> str:
        return "application" if self.cooperative else "kernel"


def warmup_launches(n: int) -> int:
    """How many of a kernel's ``n`` launches to skip as warm-up.

    The first launches pay one-time costs that the steady state does not: lazy module loading
    (``cuLibraryLoadData``, 20-48 ms in the H200 captures), allocator growth, library autotuning,
    clocks still ramping. Skip a tenth of them, at least one (when there is more than one) and at
    most :data:`WARMUP_MAX`.

    Examples
    --------
    >>> [warmup_launches(n) for n in (1, 2, 10, 80, 1000)]
    [0, 1, 1, 8, 20]
    """
    if n <= 1:
        return 0
    return min(n - 1, WARMUP_MAX, max(1, n // WARMUP_FRACTION))


def _launch_order(timeline: Timeline) -> Any:
    """Indices of the kernel rows in the order the host launched them (ncu counts in that order)."""
    import numpy as np

    k = timeline.kernels
    corr = np.asarray(k.correlation)
    if len(corr) and bool((corr > 0).all()):
        return np.lexsort((np.asarray(k.start_ns), corr))
    return np.argsort(np.asarray(k.start_ns), kind="stable")


def _is_cooperative(timeline: Timeline, rows: Any) -> bool:
    import numpy as np

    from kprof.timeline_model import LAUNCH_COOPERATIVE

    lt = timeline.kernels.launch_type
    if lt is None or not len(rows):
        return False
    return bool(np.isin(np.asarray(lt)[rows], LAUNCH_COOPERATIVE).any())


def top_kernels(
    timeline: Timeline, *, max_kernels: int = TOP_KERNELS_MAX, min_share: float = TOP_KERNEL_MIN_SHARE
) -> list[KernelTarget]:
    """The kernels that hold most of the GPU time, each with the launch to profile.

    Kernels are ranked by their summed duration (distinct demangled names: two instantiations of a
    template are two kernels). ncu matches by function name, which instantiations share, so the
    ``launch_skip`` of a target counts every launch with its short name: it points at the first
    launch of *this* instantiation after its warm-up (:func:`warmup_launches`).

    Examples
    --------
    >>> import numpy as np
    >>> from kprof.timeline_model import KernelTable, Timeline
    >>> k = KernelTable(start_ns=np.arange(0, 100, 10), end_ns=np.arange(0, 100, 10) + 8,
    ...                 correlation=np.arange(1, 11), name_id=np.array([0, 1] * 5), names=("void gemm<1>()", "void add()"),
    ...                 device=np.zeros(10, np.int16), stream=np.zeros(10, np.int32))
    >>> [(t.short_name, t.launches, t.launch_skip) for t in top_kernels(Timeline(source="x", format="nsys", kernels=k))]
    [('gemm', 5, 1), ('add', 5, 1)]
    """
    import numpy as np

    k = timeline.kernels
    if len(k) == 0:
        return []
    ids = np.asarray(k.name_id)
    dur = np.asarray(k.duration_ns, dtype=np.float64)
    n_names = len(k.names)
    totals = np.bincount(ids, weights=dur, minlength=n_names)
    counts = np.bincount(ids, minlength=n_names)
    total = float(totals.sum())
    if total <= 0:
        return []
    shorts = list(k.short_names) if k.short_names else list(k.names)
    order = _launch_order(timeline)
    seq_ids = ids[order]
    seq_short = (
        np.array([shorts[i] for i in seq_ids], dtype=object) if len(seq_ids) else np.array([], dtype=object)
    )
    out: list[KernelTarget] = []
    for nid in np.argsort(-totals, kind="stable"):
        share = float(totals[nid]) / total
        if len(out) >= max_kernels or (out and share < min_share):
            break
        nid = int(nid)
        short = shorts[nid]
        same_short = seq_short == short
        positions = np.nonzero(seq_ids[same_short] == nid)[0]  # positions among launches matching `short`
        n = int(counts[nid])
        w = warmup_launches(n)
        skip = int(positions[w]) if len(positions) > w else 0
        others = int(same_short.sum()) - n
        if n == 1:
            reason = "it launched once, so that launch is profiled, warm-up included"
        else:
            reason = (
                f"skips its first {w} of {n} launches as warm-up (lazy module loading, allocator growth, "
                "autotuning, clocks ramping up)"
            )
        if others:
            reason += (
                f"; ncu matches by the function name `{short}`, which {others} launches of other "
                f"instantiations share, so --launch-skip {skip} counts those too"
            )
        out.append(
            KernelTarget(
                name=k.names[nid],
                short_name=short,
                gpu_time_ns=int(totals[nid]),
                share=share,
                launches=n,
                launch_skip=skip,
                skip_reason=reason,
                cooperative=_is_cooperative(timeline, np.nonzero(ids == nid)[0]),
            )
        )
    return out


def matching_launches(timeline: Timeline, regex: str) -> tuple[int, bool]:
    """Launches whose function name matches ``regex`` (``re.search``, as ncu's ``regex:``), and whether any was cooperative."""
    import numpy as np

    k = timeline.kernels
    if len(k) == 0:
        return 0, False
    pat = re.compile(regex[len("regex:") :] if regex.startswith("regex:") else regex)
    shorts = k.short_names or k.names
    hit = np.array([bool(pat.search(s)) for s in shorts] or [False])
    rows = np.nonzero(hit[np.asarray(k.name_id)])[0] if len(shorts) else np.array([], dtype=np.int64)
    return len(rows), _is_cooperative(timeline, rows)


# ----------------------------------------------------------------------------- capture steps
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


def _unlink(*paths: str) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


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


def _has_magic(path: str, magic: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


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
        raise NoKernelProfiledError(
            f"no kernel launch matched `-k {kernel_filter}`{skip}: ncu ran the program and profiled nothing, so "
            "it wrote no report. ncu matches the function name without namespace, template arguments or "
            "parameters (e.g. `vectorized_elementwise_kernel`, not `void at::native::...<...>(...)`); "
            "`regex:` searches anywhere in that name."
            f"{names}{range_hint} Fix the --kernel pattern or lower --launch-skip; for a program that starts "
            "child processes, check they are profiled (ncu --target-processes all)."
        )
    if run.returncode != 0:
        errors = run.lines_with("==ERROR==")
        raise CaptureError(
            f"ncu failed (exit status {run.returncode}): {' | '.join(errors[-3:])}. See the ncu output above; "
            "for a cooperative or persistent kernel, pass --replay-mode application."
        )
    return rep


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


# ----------------------------------------------------------------------------- loading and diagnosing
def _ensure_ncu_report() -> None:
    """Make NVIDIA's ``ncu_report`` importable from the Nsight Compute install when pip has not installed it.

    Nsight Compute ships the module in ``<nsight-compute>/extras/python``; the device machine has
    ncu but not the ``ncu-report`` wheel.
    """
    try:
        import ncu_report  # noqa: F401
    except ImportError:
        pass
    else:
        return
    roots: list[str] = []
    ncu = shutil.which("ncu")
    if ncu:
        real = Path(ncu).resolve()
        roots += [str(real.parent / "extras" / "python"), str(real.parent.parent / "extras" / "python")]
    roots += sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)
    roots += sorted(glob.glob("/usr/local/cuda*/nsight-compute-*/extras/python"), reverse=True)
    for r in roots:
        if os.path.isfile(os.path.join(r, "ncu_report.py")) and r not in sys.path:
            sys.path.append(r)
            return


def load_timeline(sqlite: str) -> Timeline:
    from kprof.io import load
    from kprof.timeline_model import Timeline

    tl = load(sqlite)
    if not isinstance(tl, Timeline):  # pragma: no cover - the loader picks by extension
        raise CaptureError(f"{sqlite} did not load as a timeline")
    return tl


def diagnose_timeline(tl: Timeline) -> list[Diagnosis]:
    from kprof.api import diagnose

    return diagnose(tl)


_CHILD = "import sys; from kprof.capture import _diagnose_child; sys.exit(_diagnose_child(sys.argv[1:]))"
_NCU_REPORT_FROM = "kprof-ncu-report-module: "


def _diagnose_child(argv: Sequence[str]) -> int:
    """In the child process: diagnose ``argv[0]`` (an .ncu-rep) with the timeline ``argv[1]``; JSON on stdout."""
    from kprof.api import diagnose

    rep, tl = argv[0], (argv[1] if len(argv) > 1 and argv[1] else None)
    # ncu_report first: the copy in Nsight Compute 2025.3's extras/python segfaults (in get_version) when
    # it is loaded after pandas/pyarrow, which loading the timeline imports (measured on the H200 machine).
    try:
        _ensure_ncu_report()
        import ncu_report

        print(_NCU_REPORT_FROM + str(getattr(ncu_report, "__file__", "?")), file=sys.stderr, flush=True)
    except ImportError:
        pass
    try:
        diags = diagnose(rep, timeline=tl)
    except MissingToolError as exc:
        print(str(exc), file=sys.stderr)
        return 4
    except KprofError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    json.dump({"diagnoses": [d.to_dict() for d in diags]}, sys.stdout)
    return 0


def diagnose_kernel_report(rep: str, timeline: str | None) -> list[Diagnosis]:
    """The kernel diagnosis of ``rep``, with durations from the ``timeline`` file, run in a child process.

    NVIDIA's ``ncu_report`` is a native module: a crash inside it must not take the capture's other
    results with it. On the H200 machine the copy in Nsight Compute 2025.3's extras/python segfaulted
    when imported after the timeline was loaded in the same process (pandas/pyarrow already loaded); the
    child imports it first, and a crash that remains is reported, not fatal.
    """
    import signal

    pkg_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONFAULTHANDLER"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, rep, timeline or ""],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode == 0:
        return [Diagnosis.from_dict(d) for d in json.loads(proc.stdout)["diagnoses"]]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    module = next((ln[len(_NCU_REPORT_FROM) :] for ln in lines if ln.startswith(_NCU_REPORT_FROM)), None)
    lines = [ln for ln in lines if not ln.startswith(_NCU_REPORT_FROM)]
    if proc.returncode == 4:
        raise MissingToolError(lines[-1] if lines else "the ncu_report module is missing")
    if proc.returncode == 3:
        raise CaptureError(lines[-1] if lines else f"{rep} could not be diagnosed")
    if proc.returncode < 0:
        try:
            why = signal.Signals(-proc.returncode).name
        except ValueError:
            why = f"signal {-proc.returncode}"
        where = f"NVIDIA's ncu_report module ({module})" if module else "the kernel diagnosis"
        where_frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")][:2]
        frames = f" (innermost: {' / '.join(where_frames)})" if where_frames else ""
        raise CaptureError(
            f"the kernel diagnosis of {rep} crashed ({why}) in {where}{frames}. The report itself is kept; "
            "diagnose it where `pip install ncu-report` works: `kprof diagnose " + shlex.quote(rep) + "`."
        )
    raise CaptureError(
        f"the kernel diagnosis of {rep} failed (exit status {proc.returncode}): "
        f"{' | '.join(lines[-3:]) or 'no output'}; rerun with KPROF_DEBUG=1 and report it"
    )


WHY_NO_NCU: dict[Bottleneck | None, str] = {
    Bottleneck.HOST_LAUNCH_BOUND: "the GPU sits idle between many short launches: the time goes to launching "
    "them (Python and framework dispatch), not to running them. ncu times each kernel alone and would show "
    "healthy kernels; cut the launch count first (fusion, foreach ops, CUDA graphs, torch.compile).",
    Bottleneck.HOST_COMPUTE_BOUND: "the GPU waits while the host computes something else (data loading, "
    "preprocessing, Python logic) with no CUDA call in the gaps. ncu would profile kernels that are not the "
    "problem; move that host work off the critical path first (DataLoader workers, preprocessing on the GPU).",
    Bottleneck.SYNC_BOUND: "the host keeps blocking on the GPU (.item(), synchronize, device-to-host copies in "
    "the loop), and the GPU idles while the host catches up. ncu replays kernels one at a time and cannot see "
    "those waits; remove the syncs first.",
    Bottleneck.TRANSFER_BOUND: "copies, not kernels, take the time (or stall because they are pageable or not "
    "overlapped). ncu profiles kernels, not copies; fix the transfers first (pinned memory, fewer and larger "
    "copies, overlap on a side stream).",
    Bottleneck.STARTUP_BOUND: "one-time start-up (module loading, library handles, allocator growth) dominates "
    "this capture, so its kernels are not the steady state. Capture the steady state: bracket the loop with "
    "cudaProfilerStart/Stop (torch.cuda.profiler.start()/stop()) and pass --cuda-profiler-range, or run more "
    "iterations.",
    Bottleneck.COMMUNICATION_BOUND: "exposed communication, not computation, takes the time; ncu would profile "
    "the compute kernels that are not the problem.",
    Bottleneck.STRAGGLER: "one rank is slower than the others; find out why on that rank before profiling kernels.",
    Bottleneck.LOAD_IMBALANCE: "the ranks do unequal work; balance it before profiling kernels.",
}


def why_no_ncu(d: Diagnosis) -> str:
    """Why a kernel profiler would not help, for a timeline verdict other than ``gpu_bound``."""
    if d.bottleneck in WHY_NO_NCU:
        return f"ncu not run: {WHY_NO_NCU[d.bottleneck]}"
    step = f" Next step: {d.next_step}" if d.next_step else ""
    return (
        f"ncu not run: the timeline verdict is {d.bottleneck.value if d.bottleneck else 'undetermined'} "
        f"({d.verdict.value}), not gpu_bound, so the time is not known to be in kernels and profiling one "
        f"would not say what limits the program.{step}"
    )


# ----------------------------------------------------------------------------- the session
@dataclass(kw_only=True)
class Session:
    """What one ``kprof profile`` run produced.

    With ``stream`` set (text output), each diagnosis is printed as soon as it exists, so the
    timeline's verdict is on screen while ncu still runs and survives a later failure.
    """

    diagnoses: list[Diagnosis] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    report: str | None = None
    report_command: str | None = None
    status: int = EXIT_OK
    stream: IO[str] | None = None
    printed: int = 0

    def add(self, diags: Iterable[Diagnosis]) -> None:
        self.diagnoses.extend(diags)
        if self.stream is None:
            return
        for d in self.diagnoses[self.printed :]:
            self.stream.write(("\n" if self.printed else "") + d.to_text().rstrip() + "\n")
            self.printed += 1
        self.stream.flush()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileOptions:
    """The ``kprof profile`` options (see :func:`add_arguments`)."""

    tool: str
    cmd: tuple[str, ...]
    output: str | None = None
    kernel: str | None = None
    launch_skip: int | None = None
    launch_count: int = 1
    section_set: str = NCU_DEFAULT_SET
    replay_mode: str | None = None
    timeline: str | None = None
    top: int = TOP_KERNELS_MAX
    cuda_profiler_range: bool = False
    graph_nodes: bool = False
    no_counters: bool = False
    binary: str | None = None
    report: bool = True
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ProfileOptions:
        cmd = list(getattr(args, "cmd", None) or [])
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        return cls(
            tool=args.tool,
            cmd=tuple(cmd),
            output=getattr(args, "output", None),
            kernel=getattr(args, "kernel", None),
            launch_skip=getattr(args, "launch_skip", None),
            launch_count=getattr(args, "launch_count", 1) or 1,
            section_set=getattr(args, "section_set", None) or NCU_DEFAULT_SET,
            replay_mode=getattr(args, "replay_mode", None),
            timeline=getattr(args, "timeline", None),
            top=getattr(args, "top", None) or TOP_KERNELS_MAX,
            cuda_profiler_range=bool(getattr(args, "cuda_profiler_range", False)),
            graph_nodes=bool(getattr(args, "graph_nodes", False)),
            no_counters=bool(getattr(args, "no_counters", False)),
            binary=getattr(args, "binary", None),
            report=not getattr(args, "no_report", False),
            json=bool(getattr(args, "json", False)),
        )

    @property
    def base(self) -> str:
        return _strip_ext(self.output) if self.output else default_output(self.cmd)


def _check_cmd(opts: ProfileOptions) -> None:
    if not opts.cmd:
        what = "BINARY" if opts.tool == "sass" else "-- CMD ..."
        raise CaptureError(
            f"`kprof profile {opts.tool}` needs {what}: e.g. `kprof profile {opts.tool} "
            f"{'./app' if opts.tool == 'sass' else '-- python3 train.py'}`"
        )
    if opts.tool == "sass":
        return
    prog = opts.cmd[0]
    if os.sep not in prog and shutil.which(prog) is None:
        raise CaptureError(
            f"the command to profile, `{prog}`, is not on PATH (nor a path to a program); "
            "check the spelling, or give its path (./app)"
        )
    if os.sep in prog and not os.path.exists(prog):
        raise CaptureError(f"the command to profile, `{prog}`, does not exist")


def _elf_program(cmd: Sequence[str]) -> str | None:
    """``cmd[0]`` when it is an ELF executable (which holds its kernels), else None."""
    if not cmd:
        return None
    prog = cmd[0] if os.sep in cmd[0] else shutil.which(cmd[0])
    if not prog or not os.path.isfile(prog):
        return None
    if re.match(r"^(python|pypy|bash|sh|env)", Path(prog).name):
        return None
    return prog if _has_magic(prog, b"\x7fELF") else None


def _static(opts: ProfileOptions, session: Session, *, kernel_regex: str | None, why: str) -> None:
    """The static SASS reading of ``--binary`` (or of the profiled program when it is an executable)."""
    import dataclasses

    from kprof.capture_sass import diagnose_sass, disassemble

    binary = opts.binary or _elf_program(opts.cmd)
    if binary is None:
        raise CaptureError(
            f"{why}: the static SASS reading needs the binary that holds the kernels. Pass --binary PATH (the "
            "executable, a shared library, or a .cubin; CuPy keeps compiled kernels in ~/.cupy/kernel_cache/*.cubin)."
        )
    _say(f"no counters ({why}): reading the SASS of {binary} statically")
    functions, argv = disassemble(binary)
    session.commands.append(shlex.join(argv))
    diags = diagnose_sass(functions, kernel_regex=kernel_regex, binary=binary, cmd=opts.cmd)
    if not diags and kernel_regex and not opts.kernel:  # the timeline's kernels live elsewhere (a library)
        session.notes.append(
            f"The timeline's top kernels ({kernel_regex.replace(chr(92), '')}) are not in {binary}; "
            "all of its kernels were read instead."
        )
        diags = diagnose_sass(functions, binary=binary, cmd=opts.cmd)
    if not diags:
        names = ", ".join(f.name for f in functions[:8]) + (" ..." if len(functions) > 8 else "")
        raise KprofInputError(
            binary, f"no kernel matches --kernel {kernel_regex!r} (its kernels: {names or 'none'})"
        )
    session.add(d if d.file else dataclasses.replace(d, file=binary) for d in diags)
    session.notes.append(
        "The kernel findings above come from static SASS (what the compiler emitted, not what ran): their "
        "confidence is capped, and each names the ncu capture that would settle it."
    )


def _targets_regex(targets: Sequence[KernelTarget]) -> str:
    return "|".join(re.escape(t.short_name) for t in targets)


def run_nsys_stage(opts: ProfileOptions, session: Session) -> tuple[Timeline, list[Diagnosis]]:
    rep, sqlite = capture_nsys(
        opts.cmd,
        opts.base,
        cuda_profiler_range=opts.cuda_profiler_range,
        graph_nodes=opts.graph_nodes,
        log=session.commands,
    )
    session.files += [rep, sqlite]
    _say(f"timeline: diagnosing {sqlite}")
    tl = load_timeline(sqlite)
    diags = diagnose_timeline(tl)
    session.add(diags)
    return tl, diags


def run_ncu_targets(
    opts: ProfileOptions, session: Session, tl: Timeline, targets: Sequence[KernelTarget]
) -> None:
    names = [t.short_name for t in top_kernels(tl, max_kernels=8, min_share=0.0)]
    for i, t in enumerate(targets, 1):
        replay = opts.replay_mode or t.replay_mode
        coop = (
            " Its launches are cooperative (grid-wide sync): kernel replay would deadlock or corrupt them, so "
            "ncu replays the whole application instead (--replay-mode application; slower: one run per pass)."
            if t.cooperative and replay == "application"
            else ""
        )
        _say(
            f"ncu [{i}/{len(targets)}]: `{t.short_name}` holds {100 * t.share:.1f}% of the GPU time "
            f"({t.launches} launches); profiling one launch: --launch-skip {t.launch_skip} {t.skip_reason}.{coop}"
        )
        base = f"{opts.base}.k{i}.{re.sub(r'[^A-Za-z0-9_.-]+', '_', t.short_name)[:60]}"
        rep = capture_ncu(
            opts.cmd,
            base,
            kernel_filter=t.kernel_filter,
            launch_skip=t.launch_skip,
            launch_count=opts.launch_count,
            section_set=opts.section_set,
            replay_mode=replay,
            profile_from_start=not opts.cuda_profiler_range,
            timeline_names=names,
            log=session.commands,
        )
        session.files.append(rep)
        _diagnose_report(rep, tl.source, session)


def _diagnose_report(rep: str, timeline: str | None, session: Session) -> None:
    _say(f"kernel: diagnosing {rep}" + (" (durations from the timeline, not from ncu)" if timeline else ""))
    try:
        session.add(diagnose_kernel_report(rep, timeline))
    except (MissingToolError, CaptureError) as exc:
        _say(f"warning: {exc}")
        session.notes.append(f"{rep} was captured but not diagnosed here: {exc}")
        session.status = 2


def _report(opts: ProfileOptions, session: Session) -> None:
    inputs = [f for f in session.files if f.endswith((".sqlite", ".ncu-rep"))]
    if not inputs:
        return
    out = opts.base + ".html"
    command = shlex.join(["kprof", "report", *inputs, "-o", out])
    session.report_command = command
    if not opts.report:
        return
    import importlib.util

    missing = [m for m in ("papermill", "nbconvert", "nbformat") if importlib.util.find_spec(m) is None]
    if missing:
        session.notes.append(
            f"The HTML report needs {', '.join(missing)}, not installed here (`pip install kprof` brings them); "
            "build it where they are, with the command below."
        )
        return
    if importlib.util.find_spec("kprof.report") is None:
        session.notes.append(
            "The HTML report is not available in this version of kprof; the command below builds it where it is."
        )
        return
    from kprof.report import build_report

    _say(f"report: {command}")
    try:
        build_report(inputs, out, show_code=False)  # what `kprof report INPUTS -o OUT` runs
        rc = 0
    except (KprofError, ImportError) as exc:
        session.notes.append(
            f"The HTML report could not be built here ({exc}); the command below builds it elsewhere."
        )
        return
    if rc == 0 and os.path.isfile(out):
        session.report = out
        session.files.append(out)
    else:
        session.notes.append(f"The HTML report failed (exit status {rc}); the command below retries it.")


def profile_nsys(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile nsys``: capture, export, diagnose the timeline (plus static SASS with --no-counters)."""
    _check_cmd(opts)
    tl, diags = run_nsys_stage(opts, session)
    if opts.no_counters and diags and diags[0].bottleneck is Bottleneck.GPU_BOUND:
        targets = top_kernels(tl, max_kernels=opts.top)
        regex = opts.kernel or (_targets_regex(targets) if targets else None)
        _static(opts, session, kernel_regex=regex, why="--no-counters")
    elif opts.no_counters and opts.binary:
        _static(opts, session, kernel_regex=opts.kernel, why="--no-counters")
    _report(opts, session)
    return session


def profile_ncu(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile ncu --kernel REGEX``: one ncu capture, then its diagnosis."""
    _check_cmd(opts)
    if not opts.kernel:
        raise CaptureError(
            "`kprof profile ncu` needs --kernel REGEX (the kernel's function name, or a pattern "
            "in it); `kprof profile auto -- CMD` finds the kernels that matter from a timeline"
        )
    if opts.no_counters:
        _static(opts, session, kernel_regex=opts.kernel, why="--no-counters")
        return session
    tl = None
    skip = opts.launch_skip
    replay = opts.replay_mode
    if opts.timeline:
        tl = _load_any(opts.timeline)
        n, coop = matching_launches(tl, opts.kernel)
        if n == 0:
            _say(f"warning: no kernel in {opts.timeline} matches {opts.kernel!r}")
        if coop and replay is None:
            replay = "application"
            _say(
                "the timeline shows cooperative launches of this kernel: using --replay-mode application "
                "(kernel replay breaks grid-wide synchronization)"
            )
        if skip is None and n:
            skip = warmup_launches(n)
            _say(
                f"--launch-skip {skip}: skipping the first {skip} of the {n} matching launches in the timeline (warm-up)"
            )
    if skip is None:
        skip = 0
        _say(
            "profiling the first matching launch (warm-up included); pass --launch-skip N or --timeline X.sqlite "
            "to skip past warm-up"
        )
    rep = capture_ncu(
        opts.cmd,
        opts.base,
        kernel_filter=regex_filter(opts.kernel),
        launch_skip=skip,
        launch_count=opts.launch_count,
        section_set=opts.section_set,
        replay_mode=replay,
        profile_from_start=not opts.cuda_profiler_range,
        log=session.commands,
    )
    session.files.append(rep)
    _diagnose_report(rep, opts.timeline if tl is not None else None, session)
    _report(opts, session)
    return session


def _load_any(path: str) -> Timeline:
    from kprof.io import load
    from kprof.timeline_model import Timeline

    tl = load(path)
    if not isinstance(tl, Timeline):
        raise CaptureError(
            f"--timeline {path} is not a timeline (an nsys .sqlite/.nsys-rep or a PyTorch trace)"
        )
    return tl


def profile_auto(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile auto``: nsys, the timeline verdict, ncu on the top kernels if gpu_bound, the report."""
    _check_cmd(opts)
    _say("[1/3] timeline (nsys)")
    tl, diags = run_nsys_stage(opts, session)
    first = diags[0] if diags else None
    if first is None or first.bottleneck is not Bottleneck.GPU_BOUND:
        why = why_no_ncu(first) if first is not None else "ncu not run: the timeline gave no verdict."
        _say(why)
        session.notes.append(why)
        _report(opts, session)
        return session
    targets = top_kernels(tl, max_kernels=opts.top)
    if opts.kernel:
        pat = re.compile(opts.kernel)
        targets = [t for t in top_kernels(tl, max_kernels=64, min_share=0.0) if pat.search(t.short_name)][
            : opts.top
        ]
    if not targets:
        msg = (
            "ncu not run: the timeline verdict is gpu_bound but it holds no individual kernel (the GPU time is "
            "in CUDA graphs traced whole): rerun with --graph-nodes to trace the kernels inside them."
        )
        if opts.kernel:
            msg = f"ncu not run: no kernel in the timeline matches --kernel {opts.kernel!r}."
        _say(msg)
        session.notes.append(msg)
        _report(opts, session)
        return session
    shown = ", ".join(f"`{t.short_name}` {100 * t.share:.0f}%" for t in targets)
    _say(f"[2/3] the time is in kernels: profiling {len(targets)} with ncu ({shown})")
    if opts.no_counters:
        _static(opts, session, kernel_regex=_targets_regex(targets), why="--no-counters")
    else:
        try:
            run_ncu_targets(opts, session, tl, targets)
        except CounterPermissionError as exc:
            if not (opts.binary or _elf_program(opts.cmd)):
                raise
            _say(f"warning: {exc}")
            session.notes.append(str(exc))
            _static(opts, session, kernel_regex=_targets_regex(targets), why="ncu has no counter access")
    _say("[3/3] report")
    _report(opts, session)
    return session


def profile_sass(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile sass BINARY...``: static SASS reading only."""
    from kprof.capture_sass import static_analysis

    _check_cmd(opts)
    for binary in opts.cmd:
        diags, argv = static_analysis(binary, kernel_regex=opts.kernel)
        session.commands.append(shlex.join(argv))
        session.add(diags)
    return session


RUNNERS: dict[str, Callable[[ProfileOptions, Session], Session]] = {
    "nsys": profile_nsys,
    "ncu": profile_ncu,
    "auto": profile_auto,
    "sass": profile_sass,
}


# ----------------------------------------------------------------------------- CLI
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
            t.add_argument(
                "--launch-count", type=int, default=1, metavar="N", help="launches to profile (default 1)"
            )
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
        if tool == "auto":
            t.add_argument(
                "--top",
                type=int,
                default=TOP_KERNELS_MAX,
                metavar="N",
                help=f"profile at most N kernels (default {TOP_KERNELS_MAX})",
            )
        if tool != "sass":
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
