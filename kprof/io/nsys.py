"""Nsight Systems loader: ``.sqlite`` exports (nsys 2022.x to 2025.x) and ``.nsys-rep`` reports.

How the schema drifts (seen in real exports): the metadata table is
``EXPORT_META_DATA`` up to 2023 and ``META_DATA_EXPORT`` after; 2024+ exports omit empty
tables; columns keep being added; API names carry ``_vNNNN`` suffixes. The loader asks
``PRAGMA table_info`` which columns exist and reads only those it needs.

Opening the user's file. The database is opened through a URI with ``immutable=1``:
SQLite then takes no locks and never creates a ``-journal``, ``-wal`` or ``-shm`` file,
so the export is neither modified nor locked, and it opens even from a read-only
folder (``mode=ro`` alone still takes a shared lock, and on a WAL database needs a
``-shm`` beside it). ``immutable`` would miss pages still sitting in a ``-wal`` file, and
``mode=ro`` on a WAL database creates ``<export>-shm`` beside the user's file, so for the
one case of a WAL-mode database with a non-empty ``-wal`` beside it the loader copies the
database and its ``-wal`` into a private temporary folder, reads the copy, and deletes it
when done. nsys itself writes rollback-journal databases.

Impossible rows. A row whose times cannot be real (start < 0, end < start, or end at or
beyond :data:`~kprof.timeline_model.TIMESTAMP_LIMIT_NS`, e.g. ``2**63-1`` or ``-2**63``
left by a crashed or corrupted writer) is set aside, not loaded: one such row would stretch
the capture to centuries. The Timeline's notes name the table, the count and the first
such row; a table the diagnosis measures whose every row is impossible refuses the file.
A text or real value in an integer column refuses the file too.

Reading fast. Numeric columns are read per column in chunks of rowids with
``group_concat`` and parsed by numpy, which avoids building one Python tuple per row
(about twice as fast as iterating a cursor, and no per-row objects); names are looked
up once per distinct ``StringIds`` id.

Modules: :mod:`~kprof.io.nsys_db` (opening, column readers, table names), :mod:`~kprof.io.nsys_gpu`
(GPU tables, impossible rows), :mod:`~kprof.io.nsys_host` (API calls, NVTX, span, metadata); this
module loads a whole export and converts ``.nsys-rep`` reports through a cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from kprof.errors import KprofInputError
from kprof.io.files import cache_dir as cache_dir
from kprof.io.nsys_db import (
    _IN_BATCH as _IN_BATCH,
)
from kprof.io.nsys_db import (
    CHUNK_ROWIDS as CHUNK_ROWIDS,
)
from kprof.io.nsys_db import (
    GRAPH_TABLE,
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    NVTX_TABLE,
    RUNTIME_TABLE,
    SYNC_TABLE,
    _Db,
)
from kprof.io.nsys_db import (
    NVTX_RANGE_TYPES as NVTX_RANGE_TYPES,
)
from kprof.io.nsys_gpu import (
    MEASURED_TABLES as MEASURED_TABLES,
)
from kprof.io.nsys_gpu import (
    _drop_impossible,
    _read_copies,
    _read_gpus,
    _read_graphs,
    _read_kernels,
    _read_memsets,
    _read_syncs,
    _SetAside,
)
from kprof.io.nsys_host import (
    HOST_EVENT_TABLES as HOST_EVENT_TABLES,
)
from kprof.io.nsys_host import (
    NVTX_DOMAIN_CREATE as NVTX_DOMAIN_CREATE,
)
from kprof.io.nsys_host import (
    NVTX_WHERE,
    _capture_extent,
    _capture_place,
    _command,
    _meta,
    _profiler_overhead,
    _read_api,
    _read_nvtx,
    _Threads,
)
from kprof.timeline_model import (
    Timeline,
    set_aside_impossible,
)


def load_nsys_sqlite(path: str | os.PathLike[str]) -> Timeline:
    """Load an ``nsys export --type sqlite`` database into a :class:`~kprof.timeline_model.Timeline`.

    Reads kernels, CUDA graphs traced whole, copies, memsets, synchronizations,
    runtime/driver API calls, NVTX ranges and GPU info, and the capture's span from every host event
    (:func:`_capture_extent`). The file is opened read-only
    and without locks; it is never modified.

    Raises
    ------
    KprofInputError
        Not an SQLite database, not an nsys export, a corrupt or truncated file, or an
        unsupported schema; the message names the problem in one line.

    Examples
    --------
    >>> tl = load_nsys_sqlite("data/samples/host_launch_bound.sqlite")  # doctest: +SKIP
    >>> tl.kernel_count  # doctest: +SKIP
    3000
    """
    p = Path(path)
    if not p.is_file():
        raise KprofInputError(p, "no such file")
    db = _Db(p)
    try:
        version, schema = _export_version(p, db)
        cuda_tables = {KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, RUNTIME_TABLE, GRAPH_TABLE, SYNC_TABLE}
        notes: list[str] = []
        present = cuda_tables & db.tables
        if not present:
            notes.append(
                "no CUDA tables in the export: the capture had no CUDA trace (-t cuda) or no CUDA activity"
            )
        threads = _Threads()
        aside = _SetAside()
        kernels = _drop_impossible(db, KERNEL_TABLE, _read_kernels(db), aside)
        copies = _drop_impossible(db, MEMCPY_TABLE, _read_copies(db), aside)
        memsets = _drop_impossible(db, MEMSET_TABLE, _read_memsets(db), aside)
        graphs = _drop_impossible(db, GRAPH_TABLE, _read_graphs(db), aside)
        syncs = _drop_impossible(db, SYNC_TABLE, _read_syncs(db), aside)
        api = _drop_impossible(db, RUNTIME_TABLE, _read_api(db, threads), aside)
        ranges = _drop_impossible(db, NVTX_TABLE, _read_nvtx(db, threads), aside, where=NVTX_WHERE)
        notes += aside.notes
        gpus = _read_gpus(db)
        labels = threads.labels(db)
        main_tid = None
        if len(api):
            counts = np.bincount(api.thread)
            main_tid = threads.tids[int(np.argmax(counts))]
        command = _command(db, main_tid)
        working_dir, written_at = _capture_place(db)
        cap_lo, cap_hi = _capture_extent(db)
        overhead = _profiler_overhead(db)
    finally:
        db.close()
    timeline = Timeline(
        source=str(path),
        format="nsys",
        gpus=gpus,
        kernels=kernels,
        copies=copies,
        memsets=memsets,
        graphs=graphs,
        syncs=syncs,
        api=api,
        ranges=ranges,
        threads=labels,
        capture_start_ns=cap_lo,
        capture_end_ns=cap_hi,
        profiler_overhead=overhead,
        tool_version=_tool_version(version, schema),
        command=command,
        working_dir=working_dir,
        written_at=written_at,
        notes=tuple(notes),
        has_host_trace=RUNTIME_TABLE in db.tables,
        counts=aside.counts,
        damaged=tuple(aside.damaged),
    )
    return set_aside_impossible(timeline)


def _export_version(p: Path, db: _Db) -> tuple[str, str]:
    """The nsys version and export schema of ``db`` (either may be empty); refuses a database that is not
    an nsys export, or an export schema older than 2.x."""
    meta = _meta(db)
    if not meta and "StringIds" not in db.tables:
        raise KprofInputError(
            p,
            "SQLite database but not an Nsight Systems export (no META_DATA_EXPORT/EXPORT_META_DATA "
            "or StringIds table)",
        )
    version = meta.get("EXPORT_PRODUCT_VERSION", "")
    schema = meta.get("EXPORT_SCHEMA_VERSION", "")
    major = meta.get("EXPORT_SCHEMA_VERSION_MAJOR") or (schema.split(".")[0] if schema else "")
    if major.isdigit() and int(major) < 2:
        raise KprofInputError(
            p,
            f"nsys export schema {schema} is too old (kprof reads schema 2.x-3.x, nsys 2022+); "
            "re-export with a newer nsys",
        )
    return version, schema


def _tool_version(version: str, schema: str) -> str:
    """``nsys 2025.3.1 (export schema 3.x)``, as much of it as the export says."""
    tool = f"nsys {version}".strip() if version else "nsys"
    if schema:
        tool += f" (export schema {schema})"
    return tool


def export_command(path: str | os.PathLike[str], output: str | os.PathLike[str] | None = None) -> str:
    """The exact ``nsys export`` command that converts a report to SQLite."""
    p = Path(path)
    out = Path(output) if output is not None else p.with_suffix(".sqlite")
    return f"nsys export --type sqlite --force-overwrite true -o {_shq(str(out))} {_shq(str(p))}"


def _shq(s: str) -> str:
    return shlex.quote(s)


def cached_export_path(path: str | os.PathLike[str]) -> Path:
    """The cache file for a report, keyed on its absolute path, size and modification time."""
    p = Path(path).resolve()
    st = p.stat()
    key = hashlib.sha256(f"{p}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:20]
    return cache_dir() / f"{p.stem}-{key}.sqlite"


def load_nsys_rep(path: str | os.PathLike[str]) -> Timeline:
    """Load an ``.nsys-rep`` report by converting it with ``nsys export`` into the cache.

    The SQLite export goes to :func:`cache_dir` (never beside the user's file) and is
    reused while the report's path, size and modification time are unchanged. It is
    written under a temporary name and renamed, so an interrupted export is never reused.
    A cached export that no longer loads (damaged, replaced) is removed and the report is
    exported again, so one bad cache entry cannot fail every later run.

    Raises
    ------
    KprofInputError
        When ``nsys`` is not on PATH (the message gives the exact command to run on a
        machine that has it), when the export fails, or when the cache folder cannot be
        used (the message names the folder, not the report).

    Examples
    --------
    >>> tl = load_nsys_rep("data/samples/host_launch_bound.nsys-rep")  # doctest: +SKIP
    """
    p = Path(path)
    if not p.is_file():
        raise KprofInputError(p, "no such file")
    target = cached_export_path(p)
    nsys = shutil.which("nsys")
    with _cache_errors(p, target.parent):
        cached = target.is_file() and target.stat().st_size > 0
    if cached:
        try:
            return _with_source(load_nsys_sqlite(target), str(path))
        except KprofInputError as exc:
            # a cache entry that does not load (a damaged disk block, a copy from elsewhere, a file
            # replaced by hand) would fail every later run: discard it and export the report again
            with _cache_errors(p, target.parent):
                target.unlink(missing_ok=True)
            if nsys is None:
                raise KprofInputError(
                    p,
                    f"its cached SQLite export {target} does not load ({exc.reason}) and was removed; nsys is "
                    f"not on PATH to export it again: on a machine with Nsight Systems run `{export_command(p)}` "
                    "and pass the .sqlite file instead",
                ) from exc
    if nsys is None:
        raise KprofInputError(
            p,
            "nsys is not on PATH, so the report cannot be read here; on a machine with Nsight Systems run "
            f"`{export_command(p)}` and pass the .sqlite file instead",
        )
    with _cache_errors(p, target.parent):
        target.parent.mkdir(parents=True, exist_ok=True)
        with _tmp_name(target) as tmp:
            cmd = [
                nsys,
                "export",
                "--type",
                "sqlite",
                "--force-overwrite",
                "true",
                "-o",
                str(tmp),
                str(p.resolve()),
            ]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise KprofInputError(p, f"`nsys export` failed to run: {exc}") from exc
            if res.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
                msg = (res.stderr or res.stdout or "").strip().splitlines()
                why = msg[-1] if msg else f"exit status {res.returncode}"
                raise KprofInputError(p, f"`nsys export --type sqlite` failed: {why}")
            os.replace(tmp, target)
    try:
        tl = load_nsys_sqlite(target)
    except KprofInputError as exc:
        raise KprofInputError(p, f"{exc.reason} (in its SQLite export {target})") from exc
    return _with_source(tl, str(path))


@contextlib.contextmanager
def _cache_errors(report: Path, folder: Path) -> Iterator[None]:
    """An OS error while using the export cache is the cache folder's problem, named as such
    (not a failure to read the user's report)."""
    try:
        yield
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise KprofInputError(
            report,
            f"cannot use the export cache folder {folder} ({why}); set KPROF_CACHE_DIR to a writable folder",
        ) from exc


STALE_TMP_S = 3600.0
"""A temporary export older than this was left by a killed run (an export of a large report
takes minutes, not an hour) and is removed by the next conversion into the same cache folder."""


def _remove_stale_tmp(folder: Path, now: float | None = None) -> None:
    now = time.time() if now is None else now
    for old in folder.glob("*.tmp.sqlite"):
        with contextlib.suppress(OSError):
            if now - old.stat().st_mtime > STALE_TMP_S:
                old.unlink()


@contextlib.contextmanager
def _tmp_name(target: Path) -> Iterator[Path]:
    _remove_stale_tmp(target.parent)
    fd, name = tempfile.mkstemp(prefix=target.stem + ".", suffix=".tmp.sqlite", dir=target.parent)
    os.close(fd)
    os.unlink(name)  # nsys refuses to overwrite without --force-overwrite; let it create the file
    tmp = Path(name)
    try:
        yield tmp
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _with_source(tl: Timeline, source: str) -> Timeline:
    """The report's own name on the timeline of its cached export; where nsys wrote the report is not in
    the export (only where the export went, the cache), so ``written_at`` is unknown."""
    return dataclasses.replace(tl, source=source, written_at="")


__all__ = ["cache_dir", "cached_export_path", "export_command", "load_nsys_rep", "load_nsys_sqlite"]
