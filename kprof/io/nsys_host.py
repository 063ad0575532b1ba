"""The host side of an nsys export: threads, runtime and driver API calls, NVTX ranges and their
domains, the capture's span from every host event, nsys's own overhead, the metadata and the
profiled command."""

from __future__ import annotations

import shlex
import sqlite3

import numpy as np
import pandas as pd

from kprof.io.nsys_db import (
    NVTX_RANGE_TYPES,
    NVTX_TABLE,
    RUNTIME_TABLE,
    _Db,
    _dense,
    _names,
    _require,
)
from kprof.timeline_model import (
    TIMESTAMP_LIMIT_NS,
    ApiTable,
    RangeTable,
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


def _capture_place(db: _Db) -> tuple[str, str]:
    """(the profiled process's working directory, the absolute path the export was written to), as the
    capture records them (META_DATA_CAPTURE, META_DATA_EXPORT; nsys 2023+), "" each where it does not."""
    wd = ""
    if db.has("META_DATA_CAPTURE") and {"name", "value"} <= db.columns("META_DATA_CAPTURE"):
        rows = db.q("SELECT value FROM META_DATA_CAPTURE WHERE name = 'PROCESS_0:WORKING_DIR' LIMIT 1")
        wd = str(rows[0][0]) if rows and rows[0][0] else ""
    return wd, _meta(db).get("EXPORT_PARAM_OUTPUT_PATH_ABS", "")


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
