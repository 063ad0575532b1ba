"""Interval arithmetic on numpy arrays: union, gaps, intersection, clipping.

Intervals are half-open ``[start, end)`` pairs of int64 nanoseconds given as two
arrays. Every function is vectorized (a sort plus cumulative operations), so ten
million kernels cost a few seconds at most and no Python loop per interval.
A *union* is a canonical set: sorted, disjoint, non-empty intervals.

The streaming functions (:func:`union_chunks`, :func:`gap_chunks`, :class:`UnionCursor`)
take intervals already ordered by start, a chunk of arrays at a time, and never hold
more than a chunk (plus what the caller keeps): the timeline diagnosis walks ten
million kernels with them in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

Pair = tuple[np.ndarray, np.ndarray]
Chunk = tuple[np.ndarray, ...]
"""``(starts, ends, *columns)``: intervals and per-interval values carried along."""

NEG_INF = np.iinfo(np.int64).min
POS_INF = np.iinfo(np.int64).max


def _as_i64(a: np.ndarray | list[int]) -> np.ndarray:
    return np.asarray(a, dtype=np.int64)


def union(starts: np.ndarray | list[int], ends: np.ndarray | list[int]) -> Pair:
    """Merge possibly overlapping intervals into sorted disjoint ones.

    Empty and inverted intervals (``end <= start``) are dropped; touching intervals merge.

    Examples
    --------
    >>> s, e = union([0, 5, 2, 20], [3, 8, 4, 25])
    >>> s.tolist(), e.tolist()
    ([0, 5, 20], [4, 8, 25])
    """
    s = _as_i64(starts)
    e = _as_i64(ends)
    keep = e > s
    if not keep.all():
        s = s[keep]
        e = e[keep]
    del keep
    if len(s) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(s) > 1 and not is_sorted(s):
        order = np.argsort(s, kind="stable")
        s = s[order]
        e = e[order]
        del order
    # running maximum of the ends: an interval starts a new block when it begins after
    # everything before it has ended
    run_end = np.maximum.accumulate(e)
    new_block = np.empty(len(s), dtype=bool)
    new_block[0] = True
    np.greater(s[1:], run_end[:-1], out=new_block[1:])
    first = np.flatnonzero(new_block)
    del new_block
    out_s = s[first]
    # a block ends where the next one starts: at the running maximum just before it
    first[:-1] = first[1:] - 1
    first[-1] = len(s) - 1
    return out_s, run_end[first]


def is_sorted(a: np.ndarray, chunk: int = 1 << 20) -> bool:
    """Whether ``a`` is non-decreasing (checked a chunk at a time: no array-sized temporary).

    Examples
    --------
    >>> is_sorted(np.array([1, 2, 2, 5])), is_sorted(np.array([3, 1]))
    (True, False)
    """
    n = len(a)
    for i in range(0, n - 1, chunk):
        j = min(i + chunk, n - 1)
        if not bool(np.all(a[i + 1 : j + 1] >= a[i:j])):
            return False
    return True


def union_many(*pairs: Pair) -> Pair:
    """Union of several interval sets."""
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(pairs) == 1:
        return union(*pairs[0])
    return union(np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]))


def total(u: Pair) -> int:
    """Summed length of a union (or of any disjoint set)."""
    return int(np.sum(u[1] - u[0])) if len(u[0]) else 0


def clip(u: Pair, lo: int, hi: int) -> Pair:
    """The part of a union that lies within ``[lo, hi)``.

    Examples
    --------
    >>> s, e = clip((np.array([0, 10]), np.array([5, 20])), 3, 12)
    >>> s.tolist(), e.tolist()
    ([3, 10], [5, 12])
    """
    s, e = u
    if len(s) == 0 or hi <= lo:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    i0 = int(np.searchsorted(e, lo, side="right"))
    i1 = int(np.searchsorted(s, hi, side="left"))
    s2 = np.maximum(s[i0:i1], lo)
    e2 = np.minimum(e[i0:i1], hi)
    keep = e2 > s2
    return s2[keep], e2[keep]


def gaps(u: Pair, lo: int | None = None, hi: int | None = None) -> Pair:
    """The complement of a union within ``[lo, hi)`` (default: between its first start and last end).

    Examples
    --------
    >>> s, e = gaps((np.array([0, 10]), np.array([5, 20])), 0, 30)
    >>> s.tolist(), e.tolist()
    ([5, 20], [10, 30])
    """
    s, e = u
    if lo is None:
        lo = int(s[0]) if len(s) else 0
    if hi is None:
        hi = int(e[-1]) if len(e) else lo
    s, e = clip(u, lo, hi)
    gs = np.concatenate(([lo], e))
    ge = np.concatenate((s, [hi]))
    keep = ge > gs
    return gs[keep], ge[keep]


def overlap_total(a: Pair, b: Pair) -> int:
    """Length of the intersection of two unions.

    Examples
    --------
    >>> overlap_total((np.array([0, 10]), np.array([5, 20])), (np.array([3]), np.array([12])))
    4
    """
    return total(intersect(a, b))


def intersect(a: Pair, b: Pair) -> Pair:
    """Intersection of two unions (both sorted and disjoint), as a union."""
    as_, ae = a
    bs, be = b
    if len(as_) == 0 or len(bs) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # sweep over the merged boundary points: depth 2 means inside both
    pts = np.concatenate((as_, ae, bs, be))
    delta = np.concatenate(
        (
            np.ones(len(as_), np.int8),
            -np.ones(len(ae), np.int8),
            np.ones(len(bs), np.int8),
            -np.ones(len(be), np.int8),
        )
    )
    # at equal times process ends before starts (half-open intervals)
    order = np.lexsort((delta, pts))
    pts = pts[order]
    depth = np.cumsum(delta[order], dtype=np.int32)
    inside = depth == 2
    idx = np.flatnonzero(inside)
    if len(idx) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = pts[idx]
    ends = pts[idx + 1]
    keep = ends > starts
    return union(starts[keep], ends[keep])


def per_interval_overlap(q: Pair, u: Pair) -> np.ndarray:
    """For each query interval ``q[i]`` (any order, may overlap each other), its overlap with union ``u``.

    Uses the cumulative length of ``u``: O((n + m) log m).

    Examples
    --------
    >>> per_interval_overlap((np.array([0, 4, 30]), np.array([6, 12, 40])),
    ...                      (np.array([2, 10]), np.array([5, 20]))).tolist()
    [3, 3, 0]
    """
    qs = _as_i64(q[0])
    qe = _as_i64(q[1])
    us, ue = u
    if len(us) == 0 or len(qs) == 0:
        return np.zeros(len(qs), np.int64)
    cum = np.concatenate(([0], np.cumsum(ue - us)))

    def covered_before(t: np.ndarray) -> np.ndarray:
        # length of u within (-inf, t)
        i = np.searchsorted(ue, t, side="right")  # intervals fully before t: ue <= t
        full = cum[i]
        # partial: interval i may start before t
        j = np.minimum(i, len(us) - 1)
        part = np.where((i < len(us)) & (us[j] < t), t - us[j], 0)
        return full + part

    out = covered_before(qe) - covered_before(qs)
    return np.maximum(out, 0)


def containing(u: Pair, t: np.ndarray) -> np.ndarray:
    """Index of the union interval containing each time in ``t`` (``start <= t < end``), or -1."""
    s, e = u
    t = _as_i64(t)
    if len(s) == 0:
        return np.full(len(t), -1, np.int64)
    i = np.searchsorted(s, t, side="right") - 1
    ok = (i >= 0) & (t < e[np.maximum(i, 0)])
    return np.where(ok, i, -1)


# ----------------------------------------------------------------------------- streaming


def union_chunks(chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """Stream the union of intervals that arrive ordered by start, a chunk at a time.

    Each input chunk is ``(starts, ends, *columns)``; starts must be non-decreasing within and
    across chunks. Yields ``(block_starts, block_ends, *first)`` chunks of the union's blocks in
    order, where ``first`` holds the columns' values of each block's first interval. Empty and
    inverted intervals are dropped; touching intervals merge (as in :func:`union`). A block is
    yielded once the next one has begun, so memory is one chunk plus one open block.

    Examples
    --------
    >>> chunks = [(np.array([0, 2]), np.array([3, 4]), np.array([7, 8])), (np.array([4, 9]), np.array([6, 9]),
    ...           np.array([5, 6]))]
    >>> [tuple(a.tolist() for a in c) for c in union_chunks(chunks)]
    [([0], [6], [7])]
    """
    open_start = 0
    open_end = NEG_INF
    open_first: tuple[object, ...] = ()
    started = False
    for ch in chunks:
        s, e = ch[0], ch[1]
        cols = ch[2:]
        keep = e > s
        if not keep.all():
            s, e = s[keep], e[keep]
            cols = tuple(c[keep] for c in cols)
        if len(s) == 0:
            continue
        run = np.maximum.accumulate(e)
        if started:
            np.maximum(run, open_end, out=run)
        prev = np.empty_like(run)
        prev[0] = open_end
        prev[1:] = run[:-1]
        bound = np.flatnonzero(s > prev) if started else np.flatnonzero(s[1:] > run[:-1]) + 1
        if not started:
            bound = np.concatenate(([0], bound))
        if len(bound) == 0:
            open_end = int(run[-1])
            continue
        if started:
            # the open block and the blocks begun before the last boundary are closed now
            starts = np.concatenate(([open_start], s[bound[:-1]]))
            ends = prev[bound]
            first = tuple(
                np.concatenate((np.array([f], dtype=c.dtype), c[bound[:-1]]))
                for f, c in zip(open_first, cols, strict=True)
            )
        else:
            starts = s[bound[:-1]]
            ends = prev[bound[1:]]
            first = tuple(c[bound[:-1]] for c in cols)
        last = int(bound[-1])
        open_start, open_end = int(s[last]), int(run[-1])
        open_first = tuple(c[last] for c in cols)
        started = True
        if len(starts):
            yield (starts, ends, *first)
    if started:
        yield (
            np.array([open_start], np.int64),
            np.array([open_end], np.int64),
            *(np.array([f]) for f in open_first),
        )


def gap_chunks(blocks: Iterable[Chunk], n_cols: int = 0) -> Iterator[Chunk]:
    """The complement of a streamed union: ``(gap_starts, gap_ends, *next)`` chunks in order.

    ``blocks`` is what :func:`union_chunks` yields. The first gap starts at :data:`NEG_INF`
    and the last ends at :data:`POS_INF` (clip them to a window); ``next`` holds the columns
    of the block that ends each gap (its first interval's), -1 for the last gap. ``n_cols``
    is the number of columns, for the case of no blocks at all.

    Examples
    --------
    >>> blocks = [(np.array([0, 10]), np.array([5, 20]), np.array([1, 2]))]
    >>> [a.tolist() for a in next(gap_chunks(blocks, 1))]
    [[-9223372036854775808, 5], [0, 10], [1, 2]]
    """
    prev_end = NEG_INF
    for b in blocks:
        bs, be = b[0], b[1]
        if len(bs) == 0:
            continue
        gs = np.empty(len(bs), np.int64)
        gs[0] = prev_end
        gs[1:] = be[:-1]
        prev_end = int(be[-1])
        n_cols = len(b) - 2
        yield (gs, bs, *b[2:])
    yield (
        np.array([prev_end], np.int64),
        np.array([POS_INF], np.int64),
        *(np.array([-1], np.int64) for _ in range(n_cols)),
    )


def clip_to_windows(
    starts: np.ndarray, ends: np.ndarray, windows: Pair
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pieces of sorted disjoint intervals inside a union of windows: (piece starts, ends, source index).

    An interval that spans several windows gives one piece per window; ``source index`` says
    which input interval each piece comes from (to carry its columns along).

    Examples
    --------
    >>> s, e, i = clip_to_windows(np.array([0, 20]), np.array([10, 40]), (np.array([5, 25]), np.array([22, 30])))
    >>> s.tolist(), e.tolist(), i.tolist()
    ([5, 20, 25], [10, 22, 30], [0, 1, 1])
    """
    ws, we = windows
    if len(ws) == 0 or len(starts) == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    if len(ws) == 1:
        lo, hi = int(ws[0]), int(we[0])
        if hi <= lo:
            z = np.zeros(0, np.int64)
            return z, z, z
        idx = np.flatnonzero((ends > lo) & (starts < hi))
        return np.maximum(starts[idx], lo), np.minimum(ends[idx], hi), idx
    j0 = np.searchsorted(we, starts, side="right")  # first window ending after the start
    j1 = np.searchsorted(ws, ends, side="left")  # windows starting before the end
    cnt = np.maximum(j1 - j0, 0)
    idx = np.repeat(np.arange(len(starts)), cnt)
    offset = np.arange(len(idx)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    w = j0[idx] + offset
    ps = np.maximum(starts[idx], ws[w])
    pe = np.minimum(ends[idx], we[w])
    keep = pe > ps
    return ps[keep], pe[keep], idx[keep]


class UnionCursor:
    """Per-interval overlap of queries with the union of a stream of start-ordered intervals.

    Queries must come in time order: each call's intervals start no earlier than the previous
    call's intervals ended (as gaps do when walked from first to last). The cursor reads the
    stream only as far as the queries reach and forgets blocks behind them, so memory stays
    at about one chunk of the stream.

    Examples
    --------
    >>> cur = UnionCursor([(np.array([0, 10]), np.array([5, 20]))])
    >>> cur.overlap(np.array([3]), np.array([12])).tolist(), cur.overlap(np.array([15]), np.array([30])).tolist()
    ([4], [5])
    """

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self._blocks = union_chunks(chunks)
        self._s = np.zeros(0, np.int64)
        self._e = np.zeros(0, np.int64)
        self._done = False

    def overlap(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        if len(starts) == 0:
            return np.zeros(0, np.int64)
        lo, hi = int(starts.min()), int(ends.max())
        k = int(np.searchsorted(self._e, lo, side="right"))
        s, e = self._s[k:], self._e[k:]
        parts_s, parts_e = [s], [e]
        last_start = int(s[-1]) if len(s) else NEG_INF
        while not self._done and last_start < hi:
            b = next(self._blocks, None)
            if b is None:
                self._done = True
                break
            k = int(np.searchsorted(b[1], lo, side="right"))
            parts_s.append(b[0][k:])
            parts_e.append(b[1][k:])
            last_start = int(b[0][-1])
        if len(parts_s) > 1:
            s, e = np.concatenate(parts_s), np.concatenate(parts_e)
        self._s, self._e = s, e
        return per_interval_overlap((starts, ends), (s, e))


__all__ = [
    "NEG_INF",
    "POS_INF",
    "UnionCursor",
    "clip",
    "clip_to_windows",
    "containing",
    "gap_chunks",
    "gaps",
    "intersect",
    "is_sorted",
    "overlap_total",
    "per_interval_overlap",
    "total",
    "union",
    "union_chunks",
    "union_many",
]
