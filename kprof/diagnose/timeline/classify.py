"""The timeline's verdict: the steady state's largest cause leads, one-time work and the other causes
follow as findings, then per NVTX range (:func:`diagnose_timeline`)."""

from __future__ import annotations

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.timeline.context import _Context, _context
from kprof.diagnose.timeline.evidence import _busy_evidence, _cause_times, _nsys, _subject
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _analyze, _steady_state, _Window
from kprof.diagnose.timeline.gpu_bound import _diag_gpu_bound
from kprof.diagnose.timeline.host_compute import _diag_host_compute, _diag_host_elsewhere
from kprof.diagnose.timeline.iterations import _library_ranges, _normalize
from kprof.diagnose.timeline.launch import _diag_host
from kprof.diagnose.timeline.one_time import _one_off_finding, _one_time_findings
from kprof.diagnose.timeline.startup import _diag_startup
from kprof.diagnose.timeline.sync import _diag_sync
from kprof.diagnose.timeline.transfer import _diag_transfer
from kprof.diagnose.timeline.words import _app, _ms, _pct
from kprof.diagnose.validity import damaged_timeline
from kprof.model import (
    Confidence,
    Diagnosis,
    Evidence,
    Subject,
    SubjectKind,
    Verdict,
)
from kprof.timeline_model import (
    Timeline,
)


def _no_gpu_work(tl: Timeline) -> Diagnosis:
    base = tl.source.rsplit("/", 1)[-1]
    missing = "no kernel, copy, memset or CUDA graph activity"
    again = commands.nsys_command(f"{commands.report_stem(tl.source)}_traced", program=_app(tl))
    if tl.counts.get("cuda_profiler_range"):
        what = (
            f"{missing}: it is a CUPTI range-profiler trace ({tl.counts['cuda_profiler_range']} "
            "cuda_profiler_range events hold counters, not kernel timings)"
        )
        nxt = (
            "Capture a timeline instead: torch.profiler.profile(activities=[ProfilerActivity.CPU, "
            f"ProfilerActivity.CUDA]) without the CUPTI range profiler, or `{again}`."
        )
    elif tl.format == "nsys" and not tl.has_host_trace:
        what = f"{missing} and no CUDA API calls: the capture did not trace CUDA"
        nxt = f"Re-capture with CUDA tracing on: `{again}`."
    elif len(tl.api):
        what = f"{missing}, although the host made {len(tl.api):,} CUDA API calls"
        nxt = (
            f"Re-capture with GPU activity recorded: `{again}`, or torch.profiler with ProfilerActivity.CUDA; check "
            "that the profiled region actually runs GPU work."
        )
    else:
        what = f"{missing} and no CUDA API calls"
        nxt = (
            f"Re-capture with GPU activity recorded: `{again}`, or "
            "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])."
        )
    ev = [
        Evidence(name="GPU operations", value=0, reference="kernels + copies + memsets + graph launches"),
        Evidence(name="CUDA API calls", value=len(tl.api)),
    ]
    if len(tl.host_ops):
        ev.append(Evidence(name="CPU operators", value=len(tl.host_ops)))
    return Diagnosis(
        subject=Subject(kind=SubjectKind.CAPTURE, name=base, device=tl.gpu_name()),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"Nothing to measure on the GPU: the capture holds {what}.",
        evidence=tuple(ev),
        mechanism="GPU-busy time cannot be measured without GPU activity records; the host side alone does not "
        "say whether the GPU was idle or simply not traced.",
        confidence=Confidence(value=0.9, would_raise="a capture with GPU activity (kernels) recorded"),
        next_step=nxt,
    )


