"""Load an Nsight Compute report (``.ncu-rep``) through NVIDIA's ``ncu_report`` module.

``ncu_report`` (the ``ncu-report`` wheel) is imported only when a report is loaded;
without it :class:`~kprof.errors.MissingToolError` says how to install it. For a
reader with no native module, export the report with ``ncu --csv --page raw`` and
use :func:`kprof.io.ncu_csv.load_ncu_csv`.

Bad files, in three layers:

1. **Structure, checked here before the native module sees the file**
   (:func:`check_report_structure`). A report is ``NVR\\0``, a little-endian u32 size and a
   protobuf file header, then blocks to the end of the file: each a u32 size, a protobuf
   block header (field 1: number of source entries, 2: number of result entries, 5: payload
   size) and a payload of u32-size-prefixed entries. Read from the real files of ncu 2023.1
   and 2025.3, whose blocks tile the file exactly. A truncated report, random bytes behind an
   ``NVR`` signature, or a damaged size field fail here with the byte offset, in milliseconds.
2. **A crash of the native module is contained.** ``ncu_report`` segfaults on some damage
   the structure cannot show: 64 bytes smashed in the section table of the cubin that a
   report embeds crash ``IAction.sass_by_pc`` (measured with ncu-report 2026.3.1), and the
   copy in Nsight Compute 2025.3's ``extras/python`` crashed when imported after pyarrow.
   So by default reports are read in a reader process, one per process that loads them and
   kept for the next load, so ncu_report's start-up (about 1 s, mostly its disassembler) is
   paid once, as in this process: loading the 14 H200 samples took 0.9 s for the first and
   0.12 s for each next one, against 1.0 s and 0.16 s in this process. A crash or a hang of
   the reader is a :class:`~kprof.errors.KprofInputError`, and the next load starts a new one.
   ``KPROF_NCU_ISOLATE=0`` reads in this process (a crash then ends it); on a system without
   POSIX pipes it always does.
3. **What ``ncu_report`` returns is checked** (docs/inputs.md, "Measured pitfalls"): it does not
   raise on bad input; 0 ranges, an action whose name is None or one without metrics mean a
   truncated or corrupt report, never "no kernels". Its protobuf parse errors, which it
   prints on the process's stderr, are kept off the terminal and quoted in the reason.

Modules: :mod:`~kprof.io.ncu_structure` (layer 1 and the capture's version),
:mod:`~kprof.io.ncu_reader` (the reader process), :mod:`~kprof.io.ncu_action` (one launch); this
module loads a report, here or through the reader.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from kprof.errors import KprofInputError, MissingToolError
from kprof.io.ncu_action import (
    MAX_SASS_LINES as MAX_SASS_LINES,
)
from kprof.io.ncu_action import (
    SASS_BYTES_PER_INSTRUCTION as SASS_BYTES_PER_INSTRUCTION,
)
from kprof.io.ncu_action import (
    SOL_METRICS as SOL_METRICS,
)
from kprof.io.ncu_action import (
    _Listing,
    _load_action,
)
from kprof.io.ncu_reader import (
    _MODULE_MARK,
    ISOLATE_ENV,
    _dump,
    _Reader,
)
from kprof.io.ncu_reader import (
    LOAD_TIMEOUT_S as LOAD_TIMEOUT_S,
)
from kprof.io.ncu_reader import (
    _sass_line as _sass_line,
)
from kprof.io.ncu_structure import (
    NCU_REP_MAGIC,
    ReportStructure,
    _check_magic,
    capture_version,
    check_report_structure,
)
from kprof.io.ncu_structure import (
    _protobuf_ints as _protobuf_ints,
)
from kprof.kernel_model import KernelLaunch, KernelProfile

INSTALL_HINT = "pip install ncu-report"

# What ncu_report's protobuf library prints for an unreadable message, e.g.
# "E0000 00:00:1796027031.530593 8399 message_lite.cc:195] Can't parse message of type
# "NV.Profiler.Messages.FileHeader" because it is missing required fields: ..."
_PROTOBUF_LOG = re.compile(r"^[EWIF]\d{4} [\d:. ]+\d+ \S+\.cc:\d+\] (?P<msg>.*)$")

_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"

_PARSE_ERROR = re.compile(r"Can't parse message of type \"(?P<type>[^\"]+)\"")


def _import_ncu_report() -> Any:
    try:
        import ncu_report
    except ImportError as exc:
        raise _missing_module() from exc
    return ncu_report


def _ncu_report_available() -> bool:
    """Whether ``import ncu_report`` would find a module (without importing it here)."""
    if "ncu_report" in sys.modules:
        return sys.modules["ncu_report"] is not None
    try:
        return importlib.util.find_spec("ncu_report") is not None
    except (ImportError, ValueError):
        return False


def _missing_module() -> MissingToolError:
    return MissingToolError(
        "reading .ncu-rep files needs NVIDIA's ncu_report module: "
        f"`{INSTALL_HINT}` (or export the report with `ncu --import X.ncu-rep --csv --page raw > X.csv` "
        "and load the CSV)"
    )


def _isolated() -> bool:
    if os.name != "posix":  # the reader process waits on its pipe with select()
        return False
    return os.environ.get(ISOLATE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def load_ncu_report(path: str | os.PathLike[str]) -> KernelProfile:
    """Load every profiled launch of an ``.ncu-rep`` report.

    The file's structure is checked first (:func:`check_report_structure`); then NVIDIA's
    ``ncu_report`` reads it, in a child process unless ``KPROF_NCU_ISOLATE=0``, so that a crash
    of the native module on a corrupt file is reported, not fatal.

    Parameters
    ----------
    path
        An Nsight Compute report written by ``ncu -o`` (any version ``ncu_report`` reads).

    Returns
    -------
    KernelProfile
        One :class:`~kprof.kernel_model.KernelLaunch` per profiled kernel, in report order,
        with every metric and its unit, ncu's rule results, NVTX state, launch
        configuration, device attributes and the SASS (with source lines when imported).

    Raises
    ------
    KprofInputError
        The file is not an ncu report, is truncated or corrupt (``ncu_report`` crashed on it,
        or returned no launches or unnamed ones), or holds no launches.
    MissingToolError
        ``ncu_report`` is not installed (``pip install ncu-report``).

    Examples
    --------
    >>> prof = load_ncu_report("small_grid.ncu-rep")  # gunzip -k data/samples/ncu/small_grid.ncu-rep.gz  # doctest: +SKIP
    >>> prof[0].value("launch__waves_per_multiprocessor")  # doctest: +SKIP
    0.06
    """
    from kprof.io.files import check_readable_file

    p = os.fspath(check_readable_file(path))
    _check_magic(p)
    if not _ncu_report_available():
        raise _missing_module()
    check_report_structure(p)
    from kprof.io import ncu_cache

    entry = ncu_cache.entry_path(p)
    cached = ncu_cache.get(entry, p)
    if cached is not None:
        return cached
    printed: list[str] = []
    prof = _load_in_child(p, printed) if _isolated() else _load_in_process(p, printed)
    if not printed:  # what ncu_report said on this read would not be said again on a cached one
        ncu_cache.put(entry, prof)
    return prof


@contextlib.contextmanager
def _native_stderr(complaints: list[str], printed: list[str] | None = None) -> Iterator[None]:
    """Keep what native code prints on stderr (file descriptor 2) off the terminal while it runs.

    ncu_report's protobuf library logs unreadable messages there; those go to ``complaints``.
    Anything else is written back to stderr afterwards (and to ``printed``).
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (a daemon): nothing to keep off
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            other = []
            for line in text.splitlines():
                m = _PROTOBUF_LOG.match(line)
                if m:
                    complaints.append(m["msg"])
                elif line.strip() and line.strip() != _ABSL_PREAMBLE:
                    other.append(line)
            if other:
                print("\n".join(other), file=sys.stderr, flush=True)
                if printed is not None:
                    printed.extend(other)


