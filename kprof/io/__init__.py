"""Loaders: one module per input format; pure functions path -> model objects.

:func:`load` picks the loader from the file's name and first bytes. Every problem with
an input is a :class:`~kprof.errors.KprofInputError` naming the file: the loaders raise
it for what they recognise, and :func:`load` turns the exceptions that only malformed
data raises inside a loader (a number too large for 64 bits, JSON nested past Python's
recursion limit, undecodable compressed data, a damaged SQLite page, a read error)
into one too, so a bad file never surfaces as a traceback or an "internal error".
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import sqlite3
import struct
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.errors import KprofInputError

if TYPE_CHECKING:
    from kprof.kernel_model import KernelProfile
    from kprof.timeline_model import Timeline

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
NCU_MAGIC = b"NVR\x00"

GZIPPED_SUFFIXES = {".ncu-rep.gz": "ncu-rep", ".sqlite.gz": "nsys-sqlite", ".csv.gz": "ncu-csv"}
"""gzip-compressed profiles read transparently (an ``.ncu-rep`` compresses about 7x): the
content is decompressed into a private temporary file, never beside the user's file."""


def check_readable_file(path: str | os.PathLike[str]) -> Path:
    """Raise :class:`KprofInputError` unless ``path`` is an existing, readable, non-empty file."""
    if not os.fspath(path):  # Path("") is ".", the current folder: say what was given
        raise KprofInputError("''", "the path is empty; give the path of a profile file")
    p = Path(path)
    try:
        exists = p.exists()
    except OSError as exc:  # e.g. a name too long for the file system
        raise KprofInputError(p, f"cannot look up the path: {exc.strerror or exc}") from exc
    if not exists:
        if p.is_symlink():
            raise KprofInputError(
                p, "is a broken symbolic link (its target is missing, or links form a loop)"
            )
        raise KprofInputError(p, "no such file")
    if p.is_dir():
        raise KprofInputError(p, "is a directory, not a profile file")
    if not p.is_file():
        raise KprofInputError(p, "is not a regular file")
    if not os.access(p, os.R_OK):
        raise KprofInputError(p, "permission denied (cannot read the file)")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise KprofInputError(p, f"cannot stat: {exc.strerror}") from exc
    if size == 0:
        raise KprofInputError(p, "file is empty")
    return p


def _head(p: Path, n: int = 64) -> bytes:
    try:
        with open(p, "rb") as f:
            return f.read(n)
    except OSError as exc:
        raise KprofInputError(p, f"cannot read: {exc.strerror}") from exc


def detect_format(path: str | os.PathLike[str]) -> str:
    """Return one of ``nsys-rep``, ``nsys-sqlite``, ``kineto``, ``ncu-rep``, ``ncu-csv``.

    The extension proposes, the first bytes confirm: a file whose content does not
    match its extension raises :class:`KprofInputError`.
    """
    p = check_readable_file(path)
    name = p.name.lower()
    head = _head(p)
    if name.endswith(".nsys-rep") or name.endswith(".qdrep"):
        return "nsys-rep"
    for suffix, fmt in GZIPPED_SUFFIXES.items():
        if name.endswith(suffix):
            if not head.startswith(GZIP_MAGIC):
                raise KprofInputError(p, "has a .gz name but is not gzip-compressed")
            return fmt
    if name.endswith(".ncu-rep"):
        return "ncu-rep"
    if name.endswith((".sqlite", ".sqlite3", ".db")):
        if not head.startswith(SQLITE_MAGIC):
            raise KprofInputError(p, "not an SQLite database (expected an `nsys export --type sqlite` file)")
        return "nsys-sqlite"
    if name.endswith((".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz")):
        if name.endswith(".gz") and not head.startswith(GZIP_MAGIC):
            raise KprofInputError(p, "has a .gz name but is not gzip-compressed")
        return "kineto"
    if name.endswith(".csv"):
        return "ncu-csv"
    # No known extension: sniff.
    if head.startswith(SQLITE_MAGIC):
        return "nsys-sqlite"
    if head.startswith(GZIP_MAGIC):
        try:
            with gzip.open(p, "rb") as f:
                inner = f.read(64).lstrip()
        except (OSError, EOFError) as exc:
            raise KprofInputError(p, f"corrupt gzip data: {exc}") from exc
        if inner.startswith((b"{", b"[")):
            return "kineto"
    if head.lstrip().startswith((b"{", b"[")):
        return "kineto"
    raise KprofInputError(
        p,
        "unrecognised file type (kprof reads .nsys-rep, nsys .sqlite exports, PyTorch profiler "
        ".json/.json.gz traces, .ncu-rep reports and ncu --csv exports; .ncu-rep, .sqlite and .csv "
        "also gzip-compressed as .gz)",
    )


