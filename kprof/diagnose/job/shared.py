"""The bottleneck every rank shares (the ranks' own timeline verdicts agree), as the job's verdict."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose.job.stats import JobStats, typical
from kprof.diagnose.job.summary import RankSummary
from kprof.diagnose.job.words import _coverage_note, _ms, _pct, _rank_out, _subject
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Evidence,
    Finding,
    Verdict,
)


def _balance_evidence(
    summaries: Sequence[RankSummary], st: JobStats, step_med: float
) -> tuple[str, list[Evidence], list[Finding]]:
    """(how balanced the job is in words, the evidence, the exposed-NCCL finding)."""
    comp = st.median("compute_ns")
    exp = st.median("exposed_ns")
    step = st.median("step_ns")
    ref = typical(comp)
    spread = (
        (float(np.nanmax(comp)) - float(np.nanmin(comp))) / max(ref, 1)
        if len(comp) and st.step_count
        else 0.0
    )
    exp_share = float(np.nanmax(exp / np.maximum(step, 1))) if len(exp) and st.step_count else 0.0
    if all(s.nccl_kernel_count == 0 for s in summaries):
        balance = "no NCCL kernels in any rank's capture, so the ranks did not wait for each other on the GPU"
    elif spread <= th.LOAD_IMBALANCE_SPREAD:
        balance = f"no straggler: compute per step within {_pct(spread)} across ranks"
    else:
        balance = (
            f"compute per step differs by {_pct(spread)} across ranks, but by less than "
            f"{th.STRAGGLER_MIN_STEP_SHARE:.0%} of the step"
        )
    evidence = [
        Evidence(
            name="compute per step, spread across ranks",
            value=round(100 * spread, 1),
            unit="%",
            reference=f"(max - min) / typical; <= {th.LOAD_IMBALANCE_SPREAD:.0%}: balanced",
            reference_value=100 * th.LOAD_IMBALANCE_SPREAD,
            metric="compute_ns",
        ),
        Evidence(
            name="exposed NCCL share of the step",
            value=round(100 * exp_share, 1),
            unit="%",
            reference="the largest over ranks; communication_bound when it is the largest share on every rank",
            metric="exposed_nccl_ns",
        ),
    ]
    if step_med > 0:
        evidence.append(
            Evidence(
                name="step time (median over ranks)",
                value=round(step_med / 1e6, 3),
                unit="ms",
                reference=f"from {_ms(float(np.nanmin(step)))} to {_ms(float(np.nanmax(step)))} across ranks",
                metric="step_ns",
            )
        )
    findings: list[Finding] = []
    med_exp_share = float(np.nanmedian(exp / np.maximum(step, 1))) if len(exp) and st.step_count else 0.0
    if med_exp_share >= th.MIN_FINDING_SHARE:
        findings.append(
            Finding(
                bottleneck=Bottleneck.COMMUNICATION_BOUND,
                headline=f"Exposed NCCL time is {_pct(med_exp_share)} of the step (median over ranks, "
                f"{_ms(float(np.nanmedian(exp)))} per step): collective time not hidden behind compute.",
                evidence=(evidence[1],),
                share=min(1.0, med_exp_share),
            )
        )
    return balance, evidence, findings


def _representative(
    firsts: list[tuple[int, Diagnosis]], st: JobStats
) -> tuple[Bottleneck | None, list[tuple[int, Diagnosis]], tuple[int, Diagnosis], tuple[int, Diagnosis]]:
    """(the bottleneck most ranks share, the ranks that hold it, the critical rank, the rank that speaks for
    them). The critical rank sets the job's pace: the one that waits least inside collectives."""
    counts = Counter(d.bottleneck for _, d in firsts)
    top = max(counts.values())
    tied = [b for b, n in counts.items() if n == top]
    own = dict(zip(st.ranks.tolist(), st.median("own_ns").tolist(), strict=True)) if st.step_count else {}
    critical = max(firsts, key=lambda x: own.get(x[0], 0.0))
    best = (
        tied[0] if len(tied) == 1 else (critical[1].bottleneck if critical[1].bottleneck in tied else tied[0])
    )
    holders = [(r, d) for r, d in firsts if d.bottleneck == best]
    if critical[1].bottleneck == best:
        rep = critical
    else:
        step = st.median("step_ns")
        by_step = dict(zip(st.ranks.tolist(), step.tolist(), strict=True)) if st.step_count else {}
        holders.sort(key=lambda x: by_step.get(x[0], 0.0))
        rep = holders[len(holders) // 2]
    return best, holders, critical, rep


def _shared_headline(
    balance: str,
    best: Bottleneck | None,
    holders: list[tuple[int, Diagnosis]],
    critical: tuple[int, Diagnosis],
    rep: tuple[int, Diagnosis],
    n: int,
) -> str:
    rep_rank, rep_d = rep
    name = best.value if best else "undetermined"
    if len(holders) == n:
        who = {1: f"the rank is {name}", 2: f"both ranks are {name}"}.get(n, f"all {n} ranks are {name}")
        return f"The job is balanced ({balance}) and {who}. Rank {rep_rank}: {rep_d.headline}"
    if critical[1].bottleneck == best:
        return (
            f"The job is balanced ({balance}); the ranks' own diagnoses differ, and rank {critical[0]}, which waits "
            f"least inside collectives and so sets the job's pace, is {name} ({len(holders)} of {n} ranks). "
            f"Rank {rep_rank}: {rep_d.headline}"
        )
    return (
        f"The job is balanced ({balance}); the ranks' own diagnoses differ: {len(holders)} of {n} are {name}. "
        f"Rank {rep_rank}: {rep_d.headline}"
    )


def _shared(job: str, summaries: Sequence[RankSummary], st: JobStats, step_med: float) -> Diagnosis:
    firsts = [(s.rank, s.diagnoses[0]) for s in summaries if s.diagnoses]
    balance, evidence, findings = _balance_evidence(summaries, st, step_med)
    subject = _subject(job, summaries)
    if not firsts:
        return Diagnosis(
            subject=subject,
            bottleneck=None,
            verdict=Verdict.INCONCLUSIVE,
            headline=f"The {len(summaries)} ranks show no job-level problem ({balance}), and no rank could be "
            "diagnosed on its own (no GPU work in their captures).",
            evidence=tuple(evidence),
            confidence=Confidence(value=0.4, would_raise="captures with GPU activity on every rank"),
            next_step=f"Capture each rank with CUDA tracing on: `{commands.nsys_command(_rank_out(job, summaries, 'traced'))}`.",
            findings=tuple(findings),
        )
    best, holders, critical, (rep_rank, rep) = _representative(firsts, st)
    n = len(firsts)
    headline = _shared_headline(balance, best, holders, critical, (rep_rank, rep), n)
    if len(holders) < n:
        others = Counter(d.bottleneck for _, d in firsts if d.bottleneck != best and d.bottleneck is not None)
        findings.extend(
            Finding(
                bottleneck=b,
                headline=f"{k} rank{'s' if k != 1 else ''} diagnosed {b.value} instead (see the per-rank diagnoses).",
                share=k / n,
            )
            for b, k in others.most_common()
        )
    findings.sort(key=lambda f: -(f.share or 0))
    return Diagnosis(
        subject=subject,
        bottleneck=best,
        verdict=rep.verdict,
        headline=headline,
        evidence=tuple(evidence),
        mechanism=(rep.mechanism + " " + _coverage_note(summaries, st)).strip(),
        fix=rep.fix,
        expect=rep.expect,
        confidence=Confidence(
            value=round(rep.confidence.value * len(holders) / n, 2),
            would_raise=rep.confidence.would_raise or "every rank diagnosed the same way",
        ),
        next_step=rep.next_step or "Capture again after the change and compare.",
        findings=tuple(findings),
    )
