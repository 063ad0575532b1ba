"""``host_launch_bound``: the host issues many short launches more slowly than the GPU runs them."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from kprof import commands
from kprof import thresholds as th
from kprof.diagnose.timeline.context import _calls_in_window, _Context
from kprof.diagnose.timeline.evidence import _busy_evidence, _confidence
from kprof.diagnose.timeline.findings import _findings
from kprof.diagnose.timeline.gaps import _Window
from kprof.diagnose.timeline.iterations import REPEATED_WORK
from kprof.diagnose.timeline.sync import _graph_blockers, _then
from kprof.diagnose.timeline.words import NATIVE, _app, _clip_name, _language, _ms, _pct
from kprof.model import (
    Bottleneck,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Subject,
    Verdict,
)


def _kernel_counts(ctx: _Context, w: _Window) -> tuple[Sequence[str], np.ndarray, np.ndarray, int] | None:
    """The steady state's kernels by short name: (short names, name ids, launches of each, steady iterations
    (0 when not known)); None without kernels."""
    k = ctx.tl.kernels
    if len(k) == 0 or w.kernel_count == 0:
        return None
    m = (k.device == ctx.gpu.device) & (k.start_ns >= ctx.steady_lo) & (k.start_ns < ctx.steady_hi)
    short = k.short_names or k.names
    first: dict[str, int] = {}
    canon = np.array([first.setdefault(x, i) for i, x in enumerate(short)] or [0], np.int64)
    sid = canon[k.name_id[m]] if m.any() else np.zeros(0, np.int64)
    if len(sid) == 0:
        return None
    ids, counts = np.unique(sid, return_counts=True)
    n_it = len(ctx.its) - ctx.its.warmup if len(ctx.its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else 0
    return short, ids, counts, n_it


def _repeated_group(ctx: _Context, w: _Window) -> tuple[int, int, int] | None:
    """(distinct kernels in the group, kernels in the group, repeats) when each steady iteration runs one group
    of kernels MIN_REPEATS_FOR_BATCHING or more times: the median count per iteration of every kernel that runs
    more than once per iteration shares that factor, and those kernels are most of the iteration's; None
    otherwise. Counts are per iteration window (median over the steady ones), so a window edge that splits an
    iteration does not blur them."""
    k = ctx.tl.kernels
    starts, ends = ctx.its.windows
    lo_i = ctx.its.warmup if len(ctx.its) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else len(ctx.its)
    if len(k) == 0 or len(starts) - lo_i < th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        return None
    short = k.short_names or k.names
    first: dict[str, int] = {}
    canon = np.array([first.setdefault(x, i) for i, x in enumerate(short)] or [0], np.int64)
    m = (k.device == ctx.gpu.device) & (k.start_ns >= starts[lo_i]) & (k.start_ns < ends[-1])
    it = np.searchsorted(starts, k.start_ns[m], side="right") - 1 - lo_i
    sid = canon[k.name_id[m]]
    ok = it >= 0
    n_it = len(starts) - lo_i
    grid = np.zeros((n_it, len(short)), np.int64)
    np.add.at(grid, (it[ok], sid[ok]), 1)
    per = np.median(grid, axis=0).round().astype(np.int64)
    rep = per[per >= 2]
    if len(rep) == 0 or rep.sum() < th.DOMINANT_SHARE * max(int(per.sum()), 1):
        return None
    r = int(np.gcd.reduce(rep))
    return (len(rep), int(rep.sum()) // r, r) if r >= th.MIN_REPEATS_FOR_BATCHING else None


_TRAINING_NAME = re.compile(r"backward|_bwd|autograd|optimizer|multi_tensor_apply|adam|sgd", re.IGNORECASE)


def _training(ctx: _Context) -> bool:
    """Whether the capture shows a training step (backward kernels or operators, an optimizer): the names
    choose the words of the fix only."""
    tl = ctx.tl
    names = [*tl.kernels.names, *(tl.host_ops.names if len(tl.host_ops) else ()), *tl.ranges.names]
    return any(_TRAINING_NAME.search(n) for n in names)


_OPTIMIZER = re.compile(r"\b(Adam|AdamW|SGD|RMSprop|Adagrad|Adamax|NAdam|RAdam|Adadelta)\.step\b")
"""The optimizer's step as PyTorch names it in its traces (``Optimizer.step#Adam.step``, an NVTX range or a
Kineto user annotation)."""

_FUSED = ("Adam", "AdamW", "SGD", "Adagrad")
"""Optimizers with a fused=True CUDA implementation (PyTorch 2.x); the others take foreach=True."""


def _optimizer_words(ctx: _Context) -> str:
    """The foreach/fused switch for the optimizer the capture names, or for the common ones when it names none."""
    tl = ctx.tl
    names = [*(tl.host_ops.names if len(tl.host_ops) else ()), *tl.ranges.names]
    found = next((m.group(1) for n in names if (m := _OPTIMIZER.search(n))), None)
    if found is None:
        return (
            "pass fused=True (Adam, AdamW, SGD, Adagrad) or foreach=True to the optimizer, e.g. "
            "torch.optim.AdamW(params, fused=True)"
        )
    if found in _FUSED:
        return f"torch.optim.{found}(params, fused=True) (or foreach=True)"
    return f"torch.optim.{found}(params, foreach=True)"


def _launches_per_iteration(ctx: _Context, w: _Window) -> str:
    """What the steady state launches, in words: "each of its 23 iterations launches 185 kernels, most of them
    vectorized_elementwise_kernel (104) and gemv2T_kernel (35)"; "" when it cannot be said."""
    kc = _kernel_counts(ctx, w)
    if kc is None:
        return ""
    short, ids, counts, n_it = kc
    sid_len = int(counts.sum())
    order = np.argsort(-counts, kind="stable")[:2]
    div = max(n_it, 1)

    def per(x: float) -> str:  # whole launches per iteration; "about" when the window's edges split one
        r = round(x / div)
        return f"{r:,}" if abs(x / div - r) < 0.05 else f"about {max(r, 1):,}"

    top = " and ".join(
        f"{_clip_name(short[int(ids[o])], 60)} ({per(float(counts[o]))})" for o in order.tolist()
    )
    if n_it:
        each = f"{ctx.its.period_launches:,}" if ctx.its.kind == REPEATED_WORK else per(float(sid_len))
        return f"each of its {n_it:,} iterations launches {each} kernels, most of them {top}"
    return f"it launches {sid_len:,} kernels, most of them {top}"


