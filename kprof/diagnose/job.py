"""Job diagnosis: many ranks of one distributed job, each reduced to a small :class:`RankSummary`.

One rank's timeline cannot tell whether the job waits for a straggler or is bound by
communication: a rank that waits inside an all-reduce looks, on its own, like a GPU busy
with NCCL kernels. The job view compares the ranks step by step.

Two pure steps:

1. :func:`summarize_timeline` reduces one rank's :class:`~kprof.timeline_model.Timeline` to a
   :class:`RankSummary` of a few kilobytes: per step, the rank's compute time (union of its
   non-NCCL kernels), its NCCL kernel time, and its *exposed* communication (NCCL kernel time
   not overlapped by compute kernels on the same GPU), plus the step's period on the GPU.
   Steps are profiler steps (``ProfilerStep#N``) or the repeated NVTX range that covers the
   most time (``step 3``), projected onto the GPU through the correlation ids of the launches
   issued inside them (DESIGN.md: NVTX marks when the host enqueued work, not when it ran).
2. :func:`diagnose_summaries` aligns the ranks' steps by step number (by order when the
   numbers do not match), leaves the first common step out as warm-up when there are at
   least three, and judges the job on per-rank medians over the aligned steps.

How it decides (thresholds in :mod:`kprof.thresholds`, "job" section, each with its source):

- **straggler**: one or a few ranks (at most ``STRAGGLER_MAX_FRACTION`` of them) compute
  longer per step than the typical rank (more than ``STRAGGLER_MIN_EXCESS``), and the other
  ranks' exposed NCCL time per step is correspondingly longer (by at least
  ``STRAGGLER_WAIT_MATCH`` of the excess): they wait for it inside the collectives. The same
  test on a rank's non-waiting time (step minus exposed NCCL) finds a straggler whose GPU
  is idle rather than busy (a host-side delay: data loading, a slow CPU).
- **load_imbalance**: compute per step differs across ranks (more than
  ``LOAD_IMBALANCE_SPREAD``) but not as a few outliers.
- **communication_bound**: on every rank, exposed NCCL time is the largest share of the
  step (more than compute and more than idle time).
- otherwise the bottleneck the ranks share (their own timeline diagnoses), for the job.

The *typical* rank is the median of the faster half of the ranks: slow ranks, at most half,
never move it, and with two ranks it is the faster one.

Rules come from the mechanism only: NCCL kernels are recognised by their function name
(``ncclDevKernel_*``, ``ncclKernel_*``), never by file names.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.validity import damaged_job
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Finding,
    Subject,
    SubjectKind,
    Verdict,
    _fmt,
)
from kprof.timeline_model import Timeline

Pair = tuple[np.ndarray, np.ndarray]

MAX_SAMPLE_INTERVALS = 4096
"""Intervals kept per kind (compute, NCCL) for the one step drawn in the straggler timeline;
beyond it the shortest gaps are closed. Bounds a summary's size, not a judgement."""

TOP_KERNEL_NAMES = 20
"""Kernel names kept per rank (by time per step), to name what a slow rank spends its extra time on."""


def is_nccl_kernel(name: str) -> bool:
    """True for a NCCL (or RCCL) collective kernel: ``ncclDevKernel_AllReduce_Sum_bf16_RING_LL``.

    Examples
    --------
    >>> is_nccl_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    True
    >>> is_nccl_kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT")
    False
    """
    return "nccl" in name.lower()


