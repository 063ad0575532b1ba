"""Event tables walked a chunk at a time, never copied whole, and the GPU's busy intervals."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from kprof.diagnose import intervals as iv
from kprof.timeline_model import (
    ApiTable,
    CopyTable,
    GraphTable,
    KernelTable,
    MemsetTable,
    Timeline,
)

Pair = tuple[np.ndarray, np.ndarray]


_EMPTY: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))


CHUNK_ROWS = 1 << 18
"""Rows handled at a time when walking the event tables (2 MB per int64 column, ~50 MB of
temporaries per chunk): the diagnosis of ten million kernels then adds about 150 MB to the
loaded timeline instead of gigabytes, no step copies a whole table, and the Python overhead of
~40 chunks per pass is negligible next to the numpy work."""


@dataclass(slots=True)
class _Rows:
    """Some rows of one event table, read in start order a chunk at a time and never copied whole.

    ``mask`` selects the rows (None: all of them); ``order`` lists the selected rows in start
    order when the table does not store them in that order (None: it does, the usual case).
    """

    starts: np.ndarray
    ends: np.ndarray
    cols: tuple[np.ndarray, ...] = ()
    mask: np.ndarray | None = None
    order: np.ndarray | None = None
    count: int = 0

    def chunks(self, size: int | None = None, with_cols: bool = True) -> Iterator[iv.Chunk]:
        """``(starts, ends, *cols)`` of the selected rows, in start order, ``size`` rows at a time."""
        if self.count == 0:
            return
        size = size or CHUNK_ROWS
        cols = self.cols if with_cols else ()
        if self.order is not None:
            for a in range(0, len(self.order), size):
                idx = self.order[a : a + size]
                yield (self.starts[idx], self.ends[idx], *(c[idx] for c in cols))
            return
        for a in range(0, len(self.starts), size):
            sl = slice(a, a + size)
            if self.mask is None:
                yield (self.starts[sl], self.ends[sl], *(c[sl] for c in cols))
                continue
            m = self.mask[sl]
            if m.any():
                yield (self.starts[sl][m], self.ends[sl][m], *(c[sl][m] for c in cols))


_NO_ROWS = _Rows(starts=np.zeros(0, np.int64), ends=np.zeros(0, np.int64))


def _rows(
    starts: np.ndarray, ends: np.ndarray, cols: tuple[np.ndarray, ...] = (), mask: np.ndarray | None = None
) -> _Rows:
    """A :class:`_Rows` over ``mask``'s rows; sorts them (an index, not a copy) only if they are out of order."""
    count = len(starts)
    if mask is not None:
        count = int(np.count_nonzero(mask))
        if count == len(starts):
            mask = None
    r = _Rows(starts=starts, ends=ends, cols=tuple(cols), mask=mask, count=count)
    if count <= 1:
        return r
    last = iv.NEG_INF
    for ch in r.chunks(with_cols=False):
        s = ch[0]
        if int(s[0]) < last or not iv.is_sorted(s):
            break
        last = int(s[-1])
    else:
        return r
    sel = np.flatnonzero(mask) if mask is not None else None
    order = np.argsort(starts if sel is None else starts[sel], kind="stable")
    if sel is not None:
        order = sel[order]
    del sel
    r.order = order.astype(np.int32) if len(starts) < 2**31 else order
    return r


