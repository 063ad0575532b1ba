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
"""

from __future__ import annotations

import atexit
import contextlib
import copyreg
import importlib.util
import json
import math
import os
import pickle
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import IO, Any

from kprof.errors import KprofError, KprofInputError, MissingToolError, printable
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric, MetricValue, RuleResult, SassLine
from kprof.lifetime import owned_tempdir, remove_stale_temporaries

NCU_REP_MAGIC = b"NVR\x00"
"""First four bytes of every ``.ncu-rep`` (seen in reports of ncu 2023.1 and 2025.3)."""

INSTALL_HINT = "pip install ncu-report"

# SpeedOfLight's two headline metrics; a launch without them cannot be placed on the roofline.
SOL_METRICS = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
)
SASS_BYTES_PER_INSTRUCTION = 16  # every SASS instruction is 128 bits since Volta (sm_70)
MAX_SASS_LINES = 500_000  # a guard against walking off a function in a corrupt report

# Metric names are identifiers separated by '__', '.', ':' (e.g. "breakdown:sm__throughput...").
# ncu 2023.1 stored a bogus one literally named "regex:all\.(sum|...)$" when a --metrics regex was
# passed wrongly; such names are skipped (and noted), they are not metrics.
_METRIC_NAME = re.compile(r"^[A-Za-z0-9_@:.\-]+$")

ISOLATE_ENV = "KPROF_NCU_ISOLATE"
"""``0`` reads reports in this process; anything else (the default) reads them in a child process."""
LOAD_TIMEOUT_S = 900.0
"""A child still reading one report after this long is stopped (ncu_report hung on the file)."""
_MODULE_MARK = "kprof-ncu-report-module: "
# What ncu_report's protobuf library prints for an unreadable message, e.g.
# "E0000 00:00:1796027031.530593 8399 message_lite.cc:195] Can't parse message of type
# "NV.Profiler.Messages.FileHeader" because it is missing required fields: ..."
_PROTOBUF_LOG = re.compile(r"^[EWIF]\d{4} [\d:. ]+\d+ \S+\.cc:\d+\] (?P<msg>.*)$")
_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
_PARSE_ERROR = re.compile(r"Can't parse message of type \"(?P<type>[^\"]+)\"")

_MSG_TYPES = {0: "", 1: "ok", 2: "warning", 3: "optimization", 4: "error"}
_SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}


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


def _check_magic(path: str) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(len(NCU_REP_MAGIC))
    except OSError as exc:
        raise KprofInputError(path, f"cannot read: {exc.strerror}") from exc
    if head != NCU_REP_MAGIC:
        raise _not_a_report(path, head)


def _not_a_report(path: str, head: bytes) -> KprofInputError:
    if head and NCU_REP_MAGIC.startswith(head):
        return KprofInputError(
            path,
            f"the report is truncated and holds no profiled ranges: the file holds only {len(head)} bytes",
        )
    return KprofInputError(
        path, "not an Nsight Compute report (the file does not start with ncu's 'NVR' signature)"
    )


# --------------------------------------------------------------------------- structure


@dataclass(frozen=True, slots=True)
class ReportStructure:
    """What :func:`check_report_structure` read: the container's blocks and their entries."""

    size: int
    """File size, bytes."""
    blocks: int
    sources: int
    """Source entries (the profiled binaries, with their SASS)."""
    results: int
    """Result entries: one per profiled range (launch)."""


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def _protobuf_ints(buf: bytes) -> dict[int, int]:
    """The integer (varint) fields of one protobuf message; ValueError unless it is well formed."""
    out: dict[int, int] = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        if wire == 0:
            out[field], i = _varint(buf, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint(buf, i)
            i += n
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(buf):
            raise ValueError("field runs past the message")
    return out


def _read_exact(f: IO[bytes], n: int) -> bytes:
    data = f.read(n)
    return data if len(data) == n else b""


def check_report_structure(path: str | os.PathLike[str]) -> ReportStructure:
    """Check an ``.ncu-rep`` file's container framing before ``ncu_report`` reads it.

    Reads only the headers (seeking over payloads), so it costs milliseconds even for a large
    report. It catches truncation and damaged framing; damage inside a payload (a flipped bit
    in a metric value or in the embedded cubin) is invisible here.

    Raises
    ------
    KprofInputError
        Not an ncu report, truncated, or corrupt; the reason gives the byte offset.

    Examples
    --------
    >>> check_report_structure("data/samples/ncu/small_grid.ncu-rep")  # doctest: +SKIP
    ReportStructure(size=1411817, blocks=10, sources=1, results=1)
    """
    p = os.fspath(path)
    try:
        size = os.path.getsize(p)
        with open(p, "rb") as f:
            return _walk_blocks(p, f, size)
    except OSError as exc:
        raise KprofInputError(p, f"cannot read: {exc.strerror}") from exc


def _walk_blocks(p: str, f: IO[bytes], size: int) -> ReportStructure:
    blocks = sources = results = 0

    def bad(what: str, *, truncated: bool = False) -> KprofInputError:
        kind = "truncated" if truncated else "corrupt"
        where = (
            " and holds no profiled ranges"
            if results == 0
            else f" after {results} complete profiled range{'s' if results != 1 else ''}"
        )
        again = "copy it again (an interrupted copy or download?)" if truncated else "copy it again"
        return KprofInputError(
            p, f"the report is {kind}{where}: {what} (file size {size:,} bytes); {again} or profile again"
        )

    head = f.read(len(NCU_REP_MAGIC))
    if head != NCU_REP_MAGIC:
        raise _not_a_report(p, head)
    raw = _read_exact(f, 4)
    if not raw:
        raise bad("it ends inside the file header", truncated=True)
    (n,) = struct.unpack("<I", raw)
    pos = 8
    if pos + n > size:
        raise bad(f"the file header at byte 8 declares {n:,} bytes, past the end", truncated=True)
    try:
        _protobuf_ints(_read_exact(f, n))
    except ValueError:
        raise bad("the file header at byte 8 is not readable") from None
    pos += n
    while pos < size:
        start = pos
        raw = _read_exact(f, 4)
        if not raw:
            raise bad(f"it ends inside the size of block {blocks} at byte {start:,}", truncated=True)
        (n,) = struct.unpack("<I", raw)
        pos += 4
        if n == 0 or pos + n > size:
            truncated = 0 < n <= 1 << 24  # a plausible header size: the file was cut, not damaged
            raise bad(
                f"block {blocks} at byte {start:,} declares a {n:,}-byte header"
                + (", past the end" if n else ""),
                truncated=truncated,
            )
        try:
            fields = _protobuf_ints(_read_exact(f, n))
        except ValueError:
            raise bad(f"the header of block {blocks} at byte {start:,} is not readable") from None
        pos += n
        n_src, n_res, payload = fields.get(1, 0), fields.get(2, 0), fields.get(5, 0)
        end = pos + payload
        if n_src + n_res > payload // 4:
            raise bad(
                f"the header of block {blocks} at byte {start:,} counts more entries than its payload holds"
            )
        if end > size:
            raise bad(
                f"block {blocks} at byte {start:,} declares a {payload:,}-byte payload; "
                f"the file ends {size - pos:,} bytes into it",
                truncated=payload <= 1 << 40,
            )
        for k in range(n_src + n_res):
            f.seek(pos)
            raw = _read_exact(f, 4)
            if not raw or pos + 4 > end:
                raise bad(f"entry {k} of block {blocks} lies past the block's payload")
            (m,) = struct.unpack("<I", raw)
            pos += 4 + m
            if pos > end:
                raise bad(
                    f"entry {k} of block {blocks} at byte {pos - 4 - m:,} runs past the block's payload"
                )
        if pos != end:
            raise bad(f"the entries of block {blocks} at byte {start:,} do not fill its declared payload")
        f.seek(end)
        blocks += 1
        sources += n_src
        results += n_res
    if results == 0:
        raise KprofInputError(
            p,
            "the report holds no profiled ranges (its blocks hold no results): it is truncated, "
            "corrupt or not written by ncu",
        )
    return ReportStructure(size=size, blocks=blocks, sources=sources, results=results)


# --------------------------------------------------------------------------- loading


def _isolated() -> bool:
    if os.name != "posix":  # the reader process waits on its pipe with select()
        return False
    return os.environ.get(ISOLATE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


_TARGET_KEY = b"Nsight Compute Target"


def capture_version(path: str | os.PathLike[str]) -> str | None:
    """The version of the Nsight Compute that wrote the report (``Nsight Compute 2025.3.1.0 (build 36398880)``).

    ncu records its session's properties as key/value strings (protobuf fields 1 and 2 of a
    small message) near the end of the report; the key ``Nsight Compute Target`` holds its
    version. ``ncu_report.get_version()`` is the version of the reading module instead, which
    says nothing about the capture. Returns None when the key is not in the file.
    """
    import mmap

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            i = m.rfind(b"\x0a" + bytes([len(_TARGET_KEY)]) + _TARGET_KEY + b"\x12")
            if i < 0:
                return None
            j = i + 2 + len(_TARGET_KEY) + 1
            n, shift = 0, 0  # the value's length, a protobuf varint
            while j < len(m) and shift < 28:
                b = m[j]
                j += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            raw = m[j : j + min(n, 200)]
    except (OSError, ValueError):
        return None
    text = printable(" ".join(raw.decode("utf-8", "replace").split()))
    text = text.replace(" (public-release)", "")
    return f"Nsight Compute {text}" if text else None


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
    >>> prof = load_ncu_report("data/samples/small_grid.ncu-rep")  # doctest: +SKIP
    >>> prof[0].value("launch__waves_per_multiprocessor")  # doctest: +SKIP
    0.06
    """
    from kprof.io.files import check_readable_file

    p = os.fspath(check_readable_file(path))
    _check_magic(p)
    if not _ncu_report_available():
        raise _missing_module()
    check_report_structure(p)
    if _isolated():
        return _load_in_child(p)
    return _load_in_process(p)


@contextlib.contextmanager
def _native_stderr(complaints: list[str]) -> Iterator[None]:
    """Keep what native code prints on stderr (file descriptor 2) off the terminal while it runs.

    ncu_report's protobuf library logs unreadable messages there; those go to ``complaints``.
    Anything else is written back to stderr afterwards.
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


def _with_complaints(exc: KprofInputError, complaints: list[str]) -> KprofInputError:
    types = sorted({m["type"].rsplit(".", 1)[-1] for c in complaints if (m := _PARSE_ERROR.search(c))})
    if not types:
        return exc
    return KprofInputError(exc.path, f"{exc.reason} (ncu_report could not parse its {', '.join(types)})")


def _load_in_process(p: str) -> KernelProfile:
    complaints: list[str] = []
    try:
        with _native_stderr(complaints):
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
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            action = rng.action_by_idx(ai)
            launch = _load_action(p, action, len(launches), ncu_report, notes, listings)
            launches.append(launch)
    if not launches:
        raise KprofInputError(p, "the report holds no kernel launches (0 actions): it is empty or truncated")
    return KernelProfile(
        source=p, launches=tuple(launches), format="ncu-rep", tool_version=version, notes=tuple(notes)
    )


# --------------------------------------------------------------------------- the child process

_WORKER = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from kprof.lifetime import die_with_parent; die_with_parent(int(sys.argv[3])); "
    "from kprof.io.ncu import _serve; sys.exit(_serve(float(sys.argv[2])))"
)
WORKER_IDLE_S = 300.0
"""The reader process exits after this long without a request (the next load starts a new one)."""


def _frozen(d: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(d)


def _sass_line(
    pc: int, text: str, file: str | None, line: int | None, counters: dict[str, float]
) -> SassLine:
    """Rebuild a pickled :class:`SassLine` (``counters`` is the unpickled dict, owned by this line alone):
    what ``SassLine.__init__`` and its ``__post_init__`` store, without their per-object overhead, which was
    0.6 s of 150,000 lines. ``tests/io/test_ncu.py`` checks that the rebuilt lines equal the originals."""
    s = _new_object(SassLine)
    _set_slot(s, "pc", pc)
    _set_slot(s, "text", text)
    _set_slot(s, "file", file)
    _set_slot(s, "line", line)
    _set_slot(s, "counters", MappingProxyType(counters))
    return s


_new_object = object.__new__
_set_slot = object.__setattr__


def _dump(obj: object, f: IO[bytes]) -> None:
    """Pickle ``obj``; the model's read-only mappings travel as dicts and come back read-only.

    SASS lines and metrics (a report holds about a thousand of each per launch) travel as the arguments
    of their constructors: the default for a slotted dataclass (``__getstate__`` / ``__setstate__`` over
    ``dataclasses.fields``) took 2.1 s of a 156-launch report's 5.9 s load."""
    pk = pickle.Pickler(f, protocol=pickle.HIGHEST_PROTOCOL)
    table = copyreg.dispatch_table.copy()
    table[MappingProxyType] = lambda m: (_frozen, (dict(m),))
    table[SassLine] = lambda s: (_sass_line, (s.pc, s.text, s.file, s.line, dict(s.counters)))
    table[Metric] = lambda m: (Metric, (m.value, m.unit))
    pk.dispatch_table = table
    pk.dump(obj)


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


class _Reader:
    """A child process that reads reports for this one: started on first use, restarted after a crash.

    One process serves every load, so ncu_report's one-time start-up (about 1 s, mostly its
    SASS disassembler) is paid once, as it would be in this process.
    """

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] | None = None

    def _start(self, p: str) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env[ISOLATE_ENV] = "0"
        env.setdefault("PYTHONFAULTHANDLER", "1")  # a crash prints the Python frames it happened in
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process it logs
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WORKER,
                    json.dumps([str(x) for x in sys.path]),
                    str(WORKER_IDLE_S),
                    str(os.getpid()),  # it dies with this process (Linux), however this one ends
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                env=env,
            )
        except OSError as exc:
            self.stop()
            raise KprofError(
                f"{p}: cannot start the Python process that reads .ncu-rep reports ({exc})"
            ) from exc
        return self.proc

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin:
                    proc.stdin.close()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            with contextlib.suppress(OSError):
                if proc.stdout:
                    proc.stdout.close()
        if self.log is not None:
            self.log.close()
            self.log = None

    def _stderr(self, start: int = 0) -> list[str]:
        if self.log is None:
            return []
        self.log.seek(start)
        return self.log.read().decode("utf-8", "replace").splitlines()

    def load(self, p: str) -> KernelProfile:
        remove_stale_temporaries()  # what killed runs left (once per process)
        with self.lock, owned_tempdir("kprof-ncu-") as tmp:
            out = os.path.join(tmp, "result.pickle")
            for attempt in (1, 2):
                if self.proc is None or self.proc.poll() is not None:
                    self.stop()
                    self._start(p)
                proc = self.proc
                assert proc is not None and self.log is not None
                start = self.log.seek(0, os.SEEK_END)
                try:
                    answered = self._ask(proc, p, out)
                except BaseException:
                    self.stop()  # interrupted mid-request: the process's state is unknown
                    raise
                if answered:
                    break
                if proc.returncode != 0 or attempt == 2:
                    lines = self._stderr()
                    self.stop()
                    raise _child_failure(p, proc.returncode, lines)
                self.stop()  # it had just left on its idle timeout: ask a fresh one
            said = [ln for ln in self._stderr(start) if ln.strip() and not ln.startswith(_MODULE_MARK)]
            if said:
                print("\n".join(said), file=sys.stderr, flush=True)
            with open(out, "rb") as f:
                kind, value = pickle.load(f)  # written just now by our own child
        if kind == "ok":
            assert isinstance(value, KernelProfile)
            return value
        if kind == "input":
            raise KprofInputError(p, value)
        if kind == "missing":
            raise MissingToolError(value)
        raise RuntimeError(f"reading {p} with ncu_report failed: {value}")

    def _ask(self, proc: subprocess.Popen[bytes], p: str, out: str) -> bool:
        """Send one request; True when answered, False when the process ended without answering."""
        import selectors

        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps({"path": p, "out": out}) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            proc.wait()
            return False
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=LOAD_TIMEOUT_S):
                proc.kill()
                proc.wait()
                self.stop()
                raise KprofInputError(
                    p,
                    f"NVIDIA's ncu_report module was still reading the report after {LOAD_TIMEOUT_S:.0f} s "
                    "and was stopped: the file is corrupt or too large for it",
                )
        line = proc.stdout.readline()
        if line.strip() == b"done":
            return True
        proc.wait()
        return False


