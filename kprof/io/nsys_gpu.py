"""The GPU side of an nsys export: kernels, CUDA graphs traced whole, copies, memsets,
synchronizations and the GPUs, and the rows whose times cannot be real, set aside with a note
(see :mod:`kprof.io.nsys`)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import numpy as np

from kprof.errors import KprofInputError
from kprof.io.nsys_db import (
    GRAPH_TABLE,
    KERNEL_TABLE,
    MEMCPY_TABLE,
    MEMSET_TABLE,
    NVTX_TABLE,
    RUNTIME_TABLE,
    SYNC_TABLE,
    _col,
    _Db,
    _dense,
    _names,
    _require,
)
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
)

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
