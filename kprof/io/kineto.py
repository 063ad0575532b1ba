"""PyTorch profiler (Kineto) Chrome-trace loader: ``.json`` and ``.json.gz``, current and 2021 schemas.

Schema facts this loader copes with (seen in real traces): ``ts``/``dur`` are
microseconds, int or float (float traces may carry nanosecond digits); categories changed
case between 2021 (``Kernel``, ``Runtime``, ``Memcpy``, ``Operator``) and now (``kernel``,
``cuda_runtime``, ``gpu_memcpy``, ``cpu_op``); the 2021 schema writes ``external id`` and
thread ids like ``"stream 7"``; flow events (``ac2g``) may be missing, so GPU work is tied
to its launch through ``args.correlation``.

Memory. The trace is never held whole: the file is decoded in chunks and the
``traceEvents`` array is parsed one event at a time (``json.JSONDecoder.raw_decode``),
each event's needed fields appended to typed columns, the event itself dropped. Peak
memory is the columns plus one chunk, well under the size of the file, where
``json.load`` would need several times the file size in Python objects.

Timestamps. Floats are parsed from their text (``parse_float=str``) and converted to
integer nanoseconds digit by digit: a float64 holding an epoch in microseconds
(~1.7e15) is only good to 0.25 us, which would blur the microsecond gaps kprof measures.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import os
import re
import zlib
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from kprof.errors import KprofInputError
from kprof.io.files import GZIP_MAGIC
from kprof.timeline_model import (
    MEM_DEVICE,
    MEM_MANAGED,
    MEM_PAGEABLE,
    MEM_PINNED,
    MEM_UNKNOWN,
    TIMESTAMP_LIMIT_NS,
    ApiTable,
    CopyTable,
    DamagedRows,
    GpuInfo,
    HostOpTable,
    KernelTable,
    MemsetTable,
    RangeTable,
    StepTable,
    SyncTable,
    Timeline,
    set_aside_impossible,
)

READ_CHUNK = 8 << 20
"""Bytes read (and decoded) at a time."""
_NUMBER_CHARS = frozenset("0123456789.eE+-")

_KERNEL = {"kernel"}
_COPY = {"gpu_memcpy", "memcpy"}
_MEMSET = {"gpu_memset", "memset"}
_API = {"cuda_runtime", "runtime", "cuda_driver", "driver"}
_SYNC = {"cuda_sync"}
_HOST_OP = {"cpu_op", "operator", "python_function"}
_ANNOTATION = {"user_annotation"}
_STEP_PREFIX = "ProfilerStep#"
_COPY_DIR = {"htod": 1, "dtoh": 2, "dtod": 8, "htoh": 9, "ptop": 10}
_MEM_KIND = {"pageable": MEM_PAGEABLE, "pinned": MEM_PINNED, "device": MEM_DEVICE, "managed": MEM_MANAGED}
_SYNC_KIND = {"event sync": 1, "wait event": 2, "stream wait event": 2, "stream sync": 3, "context sync": 4}


def _ns(v: Any) -> int:
    """Microseconds (int, float, or float text) -> integer nanoseconds, exactly for decimal text."""
    if type(v) is int:
        return v * 1000
    if type(v) is str:
        if "e" in v or "E" in v:
            return round(float(v) * 1000)
        neg = v.startswith("-")
        i, _, f = v.lstrip("+-").partition(".")
        ns = int(i or 0) * 1000 + (int((f + "000")[:3]) if f else 0)
        return -ns if neg else ns
    if isinstance(v, float):
        return round(v * 1000)
    raise TypeError(v)


class _Reader:
    """Incremental JSON reader over a (possibly gzip) file: one value at a time.

    The text is decoded as UTF-8 (a leading byte-order mark is skipped, as ``json.load``
    does; undecodable bytes become U+FFFD instead of failing the whole trace) and held one
    chunk at a time. ``json.JSONDecoder.raw_decode`` parses each value, so strings with
    braces, brackets, escaped quotes or any unicode are read exactly as ``json.load`` reads
    them. A value cut by the chunk boundary is retried with the next chunk; a value that is
    invalid anywhere else raises at once rather than reading the rest of the file first.
    """

    def __init__(self, f: IO[bytes], path: Path) -> None:
        self.f = f
        self.path = path
        self.dec = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self.buf = ""
        self.pos = 0
        self.base = 0
        """Characters of the file before ``buf`` (for error positions)."""
        self.eof = False
        self.json = json.JSONDecoder(parse_float=str)

    def _fill(self) -> bool:
        if self.eof:
            return False
        try:
            data = self.f.read(READ_CHUNK)
        except (OSError, EOFError, zlib.error) as exc:
            raise KprofInputError(self.path, f"truncated or corrupt compressed data ({exc})") from exc
        self.base += self.pos
        if not data:
            self.eof = True
            self.buf = self.buf[self.pos :] + self.dec.decode(b"", final=True)
            self.pos = 0
            return False
        self.buf = self.buf[self.pos :] + self.dec.decode(data)
        self.pos = 0
        return True

    def _cut_by_chunk_end(self, exc: json.JSONDecodeError) -> bool:
        """Whether a decode error can be the chunk boundary cutting a valid value short."""
        if self.eof:
            return False
        # the scanner stops where the text ends; only an unterminated string reports its start
        return exc.pos >= len(self.buf) - 16 or exc.msg.startswith("Unterminated string")

    def _bad(self, why: str) -> KprofInputError:
        return KprofInputError(self.path, f"not valid JSON ({why}; truncated file?)")

    def peek(self) -> str:
        """The next non-whitespace character ('' at the end of the input)."""
        while True:
            buf, pos = self.buf, self.pos
            n = len(buf)
            while pos < n and buf[pos] in " \t\r\n":
                pos += 1
            self.pos = pos
            if pos < n:
                return buf[pos]
            if not self._fill():
                return ""

    def expect(self, ch: str) -> None:
        c = self.peek()
        if c != ch:
            where = f"found {c!r}" if c else "the file ends"
            raise KprofInputError(self.path, f"not valid JSON: expected {ch!r} but {where} (truncated file?)")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                v, end = self.json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # a value cut by the end of the chunk: read more and retry
                if self._cut_by_chunk_end(exc) and self._fill():
                    continue
                where = self.base + exc.pos
                raise self._bad(f"{exc.msg} at character {where:,}") from exc
            except RecursionError as exc:
                raise self._bad(f"nested too deeply at character {self.base + self.pos:,}") from exc
            # a bare number may continue in the next chunk ("0." + "5", "17" + "00"): the parse of
            # a cut one succeeds on its prefix, so retry while the number runs to the buffer's end
            if not self.eof and self.buf[self.pos] not in '{["':
                stop = end
                while stop < len(self.buf) and self.buf[stop] in _NUMBER_CHARS:
                    stop += 1
                if stop >= len(self.buf) and self._fill():
                    continue
            self.pos = end
            return v


def _open(p: Path) -> IO[bytes]:
    try:
        with open(p, "rb") as raw:
            magic = raw.read(2)
        if magic == GZIP_MAGIC:
            return gzip.open(p, "rb")  # type: ignore[return-value]
        return open(p, "rb")
    except OSError as exc:
        raise KprofInputError(p, f"cannot read: {exc.strerror}") from exc


def _iter_trace(p: Path, top: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield the events of ``traceEvents`` one by one; other top-level keys go into ``top``."""
    with _open(p) as f:
        r = _Reader(f, p)
        c = r.peek()
        if c == "[":  # bare array form of the Chrome trace format
            top["traceEvents"] = True
            yield from _iter_array(r)
            return
        if c != "{":
            raise KprofInputError(p, "not a PyTorch profiler trace (not a JSON object or array)")
        r.pos += 1
        first = True
        while True:
            c = r.peek()
            if c == "}":
                r.pos += 1
                break
            if not first:
                r.expect(",")
                if r.peek() == "}":
                    r.pos += 1
                    break
            first = False
            key = r.value()
            if not isinstance(key, str):
                raise KprofInputError(p, "not valid JSON (object key is not a string)")
            r.expect(":")
            if key == "traceEvents":
                if r.peek() != "[":
                    raise KprofInputError(p, "traceEvents is not a list")
                top["traceEvents"] = True
                yield from _iter_array(r)
            else:
                top[key] = r.value()
        if r.peek() != "":
            raise KprofInputError(p, "not valid JSON (extra data after the trace)")