_READER: _Reader | None = None
_READER_LOCK = threading.Lock()


def _reader() -> _Reader:
    global _READER
    with _READER_LOCK:
        if _READER is None or _READER.owner != os.getpid():  # a forked child gets its own
            _READER = _Reader()
            atexit.register(_READER.stop)
        return _READER


def _load_in_child(p: str) -> KernelProfile:
    return _reader().load(p)


def _child_failure(p: str, rc: int | None, stderr: list[str]) -> Exception:
    module = next((ln[len(_MODULE_MARK) :] for ln in stderr if ln.startswith(_MODULE_MARK)), None)
    if rc is not None and rc < 0:
        try:
            why = signal.Signals(-rc).name
        except ValueError:
            why = f"signal {-rc}"
        where = f"NVIDIA's ncu_report module ({module})" if module else "NVIDIA's ncu_report module"
        csv = os.path.splitext(p)[0] + ".csv"
        return KprofInputError(
            p,
            f"crashed ({why}) in {where} while it read the report: the file is damaged inside (its "
            "structure is intact) or this ncu_report cannot read it. Copy it again, or, where Nsight "
            f"Compute is installed, export it (`ncu --import {_shq(p)} --csv --page raw > {_shq(csv)}`) "
            f"and run `kprof diagnose {_shq(csv)}`",
        )
    last = [ln for ln in stderr if ln.strip() and not ln.startswith(_MODULE_MARK)][-3:]
    return RuntimeError(
        f"the process reading {p} with ncu_report exited with status {rc}"
        + (f": {' | '.join(last)}" if last else "")
    )