# ============================================================================ the summary


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RankSummary:
    """One rank of a job, reduced to what the job diagnosis needs (a few kB; picklable).

    The per-step arrays are aligned with ``step_number``; times are nanoseconds.
    """

    path: str
    rank: int
    world_size: int | None = None
    rank_source: str = ""
    """Where ``rank`` came from: ``"Kineto distributedInfo"``, ``"environment RANK"``, ``"order"``."""
    job_id: str | None = None
    format: str = ""
    gpu: str | None = None
    device: int = 0
    step_label: str = ""
    """What a step is: ``"profiler step"``, ``"NVTX range 'step #'"`` or ``"whole capture"``."""
    step_number: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Step period on the GPU: from the step's first kernel to the next step's first kernel."""
    compute_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Union of the step's non-NCCL kernels."""
    nccl_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Union of the step's NCCL kernels."""
    exposed_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """The step's NCCL kernel time not overlapped by any compute kernel on the same GPU."""
    busy_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Union of all the step's kernels."""
    kernel_count: int = 0
    nccl_kernel_count: int = 0
    top_kernels: tuple[tuple[str, float, float], ...] = ()
    """(short name, ns per step, launches per step) over the steady steps, largest time first."""
    sample_step: int | None = None
    """The step number whose kernels are kept below (the median steady step)."""
    sample_compute: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    """Compute kernel intervals of ``sample_step``, in ns from the step's first kernel."""
    sample_nccl: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    diagnoses: tuple[Diagnosis, ...] = ()
    """The rank's own timeline diagnoses."""
    notes: tuple[str, ...] = ()

    @property
    def step_count(self) -> int:
        return len(self.step_number)

    def __repr__(self) -> str:
        med = float(np.median(self.step_ns)) / 1e6 if self.step_count else 0.0
        return (
            f"RankSummary(rank {self.rank}, {self.step_count} steps ({self.step_label}), median step "
            f"{med:.3g} ms, {self.kernel_count:,} kernels, {self.path!r})"
        )


# ============================================================================ reduction


def _steps(tl: Timeline) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Host windows of the iterations, their numbers, and what they are."""
    st = tl.steps
    if len(st):
        o = np.argsort(st.start_ns, kind="stable")
        return st.start_ns[o], st.end_ns[o], st.number[o].astype(np.int64), "profiler step"
    r = tl.ranges
    if len(r) and r.names:
        norm = [re.sub(r"\d+", "#", n).strip() for n in r.names]
        uniq = list(dict.fromkeys(norm))
        gid = np.array([uniq.index(n) for n in norm], np.int64)[r.name_id]
        dur = (r.end_ns - r.start_ns).astype(np.int64)
        best: tuple[int, int] | None = None
        for g, name in enumerate(uniq):
            # NCCL annotates each collective with its own ranges: those are not iterations
            if not name or is_nccl_kernel(name):
                continue
            m = gid == g
            n = int(np.count_nonzero(m))
            if n < 2:
                continue
            tot = int(dur[m].sum())
            if best is None or tot > best[0]:
                best = (tot, g)
        if best is not None:
            idx = np.flatnonzero(gid == best[1])
            idx = idx[np.argsort(r.start_ns[idx], kind="stable")]
            s, e = r.start_ns[idx], r.end_ns[idx]
            # instances nested in an earlier instance of the same name are not separate steps
            run_end = np.maximum.accumulate(e)
            top = np.ones(len(s), bool)
            top[1:] = s[1:] >= run_end[:-1]
            idx, s, e = idx[top], s[top], e[top]
            nums = []
            for i in idx.tolist():
                d = re.findall(r"\d+", r.names[int(r.name_id[i])])
                nums.append(int(d[-1]) if d else -1)
            numbers = np.array(nums, np.int64)
            if (numbers < 0).any() or len(np.unique(numbers)) != len(numbers):
                numbers = np.arange(len(idx), dtype=np.int64)
            return s, e, numbers, f"NVTX range {uniq[best[1]]!r}"
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), ""


def _launch_times(tl: Timeline, corr: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Host start of each GPU op's launch call (through its correlation id); ``fallback`` when none."""
    api = tl.api
    if len(api) == 0 or len(corr) == 0:
        return fallback.copy()
    valid = np.flatnonzero(api.correlation >= 0)
    order = valid[np.argsort(api.correlation[valid], kind="stable")]
    sc = api.correlation[order]
    if len(sc) == 0:
        return fallback.copy()
    i = np.searchsorted(sc, corr)
    ic = np.minimum(i, len(sc) - 1)
    ok = (i < len(sc)) & (sc[ic] == corr) & (corr >= 0)
    return np.where(ok, api.start_ns[order[ic]], fallback)


def _grouped_union(
    starts: np.ndarray, ends: np.ndarray, group: np.ndarray, n_groups: int
) -> tuple[Pair, np.ndarray]:
    """Union of intervals within each group (never across groups): the intervals and each one's group.

    Groups are moved apart on one axis (group * span) so that one vectorized union serves all.
    """
    if len(starts) == 0:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64)), np.zeros(0, np.int64)
    lo = int(starts.min())
    span = int(ends.max()) - lo + 1
    if span * (n_groups + 1) < 2**62:
        off = group.astype(np.int64) * span - lo
        us, ue = iv.union(starts + off, ends + off)
        g = us // span
        return (us - g * span + lo, ue - g * span + lo), g
    parts_s, parts_e, parts_g = [], [], []  # pragma: no cover - spans beyond ~146 years x groups
    for k in np.unique(group).tolist():
        m = group == k
        us, ue = iv.union(starts[m], ends[m])
        parts_s.append(us)
        parts_e.append(ue)
        parts_g.append(np.full(len(us), k, np.int64))
    return (np.concatenate(parts_s), np.concatenate(parts_e)), np.concatenate(parts_g)


