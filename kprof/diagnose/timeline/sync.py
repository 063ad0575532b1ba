"""``sync_bound``: the host blocks on the GPU and the GPU then idles; what blocks, named from the capture."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose import intervals as iv
from kprof.diagnose.timeline.blocking import _SYNC_KINDS, _pageable_readback, _sync_fix, _sync_kinds
from kprof.diagnose.timeline.context import _Context
from kprof.diagnose.timeline.covers import _feeds_the_gpu
from kprof.diagnose.timeline.evidence import _busy_evidence, _confidence, _nsys, _recapture
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.words import NATIVE, _language, _ms, _pct, _times
from kprof.model import (
    Bottleneck,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Subject,
    Verdict,
    _fmt,
)


def _graph_blockers(ctx: _Context, w: _Window) -> str:
    """The first step of a CUDA-graph fix when the loop holds what no graph can capture, else "".

    A CUDA graph replays GPU work only: a call that blocks the host on the GPU (``.item()``, a stream or device
    synchronize, a synchronous copy) and a copy to or from pageable host memory cannot be captured (stream capture
    fails on them), so a loop that blocks in every iteration, or copies through pageable memory, cannot become one
    graph until they leave it. Returns the sentence that says so and how to remove them, ending in "Then "."""
    n_iter = len(ctx.iterations[0])
    steady_iters = n_iter - ctx.its.warmup if n_iter >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else n_iter
    blockers: list[str] = []
    fixes: list[str] = []
    native = _language(ctx.tl) == NATIVE
    if w.sync_count and w.sync_count >= max(steady_iters, 1):
        kinds = _sync_kinds(ctx)
        kind = kinds[0][0] if kinds else "stream_sync"
        per = w.sync_count / steady_iters if steady_iters else float(w.sync_count)
        often = _times(round(per)) if abs(per - round(per)) < 0.05 else f"{_fmt(per)} times"
        blockers.append(
            f"a call that blocks the host on the GPU, which this loop makes {often} per iteration "
            f"({w.sync_count:,} in {w.scope}: {_SYNC_KINDS[kind][0]})"
        )
        fixes.append(_SYNC_KINDS[kind][2 if native else 1])
    if w.pageable_bytes:
        blockers.append(
            f"a copy through pageable host memory, which this loop makes ({_fmt(float(w.pageable_bytes), 'B')} in "
            f"{w.scope})"
        )
        fixes.append(_SYNC_KINDS["to_host"][2 if native else 1])
    if not blockers:
        return ""
    return f"A CUDA graph cannot capture {' or '.join(blockers)}. First " + "; ".join(fixes) + ". Then "


def _then(first: str, fix: str) -> str:
    """``fix`` after :func:`_graph_blockers`' first step (lower-cased after its "Then "), or alone."""
    return first + fix[0].lower() + fix[1:] if first else fix


def _drained_by_sync(ctx: _Context, w: _Window, cover: str | None) -> str | None:
    """What blocks the host (:data:`_SYNC_KINDS` words) when most of the host-compute idle time falls in gaps
    that begin while the host is blocked in a sync: the host waited for the GPU's queue to empty and only
    then ran its own code, so nothing was queued behind it. None otherwise, and None when the code that covers
    the gaps (``cover``) produces the GPU's next input (a DataLoader, reading input): the next step's work
    needs it, so it can only be moved off the critical path, which its own fix says."""
    gs, ge = w.host_compute_gaps
    if len(gs) == 0 or len(ctx.blocking[0]) == 0 or _feeds_the_gpu(cover):
        return None
    slack = (ctx.blocking[0], ctx.blocking[1] + th.CLOCK_ALIGNMENT_SLACK_NS)
    inside = iv.containing(slack, gs) >= 0
    if int((ge - gs)[inside].sum()) < th.DOMINANT_SHARE * int((ge - gs).sum()):
        return None
    kinds = _sync_kinds(ctx)
    if kinds and kinds[0][0] != "pageable_copy":
        return _SYNC_KINDS[kinds[0][0]][0]
    return _pageable_readback(ctx) or (_SYNC_KINDS[kinds[0][0]][0] if kinds else "a blocking call")


