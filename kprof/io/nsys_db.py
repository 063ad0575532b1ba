"""An nsys export opened read-only (:class:`_Db`), the tables' names, and the column readers.

Opening and reading are described in :mod:`kprof.io.nsys`: ``immutable=1`` (no lock, no file beside
the user's), a private copy for a WAL-mode database with a non-empty ``-wal``, numeric columns read in
chunks of rowids with ``group_concat`` and parsed by numpy, names looked up once per distinct id."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from kprof.errors import KprofInputError

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
