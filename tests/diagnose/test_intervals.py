"""Interval arithmetic against a brute-force reference on integer time grids."""

from __future__ import annotations

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
