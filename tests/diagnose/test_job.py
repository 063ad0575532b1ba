"""Job diagnosis: synthetic rank summaries and timelines built in code, and the real 2-rank DDP jobs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kprof import thresholds as th
from kprof.diagnose.job import (
    MAX_SAMPLE_INTERVALS,
    RankSummary,
    diagnose_summaries,
    is_nccl_kernel,
    job_stats,
    straggler_ranks,
    summarize_timeline,
    typical,
)
from kprof.io import load
from kprof.model import JOB_BOTTLENECKS, Bottleneck, Diagnosis, SubjectKind, Verdict
from kprof.timeline_model import ApiTable, KernelTable, RangeTable, StepTable, Timeline

from ..conftest import SAMPLES

MS = 1_000_000
US = 1_000


def rank(
    r: int,
    compute_ms: float,
    exposed_ms: float,
    *,
    step_ms: float = 10.0,
    nccl_ms: float | None = None,
    steps: int = 6,
    first_step: int = 0,
    jitter: float = 0.0,
    seed: int = 0,
    diagnoses: tuple[Diagnosis, ...] = (),
) -> RankSummary:
    """A rank's summary with constant per-step numbers (plus optional relative jitter)."""
    rng = np.random.default_rng(seed + r)

    def col(ms: float) -> np.ndarray:
        return np.round(ms * MS * (1 + jitter * rng.standard_normal(steps))).astype(np.int64)

    comp = col(compute_ms)
    exp = col(exposed_ms)
    return RankSummary(
        path=f"job/rank{r}.sqlite",
        rank=r,
        world_size=None,
        step_number=np.arange(first_step, first_step + steps, dtype=np.int64),
        step_ns=col(step_ms),
        compute_ns=comp,
        nccl_ns=col(nccl_ms if nccl_ms is not None else exposed_ms + 0.5),
        exposed_ns=exp,
        busy_ns=comp + exp,
        kernel_count=1000,
        nccl_kernel_count=100,
        diagnoses=diagnoses,
    )


# ------------------------------------------------------------------------------------------ rules


def test_one_straggler_among_two_is_named_with_its_excess() -> None:
    # rank 1 computes 3.5 ms more per step; rank 0 waits 3.5 ms more inside NCCL
    ds = diagnose_summaries([rank(0, 5.0, 4.0), rank(1, 8.5, 0.5)], job="toy")
    d = ds[0]
    assert d.subject.kind is SubjectKind.JOB and d.subject.ranks == 2 and d.subject.name == "toy"
    assert d.bottleneck is Bottleneck.STRAGGLER and d.verdict is Verdict.FIX
    assert "rank 1" in d.headline and "3.5 ms" in d.headline and "+70%" in d.headline
    assert d.evidence[0].value == pytest.approx(8.5) and d.evidence[0].unit == "ms"
    wait = next(e for e in d.evidence if e.metric == "exposed_nccl_ns")
    assert wait.value == pytest.approx(4.0) and wait.reference_value == pytest.approx(0.5)
    step = next(x for x in d.expect if x.metric == "step_ns")
    assert step.direction.value == "down" and step.target == pytest.approx(6.5 * MS)
    assert straggler_ranks([rank(0, 5.0, 4.0), rank(1, 8.5, 0.5)]) == [1]


def test_one_straggler_among_64_with_noise() -> None:
    # rank 17 computes 2.5 ms more per step; the other 63 wait ~3.1 ms more inside NCCL
    ranks = [rank(r, 7.5, 0.2, jitter=0.03) if r == 17 else rank(r, 5.0, 3.3, jitter=0.03) for r in range(64)]
    d = diagnose_summaries(ranks)[0]
    assert d.bottleneck is Bottleneck.STRAGGLER
    assert "rank 17 computes" in d.headline and "the other 63 ranks wait" in d.headline
    assert straggler_ranks(ranks) == [17]


def test_a_node_of_stragglers_is_still_stragglers_but_a_quarter_is_load_imbalance() -> None:
    def job(n_slow: int) -> list[RankSummary]:
        return [rank(r, 7.5, 0.2) if r < n_slow else rank(r, 5.0, 3.0) for r in range(64)]

    assert max(1, int(th.STRAGGLER_MAX_FRACTION * 64)) == 8
    assert diagnose_summaries(job(8))[0].bottleneck is Bottleneck.STRAGGLER
    d = diagnose_summaries(job(16))[0]
    assert d.bottleneck is Bottleneck.LOAD_IMBALANCE and "too many to be stragglers" in d.headline


