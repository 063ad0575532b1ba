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
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from kprof.errors import KprofInputError
from kprof.timeline_model import (
    TIMESTAMP_LIMIT_NS,
    ApiTable,
    CopyTable,
    DamagedRows,
    GpuInfo,
    GraphTable,
    KernelTable,
    MemsetTable,
    RangeTable,
    SyncTable,
    Timeline,
    set_aside_impossible,
)

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
GRAPH_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX_TABLE = "NVTX_EVENTS"
# NVTX event types (ENUM_NSYS_EVENT_TYPE): push/pop and start/end ranges, NVTX and NVTXT.
NVTX_RANGE_TYPES = (59, 60, 70, 71)

CHUNK_ROWIDS = 1_000_000
"""Rowids per ``group_concat`` query: about 10-20 MB of text per column, a bounded peak."""
_IN_BATCH = 500


# ----------------------------------------------------------------------------- opening


def _connect(p: Path) -> tuple[sqlite3.Connection, Path | None]:
    """Open the export read-only, never writing beside it: (connection, private copy folder or None).

    A WAL-mode database with a non-empty ``-wal`` beside it is copied (with the ``-wal``) into a
    private temporary folder and the copy is opened: the caller deletes the folder when done.
    """
    try:
        with open(p, "rb") as f:
            header = f.read(100)
    except OSError as exc:
        raise KprofInputError(p, f"cannot read: {exc.strerror}") from exc
    if not header.startswith(b"SQLite format 3\x00"):
        raise KprofInputError(p, "not an SQLite database (expected an `nsys export --type sqlite` file)")
    wal = Path(str(p) + "-wal")
    tmp: Path | None = None
    target = p
    params = "immutable=1"
    if len(header) >= 20 and header[18] == 2 and _nonempty(wal):
        # the WAL content lives in the -wal file (immutable would not see it), and mode=ro would
        # create <export>-shm beside the user's file: read a private copy instead
        tmp, target = _private_copy(p, wal)
        params = "mode=ro"
    quoted = urllib.parse.quote(str(target.resolve()))
    try:
        conn = sqlite3.connect(f"file:{quoted}?{params}", uri=True, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except BaseException:
            conn.close()
            raise
    except sqlite3.DatabaseError as exc:
        _remove(tmp)
        raise KprofInputError(p, f"corrupt or unreadable SQLite database ({exc})") from exc
    except BaseException:
        _remove(tmp)
        raise
    return conn, tmp


def _nonempty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > 0
    except OSError:
        return False


def _private_copy(p: Path, wal: Path) -> tuple[Path, Path]:
    """Copy the database and its ``-wal`` into a new private temporary folder: (folder, database copy)."""
    tmp = Path(tempfile.mkdtemp(prefix="kprof-wal-"))
    dst = tmp / "export.sqlite"
    try:
        shutil.copyfile(p, dst)
        shutil.copyfile(wal, Path(str(dst) + "-wal"))
    except OSError as exc:
        _remove(tmp)
        what = wal if exc.filename and Path(exc.filename) == wal else p
        raise KprofInputError(
            p, f"cannot copy the WAL-mode database ({what.name}) to read it: {exc.strerror or exc}"
        ) from exc
    return tmp, dst


def _remove(tmp: Path | None) -> None:
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


class _Db:
    """A read-only nsys export with the helpers the loader needs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn, self._tmp = _connect(path)
        try:
            rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise KprofInputError(path, f"corrupt SQLite database ({exc})") from exc
        self.tables = {r[0] for r in rows}
        self._cols: dict[str, set[str]] = {}

    def close(self) -> None:
        """Close the connection and delete the private copy, if one was made."""
        try:
            self.conn.close()
        finally:
            _remove(self._tmp)
            self._tmp = None

    def q(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise KprofInputError(
                self.path,
                f"corrupt or truncated export: {exc} (while running {sql.split()[0]} on {_table_of(sql)})",
            ) from exc

    def columns(self, table: str) -> set[str]:
        if table not in self._cols:
            self._cols[table] = {str(r[1]) for r in self.q(f'PRAGMA table_info("{table}")')}
        return self._cols[table]

    def has(self, table: str) -> bool:
        return table in self.tables

    def read_ints(
        self,
        table: str,
        exprs: dict[str, str],
        where: str = "",
        dtypes: dict[str, str] | None = None,
        out: dict[str, np.ndarray] | None = None,
        encode: dict[str, Callable[[np.ndarray], np.ndarray]] | None = None,
        widen: tuple[str, ...] = (),
    ) -> dict[str, np.ndarray]:
        """Read integer expressions of ``table`` column by column into numpy arrays.

        NULL reads as -1. Rows come in rowid order, the same order for every column. Each
        column is filled a chunk at a time, so the only temporaries are one chunk's text and
        values: ``dtypes`` narrows a column's storage (values wrap around as numpy casts them,
        e.g. a stream id 0xFFFFFFFF reads -1 in int32, except for the ``widen`` columns, which
        become int64 when a value does not fit), ``out`` gives the array to fill (e.g. a column
        view of an (n, 3) grid array), and ``encode`` maps each chunk's values before storing
        them (e.g. thread ids to dense indices).
        """
        dtypes = dtypes or {}
        out = out or {}
        encode = encode or {}
        cond = f" AND ({where})" if where else ""
        row = self.q(f'SELECT count(*), min(rowid), max(rowid) FROM "{table}" WHERE 1{cond}')[0]
        n, lo, hi = int(row[0] or 0) if isinstance(row[0], int) else 0, row[1], row[2]
        cols: dict[str, np.ndarray] = {}
        for key in exprs:
            if key in out:
                if len(out[key]) != n:
                    raise ValueError(f"out[{key!r}] has {len(out[key])} rows, the table {n}")
                cols[key] = out[key]
            else:
                cols[key] = np.empty(n, dtype=dtypes.get(key, "int64"))
        if n == 0:
            return cols
        assert isinstance(lo, int) and isinstance(hi, int)
        for key, expr in exprs.items():
            arr = cols[key]
            i = 0
            for a in range(lo, hi + 1, CHUNK_ROWIDS):
                b = a + CHUNK_ROWIDS - 1
                sql = f'SELECT group_concat(ifnull({expr}, -1)) FROM "{table}" WHERE rowid BETWEEN ? AND ?{cond}'
                try:
                    s = self.conn.execute(sql, (a, b)).fetchone()[0]
                except sqlite3.DatabaseError:
                    # a blob cell makes the text undecodable: name it if that is the cause
                    self._raise_if_not_integer(table, expr, (a, b), cond)
                    s = self.q(sql, (a, b))[0][0]  # raises the usual "corrupt or truncated" error
                if s is None:
                    continue
                try:
                    vals = np.fromstring(str(s), dtype=np.int64, sep=",")
                except ValueError:  # a text or real value: group_concat wrote it as is
                    self._raise_if_not_integer(table, expr, (a, b), cond)
                    raise KprofInputError(
                        self.path,
                        f"table {table}: column {_unquote(expr)} holds a value that is not an integer",
                    ) from None
                del s
                if i + len(vals) > n:
                    raise KprofInputError(self.path, f"table {table} changed while it was read")
                if key in encode:
                    vals = encode[key](vals)
                elif key in widen and arr.dtype != np.int64 and len(vals):
                    info = np.iinfo(arr.dtype)
                    if int(vals.min()) < info.min or int(vals.max()) > info.max:
                        wide = np.empty(n, np.int64)  # does not fit: widen, keeping what was read
                        wide[:i] = arr[:i]
                        arr = cols[key] = wide
                arr[i : i + len(vals)] = vals
                i += len(vals)
            if i != n:
                raise KprofInputError(
                    self.path,
                    f"table {table}: read {i} values of column {key} for {n} rows (corrupt export?)",
                )
        return cols

    def _raise_if_not_integer(self, table: str, expr: str, rowids: tuple[int, int], cond: str) -> None:
        """Raise the one-line error naming the first value of ``expr`` in the rowid range that is not an
        integer (text, real or blob), if there is one."""
        try:
            rows = self.conn.execute(
                f'SELECT rowid, {expr} FROM "{table}" WHERE rowid BETWEEN ? AND ?{cond} '
                f"AND typeof({expr}) NOT IN ('integer', 'null') ORDER BY rowid LIMIT 1",
                rowids,
            ).fetchall()
        except sqlite3.DatabaseError:
            return
        if not rows:
            return
        rid, v = rows[0]
        if isinstance(v, bytes):
            what = f"a {len(v)}-byte blob"
        else:
            text = str(v)
            what = repr(text[:40] + ("..." if len(text) > 40 else ""))
        raise KprofInputError(
            self.path,
            f"table {table}: column {_unquote(expr)} holds a value that is not an integer (rowid {rid}: {what})",
        )

    def nth_rowid(self, table: str, i: int, where: str = "") -> int | None:
        """The rowid of the ``i``-th row (0-based, rowid order) of ``table`` that ``where`` selects."""
        cond = f" AND ({where})" if where else ""
        try:
            rows = self.conn.execute(
                f'SELECT rowid FROM "{table}" WHERE 1{cond} ORDER BY rowid LIMIT 1 OFFSET ?', (i,)
            ).fetchall()
        except sqlite3.DatabaseError:
            return None
        return int(rows[0][0]) if rows else None

    def strings(self, ids: np.ndarray) -> dict[int, str]:
        """``StringIds`` values for the given ids, looked up once each."""
        if not self.has("StringIds"):
            raise KprofInputError(self.path, "missing table StringIds (the names of kernels and API calls)")
        out: dict[int, str] = {}
        uniq = [int(x) for x in ids]
        for k in range(0, len(uniq), _IN_BATCH):
            batch = uniq[k : k + _IN_BATCH]
            marks = ",".join("?" * len(batch))
            for i, v in self.q(f"SELECT id, value FROM StringIds WHERE id IN ({marks})", tuple(batch)):
                out[int(i)] = str(v)  # type: ignore[call-overload]
        return out


def _unquote(expr: str) -> str:
    return expr.strip('"')


def _table_of(sql: str) -> str:
    words = sql.replace('"', " ").split()
    for i, w in enumerate(words):
        if w.upper() == "FROM" and i + 1 < len(words):
            return words[i + 1]
    return "the database"


def _dense(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map arbitrary non-negative ids to 0..k-1: (dense int32 per row, original id per dense id).

    Dense ids follow the original ids' order. An int32 input is remapped in place (the
    loader's own column), a chunk at a time, so no array-sized temporary is made.
    """
    if len(ids) == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int64)
    lo = int(ids.min())
    hi = int(ids.max())
    if lo < 0 or hi > 50_000_000:
        codes, uniques = pd.factorize(ids, sort=True)
        return codes.astype(np.int32), np.asarray(uniques, dtype=np.int64)
    present = np.zeros(hi + 1, bool)
    step = CHUNK_ROWIDS
    for a in range(0, len(ids), step):
        present[ids[a : a + step]] = True
    uniques = np.flatnonzero(present).astype(np.int64)
    lut = (np.cumsum(present, dtype=np.int64) - 1).astype(np.int32)
    out = ids if ids.dtype == np.int32 else np.empty(len(ids), np.int32)
    for a in range(0, len(ids), step):
        out[a : a + step] = lut[ids[a : a + step]]
    return out, uniques