_MALFORMED_DATA = (
    OverflowError,  # a value too large for the 64-bit columns (2**63, 1e400)
    RecursionError,  # JSON nested deeper than Python's recursion limit
    UnicodeError,
    EOFError,  # compressed data cut short
    zlib.error,
    struct.error,
    sqlite3.DatabaseError,
)
"""Exceptions that, raised inside a loader, can only mean the file's content is malformed."""


def load(path: str | os.PathLike[str]) -> Timeline | KernelProfile:
    """Load any supported profile: a :class:`~kprof.model.Timeline` or a :class:`~kprof.model.KernelProfile`.

    Raises
    ------
    KprofInputError
        The file is missing, unreadable, of an unknown type, truncated, corrupt or malformed;
        the message is one line naming the file and the problem.
    MissingToolError
        Reading this format needs a tool or package that is not installed.

    Examples
    --------
    >>> tl = load("data/samples/host_launch_bound.sqlite")  # doctest: +SKIP
    """
    fmt = detect_format(path)
    try:
        if fmt != "kineto" and is_gzipped_name(path):
            with decompressed(path) as inner:
                try:
                    return _with_source(_load(inner, fmt), os.fspath(path))
                except KprofInputError as exc:
                    raise KprofInputError(path, f"(decompressed) {exc.reason}") from exc
        return _load(path, fmt)
    except _MALFORMED_DATA as exc:
        what = " ".join(str(exc).split()) or "no details"
        raise KprofInputError(path, f"malformed {_FORMAT_NAMES[fmt]} ({type(exc).__name__}: {what})") from exc
    except OSError as exc:
        raise KprofInputError(path, f"cannot read: {exc.strerror or exc}") from exc


_FORMAT_NAMES = {
    "nsys-rep": "Nsight Systems report",
    "nsys-sqlite": "nsys SQLite export",
    "kineto": "PyTorch profiler trace",
    "ncu-rep": "Nsight Compute report",
    "ncu-csv": "ncu CSV export",
}


def is_gzipped_name(path: str | os.PathLike[str]) -> bool:
    """True for the gzip-compressed profile names kprof reads (:data:`GZIPPED_SUFFIXES`)."""
    return os.fspath(path).lower().endswith(tuple(GZIPPED_SUFFIXES))


@contextlib.contextmanager
def decompressed(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Decompress a gzip'd profile into a private temporary folder; yield the inner file's path.

    The inner file keeps the name without ``.gz`` (so its extension still names its format) and is
    removed, with its folder, on exit. The user's file is only read.

    Raises
    ------
    KprofInputError
        The gzip data is corrupt or cut short (naming ``path``), or the temporary folder cannot be
        written (naming that folder: free space on it, or set ``TMPDIR``).
    """
    p = Path(path)
    inner_name = p.name[: -len(".gz")]
    try:
        folder = Path(tempfile.mkdtemp(prefix="kprof-gunzip-"))
    except OSError as exc:
        raise KprofInputError(
            tempfile.gettempdir(), f"cannot create a temporary folder: {exc.strerror}"
        ) from exc
    try:
        inner = folder / inner_name
        try:
            with gzip.open(p, "rb") as src, open(inner, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise KprofInputError(p, f"corrupt or truncated gzip data: {exc}") from exc
        except OSError as exc:
            if exc.filename and os.fspath(exc.filename) == os.fspath(inner):
                raise KprofInputError(
                    folder, f"cannot write the decompressed copy of {p.name}: {exc.strerror}"
                ) from exc
            raise KprofInputError(p, f"cannot read: {exc.strerror or exc}") from exc
        if inner.stat().st_size == 0:
            raise KprofInputError(p, "decompresses to an empty file")
        yield inner
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _with_source(prof: Timeline | KernelProfile, source: str) -> Timeline | KernelProfile:
    import dataclasses

    return dataclasses.replace(prof, source=source)


def _load(path: str | os.PathLike[str], fmt: str) -> Timeline | KernelProfile:
    if fmt == "nsys-rep":
        from kprof.io.nsys import load_nsys_rep

        return load_nsys_rep(path)
    if fmt == "nsys-sqlite":
        from kprof.io.nsys import load_nsys_sqlite

        return load_nsys_sqlite(path)
    if fmt == "kineto":
        from kprof.io.kineto import load_kineto

        return load_kineto(path)
    if fmt == "ncu-rep":
        from kprof.io.ncu import load_ncu_report

        return load_ncu_report(path)
    from kprof.io.ncu_csv import load_ncu_csv

    return load_ncu_csv(path)