def test_spread_work_is_load_imbalance() -> None:
    compute = np.linspace(4.0, 7.0, 16)  # evenly spread, no outlier
    ranks = [rank(r, float(c), float(7.5 - c)) for r, c in enumerate(compute)]
    d = diagnose_summaries(ranks)[0]
    assert d.bottleneck is Bottleneck.LOAD_IMBALANCE and d.verdict is Verdict.FIX
    spread = next(e for e in d.evidence if e.metric == "compute_ns")
    assert spread.value == pytest.approx(100 * 3.0 / typical(compute), rel=0.02)
    assert straggler_ranks(ranks) == []


def test_slow_rank_the_others_do_not_wait_for_is_not_a_straggler() -> None:
    # rank 1 computes more but rank 0 does not wait longer in NCCL (the mechanism is missing)
    d = diagnose_summaries([rank(0, 5.0, 1.0), rank(1, 8.5, 1.0)])[0]
    assert d.bottleneck is not Bottleneck.STRAGGLER


def test_balanced_ranks_within_measured_variation_are_not_stragglers() -> None:
    # 17% apart, the largest difference measured between balanced ranks (ddp sample)
    d = diagnose_summaries([rank(0, 2.66, 0.84, step_ms=3.7), rank(1, 2.28, 0.62, step_ms=3.7)])[0]
    assert d.bottleneck not in JOB_BOTTLENECKS


def test_host_side_straggler_found_through_time_outside_nccl() -> None:
    # same compute on both; rank 1's GPU idles 3 ms per step (host late), rank 0 waits for it in NCCL
    r0 = rank(0, 5.0, 3.2, step_ms=10.0)
    r1 = rank(1, 5.0, 0.2, step_ms=10.0)
    d = diagnose_summaries([r0, r1])[0]
    assert d.bottleneck is Bottleneck.STRAGGLER
    assert "outside NCCL" in d.headline and "host" in d.mechanism


def test_communication_bound_when_exposed_nccl_dominates_every_rank() -> None:
    ranks = [rank(r, 3.0, 5.0, step_ms=9.0, nccl_ms=6.0, jitter=0.02) for r in range(8)]
    d = diagnose_summaries(ranks)[0]
    assert d.bottleneck is Bottleneck.COMMUNICATION_BOUND and d.verdict is Verdict.FIX
    assert "all 8 ranks" in d.headline
    assert any(x.metric == "exposed_nccl_ns" and x.direction.value == "down" for x in d.expect)


def _rank_diag(bottleneck: Bottleneck, verdict: Verdict = Verdict.HEALTHY) -> Diagnosis:
    from kprof.model import Confidence, Subject

    return Diagnosis(
        subject=Subject(kind=SubjectKind.CAPTURE, name="rank.sqlite"),
        bottleneck=bottleneck,
        verdict=verdict,
        headline=f"{bottleneck.value} on this rank.",
        mechanism="m",
        confidence=Confidence(value=0.8),
        next_step="n",
    )