def _names(db: _Db, uniques: np.ndarray, what: str) -> tuple[str, ...]:
    if len(uniques) == 0:
        return ()
    found = db.strings(uniques)
    return tuple(found.get(int(i), f"<unknown {what} {int(i)}>") for i in uniques)


def _col(db: _Db, table: str, *candidates: str) -> str | None:
    cols = db.columns(table)
    for c in candidates:
        if c in cols:
            return c
    return None


def _require(db: _Db, table: str, *cols: str) -> None:
    have = db.columns(table)
    missing = [c for c in cols if c not in have]
    if missing:
        raise KprofInputError(
            db.path, f"table {table} lacks column(s) {', '.join(missing)} (unsupported nsys schema)"
        )


# ----------------------------------------------------------------------------- impossible rows

MEASURED_TABLES = (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, GRAPH_TABLE, RUNTIME_TABLE)
"""Tables whose times the diagnosis measures: when every row of one is impossible, the file is refused."""

_T = TypeVar("_T", KernelTable, CopyTable, MemsetTable, GraphTable, SyncTable, ApiTable, RangeTable)


_MODEL_TABLE = {
    KERNEL_TABLE: "kernels",
    MEMCPY_TABLE: "copies",
    MEMSET_TABLE: "memsets",
    GRAPH_TABLE: "graphs",
    SYNC_TABLE: "syncs",
    RUNTIME_TABLE: "api",
    NVTX_TABLE: "ranges",
}