def _shq(s: str) -> str:
    import shlex

    return shlex.quote(s)


# --------------------------------------------------------------------------- one action


def _load_action(
    path: str,
    action: Any,
    index: int,
    ncu_report: Any,
    notes: list[str],
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] | None = None,
) -> KernelLaunch:
    name = action.name()
    if name is None:
        raise KprofInputError(
            path,
            f"launch {index} has no kernel name: the report is truncated or incomplete "
            "(re-copy it, or profile again with `ncu --set full -o NAME ...`)",
        )
    names = list(action.metric_names())
    if not names:
        raise KprofInputError(path, f"launch {index} ({name}) holds no metrics: the report is incomplete")

    metrics: dict[str, Metric] = {}
    device_attributes: dict[str, MetricValue] = {}
    instanced: dict[str, Any] = {}
    skipped: list[str] = []
    for mname in names:
        if not _METRIC_NAME.match(mname):
            skipped.append(mname)
            continue
        m = action.metric_by_name(mname)
        if m is None:
            continue
        try:
            n_inst = m.num_instances()
        except Exception:
            n_inst = 0
        if n_inst > 0 and m.has_correlation_ids():
            instanced[mname] = m
        value = _scalar(m)
        if value is None:
            continue
        metrics[mname] = Metric(value, m.unit() or "")
        if mname.startswith("device__attribute_"):
            device_attributes[mname.removeprefix("device__attribute_")] = value
    if skipped:
        notes.append(
            f"launch {index} ({name}): skipped {len(skipped)} entries whose names are not metric names "
            f"(e.g. {skipped[0][:60]!r})"
        )

    if not any(m in metrics for m in SOL_METRICS) and not any(k.startswith("launch__") for k in metrics):
        # Seen in a real ncu 2023.1 report: one launch whose metrics are all NaN and whose rules failed
        # ("Metric launch__block_size not found"). The other launches are fine; keep it, say so, and let
        # the diagnosis be inconclusive with the command that profiles it again.
        notes.append(
            f"launch {index} ({name}): ncu recorded no SpeedOfLight values and no launch statistics "
            "(its profiling failed); it is diagnosed as inconclusive"
        )

    mangled = _safe_name(action, ncu_report.IAction.NameBase_MANGLED)
    sass = _load_sass(action, metrics, instanced, listings, mangled or name)
    return KernelLaunch(
        id=index,
        name=name,
        demangled_name=_safe_name(action, ncu_report.IAction.NameBase_DEMANGLED) or name,
        mangled_name=mangled,
        grid=_dim3(metrics, "launch__grid_dim_"),
        block=_dim3(metrics, "launch__block_dim_"),
        registers_per_thread=_int(metrics, "launch__registers_per_thread"),
        shared_mem_per_block=_shared_mem(metrics),
        device=_str(device_attributes.get("display_name")),
        compute_capability=_cc(device_attributes),
        device_attributes=device_attributes,
        nvtx=_nvtx(action),
        metrics=metrics,
        rules=_rules(action),
        sass=sass,
        source_files=_source_files(action, sass),
        sections=_sections(action),
    )


