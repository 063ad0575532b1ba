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
    4. GPU work shorter than :data:`~kprof.thresholds.GPU_OP_MIN_NS` (300 ns) in a file whose timestamps
       resolve it (any that is not in whole microseconds): no GPU operation is that short. When every row
       of a GPU table is, the rows stay loaded and are counted with ``kept=True`` (the work was launched;
       its time was not recorded).
    5. A capture whose every GPU operation lasts 0 ns (or, at that resolution, under 300 ns): no GPU time
       was recorded. Those rows stay loaded (at a microsecond's resolution each alone is possible: the
       corpus's ResNet trace holds 292 kernels of 0 us, rounded from under 1 us) and are counted with
       ``kept=True``.

    Two things that no row shows alone are named in :attr:`Timeline.notes` (:func:`_clock_and_device_notes`):
    a GPU clock running late against the host's, and GPU work on a device the capture's GPU list does not
    describe.

    Raises
    ------
    KprofInputError
        When a table the diagnosis measures (:data:`MEASURED_TABLES`) had rows and has none left.
    """
    c = _Impossible({name: getattr(tl, name) for name in TABLE_WORDS})
    c.bad_times()  # 1
    c.early_launches(tl.api)  # 2
    c.far_from_host(tl.capture_start_ns, tl.capture_end_ns)  # 3
    short_tables = c.too_short(tl.format)  # 4
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
    for d in short_tables + _no_gpu_time(tl.format, out, tables, c.floor_ns):  # 4, 5
        damaged.append(d)
        notes.append(d.describe())
    found_notes = _clock_and_device_notes(tl, {name: out.get(name, t) for name, t in tables.items()})
    notes += found_notes
    if not c.found and len(damaged) == len(tl.damaged) and not found_notes:
        return tl
    return replace(tl, **out, damaged=tuple(damaged), notes=tuple(notes))


NO_GPU_TIME = "every GPU operation of the capture lasts"
"""How rule 5's reason begins (the damaged-data diagnosis words a capture without GPU time by it)."""


class _Impossible:
    """The rows of a capture's tables caught by :func:`set_aside_impossible`'s rules 1-3, in order."""

    def __init__(self, tables: dict[str, Any]) -> None:
        self.tables = tables
        self.bad = {name: np.zeros(len(t), dtype=bool) for name, t in tables.items()}
        self.found: list[tuple[str, str, np.ndarray]] = []  # (table, why, rows newly caught)
        self.floor_ns = 1
        """The shortest possible GPU operation at the file's resolution (rule 4): 1 ns where it cannot tell."""

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
        ids, rows = _call_ids(api, ~self.bad["api"])
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

    def too_short(self, fmt: str) -> list[DamagedRows]:
        """Rule 4: GPU work under GPU_OP_MIN_NS where the timestamps resolve it; the tables whose every row is
        (kept, counted) are returned. When every GPU operation of the capture is, rule 5 counts them instead."""
        from kprof.thresholds import GPU_OP_MIN_NS

        gpu = [(n, self.tables[n], ~self.bad[n]) for n in GPU_TABLES if len(self.tables[n])]
        if not gpu or _whole_microseconds(gpu):
            return []
        self.floor_ns = GPU_OP_MIN_NS
        short = {n: ok & (t.duration_ns < GPU_OP_MIN_NS) for n, t, ok in gpu}
        if all(np.array_equal(short[n], ok) for n, _, ok in gpu):
            return []  # every GPU operation: rule 5
        kept = []
        for n, t, ok in gpu:
            if not short[n].any():
                continue
            word = TABLE_WORDS[n]
            if np.array_equal(short[n], ok):
                lasts = "0 ns" if not np.any(t.duration_ns[ok]) else f"under {GPU_OP_MIN_NS} ns"
                kept.append(
                    DamagedRows(
                        table=n,
                        count=int(np.count_nonzero(ok)),
                        total=len(t),
                        why=f"every {word} row lasts {lasts}, which no GPU operation does (the shortest measured "
                        f"lasts 640 ns), so no {word} time was recorded",
                        first=_row_text(fmt, t, int(np.argmax(short[n]))),
                        kept=True,
                    )
                )
            else:
                self.catch(
                    n,
                    f"lasts under {GPU_OP_MIN_NS} ns, which no GPU operation takes (the shortest measured: 640 ns)",
                    short[n],
                )
        return kept

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


def _call_ids(api: ApiTable, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The correlation ids that one call of ``api`` (among rows ``ok``) holds, sorted, and those calls' rows
    (processes may reuse ids: an id two calls hold matches neither)."""
    ok = ok & (api.correlation > 0)
    rows = np.flatnonzero(ok) if not ok.all() else np.arange(len(api))
    ids = api.correlation[rows]
    if len(ids) > 1 and not np.all(ids[1:] >= ids[:-1]):  # calls are usually in id order already
        order = np.argsort(ids, kind="stable")
        ids, rows = ids[order], rows[order]
    same = ids[1:] == ids[:-1]
    shared = np.zeros(len(ids), dtype=bool)
    shared[1:] |= same
    shared[:-1] |= same
    return ids[~shared], rows[~shared]


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


def _whole_microseconds(gpu: list[tuple[str, Any, np.ndarray]]) -> bool:
    """True when every GPU row's start and end is a whole microsecond: a Kineto trace of integer ``ts``/``dur``,
    where 0 us stands for anything under 1 us."""
    return all(not np.any(t.start_ns[ok] % 1000) and not np.any(t.end_ns[ok] % 1000) for _, t, ok in gpu)


def _no_gpu_time(
    fmt: str, out: dict[str, Any], tables: dict[str, Any], floor_ns: int = 1
) -> list[DamagedRows]:
    """Rule 5: every GPU operation lasts under ``floor_ns`` (0 ns at the file's resolution; the rows stay,
    counted with ``kept=True``)."""
    gpu_rows = sum(len(out.get(n, tables[n])) for n in GPU_TABLES)
    if not gpu_rows or any(np.any(out.get(n, tables[n]).duration_ns >= floor_ns) for n in GPU_TABLES):
        return []
    zero = not any(np.any(out.get(n, tables[n]).duration_ns) for n in GPU_TABLES)
    lasts = "0 ns" if zero else f"under {floor_ns} ns"
    found = []
    for name in GPU_TABLES:
        t = out.get(name, tables[name])
        if len(t):
            found.append(
                DamagedRows(
                    table=name,
                    count=len(t),
                    total=len(t),
                    why=f"{NO_GPU_TIME} {lasts}, so no GPU time was recorded",
                    first=_row_text(fmt, t, 0),
                    kept=True,
                )
            )
    return found


_DEVICE_SYNCS = ("cudaDeviceSynchronize", "cuCtxSynchronize")
"""Calls that return only once every operation the process enqueued on the current device has finished."""


def _clock_and_device_notes(tl: Timeline, tables: dict[str, Any]) -> list[str]:
    """What no single row shows: GPU work that ends after the call that waited for it returned (the GPU's
    clock runs late against the host's; one that runs early is rule 2), and GPU work on a device the capture's
    GPU list does not describe."""
    notes = []
    late = _late_gpu_clock(tl.api, tables)
    if late is not None:
        ns, n, total, what = late
        notes.append(
            f"the GPU clock runs at least {_ms(ns)} late against the host's: {what} ended "
            f"{_ms(ns)} after the call returned ({n} of {total} such calls), which no synchronization allows; the "
            "idle gaps and what the host did in them are placed across the two clocks, so a gap's cause may be "
            "misplaced by as much"
        )
    used: dict[int, int] = {}
    for name in GPU_TABLES:
        for dev, count in zip(*np.unique(tables[name].device, return_counts=True), strict=True):
            used[int(dev)] = used.get(int(dev), 0) + int(count)
    described = {g.device: g.name for g in tl.gpus if g.name}
    unknown = sorted(d for d in used if d not in described)
    if described and unknown:
        n = sum(used[d] for d in unknown)
        listed = ", ".join(f"device {d}: {name}" for d, name in sorted(described.items())[:4])
        notes.append(
            f"{n:,} of {sum(used.values()):,} GPU operations ran on device {', '.join(map(str, unknown))}, which "
            f"the capture's GPU list does not describe (it lists {listed}); kprof knows no name or peak for it"
        )
    return notes


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms" if ns >= 100_000 else f"{ns / 1e3:,.1f} us"


def _late_gpu_clock(api: ApiTable, tables: dict[str, Any]) -> tuple[int, int, int, str] | None:
    """``(how late, calls that show it, calls checked, which calls)`` when GPU work ends more than
    CLOCK_ALIGNMENT_SLACK_NS after a call that waited for it returned, else None.

    Two calls wait for known GPU work: a device-wide synchronization (:data:`_DEVICE_SYNCS`) for everything its
    thread launched on the device before it (the device of the thread's last launch), and a synchronous
    device-to-host copy (``cudaMemcpy``) for its own copy. Measured on every capture of the samples, the
    validation galleries and the corpus: the synchronization returned 1.56 us or more after the last such work
    ended (1,444 calls) and the copy call 5.9 us or more after its copy (31 calls)."""
    from kprof.thresholds import CLOCK_ALIGNMENT_SLACK_NS
    from kprof.timeline_model.names import ApiCategory, api_base_name
    from kprof.timeline_model.tables import COPY_DTOH

    ids, rows = _call_ids(api, np.ones(len(api), dtype=bool))
    if not len(ids):
        return None
    ends, devs, calls = [], [], []
    copy_late = np.zeros(0, np.int64)
    for name in GPU_TABLES:
        t = tables[name]
        if not len(t):
            continue
        j = np.clip(np.searchsorted(ids, t.correlation), 0, len(ids) - 1)
        hit = ids[j] == t.correlation
        ends.append(t.end_ns[hit])
        devs.append(t.device[hit])
        calls.append(rows[j[hit]])
        if name == "copies":
            blocking = (
                hit & (api.category[rows[j]] == int(ApiCategory.COPY_SYNC)) & (t.direction == COPY_DTOH)
            )
            copy_late = t.end_ns[blocking] - api.end_ns[rows[j[blocking]]]
    if not calls:  # no GPU work at all
        return None
    end, dev, call = np.concatenate(ends), np.concatenate(devs), np.concatenate(calls)
    syncs = np.array([api_base_name(n) in _DEVICE_SYNCS for n in api.names] or [False])[api.name_id]
    late = []
    for thread in np.unique(api.thread[syncs]).tolist():
        mine = api.thread[call] == thread
        if not mine.any():
            continue
        o = np.argsort(api.start_ns[call[mine]], kind="stable")  # the thread's launches in call order
        cs, e, d = api.start_ns[call[mine]][o], end[mine][o], dev[mine][o]
        s_rows = np.flatnonzero(syncs & (api.thread == thread))
        last = np.searchsorted(cs, api.start_ns[s_rows]) - 1  # its last launch before each sync
        s_rows, last = s_rows[last >= 0], last[last >= 0]
        for device in np.unique(d[last]).tolist():  # the device of that launch: the one the sync waits for
            ended = np.maximum.accumulate(np.where(d == device, e, np.iinfo(np.int64).min))
            at = d[last] == device
            late.append(ended[last[at]] - api.end_ns[s_rows[at]])
    checks = [
        (
            "GPU work launched before a device-wide synchronization",
            np.concatenate(late) if late else np.zeros(0, np.int64),
        ),
        ("the copy of a blocking device-to-host cudaMemcpy", copy_late),
    ]
    for what, v in checks:
        if len(v) and v.max() > CLOCK_ALIGNMENT_SLACK_NS:
            return int(v.max()), int(np.count_nonzero(v > CLOCK_ALIGNMENT_SLACK_NS)), len(v), what
    return None