@dataclasses.dataclass(slots=True)
class _SetAside:
    """What the loader set aside: notes for the Timeline, counts per table, the damaged-rows records."""

    notes: list[str] = dataclasses.field(default_factory=list)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    damaged: list[DamagedRows] = dataclasses.field(default_factory=list)


def _drop_impossible(db: _Db, table: str, t: _T, aside: _SetAside, where: str = "") -> _T:
    """``t`` without its rows whose times cannot be real: start < 0, end < start, end >= 2**62 ns.

    ``where`` is the filter the table was read with (rows are in rowid order), used to name the
    first dropped row's rowid. Adds a note naming the table, the count and the first dropped row;
    raises :class:`KprofInputError` when every row of a :data:`MEASURED_TABLES` table is dropped.
    """
    n = len(t)
    if n == 0:
        return t
    s, e = t.start_ns, t.end_ns
    bad = s < 0
    bad |= e < s
    bad |= e >= TIMESTAMP_LIMIT_NS
    n_bad = int(np.count_nonzero(bad))
    if n_bad == 0:
        return t
    i = int(np.argmax(bad))
    rid = db.nth_rowid(table, i, where)
    first = f"{'rowid ' + str(rid) if rid is not None else 'row ' + str(i + 1)}: start {int(s[i])}, end {int(e[i])}"
    why = "start < 0, end before start, or end at or beyond 2**62 ns"
    if n_bad == n and table in MEASURED_TABLES:
        raise KprofInputError(
            db.path,
            f"table {table}: every one of its {n:,} rows has an impossible time ({why}; the first, {first})",
        )
    aside.notes.append(
        f"table {table}: {n_bad:,} of {n:,} rows set aside with an impossible time ({why}; the first, {first})"
    )
    aside.counts[f"{table} rows with an impossible time"] = n_bad
    keep = ~bad
    del bad
    kept_ns = (e - s)[keep]
    aside.damaged.append(
        DamagedRows(
            table=_MODEL_TABLE[table],
            count=n_bad,
            total=n,
            why=f"{why} (table {table})",
            first=first,
            est_ns=round(float(np.mean(kept_ns)) * n_bad) if len(kept_ns) else 0,
        )
    )
    cols: dict[str, Any] = {
        f.name: v[keep] for f in dataclasses.fields(t) if isinstance(v := getattr(t, f.name), np.ndarray)
    }
    return dataclasses.replace(t, **cols)


