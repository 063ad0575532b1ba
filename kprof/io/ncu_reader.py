"""The reader process that reads ``.ncu-rep`` reports for this one (:class:`_Reader`), and what travels
between them: pickled results whose SASS lines and metrics are sent as their constructors' arguments
(see :mod:`kprof.io.ncu`, "Bad files", layer 2)."""

from __future__ import annotations

import contextlib
import copyreg
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import IO, Any

from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.io.ncu_action import join_sass
from kprof.io.ncu_structure import capture_version, check_report_structure
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric, SassLine
from kprof.lifetime import owned_tempdir, remove_stale_temporaries

ISOLATE_ENV = "KPROF_NCU_ISOLATE"
"""``0`` reads reports in this process; anything else (the default) reads them in a child process."""

LOAD_TIMEOUT_S = 900.0
"""A child still reading one report after this long is stopped (ncu_report hung on the file)."""

_MODULE_MARK = "kprof-ncu-report-module: "

_WORKER = (
    "import sys, json, importlib.util; sys.path[:] = json.loads(sys.argv[1]); "
    # the package without its __init__ (the library's API, 37 ms of imports): a reader needs kprof.io only
    "spec = importlib.util.find_spec('kprof'); sys.modules['kprof'] = importlib.util.module_from_spec(spec); "
    "from kprof.lifetime import die_with_parent; die_with_parent(int(sys.argv[3])); "
    "from kprof.io.ncu import _serve; sys.exit(_serve(float(sys.argv[2]), sys.argv[4]))"
)


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


WARM_READ_MAX = 8
"""A report of at most this many launches is read whole by a reader whose disassembler has started: cold
forked readers each pay its start (0.24-0.48 s), which about 8 launches' reads cover."""

LAUNCHES_PER_CHILD = 64
"""Launches one forked reader reads before it exits: ncu_report keeps every action it hands out until the
process ends (16 MB per launch of the atomic_contention sample, measured with ncu-report 2026.3.1), so a
child's memory is bounded by this, not by the report; each child pays the disassembler's start once."""

PARALLEL = 2
"""Forked readers at work at once (this machine's two cores: ncu_report reads in one thread)."""

RETIRE_AFTER = 64
"""A reader process that has read this many launches itself is replaced after its request (its memory)."""


