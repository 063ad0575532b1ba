"""The job's verdict from the ranks' summaries (:func:`diagnose_summaries`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.job.balance import _communication_bound, _load_imbalance
from kprof.diagnose.job.shared import _shared
from kprof.diagnose.job.stats import _find_straggler, _step_median, job_stats, typical
from kprof.diagnose.job.straggler import _straggler
from kprof.diagnose.job.summary import RankSummary
from kprof.diagnose.validity import damaged_job
from kprof.model import (
    Diagnosis,
)


def _per_rank(summaries: Sequence[RankSummary]) -> list[Diagnosis]:
    out: list[Diagnosis] = []
    for s in sorted(summaries, key=lambda s: s.rank):
        for d in s.diagnoses:
            subj = dataclasses.replace(d.subject, name=f"rank {s.rank}: {d.subject.name}")
            out.append(dataclasses.replace(d, subject=subj, file=d.file or s.path))
    return out


def diagnose_summaries(summaries: Sequence[RankSummary], *, job: str = "job") -> list[Diagnosis]:
    """Diagnose a job from its ranks' summaries: the job's verdict first, then each rank's diagnoses.

    Parameters
    ----------
    summaries
        One :class:`RankSummary` per rank (any order; ranks must be distinct).
    job
        The job's name, for the subject.

    Returns
    -------
    list of Diagnosis
        The first has ``subject.kind == "job"`` and ``subject.ranks == len(summaries)``; its
        bottleneck is ``straggler``, ``load_imbalance``, ``communication_bound`` or the
        bottleneck the ranks share. The ranks' own diagnoses follow, in rank order.

    Examples
    --------
    >>> def rank(r, compute, exposed):
    ...     n = 5
    ...     return RankSummary(path=f"r{r}", rank=r, step_number=np.arange(n), step_ns=np.full(n, 10_000_000),
    ...                        compute_ns=np.full(n, compute), nccl_ns=np.full(n, exposed + 500_000),
    ...                        exposed_ns=np.full(n, exposed), busy_ns=np.full(n, compute + exposed))
    >>> d = diagnose_summaries([rank(0, 5_000_000, 4_000_000), rank(1, 8_500_000, 500_000)], job="toy")[0]
    >>> d.bottleneck.value, d.subject.ranks
    ('straggler', 2)
    """
    ss = sorted(summaries, key=lambda s: s.rank)
    if (damaged := damaged_job(job, [(s.rank, s.path, s.diagnoses) for s in ss])) is not None:
        return [damaged, *_per_rank(ss)]  # no job verdict compares a damaged rank
    st = job_stats(ss)
    step_med = _step_median(st)
    has_nccl = any(s.nccl_kernel_count for s in ss)
    first: Diagnosis | None = None
    if st.step_count and len(ss) >= 2 and has_nccl:
        found = _find_straggler(st, step_med)
        if found is not None:
            first = _straggler(job, ss, st, found[0], found[1], step_med)
        if first is None:
            c = st.median("compute_ns")
            ref = typical(c)
            spread = (float(np.nanmax(c)) - float(np.nanmin(c))) / max(ref, 1)
            if (
                spread > th.LOAD_IMBALANCE_SPREAD
                and float(np.nanmax(c)) - ref >= th.STRAGGLER_MIN_STEP_SHARE * step_med
            ):
                first = _load_imbalance(job, ss, st, step_med)
        if first is None:
            exp = st.median("exposed_ns")
            comp = st.median("compute_ns")
            idle = st.median("idle_ns")
            if bool(np.all((exp > comp) & (exp > idle))):
                first = _communication_bound(job, ss, st, step_med)
    if first is None:
        first = _shared(job, ss, st, step_med)
    notes = sorted({n for s in ss for n in s.notes})
    if notes:
        first = dataclasses.replace(
            first, mechanism=(first.mechanism + " Notes: " + "; ".join(notes[:5]) + ".").strip()
        )
    return [first, *_per_rank(ss)]