def _launch_evidence(w: _Window) -> list[Evidence]:
    launch_call = w.median_launch_call_ns
    ev = [
        _busy_evidence(w),
        Evidence(
            name="median idle gap between GPU work",
            value=round(w.median_gap_ns / 1e3, 3),
            unit="us",
            reference=f"median kernel {_ms(w.median_kernel_ns)}; launch call "
            + (f"{_ms(launch_call)} measured here" if launch_call else "not traced")
            + f"; typical launch overhead {_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[0])}-"
            f"{_ms(th.TYPICAL_LAUNCH_OVERHEAD_NS[1])}",
            reference_value=th.TYPICAL_LAUNCH_OVERHEAD_NS[1] / 1e3,
            metric="mean_gap_ns",
        ),
    ]
    if w.launch_interval_ns:
        ev.append(
            Evidence(
                name="host time per launch",
                value=round(w.launch_interval_ns / 1e3, 3),
                unit="us",
                reference=f"the GPU needs {_ms(w.median_kernel_ns)} per kernel (median): the host "
                "issues work slower than the GPU finishes it",
                reference_value=round(w.median_kernel_ns / 1e3, 3),
            )
        )
    return ev


def _biggest_host_share(w: _Window) -> str:
    """Where most of the host time in the host-caused gaps goes (a :attr:`_Window.host_split` key), "" if unknown."""
    split = w.host_split
    return max(split.items(), key=lambda kv: kv[1])[0] if split else ""


