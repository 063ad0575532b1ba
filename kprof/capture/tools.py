"""Running nsys and ncu: finding them, running them from an argument list with their output streamed,
and the errors a capture raises (each a short paragraph that ends with the fix)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO

from kprof.errors import KprofError, MissingToolError

OUTPUT_TAIL_LINES = 4000

SQLITE_MAGIC = b"SQLite format 3\x00"

ERR_NVGPUCTRPERM = "ERR_NVGPUCTRPERM"

NO_KERNELS_PROFILED = "No kernels were profiled"

APP_RETURNED_ERROR = "The application returned an error code"


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


def _unlink(*paths: str) -> None:
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p)


def _has_magic(path: str, magic: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False
