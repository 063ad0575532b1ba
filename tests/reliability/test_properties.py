"""Property-based tests (hypothesis) that the other test files do not already have.

- ncu CSV parser: numbers parse exactly, any text parses without an exception, a generated export
  loads back to the values written, and a cut export is refused or loads a subset of the exact values,
  never a wrong one.
- Kineto parser: fields with absurd values (2**70, 1e400, NaN, strings, lists) load or are refused
  with a KprofInputError; loaded times fit int64; the diagnosis of what loads runs.
  (tests/io/test_kineto.py already checks the streaming parser against json.load, and truncation.)
- Interval arithmetic: tests/diagnose/test_intervals.py checks union, gaps, clip, intersect and
  per-interval overlap on a 0..75 grid; here the same functions on wide values (near +-2**62) and
  inverted intervals, and the streaming functions (union_chunks, gap_chunks, UnionCursor),
  clip_to_windows, union_many and containing, all against a brute-force reference.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kprof.diagnose import intervals as iv
from kprof.errors import KprofError, KprofInputError
from kprof.io.kineto import load_kineto
from kprof.io.ncu_csv import _parse_value, load_ncu_csv

FIXTURE_OK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]

# ============================================================================= ncu CSV


@given(st.integers(-(10**30), 10**30), st.booleans())
@settings(max_examples=100, deadline=None)
def test_integers_parse_exactly_with_or_without_separators(n: int, separators: bool) -> None:
    text = f"{n:,}" if separators else str(n)
    assert _parse_value(text) == n and type(_parse_value(text)) is int


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=100, deadline=None)
def test_finite_floats_parse_exactly(x: float) -> None:
    v = _parse_value(repr(x))
    assert v == x


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_any_cell_text_parses_without_an_exception(text: str) -> None:
    v = _parse_value(text)
    assert v is None or isinstance(v, int | str) or (isinstance(v, float) and math.isfinite(v))


# unit as ncu writes it -> (factor to ncu's base unit, base unit); written independently of the loader
UNITS = {
    "": (1.0, ""),
    "%": (1.0, "%"),
    "byte": (1.0, "byte"),
    "Kbyte": (1e3, "byte"),
    "Mbyte": (1e6, "byte"),
    "cycle": (1.0, "cycle"),
    "nsecond": (1.0, "ns"),
    "usecond": (1e3, "ns"),
    "msecond": (1e6, "ns"),
    "Ghz": (1e9, "hz"),
    "Mhz": (1e6, "hz"),
    "byte/second": (1.0, "byte/s"),
    "Gbyte/second": (1e9, "byte/s"),
    "inst": (1.0, "inst"),
}
metric_names = st.from_regex(r"[a-z]{1,6}__[a-z_]{1,10}\.(sum|avg|max|pct)", fullmatch=True)
metric_values = st.one_of(
    st.integers(0, 10**12).map(lambda n: (n, f"{n:,}")),
    st.floats(0, 1e9, allow_nan=False).map(lambda x: (x, f"{x:.6g}")),
    st.just((None, "n/a")),
)


@st.composite
def raw_exports(draw: st.DrawFn) -> tuple[str, dict[str, tuple[float | None, str]]]:
    """An ``ncu --csv --page raw`` export of one launch, and per metric the value and unit to expect."""
    names = draw(st.lists(metric_names, min_size=1, max_size=12, unique=True))
    units = [draw(st.sampled_from(sorted(UNITS))) for _ in names]
    values = [draw(metric_values) for _ in names]
    header = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
              "Block Size", "Grid Size", "Device", "CC", *names]  # fmt: skip
    unit_row = [""] * 11 + units
    row = [
        "0",
        "1",
        "python3",
        "host",
        "void k<int>(float*)",
        "1",
        "7",
        "(256, 1, 1)",
        "(64, 1, 1)",
        "0",
        "9.0",
    ]
    row += [text for _, text in values]
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in (header, unit_row, row):
        w.writerow(r)
    prelude = draw(st.sampled_from(["", "==PROF== Connected to process 1\n", "program output\n"]))
    expect: dict[str, tuple[float | None, str]] = {}
    for n, u, (v, text) in zip(names, units, values, strict=True):
        factor, base = UNITS[u]
        parsed = None if v is None else float(text.replace(",", ""))
        expect[n] = (None if parsed is None else parsed * factor, base)
    return prelude + out.getvalue(), expect


@given(raw_exports())
@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
def test_raw_export_loads_the_values_written(tmp_path: Path, export: tuple[str, dict]) -> None:
    text, expect = export
    p = tmp_path / "raw.csv"
    p.write_text(text, encoding="utf-8")
    k = load_ncu_csv(p)[0]
    for name, (value, unit) in expect.items():
        if value is None:
            assert name not in k.metrics  # n/a is missing, never 0
            continue
        m = k.metrics[name]
        assert m.unit == unit
        assert float(m.value) == pytest.approx(value, rel=1e-12, abs=0)


@given(raw_exports(), st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
def test_cut_export_is_refused_or_a_subset_never_wrong(
    tmp_path: Path, export: tuple[str, dict], data: st.DataObject
) -> None:
    text, _ = export
    full_path = tmp_path / "full.csv"
    full_path.write_text(text, encoding="utf-8")
    full = load_ncu_csv(full_path)[0].metrics
    n = data.draw(st.integers(1, len(text) - 1))
    p = tmp_path / "cut.csv"
    p.write_text(text[:n], encoding="utf-8")
    try:
        prof = load_ncu_csv(p)
    except KprofInputError as exc:
        assert "\n" not in str(exc)
        return
    for name, m in prof[0].metrics.items():
        assert name in full and full[name] == m, f"cut at {n}: {name} = {m}, intact {full.get(name)}"


@given(st.lists(st.lists(st.text(max_size=12), max_size=14), max_size=6), st.booleans())
@settings(max_examples=100, deadline=None, suppress_health_check=FIXTURE_OK)
def test_arbitrary_rows_under_an_ncu_header_never_raise_anything_else(
    tmp_path: Path, rows: list[list[str]], details: bool
) -> None:
    header = ["ID", "Kernel Name", "Block Size", "Grid Size", "CC"]
    if details:
        header += ["Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name"]
    else:
        header += ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum"]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    p = tmp_path / "x.csv"
    p.write_text(out.getvalue(), encoding="utf-8", errors="surrogatepass")
    try:
        load_ncu_csv(p)
    except KprofInputError as exc:
        assert "\n" not in str(exc)


# ============================================================================= Kineto

absurd_numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**62, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1e400", "-1e400", "NaN", "Infinity"]).map(lambda s: ("raw", s)),
    st.text(max_size=6),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
)


def _dump(v: object) -> str:
    if isinstance(v, tuple) and v[0] == "raw":
        return str(v[1])
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return json.dumps(v)


@st.composite
def absurd_traces(draw: st.DrawFn) -> str:
    events = []
    for i in range(draw(st.integers(1, 8))):
        cat = draw(st.sampled_from(["kernel", "cuda_runtime", "gpu_memcpy", "cpu_op", "user_annotation"]))
        ts = draw(st.one_of(st.integers(0, 10**9), absurd_numbers))
        dur = draw(st.one_of(st.integers(0, 10**6), absurd_numbers))
        corr = draw(st.one_of(st.integers(0, 50), absurd_numbers))
        dev = draw(st.one_of(st.integers(0, 3), absurd_numbers))
        name = "ProfilerStep#1" if cat == "user_annotation" and i % 2 else f"k{i}"
        events.append(
            f'{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 1, "tid": 2, "ts": {_dump(ts)}, '
            f'"dur": {_dump(dur)}, "args": {{"correlation": {_dump(corr)}, "device": {_dump(dev)}, "stream": 7}}}}'
        )
    return '{"traceEvents": [' + ", ".join(events) + "]}"


@given(absurd_traces())
@settings(max_examples=80, deadline=None, suppress_health_check=FIXTURE_OK)
def test_absurd_kineto_fields_load_or_are_refused(tmp_path: Path, text: str) -> None:
    from kprof.api import diagnose

    p = tmp_path / "t.json"
    p.write_text(text, encoding="utf-8")
    try:
        tl = load_kineto(p)
    except KprofInputError as exc:
        assert "\n" not in str(exc)
        return
    for table in (tl.kernels, tl.copies, tl.api):
        for col in (table.start_ns, table.end_ns):
            assert col.dtype == np.int64
    with contextlib.suppress(KprofError):
        diagnose(tl)


# ============================================================================= intervals

WIDE = 2**61  # lengths and sums of disjoint lengths then fit int64 (the loaders keep |t| < 2**62)
ends_ = st.one_of(st.integers(-WIDE, WIDE), st.sampled_from([-WIDE, -1, 0, 1, WIDE]))
raw_ivals = st.lists(st.tuples(ends_, ends_), max_size=20)  # in any order, inverted ones included


def _arrays(xs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([a for a, _ in xs], np.int64), np.array([b for _, b in xs], np.int64)


def _points(*sets: list[tuple[int, int]], extra: tuple[int, ...] = ()) -> list[int]:
    return sorted({v for s in sets for a, b in s for v in (a, b)} | set(extra))


def _cover(xs: list[tuple[int, int]], pts: list[int]) -> list[bool]:
    """Brute force: for each elementary segment [pts[i], pts[i+1]), whether an interval covers it."""
    return [any(a <= lo and hi <= b for a, b in xs if b > a) for lo, hi in itertools.pairwise(pts)]


def _as_set(s: np.ndarray, e: np.ndarray, pts: list[int]) -> list[bool]:
    return _cover(list(zip(s.tolist(), e.tolist(), strict=True)), pts)


def _canonical(s: np.ndarray, e: np.ndarray) -> None:
    assert np.all(e > s) and np.all(s[1:] > e[:-1])


@given(raw_ivals)
@settings(max_examples=200, deadline=None)
def test_union_of_wide_and_inverted_intervals(xs: list[tuple[int, int]]) -> None:
    s, e = iv.union(*_arrays(xs))
    _canonical(s, e)
    pts = _points(xs)
    assert _as_set(s, e, pts) == _cover(xs, pts)
    lengths = [hi - lo for (lo, hi), c in zip(itertools.pairwise(pts), _cover(xs, pts), strict=True) if c]
    assert iv.total((s, e)) == sum(lengths)


@given(raw_ivals, raw_ivals)
@settings(max_examples=150, deadline=None)
def test_intersect_and_overlap_of_wide_intervals(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    ua, ub = iv.union(*_arrays(a)), iv.union(*_arrays(b))
    s, e = iv.intersect(ua, ub)
    _canonical(s, e)
    pts = _points(a, b)
    both = [x and y for x, y in zip(_cover(a, pts), _cover(b, pts), strict=True)]
    assert _as_set(s, e, pts) == both
    assert iv.overlap_total(ua, ub) == sum(
        hi - lo for (lo, hi), c in zip(itertools.pairwise(pts), both, strict=True) if c
    )


@given(raw_ivals, ends_, ends_)
@settings(max_examples=150, deadline=None)
def test_gaps_and_clip_of_wide_intervals(xs: list[tuple[int, int]], lo: int, hi: int) -> None:
    u = iv.union(*_arrays(xs))
    pts = _points(xs, extra=(lo, hi))
    inside = [lo <= a and b <= hi for a, b in itertools.pairwise(pts)]
    gs, ge = iv.gaps(u, lo, hi)
    assert _as_set(gs, ge, pts) == [w and not c for w, c in zip(inside, _cover(xs, pts), strict=True)]
    cs, ce = iv.clip(u, lo, hi)
    assert _as_set(cs, ce, pts) == [w and c for w, c in zip(inside, _cover(xs, pts), strict=True)]


@given(st.lists(raw_ivals, max_size=4))
@settings(max_examples=100, deadline=None)
def test_union_many_is_the_union_of_all(sets: list[list[tuple[int, int]]]) -> None:
    s, e = iv.union_many(*[_arrays(x) for x in sets])
    allx = [p for x in sets for p in x]
    pts = _points(allx)
    assert _as_set(s, e, pts) == _cover(allx, pts)


@given(raw_ivals, st.lists(ends_, max_size=20))
@settings(max_examples=150, deadline=None)
def test_containing_against_bruteforce(xs: list[tuple[int, int]], ts: list[int]) -> None:
    u = iv.union(*_arrays(xs))
    got = iv.containing(u, np.array(ts, np.int64)).tolist()
    blocks = list(zip(u[0].tolist(), u[1].tolist(), strict=True))
    want = [next((i for i, (a, b) in enumerate(blocks) if a <= t < b), -1) for t in ts]
    assert got == want


@given(raw_ivals, raw_ivals)
@settings(max_examples=150, deadline=None)
def test_per_interval_overlap_of_wide_intervals(q: list[tuple[int, int]], xs: list[tuple[int, int]]) -> None:
    u = iv.union(*_arrays(xs))
    got = iv.per_interval_overlap(_arrays(q), u).tolist()
    blocks = list(zip(u[0].tolist(), u[1].tolist(), strict=True))
    want = [sum(max(0, min(b, qe) - max(a, qs)) for a, b in blocks) if qe > qs else 0 for qs, qe in q]
    assert got == want


# ---------------------------------------------------------------- streaming

small = st.integers(-(2**40), 2**40)


@st.composite
def sorted_chunks(draw: st.DrawFn) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Intervals ordered by start (ties in any order, inverted ones included) with a column, and cut points."""
    starts = sorted(draw(st.lists(small, max_size=30)))
    rows = [(s, s + draw(st.integers(-50, 2**30)), i) for i, s in enumerate(starts)]
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=5)))
    return rows, cuts