def _launch_words(ctx: _Context, w: _Window, calls: list[tuple[str, float]]) -> tuple[str, str, str]:
    """(headline, mechanism, fix) of a launch-bound steady state, the fix in the program's language. ``calls``: the
    other CUDA calls that hold the host time, when they hold most of it (:func:`_other_calls`), else []."""
    host_idle = w.idle_by_cause.get("host", 0)
    biggest = _biggest_host_share(w)
    per_launch = w.launch_interval_ns or 0
    n = w.kernel_count
    headline = (
        f"Host-bound: the GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} "
        f"({_ms(w.busy_ns)} busy of {_ms(w.wall_ns)}) because the host issues "
        f"{n:,} kernel{'s' if n != 1 else ''}"
        + (f" one every {_ms(per_launch)}" if per_launch else "")
        + f" and each runs in {_ms(w.median_kernel_ns)}."
    )
    alloc = _allocation_churn(calls)
    if alloc:
        headline = (
            f"Host-bound: the GPU is idle {_pct(1 - w.busy_fraction)} of {w.scope} "
            f"({_ms(w.busy_ns)} busy of {_ms(w.wall_ns)}) while the host frees and allocates device memory "
            f"between its kernels ({_calls_words(calls)})."
        )
    where = {
        "launch calls": "inside the launch calls themselves",
        "CPU ops": "in framework operators (PyTorch dispatch) around the launches",
        "other CUDA calls": "in other CUDA calls",
        "untraced host time": "in untraced host code (Python, framework dispatch) between the launches"
        if _language(ctx.tl) != NATIVE
        else "in the program's own host code between the launches",
    }.get(biggest, "on the host")
    what = _launches_per_iteration(ctx, w)
    if calls:
        where += f": {_calls_words(calls)}"
    mech = (
        f"Each kernel is shorter than the host's time to issue the next one, so the GPU finishes and waits: "
        f"{_pct(host_idle / max(w.idle_ns, 1))} of the idle time falls where the next kernel was launched only "
        f"after the GPU had gone idle, and most of that host time is {where}."
        + (f" In the steady state {what}." if what else "")
    )
    if alloc:
        mech += (
            " Memory is returned to the driver and taken back inside the loop: each cudaFree waits for all the "
            "work on the device before it returns (an implicit synchronization), and each call costs tens to "
            "hundreds of microseconds of host time."
        )
        return headline, mech, _allocation_fix(ctx)
    return headline, mech, _launch_fix(ctx, w)


_ALLOCATION_CALLS = re.compile(
    r"^(cuda(Malloc|Free)(Host|Managed|Pitch|Array|3D)?$|cudaHostAlloc$|cudaHost(Un)?[Rr]egister$|"
    r"cuMem(Alloc|Free|Create|Release|Map|Unmap|AddressReserve|AddressFree|SetAccess|HostAlloc|HostRegister|"
    r"HostUnregister)\w*$)"
)
"""Calls that take device (or pinned host) memory from the driver or give it back (not the stream-ordered
``cudaMallocAsync``/``cudaFreeAsync``, which a pool serves without the driver)."""


def _other_calls(ctx: _Context, w: _Window, top: int = 3) -> list[tuple[str, float]]:
    """The non-launch CUDA calls that take the most host time in the window: ``(name, share of its wall time)``."""
    api = ctx.tl.api
    if not len(api.start_ns) or w.wall_ns <= 0:
        return []
    from kprof.timeline_model.names import ApiCategory, api_base_name

    m = (api.start_ns >= w.lo) & (api.end_ns <= w.hi) & (api.category != ApiCategory.LAUNCH)
    if not m.any():
        return []
    per = np.bincount(api.name_id[m], weights=(api.end_ns[m] - api.start_ns[m]).astype(np.float64))
    by_name: dict[str, float] = {}
    for i in np.flatnonzero(per > 0).tolist():
        base = api_base_name(api.names[i])  # cudaFree_v3020 -> cudaFree
        by_name[base] = by_name.get(base, 0.0) + float(per[i])
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1])[:top]
    return [(name, t / w.wall_ns) for name, t in ranked]


