"""``straggler``: some ranks are slower per step and the others wait for them in collectives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose.job.stats import JobStats, _Slow
from kprof.diagnose.job.summary import RankSummary, is_nccl_kernel
from kprof.diagnose.job.words import (
    _coverage_note,
    _kernel_delta,
    _ms,
    _pct,
    _rank_out,
    _ranks_text,
    _subject,
)
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Finding,
    Verdict,
)


@dataclass(slots=True)
class _Facts:
    """What the straggler verdict says about the slow ranks and the others (:func:`_facts`)."""

    sl: _Slow
    ranks: np.ndarray
    slow_r: list[int]
    others: np.ndarray
    ref_others: float
    excess: np.ndarray
    worst: int
    w_others: float
    w_slow: float
    host_side: bool
    who: str
    other_txt: str
    wait_verb: str
    consistent: float
    metric_name: str


def _facts(st: JobStats, sl: _Slow) -> _Facts:
    ranks = st.ranks
    slow_r = ranks[sl.slow].tolist()
    others = ~sl.slow
    exposed = st.median("exposed_ns")
    host_side = sl.metric == "own_ns"
    n_others = int(np.count_nonzero(others))
    # consistency: in how many aligned steps the slow ranks exceed the others
    per_step = st.step_ns - st.exposed_ns if host_side else st.compute_ns
    if per_step.shape[1]:
        thr = np.nanmedian(per_step[others], axis=0) * (1 + th.STRAGGLER_MIN_EXCESS)
        consistent = float(np.mean(np.all(per_step[sl.slow] > thr, axis=0)))
    else:
        consistent = 0.0
    ref_others = float(np.median(sl.values[others]))
    return _Facts(
        sl=sl,
        ranks=ranks,
        slow_r=slow_r,
        others=others,
        ref_others=ref_others,
        excess=sl.values[sl.slow] - ref_others,
        worst=int(np.argmax(np.where(sl.slow, sl.values, -np.inf))),
        w_others=float(np.median(exposed[others])),
        w_slow=float(np.median(exposed[sl.slow])),
        host_side=host_side,
        who=_ranks_text(slow_r),
        other_txt="the other rank" if n_others == 1 else f"the other {n_others} ranks",
        wait_verb="waits" if n_others == 1 else "wait",
        consistent=consistent,
        metric_name="time per step outside NCCL waits" if host_side else "compute per step",
    )


def _straggler_headline(f: _Facts, wait_gap: float, step_med: float) -> str:
    sl, who, other_txt = f.sl, f.who, f.other_txt
    what = "takes" if f.host_side else "computes"
    return (
        f"Straggler: {who} {what} {_ms(float(np.median(f.excess)))} "
        f"(+{_pct(float(np.median(f.excess)) / max(f.ref_others, 1))}) longer per step than {other_txt} "
        f"({_ms(float(np.median(sl.values[sl.slow])))} vs {_ms(f.ref_others)}"
        + (", outside NCCL" if f.host_side else " of compute")
        + f"), and {other_txt} {f.wait_verb} for it inside NCCL collectives: {_ms(wait_gap)} more exposed NCCL time per "
        f"step ({_pct(wait_gap / max(step_med, 1))} of the {_ms(step_med)} step)."
    )


def _straggler_evidence(f: _Facts, st: JobStats, wait_gap: float, step_med: float) -> tuple[Evidence, ...]:
    sl, who, other_txt = f.sl, f.who, f.other_txt
    per_rank = "; ".join(
        f"rank {r} +{_ms(x)} (+{_pct(x / max(f.ref_others, 1))})"
        for r, x in sorted(zip(f.slow_r, f.excess.tolist(), strict=True), key=lambda t: -t[1])[:8]
    )
    return (
        Evidence(
            name=f"{f.metric_name}, {who}",
            value=round(float(np.median(sl.values[sl.slow])) / 1e6, 3),
            unit="ms",
            reference=f"{other_txt}: {_ms(f.ref_others)} (median); per rank: {per_rank}; more than "
            f"+{th.STRAGGLER_MIN_EXCESS:.0%} is a straggler",
            reference_value=round(f.ref_others * (1 + th.STRAGGLER_MIN_EXCESS) / 1e6, 3),
            metric="own_ns" if f.host_side else "compute_ns",
        ),
        Evidence(
            name=f"exposed NCCL time per step, {other_txt}",
            value=round(f.w_others / 1e6, 3),
            unit="ms",
            reference=f"{_ms(f.w_slow)} on {who}: {other_txt} {f.wait_verb} {_ms(wait_gap)} more per step, "
            f"{wait_gap / max(float(np.median(f.excess)), 1):.2f}x the excess (>= {th.STRAGGLER_WAIT_MATCH:.2f}x means "
            "they wait for it)",
            reference_value=round(f.w_slow / 1e6, 3),
            metric="exposed_nccl_ns",
        ),
        Evidence(
            name="step time (median over ranks)",
            value=round(step_med / 1e6, 3),
            unit="ms",
            reference=f"the slow {'ranks hold' if len(f.slow_r) > 1 else 'rank holds'} every step of the job; "
            f"{who} slower in {_pct(f.consistent)} of {st.step_count} aligned steps",
            metric="step_ns",
        ),
    )


def _excess_findings(f: _Facts, summaries: Sequence[RankSummary]) -> tuple[list[Finding], bool]:
    """Which kernels the slow rank spends its extra time in, and whether it runs more of them."""
    findings: list[Finding] = []
    by_rank = {s.rank: s for s in summaries}
    slow_s = [by_rank[r] for r in f.slow_r]
    other_s = [by_rank[int(r)] for r in f.ranks[f.others].tolist()]
    more_launches = False
    if f.host_side:
        return findings, more_launches
    deltas = [d for d in _kernel_delta(slow_s, other_s) if not is_nccl_kernel(d[0])]
    total_extra = max(float(np.median(f.excess)), 1.0)
    for name, dt, c_slow, c_other in deltas[:3]:
        share = dt / total_extra
        if share < th.MIN_FINDING_SHARE:
            break
        if c_slow > c_other * 1.05:
            more_launches = more_launches or share >= th.DOMINANT_SHARE
            how = f"{c_slow:.3g} launches per step against {c_other:.3g}: it runs more of them"
        else:
            how = f"{c_slow:.3g} launches per step on both: the same kernels run longer there"
        findings.append(
            Finding(
                bottleneck=Bottleneck.STRAGGLER,
                headline=f"{_pct(min(share, 1.0))} of the excess is {name}: +{_ms(dt)} per step on {f.who} ({how}).",
                evidence=(
                    Evidence(
                        name=f"{name} time per step, {f.who} minus {f.other_txt}",
                        value=round(dt / 1e3, 1),
                        unit="us",
                        reference=f"of {_ms(total_extra)} extra compute per step",
                    ),
                ),
                share=min(1.0, max(0.0, share)),
            )
        )
    return findings, more_launches


def _straggler_cause(f: _Facts, more_launches: bool) -> tuple[str, str]:
    """(why the slow ranks are slow, the fix)."""
    who, other_txt, one = f.who, f.other_txt, len(f.slow_r) == 1
    if f.host_side:
        mechanism_cause = (
            f"{who} {'is' if one else 'are'} late to each collective although {'its' if one else 'their'} "
            f"GPU computes no longer than on {other_txt}: the delay is on the host side (data loading, CPU work, "
            "Python, a slower or oversubscribed CPU), visible as GPU idle time before the collective."
        )
        fix = (
            f"Find what {who}'s host does between launches (see {'its' if one else 'their'} own "
            "diagnosis below): a data loader that falls behind (more workers, pinned memory, prefetch), "
            "rank-specific work (logging, evaluation or checkpointing on one rank), or CPU contention on its node."
        )
    elif more_launches:
        mechanism_cause = (
            f"{who} launch{'es' if one else ''} more kernels per step than {other_txt}: "
            f"{'it does' if one else 'they do'} extra work each step (rank-specific code, uneven data)."
        )
        fix = (
            f"Remove or spread the extra work of {who}: rank-specific computation (metrics, logging, EMA "
            "or evaluation done on one rank inside the step), or an uneven share of the data (balance shards by "
            "tokens or cost, not samples). The kernels named below are where the extra time goes."
        )
    else:
        mechanism_cause = (
            f"{who} run{'s' if one else ''} the same kernels as {other_txt} but they take longer: "
            "a slower GPU (lower clocks, thermal or power throttling, another process sharing it) or more data "
            "per kernel (longer sequences or larger batches on that rank)."
        )
        fix = (
            f"Check {who}'s GPU: clocks and throttle reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK` on its node), "
            "other processes on it, and whether its batches are larger (balance the data by tokens or cost). "
            "Replace or drain a GPU that is consistently slower."
        )
    return mechanism_cause[0].upper() + mechanism_cause[1:], fix


def _straggler_expect(f: _Facts, wait_gap: float, step_med: float) -> tuple[Expectation, ...]:
    target_step = max(step_med - wait_gap, 0.0)
    return (
        Expectation(
            metric="step_ns",
            direction=Direction.DOWN,
            value_now=round(step_med),
            target=round(target_step),
            unit="ns",
            label="step time",
            basis=f"less the {_ms(wait_gap)} the other ranks wait for the slow one",
        ),
        Expectation(
            metric="exposed_nccl_ns",
            direction=Direction.DOWN,
            value_now=round(f.w_others),
            target=round(f.w_slow),
            unit="ns",
            label=f"exposed NCCL time per step on {f.other_txt}",
            basis="the slow rank's own exposed NCCL time: the wait without a straggler",
        ),
        Expectation(
            metric="own_ns" if f.host_side else "compute_ns",
            direction=Direction.DOWN,
            value_now=round(float(f.sl.values[f.worst])),
            target=round(f.ref_others),
            unit="ns",
            label=f"{f.metric_name} on rank {int(f.ranks[f.worst])}",
            basis=f"what {f.other_txt} take: a measured control in the same job",
        ),
    )


def _straggler(
    job: str, summaries: Sequence[RankSummary], st: JobStats, sl: _Slow, wait_gap: float, step_med: float
) -> Diagnosis:
    f = _facts(st, sl)
    findings, more_launches = _excess_findings(f, summaries)
    mechanism_cause, fix = _straggler_cause(f, more_launches)
    mechanism = (
        "A collective (all-reduce, all-gather, reduce-scatter) completes only when every rank has joined it, so "
        "the job runs at the pace of its slowest rank: the others' NCCL kernels start on time and spin until the "
        f"late rank's data arrive, and that waiting counts as communication on their timelines. {mechanism_cause} "
        + _coverage_note(summaries, st)
    )
    conf = 0.55 + 0.3 * f.consistent + (0.1 if st.step_count >= 5 else 0.0)
    worst = int(f.ranks[f.worst])
    return Diagnosis(
        subject=_subject(job, summaries),
        bottleneck=Bottleneck.STRAGGLER,
        verdict=Verdict.FIX,
        headline=_straggler_headline(f, wait_gap, step_med),
        evidence=_straggler_evidence(f, st, wait_gap, step_med),
        mechanism=mechanism,
        fix=fix,
        expect=_straggler_expect(f, wait_gap, step_med),
        confidence=Confidence(
            value=round(min(conf, 0.95), 2),
            would_raise="more aligned steps, and every rank of the job captured (the slow rank may not be the only one)",
        ),
        next_step=(
            f"Compare rank {worst} with a typical rank step by step (kprof.plot.job.plot_straggler_timeline); "
            f"after the change, capture all ranks again and check that the step time drops by about {_ms(wait_gap)}. "
            f"Capture per rank: `{commands.nsys_command(_rank_out(job, summaries, 'after'), cuda_profiler_range=True)}`."
        ),
        findings=tuple(findings),
    )
