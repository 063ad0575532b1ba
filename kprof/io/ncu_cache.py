"""The cache of read ``.ncu-rep`` reports: a report kprof has read once is not read by ncu_report again.

Reading a report costs far more than diagnosing it. ncu_report's SASS disassembler alone needs 0.24-0.48 s
to start in each process (measured on A10G and H200 reports), a ``kprof diagnose`` of a one-launch report
spends about 80% of its time in the reader, and a 154-launch report takes tens of seconds. What the
reader returns (a :class:`~kprof.kernel_model.KernelProfile`: metrics, units, rules, SASS, source) depends
only on the report's bytes and on the code that reads them, so it is kept, pickled, under
``$KPROF_CACHE_DIR/ncu`` (default ``~/.cache/kprof/ncu``: the folder of the nsys export cache) and the
next load of the same bytes unpickles it.

- **Key**: a BLAKE2b digest of the report's bytes (after decompression of ``.gz``), of the source of the
  modules that read it (:data:`READER_MODULES`: a kprof whose reader changed never reuses an older
  reader's result) and of the ncu_report version. Renaming or copying a report keeps its entry; any
  change of a byte does not.
- **What is kept**: clean reads only. A read on which ncu_report printed anything (warnings that a later
  run would not repeat) or that failed is never cached.
- **Writes** go to a temporary name and are renamed, so a reader never sees half an entry; an entry that
  does not unpickle (cut short, from another Python) is removed and the report read again.
- **Size**: after each write the oldest entries (by last use) are removed until the folder holds at most
  :data:`MAX_BYTES_DEFAULT` (``$KPROF_CACHE_MAX_MB`` to change it).
- **Trust**: an entry is a pickle, so it is used only when this user owns it and its folder and nobody
  else can write either (a ``$KPROF_CACHE_DIR`` shared with others is ignored, not trusted).
- **Off**: ``KPROF_CACHE=0``. A cache folder that cannot be created or written is not an error: the
  report is read as if there were no cache.

The user's report is only ever read (the cache lives in the cache folder, never beside the report).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from kprof.io.files import cache_dir
from kprof.kernel_model import KernelLaunch, KernelProfile

CACHE_ENV = "KPROF_CACHE"
"""``0`` (or ``no``, ``off``, ``false``) turns the cache of read reports off."""

MAX_MB_ENV = "KPROF_CACHE_MAX_MB"

MAX_BYTES_DEFAULT = 512 * 2**20
"""The folder's size cap. A pickled one-launch report is 0.1-1 MB (it holds every metric and the SASS
with its per-PC counters); a 154-launch A100 report about 30 MB."""

FORMAT = 2
"""Bumped when what an entry holds changes shape. 2: a stream of pickles (a header, one per launch as it
was read, a trailer), written while a long report is read, without holding it whole."""

_HEADER = ("kprof-ncu-launches", FORMAT)

READER_MODULES = ("ncu.py", "ncu_action.py", "ncu_structure.py", "ncu_reader.py", "ncu_cache.py")
"""The modules (in ``kprof/io``) whose code decides what a read returns, with ``kprof/kernel_model.py``."""

_CHUNK = 1 << 20


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "no", "off", "false")


def folder() -> Path:
    return cache_dir() / "ncu"


_READER_DIGEST: str | None = None


def _reader_digest() -> str:
    """The digest of the reader's own code and of ncu_report's version (computed once per process)."""
    global _READER_DIGEST
    if _READER_DIGEST is None:
        h = hashlib.blake2b(digest_size=16)
        h.update(f"format {FORMAT}\0".encode())
        here = Path(__file__).resolve().parent
        for name in (*READER_MODULES, "../kernel_model.py"):
            with contextlib.suppress(OSError):
                h.update(name.encode() + b"\0" + (here / name).read_bytes())
        # ncu_report's native module stands for its version (size and time of its files: found without
        # importing it, which this process may never need, nor importlib.metadata, 25 ms of imports)
        with contextlib.suppress(Exception):
            import importlib.util

            spec = importlib.util.find_spec("ncu_report")
            for loc in (spec.submodule_search_locations or []) if spec else []:
                for f in [*sorted(Path(loc).glob("*.so")), Path(loc) / "__init__.py"]:
                    st = f.stat()
                    h.update(f"{f.name} {st.st_size} {st.st_mtime_ns}\0".encode())
        _READER_DIGEST = h.hexdigest()
    return _READER_DIGEST


def entry_path(report: str | os.PathLike[str]) -> Path | None:
    """The cache entry for the bytes of ``report`` (None when the cache is off or the file unreadable)."""
    if not enabled():
        return None
    try:
        where = folder()
    except (RuntimeError, KeyError, OSError):  # no home folder to hold ~/.cache (a bare container): no cache
        return None
    h = hashlib.blake2b(digest_size=20)
    h.update(_reader_digest().encode())
    try:
        with open(report, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
    except OSError:
        return None
    return where / f"{h.hexdigest()}.pickle"


def get(entry: Path | None, source: str) -> KernelProfile | None:
    """The cached read (its ``source`` set to ``source``), or None; a damaged entry is removed."""
    if entry is None:
        return None
    try:
        with open(entry, "rb") as f:
            if not _private(os.fstat(f.fileno())) or not _private(os.stat(entry.parent)):
                return None  # someone else could have written it: unpickling it could run their code
            prof = _read_entry(f, source)
    except FileNotFoundError:
        return None
    except Exception:  # cut short, another Python's pickle, not ours: read the report again
        prof = None
    if prof is None:
        with contextlib.suppress(OSError):
            entry.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(entry)  # its last use: the eviction order
    return prof


def _read_entry(f: IO[bytes], source: str) -> KernelProfile | None:
    """The profile an entry holds (launches in report order), or None when it is not one of ours, whole."""
    if pickle.load(f) != _HEADER:  # written by this user's kprof, in a folder only this user can write
        return None
    launches: list[KernelLaunch] = []
    while True:
        item = pickle.load(f)
        if isinstance(item, KernelLaunch):
            launches.append(item)
            continue
        if not (isinstance(item, tuple) and len(item) == 4 and item[0] == "end" and item[1] == len(launches)):
            return None
        _, _, version, notes = item
        launches.sort(key=lambda k: k.id)
        return KernelProfile(
            source=source, launches=tuple(launches), format="ncu-rep", tool_version=version, notes=notes
        )


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by nobody else (POSIX; elsewhere, owned is not checked)."""
    getuid = getattr(os, "getuid", None)
    return (getuid is None or st.st_uid == getuid()) and not st.st_mode & 0o022