def test_shared_bottleneck_when_the_job_is_balanced() -> None:
    g = (_rank_diag(Bottleneck.GPU_BOUND),)
    ranks = [rank(r, 7.0, 1.0, jitter=0.02, diagnoses=g) for r in range(4)]
    ds = diagnose_summaries(ranks, job="balanced")
    d = ds[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND and d.verdict is Verdict.HEALTHY
    assert "all 4 ranks are gpu_bound" in d.headline
    # the per-rank diagnoses follow, in rank order, named by rank
    assert [x.subject.name for x in ds[1:]] == [f"rank {r}: rank.sqlite" for r in range(4)]
    assert all(x.file == f"job/rank{r}.sqlite" for r, x in enumerate(ds[1:]))
    # exposed communication is reported as a secondary finding
    assert any(f.bottleneck is Bottleneck.COMMUNICATION_BOUND for f in d.findings)


def test_disagreeing_ranks_take_the_critical_ranks_bottleneck() -> None:
    # rank 0 waits least in NCCL: it sets the pace, so its bottleneck is the job's on a tie
    r0 = rank(0, 7.0, 0.5, diagnoses=(_rank_diag(Bottleneck.HOST_LAUNCH_BOUND, Verdict.FIX),))
    r1 = rank(1, 7.0, 1.5, diagnoses=(_rank_diag(Bottleneck.GPU_BOUND),))
    d = diagnose_summaries([r0, r1])[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and "rank 0" in d.headline
    assert any(f.bottleneck is Bottleneck.GPU_BOUND for f in d.findings)


def test_no_nccl_means_no_job_level_verdict() -> None:
    ranks = [
        RankSummary(
            path=f"r{r}",
            rank=r,
            step_number=np.arange(5),
            step_ns=np.full(5, 10 * MS),
            compute_ns=np.full(5, (5 + 3 * r) * MS),
            nccl_ns=np.zeros(5, np.int64),
            exposed_ns=np.zeros(5, np.int64),
            busy_ns=np.full(5, 5 * MS),
            diagnoses=(_rank_diag(Bottleneck.SYNC_BOUND, Verdict.FIX),),
        )
        for r in range(2)
    ]
    d = diagnose_summaries(ranks)[0]
    assert d.bottleneck is Bottleneck.SYNC_BOUND and "no NCCL kernels" in d.headline


def test_no_rank_diagnoses_is_inconclusive_with_a_next_step() -> None:
    d = diagnose_summaries([rank(0, 5.0, 1.0), rank(1, 5.1, 1.0)])[0]
    assert d.verdict is Verdict.INCONCLUSIVE and d.next_step


def test_alignment_by_number_then_order_and_warmup() -> None:
    # numbers overlap on 3..7: aligned by number, the first common step (3) dropped as warm-up
    st = job_stats([rank(0, 5, 1, steps=6, first_step=2), rank(1, 5, 1, steps=6, first_step=3)])
    assert st.aligned_by == "step number" and st.step_numbers.tolist() == [4, 5, 6, 7] and st.warmup_dropped
    # disjoint numbers: aligned by order over the shorter rank
    st = job_stats([rank(0, 5, 1, steps=4, first_step=0), rank(1, 5, 1, steps=6, first_step=100)])
    assert st.aligned_by == "step order" and st.step_count == 3
    # two steps: nothing dropped
    st = job_stats([rank(0, 5, 1, steps=2), rank(1, 5, 1, steps=2)])
    assert not st.warmup_dropped and st.step_count == 2


def test_duplicate_rank_is_rejected() -> None:
    with pytest.raises(ValueError, match="rank 0"):
        job_stats([rank(0, 5, 1), rank(0, 5, 1)])


def test_json_round_trip_and_contract() -> None:
    d = diagnose_summaries([rank(0, 5.0, 4.0), rank(1, 8.5, 0.5)], job="toy")[0]
    data = json.loads(json.dumps(d.to_dict()))
    assert (
        data["subject"]["kind"] == "job"
        and data["subject"]["name"] == "toy"
        and data["subject"]["ranks"] == 2
    )
    assert Diagnosis.from_dict(data) == d
    assert "(2 ranks)" in d.to_text().splitlines()[0]


def test_thresholds_are_in_the_job_section() -> None:
    src = (SAMPLES.parents[1] / "kprof" / "thresholds.py").read_text()
    job = src[
        src.index("# ----------------------------------------------------------------------------- job") :
    ]
    for name in (
        "STRAGGLER_MIN_EXCESS",
        "STRAGGLER_MIN_STEP_SHARE",
        "STRAGGLER_WAIT_MATCH",
        "STRAGGLER_MAX_FRACTION",
        "LOAD_IMBALANCE_SPREAD",
    ):
        assert f"\n{name} = " in job


# ------------------------------------------------------------------------------------------ reduction


def two_stream_rank(slow_ms: float = 0.0, steps: int = 5, nccl_ranges: bool = True) -> Timeline:
    """A DDP-like rank: per step, compute kernels back to back, then an all-reduce that overlaps the
    last 0.5 ms of compute and runs 2 ms past it; NVTX 'step N' ranges, and NCCL's own ranges."""
    ks, ke, corr, nid = [], [], [], []
    a_s, a_e, a_c = [], [], []
    r_s, r_e, r_n = [], [], []
    c = 1
    t = 0
    period = 20 * MS
    for i in range(steps):
        h0 = t
        r_s.append(h0)
        r_e.append(h0 + 1 * MS)
        r_n.append(0 if i % 2 == 0 else 1)  # "step 0", "step 1", ... share one name pattern
        g0 = h0 + 2 * MS  # GPU lags the host
        comp_end = g0 + int((5 + slow_ms) * MS)
        for j in range(5):  # 5 compute kernels, 1 ms each (+ the slow part on the last)
            a_s.append(h0 + j * 100 * US)
            a_e.append(h0 + j * 100 * US + 5 * US)
            a_c.append(c)
            s = g0 + j * MS
            ks.append(s)
            ke.append(s + MS if j < 4 else comp_end)
            corr.append(c)
            nid.append(0)
            c += 1
        a_s.append(h0 + 600 * US)
        a_e.append(h0 + 605 * US)
        a_c.append(c)
        ks.append(comp_end - 500 * US)
        ke.append(comp_end + 2 * MS)
        corr.append(c)
        nid.append(1)
        c += 1
        if nccl_ranges:
            r_s.append(h0 + 600 * US)
            r_e.append(h0 + 610 * US)
            r_n.append(2)
        t += period
    order = np.argsort(ks, kind="stable")
    k = KernelTable(
        start_ns=np.array(ks, np.int64)[order],
        end_ns=np.array(ke, np.int64)[order],
        correlation=np.array(corr, np.int64)[order],
        name_id=np.array(nid, np.int32)[order],
        device=np.full(len(ks), 3, np.int16),
        stream=np.where(np.array(nid)[order] == 1, 13, 7).astype(np.int32),
        names=(
            "void gemm<4>(float*)",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        ),
    )
    api = ApiTable(
        start_ns=np.array(a_s, np.int64),
        end_ns=np.array(a_e, np.int64),
        correlation=np.array(a_c, np.int64),
        name_id=np.zeros(len(a_s), np.int32),
        thread=np.zeros(len(a_s), np.int32),
        names=("cudaLaunchKernel_v7000",),
        category=ApiTable.categories_for(("cudaLaunchKernel_v7000",), np.zeros(len(a_s), np.int32)),
    )
    names = [f"step {i}" for i in range(steps)]
    # one name per step instance (names table holds each distinct text once)
    rng_names = (*names, "ncclAllReduce")
    rid = []
    step_i = 0
    for n in r_n:
        if n == 2:
            rid.append(len(names))
        else:
            rid.append(step_i)
            step_i += 1
    ranges = RangeTable(
        start_ns=np.array(r_s, np.int64),
        end_ns=np.array(r_e, np.int64),
        thread=np.zeros(len(r_s), np.int32),
        name_id=np.array(rid, np.int32),
        names=rng_names,
    )
    return Timeline(source="rank.sqlite", format="nsys", kernels=k, api=api, ranges=ranges)


def test_summarize_projects_nvtx_steps_onto_the_gpu() -> None:
    s = summarize_timeline(two_stream_rank(), rank=3, world_size=8, rank_source="test")
    assert s.rank == 3 and s.device == 3 and s.step_label == "NVTX range 'step #'"
    assert s.step_number.tolist() == [0, 1, 2, 3, 4]  # NCCL's own ranges are not the steps
    assert s.step_ns[:-1].tolist() == [20 * MS] * 4  # GPU period: first kernel to next first kernel
    assert s.compute_ns.tolist() == [5 * MS] * 5
    assert s.nccl_ns.tolist() == [int(2.5 * MS)] * 5
    assert s.exposed_ns.tolist() == [2 * MS] * 5  # 0.5 ms overlapped by the last compute kernel
    assert s.busy_ns.tolist() == [7 * MS] * 5
    assert s.kernel_count == 30 and s.nccl_kernel_count == 5
    # the median steady step's kernels, relative to the step's first kernel
    assert s.sample_step == 3
    assert s.sample_compute[0].tolist() == [0] and s.sample_compute[1].tolist() == [5 * MS]
    assert s.sample_nccl[0].tolist() == [int(4.5 * MS)] and s.sample_nccl[1].tolist() == [7 * MS]
    top = dict((n, (t, c)) for n, t, c in s.top_kernels)
    assert top["gemm"] == (pytest.approx(5 * MS), pytest.approx(5))


def test_summarize_profiler_steps_and_whole_capture_fallback() -> None:
    tl = two_stream_rank(nccl_ranges=False)
    st = StepTable(
        start_ns=tl.ranges.start_ns, end_ns=tl.ranges.end_ns, thread=tl.ranges.thread,
        number=np.arange(10, 15, dtype=np.int64),
    )  # fmt: skip
    import dataclasses

    s = summarize_timeline(dataclasses.replace(tl, steps=st), rank=0)
    assert s.step_label == "profiler step" and s.step_number.tolist() == [10, 11, 12, 13, 14]
    whole = summarize_timeline(dataclasses.replace(tl, ranges=RangeTable()), rank=0)
    assert whole.step_label == "whole capture" and whole.step_count == 1
    assert whole.compute_ns.tolist() == [25 * MS] and whole.exposed_ns.tolist() == [10 * MS]
    empty = summarize_timeline(Timeline(source="e.sqlite", format="nsys"), rank=0)
    assert empty.step_count == 0 and empty.notes


def test_synthetic_straggler_end_to_end() -> None:
    fast = summarize_timeline(two_stream_rank(), rank=0)
    slow = summarize_timeline(two_stream_rank(slow_ms=3.0), rank=1)
    # in a real job rank 0 would wait: model it by the all-reduce running 3 ms longer on rank 0
    fast = RankSummary(
        **{
            **{f: getattr(fast, f) for f in RankSummary.__dataclass_fields__},
            "exposed_ns": fast.exposed_ns + 3 * MS,
            "nccl_ns": fast.nccl_ns + 3 * MS,
        }
    )
    d = diagnose_summaries([fast, slow])[0]
    assert d.bottleneck is Bottleneck.STRAGGLER and "rank 1" in d.headline and "3 ms (+60%)" in d.headline


def test_sample_intervals_are_capped() -> None:
    from kprof.diagnose.job import _cap

    s = np.arange(0, 10 * MAX_SAMPLE_INTERVALS, 2, dtype=np.int64)
    capped = _cap((s, s + 1), MAX_SAMPLE_INTERVALS)
    assert len(capped[0]) == MAX_SAMPLE_INTERVALS
    assert capped[0][0] == 0 and capped[1][-1] == s[-1] + 1


def test_nccl_names() -> None:
    assert is_nccl_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)")
    assert not is_nccl_kernel("void at::native::vectorized_elementwise_kernel<4>(int)")


# ------------------------------------------------------------------------------------------ real jobs


def _jobs() -> list[tuple[dict, str]]:
    m = SAMPLES / "manifest.json"
    if not m.exists():
        return []
    data = json.loads(m.read_text())
    return [(j, kind) for j in data.get("jobs", []) for kind in ("nsys-sqlite", "kineto")]


@pytest.mark.parametrize("job, kind", _jobs(), ids=lambda x: x if isinstance(x, str) else x["job"])
def test_real_jobs_show_what_the_manifest_says(job: dict, kind: str) -> None:
    from kprof.api import diagnose
    from kprof.io.ranks import read_rank_info

    files = sorted((f for f in job["files"] if f["kind"] == kind), key=lambda f: f["rank"])
    summaries = []
    for f in files:
        path = SAMPLES / f["file"]
        info = read_rank_info(path)
        assert info.rank == f["rank"] and info.world_size == job["ranks"]
        tl = load(path)
        summaries.append(
            summarize_timeline(tl, rank=info.rank, world_size=info.world_size, diagnoses=diagnose(tl))
        )
    ds = diagnose_summaries(summaries, job=job["job"])
    d = ds[0]
    shows = job["shows"]
    assert d.subject.kind is SubjectKind.JOB and d.subject.ranks == job["ranks"]
    assert len(ds) > job["ranks"]  # the per-rank diagnoses follow
    if shows["slow_ranks"]:
        assert (
            d.bottleneck.value == shows["bottleneck"] == "straggler" and d.verdict.value == shows["verdict"]
        )
        assert straggler_ranks(summaries) == shows["slow_ranks"]
        assert f"rank {shows['slow_ranks'][0]} computes" in d.headline
        # by how much: about 1.8 ms (+70%) of compute per step (README: 26.1 vs 15.6 ms over 6 steps)
        slow = d.evidence[0]
        assert slow.value == pytest.approx(4.35, abs=0.1)
        assert "+6" in slow.reference  # +68.7% / +69.7%
        wait = next(e for e in d.evidence if e.metric == "exposed_nccl_ns")
        assert wait.value > 1.0 > wait.reference_value  # rank 0 waits, rank 1 does not
        assert any("nvjet" in f.headline and "launches per step" in f.headline for f in d.findings)
    else:
        assert d.bottleneck not in JOB_BOTTLENECKS  # balanced: no straggler, imbalance or comm-bound
        assert straggler_ranks(summaries) == []
        if kind == "nsys-sqlite":  # both ranks' own timelines agree there
            assert d.bottleneck.value == shows["bottleneck"] and d.verdict.value == shows["verdict"]