# ----------------------------------------------------------------------------- tables


def _read_kernels(db: _Db) -> KernelTable:
    if not db.has(KERNEL_TABLE):
        return KernelTable()
    t = KERNEL_TABLE
    _require(db, t, "start", "end", "deviceId", "streamId", "demangledName")
    exprs = {
        "start": "start",
        "end": '"end"',
        "device": "deviceId",
        "stream": "streamId",
        "correlation": "correlationId" if "correlationId" in db.columns(t) else "NULL",
        "name": "demangledName",
    }
    dtypes = {"device": "int16", "stream": "int32", "name": "int32", "short": "int32"}
    has_short = "shortName" in db.columns(t)
    if has_short:
        exprs["short"] = "shortName"
    dims = [c for c in ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ") if c in db.columns(t)]
    out: dict[str, np.ndarray] = {}
    grid = block = None
    if len(dims) == 6:
        n = int(db.q(f'SELECT count(*) FROM "{t}"')[0][0] or 0)  # type: ignore[call-overload]
        grid = np.empty((n, 3), np.int32)
        block = np.empty((n, 3), np.int32)
        for j, c in enumerate(dims):
            exprs[c] = c
            out[c] = (grid if j < 3 else block)[:, j % 3]  # filled in place: no (n, 3) copy
    if "launchType" in db.columns(t):
        exprs["launch"] = "launchType"
        dtypes["launch"] = "int8"
    cols = db.read_ints(t, exprs, dtypes=dtypes, out=out, widen=("name", "short"))
    for c in dims:
        cols.pop(c, None)
    name_id, uniq = _dense(cols.pop("name"))
    names = _names(db, uniq, "kernel name")
    short_names: tuple[str, ...] = ()
    if has_short:
        short = cols.pop("short")
        short_of = np.full(len(uniq), -1, np.int64)
        short_of[name_id] = short
        del short
        short_map = db.strings(np.unique(short_of[short_of >= 0])) if len(uniq) else {}
        short_names = tuple(short_map.get(int(s), "") for s in short_of)
        if not all(short_names):
            short_names = ()
    return KernelTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        device=cols["device"],
        stream=cols["stream"],
        correlation=cols["correlation"],
        name_id=name_id,
        names=names,
        short_names=short_names,
        grid=grid,
        block=block,
        launch_type=cols.get("launch"),
    )


