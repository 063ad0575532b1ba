"""What every loader checks first: the file is there and readable, its format from name and first bytes,
and gzip-compressed profiles decompressed into a private temporary file."""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

from kprof.errors import KprofInputError

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
    from kprof.lifetime import owned_tempdir

    p = Path(path)
    inner_name = p.name[: -len(".gz")]
    # Owned (kprof/lifetime.py): a process killed while it holds the copy (a notebook worker of an
    # interrupted `kprof report`) leaves a folder that the next sweep knows to be stale and removes.
    owned = contextlib.ExitStack()
    try:
        folder = owned.enter_context(owned_tempdir("kprof-gunzip-"))
    except OSError as exc:
        raise KprofInputError(
            tempfile.gettempdir(), f"cannot create a temporary folder: {exc.strerror}"
        ) from exc
    with owned:
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


__all__ = [
    "GZIPPED_SUFFIXES",
    "GZIP_MAGIC",
    "NCU_MAGIC",
    "SQLITE_MAGIC",
    "cache_dir",
    "check_readable_file",
    "decompressed",
    "detect_format",
    "is_gzipped_name",
]


def cache_dir() -> Path:
    """kprof's cache folder: ``$KPROF_CACHE_DIR`` or ``~/.cache/kprof``. It holds the SQLite exports of
    ``.nsys-rep`` reports (:mod:`kprof.io.nsys`) and, under ``ncu/``, the reads of ``.ncu-rep`` reports
    (:mod:`kprof.io.ncu_cache`); never anything beside the user's files."""
    env = os.environ.get("KPROF_CACHE_DIR")
    if env:
        return Path(env)
    try:
        return Path.home() / ".cache" / "kprof"
    except (RuntimeError, KeyError):  # no home folder (HOME unset, no passwd entry): a per-user temporary one
        return Path(tempfile.gettempdir()) / f"kprof-cache-{getattr(os, 'getuid', lambda: 0)()}"