def _chunks(rows: list[tuple[int, int, int]], cuts: list[int]) -> list[tuple[np.ndarray, ...]]:
    bounds = [0, *cuts, len(rows)]
    out = []
    for a, b in itertools.pairwise(bounds):
        part = rows[a:b]
        out.append(tuple(np.array([r[k] for r in part], np.int64) for k in range(3)))
    return out


def _blocks_bruteforce(rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Union blocks in order, with the column of each block's first interval (in input order)."""
    out: list[list[int]] = []
    for s, e, c in rows:
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e, c])
    return [tuple(b) for b in out]  # type: ignore[misc]


@given(sorted_chunks())
@settings(max_examples=200, deadline=None)
def test_union_chunks_streams_the_union(data: tuple[list[tuple[int, int, int]], list[int]]) -> None:
    rows, cuts = data
    got = []
    for s, e, c in iv.union_chunks(_chunks(rows, cuts)):
        got += list(zip(s.tolist(), e.tolist(), c.tolist(), strict=True))
    assert got == _blocks_bruteforce(rows)


@given(sorted_chunks())
@settings(max_examples=150, deadline=None)
def test_gap_chunks_is_the_complement(data: tuple[list[tuple[int, int, int]], list[int]]) -> None:
    rows, cuts = data
    blocks = _blocks_bruteforce(rows)
    got = []
    for gs, ge, nxt in iv.gap_chunks(iv.union_chunks(_chunks(rows, cuts)), 1):
        got += list(zip(gs.tolist(), ge.tolist(), nxt.tolist(), strict=True))
    edges = [iv.NEG_INF] + [b[1] for b in blocks]
    want = [(edges[i], b[0], b[2]) for i, b in enumerate(blocks)] + [(edges[-1], iv.POS_INF, -1)]
    assert got == want