def _per_group_total(u: Pair, g: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(g, weights=(u[1] - u[0]).astype(np.float64), minlength=n)[:n].astype(np.int64)


def _cap(u: Pair, limit: int) -> Pair:
    """At most ``limit`` intervals: close the shortest gaps."""
    s, e = u
    if len(s) <= limit:
        return s, e
    gaps = s[1:] - e[:-1]
    keep = np.sort(np.argpartition(-gaps, limit - 2)[: limit - 1])  # the limit-1 largest gaps stay open
    new_s = np.concatenate(([s[0]], s[keep + 1]))
    new_e = np.concatenate((e[keep], [e[-1]]))
    return new_s, new_e


def summarize_timeline(
    tl: Timeline,
    *,
    rank: int,
    world_size: int | None = None,
    rank_source: str = "",
    job_id: str | None = None,
    diagnoses: Sequence[Diagnosis] = (),
) -> RankSummary:
    """Reduce one rank's timeline to a :class:`RankSummary` (pure; no file access).

    Parameters
    ----------
    tl
        The rank's capture.
    rank, world_size, rank_source, job_id
        The rank's place in the job (see :func:`kprof.io.ranks.read_rank_info`).
    diagnoses
        The rank's own timeline diagnoses, carried along for the per-rank part of the output.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> summarize_timeline(Timeline(source="r0.sqlite", format="nsys"), rank=0).step_count
    0
    """
    notes: list[str] = []
    k = tl.kernels
    base = dict(
        path=tl.source,
        rank=int(rank),
        world_size=world_size,
        rank_source=rank_source,
        job_id=job_id,
        format=tl.format,
        diagnoses=tuple(diagnoses),
    )
    if len(k) == 0:
        return RankSummary(**base, notes=("no kernels in the capture",))  # type: ignore[arg-type]
    # the rank's GPU: the device with the most kernel time
    dev_all = k.device.astype(np.int64)
    dur_all = (k.end_ns - k.start_ns).astype(np.float64)
    devs = np.unique(dev_all)
    device = int(devs[0])
    if len(devs) > 1:
        busy = np.bincount(dev_all - dev_all.min(), weights=dur_all)
        device = int(np.argmax(busy) + dev_all.min())
        notes.append(f"kernels on {len(devs)} GPUs; the busiest (GPU {device}) is this rank's")
    m = dev_all == device
    ks, ke = k.start_ns[m], k.end_ns[m]
    names = k.short_names or k.names
    nccl_by_name = np.array([is_nccl_kernel(n) for n in names] or [False], bool)
    nid = k.name_id[m]
    is_nccl = nccl_by_name[nid] if len(names) else np.zeros(len(ks), bool)
    # steps, projected onto the GPU through the launch calls
    hs, he, numbers, label = _steps(tl)
    if len(hs) == 0:
        hs = np.array(
            [min(int(ks.min()), int(tl.api.start_ns.min()) if len(tl.api) else int(ks.min()))], np.int64
        )
        he = np.array([int(ke.max()) + 1], np.int64)
        numbers = np.zeros(1, np.int64)
        label = "whole capture"
        notes.append("no profiler steps or repeated NVTX ranges: the whole capture is one step")
    t_launch = _launch_times(tl, k.correlation[m], ks)
    if label == "whole capture":
        step_idx = np.zeros(len(ks), np.int64)
    else:
        # the step whose host window holds the launch call (windows sorted by start; the latest that began)
        step_idx = np.searchsorted(hs, t_launch, side="right") - 1
        step_idx = np.where((step_idx >= 0) & (t_launch < he[np.maximum(step_idx, 0)]), step_idx, -1)
    inside = step_idx >= 0
    n_steps = len(hs)
    g = step_idx[inside]
    s_in, e_in, nc_in = ks[inside], ke[inside], is_nccl[inside]
    has = np.bincount(g, minlength=n_steps)[:n_steps] > 0
    first = np.full(n_steps, np.iinfo(np.int64).max, np.int64)
    last = np.full(n_steps, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first, g, s_in)
    np.maximum.at(last, g, e_in)
    comp_u, comp_g = _grouped_union(s_in[~nc_in], e_in[~nc_in], g[~nc_in], n_steps)
    nccl_u, nccl_g = _grouped_union(s_in[nc_in], e_in[nc_in], g[nc_in], n_steps)
    busy_u, busy_g = _grouped_union(s_in, e_in, g, n_steps)
    compute = _per_group_total(comp_u, comp_g, n_steps)
    nccl = _per_group_total(nccl_u, nccl_g, n_steps)
    busy_t = _per_group_total(busy_u, busy_g, n_steps)
    # exposed: NCCL time not covered by any compute kernel of the GPU (of any step)
    comp_all = iv.union(ks[~is_nccl], ke[~is_nccl])
    ov = iv.per_interval_overlap(nccl_u, comp_all) if len(nccl_u[0]) else np.zeros(0, np.int64)
    nccl_exposed = np.bincount(
        nccl_g, weights=((nccl_u[1] - nccl_u[0]) - ov).astype(np.float64), minlength=n_steps
    )
    exposed = nccl_exposed[:n_steps].astype(np.int64)
    keep = np.flatnonzero(has)
    if len(keep) < n_steps:
        notes.append(
            f"{n_steps - len(keep)} of {n_steps} steps launched no kernel on the GPU and are left out"
        )
    first_k, last_k = first[keep], last[keep]
    period = np.empty(len(keep), np.int64)
    if len(keep):
        period[:-1] = np.diff(first_k)
        period[-1] = last_k[-1] - first_k[-1]
    # steady steps: the first left out as warm-up when there are enough
    steady = keep[1:] if len(keep) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else keep
    steady_mask = np.zeros(n_steps, bool)
    steady_mask[steady] = True
    sel = np.zeros(len(ks), bool)
    sel[np.flatnonzero(inside)[steady_mask[g]]] = True
    top: tuple[tuple[str, float, float], ...] = ()
    if sel.any() and len(steady):
        nn = max(len(names), 1)
        t_by = np.bincount(nid[sel], weights=(ke[sel] - ks[sel]).astype(np.float64), minlength=nn)
        c_by = np.bincount(nid[sel], minlength=nn)
        order = np.argsort(-t_by)[:TOP_KERNEL_NAMES]
        top = tuple(
            (names[i] if names else "?", float(t_by[i]) / len(steady), float(c_by[i]) / len(steady))
            for i in order.tolist()
            if t_by[i] > 0
        )
    # one step's kernels for the straggler timeline: the median steady step
    sample_step = None
    sample_c: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    sample_n: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if len(steady):
        si = int(steady[len(steady) // 2])
        sample_step = int(numbers[si])
        t0 = int(first[si])
        cm = comp_g == si
        nm = nccl_g == si
        sample_c = _cap((comp_u[0][cm] - t0, comp_u[1][cm] - t0), MAX_SAMPLE_INTERVALS)
        sample_n = _cap((nccl_u[0][nm] - t0, nccl_u[1][nm] - t0), MAX_SAMPLE_INTERVALS)
    unassigned = int(np.count_nonzero(~inside))
    if unassigned and label != "whole capture":
        notes.append(f"{unassigned:,} kernels launched outside the {label}s are not counted in any step")
    return RankSummary(
        **base,  # type: ignore[arg-type]
        gpu=tl.gpu_name(device),
        device=device,
        step_label=label,
        step_number=numbers[keep].copy(),
        step_ns=period,
        compute_ns=compute[keep],
        nccl_ns=nccl[keep],
        exposed_ns=exposed[keep],
        busy_ns=busy_t[keep],
        kernel_count=len(ks),
        nccl_kernel_count=int(np.count_nonzero(is_nccl)),
        top_kernels=top,
        sample_step=sample_step,
        sample_compute=sample_c,
        sample_nccl=sample_n,
        notes=tuple(notes),
    )


# ============================================================================ alignment


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


# ============================================================================ rules


_RANK_OUT = "rank%q{RANK}"
"""The output of a per-rank capture: nsys expands ``%q{RANK}`` from the environment of each rank."""


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


def _straggler(
    job: str, summaries: Sequence[RankSummary], st: JobStats, sl: _Slow, wait_gap: float, step_med: float
) -> Diagnosis:
    ranks = st.ranks
    slow_r = ranks[sl.slow].tolist()
    others = ~sl.slow
    ref_others = float(np.median(sl.values[others]))
    excess = sl.values[sl.slow] - ref_others
    worst = int(np.argmax(np.where(sl.slow, sl.values, -np.inf)))
    exposed = st.median("exposed_ns")
    w_others = float(np.median(exposed[others]))
    w_slow = float(np.median(exposed[sl.slow]))
    host_side = sl.metric == "own_ns"
    what = "takes" if host_side else "computes"
    per_rank = "; ".join(
        f"rank {r} +{_ms(x)} (+{_pct(x / max(ref_others, 1))})"
        for r, x in sorted(zip(slow_r, excess.tolist(), strict=True), key=lambda t: -t[1])[:8]
    )
    who = _ranks_text(slow_r)
    n_others = int(np.count_nonzero(others))
    other_txt = "the other rank" if n_others == 1 else f"the other {n_others} ranks"
    wait_verb = "waits" if n_others == 1 else "wait"
    # consistency: in how many aligned steps the slow ranks exceed the others
    per_step = st.step_ns - st.exposed_ns if host_side else st.compute_ns
    if per_step.shape[1]:
        thr = np.nanmedian(per_step[others], axis=0) * (1 + th.STRAGGLER_MIN_EXCESS)
        consistent = float(np.mean(np.all(per_step[sl.slow] > thr, axis=0)))
    else:
        consistent = 0.0
    headline = (
        f"Straggler: {who} {what} {_ms(float(np.median(excess)))} "
        f"(+{_pct(float(np.median(excess)) / max(ref_others, 1))}) longer per step than {other_txt} "
        f"({_ms(float(np.median(sl.values[sl.slow])))} vs {_ms(ref_others)}"
        + (", outside NCCL" if host_side else " of compute")
        + f"), and {other_txt} {wait_verb} for it inside NCCL collectives: {_ms(wait_gap)} more exposed NCCL time per "
        f"step ({_pct(wait_gap / max(step_med, 1))} of the {_ms(step_med)} step)."
    )
    metric_name = "time per step outside NCCL waits" if host_side else "compute per step"
    evidence = (
        Evidence(
            name=f"{metric_name}, {who}",
            value=round(float(np.median(sl.values[sl.slow])) / 1e6, 3),
            unit="ms",
            reference=f"{other_txt}: {_ms(ref_others)} (median); per rank: {per_rank}; more than "
            f"+{th.STRAGGLER_MIN_EXCESS:.0%} is a straggler",
            reference_value=round(ref_others * (1 + th.STRAGGLER_MIN_EXCESS) / 1e6, 3),
            metric="own_ns" if host_side else "compute_ns",
        ),
        Evidence(
            name=f"exposed NCCL time per step, {other_txt}",
            value=round(w_others / 1e6, 3),
            unit="ms",
            reference=f"{_ms(w_slow)} on {who}: {other_txt} {wait_verb} {_ms(wait_gap)} more per step, "
            f"{wait_gap / max(float(np.median(excess)), 1):.2f}x the excess (>= {th.STRAGGLER_WAIT_MATCH:.2f}x means "
            "they wait for it)",
            reference_value=round(w_slow / 1e6, 3),
            metric="exposed_nccl_ns",
        ),
        Evidence(
            name="step time (median over ranks)",
            value=round(step_med / 1e6, 3),
            unit="ms",
            reference=f"the slow {'ranks hold' if len(slow_r) > 1 else 'rank holds'} every step of the job; "
            f"{who} slower in {_pct(consistent)} of {st.step_count} aligned steps",
            metric="step_ns",
        ),
    )
    # which kernels the slow rank spends its extra time in
    findings: list[Finding] = []
    by_rank = {s.rank: s for s in summaries}
    slow_s = [by_rank[r] for r in slow_r]
    other_s = [by_rank[int(r)] for r in ranks[others].tolist()]
    more_launches = False
    if not host_side:
        deltas = [d for d in _kernel_delta(slow_s, other_s) if not is_nccl_kernel(d[0])]
        total_extra = max(float(np.median(excess)), 1.0)
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
                    headline=f"{_pct(min(share, 1.0))} of the excess is {name}: +{_ms(dt)} per step on {who} ({how}).",
                    evidence=(
                        Evidence(
                            name=f"{name} time per step, {who} minus {other_txt}",
                            value=round(dt / 1e3, 1),
                            unit="us",
                            reference=f"of {_ms(total_extra)} extra compute per step",
                        ),
                    ),
                    share=min(1.0, max(0.0, share)),
                )
            )
    if host_side:
        mechanism_cause = (
            f"{who} {'is' if len(slow_r) == 1 else 'are'} late to each collective although {'its' if len(slow_r) == 1 else 'their'} "
            f"GPU computes no longer than on {other_txt}: the delay is on the host side (data loading, CPU work, "
            "Python, a slower or oversubscribed CPU), visible as GPU idle time before the collective."
        )
        fix = (
            f"Find what {who}'s host does between launches (see {'its' if len(slow_r) == 1 else 'their'} own "
            "diagnosis below): a data loader that falls behind (more workers, pinned memory, prefetch), "
            "rank-specific work (logging, evaluation or checkpointing on one rank), or CPU contention on its node."
        )
    elif more_launches:
        mechanism_cause = (
            f"{who} launch{'es' if len(slow_r) == 1 else ''} more kernels per step than {other_txt}: "
            f"{'it does' if len(slow_r) == 1 else 'they do'} extra work each step (rank-specific code, uneven data)."
        )
        fix = (
            f"Remove or spread the extra work of {who}: rank-specific computation (metrics, logging, EMA "
            "or evaluation done on one rank inside the step), or an uneven share of the data (balance shards by "
            "tokens or cost, not samples). The kernels named below are where the extra time goes."
        )
    else:
        mechanism_cause = (
            f"{who} run{'s' if len(slow_r) == 1 else ''} the same kernels as {other_txt} but they take longer: "
            "a slower GPU (lower clocks, thermal or power throttling, another process sharing it) or more data "
            "per kernel (longer sequences or larger batches on that rank)."
        )
        fix = (
            f"Check {who}'s GPU: clocks and throttle reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK` on its node), "
            "other processes on it, and whether its batches are larger (balance the data by tokens or cost). "
            "Replace or drain a GPU that is consistently slower."
        )
    mechanism_cause = mechanism_cause[0].upper() + mechanism_cause[1:]
    mechanism = (
        "A collective (all-reduce, all-gather, reduce-scatter) completes only when every rank has joined it, so "
        "the job runs at the pace of its slowest rank: the others' NCCL kernels start on time and spin until the "
        f"late rank's data arrive, and that waiting counts as communication on their timelines. {mechanism_cause} "
        + _coverage_note(summaries, st)
    )
    target_step = max(step_med - wait_gap, 0.0)
    expect = (
        Expectation(
            metric="step_ns",
            direction=Direction.DOWN,
            value_now=round(step_med),
            target=round(target_step),
            unit="ns",
            label="step time",
        ),
        Expectation(
            metric="exposed_nccl_ns",
            direction=Direction.DOWN,
            value_now=round(w_others),
            target=round(w_slow),
            unit="ns",
            label=f"exposed NCCL time per step on {other_txt}",
        ),
        Expectation(
            metric="own_ns" if host_side else "compute_ns",
            direction=Direction.DOWN,
            value_now=round(float(sl.values[worst])),
            target=round(ref_others),
            unit="ns",
            label=f"{metric_name} on rank {int(ranks[worst])}",
        ),
    )
    conf = 0.55 + 0.3 * consistent + (0.1 if st.step_count >= 5 else 0.0)
    return Diagnosis(
        subject=_subject(job, summaries),
        bottleneck=Bottleneck.STRAGGLER,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=evidence,
        mechanism=mechanism,
        fix=fix,
        expect=expect,
        confidence=Confidence(
            value=round(min(conf, 0.95), 2),
            would_raise="more aligned steps, and every rank of the job captured (the slow rank may not be the only one)",
        ),
        next_step=(
            f"Compare rank {int(ranks[worst])} with a typical rank step by step (kprof.plot.job.plot_straggler_timeline); "
            f"after the change, capture all ranks again and check that the step time drops by about {_ms(wait_gap)}. "
            f"Capture per rank: `{commands.nsys_command(_RANK_OUT, cuda_profiler_range=True)}`."
        ),
        findings=tuple(findings),
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
    q = np.nanpercentile(c, [10, 50, 90]) if len(c) else np.zeros(3)
    evidence = (
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
            reference=f"of {len(ranks)}; a straggler is at most "
            f"{max(1, int(th.STRAGGLER_MAX_FRACTION * len(ranks)))} (1/{round(1 / th.STRAGGLER_MAX_FRACTION)} of the ranks)",
        ),
        Evidence(
            name="exposed NCCL time per step, fastest rank",
            value=round(float(exposed[lo]) / 1e6, 3),
            unit="ms",
            reference=f"{_ms(float(exposed[hi]))} on the slowest: the faster ranks wait for the slower in collectives",
            metric="exposed_nccl_ns",
        ),
    )
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
            ),
            Expectation(
                metric="step_ns",
                direction=Direction.DOWN,
                value_now=round(step_med),
                target=round(max(step_med - wait, 0.0)),
                unit="ns",
                label="step time",
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
        f"`{commands.nsys_command(_RANK_OUT, trace='cuda,nvtx,osrt,nccl')}` to see each collective's size.",
    )


