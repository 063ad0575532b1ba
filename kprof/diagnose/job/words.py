"""How the job view writes ranks, times and the coverage of the steps it compares."""

from __future__ import annotations

import os
from collections.abc import Sequence

from kprof.diagnose.job.stats import JobStats
from kprof.diagnose.job.summary import RankSummary
from kprof.model import (
    Subject,
    SubjectKind,
    _fmt,
)

_RANK_OUT = "rank%q{RANK}"
"""The output of a per-rank capture: nsys expands ``%q{RANK}`` from the environment of each rank."""


def _rank_out(job: str, summaries: Sequence[RankSummary], what: str) -> str:
    """Where a per-rank capture the job's diagnosis suggests goes: beside the ranks' files (their one
    folder), named after the job (``runs/ddp_after_rank%q{RANK}``)."""
    folders = {os.path.dirname(s.path) for s in summaries if s.path}
    name = f"{job}_{what}_{_RANK_OUT}" if job else f"{what}_{_RANK_OUT}"
    return os.path.join(folders.pop(), name) if len(folders) == 1 else name


def _ms(ns: float) -> str:
    """A time in ns as kprof's one formatter prints it (ns, µs, ms or s, 3 significant digits)."""
    return _fmt(float(ns), "ns")


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _ranks_text(ranks: Sequence[int], limit: int = 8) -> str:
    rs = [str(r) for r in ranks]
    word = "rank" if len(rs) == 1 else "ranks"
    if len(rs) > limit:
        return f"{word} {', '.join(rs[:limit])} and {len(rs) - limit} more"
    if len(rs) > 1:
        return f"{word} {', '.join(rs[:-1])} and {rs[-1]}"
    return f"{word} {rs[0]}"


def _subject(job: str, summaries: Sequence[RankSummary]) -> Subject:
    gpus = {s.gpu for s in summaries if s.gpu}
    return Subject(
        kind=SubjectKind.JOB, name=job, ranks=len(summaries), device=gpus.pop() if len(gpus) == 1 else None
    )


def _coverage_note(summaries: Sequence[RankSummary], st: JobStats) -> str:
    parts = []
    worlds = {s.world_size for s in summaries if s.world_size}
    if len(worlds) == 1:
        w = worlds.pop()
        if w > len(summaries):
            parts.append(f"{len(summaries)} of the job's {w} ranks were captured")
    parts.append(
        f"{st.step_count} aligned step{'s' if st.step_count != 1 else ''} (by {st.aligned_by}"
        + (", the first common step left out as warm-up)" if st.warmup_dropped else ")")
    )
    return "Measured over " + "; ".join(parts) + "."


def _kernel_delta(
    slow: Sequence[RankSummary], others: Sequence[RankSummary]
) -> list[tuple[str, float, float, float]]:
    """Per kernel name: (name, extra ns per step on the slow ranks, launches per step there, launches on the others)."""

    def table(group: Sequence[RankSummary]) -> dict[str, tuple[float, float]]:
        acc: dict[str, list[tuple[float, float]]] = {}
        for s in group:
            for name, t, c in s.top_kernels:
                acc.setdefault(name, []).append((t, c))
        n = max(len(group), 1)
        # a name missing from a rank's top list counts as 0 there
        return {k: (sum(x[0] for x in v) / n, sum(x[1] for x in v) / n) for k, v in acc.items()}

    ts, to = table(slow), table(others)
    out = []
    for name in set(ts) | set(to):
        a = ts.get(name, (0.0, 0.0))
        b = to.get(name, (0.0, 0.0))
        out.append((name, a[0] - b[0], a[1], b[1]))
    out.sort(key=lambda x: -x[1])
    return out