def _diag_few_launches(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    """The GPU idles between too few launches to call it launch-bound (a rate needs a loop)."""
    n = w.launch_count
    return Diagnosis(
        subject=subject,
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} ({_ms(w.busy_ns)} busy of "
        f"{_ms(w.wall_ns)}) around {n} launch{'es' if n != 1 else ''}: too few to tell a host that issues work "
        "too slowly from one-time work.",
        evidence=(
            _busy_evidence(w),
            Evidence(
                name="launch calls",
                value=n,
                reference=f"launch-bound is a rate: at least {th.MIN_LAUNCHES_FOR_LAUNCH_BOUND} launches to judge it",
                reference_value=th.MIN_LAUNCHES_FOR_LAUNCH_BOUND,
                metric="launch_count",
            ),
        ),
        mechanism="Launch overhead limits a program only when it issues many short kernels in a loop, so that the "
        "host's time per launch exceeds the GPU's time per kernel; around a handful of launches the idle time is "
        "the program's one-time host work (allocation, set-up, reading back the result).",
        confidence=Confidence(value=0.4, would_raise="a capture of the program's repeated work (its loop)"),
        next_step="If the program repeats this work, capture several repetitions; otherwise the one-time cost is "
        "the first diagnosis's subject.",
        findings=tuple(_findings(ctx, w, None)),
    )


def _diag_unknown(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    dev_wait = w.idle_by_cause.get("device_wait", 0)
    unknown = w.idle_by_cause.get("unknown", 0)
    if unknown >= dev_wait:
        what = "the capture has no host-side CUDA API events, so the idle time cannot be attributed"
        nxt = (
            f"Re-capture with host tracing: `{_nsys(ctx, 'traced')}`, or "
            "torch.profiler with ProfilerActivity.CPU and ProfilerActivity.CUDA."
        )
    else:
        what = (
            f"{_pct(dev_wait / max(w.idle_ns, 1))} of the idle time the next GPU work was already queued: the "
            "GPU waited on a device-side dependency (another stream, an event, another GPU or process)"
        )
        cmd = _nsys(ctx, "job", trace="cuda,nvtx,osrt,nccl", extra=("--trace-fork-before-exec=true",))
        nxt = (
            f"Capture all GPUs and processes of the job (`{cmd}`) to see what the queued work waited for "
            "(cross-stream events, collectives)."
        )
    return Diagnosis(
        subject=subject,
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"The GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope}, but {what}.",
        evidence=(
            _busy_evidence(w),
            Evidence(
                name="idle time with no host-side cause",
                value=round((dev_wait + unknown) / 1e3, 3),
                unit="us",
                reference=f"of {_ms(w.idle_ns)} idle",
            ),
        ),
        mechanism="GPU idle time is attributed by tracing the work that ends each gap back to its launch; here "
        "that link is missing or points away from the host.",
        confidence=Confidence(value=0.4, would_raise="host-side CUDA API events and all GPUs in one capture"),
        next_step=nxt,
        findings=tuple(_findings(ctx, w, None)),
    )


def _classify(ctx: _Context, w: _Window, subject: Subject) -> Diagnosis:
    """The window's bottleneck: the cause holding the largest share of its wall time (shares decide).

    The kernels (GPU-busy time not spent in exposed copies) lead at >= GPU_BOUND_BUSY_FRACTION of the
    wall. Below it, idle time behind blocking calls that is the largest cause leads when removing it would
    leave the steady state at >= GPU_BOUND_BUSY_FRACTION (the syncs serialize host and GPU: they are the
    limit, however large the kernels' share). Otherwise the kernels lead when they hold more than half of the
    wall and GPU_SHARE_OVER_CAUSE times the largest idle cause, and else the largest cause leads: exposed copies plus waits in copies (transfer), GPU idle while the
    host issued work (launch), while it made no CUDA call (host compute), after syncs, in start-up work.
    """
    times = _cause_times(w)
    compute = max(0, w.busy_ns - w.exposed_copy_ns)
    wall = max(w.wall_ns, 1)
    best = max(times, key=lambda k: times[k])
    top = times[best]
    if best == "copy" and w.exposed_copy_ns > th.DOMINANT_SHARE * max(w.busy_ns, 1) and top >= compute:
        return _diag_transfer(ctx, w, subject, times["copy"], top / wall)
    if w.busy_fraction >= th.GPU_BOUND_BUSY_FRACTION and best != "copy":
        return _diag_gpu_bound(ctx, w, subject)
    if best == "sync" and w.busy_ns >= th.GPU_BOUND_BUSY_FRACTION * max(w.wall_ns - top, 1):
        # the blocking calls serialize host and GPU: without the idle behind them the steady state would be
        # GPU-bound, so they (not the kernels) are what limits it, however large the kernels' share
        return _diag_sync(ctx, w, subject, min(1.0, top / max(w.idle_ns, 1)))
    if compute > th.DOMINANT_SHARE * wall and compute >= th.GPU_SHARE_OVER_CAUSE * top:
        return _diag_gpu_bound(ctx, w, subject)
    if top <= 0:
        return _diag_gpu_bound(ctx, w, subject) if w.busy_ns else _diag_unknown(ctx, w, subject)
    idle = max(w.idle_ns, 1)
    share = min(1.0, top / idle)
    if best == "host":
        per_launch = top / max(w.launch_count, 1)
        if per_launch > th.MAX_DISPATCH_PER_LAUNCH_NS:
            return _diag_host_elsewhere(ctx, w, subject, per_launch)
        if w.launch_count < th.MIN_LAUNCHES_FOR_LAUNCH_BOUND:
            return _diag_few_launches(ctx, w, subject)
        return _diag_host(ctx, w, subject, share)
    if best == "host_compute":
        return _diag_host_compute(ctx, w, subject, share)
    if best == "sync":
        return _diag_sync(ctx, w, subject, share)
    if best == "copy":
        return _diag_transfer(ctx, w, subject, top, top / wall)
    if best == "startup":
        return _diag_startup(ctx, w, subject, top, w.wall_ns, w, inside=True)
    return _diag_unknown(ctx, w, subject)


def _with_notes(d: Diagnosis, ctx: _Context, w: _Window) -> Diagnosis:
    import dataclasses

    extra = []
    if ctx.steady_reason != "the whole capture":
        extra.append(f"Measured on the steady state: {ctx.steady_reason}.")
    extra += [n[0].upper() + n[1:] + "." for n in ctx.notes]
    extra += [n[0].upper() + n[1:] + "." for n in ctx.tl.notes if n]
    if not extra:
        return d
    return dataclasses.replace(d, mechanism=(d.mechanism + " " + " ".join(extra)).strip())


def _range_diagnoses(ctx: _Context, capture_wall: int) -> list[Diagnosis]:
    """Per NVTX range / annotation group (not the iteration marker), the same verdict on its own windows."""
    tl = ctx.tl
    r = tl.ranges
    if len(r) == 0 or not r.names:
        return []
    norm = [_normalize(n) for n in r.names]
    uniq = list(dict.fromkeys(norm))
    nid = np.array([uniq.index(n) for n in norm], np.int64)[r.name_id]
    groups = []
    first_name: dict[str, str] = {}
    for orig, nn in zip(r.names, norm, strict=True):
        first_name.setdefault(nn, orig)
    library = _library_ranges(r)
    for gi, gname in enumerate(uniq):
        m = nid == gi
        if not gname or gname == ctx.its.group or library[m].all():
            continue  # a library's own ranges (NCCL's) time its host calls: no verdict of their own
        u = iv.union(r.start_ns[m], r.end_ns[m])
        tot = iv.total(u)
        if tot < 0.10 * capture_wall or tot > 0.95 * capture_wall:
            continue
        groups.append((tot, first_name[gname], u, int(m.sum())))
    groups.sort(key=lambda x: -x[0])
    out = []
    for _tot, gname, u, n in groups[:2]:
        w = _analyze(ctx, u)
        if w.wall_ns <= 0 or w.busy_ns == 0:
            continue  # no GPU work inside: nothing to measure there
        subject = Subject(
            kind=SubjectKind.RANGE,
            name=f"{gname} ({n} instance{'s' if n != 1 else ''})",
            device=tl.gpu_name(ctx.gpu.device),
        )
        w.scope = "the range"
        out.append(_classify(ctx, w, subject))
    return out


def diagnose_timeline(tl: Timeline) -> list[Diagnosis]:
    """Diagnose a timeline capture: the capture's verdict first, then per NVTX range when they matter.

    Parameters
    ----------
    tl
        A loaded :class:`~kprof.timeline_model.Timeline` (nsys or PyTorch profiler).

    Returns
    -------
    list of Diagnosis
        Never empty. A capture without GPU activity gets an ``inconclusive`` diagnosis
        that says what is missing and how to capture it.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> diagnose_timeline(Timeline(source="empty.sqlite", format="nsys"))[0].verdict.value
    'inconclusive'
    """
    if (damaged := damaged_timeline(tl)) is not None:  # impossible rows, a real share of the data
        return [damaged]
    if tl.gpu_op_count == 0:
        return [_no_gpu_work(tl)]
    ctx = _context(tl)
    st = _steady_state(ctx)
    steady_w = st.stats
    whole = (np.array([ctx.capture_lo], np.int64), np.array([ctx.capture_hi], np.int64))
    wall_all = ctx.capture_hi - ctx.capture_lo
    subject = _subject(ctx)
    one_time = max(0, ctx.steady_lo - ctx.capture_lo) + max(0, ctx.capture_hi - ctx.teardown_lo)
    if not ctx.repeated and wall_all > 0 and one_time > th.STARTUP_SHARE * wall_all:
        # nothing after start-up repeats: the one-time work is what the capture measures
        w_all = _analyze(ctx, whole)
        first = _diag_startup(ctx, w_all, subject, one_time, wall_all, steady_w)
        if steady_w.launch_count < th.MIN_LAUNCHES_FOR_LAUNCH_BOUND:
            # a handful of launches after start-up: the first diagnosis's evidence already says what it holds
            return [_with_notes(first, ctx, steady_w)]
        steady_d = _classify(
            ctx, steady_w, Subject(kind=SubjectKind.RANGE, name="steady state", device=subject.device)
        )
        return [_with_notes(first, ctx, steady_w), _with_notes(steady_d, ctx, steady_w)]
    # the steady state leads; start-up and teardown are findings with their share of the capture
    d = _classify(ctx, steady_w, subject)
    extra = [f for f in _one_time_findings(ctx) if f.bottleneck is not d.bottleneck]
    if len(st.one_off[0]):
        f = _one_off_finding(ctx, st)
        if (f.share or 0) >= th.MIN_FINDING_SHARE:
            extra.append(f)
    if extra:
        import dataclasses

        d = dataclasses.replace(
            d, findings=tuple(sorted((*d.findings, *extra), key=lambda f: -(f.share or 0)))
        )
    return [_with_notes(d, ctx, steady_w), *_range_diagnoses(ctx, wall_all)]