def _merged(parts: Sequence[_Rows], size: int | None = None, with_cols: bool = True) -> Iterator[iv.Chunk]:
    """The rows of several tables as one stream in start order (ties: table order, then row order)."""
    live = [p for p in parts if p.count]
    if not live:
        return
    if len(live) == 1:
        yield from live[0].chunks(size, with_cols)
        return
    its = [p.chunks(size, with_cols) for p in live]
    pend: list[iv.Chunk | None] = [None] * len(live)
    done = [False] * len(live)
    while True:
        for j, it in enumerate(its):
            while not done[j] and (pend[j] is None or len(pend[j][0]) == 0):  # type: ignore[index]
                nxt = next(it, None)
                if nxt is None:
                    done[j] = True
                else:
                    pend[j] = nxt
        have = [j for j in range(len(live)) if pend[j] is not None and len(pend[j][0])]  # type: ignore[index]
        if not have:
            return
        # everything up to the earliest "last pending start" of a table with more to read is final
        bounds = [int(pend[j][0][-1]) for j in have if not done[j]]  # type: ignore[index]
        bound = min(bounds) if bounds else iv.POS_INF
        taken: list[iv.Chunk] = []
        for j in have:
            p = pend[j]
            assert p is not None
            k = len(p[0]) if bound == iv.POS_INF else int(np.searchsorted(p[0], bound, side="right"))
            if k:
                taken.append(tuple(c[:k] for c in p))
                pend[j] = tuple(c[k:] for c in p)
        if len(taken) == 1:
            yield taken[0]
            continue
        cat = [np.concatenate(cs) for cs in zip(*taken, strict=True)]
        o = np.argsort(cat[0], kind="stable")
        yield tuple(c[o] for c in cat)


@dataclass(slots=True)
class _Gpu:
    """GPU work of one device: per kind (0 kernel, 1 copy, 2 memset, 3 graph) its rows in start order."""

    device: int
    parts: dict[int, _Rows]
    lo: int
    hi: int

    def stream(self, kinds: tuple[int, ...] = (0, 1, 2, 3), with_cols: bool = True) -> Iterator[iv.Chunk]:
        """``(starts, ends, correlation)`` chunks of these kinds' work, in start order."""
        return _merged([self.parts[k] for k in kinds if k in self.parts], with_cols=with_cols)

    def has(self, *kinds: int) -> bool:
        return any(k in self.parts for k in kinds)


class _CorrIndex:
    """Finds the API call with a correlation id (the first such row), by binary search."""

    def __init__(self, corr: np.ndarray) -> None:
        self.order: np.ndarray | None = None
        if iv.is_sorted(corr):  # the usual case: ids are handed out in call order
            self.sorted = corr
        else:
            order = np.argsort(corr, kind="stable")
            self.sorted = corr[order]
            self.order = order.astype(np.int32) if len(corr) < 2**31 else order

    def find(self, corr: np.ndarray) -> np.ndarray:
        """Row index into the API table of the call with each correlation id, or -1."""
        sc = self.sorted
        if len(sc) == 0:
            return np.full(len(corr), -1, np.int64)
        i = np.searchsorted(sc, corr)
        np.minimum(i, len(sc) - 1, out=i)
        ok = (sc[i] == corr) & (corr >= 0)
        rows = i if self.order is None else self.order[i]
        return np.where(ok, rows, -1)


def _extent(parts: Sequence[_Rows]) -> tuple[int, int]:
    """(earliest start, latest end) over the rows."""
    lo, hi = iv.POS_INF, iv.NEG_INF
    for p in parts:
        for ch in p.chunks(with_cols=False):
            lo = min(lo, int(ch[0].min()))
            hi = max(hi, int(ch[1].max()))
    return lo, hi


def _gpu_work(tl: Timeline) -> tuple[_Gpu, list[tuple[int, int]]]:
    """The busiest GPU's work, and (device, busy ns) for every GPU when there are several."""
    tables: tuple[KernelTable | CopyTable | MemsetTable | GraphTable, ...] = (
        tl.kernels,
        tl.copies,
        tl.memsets,
        tl.graphs,
    )
    present = [(k, t) for k, t in enumerate(tables) if len(t)]
    devices: set[int] = set()
    for _, t in present:
        lo, hi = int(t.device.min()), int(t.device.max())
        devices.update((lo,) if lo == hi else np.unique(t.device).tolist())
    per_dev: list[tuple[int, int]] = []
    if len(devices) == 1:
        d0 = devices.pop()
    else:
        for d in sorted(devices):
            parts = [_rows(t.start_ns, t.end_ns, mask=t.device == d) for _, t in present]
            busy = sum(int(np.sum(b[1] - b[0])) for b in iv.union_chunks(_merged(parts)))
            per_dev.append((d, busy))
            del parts
        d0 = max(per_dev, key=lambda x: x[1])[0]
    rows = {
        k: _rows(t.start_ns, t.end_ns, (t.correlation,), None if not per_dev else t.device == d0)
        for k, t in present
    }
    rows = {k: r for k, r in rows.items() if r.count}
    lo, hi = _extent(list(rows.values()))
    return _Gpu(device=d0, parts=rows, lo=lo, hi=hi), per_dev


