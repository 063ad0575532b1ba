"""Where events go in the trace: processes and threads (tracks), times in microseconds from the capture's
origin, extra tracks for slices that overlap without nesting."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    pass


KPROF_PID = 1

GPU_PID_BASE = 10

HOST_PID = 1000

VERDICT_TID = 1

GAPS_TID = 2

NCU_TID = 3

CRITICAL_TID = 4


def _us(ns: int, origin: int) -> float:
    """Microseconds from ``origin`` with three decimals: exact nanoseconds after the viewers' ``llround(us*1000)``."""
    return round((ns - origin) / 1000.0, 3)


def _dur(ns: int) -> float:
    return round(max(ns, 0) / 1000.0, 3)


def _lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per interval, the lane (0, 1, ...) that keeps every lane properly nested.

    Intervals are taken in (start, -end) order; each goes to the first lane whose open intervals
    all contain it (or have ended by its start). Trees of nested calls stay in lane 0; only
    intervals that cross another without nesting move on.

    Examples
    --------
    >>> _lanes(np.array([0, 2, 5, 8]), np.array([10, 4, 12, 9])).tolist()
    [0, 0, 1, 1]
    """
    n = len(starts)
    out = np.zeros(n, np.int32)
    if n == 0:
        return out
    order = np.lexsort((-ends, starts))
    stacks: list[list[int]] = [[]]
    for i in order.tolist():
        s, e = int(starts[i]), int(ends[i])
        for lane, st in enumerate(stacks):
            while st and st[-1] <= s:
                st.pop()
            if not st or e <= st[-1]:
                st.append(e)
                out[i] = lane
                break
        else:
            stacks.append([e])
            out[i] = len(stacks) - 1
    return out


def _cover(gs: np.ndarray, ge: np.ndarray, os_: np.ndarray, oe: np.ndarray) -> np.ndarray:
    """Per gap [gs, ge), the index of the interval of (os_, oe) that overlaps it most (-1: none).

    Ties go to the shorter interval (the innermost operator), then to the first in the table. A sweep over both sorted lists keeps
    only the intervals open at the gap in a heap, so the cost is ~(gaps + intervals) log intervals.
    """
    out = np.full(len(gs), -1, np.int64)
    if len(gs) == 0 or len(os_) == 0:
        return out
    order = np.argsort(os_, kind="stable")
    s_sorted, e_sorted = os_[order], oe[order]
    active: list[tuple[int, int]] = []  # (end, index into order)
    j = 0
    for g in np.argsort(gs, kind="stable").tolist():
        a, b = int(gs[g]), int(ge[g])
        while j < len(order) and s_sorted[j] < b:
            heapq.heappush(active, (int(e_sorted[j]), j))
            j += 1
        while active and active[0][0] <= a:
            heapq.heappop(active)
        best, best_key = -1, (0, 0, 0)
        for end, k in active:
            ov = min(end, b) - max(int(s_sorted[k]), a)
            if ov <= 0:
                continue
            key = (ov, -(end - int(s_sorted[k])), -int(order[k]))
            if best < 0 or key > best_key:
                best, best_key = k, key
        if best >= 0:
            out[g] = int(order[best])
    return out


@dataclass(slots=True)
class _Tracks:
    """Allocates (pid, tid) tracks and remembers their names for the metadata events."""

    names: dict[tuple[int, int], str] = field(default_factory=dict)
    sort: dict[tuple[int, int], int] = field(default_factory=dict)
    next_tid: dict[int, int] = field(default_factory=dict)

    def track(self, pid: int, name: str, tid: int | None = None) -> int:
        if tid is None:
            tid = self.next_tid.get(pid, 100)
            self.next_tid[pid] = tid + 1
        self.names[(pid, tid)] = name
        self.sort[(pid, tid)] = len(self.sort)
        return tid


def _x(
    name: str,
    cat: str,
    pid: int,
    tid: int,
    start: int,
    end: int,
    origin: int,
    args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": _us(start, origin),
        "dur": _dur(end - start),
        "pid": pid,
        "tid": tid,
    }
    if args:
        ev["args"] = args
    return ev


def _laned(
    tracks: _Tracks, pid: int, label: str, starts: np.ndarray, ends: np.ndarray
) -> Iterator[tuple[int, int]]:
    """``(row, tid)`` per interval of one logical track, in nesting order, spread over as many properly
    nested lanes (extra tracks named ``label (2)``, ...) as the intervals need."""
    if len(starts) == 0:
        return
    lanes = _lanes(starts, ends)
    tids = [tracks.track(pid, label if k == 0 else f"{label} ({k + 1})") for k in range(int(lanes.max()) + 1)]
    for i in np.lexsort((-ends, starts)).tolist():
        yield i, tids[int(lanes[i])]


def _meta(tracks: _Tracks, processes: dict[int, tuple[str, int]]) -> Iterator[dict[str, Any]]:
    for pid, (name, sort) in processes.items():
        yield {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}
        yield {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": sort}}
    for (pid, tid), name in tracks.names.items():
        yield {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        yield {
            "name": "thread_sort_index",
            "ph": "M",
            "pid": pid,
            "tid": tid,
            "args": {"sort_index": tracks.sort[(pid, tid)]},
        }
