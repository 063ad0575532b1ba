"""Nsight Systems loader: ``.sqlite`` exports (nsys 2022.x to 2025.x) and ``.nsys-rep`` reports.

How the schema drifts (see ``../shared/corpus/README.md``): the metadata table is
``EXPORT_META_DATA`` up to 2023 and ``META_DATA_EXPORT`` after; 2024+ exports omit empty
tables; columns keep being added; API names carry ``_vNNNN`` suffixes. The loader asks
``PRAGMA table_info`` which columns exist and reads only those it needs.

Opening the user's file. The database is opened through a URI with ``immutable=1``:
SQLite then takes no locks and never creates a ``-journal``, ``-wal`` or ``-shm`` file,
so the export is neither modified nor locked, and it opens even from a read-only
folder (``mode=ro`` alone still takes a shared lock, and on a WAL database needs a
``-shm`` beside it). ``immutable`` would miss pages still sitting in a ``-wal`` file, so
for the one case of a WAL-mode database with a ``-wal`` beside it the loader falls back
to ``mode=ro``. nsys itself writes rollback-journal databases.

Reading fast. Numeric columns are read per column in chunks of rowids with
``group_concat`` and parsed by numpy, which avoids building one Python tuple per row
(about twice as fast as iterating a cursor, and no per-row objects); names are looked
up once per distinct ``StringIds`` id.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import sqlite3
import subprocess
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from kprof.errors import KprofInputError
from kprof.timeline_model import (
    ApiTable,
    CopyTable,
    GpuInfo,
    GraphTable,
    KernelTable,
    MemsetTable,
    RangeTable,
    SyncTable,
    Timeline,
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


def _connect(p: Path) -> sqlite3.Connection:
    quoted = urllib.parse.quote(str(p.resolve()))
    params = "immutable=1"
    try:
        with open(p, "rb") as f:
            header = f.read(100)
    except OSError as exc:
        raise KprofInputError(p, f"cannot read: {exc.strerror}") from exc
    if not header.startswith(b"SQLite format 3\x00"):
        raise KprofInputError(p, "not an SQLite database (expected an `nsys export --type sqlite` file)")
    if len(header) >= 20 and header[18] == 2 and Path(str(p) + "-wal").exists():
        params = "mode=ro"  # WAL content lives in the -wal file; immutable would not see it
    try:
        conn = sqlite3.connect(f"file:{quoted}?{params}", uri=True, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise KprofInputError(p, f"corrupt or unreadable SQLite database ({exc})") from exc
    return conn


class _Db:
    """A read-only nsys export with the helpers the loader needs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = _connect(path)
        try:
            rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        except sqlite3.DatabaseError as exc:
            raise KprofInputError(path, f"corrupt SQLite database ({exc})") from exc
        self.tables = {r[0] for r in rows}
        self._cols: dict[str, set[str]] = {}

    def close(self) -> None:
        self.conn.close()

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
                s = self.q(
                    f'SELECT group_concat(ifnull({expr}, -1)) FROM "{table}" WHERE rowid BETWEEN ? AND ?{cond}',
                    (a, b),
                )[0][0]
                if s is None:
                    continue
                vals = np.fromstring(str(s), dtype=np.int64, sep=",")
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


def _read_nvtx(db: _Db, threads: _Threads) -> RangeTable:
    if not db.has(NVTX_TABLE):
        return RangeTable()
    t = NVTX_TABLE
    _require(db, t, "start", "end", "eventType")
    c = db.columns(t)
    types = ",".join(str(x) for x in NVTX_RANGE_TYPES)
    where = f'eventType IN ({types}) AND "end" IS NOT NULL AND "end" >= start'
    cols = db.read_ints(
        t,
        {
            "start": "start",
            "end": '"end"',
            "tid": "globalTid" if "globalTid" in c else "NULL",
            "text_id": "textId" if "textId" in c else "NULL",
            "rowid": "rowid",
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
    return RangeTable(
        start_ns=cols["start"],
        end_ns=cols["end"],
        thread=threads.encode(cols["tid"]),
        name_id=name_id,
        names=tuple(labels),
    )


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
    runtime/driver API calls, NVTX ranges and GPU info. The file is opened read-only
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
        kernels = _read_kernels(db)
        copies = _read_copies(db)
        memsets = _read_memsets(db)
        graphs = _read_graphs(db)
        syncs = _read_syncs(db)
        api = _read_api(db, threads)
        ranges = _read_nvtx(db, threads)
        gpus = _read_gpus(db)
        labels = threads.labels(db)
        main_tid = None
        if len(api):
            counts = np.bincount(api.thread)
            main_tid = threads.tids[int(np.argmax(counts))]
        command = _command(db, main_tid)
    finally:
        db.close()
    tool = f"nsys {version}".strip() if version else "nsys"
    if schema:
        tool += f" (export schema {schema})"
    return Timeline(
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
        tool_version=tool,
        command=command,
        notes=tuple(notes),
        has_host_trace=RUNTIME_TABLE in db.tables,
    )


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

    Raises
    ------
    KprofInputError
        When ``nsys`` is not on PATH (the message gives the exact command to run on a
        machine that has it), or when the export fails.

    Examples
    --------
    >>> tl = load_nsys_rep("data/samples/host_launch_bound.nsys-rep")  # doctest: +SKIP
    """
    p = Path(path)
    if not p.is_file():
        raise KprofInputError(p, "no such file")
    target = cached_export_path(p)
    if target.is_file() and target.stat().st_size > 0:
        tl = load_nsys_sqlite(target)
        return _with_source(tl, str(path))
    nsys = shutil.which("nsys")
    if nsys is None:
        raise KprofInputError(
            p,
            "nsys is not on PATH, so the report cannot be read here; on a machine with Nsight Systems run "
            f"`{export_command(p)}` and pass the .sqlite file instead",
        )
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
    return _with_source(load_nsys_sqlite(target), str(path))


@contextlib.contextmanager
def _tmp_name(target: Path) -> Iterator[Path]:
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
    import dataclasses

    return dataclasses.replace(tl, source=source)


__all__ = ["cache_dir", "cached_export_path", "export_command", "load_nsys_rep", "load_nsys_sqlite"]