def _iter_array(r: _Reader) -> Iterator[dict[str, Any]]:
    r.expect("[")
    if r.peek() == "]":
        r.pos += 1
        return
    while True:
        v = r.value()
        if isinstance(v, dict):
            yield v
        else:
            raise KprofInputError(
                r.path, "not a PyTorch profiler trace (traceEvents holds a non-object entry)"
            )
        c = r.peek()
        if c == ",":
            r.pos += 1
            if r.peek() == "]":  # trailing comma, as some writers leave
                r.pos += 1
                return
            continue
        if c == "]":
            r.pos += 1
            return
        raise KprofInputError(r.path, "not valid JSON: traceEvents list is not closed (truncated file?)")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(s: str) -> str:
    """``s`` with lone UTF-16 surrogates (JSON may escape half a pair, ``"k\\ud800x"``, and Python keeps
    it) replaced by U+FFFD, as undecodable bytes are: such a string cannot be written as UTF-8."""
    return _LONE_SURROGATE.sub("\ufffd", s)


class _Names:
    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []

    def id(self, s: str) -> int:
        k = self.index.get(s)
        if k is None:
            k = self.index[s] = len(self.names)
            self.names.append(_text(s))
        return k


def _arr(a: array, dtype: str) -> np.ndarray:
    return np.frombuffer(a, dtype=np.int64).astype(dtype) if len(a) else np.zeros(0, dtype)