@given(sorted_chunks(), st.lists(st.tuples(small, st.integers(0, 2**31)), max_size=12))
@settings(max_examples=150, deadline=None)
def test_union_cursor_matches_per_interval_overlap(
    data: tuple[list[tuple[int, int, int]], list[int]], queries: list[tuple[int, int]]
) -> None:
    rows, cuts = data
    # queries in time order, each call starting no earlier than the previous call ended
    qs, t = [], -(2**41)
    for start, length in sorted(queries):
        s = max(start, t)
        qs.append((s, s + length))
        t = s + length
    assume(all(b >= a for a, b in qs))
    u = iv.union(np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64))
    cur = iv.UnionCursor(_chunks(rows, cuts))
    for a, b in qs:
        got = cur.overlap(np.array([a], np.int64), np.array([b], np.int64)).tolist()
        assert got == iv.per_interval_overlap((np.array([a]), np.array([b])), u).tolist()


@given(raw_ivals, raw_ivals)
@settings(max_examples=150, deadline=None)
def test_clip_to_windows_against_bruteforce(xs: list[tuple[int, int]], ws: list[tuple[int, int]]) -> None:
    s, e = iv.union(*_arrays(xs))  # sorted disjoint intervals, as the function requires
    wins = iv.union(*_arrays(ws))
    ps, pe, idx = iv.clip_to_windows(s, e, wins)
    got = sorted(zip(ps.tolist(), pe.tolist(), idx.tolist(), strict=True))
    want = sorted(
        (max(a, wa), min(b, wb), i)
        for i, (a, b) in enumerate(zip(s.tolist(), e.tolist(), strict=True))
        for wa, wb in zip(wins[0].tolist(), wins[1].tolist(), strict=True)
        if min(b, wb) > max(a, wa)
    )
    assert got == want
