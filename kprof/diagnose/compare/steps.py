"""A capture's steps (profiler steps or the repeated NVTX range), each projected onto the GPU, and
their durations in the steady state (see :mod:`kprof.diagnose.compare`, "Matching")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.timeline_model import Timeline


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class StepTimes:
    """A timeline's iterations and their steady-state durations, see :func:`step_times`."""

    label: str
    """``"profiler step"``, ``"NVTX range 'step #'"``, or ``""`` when the capture has no iterations."""
    host_start_ns: np.ndarray
    host_end_ns: np.ndarray
    gpu_start_ns: np.ndarray
    """Per step, the first start of the GPU work it launched; -1 where none is linked to it."""
    gpu_end_ns: np.ndarray
    durations_ns: np.ndarray
    """Steady-state per-step durations (steps 2..N: the first is warm-up), empty below 3 steps."""
    projected: bool
    """True when the durations come from the GPU work of each step (end to end), False when from the
    host ranges (the capture links no GPU work to the steps)."""

    @property
    def count(self) -> int:
        """Number of iterations in the capture."""
        return len(self.host_start_ns)

    @property
    def usable(self) -> bool:
        """At least MIN_ITERATIONS_FOR_WARMUP_DROP steps: a steady state with a dispersion of its own."""
        return len(self.durations_ns) >= 2 and self.count >= th.MIN_ITERATIONS_FOR_WARMUP_DROP

    def start_ns(self, i: int) -> int:
        """Where step ``i`` starts: on the GPU when projected, else on the host."""
        if self.projected and self.gpu_start_ns[i] >= 0:
            return int(self.gpu_start_ns[i])
        return int(self.host_start_ns[i])


def _iterations(tl: Timeline) -> tuple[np.ndarray, np.ndarray, str]:
    """Iteration windows sorted by start, and their label, by the timeline diagnosis's own rule
    (profiler steps, else the outermost repeated NVTX range that no library pushed)."""
    from kprof.diagnose.timeline import _iterations as timeline_iterations

    it = timeline_iterations(tl)
    if not len(it):
        empty = np.zeros(0, np.int64)
        return empty, empty, ""
    starts, ends = it.windows
    label = "profiler step" if it.kind == "profiler step" else f"{it.kind} {it.group!r}"
    return np.asarray(starts, np.int64), np.asarray(ends, np.int64), label


def step_times(tl: Timeline) -> StepTimes:
    """The iterations of a timeline (profiler steps or repeated NVTX ranges), projected onto the GPU.

    A step's GPU work is every kernel, copy, memset and graph launch whose launching call (found
    through its correlation id) started inside the step's host range. The steady-state duration
    of step *j* is the time from the end of the previous step's GPU work to the end of its own:
    the loop's period whether the host or the GPU sets the pace (a host that runs ahead of the
    GPU makes host ranges far shorter than the steps). Steps without linked GPU work are skipped
    (the period spans them); with fewer than half of the steps linked, the host ranges are used
    (start to next start).

    Examples
    --------
    >>> st = step_times(Timeline(source="x.sqlite", format="nsys"))
    >>> st.count, st.usable
    (0, False)
    """
    hs, he, label = _iterations(tl)
    n = len(hs)
    big = np.iinfo(np.int64).max
    gs = np.full(n, big, np.int64)
    ge = np.full(n, -1, np.int64)
    api = tl.api
    if n and len(api):
        order = np.argsort(api.correlation, kind="stable")
        sc = api.correlation[order]
        for table in (tl.kernels, tl.copies, tl.memsets, tl.graphs):
            if len(table) == 0:
                continue
            corr = table.correlation
            i = np.searchsorted(sc, corr)
            ic = np.minimum(i, len(sc) - 1)
            ok = (i < len(sc)) & (sc[ic] == corr) & (corr >= 0)
            call = api.start_ns[order[ic[ok]]]
            step = np.searchsorted(hs, call, side="right") - 1
            inside = (step >= 0) & (call < he[np.maximum(step, 0)])
            st_ = step[inside]
            np.minimum.at(gs, st_, table.start_ns[ok][inside])
            np.maximum.at(ge, st_, table.end_ns[ok][inside])
    gs[ge < 0] = -1
    linked = ge >= 0
    durations = np.zeros(0, np.float64)
    projected = False
    if n >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        if linked[1:].sum() * 2 >= n - 1 and linked.sum() >= 2:
            projected = True
            idx = np.flatnonzero(linked)
            # step idx[j] ends its period at its own GPU end; the first linked step only starts the clock
            # (warm-up), and a period spanning unlinked steps is shared out between them
            durations = (np.diff(ge[idx]) / np.diff(idx)).astype(np.float64)
        else:
            per = np.empty(n, np.float64)
            per[:-1] = np.diff(hs)
            per[-1] = he[-1] - hs[-1]
            durations = per[1:]
    return StepTimes(
        label=label,
        host_start_ns=hs,
        host_end_ns=he,
        gpu_start_ns=gs,
        gpu_end_ns=ge,
        durations_ns=durations,
        projected=projected,
    )


def aligned_windows(
    before: StepTimes, after: StepTimes, steps: int = 2
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Windows of equal length that start at the same step in both timelines, for side-by-side plots.

    The common step is the middle one of the shorter capture (in the steady state); each window
    starts where that step starts (on the GPU when the steps are projected) and is as long as the
    longer of the two captures needs for ``steps`` steps, so both plots share one time scale.
    None when either capture has fewer than 3 steps.

    Examples
    --------
    >>> b, a = step_times(kprof.load("before.sqlite")), step_times(kprof.load("after.sqlite"))  # doctest: +SKIP
    >>> (wb, wa) = aligned_windows(b, a)  # doctest: +SKIP
    >>> plot_timeline(tl_before, window=wb); plot_timeline(tl_after, window=wa)  # doctest: +SKIP
    """
    if not (before.usable and after.usable):
        return None
    k = max(1, min(before.count, after.count) // 2)
    widths = []
    for s in (before, after):
        j = min(k + steps, s.count - 1)
        w = s.start_ns(j) - s.start_ns(k) if j > k else int(np.median(s.durations_ns)) * steps
        if s.count - 1 < k + steps:  # the capture ends first: extend by its median step
            w += int(np.median(s.durations_ns)) * (k + steps - j)
        widths.append(max(w, 1))
    width = max(widths)
    b0, a0 = before.start_ns(k), after.start_ns(k)
    return (b0, b0 + width), (a0, a0 + width)
