"""``load_imbalance`` (uneven work per rank) and ``communication_bound`` (exposed NCCL time leads)."""

from __future__ import annotations

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
    Direction,
    Evidence,
    Expectation,
    Verdict,
)


def _imbalance_evidence(
    c: np.ndarray, exposed: np.ndarray, spread: float, slow_n: int, lo: int, hi: int, n_ranks: int
) -> tuple[Evidence, ...]:
    q = np.nanpercentile(c, [10, 50, 90]) if len(c) else np.zeros(3)
    return (
        Evidence(
            name="compute per step, spread across ranks",
            value=round(100 * spread, 1),
            unit="%",
            reference=f"(max - min) / typical; > {th.LOAD_IMBALANCE_SPREAD:.0%} is an imbalance; "
            f"p10/p50/p90 {_ms(q[0])} / {_ms(q[1])} / {_ms(q[2])}",
            reference_value=100 * th.LOAD_IMBALANCE_SPREAD,
            metric="compute_ns",
        ),
        Evidence(
            name="slow ranks",
            value=slow_n,
            reference=f"of {n_ranks}; a straggler is at most "
            f"{max(1, int(th.STRAGGLER_MAX_FRACTION * n_ranks))} (1/{round(1 / th.STRAGGLER_MAX_FRACTION)} of the ranks)",
        ),
        Evidence(
            name="exposed NCCL time per step, fastest rank",
            value=round(float(exposed[lo]) / 1e6, 3),
            unit="ms",
            reference=f"{_ms(float(exposed[hi]))} on the slowest: the faster ranks wait for the slower in collectives",
            metric="exposed_nccl_ns",
        ),
    )


def _load_imbalance(job: str, summaries: Sequence[RankSummary], st: JobStats, step_med: float) -> Diagnosis:
    c = st.median("compute_ns")
    ref = typical(c)
    lo, hi = int(np.nanargmin(c)), int(np.nanargmax(c))
    spread = (float(c[hi]) - float(c[lo])) / max(ref, 1)
    slow_n = int(np.count_nonzero(c > ref * (1 + th.STRAGGLER_MIN_EXCESS)))
    exposed = st.median("exposed_ns")
    # the waiting that the imbalance causes: exposed NCCL of the fastest ranks minus that of the slowest
    wait = max(float(exposed[lo]) - float(exposed[hi]), 0.0)
    ranks = st.ranks
    few = max(1, int(th.STRAGGLER_MAX_FRACTION * len(ranks)))
    if slow_n > few:
        why = (
            f"{slow_n} ranks are more than {th.STRAGGLER_MIN_EXCESS:.0%} above it, too many to be stragglers: "
            "the work itself is split unevenly"
        )
    else:
        why = (
            f"the fastest rank waits only {_ms(wait)} more per step in collectives than the slowest "
            f"({_pct(wait / max(step_med, 1))} of the step), less than the difference: no single rank holds "
            "the job back, the work differs"
        )
    headline = (
        f"Load imbalance: compute per step differs across the {len(ranks)} ranks from {_ms(float(c[lo]))} (rank "
        f"{int(ranks[lo])}) to {_ms(float(c[hi]))} (rank {int(ranks[hi])}), a spread of {_pct(spread)} of the "
        f"typical rank's {_ms(ref)}; {why}."
    )
    evidence = _imbalance_evidence(c, exposed, spread, slow_n, lo, hi, len(ranks))
    return Diagnosis(
        subject=_subject(job, summaries),
        bottleneck=Bottleneck.LOAD_IMBALANCE,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=evidence,
        mechanism="The ranks get different amounts of work per step (uneven data shards, variable sequence lengths "
        "or batch sizes, unequal pipeline stages or expert loads), and every collective waits for the rank with "
        "the most: the job runs at the pace of the heaviest rank while the others idle inside NCCL. "
        + _coverage_note(summaries, st),
        fix="Balance the work per rank: shard or bucket the data by cost (tokens, not samples), pack sequences to "
        "equal lengths, rebalance pipeline stages or experts; if ranks differ by hardware, give the slower ones "
        "less work.",
        expect=(
            Expectation(
                metric="compute_ns",
                direction=Direction.DOWN,
                value_now=round(float(c[hi])),
                target=round(float(np.nanmean(c))),
                unit="ns",
                label="compute per step on the slowest rank",
                basis="the mean compute per step over the ranks: the same total work split evenly",
            ),
            Expectation(
                metric="step_ns",
                direction=Direction.DOWN,
                value_now=round(step_med),
                target=round(max(step_med - wait, 0.0)),
                unit="ns",
                label="step time",
                basis=f"less the {_ms(wait)} the fastest rank waits more than the slowest",
            ),
        ),
        confidence=Confidence(
            value=0.7 if st.step_count >= 5 else 0.6,
            would_raise="more aligned steps and every rank captured; per-rank input sizes (tokens per step)",
        ),
        next_step="Log the work per rank and step (tokens, sequence lengths, batch size) next to the step time to "
        "find what differs, then capture all ranks again and compare.",
    )