def _read_copies(db: _Db) -> CopyTable:
    if not db.has(MEMCPY_TABLE):
        return CopyTable()
    t = MEMCPY_TABLE
    _require(db, t, "start", "end", "deviceId", "bytes", "copyKind")
    c = db.columns(t)
    exprs = {
        "start": "start",
        "end": '"end"',
        "device": "deviceId",
        "stream": "streamId" if "streamId" in c else "NULL",
        "correlation": "correlationId" if "correlationId" in c else "NULL",
        "bytes": "bytes",
        "direction": "copyKind",
        "src": "srcKind" if "srcKind" in c else "NULL",
        "dst": "dstKind" if "dstKind" in c else "NULL",
    }
    cols = db.read_ints(
        t,
        exprs,
        dtypes={"device": "int16", "stream": "int32", "direction": "int8", "src": "int8", "dst": "int8"},
    )
    return CopyTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        device=cols["device"],
        stream=cols["stream"],
        correlation=cols["correlation"],
        direction=cols["direction"],
        bytes=cols["bytes"],
        src_kind=cols["src"],
        dst_kind=cols["dst"],
    )


def _read_memsets(db: _Db) -> MemsetTable:
    if not db.has(MEMSET_TABLE):
        return MemsetTable()
    t = MEMSET_TABLE
    _require(db, t, "start", "end", "deviceId")
    c = db.columns(t)
    cols = db.read_ints(
        t,
        {
            "start": "start",
            "end": '"end"',
            "device": "deviceId",
            "stream": "streamId" if "streamId" in c else "NULL",
            "correlation": "correlationId" if "correlationId" in c else "NULL",
            "bytes": "bytes" if "bytes" in c else "NULL",
        },
        dtypes={"device": "int16", "stream": "int32"},
    )
    return MemsetTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        device=cols["device"],
        stream=cols["stream"],
        correlation=cols["correlation"],
        bytes=cols["bytes"],
    )


def _read_graphs(db: _Db) -> GraphTable:
    if not db.has(GRAPH_TABLE):
        return GraphTable()
    t = GRAPH_TABLE
    _require(db, t, "start", "end")
    c = db.columns(t)
    gid = _col(db, t, "graphId", "graphExecId")
    cols = db.read_ints(
        t,
        {
            "start": "start",
            "end": '"end"',
            "device": "deviceId" if "deviceId" in c else "NULL",
            "stream": "streamId" if "streamId" in c else "NULL",
            "correlation": "correlationId" if "correlationId" in c else "NULL",
            "graph": gid or "NULL",
        },
        dtypes={"device": "int16", "stream": "int32"},
    )
    return GraphTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        device=cols["device"],
        stream=cols["stream"],
        correlation=cols["correlation"],
        graph_id=cols["graph"],
    )


def _read_syncs(db: _Db) -> SyncTable:
    if not db.has(SYNC_TABLE):
        return SyncTable()
    t = SYNC_TABLE
    _require(db, t, "start", "end")
    c = db.columns(t)
    cols = db.read_ints(
        t,
        {
            "start": "start",
            "end": '"end"',
            "device": "deviceId" if "deviceId" in c else "NULL",
            "stream": "streamId" if "streamId" in c else "NULL",
            "correlation": "correlationId" if "correlationId" in c else "NULL",
            "kind": "syncType" if "syncType" in c else "NULL",
        },
        dtypes={"device": "int16", "stream": "int32", "kind": "int8"},
    )
    return SyncTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        device=cols["device"],
        stream=cols["stream"],
        correlation=cols["correlation"],
        kind=cols["kind"],
    )


class _Threads:
    """globalTid -> dense thread index, shared by the API and NVTX tables."""

    def __init__(self) -> None:
        self.tids: list[int] = []
        self.index: dict[int, int] = {}

    def encode(self, gtid: np.ndarray) -> np.ndarray:
        if len(gtid) == 0:
            return np.zeros(0, np.int32)
        codes, uniques = pd.factorize(gtid)
        lut = np.empty(len(uniques), np.int32)
        for k, u in enumerate(np.asarray(uniques).tolist()):
            if u not in self.index:
                self.index[u] = len(self.tids)
                self.tids.append(u)
            lut[k] = self.index[u]
        return lut[codes]

    def labels(self, db: _Db) -> tuple[str, ...]:
        names: dict[int, str] = {}
        if db.has("ThreadNames") and {"nameId", "globalTid"} <= db.columns("ThreadNames"):
            for name_id, g in db.q("SELECT nameId, globalTid FROM ThreadNames"):
                if isinstance(g, int) and isinstance(name_id, int):
                    names[g] = str(name_id)
            if names:
                ids = np.array(sorted({int(v) for v in names.values()}), np.int64)
                strs = db.strings(ids) if db.has("StringIds") else {}
                names = {g: strs.get(int(v), "") for g, v in names.items()}
        out = []
        for g in self.tids:
            pid, tid = (g >> 24) & 0xFFFFFF, g & 0xFFFFFF
            label = f"pid {pid} tid {tid}"
            if names.get(g):
                label = f"{names[g]} ({label})"
            out.append(label)
        return tuple(out)