def _calls_words(calls: list[tuple[str, float]]) -> str:
    return ", ".join(f"{name} {_pct(share)}" for name, share in calls) + " of the wall time"


def _allocation_churn(calls: list[tuple[str, float]]) -> bool:
    """True when the calls that take the most host time are allocations and frees (at least half of it)."""
    total = sum(share for _, share in calls)
    alloc = sum(share for name, share in calls if _ALLOCATION_CALLS.match(name))
    return total > 0 and alloc * 2 >= total


def _allocation_fix(ctx: _Context) -> str:
    if _language(ctx.tl) == NATIVE:
        return (
            "Allocate the buffers once, before the loop, and reuse them; where sizes vary, allocate the largest "
            "once, or use cudaMallocAsync/cudaFreeAsync from a memory pool whose release threshold keeps the memory "
            "(cudaMemPoolAttrReleaseThreshold), so no call reaches the driver inside the loop."
        )
    return (
        "PyTorch's caching allocator calls cudaFree and cudaMalloc only after torch.cuda.empty_cache() or when a "
        "request fits none of its cached blocks: remove torch.cuda.empty_cache() from the loop, keep tensor "
        "shapes stable (pad to a few sizes) so cached blocks are reused, and, if the shapes must vary, set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )


def _launch_fix(ctx: _Context, w: _Window) -> str:
    """Fewer, larger launches, in the program's language: batching first when each iteration repeats one
    group of several kernels, the optimizer's foreach advice only when the capture trains; a CUDA graph only after
    what a graph cannot capture (a blocking call in every iteration, a pageable copy) leaves the loop."""
    return _then(_graph_blockers(ctx, w), _launch_fix_words(ctx, w))


def _launch_fix_words(ctx: _Context, w: _Window) -> str:
    native = _language(ctx.tl) == NATIVE
    if native:
        fix = (
            "Capture the loop body once as a CUDA graph (cudaStreamBeginCapture/cudaStreamEndCapture, "
            "cudaGraphInstantiate) and replay it with one cudaGraphLaunch per iteration; alternatively fuse "
            "consecutive small kernels into one, or give each launch more work (a larger grid, a batch)."
        )
    else:
        fix = (
            "Capture the loop body as a CUDA graph (torch.compile(mode='reduce-overhead'), or torch.cuda.CUDAGraph "
            "with static input tensors) so one launch replays all its kernels; alternatively fuse the elementwise "
            "chains (torch.compile"
            + (
                f"; a foreach/fused optimizer: {_optimizer_words(ctx)}"
                if _training(ctx)
                else "; the torch._foreach_* ops where one operation runs over many tensors"
            )
            + "), or batch more work per launch."
        )
    group = _repeated_group(ctx, w)
    if group is None or group[0] < 2:
        return fix  # one kernel many times: a chain to fuse or a per-tensor loop, which the fix above names
    _distinct, g, r = group
    how = (
        "launch one kernel over all the pieces (a larger grid, or a batched library call such as "
        "cublasGemmStridedBatched) instead of one launch per piece"
        if native
        else f"make one call on the stacked input instead of {r} (net(x) on the whole batch rather than "
        "net(x[j:j + 1]) in a loop)"
    )
    return (
        f"Each iteration runs the same {g} kernels {r} times: if these are independent calls (one sample or chunk "
        f"at a time) and not consecutive layers, {how}, which divides their launches by {r}. Otherwise: "
        f"{fix[0].lower() + fix[1:]}"
    )


def _launch_expect(w: _Window, allocations: int | None = None) -> tuple[Expectation, ...]:
    """What the mechanism predicts: the host-caused idle time goes, the GPU work stays, and even a CUDA graph
    spaces its kernels by the GPU's own gap (GRAPH_KERNEL_GAP_NS): never a gapless GPU. When the host time is
    allocation churn (``allocations`` calls in the window), those calls go, not the launches."""
    host_idle = w.idle_by_cause.get("host", 0)
    floor = min(w.wall_ns, w.busy_ns + w.kernel_count * th.GRAPH_KERNEL_GAP_NS)
    wall_after = max(floor, w.wall_ns - host_idle)
    wall_basis = (
        f"the floor: the {_ms(w.busy_ns)} of GPU work plus {_ms(th.GRAPH_KERNEL_GAP_NS)} between each of its "
        f"{w.kernel_count:,} kernels, the largest gap measured inside CUDA graphs on the H200"
        if floor >= w.wall_ns - host_idle
        else f"less the {_ms(host_idle)} of host-caused idle time, above the floor of the GPU work plus "
        f"{_ms(th.GRAPH_KERNEL_GAP_NS)} between kernels, the largest gap measured inside CUDA graphs on the H200"
    )
    return (
        Expectation(
            metric="gpu_busy_fraction",
            direction=Direction.UP,
            value_now=round(w.busy_fraction, 4),
            target=round(w.busy_ns / max(wall_after, 1), 3),
            label="GPU-busy fraction (without the host-caused idle time)",
            basis=f"the {_ms(w.busy_ns)} of GPU work over the {_ms(wall_after)} of wall time left, kernels still "
            f"{_ms(th.GRAPH_KERNEL_GAP_NS)} apart: the largest gap measured inside CUDA graphs on the H200",
        ),
        Expectation(
            metric="launch_count",
            direction=Direction.DOWN,
            value_now=w.launch_count,
            label="launch calls in the steady state",
        )
        if allocations is None
        else Expectation(
            metric="allocation_calls",
            direction=Direction.DOWN,
            value_now=allocations,
            target=0,
            label="cudaMalloc/cudaFree (and the like) calls in the steady state",
            basis="none inside the loop: memory allocated once and reused",
        ),
        Expectation(
            metric="wall_ns",
            direction=Direction.DOWN,
            value_now=w.wall_ns,
            unit="ns",
            target=wall_after,
            label="steady-state wall time (without the host-caused idle time)",
            basis=wall_basis,
        ),
    )


def _diag_host(ctx: _Context, w: _Window, subject: Subject, share: float) -> Diagnosis:
    calls = _other_calls(ctx, w) if _biggest_host_share(w) == "other CUDA calls" else []
    headline, mech, fix = _launch_words(ctx, w, calls)
    allocations = _calls_in_window(ctx, w.lo, w.hi, _ALLOCATION_CALLS) if _allocation_churn(calls) else None
    return Diagnosis(
        subject=subject,
        bottleneck=Bottleneck.HOST_LAUNCH_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=tuple(_launch_evidence(w)[:3]),
        mechanism=mech,
        fix=fix,
        expect=_launch_expect(w, allocations),
        confidence=_confidence(
            share,
            w,
            ctx.tl.has_host_trace,
            "a Python-level trace (torch.profiler with_stack=True, or nsys -s cpu sampling) "
            "showing where the host time goes"
            if _language(ctx.tl) != NATIVE
            else "CPU sampling of the host thread (nsys -s cpu) showing where the host time goes",
        ),
        next_step="Apply the fix and re-capture the same steady state ("
        + commands.timeline_after_change(ctx.tl.source, program=_app(ctx.tl))
        + "): the GPU-busy fraction should go up and the "
        + ("allocation calls leave the loop." if allocations is not None else "launch calls down."),
        findings=tuple(_findings(ctx, w, Bottleneck.HOST_LAUNCH_BOUND)),
    )