_INT_TEXT = re.compile(r"-?[0-9]+")
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_TS_LIMIT = TIMESTAMP_LIMIT_NS
"""Nanosecond timestamps beyond +-2**62 (146 years) are not timestamps: such events are counted, not loaded
(the same limit the nsys loader applies)."""


def _int(v: Any, default: int = -1) -> int:
    """An integer field (int, float, float text, ``"stream 7"``), or ``default`` if it is none or beyond int64."""
    out: int
    if type(v) is int:
        out = v
    elif isinstance(v, str):
        s = v.strip()
        tail = s.rsplit(" ", 1)[-1]  # "stream 7"
        if _INT_TEXT.fullmatch(s):
            out = int(s)
        elif _INT_TEXT.fullmatch(tail):
            out = int(tail)
        else:
            try:  # the decoder keeps JSON floats as text
                f = float(s)
            except ValueError:
                return default
            if not math.isfinite(f):
                return default
            out = int(f)
    elif isinstance(v, float) and math.isfinite(v):
        out = int(v)
    else:
        return default
    return out if _I64_MIN <= out <= _I64_MAX else default


def _args(ev: dict[str, Any]) -> dict[str, Any]:
    """An event's ``args`` object ({} when absent or not an object)."""
    a = ev.get("args")
    return a if isinstance(a, dict) else {}


def _hashable(v: Any) -> Any:
    """A pid/tid usable as a dict key (JSON arrays and objects become their text)."""
    return v if v is None or isinstance(v, int | float | str) else json.dumps(v, sort_keys=True)


def _copy_kind(name: str) -> tuple[int, int, int]:
    """``"Memcpy HtoD (Pageable -> Device)"`` -> (direction, src kind, dst kind)."""
    low = name.lower()
    direction = 0
    for k, code in _COPY_DIR.items():
        if k in low:
            direction = code
            break
    src = dst = MEM_UNKNOWN
    if "(" in low and "->" in low:
        inside = low[low.index("(") + 1 : low.rindex(")") if ")" in low else len(low)]
        a, _, b = inside.partition("->")
        src = _MEM_KIND.get(a.strip(), MEM_UNKNOWN)
        dst = _MEM_KIND.get(b.strip(), MEM_UNKNOWN)
    return direction, src, dst


def load_kineto(path: str | os.PathLike[str]) -> Timeline:
    """Load a PyTorch profiler Chrome trace (``.json`` or ``.json.gz``) into a :class:`Timeline`.

    Rows whose times cannot be true are set aside and named
    (:func:`~kprof.timeline_model.set_aside_impossible`); :func:`read_kineto` keeps every event.

    Raises
    ------
    KprofInputError
        Invalid or truncated JSON or gzip data, or JSON that is not a profiler trace.

    Examples
    --------
    >>> tl = load_kineto("data/samples/host_launch_bound.json.gz")  # doctest: +SKIP
    >>> tl.steps.number  # doctest: +SKIP
    array([2, 3, 4, ...])
    """
    return set_aside_impossible(read_kineto(path))