def _scalar(m: Any) -> MetricValue | None:
    try:
        v = m.value()
    except Exception:
        return None
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None  # ncu stores NaN for a metric it could not compute: that is missing, not a number
    if isinstance(v, int | float | str):
        return v
    return None


def _safe_name(action: Any, base: int) -> str | None:
    try:
        n = action.name(base)
    except Exception:
        return None
    return str(n) if n else None


def _int(metrics: Mapping[str, Metric], name: str) -> int | None:
    m = metrics.get(name)
    if m is None or isinstance(m.value, str):
        return None
    return int(m.value)


def _dim3(metrics: Mapping[str, Metric], prefix: str) -> tuple[int, int, int] | None:
    dims = [_int(metrics, prefix + c) for c in "xyz"]
    if any(d is None for d in dims):
        return None
    return (dims[0] or 0, dims[1] or 0, dims[2] or 0)


def _shared_mem(metrics: Mapping[str, Metric]) -> int | None:
    static = _int(metrics, "launch__shared_mem_per_block_static")
    dynamic = _int(metrics, "launch__shared_mem_per_block_dynamic")
    if static is None and dynamic is None:
        return None
    return (static or 0) + (dynamic or 0)


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _cc(attrs: Mapping[str, MetricValue]) -> str | None:
    major, minor = attrs.get("compute_capability_major"), attrs.get("compute_capability_minor")
    if major is None or minor is None:
        return None
    return f"{major}.{minor}"


