"""Rows whose times cannot be true, set aside by :func:`set_aside_impossible` (both loaders call it
last)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import numpy as np

from kprof.timeline_model.tables import TIMESTAMP_LIMIT_NS, ApiTable
from kprof.timeline_model.timeline import GPU_TABLES, MEASURED_TABLES, TABLE_WORDS, DamagedRows, Timeline


def _row_text(fmt: str, t: Any, i: int) -> str:
    """One row as the input shows it: its name and times (Kineto's microseconds, nsys's nanoseconds)."""
    label = ""
    names = getattr(t, "names", ())
    nid = getattr(t, "name_id", None)
    if names and nid is not None and 0 <= int(nid[i]) < len(names):
        label = f"{names[int(nid[i])][:80]!r} "
    s, e = int(t.start_ns[i]), int(t.end_ns[i])
    if fmt == "kineto":
        return f"{label}ts {s / 1000:.3f} us, dur {(e - s) / 1000:.3f} us"
    return f"{label}start {s} ns, end {e} ns"


def _without(t: Any, drop: np.ndarray) -> Any:
    """Table ``t`` without the rows where ``drop`` is True (every column alike)."""
    keep = ~drop
    cols = {f.name: v[keep] for f in fields(t) if isinstance(v := getattr(t, f.name), np.ndarray)}
    return replace(t, **cols)


def set_aside_impossible(tl: Timeline) -> Timeline:
    """``tl`` without the rows whose times cannot be true; each kind counted and named in
    :attr:`Timeline.damaged` and in :attr:`Timeline.notes`. Both loaders call it last.

    What cannot be true (a row is counted under the first rule that catches it):

    1. An end before its start (a negative duration), or a time at or beyond 2**62 ns
       (:data:`TIMESTAMP_LIMIT_NS`).
    2. GPU work that starts before the CUDA call that launched it began (matched by correlation id,
       ids that one call holds), by more than :data:`~kprof.thresholds.CLOCK_ALIGNMENT_SLACK_NS`:
       both the GPU row and the call are set aside (one of them is wrong, and either would
       misplace a gap). In every capture of the samples and the corpus (nsys and PyTorch profiler,
       about 35,000 GPU operations) work started at least 2 us after its launch call began.
    3. GPU work farther from every host-side event (CUDA calls, operators, ranges, steps, the
       profiler's own span) than the host events' span plus the summed duration of all GPU work plus
       :data:`~kprof.thresholds.GPU_QUEUE_SLACK_NS`: work waits in a queue only behind other GPU work
       or for something the host does. Measured: at most 0.23 ms before the first host event and never
       after the last one, in the samples and the corpus.
    4. A capture whose every GPU operation lasts 0 ns: no GPU time was recorded. Those rows stay
       loaded (each alone is possible: the corpus's ResNet trace holds 292 kernels of 0 us, rounded
       from under 1 us) and are counted with ``kept=True``.

    Raises
    ------
    KprofInputError
        When a table the diagnosis measures (:data:`MEASURED_TABLES`) had rows and has none left.
    """
    c = _Impossible({name: getattr(tl, name) for name in TABLE_WORDS})
    c.bad_times()  # 1
    c.early_launches(tl.api)  # 2
    c.far_from_host(tl.capture_start_ns, tl.capture_end_ns)  # 3
    tables, bad = c.tables, c.bad
    damaged = list(tl.damaged)
    notes = list(tl.notes)
    for name, why, rows in c.found:
        t = tables[name]
        kept = ~bad[name]
        mean = float(np.mean(t.duration_ns[kept])) if kept.any() else 0.0
        d = DamagedRows(
            table=name,
            count=int(np.count_nonzero(rows)),
            total=len(t),
            why=why,
            first=_row_text(tl.format, t, int(np.argmax(rows))),
            est_ns=round(mean * int(np.count_nonzero(rows))),
        )
        damaged.append(d)
        notes.append(d.describe())

    out = {name: _without(t, bad[name]) for name, t in tables.items() if bad[name].any()}
    _refuse_emptied(tl.source, damaged, out, tables)
    for d in _no_gpu_time(tl.format, out, tables):  # 4
        damaged.append(d)
        notes.append(d.describe())
    if not c.found and len(damaged) == len(tl.damaged):
        return tl
    return replace(tl, **out, damaged=tuple(damaged), notes=tuple(notes))


class _Impossible:
    """The rows of a capture's tables caught by :func:`set_aside_impossible`'s rules 1-3, in order."""

    def __init__(self, tables: dict[str, Any]) -> None:
        self.tables = tables
        self.bad = {name: np.zeros(len(t), dtype=bool) for name, t in tables.items()}
        self.found: list[tuple[str, str, np.ndarray]] = []  # (table, why, rows newly caught)

    def catch(self, name: str, why: str, rows: np.ndarray) -> None:
        rows = rows & ~self.bad[name]
        if rows.any():
            self.bad[name] |= rows
            self.found.append((name, why, rows))

    def bad_times(self) -> None:
        """Rule 1: a time at or beyond 2**62 ns, an end before its start."""
        for name, t in self.tables.items():
            if len(t):
                self.catch(
                    name,
                    "a time at or beyond 2**62 ns (146 years)",
                    (t.end_ns >= TIMESTAMP_LIMIT_NS) | (t.start_ns <= -TIMESTAMP_LIMIT_NS),
                )
                self.catch(name, "an end before its start", t.end_ns < t.start_ns)

    def early_launches(self, api: ApiTable) -> None:
        """Rule 2: GPU work that starts before the call that launched it (and that call)."""
        from kprof.thresholds import CLOCK_ALIGNMENT_SLACK_NS

        if not len(api):
            return
        ok = ~self.bad["api"] & (api.correlation > 0)
        rows = np.flatnonzero(ok) if not ok.all() else np.arange(len(api))
        ids = api.correlation[rows]
        if len(ids) > 1 and not np.all(ids[1:] >= ids[:-1]):  # calls are usually in id order already
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
        same = ids[1:] == ids[:-1]  # keep the ids that one call holds (processes may reuse ids)
        shared = np.zeros(len(ids), dtype=bool)
        shared[1:] |= same
        shared[:-1] |= same
        ids, rows = ids[~shared], rows[~shared]
        launch_start = api.start_ns[rows]
        api_bad = np.zeros(len(api), dtype=bool)
        for name in GPU_TABLES:
            t = self.tables[name]
            if not len(t) or not len(ids):
                continue
            j = np.clip(np.searchsorted(ids, t.correlation), 0, len(ids) - 1)
            hit = (ids[j] == t.correlation) & ~self.bad[name]
            early = hit & (t.start_ns < launch_start[j] - CLOCK_ALIGNMENT_SLACK_NS)
            if early.any():
                self.catch(name, "starts before the call that launched it began", early)
                api_bad[rows[j[early]]] = True
        self.catch("api", "launched GPU work that started before the call began", api_bad)

    def far_from_host(self, capture_start_ns: int | None, capture_end_ns: int | None) -> None:
        """Rule 3: GPU work farther from every host event than the capture can hold."""
        from kprof.thresholds import GPU_QUEUE_SLACK_NS

        tables, bad = self.tables, self.bad
        host = [
            (int(t.start_ns[~bad[n]].min()), int(t.end_ns[~bad[n]].max()))
            for n, t in tables.items()
            if n not in GPU_TABLES and n != "syncs" and np.any(~bad[n])
        ]
        host += [(c, c) for c in (capture_start_ns, capture_end_ns) if c is not None]
        if not host:
            return
        lo, hi = min(h[0] for h in host), max(h[1] for h in host)
        gpu_ns = sum(int(np.sum(tables[n].duration_ns[~bad[n]])) for n in GPU_TABLES)
        slack = (hi - lo) + gpu_ns + GPU_QUEUE_SLACK_NS
        for name in GPU_TABLES:
            t = tables[name]
            if len(t):
                self.catch(
                    name,
                    f"lies farther from every host event than the capture can hold "
                    f"({slack / 1e9:,.3f} s: the host's span, all GPU work and 1 s)",
                    (t.start_ns > hi + slack) | (t.end_ns < lo - slack),
                )


def _refuse_emptied(
    source: str, damaged: list[DamagedRows], out: dict[str, Any], tables: dict[str, Any]
) -> None:
    """Refuse a capture in which a table the diagnosis measures had rows and has none left."""
    from kprof.errors import KprofInputError

    for name in MEASURED_TABLES:
        lost = [d for d in damaged if d.table == name and not d.kept]
        if lost and not len(out.get(name, tables[name])):
            n_lost = sum(d.count for d in lost)
            raise KprofInputError(
                source,
                f"every one of its {n_lost:,} {TABLE_WORDS[name]} rows has an impossible time: {lost[0].why} "
                f"(the first, {lost[0].first})",
            )


def _no_gpu_time(fmt: str, out: dict[str, Any], tables: dict[str, Any]) -> list[DamagedRows]:
    """Rule 4: every GPU operation lasts 0 ns (the rows stay, counted with ``kept=True``)."""
    gpu_rows = sum(len(out.get(n, tables[n])) for n in GPU_TABLES)
    if not gpu_rows or any(np.any(out.get(n, tables[n]).duration_ns) for n in GPU_TABLES):
        return []
    found = []
    for name in GPU_TABLES:
        t = out.get(name, tables[name])
        if len(t):
            found.append(
                DamagedRows(
                    table=name,
                    count=len(t),
                    total=len(t),
                    why="every GPU operation of the capture lasts 0 ns, so no GPU time was recorded",
                    first=_row_text(fmt, t, 0),
                    kept=True,
                )
            )
    return found