def read_kineto(path: str | os.PathLike[str]) -> Timeline:
    """The trace's events as the file has them: :func:`load_kineto` without setting impossible rows aside
    (events whose ts/dur is not a time at all are still left out, and counted)."""
    p = Path(path)
    if not p.is_file():
        raise KprofInputError(p, "no such file")
    top: dict[str, Any] = {}
    col = _collect(p, top)
    if "traceEvents" not in top:
        keys = ", ".join(sorted(top)[:5]) or "none"
        raise KprofInputError(
            p, f"JSON but not a PyTorch profiler trace (no traceEvents list; top-level keys: {keys})"
        )

    if col.n_events and not col.n_chrome:
        raise KprofInputError(
            p, "JSON but not a PyTorch profiler trace (traceEvents entries have no 'ph' field)"
        )
    return col.timeline(path, top)


_I64 = "q"


class _Columns:
    """A trace's events read so far, column by column, per table (:func:`_collect`)."""

    def __init__(self) -> None:
        def cols(*names: str) -> dict[str, array]:
            return {k: array(_I64) for k in names}

        self.k = cols("s", "e", "dev", "stream", "corr", "name", "gx", "gy", "gz", "bx", "by", "bz")
        self.c = cols("s", "e", "dev", "stream", "corr", "dir", "bytes", "src", "dst")
        self.m = cols("s", "e", "dev", "stream", "corr", "bytes")
        self.y = cols("s", "e", "dev", "stream", "corr", "kind")
        self.a = cols("s", "e", "tid", "corr", "name")
        self.h = cols("s", "e", "tid", "name")
        self.r = cols("s", "e", "tid", "name")
        self.st = cols("s", "e", "tid", "num")
        self.knames, self.anames, self.hnames, self.rnames = _Names(), _Names(), _Names(), _Names()
        self.threads: dict[tuple[Any, Any], int] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.process_names: dict[Any, str] = {}
        self.capture: list[tuple[int, int]] = []
        self.other: dict[str, int] = {}
        self.no_time: dict[str, list[Any]] = {}  # table -> [events without a usable time, the first one]
        self.has_grid = True
        self.n_events = 0
        self.n_chrome = 0

    def thread_of(self, ev: dict[str, Any]) -> int:
        key = (_hashable(ev.get("pid")), _hashable(ev.get("tid")))
        t = self.threads.get(key)
        if t is None:
            t = self.threads[key] = len(self.threads)
        return t

    def metadata(self, ev: dict[str, Any]) -> None:
        """A ``ph: M`` event: a thread's or a process's name."""
        name = ev.get("name")
        args = _args(ev)
        if name == "thread_name":
            self.thread_names[(_hashable(ev.get("pid")), _hashable(ev.get("tid")))] = _text(
                str(args.get("name", ""))
            )
        elif name == "process_name":
            self.process_names[_hashable(ev.get("pid"))] = _text(str(args.get("name", "")))

    def untimed(self, ev: dict[str, Any], cat: str) -> None:
        """An event whose ts/dur is not a time: counted, and the first of its table kept for the note."""
        self.other["events without a valid ts/dur"] = self.other.get("events without a valid ts/dur", 0) + 1
        table = _table_of(cat, str(ev.get("name", "")))
        if table is not None:
            n_first = self.no_time.setdefault(
                table,
                [
                    0,
                    f"{_text(str(ev.get('name', '')))[:80]!r} with ts {ev.get('ts')!r}, dur {ev.get('dur')!r}",
                ],
            )
            n_first[0] += 1

    def kernel(self, ev: dict[str, Any], s: int, e: int, args: dict[str, Any]) -> None:
        kc = self.k
        kc["s"].append(s)
        kc["e"].append(e)
        kc["dev"].append(_int(args.get("device", ev.get("pid")), 0))
        kc["stream"].append(_int(args.get("stream", ev.get("tid"))))
        kc["corr"].append(_int(args.get("correlation")))
        kc["name"].append(self.knames.id(str(ev.get("name", ""))))
        g = args.get("grid")
        b = args.get("block")
        if isinstance(g, list) and isinstance(b, list) and len(g) == 3 and len(b) == 3:
            kc["gx"].append(_int(g[0]))
            kc["gy"].append(_int(g[1]))
            kc["gz"].append(_int(g[2]))
            kc["bx"].append(_int(b[0]))
            kc["by"].append(_int(b[1]))
            kc["bz"].append(_int(b[2]))
        else:
            self.has_grid = False

    def api(self, ev: dict[str, Any], s: int, e: int, args: dict[str, Any]) -> None:
        ac = self.a
        ac["s"].append(s)
        ac["e"].append(e)
        ac["tid"].append(self.thread_of(ev))
        ac["corr"].append(_int(args.get("correlation")))
        ac["name"].append(self.anames.id(str(ev.get("name", ""))))

    def host(self, ev: dict[str, Any], cat: str, s: int, e: int) -> None:
        """A host operator or annotation: a profiler step, a user range, or an operator."""
        name = str(ev.get("name", ""))
        tid = self.thread_of(ev)
        if name.startswith(_STEP_PREFIX):
            sc = self.st
            sc["s"].append(s)
            sc["e"].append(e)
            sc["tid"].append(tid)
            sc["num"].append(_int(name[len(_STEP_PREFIX) :]))
        elif cat in _ANNOTATION:
            rc = self.r
            rc["s"].append(s)
            rc["e"].append(e)
            rc["tid"].append(tid)
            rc["name"].append(self.rnames.id(name))
        else:
            hc = self.h
            hc["s"].append(s)
            hc["e"].append(e)
            hc["tid"].append(tid)
            hc["name"].append(self.hnames.id(name))

    def device_op(
        self, cols: dict[str, array], ev: dict[str, Any], s: int, e: int, args: dict[str, Any]
    ) -> None:
        """The columns a copy, a memset and a sync share."""
        cols["s"].append(s)
        cols["e"].append(e)
        cols["dev"].append(_int(args.get("device", ev.get("pid")), 0))
        cols["stream"].append(_int(args.get("stream", ev.get("tid"))))
        cols["corr"].append(_int(args.get("correlation")))

    def copy(self, ev: dict[str, Any], s: int, e: int, args: dict[str, Any]) -> None:
        cc = self.c
        d, src, dst = _copy_kind(str(ev.get("name", "")))
        self.device_op(cc, ev, s, e, args)
        cc["dir"].append(d)
        cc["bytes"].append(_int(args.get("bytes"), 0))
        cc["src"].append(src)
        cc["dst"].append(dst)

    def memset(self, ev: dict[str, Any], s: int, e: int, args: dict[str, Any]) -> None:
        self.device_op(self.m, ev, s, e, args)
        self.m["bytes"].append(_int(args.get("bytes"), 0))

    def sync(self, ev: dict[str, Any], s: int, e: int, args: dict[str, Any]) -> None:
        self.device_op(self.y, ev, s, e, args)
        kind = str(args.get("cuda_sync_kind", ev.get("name", ""))).lower()
        self.y["kind"].append(_SYNC_KIND.get(kind, 0))

    def kernel_table(self) -> KernelTable:
        k_cols = self.k
        kn = len(k_cols["s"])
        grid = block = None
        if kn and self.has_grid and len(k_cols["gx"]) == kn:
            grid = np.stack([_arr(k_cols[c], "int32") for c in ("gx", "gy", "gz")], axis=1)
            block = np.stack([_arr(k_cols[c], "int32") for c in ("bx", "by", "bz")], axis=1)
        return KernelTable(
            start_ns=_arr(k_cols["s"], "int64"),
            end_ns=_arr(k_cols["e"], "int64"),
            device=_arr(k_cols["dev"], "int16"),
            stream=_arr(k_cols["stream"], "int32"),
            correlation=_arr(k_cols["corr"], "int64"),
            name_id=_arr(k_cols["name"], "int32"),
            names=tuple(self.knames.names),
            grid=grid,
            block=block,
        )

    def device_tables(self) -> tuple[CopyTable, MemsetTable, SyncTable]:
        c_cols, m_cols, y_cols = self.c, self.m, self.y
        copies = CopyTable(
            start_ns=_arr(c_cols["s"], "int64"),
            end_ns=_arr(c_cols["e"], "int64"),
            device=_arr(c_cols["dev"], "int16"),
            stream=_arr(c_cols["stream"], "int32"),
            correlation=_arr(c_cols["corr"], "int64"),
            direction=_arr(c_cols["dir"], "int8"),
            bytes=_arr(c_cols["bytes"], "int64"),
            src_kind=_arr(c_cols["src"], "int8"),
            dst_kind=_arr(c_cols["dst"], "int8"),
        )
        memsets = MemsetTable(
            start_ns=_arr(m_cols["s"], "int64"),
            end_ns=_arr(m_cols["e"], "int64"),
            device=_arr(m_cols["dev"], "int16"),
            stream=_arr(m_cols["stream"], "int32"),
            correlation=_arr(m_cols["corr"], "int64"),
            bytes=_arr(m_cols["bytes"], "int64"),
        )
        syncs = SyncTable(
            start_ns=_arr(y_cols["s"], "int64"),
            end_ns=_arr(y_cols["e"], "int64"),
            device=_arr(y_cols["dev"], "int16"),
            stream=_arr(y_cols["stream"], "int32"),
            correlation=_arr(y_cols["corr"], "int64"),
            kind=_arr(y_cols["kind"], "int8"),
        )
        return copies, memsets, syncs

    def host_tables(self) -> tuple[ApiTable, HostOpTable, RangeTable, StepTable]:
        a_cols, h_cols, r_cols, st_cols = self.a, self.h, self.r, self.st
        api_name_id = _arr(a_cols["name"], "int32")
        api = ApiTable(
            start_ns=_arr(a_cols["s"], "int64"),
            end_ns=_arr(a_cols["e"], "int64"),
            thread=_arr(a_cols["tid"], "int32"),
            correlation=_arr(a_cols["corr"], "int64"),
            name_id=api_name_id,
            names=tuple(self.anames.names),
            category=ApiTable.categories_for(self.anames.names, api_name_id),
        )
        host_ops = HostOpTable(
            start_ns=_arr(h_cols["s"], "int64"),
            end_ns=_arr(h_cols["e"], "int64"),
            thread=_arr(h_cols["tid"], "int32"),
            name_id=_arr(h_cols["name"], "int32"),
            names=tuple(self.hnames.names),
        )
        ranges = RangeTable(
            start_ns=_arr(r_cols["s"], "int64"),
            end_ns=_arr(r_cols["e"], "int64"),
            thread=_arr(r_cols["tid"], "int32"),
            name_id=_arr(r_cols["name"], "int32"),
            names=tuple(self.rnames.names),
        )
        steps = StepTable(
            start_ns=_arr(st_cols["s"], "int64"),
            end_ns=_arr(st_cols["e"], "int64"),
            thread=_arr(st_cols["tid"], "int32"),
            number=_arr(st_cols["num"], "int64"),
        )
        if len(steps) > 1:
            order = np.argsort(steps.start_ns, kind="stable")
            steps = StepTable(
                start_ns=steps.start_ns[order],
                end_ns=steps.end_ns[order],
                thread=steps.thread[order],
                number=steps.number[order],
            )
        return api, host_ops, ranges, steps

    def thread_labels(self) -> list[str]:
        labels = []
        for key in self.threads:
            pid, tid = key
            name = self.thread_names.get(key) or self.process_names.get(pid) or ""
            label = f"pid {pid} tid {tid}"
            labels.append(f"{name} ({label})" if name else label)
        return labels

    def timeline(self, path: str | os.PathLike[str], top: dict[str, Any]) -> Timeline:
        """The :class:`Timeline` of what was read (``top``: the trace's top-level fields)."""
        kernels = self.kernel_table()
        copies, memsets, syncs = self.device_tables()
        api, host_ops, ranges, steps = self.host_tables()
        other = self.other
        gpus = _gpus(top.get("deviceProperties"), kernels)
        labels = self.thread_labels()
        notes: list[str] = []
        if other.get("cuda_profiler_range"):
            notes.append(
                f"{other['cuda_profiler_range']} CUPTI range-profiler events (cuda_profiler_range): a counter "
                "collection, not a kernel timeline"
            )
        if self.n_events == 0:
            notes.append("the trace holds no events")
        capture = self.capture
        cap_s = min(c[0] for c in capture) if capture else None
        cap_e = max(c[1] for c in capture) if capture else None
        schema = top.get("schemaVersion")
        proc = next(
            (v for v in self.process_names.values() if v and v.lower() not in ("", "spans", "traces")), ""
        )
        sizes = {"kernels": kernels, "copies": copies, "memsets": memsets, "syncs": syncs, "api": api}
        sizes |= {"host_ops": host_ops, "ranges": ranges, "steps": steps}
        damaged = [
            DamagedRows(
                table=table,
                count=n,
                total=n + len(sizes[table]),
                why="a ts or dur that is not a time (not a number, or beyond 2**62 ns)",
                first=first,
            )
            for table, (n, first) in self.no_time.items()
        ]
        notes += [d.describe() for d in damaged]
        return Timeline(
            source=str(path),
            format="kineto",
            gpus=gpus,
            kernels=kernels,
            copies=copies,
            memsets=memsets,
            syncs=syncs,
            api=api,
            host_ops=host_ops,
            ranges=ranges,
            steps=steps,
            threads=tuple(labels),
            capture_start_ns=cap_s,
            capture_end_ns=cap_e,
            tool_version=f"PyTorch profiler (Kineto) trace, schema {schema}"
            if schema is not None
            else "PyTorch profiler (Kineto) trace",
            command=proc,
            notes=tuple(notes),
            has_host_trace=len(api) > 0,
            counts=other,
            damaged=tuple(damaged),
        )


