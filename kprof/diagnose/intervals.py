"""Interval arithmetic on numpy arrays: union, gaps, intersection, clipping.

Intervals are half-open ``[start, end)`` pairs of int64 nanoseconds given as two
arrays. Every function is vectorized (a sort plus cumulative operations), so ten
million kernels cost a few seconds at most and no Python loop per interval.
A *union* is a canonical set: sorted, disjoint, non-empty intervals.
"""

from __future__ import annotations

import numpy as np

Pair = tuple[np.ndarray, np.ndarray]


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
    if len(s) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(s) > 1 and not bool(np.all(s[1:] >= s[:-1])):
        order = np.argsort(s, kind="stable")
        s = s[order]
        e = e[order]
    # running maximum of the ends: an interval starts a new block when it begins after
    # everything before it has ended
    run_end = np.maximum.accumulate(e)
    new_block = np.empty(len(s), dtype=bool)
    new_block[0] = True
    np.greater(s[1:], run_end[:-1], out=new_block[1:])
    first = np.flatnonzero(new_block)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = len(s) - 1
    return s[first].copy(), run_end[last].copy()


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


__all__ = [
    "clip",
    "containing",
    "gaps",
    "intersect",
    "overlap_total",
    "per_interval_overlap",
    "total",
    "union",
    "union_many",
]