def put(entry: Path | None, prof: KernelProfile) -> None:
    """Keep ``prof`` as ``entry`` (quietly nothing when the folder cannot be written)."""
    w = writer(entry)
    if w is None:
        return
    for k in prof.launches:
        w.add(k)
    w.finish(True, prof.tool_version, prof.notes)


class Writer:
    """An entry written launch by launch as a report is read (:func:`writer`); it appears, whole, at
    :meth:`finish`."""

    def __init__(self, entry: Path, tmp: str, f: IO[bytes]) -> None:
        self.entry, self.tmp, self.n = entry, tmp, 0
        self.f: IO[bytes] | None = f

    def add(self, launch: KernelLaunch) -> None:
        if self.f is None:
            return
        from kprof.io.ncu_reader import _dump

        try:
            _dump(launch, self.f)
            self.n += 1
        except OSError:
            self.finish(False, None, ())

    def finish(self, keep: bool, tool_version: str | None, notes: Iterable[str]) -> None:
        """Keep the entry (``keep``: every launch was read, cleanly) or drop it."""
        f, self.f = self.f, None
        if f is None:
            return
        from kprof.io.ncu_reader import _dump

        try:
            if keep:
                _dump(("end", self.n, tool_version, tuple(notes)), f)
            f.close()
            if keep:
                os.replace(self.tmp, self.entry)
                _trim(self.entry.parent)
        except OSError:
            keep = False
        finally:
            with contextlib.suppress(OSError):
                f.close()
            if not keep:
                with contextlib.suppress(OSError):
                    os.unlink(self.tmp)


def writer(entry: Path | None) -> Writer | None:
    """A :class:`Writer` of ``entry``, or None (no cache, or a folder that cannot be written)."""
    if entry is None:
        return None
    from kprof.io.ncu_reader import _dump

    try:
        entry.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _private(os.stat(entry.parent)):
            return None  # get() would not trust what is written here
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
    except OSError:
        return None
    f = os.fdopen(fd, "wb")
    try:
        _dump(_HEADER, f)
    except OSError:
        f.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return Writer(entry, tmp, f)


def max_bytes() -> int:
    try:
        return int(float(os.environ[MAX_MB_ENV]) * 2**20)
    except (KeyError, ValueError):
        return MAX_BYTES_DEFAULT


def _trim(where: Path) -> None:
    """Remove the least recently used entries until the folder holds at most :func:`max_bytes`, and
    temporary files that a killed writer left more than an hour ago."""
    now = time.time()
    entries: list[tuple[float, int, Path]] = []
    for p in where.iterdir():
        try:
            st = p.stat()
        except OSError:
            continue
        if p.name.startswith(".tmp-"):
            if now - st.st_mtime > 3600:
                with contextlib.suppress(OSError):
                    p.unlink()
            continue
        if p.suffix == ".pickle":
            entries.append((st.st_mtime, st.st_size, p))
    total, cap = sum(e[1] for e in entries), max_bytes()
    for _, size, p in sorted(entries):
        if total <= cap:
            break
        with contextlib.suppress(OSError):
            p.unlink()
            total -= size
