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
   So by default reports are read in reader processes (:mod:`~kprof.io.ncu_reader`), kept for the
   next load. The first read of a one-launch report reads its SASS listing in one (ncu_report's
   disassembler, 0.24-0.48 s to start per process) while a child forked from the other reads its
   metrics; that first reader then reads small reports alone, its disassembler started. Long reports
   are read by forked children, a chunk of launches each, two at a time, handed over launch by
   launch (:func:`stream_ncu_report`). A crash or a hang of a reader is a
   :class:`~kprof.errors.KprofInputError`, and the next load starts a new one.
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
    PendingSass,
    _Listing,
    _load_action,
    read_listing,
)
from kprof.io.ncu_reader import (
    _MODULE_MARK,
    ISOLATE_ENV,
    LaunchStream,
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
    p, _ = _checked(path)
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


def stream_ncu_report(path: str | os.PathLike[str]) -> LaunchStream:
    """The launches of an ``.ncu-rep`` report as they are read, in the order they arrive.

    What :func:`load_ncu_report` reads (the same checks, the same cache), without holding every launch:
    a long report's launches are read by forked readers in parallel and handed over one at a time
    (``total`` says how many come). Iterate once; ``notes`` and ``tool_version`` are complete after.
    """
    p, structure = _checked(path)
    from kprof.io import ncu_cache

    entry = ncu_cache.entry_path(p)
    cached = ncu_cache.get(entry, p)
    if cached is not None or not _isolated():
        printed: list[str] = []
        prof = cached if cached is not None else _load_in_process(p, printed)
        if cached is None and not printed:
            ncu_cache.put(entry, prof)
        return LaunchStream(
            source=p,
            total=len(prof.launches),
            launches=iter(prof.launches),
            tool_version=prof.tool_version,
            notes=list(prof.notes),
        )
    said: list[str] = []
    stream = _reader().stream(p, WORKER_IDLE_S, structure.results, said)
    stream.readers.append(stream.launches)
    stream.launches = _kept(stream, stream.launches, ncu_cache.writer(entry), said)
    return stream


def _kept(
    stream: LaunchStream, launches: Iterator[KernelLaunch], writer: Any, said: list[str]
) -> Iterator[KernelLaunch]:
    """``launches``, each also written to the cache entry (kept when all were read and ncu_report
    printed nothing)."""
    ok = False
    try:
        for k in launches:
            if writer is not None:
                writer.add(k)
            yield k
        ok = True
    finally:
        if writer is not None:
            writer.finish(ok and not said, stream.tool_version, stream.notes)


def _checked(path: str | os.PathLike[str]) -> tuple[str, ReportStructure]:
    """The checks before ncu_report sees the file: readable, an ncu report, ncu_report installed, its
    structure whole (layer 1)."""
    from kprof.io.files import check_readable_file

    p = os.fspath(check_readable_file(path))
    _check_magic(p)
    if not _ncu_report_available():
        raise _missing_module()
    return p, check_report_structure(p)


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
    ctx = _open_report(ncu_report, p)
    version = capture_version(p)  # the ncu that wrote the report, not this ncu_report module

    launches: list[KernelLaunch] = []
    notes: list[str] = []
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] = {}  # one SASS walk per function
    units: dict[str, str] = {}  # one unit() per metric name
    for ri, ai in _actions(ctx):
        action = ctx.range_by_idx(ri).action_by_idx(ai)
        launch = _load_action(p, action, len(launches), ncu_report, notes, listings, units)
        launches.append(launch)
    if not launches:
        raise KprofInputError(p, "the report holds no kernel launches (0 actions): it is empty or truncated")
    return KernelProfile(
        source=p, launches=tuple(launches), format="ncu-rep", tool_version=version, notes=tuple(notes)
    )


WORKER_IDLE_S = 300.0
"""The reader process exits after this long without a request (the next load starts a new one)."""


def _serve(idle_s: float, prestart: str = "") -> int:
    """A reader process: serve one request per line on stdin, answer with one JSON line per event on stdout.

    Requests (JSON, with ``"op"``; results are pickled to the request's ``out`` or, for launches, into
    its ``dir``):

    - ``read``: the whole report, read here (:func:`_load_in_process`): the process that has already
      started ncu_report's disassembler reads small reports alone.
    - ``listing``: launch 0's SASS listing only (:func:`~kprof.io.ncu_action.read_listing`), read while
      another process reads its metrics.
    - ``open``: load the report and answer its number of launches, reading none.
    - ``chunk``: read launches ``first`` .. ``first + count - 1`` of the opened report in a child forked
      from this process (``split``: without their SASS, which a ``listing`` reads). The child answers
      one line per launch as it is written; this process answers how the child ended.

    A process that serves ``open`` and ``chunk`` never starts ncu_report's SASS disassembler itself: it
    starts a thread, and a child forked after that hangs in its first disassembly (measured,
    ncu-report 2026.3.1). Each forked child exits after its launches, which returns the memory that
    ncu_report keeps for every action it hands out (16 MB per launch of the atomic_contention sample,
    held until the process ends). ``prestart`` is a request to begin with, sent by the command line as it
    starts (:func:`prestart`). Everything else printed (native code included) goes to stderr.
    """
    import select

    os.environ[ISOLATE_ENV] = "0"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    answers = os.dup(1)
    os.dup2(2, 1)
    with contextlib.suppress(ImportError):
        import ncu_report

        print(_MODULE_MARK + str(getattr(ncu_report, "__file__", "?")), file=sys.stderr, flush=True)
    state = _Served(answers)
    if prestart:
        state.early(json.loads(prestart))
    fd, pending = sys.stdin.fileno(), b""  # read unbuffered: select() sees only what is unread
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            state.handle(json.loads(line))
        busy = bool(state.children)  # reap them often; leave only after idle_s with none
        ready, _, _ = select.select([fd], [], [], 0.02 if busy else idle_s)
        state.reap()
        if not ready:
            if busy:
                continue
            return 0  # idle
        data = os.read(fd, 1 << 16)
        if not data:
            state.wait_children()
            return 0  # the parent has gone
        pending += data