def _collect(p: Path, top: dict[str, Any]) -> _Columns:
    """Read every event of the trace into columns (``top`` receives its top-level fields)."""
    col = _Columns()
    n_events = n_chrome = 0
    for ev in _iter_trace(p, top):
        n_events += 1
        ph = ev.get("ph")
        if ph is None:
            continue
        n_chrome += 1
        if ph == "M":
            col.metadata(ev)
            continue
        if ph != "X":
            continue
        cat = ev.get("cat")
        if not isinstance(cat, str):
            continue
        cat = cat.lower()
        try:
            s = _ns(ev["ts"])
            e = s + _ns(ev.get("dur", 0))
            if not (-_TS_LIMIT < s < _TS_LIMIT and -_TS_LIMIT < e < _TS_LIMIT):
                raise ValueError("out of range")
        except (KeyError, TypeError, ValueError, OverflowError):
            col.untimed(ev, cat)
            continue
        args = _args(ev)
        if cat in _KERNEL:
            col.kernel(ev, s, e, args)
        elif cat in _API:
            col.api(ev, s, e, args)
        elif cat in _HOST_OP or cat in _ANNOTATION:
            col.host(ev, cat, s, e)
        elif cat in _COPY:
            col.copy(ev, s, e, args)
        elif cat in _MEMSET:
            col.memset(ev, s, e, args)
        elif cat in _SYNC:
            col.sync(ev, s, e, args)
        elif cat == "trace":
            col.capture.append((s, e))
        else:
            col.other[cat] = col.other.get(cat, 0) + 1
    col.n_events, col.n_chrome = n_events, n_chrome
    return col


