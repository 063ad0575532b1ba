"""Interval arithmetic against a brute-force reference on integer time grids."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kprof.diagnose import intervals as iv

ivals = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 15)), max_size=25).map(
    lambda xs: (np.array([a for a, _ in xs], np.int64), np.array([a + d for a, d in xs], np.int64))
)


def covered(s: np.ndarray, e: np.ndarray, n: int = 100) -> np.ndarray:
    m = np.zeros(n, bool)
    for a, b in zip(s.tolist(), e.tolist(), strict=True):
        m[a:b] = True
    return m


@given(ivals)
@settings(max_examples=200, deadline=None)
def test_union_matches_bruteforce(x: tuple[np.ndarray, np.ndarray]) -> None:
    s, e = iv.union(*x)
    assert np.array_equal(covered(s, e), covered(*x))
    assert np.all(s[1:] > e[:-1])  # disjoint, sorted, not touching
    assert np.all(e > s)
    assert iv.total((s, e)) == int(covered(*x).sum())


@given(ivals, ivals)
@settings(max_examples=200, deadline=None)
def test_intersect_and_overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> None:
    ua, ub = iv.union(*a), iv.union(*b)
    s, e = iv.intersect(ua, ub)
    assert np.array_equal(covered(s, e), covered(*a) & covered(*b))
    assert iv.overlap_total(ua, ub) == int((covered(*a) & covered(*b)).sum())


@given(ivals, st.integers(0, 50), st.integers(0, 50))
@settings(max_examples=200, deadline=None)
def test_gaps_and_clip(x: tuple[np.ndarray, np.ndarray], lo: int, width: int) -> None:
    u = iv.union(*x)
    hi = lo + width
    window = np.zeros(100, bool)
    window[lo:hi] = True
    gs, ge = iv.gaps(u, lo, hi)
    assert np.array_equal(covered(gs, ge), window & ~covered(*u))
    cs, ce = iv.clip(u, lo, hi)
    assert np.array_equal(covered(cs, ce), window & covered(*u))


@given(ivals, ivals)
@settings(max_examples=200, deadline=None)
def test_per_interval_overlap(q: tuple[np.ndarray, np.ndarray], x: tuple[np.ndarray, np.ndarray]) -> None:
    u = iv.union(*x)
    got = iv.per_interval_overlap(q, u)
    cov = covered(*u)
    want = [int(cov[a:b].sum()) if b > a else 0 for a, b in zip(q[0].tolist(), q[1].tolist(), strict=True)]
    assert got.tolist() == want


def test_containing() -> None:
    u = (np.array([0, 10]), np.array([5, 20]))
    assert iv.containing(u, np.array([0, 4, 5, 9, 10, 19, 20, -1])).tolist() == [0, 0, -1, -1, 1, 1, -1, -1]


def test_union_of_ten_million_is_fast_enough() -> None:
    # vectorized: a few hundred ms for 1M intervals, no Python loop per interval
    rng = np.random.default_rng(0)
    s = np.sort(rng.integers(0, 10**12, 1_000_000))
    e = s + rng.integers(1, 10**6, len(s))
    u = iv.union(s, e)
    assert iv.total(u) <= int((e - s).sum())
    assert len(u[0]) <= len(s)


# ----------------------------------------------------------------------------- streaming


def _chunked(s: np.ndarray, e: np.ndarray, cuts: list[int]) -> list[tuple[np.ndarray, ...]]:
    """Start-ordered intervals (with their index as a column) split at the given positions."""
    order = np.argsort(s, kind="stable")
    s, e, idx = s[order], e[order], order.astype(np.int64)
    bounds = sorted({0, len(s), *(c % (len(s) + 1) for c in cuts)})
    return [(s[a:b], e[a:b], idx[a:b]) for a, b in itertools.pairwise(bounds)]


@given(ivals, st.lists(st.integers(0, 30), max_size=6))
@settings(max_examples=300, deadline=None)
def test_union_chunks_matches_union(x: tuple[np.ndarray, np.ndarray], cuts: list[int]) -> None:
    chunks = _chunked(*x, cuts)
    blocks = list(iv.union_chunks(chunks))
    bs = np.concatenate([b[0] for b in blocks]) if blocks else np.zeros(0, np.int64)
    be = np.concatenate([b[1] for b in blocks]) if blocks else np.zeros(0, np.int64)
    us, ue = iv.union(*x)
    assert bs.tolist() == us.tolist() and be.tolist() == ue.tolist()
    # each block's first interval: the earliest-starting non-empty interval (first in start order) at its start
    s, e = x
    for b in blocks:
        for start, first in zip(b[0].tolist(), b[2].tolist(), strict=True):
            cands = [i for i in np.argsort(s, kind="stable").tolist() if s[i] == start and e[i] > s[i]]
            assert first == cands[0]
    # gaps: the complement, each with the block that ends it
    gaps = list(iv.gap_chunks(iter(blocks), 1))
    gs = np.concatenate([g[0] for g in gaps])
    ge = np.concatenate([g[1] for g in gaps])
    nxt = np.concatenate([g[2] for g in gaps])
    assert gs[0] == iv.NEG_INF and ge[-1] == iv.POS_INF and nxt[-1] == -1
    assert ge[:-1].tolist() == us.tolist() and gs[1:].tolist() == ue.tolist()


@given(ivals, ivals)
@settings(max_examples=300, deadline=None)
def test_clip_to_windows(x: tuple[np.ndarray, np.ndarray], w: tuple[np.ndarray, np.ndarray]) -> None:
    u = iv.union(*x)
    windows = iv.union(*w)
    ps, pe, src = iv.clip_to_windows(u[0], u[1], windows)
    assert np.array_equal(covered(ps, pe), covered(*u) & covered(*windows))
    assert np.all(pe > ps) and np.all(ps[1:] >= pe[:-1])
    assert np.all((u[0][src] <= ps) & (pe <= u[1][src]))


@given(ivals, ivals, st.lists(st.integers(0, 30), max_size=4), st.integers(1, 5))
@settings(max_examples=300, deadline=None)
def test_union_cursor_matches_per_interval_overlap(
    q: tuple[np.ndarray, np.ndarray], x: tuple[np.ndarray, np.ndarray], cuts: list[int], batch: int
) -> None:
    qs, qe = iv.union(*q)  # disjoint queries in time order, asked a few at a time
    cur = iv.UnionCursor(_chunked(*x, cuts))
    got = [cur.overlap(qs[i : i + batch], qe[i : i + batch]) for i in range(0, len(qs), batch)]
    want = iv.per_interval_overlap((qs, qe), iv.union(*x))
    assert (np.concatenate(got) if got else np.zeros(0, np.int64)).tolist() == want.tolist()


def test_is_sorted_across_chunks() -> None:
    a = np.arange(100)
    assert iv.is_sorted(a, chunk=7) and iv.is_sorted(a[:1]) and iv.is_sorted(a[:0])
    a[50] = 0
    assert not iv.is_sorted(a, chunk=7)
