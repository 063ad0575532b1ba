"""Loaders: one module per input format; pure functions path -> model objects.

:func:`load` picks the loader from the file's name and first bytes. Every problem with
an input is a :class:`~kprof.errors.KprofInputError` naming the file: the loaders raise
it for what they recognise, and :func:`load` turns the exceptions that only malformed
data raises inside a loader (a number too large for 64 bits, JSON nested past Python's
recursion limit, undecodable compressed data, a damaged SQLite page, a read error)
into one too, so a bad file never surfaces as a traceback or an "internal error".
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import TYPE_CHECKING

from kprof.errors import KprofInputError
from kprof.io.files import (
    GZIP_MAGIC,
    GZIPPED_SUFFIXES,
    NCU_MAGIC,
    SQLITE_MAGIC,
    check_readable_file,
    decompressed,
    detect_format,
    is_gzipped_name,
)

if TYPE_CHECKING:
    from kprof.kernel_model import KernelProfile
    from kprof.timeline_model import Timeline


def _malformed_data() -> tuple[type[BaseException], ...]:
    """Exceptions that, raised inside a loader, can only mean the file's content is malformed.

    Evaluated only when a loader raises (sqlite3 is imported then, not by every ``import kprof``)."""
    import sqlite3

    return (
        OverflowError,  # a value too large for the 64-bit columns (2**63, 1e400)
        RecursionError,  # JSON nested deeper than Python's recursion limit
        UnicodeError,
        EOFError,  # compressed data cut short
        zlib.error,
        struct.error,
        sqlite3.DatabaseError,
    )


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
                    return _with_program(_with_source(_load(inner, fmt), os.fspath(path)))
                except KprofInputError as exc:
                    raise KprofInputError(path, f"(decompressed) {exc.reason}") from exc
        return _with_program(_load(path, fmt))
    except _malformed_data() as exc:
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


def _with_source(prof: Timeline | KernelProfile, source: str) -> Timeline | KernelProfile:
    import dataclasses

    return dataclasses.replace(prof, source=source)


def _with_program(prof: Timeline | KernelProfile) -> Timeline | KernelProfile:
    """``prof`` with its program as it runs from the current folder (:mod:`kprof.io.program`): what the
    suggested commands profile again. Outside the loaders and their cache: it depends on where the
    user is, not on the file's bytes."""
    import dataclasses

    from kprof.io.program import program_for

    kw = {"working_dir": getattr(prof, "working_dir", ""), "written_at": getattr(prof, "written_at", "")}
    program = program_for(prof.source, getattr(prof, "command", None) or None, **kw)
    return dataclasses.replace(prof, program=program) if program else prof


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


__all__ = [
    "GZIPPED_SUFFIXES",
    "GZIP_MAGIC",
    "NCU_MAGIC",
    "SQLITE_MAGIC",
    "check_readable_file",
    "decompressed",
    "detect_format",
    "is_gzipped_name",
    "load",
]