def _median_start(gpu: _Gpu) -> int:
    """The median start time of the GPU's work (as ``np.median``, rounded down)."""
    n = sum(p.count for p in gpu.parts.values())
    want = sorted({(n - 1) // 2, n // 2})
    got: list[int] = []
    seen = 0
    for ch in gpu.stream(with_cols=False):
        s = ch[0]
        for r in want:
            if seen <= r < seen + len(s):
                got.append(int(s[r - seen]))
        seen += len(s)
        if len(got) == len(want):
            break
    return sum(got) // len(got) if got else 0


def _first_row(starts: np.ndarray, mask: np.ndarray, invert: bool = False) -> int:
    """Row of the earliest start among the rows ``mask`` selects (``~mask`` with ``invert``), -1 if none;
    a chunk at a time (no table-sized temporary)."""
    best, row = iv.POS_INF, -1
    for a in range(0, len(starts), CHUNK_ROWS):
        m = mask[a : a + CHUNK_ROWS]
        if invert:
            m = ~m
        if not m.any():
            continue
        s = starts[a : a + CHUNK_ROWS]
        i = int(np.argmin(np.where(m, s, iv.POS_INF)))
        if int(s[i]) < best:
            best, row = int(s[i]), a + i
    return row


def _first_call_after(api: ApiTable, work_m: np.ndarray, t: int) -> int:
    """Start of the first call at or after ``t`` that gives the GPU work or waits for it (``t`` if none)."""
    row = _first_row(api.start_ns, work_m & (api.start_ns >= t))
    return int(api.start_ns[row]) if row >= 0 else t


def _all_gpu_end(tl: Timeline) -> int:
    """When the last GPU work of any device ends."""
    ends = [int(t.end_ns.max()) for t in (tl.kernels, tl.copies, tl.memsets, tl.graphs) if len(t)]
    return max(ends) if ends else iv.NEG_INF


def _in_windows(t: np.ndarray, windows: Pair) -> np.ndarray:
    """Mask of the times that lie inside one of the windows (a union)."""
    ws, we = windows
    if len(ws) == 1:
        return (t >= ws[0]) & (t < we[0])
    return iv.containing(windows, t) >= 0


def _compact(a: np.ndarray) -> np.ndarray:
    """Non-negative int64 values as int32 when they fit (half the memory for the medians' inputs)."""
    if len(a) and int(a.max()) < 2**31 and int(a.min()) >= 0:
        return a.astype(np.int32)
    return a


def _median(parts: list[np.ndarray]) -> float | None:
    """``np.median`` of the concatenated parts (partitioned in place), None when empty."""
    n = sum(len(p) for p in parts)
    if n == 0:
        parts.clear()
        return None
    a = np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
    parts.clear()  # the caller's list: its arrays are freed before the partition
    return float(np.median(a, overwrite_input=True))


class _Distinct:
    """Counts distinct integers fed in chunks: a bitmap for dense non-negative ids, else a set of arrays."""

    def __init__(self, hi: int) -> None:
        # a bitmap of at most 64 MB; correlation ids are small dense integers in practice
        self.seen = np.zeros(hi + 1, bool) if 0 <= hi < 1 << 26 else None
        self.other: list[np.ndarray] = []

    def add(self, v: np.ndarray) -> None:
        if self.seen is not None:
            ok = (v >= 0) & (v < len(self.seen))
            self.seen[v[ok]] = True
            v = v[~ok]
        if len(v):
            self.other.append(np.unique(v))

    def count(self) -> int:
        n = int(np.count_nonzero(self.seen)) if self.seen is not None else 0
        if self.other:
            n += len(np.unique(np.concatenate(self.other)))
        return n


def _union_total(chunks: Iterator[iv.Chunk], windows: Pair) -> int:
    """Length of the union of a start-ordered stream of intervals within the windows."""
    tot = 0
    for b in iv.union_chunks(chunks):
        tot += int(iv.per_interval_overlap((b[0], b[1]), windows).sum())
    return tot