def _shared(job: str, summaries: Sequence[RankSummary], st: JobStats, step_med: float) -> Diagnosis:
    firsts = [(s.rank, s.diagnoses[0]) for s in summaries if s.diagnoses]
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
    subject = _subject(job, summaries)
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
    if not firsts:
        return Diagnosis(
            subject=subject,
            bottleneck=None,
            verdict=Verdict.INCONCLUSIVE,
            headline=f"The {len(summaries)} ranks show no job-level problem ({balance}), and no rank could be "
            "diagnosed on its own (no GPU work in their captures).",
            evidence=tuple(evidence),
            confidence=Confidence(value=0.4, would_raise="captures with GPU activity on every rank"),
            next_step=f"Capture each rank with CUDA tracing on: `{commands.nsys_command(_RANK_OUT)}`.",
            findings=tuple(findings),
        )
    counts = Counter(d.bottleneck for _, d in firsts)
    top = max(counts.values())
    tied = [b for b, n in counts.items() if n == top]
    # the critical rank sets the job's pace: the one that waits least inside collectives
    own = dict(zip(st.ranks.tolist(), st.median("own_ns").tolist(), strict=True)) if st.step_count else {}
    critical = max(firsts, key=lambda x: own.get(x[0], 0.0))
    best = (
        tied[0] if len(tied) == 1 else (critical[1].bottleneck if critical[1].bottleneck in tied else tied[0])
    )
    holders = [(r, d) for r, d in firsts if d.bottleneck == best]
    if critical[1].bottleneck == best:
        rep_rank, rep = critical
    else:
        by_step = dict(zip(st.ranks.tolist(), step.tolist(), strict=True)) if st.step_count else {}
        holders.sort(key=lambda x: by_step.get(x[0], 0.0))
        rep_rank, rep = holders[len(holders) // 2]
    name = best.value if best else "undetermined"
    n = len(firsts)
    if len(holders) == n:
        who = {1: f"the rank is {name}", 2: f"both ranks are {name}"}.get(n, f"all {n} ranks are {name}")
        headline = f"The job is balanced ({balance}) and {who}. Rank {rep_rank}: {rep.headline}"
    elif critical[1].bottleneck == best:
        headline = (
            f"The job is balanced ({balance}); the ranks' own diagnoses differ, and rank {critical[0]}, which waits "
            f"least inside collectives and so sets the job's pace, is {name} ({len(holders)} of {n} ranks). "
            f"Rank {rep_rank}: {rep.headline}"
        )
    else:
        headline = (
            f"The job is balanced ({balance}); the ranks' own diagnoses differ: {len(holders)} of {n} are {name}. "
            f"Rank {rep_rank}: {rep.headline}"
        )
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


def _per_rank(summaries: Sequence[RankSummary]) -> list[Diagnosis]:
    out: list[Diagnosis] = []
    for s in sorted(summaries, key=lambda s: s.rank):
        for d in s.diagnoses:
            subj = dataclasses.replace(d.subject, name=f"rank {s.rank}: {d.subject.name}")
            out.append(dataclasses.replace(d, subject=subj, file=d.file or s.path))
    return out


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


__all__ = [
    "JobStats",
    "RankSummary",
    "diagnose_summaries",
    "is_nccl_kernel",
    "job_stats",
    "straggler_ranks",
    "summarize_timeline",
    "typical",
]