def _with_complaints(exc: KprofInputError, complaints: list[str]) -> KprofInputError:
    types = sorted({m["type"].rsplit(".", 1)[-1] for c in complaints if (m := _PARSE_ERROR.search(c))})
    if not types:
        return exc
    return KprofInputError(exc.path, f"{exc.reason} (ncu_report could not parse its {', '.join(types)})")


def _load_in_process(p: str, printed: list[str] | None = None) -> KernelProfile:
    complaints: list[str] = []
    try:
        with _native_stderr(complaints, printed):
            return _read_report(p)
    except KprofInputError as exc:
        raise _with_complaints(exc, complaints) from None


def _read_report(p: str) -> KernelProfile:
    ncu_report = _import_ncu_report()
    try:
        ctx = ncu_report.load_report(p)
    except Exception as exc:  # the native module raises assorted types
        raise KprofInputError(p, f"ncu_report could not read the report: {exc}") from exc
    if ctx is None or ctx.num_ranges() == 0:
        raise KprofInputError(
            p, "the report holds no profiled ranges: it is truncated, corrupt or not written by ncu"
        )
    version = capture_version(p)  # the ncu that wrote the report, not this ncu_report module

    launches: list[KernelLaunch] = []
    notes: list[str] = []
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] = {}  # one SASS walk per function
    units: dict[str, str] = {}  # one unit() per metric name
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            action = rng.action_by_idx(ai)
            launch = _load_action(p, action, len(launches), ncu_report, notes, listings, units)
            launches.append(launch)
    if not launches:
        raise KprofInputError(p, "the report holds no kernel launches (0 actions): it is empty or truncated")
    return KernelProfile(
        source=p, launches=tuple(launches), format="ncu-rep", tool_version=version, notes=tuple(notes)
    )


