"""Numbers across the ranks (:class:`JobStats`, :func:`job_stats`) and the slow ranks they show."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.job.summary import RankSummary


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class JobStats:
    """The ranks' aligned steps: one row per rank (sorted by rank), one column per aligned step.

    Times are nanoseconds (float arrays, NaN where a rank lacks the step).
    """

    ranks: np.ndarray
    paths: tuple[str, ...]
    step_numbers: np.ndarray
    aligned_by: str
    """``"step number"`` or ``"step order"`` (when the ranks' numbers do not match)."""
    warmup_dropped: bool
    step_ns: np.ndarray
    compute_ns: np.ndarray
    nccl_ns: np.ndarray
    exposed_ns: np.ndarray
    busy_ns: np.ndarray

    @property
    def rank_count(self) -> int:
        return len(self.ranks)

    @property
    def step_count(self) -> int:
        return len(self.step_numbers)

    def median(self, what: str) -> np.ndarray:
        """Per-rank median over the aligned steps of ``step_ns``, ``compute_ns``, ``exposed_ns``, ...; or ``idle_ns``."""
        if what == "idle_ns":
            a = np.maximum(self.step_ns - self.busy_ns, 0)
        elif what == "own_ns":
            a = self.step_ns - self.exposed_ns
        else:
            a = getattr(self, what)
        if a.shape[1] == 0:
            return np.full(a.shape[0], np.nan)
        return np.nanmedian(a, axis=1)


def job_stats(summaries: Sequence[RankSummary]) -> JobStats:
    """Align the ranks' steps (by number, else by order) and drop the first common step as warm-up.

    Raises
    ------
    ValueError
        No summaries, or a rank given twice.

    Examples
    --------
    >>> s = [RankSummary(path=f"r{r}", rank=r, step_number=np.arange(4), step_ns=np.full(4, 10),
    ...                  compute_ns=np.full(4, 6), nccl_ns=np.full(4, 3), exposed_ns=np.full(4, 1),
    ...                  busy_ns=np.full(4, 9)) for r in (1, 0)]
    >>> st = job_stats(s)
    >>> st.ranks.tolist(), st.step_numbers.tolist(), st.warmup_dropped
    ([0, 1], [1, 2, 3], True)
    """
    if not summaries:
        raise ValueError("a job needs at least one rank summary")
    ss = sorted(summaries, key=lambda s: s.rank)
    ranks = [s.rank for s in ss]
    dup = [r for r, n in Counter(ranks).items() if n > 1]
    if dup:
        raise ValueError(f"rank {dup[0]} is given more than once")
    common: np.ndarray | None = None
    for s in ss:
        common = s.step_number if common is None else np.intersect1d(common, s.step_number)
    assert common is not None
    cols = ("step_ns", "compute_ns", "nccl_ns", "exposed_ns", "busy_ns")
    if len(common):
        aligned_by = "step number"
        numbers = np.sort(common)
        idx = [np.searchsorted(s.step_number, numbers, sorter=np.argsort(s.step_number)) for s in ss]
        idx = [np.argsort(s.step_number)[i] for s, i in zip(ss, idx, strict=True)]
    else:
        aligned_by = "step order"
        n = min(s.step_count for s in ss)
        numbers = np.arange(n, dtype=np.int64)
        idx = [np.arange(n) for _ in ss]
    data = {c: np.array([getattr(s, c)[i] for s, i in zip(ss, idx, strict=True)], np.float64) for c in cols}
    if any(s.step_count == 0 for s in ss):
        data = {c: np.zeros((len(ss), 0)) for c in cols}
        numbers = np.zeros(0, np.int64)
    dropped = len(numbers) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP
    if dropped:
        numbers = numbers[1:]
        data = {c: v[:, 1:] for c, v in data.items()}
    return JobStats(
        ranks=np.array(ranks, np.int64),
        paths=tuple(s.path for s in ss),
        step_numbers=numbers,
        aligned_by=aligned_by,
        warmup_dropped=dropped,
        **{c: data[c].reshape(len(ss), -1) for c in cols},
    )


def typical(values: np.ndarray) -> float:
    """The typical rank's value: the median of the faster (smaller) half of the ranks.

    Examples
    --------
    >>> typical(np.array([2.6, 4.35]))
    2.6
    >>> typical(np.array([1.0, 1.1, 0.9, 5.0]))
    0.95
    """
    v = np.sort(values[np.isfinite(values)])
    if len(v) == 0:
        return float("nan")
    return float(np.median(v[: max(1, (len(v) + 1) // 2)]))


@dataclass(frozen=True, slots=True)
class _Slow:
    """Ranks that take longer per step than the typical rank, in ``metric``."""

    metric: str  # "compute_ns" or "own_ns"
    slow: np.ndarray  # mask over ranks
    ref: float
    values: np.ndarray


def _slow_ranks(st: JobStats, metric: str, step_med: float) -> _Slow:
    v = st.median(metric)
    ref = typical(v)
    slow = (v > ref * (1 + th.STRAGGLER_MIN_EXCESS)) & (v - ref >= th.STRAGGLER_MIN_STEP_SHARE * step_med)
    return _Slow(metric=metric, slow=slow, ref=ref, values=v)


def _step_median(st: JobStats) -> float:
    steps = st.median("step_ns")
    return float(np.nanmedian(steps)) if st.step_count and len(steps) else 0.0


def _find_straggler(st: JobStats, step_med: float) -> tuple[_Slow, float] | None:
    """The slow ranks and the others' extra wait per step, when the job has stragglers; else None."""
    exposed = st.median("exposed_ns")
    few = max(1, int(th.STRAGGLER_MAX_FRACTION * st.rank_count))
    for metric in ("compute_ns", "own_ns"):
        sl = _slow_ranks(st, metric, step_med)
        n_slow = int(np.count_nonzero(sl.slow))
        if n_slow == 0:
            continue  # no compute outlier: look for a rank that is late for another reason
        others = ~sl.slow
        excess = float(np.median(sl.values[sl.slow])) - float(np.median(sl.values[others]))
        wait_gap = float(np.median(exposed[others])) - float(np.median(exposed[sl.slow]))
        if (
            n_slow <= few
            and wait_gap >= th.STRAGGLER_WAIT_MATCH * excess
            and wait_gap >= th.STRAGGLER_MIN_STEP_SHARE * step_med
        ):
            return sl, wait_gap
        return None  # ranks differ, but not as a few that the others wait for
    return None


def straggler_ranks(summaries: Sequence[RankSummary] | JobStats) -> list[int]:
    """The ranks a job diagnosis calls stragglers (empty when it does not), e.g. to highlight in plots.

    Examples
    --------
    >>> straggler_ranks([])
    []
    """
    if not isinstance(summaries, JobStats) and not summaries:
        return []
    st = summaries if isinstance(summaries, JobStats) else job_stats(summaries)
    if not st.step_count or st.rank_count < 2:
        return []
    if isinstance(summaries, JobStats) or any(s.nccl_kernel_count for s in summaries):
        found = _find_straggler(st, _step_median(st))
        if found is not None:
            return [int(r) for r in st.ranks[found[0].slow]]
    return []