def _nvtx(action: Any) -> tuple[str, ...]:
    try:
        state = action.nvtx_state()
    except Exception:
        return ()
    if state is None:
        return ()
    out: list[str] = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        if dom is None:
            continue
        dname = dom.name() or ""
        i = 0
        while True:
            r = dom.push_pop_range(i)
            if r is None:
                break
            rname = r.name() or ""
            out.append(f"{dname}:{rname}" if dname else rname)
            i += 1
        for rname in dom.start_end_ranges():
            out.append(f"{dname}:{rname}" if dname else rname)
    return tuple(out)


def _rules(action: Any) -> tuple[RuleResult, ...]:
    try:
        raw = action.rule_results_as_dicts()
    except Exception:
        return ()
    out: list[RuleResult] = []
    for d in raw:
        msg = d.get("rule_message") or {}
        sp = d.get("speedup_estimation") or {}
        speedup = sp.get("speedup") if isinstance(sp, dict) else None
        out.append(
            RuleResult(
                name=str(d.get("rule_identifier") or d.get("name") or ""),
                title=str(msg.get("title") or d.get("name") or ""),
                message=str(msg.get("message") or ""),
                section=str(d.get("section_identifier") or ""),
                speedup_estimate=float(speedup) if isinstance(speedup, int | float) else None,
                speedup_type=_SPEEDUP_TYPES.get(int(sp.get("type", 0)))
                if isinstance(sp, dict) and sp
                else None,
                kind=_MSG_TYPES.get(int(msg.get("type", 0) or 0), ""),
                focus_metrics=tuple(
                    str(f.get("name")) for f in d.get("focus_metrics") or () if f.get("name")
                ),
            )
        )
    return tuple(out)