class _Proc:
    """One reader process (``python -c _WORKER``: :func:`kprof.io.ncu._serve`) and its stderr log."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: IO[bytes] | None = None
        self.buf = b""
        self.warm = False  # it has read SASS: its disassembler has started
        self.launches = 0  # launches it read itself (its memory)

    def start(self, p: str, idle_s: float, prestart: str = "") -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env[ISOLATE_ENV] = "0"
        env.setdefault("PYTHONFAULTHANDLER", "1")  # a crash prints the Python frames it happened in
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process it logs
        self.buf, self.warm, self.launches = b"", False, 0
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _WORKER,
                    json.dumps([str(x) for x in sys.path]),
                    str(idle_s),
                    str(os.getpid()),  # it dies with this process (Linux), however this one ends
                    prestart,
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

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self, p: str, idle_s: float) -> None:
        if not self.alive():
            self.stop()
            self.start(p, idle_s)

    def send(self, req: dict[str, Any]) -> bool:
        """Send one request; False when the process has ended."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write((json.dumps(req) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            proc.wait()
            return False
        return True

    def line(self) -> dict[str, Any] | None:
        """The next complete answer line if one has been read (None: more must be read)."""
        if b"\n" in self.buf:
            ln, self.buf = self.buf.split(b"\n", 1)
            return dict(json.loads(ln))
        return None

    def fill(self) -> bool:
        """Read what the pipe holds; False at its end."""
        assert self.proc is not None and self.proc.stdout is not None
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def log_end(self) -> int:
        return self.log.seek(0, os.SEEK_END) if self.log is not None else 0

    def stderr(self, start: int = 0) -> list[str]:
        if self.log is None:
            return []
        self.log.seek(start)
        return self.log.read().decode("utf-8", "replace").splitlines()

    def returncode(self) -> int | None:
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

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

    def kill(self) -> None:
        """End it now (a request was abandoned: its answers must not reach the next one)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.proc.kill()
        self.stop()


@dataclass
class LaunchStream:
    """The launches of one report as they are read, in the order they arrive (not report order).

    ``total`` is known at once; ``notes`` (report order) and ``tool_version`` once the launches are
    all out. Iterate once."""

    source: str
    total: int
    launches: Iterator[KernelLaunch]
    tool_version: str | None = None
    notes: list[str] = field(default_factory=list)
    format: str = "ncu-rep"
    readers: list[Any] = field(default_factory=list)
    """The generators that ``launches`` draws on (closed by :meth:`close`)."""

    def __iter__(self) -> Iterator[KernelLaunch]:
        return self.launches

    def close(self) -> None:
        """Stop reading (what is still being read is abandoned, its readers stopped)."""
        for it in (self.launches, *reversed(self.readers)):
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def profile(self) -> KernelProfile:
        """All of it as one :class:`KernelProfile` (launches in report order)."""
        launches = sorted(self.launches, key=lambda k: k.id)
        return KernelProfile(
            source=self.source,
            launches=tuple(launches),
            format=self.format,
            tool_version=self.tool_version,
            notes=tuple(self.notes),
        )


@dataclass(frozen=True)
class _Failed:
    """A launch that could not be read: the first in report order is reported (``rank`` 0: the
    metrics' error, met before the SASS's in a read of one process)."""

    index: int
    rank: int
    error: Exception


def _error(p: str, kind: str, value: Any) -> Exception:
    if kind == "input":
        return KprofInputError(p, value)
    if kind == "missing":
        return MissingToolError(value)
    return RuntimeError(f"reading {p} with ncu_report failed: {value}")


def _load_result(path: str) -> tuple[str, Any]:
    with open(path, "rb") as f:
        kind, value = pickle.load(f)  # written just now by our own child
    with contextlib.suppress(OSError):
        os.unlink(path)
    return str(kind), value


class _Reader:
    """The reader processes of this one: started on first use (or as the command line starts, see
    :func:`prestart`), restarted after a crash.

    Two processes: ``warm`` reads whole reports (the first one's SASS listing while the other reads its
    metrics; after that, small reports alone: its disassembler, ncu_report's 0.24-0.48 s start, has
    started) and ``forks`` opens reports and forks a child per chunk of launches, two at a time
    (:func:`kprof.io.ncu._serve`).
    """

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self.warm = _Proc()
        self.forks = _Proc()

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The process that reads whole reports."""
        return self.warm.proc

    def stop(self) -> None:
        self.warm.stop()
        self.forks.stop()

    def prestart(self, p: str, idle_s: float, single: bool) -> None:
        """Start both processes on ``p`` now: one opens it, the other (``single``: a one-launch report)
        reads its SASS listing before it is asked."""
        with self.lock:
            if not self.forks.alive():
                self.forks.stop()
                self.forks.start(p, idle_s, json.dumps({"op": "open", "path": p}))
            if single and not self.warm.alive():  # a long report is read by forked children only
                self.warm.stop()
                self.warm.start(p, idle_s, json.dumps({"op": "listing", "path": p}))

    def load(self, p: str, idle_s: float, printed: list[str] | None = None) -> KernelProfile:
        """Read ``p`` in the reader processes (started when none runs; they leave after ``idle_s``
        without a request). What they printed while they read (passed on to stderr) is added to
        ``printed``."""
        return self.stream(p, idle_s, check_report_structure(p).results, printed).profile()

    def stream(self, p: str, idle_s: float, expected: int, printed: list[str] | None = None) -> LaunchStream:
        """The launches of ``p`` as they are read; ``expected`` (the report's result entries, from its
        structure) chooses how."""
        remove_stale_temporaries()  # what killed runs left (once per process)
        holder: dict[str, Any] = {}
        gen = self._launches(p, idle_s, expected, printed, holder)
        total = next(gen)
        assert isinstance(total, int)
        stream = LaunchStream(source=p, total=total, launches=_only_launches(gen), readers=[gen])
        holder["stream"] = stream
        return stream

    def _launches(
        self,
        p: str,
        idle_s: float,
        expected: int,
        printed: list[str] | None,
        holder: dict[str, Any],
    ) -> Iterator[int | KernelLaunch]:
        with self.lock, owned_tempdir("kprof-ncu-") as tmp:
            if self.warm.warm and self.warm.alive() and expected <= WARM_READ_MAX:
                marks = {self.warm: self.warm.log_end()}
                prof = self._read_whole(p, idle_s, str(tmp))
                self._said(marks, printed)
                yield len(prof.launches)
                holder["stream"].tool_version = prof.tool_version
                holder["stream"].notes.extend(prof.notes)
                yield from prof.launches
            else:
                yield from self._read_parts(p, idle_s, expected, str(tmp), printed, holder)
            for proc in (self.warm, self.forks):
                if proc.launches >= RETIRE_AFTER:
                    proc.stop()

    def _said(self, marks: dict[_Proc, int], printed: list[str] | None) -> None:
        said = [
            ln
            for proc, start in marks.items()
            for ln in proc.stderr(start)
            if ln.strip() and not ln.startswith(_MODULE_MARK)
        ]
        if said:
            print("\n".join(said), file=sys.stderr, flush=True)
            if printed is not None:
                printed.extend(said)

    def _read_whole(self, p: str, idle_s: float, tmp: str) -> KernelProfile:
        out = os.path.join(tmp, "result.pickle")
        proc = self.warm
        for attempt in (1, 2):
            proc.ensure(p, idle_s)
            try:
                answered = proc.send({"op": "read", "path": p, "out": out}) and self._answer(proc, p)
            except BaseException:
                proc.kill()  # interrupted mid-request: the process's state is unknown
                raise
            if answered is not None:
                break
            rc = proc.returncode()
            if rc != 0 or attempt == 2:
                lines = proc.stderr()
                proc.stop()
                raise _child_failure(p, rc, lines)
            proc.stop()  # it had just left on its idle timeout: ask a fresh one
        kind, value = _load_result(out)
        if kind != "ok":
            raise _error(p, kind, value)
        assert isinstance(value, KernelProfile)
        proc.warm = True
        proc.launches += len(value.launches)
        return value

    def _answer(self, proc: _Proc, p: str) -> dict[str, Any] | None:
        """The next answer of ``proc`` (None when it ended without one)."""
        return self._next(p, [proc])[1]

    def _open(self, p: str, idle_s: float, out: str) -> int:
        proc = self.forks
        for attempt in (1, 2):
            proc.ensure(p, idle_s)
            try:
                answer = self._answer(proc, p) if proc.send({"op": "open", "path": p, "out": out}) else None
            except BaseException:
                proc.kill()
                raise
            if answer is not None:
                if answer.get("error"):
                    kind, value = _load_result(out)
                    raise _error(p, kind, value)
                return int(answer["launches"])
            rc = proc.returncode()
            if rc != 0 or attempt == 2:
                lines = proc.stderr()
                proc.stop()
                raise _child_failure(p, rc, lines)
            proc.stop()
        raise AssertionError("unreachable")

    def _read_parts(
        self,
        p: str,
        idle_s: float,
        expected: int,
        tmp: str,
        printed: list[str] | None,
        holder: dict[str, Any],
    ) -> Iterator[int | KernelLaunch]:
        """The first report (a one-launch one: its listing read by ``warm`` while a child of ``forks``
        reads its metrics), or a long one (chunks of launches, each in a child of ``forks``)."""
        split = expected == 1
        listing_out = os.path.join(tmp, "listing.pickle")
        if split:
            for _attempt in (1, 2):
                self.warm.ensure(p, idle_s)
                if self.warm.send({"op": "listing", "path": p, "out": listing_out}):
                    break
                self.warm.stop()
        marks = {self.warm: self.warm.log_end()}
        self.forks.ensure(p, idle_s)
        marks[self.forks] = self.forks.log_end()
        done = False
        try:
            total = self._open(p, idle_s, os.path.join(tmp, "open.pickle"))
            if split and total != 1:  # its structure said one launch, ncu_report more: no listing is awaited
                self.warm.kill()
                split = False
            yield total
            yield from self._chunks(p, total, split, tmp, listing_out, holder)
            done = True
        finally:
            if not done:  # an error or an abandoned read: no answer of it may reach the next request
                self.forks.kill()
                if split:
                    self.warm.kill()
        self._said(marks, printed)

    def _chunks(
        self, p: str, total: int, split: bool, tmp: str, listing_out: str, holder: dict[str, Any]
    ) -> Iterator[KernelLaunch]:
        size = max(1, min(LAUNCHES_PER_CHILD, -(-total // PARALLEL)))
        queue = deque((first, min(size, total - first)) for first in range(0, total, size))
        in_flight: dict[int, int] = {}  # first launch of a chunk -> the next launch it will announce
        notes: dict[int, tuple[str, ...]] = {}
        failures: list[_Failed] = []
        waiting_listing = split
        listing: Any = None
        held: tuple[KernelLaunch, Any] | None = None
        while True:
            while queue and len(in_flight) < PARALLEL and not failures:
                first, count = queue.popleft()
                req = {"op": "chunk", "path": p, "dir": tmp, "first": first, "count": count, "split": split}
                if not self.forks.send(req):
                    break  # it has ended: the next event says how
                in_flight[first] = first
            if not in_flight and not waiting_listing:
                break
            # wait only on a process with an answer due (the other may leave on its idle timeout meanwhile)
            proc, ev = self._next(
                p, [*([self.forks] if in_flight else []), *([self.warm] if waiting_listing else [])]
            )
            if ev is None:  # a process ended unasked: it crashed
                raise _child_failure(p, proc.returncode(), proc.stderr())
            if proc is self.warm:
                waiting_listing = False
                kind, value = _load_result(listing_out)
                if kind != "ok":
                    failures.append(_Failed(0, 1, _error(p, kind, value)))
                else:
                    listing = value
                    self.warm.warm = True
                    self.warm.launches += 1
            elif ev["op"] == "launch":
                i = int(ev["i"])
                kind, value = _load_result(str(ev["file"]))
                chunk = max(f for f in in_flight if f <= i)
                in_flight[chunk] = i + 1
                if kind != "ok":
                    failures.append(_Failed(i, 0, _error(p, kind, value)))
                    in_flight.pop(chunk, None)  # its child stops at a bad launch
                else:
                    launch, notes[i], pend = value
                    if pend is not None:
                        held = (launch, pend)
                    else:
                        yield launch
            elif ev["op"] == "chunk":
                first = int(ev["first"])
                nxt = in_flight.pop(first, None)
                if "died" in ev and nxt is not None:
                    failures.append(_Failed(nxt, 0, _child_failure(p, ev["died"], self.forks.stderr())))
            if held is not None and listing is not None:
                yield join_sass(held[0], held[1], listing)
                held = None
        if failures:
            raise min(failures, key=lambda f: (f.index, f.rank)).error
        if held is not None:
            raise RuntimeError(f"reading {p}: the SASS listing of launch {held[0].id} was not read")
        stream = holder["stream"]
        stream.tool_version = capture_version(p)
        stream.notes.extend(n for i in sorted(notes) for n in notes[i])

    def _next(self, p: str, procs: list[_Proc]) -> tuple[_Proc, dict[str, Any] | None]:
        """The next answer of any of ``procs``: (process, answer), or (process, None) when it ended."""
        import selectors

        while True:
            for proc in procs:
                got = proc.line()
                if got is not None:
                    return proc, got
            with selectors.DefaultSelector() as sel:
                for proc in procs:
                    assert proc.proc is not None and proc.proc.stdout is not None
                    sel.register(proc.proc.stdout, selectors.EVENT_READ, proc)
                ready = sel.select(timeout=LOAD_TIMEOUT_S)
            if not ready:
                for proc in procs:
                    proc.kill()
                raise KprofInputError(
                    p,
                    f"NVIDIA's ncu_report module was still reading the report after {LOAD_TIMEOUT_S:.0f} s "
                    "and was stopped: the file is corrupt or too large for it",
                )
            for key, _ in ready:
                proc = key.data
                if not proc.fill():
                    return proc, None


def _only_launches(gen: Iterator[int | KernelLaunch]) -> Iterator[KernelLaunch]:
    for x in gen:
        assert isinstance(x, KernelLaunch)
        yield x


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