def _communication_bound(
    job: str, summaries: Sequence[RankSummary], st: JobStats, step_med: float
) -> Diagnosis:
    exp = st.median("exposed_ns")
    comp = st.median("compute_ns")
    step = st.median("step_ns")
    share = exp / np.maximum(step, 1)
    nccl = st.median("nccl_ns")
    exp_med = float(np.median(exp))
    comp_med = float(np.median(comp))
    overlap = 1 - float(np.sum(exp)) / max(float(np.sum(nccl)), 1)
    headline = (
        f"Communication-bound: on all {len(st.ranks)} ranks exposed NCCL time is the largest part of the step: "
        f"{_ms(exp_med)} of {_ms(step_med)} ({_pct(float(np.median(share)))}) is collective time not overlapped with "
        f"compute, against {_ms(comp_med)} of compute."
    )
    return Diagnosis(
        subject=_subject(job, summaries),
        bottleneck=Bottleneck.COMMUNICATION_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=(
            Evidence(
                name="exposed NCCL share of the step",
                value=round(100 * float(np.median(share)), 1),
                unit="%",
                reference=f"median over ranks; min {_pct(float(share.min()))}; larger than compute "
                f"({_pct(comp_med / max(step_med, 1))}) and idle time on every rank",
                metric="exposed_nccl_ns",
            ),
            Evidence(
                name="NCCL time overlapped with compute",
                value=round(100 * overlap, 1),
                unit="%",
                reference=f"of {_ms(float(np.median(nccl)))} NCCL kernel time per step; the rest the step waits for",
            ),
            Evidence(
                name="compute spread across ranks",
                value=round(
                    100 * (float(np.nanmax(comp)) - float(np.nanmin(comp))) / max(typical(comp), 1), 1
                ),
                unit="%",
                reference=f"<= {th.LOAD_IMBALANCE_SPREAD:.0%}: balanced, no straggler; the time is communication itself",
            ),
        ),
        mechanism="The collectives move more data, or move it more slowly, than the compute they could hide behind: "
        "NCCL kernels run while no compute kernel runs on the GPU, so the step waits for the network or NVLink. "
        + _coverage_note(summaries, st),
        fix="Overlap and shrink communication: let DDP/FSDP overlap the all-reduce with the backward pass (smaller "
        "bucket_cap_mb, FSDP backward/forward prefetch), communicate less often (gradient accumulation with no_sync), "
        "in lower precision (bf16 gradients, compression hooks), or do more compute per byte (a larger per-rank "
        "batch); check that NCCL uses NVLink/InfiniBand, not PCIe or sockets (NCCL_DEBUG=INFO).",
        expect=(
            Expectation(
                metric="exposed_nccl_ns",
                direction=Direction.DOWN,
                value_now=round(exp_med),
                target=round(min(exp_med, 0.5 * comp_med)),
                unit="ns",
                label="exposed NCCL time per step",
                basis=f"half the {_ms(comp_med)} of compute per step: what overlapping the collectives with the "
                "backward pass leaves exposed at most",
            ),
            Expectation(
                metric="step_ns",
                direction=Direction.DOWN,
                value_now=round(step_med),
                unit="ns",
                label="step time",
            ),
        ),
        confidence=Confidence(
            value=0.75 if st.step_count >= 5 else 0.6,
            would_raise="NCCL's own view of bandwidth: NCCL_DEBUG=INFO and nccl-tests' bus bandwidth on the same GPUs",
        ),
        next_step="Measure what the interconnect delivers: run nccl-tests (`all_reduce_perf -b 8M -e 1G -f 2 -g 1` per "
        "rank under your launcher) and compare its bus bandwidth with the message sizes per step; capture with "
        f"`{commands.nsys_command(_rank_out(job, summaries, 'nccl'), trace='cuda,nvtx,osrt,nccl')}` to see each collective's size.",
    )