def _source_files(action: Any, sass: tuple[SassLine, ...]) -> dict[str, str]:
    """Path -> text of the source files the SASS maps to (text ``""`` when the report did not embed it)."""
    wanted = {s.file for s in sass if s.file}
    if not wanted:
        return {}
    try:
        raw = action.source_files() or {}
    except Exception:
        raw = {}
    out = {f: "" for f in wanted}
    for f, text in raw.items():
        if f in out and isinstance(text, str):
            out[f] = text
    return out


def _sections(action: Any) -> tuple[str, ...]:
    try:
        return tuple(str(s.identifier()) for s in action.sections())
    except Exception:
        return ()


@dataclass(frozen=True, slots=True)
class _Listing:
    """One function's SASS as the loader read it: text and source line by PC, in address order."""

    text_by_pc: dict[int, str]
    source: dict[int, tuple[str | None, int | None]]


def _walk_listing(action: Any, starts: list[int]) -> dict[int, str]:
    """Walk the SASS from each entry PC, 16 bytes per instruction, to the first PC without SASS."""
    text_by_pc: dict[int, str] = {}
    for start in starts:
        pc = start
        for _ in range(MAX_SASS_LINES):
            s = action.sass_by_pc(pc)
            if not s:
                break
            text_by_pc[pc] = " ".join(s.split())
            pc += SASS_BYTES_PER_INSTRUCTION
    return text_by_pc