def _answer(fd: int, **event: Any) -> None:
    """One JSON line on the answer pipe, in one write (atomic below PIPE_BUF: forked children share it)."""
    os.write(fd, (json.dumps(event) + "\n").encode())


def _result(req_out: str, result: tuple[str, Any]) -> None:
    with open(req_out, "wb") as f:
        _dump(result, f)


def _failure(exc: BaseException) -> tuple[str, Any]:
    if isinstance(exc, KprofInputError):
        return ("input", exc.reason)
    if isinstance(exc, MissingToolError):
        return ("missing", str(exc))
    return ("internal", f"{type(exc).__name__}: {' '.join(str(exc).split())}")


def _report_sig(p: str) -> tuple[int, int]:
    st = os.stat(p)
    return (st.st_size, st.st_mtime_ns)


class _Served:
    """What one reader process holds between requests: the opened report, the forked children."""

    def __init__(self, answers: int) -> None:
        self.answers = answers
        self.opened: tuple[str, tuple[int, int], Any, list[tuple[int, int]]] | None = None
        self.children: dict[int, int] = {}  # pid -> first launch of its chunk
        self.early_listing: tuple[str, tuple[int, int], tuple[str, Any]] | None = None

    def early(self, req: dict[str, Any]) -> None:
        """The command line's first report, before it asks: open it, or read its SASS listing."""
        p = req["path"]
        try:  # what the command line checks before ncu_report may see the file (layer 1)
            _check_magic(p)
            structure = check_report_structure(p)
            sig = _report_sig(p)
        except (KprofInputError, OSError):
            return
        if req["op"] == "open":
            with contextlib.suppress(Exception):
                self._open(p)
        elif req["op"] == "listing" and structure.results == 1:
            self.early_listing = (p, sig, self._listing(p))

    def handle(self, req: dict[str, Any]) -> None:
        op = req.get("op", "read")
        if op == "read":
            try:
                result: tuple[str, Any] = ("ok", _load_in_process(req["path"]))
            except Exception as exc:
                result = _failure(exc)
            _result(req["out"], result)
            _answer(self.answers, op="read")
        elif op == "listing":
            p = req["path"]
            pre, self.early_listing = self.early_listing, None
            try:
                same = pre is not None and pre[0] == p and pre[1] == _report_sig(p)
            except OSError:
                same = False
            result = pre[2] if same and pre is not None else self._listing(p)
            _result(req["out"], result)
            _answer(self.answers, op="listing")
        elif op == "open":
            try:
                n = self._open(req["path"])
            except Exception as exc:
                _result(req["out"], _failure(exc))
                _answer(self.answers, op="open", error=True)
                return
            _answer(self.answers, op="open", launches=n)
        elif op == "chunk":
            self._fork_chunk(req)

    def _listing(self, p: str) -> tuple[str, Any]:
        complaints: list[str] = []
        try:
            with _native_stderr(complaints):
                ncu_report = _import_ncu_report()
                ctx = _open_report(ncu_report, p)
                action = _actions(ctx)
                if not action:
                    return ("ok", None)
                ri, ai = action[0]
                return ("ok", read_listing(ctx.range_by_idx(ri).action_by_idx(ai), ncu_report))
        except KprofInputError as exc:
            return _failure(_with_complaints(exc, complaints))
        except Exception as exc:
            return _failure(exc)

    def _open(self, p: str) -> int:
        sig = _report_sig(p)
        if self.opened is not None and self.opened[0] == p and self.opened[1] == sig:
            return len(self.opened[3])
        self.opened = None
        complaints: list[str] = []
        try:
            with _native_stderr(complaints):
                ctx = _open_report(_import_ncu_report(), p)
                actions = _actions(ctx)
        except KprofInputError as exc:
            raise _with_complaints(exc, complaints) from None
        if not actions:
            raise KprofInputError(
                p, "the report holds no kernel launches (0 actions): it is empty or truncated"
            )
        self.opened = (p, sig, ctx, actions)
        return len(actions)

    def _fork_chunk(self, req: dict[str, Any]) -> None:
        first = int(req["first"])
        opened = self.opened
        if opened is None or opened[0] != req["path"]:
            _answer(self.answers, op="chunk", first=first, died=None)
            return
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: read the launches, answer, leave without running this process's exit
            code = 1
            try:
                from kprof.lifetime import die_with_parent

                die_with_parent(os.getppid())
                code = _read_chunk(opened[0], opened[2], opened[3], req, self.answers)
            finally:
                with contextlib.suppress(Exception):
                    sys.stderr.flush()
                os._exit(code)
        self.children[pid] = first

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            first = self.children.pop(pid, None)
            rc = os.waitstatus_to_exitcode(status)
            if first is not None and rc != 0:
                _answer(self.answers, op="chunk", first=first, died=rc)

    def wait_children(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.children.clear()


def _open_report(ncu_report: Any, p: str) -> Any:
    try:
        ctx = ncu_report.load_report(p)
    except Exception as exc:  # the native module raises assorted types
        raise KprofInputError(p, f"ncu_report could not read the report: {exc}") from exc
    if ctx is None or ctx.num_ranges() == 0:
        raise KprofInputError(
            p, "the report holds no profiled ranges: it is truncated, corrupt or not written by ncu"
        )
    return ctx


def _actions(ctx: Any) -> list[tuple[int, int]]:
    """(range, action) of every launch, in report order (reading none)."""
    return [(ri, ai) for ri in range(ctx.num_ranges()) for ai in range(ctx.range_by_idx(ri).num_actions())]


def _read_chunk(p: str, ctx: Any, actions: list[tuple[int, int]], req: dict[str, Any], answers: int) -> int:
    """In a forked child: launches ``first`` .. of the opened report, each pickled to ``dir/launch-I``
    (with its notes and, ``split``, what joins its SASS) and announced; the first bad one ends the chunk."""
    first, count, folder, split = int(req["first"]), int(req["count"]), req["dir"], bool(req.get("split"))
    ncu_report = _import_ncu_report()
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] = {}
    units: dict[str, str] = {}
    for i in range(first, min(first + count, len(actions))):
        notes: list[str] = []
        pending: list[PendingSass] | None = [] if split else None
        complaints: list[str] = []
        try:
            with _native_stderr(complaints):
                ri, ai = actions[i]
                action = ctx.range_by_idx(ri).action_by_idx(ai)
                launch = _load_action(p, action, i, ncu_report, notes, listings, units, pending)
            result: tuple[str, Any] = ("ok", (launch, tuple(notes), pending[0] if pending else None))
        except KprofInputError as exc:
            result = _failure(_with_complaints(exc, complaints))
        except Exception as exc:
            result = _failure(exc)
        out = os.path.join(folder, f"launch-{i}.pickle")
        _result(out, result)
        _answer(answers, op="launch", i=i, file=out, ok=result[0] == "ok")
        if result[0] != "ok":
            return 0
    _answer(answers, op="chunk", first=first, end=True)
    return 0