def _read_api(db: _Db, threads: _Threads) -> ApiTable:
    if not db.has(RUNTIME_TABLE):
        return ApiTable()
    t = RUNTIME_TABLE
    _require(db, t, "start", "end", "nameId")
    c = db.columns(t)
    cols = db.read_ints(
        t,
        {
            "start": "start",
            "end": '"end"',
            "tid": "globalTid" if "globalTid" in c else "NULL",
            "correlation": "correlationId" if "correlationId" in c else "NULL",
            "name": "nameId",
        },
        dtypes={"tid": "int32", "name": "int32"},
        encode={"tid": threads.encode},
        widen=("name",),
    )
    thread = cols.pop("tid")
    name_id, uniq = _dense(cols.pop("name"))
    names = _names(db, uniq, "API name")
    return ApiTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        thread=thread,
        correlation=cols["correlation"],
        name_id=name_id,
        names=names,
        category=ApiTable.categories_for(names, name_id),
    )


NVTX_WHERE = (
    f"eventType IN ({','.join(str(x) for x in NVTX_RANGE_TYPES)})"
    + ' AND "end" IS NOT NULL AND "end" >= start'
)
"""The NVTX_EVENTS rows read as ranges: push/pop and start/end ranges that were closed."""
NVTX_DOMAIN_CREATE = 75
"""ENUM_NSYS_EVENT_TYPE of an NVTX domain creation: its text is the domain's name."""


def _read_nvtx(db: _Db, threads: _Threads) -> RangeTable:
    if not db.has(NVTX_TABLE):
        return RangeTable()
    t = NVTX_TABLE
    _require(db, t, "start", "end", "eventType")
    c = db.columns(t)
    where = NVTX_WHERE
    has_domain = "domainId" in c
    cols = db.read_ints(
        t,
        {
            "start": "start",
            "end": '"end"',
            "tid": "globalTid" if "globalTid" in c else "NULL",
            "text_id": "textId" if "textId" in c else "NULL",
            "rowid": "rowid",
            "domain": "domainId" if has_domain else "NULL",
        },
        where=where,
    )
    n = len(cols["start"])
    if n == 0:
        return RangeTable()
    text_id = cols["text_id"]
    # text is either interned (textId -> StringIds) or inline (text column)
    inline: dict[int, str] = {}
    if "text" in c and bool((text_id < 0).any()):
        for rid, txt in db.q(
            f"SELECT rowid, text FROM {t} WHERE textId IS NULL AND {where}"
            if "textId" in c
            else f"SELECT rowid, text FROM {t} WHERE {where}"
        ):
            inline[int(rid)] = "" if txt is None else str(txt)  # type: ignore[call-overload]
    interned = db.strings(np.unique(text_id[text_id >= 0])) if bool((text_id >= 0).any()) else {}
    labels: list[str] = []
    index: dict[str, int] = {}
    name_id = np.empty(n, np.int32)
    rowid = cols["rowid"]
    for i in range(n):
        tid_ = int(text_id[i])
        s = interned.get(tid_, "") if tid_ >= 0 else inline.get(int(rowid[i]), "")
        k = index.get(s)
        if k is None:
            k = index[s] = len(labels)
            labels.append(s)
        name_id[i] = k
    domain, domains = _nvtx_domains(db, cols["domain"], cols["tid"]) if has_domain else (None, ())
    return RangeTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        thread=threads.encode(cols["tid"]),
        name_id=name_id,
        names=tuple(labels),
        domain=domain,
        domains=domains,
    )