WORKER_IDLE_S = 300.0
"""The reader process exits after this long without a request (the next load starts a new one)."""


def _serve(idle_s: float) -> int:
    """The reader process: read one report per request line on stdin, answer ``done`` on stdout.

    A request is ``{"path": ..., "out": ...}``; the result ``(kind, value)`` is pickled to ``out``.
    Everything else this process prints (native code included) goes to stderr, so stdout
    carries only the answers.
    """
    import select

    os.environ[ISOLATE_ENV] = "0"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    with contextlib.suppress(ImportError):
        import ncu_report

        print(_MODULE_MARK + str(getattr(ncu_report, "__file__", "?")), file=sys.stderr, flush=True)
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], idle_s)
        line = sys.stdin.readline() if ready else ""
        if not line:
            return 0  # idle, or the parent has gone
        req = json.loads(line)
        result: tuple[str, Any]
        try:
            result = ("ok", _load_in_process(req["path"]))
        except KprofInputError as exc:
            result = ("input", exc.reason)
        except MissingToolError as exc:
            result = ("missing", str(exc))
        except Exception as exc:  # a bug, not bad input: the parent reports it as an internal error
            result = ("internal", f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        with open(req["out"], "wb") as f:
            _dump(result, f)
        answers.write("done\n")
        answers.flush()


_READER: _Reader | None = None

_READER_LOCK = threading.Lock()


def _reader() -> _Reader:
    global _READER
    with _READER_LOCK:
        if _READER is None or _READER.owner != os.getpid():  # a forked child gets its own
            _READER = _Reader()
            atexit.register(_READER.stop)
        return _READER


def _load_in_child(p: str, printed: list[str] | None = None) -> KernelProfile:
    return _reader().load(p, WORKER_IDLE_S, printed)


__all__ = [
    "INSTALL_HINT",
    "ISOLATE_ENV",
    "NCU_REP_MAGIC",
    "ReportStructure",
    "check_report_structure",
    "load_ncu_report",
]