_READER: _Reader | None = None

_READER_LOCK = threading.Lock()


def _reader() -> _Reader:
    global _READER
    with _READER_LOCK:
        if _READER is None or _READER.owner != os.getpid():  # a forked child gets its own
            _READER = _Reader()
            atexit.register(_READER.stop)
        return _READER


def _load_in_child(p: str, printed: list[str] | None = None, expected: int | None = None) -> KernelProfile:
    if expected is None:
        expected = check_report_structure(p).results
    return _reader().stream(p, WORKER_IDLE_S, expected, printed).profile()


def prestart(argv: list[str]) -> None:
    """Start the reader processes on the first ``.ncu-rep`` that ``kprof diagnose ARGS`` names, before the
    command line imports the rest of kprof: they read while it imports (ncu_report's disassembler start,
    0.24-0.48 s, is most of a one-launch report's first read). Nothing when the report is in the cache,
    is not a plain readable report, or the reader would run in this process."""
    if not argv or argv[0] != "diagnose" or not _isolated():
        return
    path = next((a for a in argv[1:] if a.lower().endswith(".ncu-rep") and not a.startswith("-")), None)
    if path is None or not os.path.isfile(path):
        return
    try:
        _check_magic(path)
        structure = check_report_structure(path)
        from kprof.io import ncu_cache

        if (entry := ncu_cache.entry_path(path)) is not None and entry.exists():
            return
    except (KprofInputError, OSError):
        return
    if not _ncu_report_available():
        return
    with contextlib.suppress(Exception):
        _reader().prestart(path, WORKER_IDLE_S, structure.results == 1)


__all__ = [
    "INSTALL_HINT",
    "ISOLATE_ENV",
    "NCU_REP_MAGIC",
    "LaunchStream",
    "ReportStructure",
    "check_report_structure",
    "load_ncu_report",
    "stream_ncu_report",
]