def _table_of(cat: str, name: str) -> str | None:
    """The :class:`Timeline` table an event of category ``cat`` goes to (None: not loaded)."""
    if cat in _KERNEL:
        return "kernels"
    if cat in _API:
        return "api"
    if cat in _COPY:
        return "copies"
    if cat in _MEMSET:
        return "memsets"
    if cat in _SYNC:
        return "syncs"
    if cat in _HOST_OP or cat in _ANNOTATION:
        return "steps" if name.startswith(_STEP_PREFIX) else "ranges" if cat in _ANNOTATION else "host_ops"
    return None


def _gpus(props: Any, kernels: KernelTable) -> tuple[GpuInfo, ...]:
    out: dict[int, GpuInfo] = {}
    if isinstance(props, list):
        for d in props:
            if not isinstance(d, dict):
                continue
            dev = _int(d.get("id"), -1)
            if dev < 0:
                continue
            cmaj, cmin = d.get("computeMajor"), d.get("computeMinor")
            sms = d.get("numSms")
            mem = d.get("totalGlobalMem")
            out[dev] = GpuInfo(
                device=dev,
                name=str(d.get("name", "")),
                sm_count=sms if isinstance(sms, int) else None,
                memory_bytes=mem if isinstance(mem, int) else None,
                compute_capability=(cmaj, cmin) if isinstance(cmaj, int) and isinstance(cmin, int) else None,
            )
    for dev in np.unique(kernels.device).tolist():
        if int(dev) not in out:
            out[int(dev)] = GpuInfo(device=int(dev))
    return tuple(out[k] for k in sorted(out))


__all__ = ["load_kineto", "read_kineto"]