def _nvtx_domains(db: _Db, domain_id: np.ndarray, gtid: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Per range, an index into the domain names (-1: the default domain or an unnamed one), and the names.

    Domain ids are handed out per process, so a domain is looked up by (process, id), falling back
    to the id alone when only one process created a domain of that id.
    """
    out = np.full(len(domain_id), -1, np.int32)
    if not bool((domain_id > 0).any()):
        return out, ()
    c = db.columns(NVTX_TABLE)
    text = "text" if "text" in c else "NULL"
    tid = "globalTid" if "globalTid" in c else "NULL"
    text_id = "textId" if "textId" in c else "NULL"
    rows = db.q(
        f"SELECT domainId, {tid}, {text}, {text_id} FROM {NVTX_TABLE} WHERE eventType = {NVTX_DOMAIN_CREATE}"
    )
    ids = [int(r[3]) for r in rows if isinstance(r[3], int)]
    interned = db.strings(np.array(sorted(set(ids)), np.int64)) if ids and db.has("StringIds") else {}
    by_pid: dict[tuple[int, int], str] = {}
    by_id: dict[int, set[str]] = {}
    for did, g, txt, tid_ in rows:
        if not isinstance(did, int):
            continue
        name = str(txt) if txt is not None else interned.get(tid_, "") if isinstance(tid_, int) else ""
        if not name:
            continue
        pid = (g >> 24) & 0xFFFFFF if isinstance(g, int) else -1
        by_pid[(pid, did)] = name
        by_id.setdefault(did, set()).add(name)
    names: list[str] = []
    index: dict[str, int] = {}
    pids = np.where(gtid >= 0, (gtid >> 24) & 0xFFFFFF, -1)
    pairs = np.unique(np.stack((pids, domain_id), axis=1)[domain_id > 0], axis=0)
    for pid, did in pairs.tolist():
        name = by_pid.get((pid, did), "")
        if not name and len(by_id.get(did, ())) == 1:
            name = next(iter(by_id[did]))
        if not name:
            continue
        k = index.get(name)
        if k is None:
            k = index[name] = len(names)
            names.append(name)
        out[(pids == pid) & (domain_id == did)] = k
    return out, tuple(names)


def _read_gpus(db: _Db) -> tuple[GpuInfo, ...]:
    if not db.has("TARGET_INFO_GPU"):
        return ()
    c = db.columns("TARGET_INFO_GPU")
    want = [
        "id",
        "name",
        "smCount",
        "totalMemory",
        "memoryBandwidth",
        "clockRate",
        "computeMajor",
        "computeMinor",
        "cuDevice",
    ]
    sel = ", ".join(x if x in c else "NULL" for x in want)
    out: list[GpuInfo] = []
    seen: set[int] = set()
    for gid, name, sms, mem, bw, clk, cmaj, cmin, cudev in db.q(f"SELECT {sel} FROM TARGET_INFO_GPU"):
        dev = cudev if isinstance(cudev, int) else gid
        if not isinstance(dev, int) or dev in seen:
            continue
        seen.add(dev)
        out.append(
            GpuInfo(
                device=dev,
                name=str(name or ""),
                sm_count=sms if isinstance(sms, int) else None,
                memory_bytes=mem if isinstance(mem, int) else None,
                memory_bandwidth_bytes_per_s=float(bw) if isinstance(bw, int | float) and bw else None,
                clock_hz=float(clk) if isinstance(clk, int | float) and clk else None,
                compute_capability=(cmaj, cmin) if isinstance(cmaj, int) and isinstance(cmin, int) else None,
            )
        )
    return tuple(sorted(out, key=lambda g: g.device))


HOST_EVENT_TABLES = ("OSRT_API", "CUDNN_EVENTS", "CUBLAS_EVENTS", "MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS")
"""Host-side event tables the loader does not model but whose times belong to the capture: the OS
runtime calls (``-t osrt``: the process's reads, waits and allocations from its very start, before any
CUDA call) and library/MPI call traces. Nsight's own ``PROFILER_OVERHEAD`` rows are not the program's."""


def _capture_extent(db: _Db) -> tuple[int | None, int | None]:
    """First and last time of the events in :data:`HOST_EVENT_TABLES` (OS runtime calls by their start
    only: a ``poll()`` that began inside the capture can end long after it), or (None, None).

    With the CUDA, NVTX and GPU tables this is the capture's span: the first to the last recorded event
    of any kind (as the validation gallery's ``measure.py`` defines it). A whole-process capture starts
    with the process (imports, host set-up) long before its first CUDA call; the CUDA tables alone
    would drop that time.
    """
    lo: list[int] = []
    hi: list[int] = []
    ok = f"start >= 0 AND start < {TIMESTAMP_LIMIT_NS}"
    for t in HOST_EVENT_TABLES:
        if not db.has(t) or "start" not in db.columns(t):
            continue
        end = "start" if t == "OSRT_API" or "end" not in db.columns(t) else "end"
        try:
            row = db.conn.execute(
                f'SELECT min(start), max({end}) FROM "{t}" WHERE {ok} AND {end} >= start '
                f"AND {end} < {TIMESTAMP_LIMIT_NS}"
            ).fetchone()
        except sqlite3.DatabaseError:
            continue  # a damaged table the loader does not model: the CUDA tables still give a span
        if row and isinstance(row[0], int) and isinstance(row[1], int):
            lo.append(row[0])
            hi.append(row[1])
    return (min(lo), max(hi)) if lo else (None, None)


def _profiler_overhead(db: _Db) -> tuple[tuple[int, int], ...]:
    """The merged intervals of nsys's own work inside the process (``PROFILER_OVERHEAD``: "CUDA profiling
    initialization", buffer flushes, CUPTI resource management). Its ``dlopen(...)`` rows time the program's
    own library loads and stay the program's."""
    t = "PROFILER_OVERHEAD"
    if not db.has(t) or not {"start", "end"} <= db.columns(t):
        return ()
    named = "nameId" in db.columns(t) and db.has("StringIds")
    sql = (
        f'SELECT p.start, p."end" FROM "{t}" p LEFT JOIN StringIds s ON s.id = p.nameId '
        "WHERE (s.value IS NULL OR s.value NOT LIKE 'dlopen%') AND "
        if named
        else f'SELECT p.start, p."end" FROM "{t}" p WHERE '
    ) + f'p.start >= 0 AND p."end" >= p.start AND p."end" < {TIMESTAMP_LIMIT_NS} ORDER BY p.start'
    try:
        rows = db.conn.execute(sql).fetchall()
    except sqlite3.DatabaseError:
        return ()  # a damaged table the loader does not model: no overhead known
    out: list[list[int]] = []
    for a, b in rows:
        if not isinstance(a, int) or not isinstance(b, int):
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def _meta(db: _Db) -> dict[str, str]:
    for t in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if db.has(t) and {"name", "value"} <= db.columns(t):
            return {str(k): str(v) for k, v in db.q(f"SELECT name, value FROM {t}")}
    return {}


def _command(db: _Db, main_tid: int | None) -> str:
    """The profiled command line (META_DATA_CAPTURE, 2023+), else the name of the process that made the API calls."""
    if db.has("META_DATA_CAPTURE") and {"name", "value"} <= db.columns("META_DATA_CAPTURE"):
        rows = db.q("SELECT name, value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:%'")
        kv = {str(k): str(v) for k, v in rows}
        cmd = kv.get("PROCESS_0:COMMAND", "")
        if cmd:
            args = [
                kv[k]
                for k in sorted(
                    (k for k in kv if k.startswith("PROCESS_0:ARGUMENT_")),
                    key=lambda k: int(k.rsplit("_", 1)[1]) if k.rsplit("_", 1)[1].isdigit() else 0,
                )
            ]
            return shlex.join([cmd, *args])
    if main_tid is not None and db.has("PROCESSES") and {"pid", "name"} <= db.columns("PROCESSES"):
        rows = db.q("SELECT name FROM PROCESSES WHERE pid = ? LIMIT 1", ((main_tid >> 24) & 0xFFFFFF,))
        if rows and rows[0][0]:
            return str(rows[0][0])
    return ""


# ----------------------------------------------------------------------------- public


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
        meta = _meta(db)
        cuda_tables = {KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE, RUNTIME_TABLE, GRAPH_TABLE, SYNC_TABLE}
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
        cap_lo, cap_hi = _capture_extent(db)
        overhead = _profiler_overhead(db)
    finally:
        db.close()
    tool = f"nsys {version}".strip() if version else "nsys"
    if schema:
        tool += f" (export schema {schema})"
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
        tool_version=tool,
        command=command,
        notes=tuple(notes),
        has_host_trace=RUNTIME_TABLE in db.tables,
        counts=aside.counts,
        damaged=tuple(aside.damaged),
    )
    return set_aside_impossible(timeline)


def cache_dir() -> Path:
    """Where converted ``.nsys-rep`` exports are kept: ``$KPROF_CACHE_DIR`` or ``~/.cache/kprof``."""
    env = os.environ.get("KPROF_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "kprof"


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
    return dataclasses.replace(tl, source=source)


__all__ = ["cache_dir", "cached_export_path", "export_command", "load_nsys_rep", "load_nsys_sqlite"]
