"""What one rank's timeline holds for the job view, a few kB (:class:`RankSummary`): per-step compute,
NCCL and exposed-communication time, launch times and the top kernels (:func:`summarize_timeline`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.model import (
    Diagnosis,
)
from kprof.timeline_model import KernelTable, Timeline

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


def _rank_device(k: KernelTable, notes: list[str]) -> int:
    """The rank's GPU: the device with the most kernel time."""
    dev_all = k.device.astype(np.int64)
    dur_all = (k.end_ns - k.start_ns).astype(np.float64)
    devs = np.unique(dev_all)
    device = int(devs[0])
    if len(devs) > 1:
        busy = np.bincount(dev_all - dev_all.min(), weights=dur_all)
        device = int(np.argmax(busy) + dev_all.min())
        notes.append(f"kernels on {len(devs)} GPUs; the busiest (GPU {device}) is this rank's")
    return device


def _step_of_launch(
    tl: Timeline, correlation: np.ndarray, ks: np.ndarray, ke: np.ndarray, notes: list[str]
) -> tuple[np.ndarray, np.ndarray, str, np.ndarray]:
    """Steps, projected onto the GPU through the launch calls: (step starts, step numbers, label, the step
    of each kernel or -1)."""
    hs, he, numbers, label = _steps(tl)
    if len(hs) == 0:
        hs = np.array(
            [min(int(ks.min()), int(tl.api.start_ns.min()) if len(tl.api) else int(ks.min()))], np.int64
        )
        he = np.array([int(ke.max()) + 1], np.int64)
        numbers = np.zeros(1, np.int64)
        label = "whole capture"
        notes.append("no profiler steps or repeated NVTX ranges: the whole capture is one step")
    t_launch = _launch_times(tl, correlation, ks)
    if label == "whole capture":
        step_idx = np.zeros(len(ks), np.int64)
    else:
        # the step whose host window holds the launch call (windows sorted by start; the latest that began)
        step_idx = np.searchsorted(hs, t_launch, side="right") - 1
        step_idx = np.where((step_idx >= 0) & (t_launch < he[np.maximum(step_idx, 0)]), step_idx, -1)
    return hs, numbers, label, step_idx


@dataclass(slots=True)
class _PerStep:
    """Per step: first kernel start, last kernel end, and the unions of compute, NCCL and all kernels."""

    has: np.ndarray
    first: np.ndarray
    last: np.ndarray
    comp_u: Pair
    comp_g: np.ndarray
    nccl_u: Pair
    nccl_g: np.ndarray
    compute: np.ndarray
    nccl: np.ndarray
    busy: np.ndarray
    exposed: np.ndarray


def _per_step(
    ks: np.ndarray, ke: np.ndarray, is_nccl: np.ndarray, step_idx: np.ndarray, n_steps: int
) -> _PerStep:
    inside = step_idx >= 0
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
    # exposed: NCCL time not covered by any compute kernel of the GPU (of any step)
    comp_all = iv.union(ks[~is_nccl], ke[~is_nccl])
    ov = iv.per_interval_overlap(nccl_u, comp_all) if len(nccl_u[0]) else np.zeros(0, np.int64)
    nccl_exposed = np.bincount(
        nccl_g, weights=((nccl_u[1] - nccl_u[0]) - ov).astype(np.float64), minlength=n_steps
    )
    return _PerStep(
        has=has,
        first=first,
        last=last,
        comp_u=comp_u,
        comp_g=comp_g,
        nccl_u=nccl_u,
        nccl_g=nccl_g,
        compute=_per_group_total(comp_u, comp_g, n_steps),
        nccl=_per_group_total(nccl_u, nccl_g, n_steps),
        busy=_per_group_total(busy_u, busy_g, n_steps),
        exposed=nccl_exposed[:n_steps].astype(np.int64),
    )


def _top_kernels(
    names: Sequence[str], nid: np.ndarray, ks: np.ndarray, ke: np.ndarray, sel: np.ndarray, n_steady: int
) -> tuple[tuple[str, float, float], ...]:
    """(name, time per step, launches per step) of the kernels with the most time in the steady steps."""
    if not (sel.any() and n_steady):
        return ()
    nn = max(len(names), 1)
    t_by = np.bincount(nid[sel], weights=(ke[sel] - ks[sel]).astype(np.float64), minlength=nn)
    c_by = np.bincount(nid[sel], minlength=nn)
    order = np.argsort(-t_by)[:TOP_KERNEL_NAMES]
    return tuple(
        (names[i] if names else "?", float(t_by[i]) / n_steady, float(c_by[i]) / n_steady)
        for i in order.tolist()
        if t_by[i] > 0
    )


def _sample(p: _PerStep, steady: np.ndarray, numbers: np.ndarray) -> tuple[int | None, Pair, Pair]:
    """One step's kernels for the straggler timeline: the median steady step (its number, compute, NCCL)."""
    sample_c: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    sample_n: Pair = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if not len(steady):
        return None, sample_c, sample_n
    si = int(steady[len(steady) // 2])
    t0 = int(p.first[si])
    cm = p.comp_g == si
    nm = p.nccl_g == si
    sample_c = _cap((p.comp_u[0][cm] - t0, p.comp_u[1][cm] - t0), MAX_SAMPLE_INTERVALS)
    sample_n = _cap((p.nccl_u[0][nm] - t0, p.nccl_u[1][nm] - t0), MAX_SAMPLE_INTERVALS)
    return int(numbers[si]), sample_c, sample_n


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
    device = _rank_device(k, notes)
    m = k.device.astype(np.int64) == device
    ks, ke = k.start_ns[m], k.end_ns[m]
    names = k.short_names or k.names
    nccl_by_name = np.array([is_nccl_kernel(n) for n in names] or [False], bool)
    nid = k.name_id[m]
    is_nccl = nccl_by_name[nid] if len(names) else np.zeros(len(ks), bool)
    hs, numbers, label, step_idx = _step_of_launch(tl, k.correlation[m], ks, ke, notes)
    inside = step_idx >= 0
    n_steps = len(hs)
    p = _per_step(ks, ke, is_nccl, step_idx, n_steps)
    keep = np.flatnonzero(p.has)
    if len(keep) < n_steps:
        notes.append(
            f"{n_steps - len(keep)} of {n_steps} steps launched no kernel on the GPU and are left out"
        )
    first_k, last_k = p.first[keep], p.last[keep]
    period = np.empty(len(keep), np.int64)
    if len(keep):
        period[:-1] = np.diff(first_k)
        period[-1] = last_k[-1] - first_k[-1]
    # steady steps: the first left out as warm-up when there are enough
    steady = keep[1:] if len(keep) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else keep
    steady_mask = np.zeros(n_steps, bool)
    steady_mask[steady] = True
    sel = np.zeros(len(ks), bool)
    sel[np.flatnonzero(inside)[steady_mask[step_idx[inside]]]] = True
    top = _top_kernels(names, nid, ks, ke, sel, len(steady))
    sample_step, sample_c, sample_n = _sample(p, steady, numbers)
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
        compute_ns=p.compute[keep],
        nccl_ns=p.nccl[keep],
        exposed_ns=p.exposed[keep],
        busy_ns=p.busy[keep],
        kernel_count=len(ks),
        nccl_kernel_count=int(np.count_nonzero(is_nccl)),
        top_kernels=top,
        sample_step=sample_step,
        sample_compute=sample_c,
        sample_nccl=sample_n,
        notes=tuple(notes),
    )
