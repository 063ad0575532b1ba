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
from collections.abc import Mapping
from types import MappingProxyType
from typing import IO, Any

from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.kernel_model import KernelProfile, Metric, SassLine
from kprof.lifetime import owned_tempdir, remove_stale_temporaries

ISOLATE_ENV = "KPROF_NCU_ISOLATE"
"""``0`` reads reports in this process; anything else (the default) reads them in a child process."""

LOAD_TIMEOUT_S = 900.0
"""A child still reading one report after this long is stopped (ncu_report hung on the file)."""

_MODULE_MARK = "kprof-ncu-report-module: "

_WORKER = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from kprof.lifetime import die_with_parent; die_with_parent(int(sys.argv[3])); "
    "from kprof.io.ncu import _serve; sys.exit(_serve(float(sys.argv[2])))"
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

    def _start(self, p: str, idle_s: float) -> subprocess.Popen[bytes]:
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
                    str(idle_s),
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

    def load(self, p: str, idle_s: float, printed: list[str] | None = None) -> KernelProfile:
        """Read ``p`` in the reader process (started when none runs; it leaves after ``idle_s`` without a
        request). What the process printed while it read (passed on to stderr) is added to ``printed``."""
        remove_stale_temporaries()  # what killed runs left (once per process)
        with self.lock, owned_tempdir("kprof-ncu-") as tmp:
            out = os.path.join(tmp, "result.pickle")
            for attempt in (1, 2):
                if self.proc is None or self.proc.poll() is not None:
                    self.stop()
                    self._start(p, idle_s)
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
                if printed is not None:
                    printed.extend(said)
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