def _after_sync_words(ctx: _Context, blocks: str, otherwise: str) -> tuple[str, str]:
    """(mechanism sentence, fix) for host computation that starts only after a sync drained the GPU's queue.
    The capture cannot tell whether that code prepares the next step's input; if it does, ``otherwise`` (the
    fix that moves it off the critical path) applies, and the fix says so."""
    mech = (
        f"These gaps begin while the host is blocked in {blocks}: it waits until the GPU's queue is empty and only "
        "then runs this code, so no GPU work is queued behind it."
    )
    if _language(ctx.tl) == NATIVE:
        fix = (
            "Queue GPU work before the host code: issue the next iteration's launches that do not need the data read "
            "back before running it, or copy that data with cudaMemcpyAsync into pinned memory, record an event "
            "(cudaEventRecord) and wait on it (cudaEventSynchronize) only where the host needs it."
        )
    else:
        fix = (
            "Queue GPU work before the host code: launch the next step's work that does not need what the host reads "
            "back (its forward pass, for example) before running this code, or read it back without blocking (copy "
            "into a pinned buffer with non_blocking=True, record a torch.cuda.Event, and synchronize on that event "
            "only where the host needs the value), so the GPU has work while the host computes."
        )
    return (
        mech,
        f"{fix} If this code prepares the next step's input instead: {otherwise[0].lower() + otherwise[1:]}",
    )


def _sync_evidence(ctx: _Context, w: _Window) -> list[Evidence]:
    sync_idle = w.idle_by_cause.get("sync", 0)
    n_iter = len(ctx.iterations[0])
    steady_iters = n_iter - ctx.its.warmup if n_iter >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else 0
    per_iter = f", {_fmt(w.sync_count / steady_iters)} per iteration" if steady_iters >= 2 else ""
    return [
        _busy_evidence(w),
        Evidence(
            name="blocking syncs in the steady state",
            value=w.sync_count,
            reference=f"host blocked {_ms(w.sync_wait_ns)} in them{per_iter}; 0 needed inside a loop",
            reference_value=0,
            metric="sync_count",
        ),
        Evidence(
            name="idle time after a sync drained the queue",
            value=round(sync_idle / 1e3, 3),
            unit="us",
            reference=f"{_pct(sync_idle / max(w.idle_ns, 1))} of the GPU's idle time",
            metric="gpu_idle_ns",
        ),
    ]


def _sync_expect(w: _Window) -> list[Expectation]:
    sync_idle = w.idle_by_cause.get("sync", 0)
    expect = [
        Expectation(
            metric="gpu_busy_fraction",
            direction=Direction.UP,
            value_now=round(w.busy_fraction, 4),
            target=round(w.busy_ns / max(w.busy_ns, w.wall_ns - sync_idle, 1), 3),
            label="GPU-busy fraction (without the idle time after syncs)",
            basis=f"the {_ms(w.busy_ns)} of GPU work over the wall time less the {_ms(sync_idle)} of idle time "
            "after syncs",
        ),
        Expectation(
            metric="gpu_idle_ns",
            direction=Direction.DOWN,
            value_now=w.idle_ns,
            target=max(0, w.idle_ns - sync_idle),
            unit="ns",
            label="GPU idle time (without the idle time after syncs)",
            basis=f"less the {_ms(sync_idle)} that follows a sync",
        ),
    ]
    if w.sync_count:
        expect.insert(
            0,
            Expectation(
                metric="sync_count",
                direction=Direction.DOWN,
                value_now=w.sync_count,
                target=0,
                label="blocking syncs in the steady state (the values read after the loop, or every N steps)",
                basis="none inside the loop: a loop needs no blocking call to run",
            ),
        )
    return expect


def _diag_sync(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    sync_idle = w.idle_by_cause.get("sync", 0)
    fix, what = _sync_fix(ctx)
    headline = (
        f"Sync-bound: the host blocks on the GPU {w.sync_count:,} times in the steady state and the GPU "
        f"then idles: {_pct(1 - w.busy_fraction)} idle, {_pct(sync_idle / max(w.idle_ns, 1))} of it right "
        "after a sync returned."
    )
    mech = (
        f"The loop blocks in {what}: each call makes the host wait until the GPU's queue is empty, and after it "
        "returns the GPU idles for as long as the host needs to dispatch and launch the next work, every time."
    )
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.SYNC_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(_sync_evidence(ctx, w)),
        mechanism=mech,
        fix=fix,
        expect=tuple(_sync_expect(w)),
        confidence=_confidence(
            share,
            w,
            ctx.tl.has_host_trace,
            "a Python stack for the syncs (torch.profiler with_stack=True, or "
            "torch.cuda.set_sync_debug_mode('warn')) naming the lines that block"
            if _language(ctx.tl) != NATIVE
            else "backtraces of the blocking calls (next step) naming the lines that block",
        ),
        next_step=(
            "Find the blocking lines with torch.cuda.set_sync_debug_mode('warn') (it warns at each syncing call) or "
            if _language(ctx.tl) != NATIVE
            else "Find the blocking lines with "
        )
        + f"nsys's backtraces of the syncs (`{_nsys(ctx, 'syncs', backtrace_syncs=True)}`), remove them from the loop, "
        f"then {_recapture(ctx)}.",
        findings=tuple(_findings(ctx, w, Bottleneck.SYNC_BOUND)),
    )