def _source_lines(action: Any, pcs: Iterator[int]) -> dict[int, tuple[str | None, int | None]]:
    out: dict[int, tuple[str | None, int | None]] = {}
    for pc in pcs:
        file = line = None
        try:
            info = action.source_info(pc)
        except Exception:
            info = None
        if info is not None:
            try:
                file = info.file_name() or None
                ln = info.line()
                line = int(ln) if ln else None
            except Exception:
                file = line = None
        out[pc] = (file, line)
    return out


def _listing(
    action: Any,
    starts: list[int],
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] | None,
    function: str | None,
) -> _Listing:
    """The function's listing, read once per report: later launches of the same function (same name, same
    entry PCs) reuse it. A 154-launch report of a dozen kernels walked the same SASS 154 times, 281,000
    ``sass_by_pc`` calls. A cached listing is reused only when the first instruction at each entry PC
    still reads the same (a module loaded at another's address would not)."""
    key = (function, tuple(starts))
    hit = listings.get(key) if listings is not None else None
    if hit is not None and all(
        " ".join((action.sass_by_pc(pc) or "").split()) == hit.text_by_pc.get(pc) for pc in starts
    ):
        return hit
    text_by_pc = _walk_listing(action, starts)
    listing = _Listing(text_by_pc, _source_lines(action, iter(sorted(text_by_pc))))
    if listings is not None and text_by_pc:
        listings[key] = listing
    return listing


def _load_sass(
    action: Any,
    metrics: Mapping[str, Metric],
    instanced: Mapping[str, Any],
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] | None = None,
    function: str | None = None,
) -> tuple[SassLine, ...]:
    """Walk the function's SASS from its entry PC, 16 bytes per instruction, and attach per-PC counters.

    ``listings`` caches each function's text and source lines for the report's other launches
    (:func:`_listing`); the per-PC counters are each launch's own."""
    fpcs = instanced.get("launch__function_pcs")
    starts: list[int] = []
    if fpcs is not None:
        for i in range(fpcs.num_instances()):
            try:
                starts.append(int(fpcs.value(i)))
            except Exception:
                continue
    if not starts:
        return ()
    listing = _listing(action, starts, listings, function)
    text_by_pc = listing.text_by_pc
    if not text_by_pc:
        return ()

    # Per-PC counters: instanced metrics whose correlation ids are PCs of this function.
    counters: dict[int, dict[str, float]] = {}
    for mname, m in instanced.items():
        if mname.startswith("launch__"):
            continue
        try:
            cids = m.correlation_ids()
            n = m.num_instances()
        except Exception:
            continue
        if cids is None or n == 0:
            continue
        first = _as_int(cids, 0)
        if first is None or first not in text_by_pc:
            continue
        for i in range(n):
            pci = _as_int(cids, i)
            if pci is None or pci not in text_by_pc:
                continue
            try:
                v = m.value(i)
            except Exception:
                continue
            if isinstance(v, int | float) and not isinstance(v, bool):
                counters.setdefault(pci, {})[mname] = float(v)

    lines: list[SassLine] = []
    for pc in sorted(text_by_pc):
        file, line = listing.source[pc]
        lines.append(
            SassLine(pc=pc, text=text_by_pc[pc], file=file, line=line, counters=counters.get(pc, {}))
        )
    return tuple(lines)


def _as_int(m: Any, i: int) -> int | None:
    try:
        v = m.value(i)
    except Exception:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


__all__ = [
    "INSTALL_HINT",
    "ISOLATE_ENV",
    "NCU_REP_MAGIC",
    "ReportStructure",
    "check_report_structure",
    "load_ncu_report",
]
