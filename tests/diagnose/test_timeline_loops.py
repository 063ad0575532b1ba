"""Issue 13, after the held-out Kineto traces (data/validation/heldout): the steady state of a loop whose
iterations are marked only partly or not at all, and the host-compute rule's false alarms.

Each test builds the mechanism that the held-out traces showed (:mod:`tests.diagnose.timeline_builder`)
and checks the rule that handles it; the contrasting workloads check that the rule does not fire where
the mechanism is absent.

1. A repeated range that marks only part of its iteration (``Optimizer.zero_grad``, the DataLoader's
   ``__next__``): the iteration runs to the next instance, so the warm-up iteration's first-use gaps
   after the marker are left out (gpu_bound_mlp, loader_cpu_augment).
2. A loop without step markers: its iterations are found from the period of its GPU work, and the slow
   first ones are warm-up (launch_small_ops, item_pagerank).
3. The host time inside the operator that issues the launch ending a gap is that operator's dispatch,
   not other host work (the first call of each aten op in launch_small_ops).
4. One or two host gaps among many iterations are one-time work, not the loop's verdict (item_pagerank's
   45.7 ms first ``torch.dist``).
5. A range inside which the host issued the loop's launches is the loop, never the cover of its gaps;
   a repeated range that issues none (the DataLoader's ``__next__``) is (loader_cpu_augment).
6. Work launched early in a gap that then sits queued on an idle GPU waits on the device (HTA's sampled
   128-rank job).
"""

from __future__ import annotations

import numpy as np
import pytest

from kprof.diagnose.phases import loop_iterations
from kprof.diagnose.timeline import diagnose_timeline, gap_causes, timeline_metrics
from kprof.model import Bottleneck, Diagnosis, Verdict

from .timeline_builder import (
    KERNELS,
    MS,
    US,
    Builder,
    dataloader_starved,
    launch_bound_iteration,
    start_up,
)

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def finding(d: Diagnosis, b: Bottleneck, text: str = ""):
    return next((f for f in d.findings if f.bottleneck is b and text in f.headline), None)


# ============================================================================ 1. marker ranges


def marked_gpu_bound_training(first_use_ms: float = 40, iters: int = 20):
    """A GPU-bound training loop (6 kernels of 2 ms per step, the host runs ahead) whose only repeated range
    is a short ``Optimizer.zero_grad`` marker at the top of each step; the first step spends
    ``first_use_ms`` before each of its launches in untraced first-use work (library handles, lazy
    loading), as the held-out gpu_bound_mlp's autograd thread did. Returns the builder and marker starts."""
    b = Builder()
    start_up(b)
    marks = []
    for i in range(iters):
        t0 = b.t
        marks.append(t0)
        b.host(40 * US)
        b.mark("Optimizer.zero_grad#SGD.zero_grad", t0)
        for j in range(6):
            if i == 0:
                b.host(int(first_use_ms * MS))
            b.host(20 * US)
            b.launch(KERNELS[j % len(KERNELS)], 2 * MS, call=10 * US)
    b.sync()
    return b, marks


def test_a_marker_range_iteration_runs_to_the_next_marker() -> None:
    b, marks = marked_gpu_bound_training()
    tl = b.build(source="train.pt.trace.json", fmt="kineto")
    d = diagnose_timeline(tl)[0]
    # the steady state begins with the second iteration, not where the first marker ended: the first
    # step's 6 x 40 ms of first-use gaps lie after its marker and are warm-up
    g = gap_causes(tl)
    assert g.window is not None and g.window[0] == marks[1]
    assert g.idle_by_cause()["host_compute"] == 0
    assert d.bottleneck is Bottleneck.GPU_BOUND and d.verdict is Verdict.HEALTHY
    assert timeline_metrics(tl)["gpu_busy_fraction"] > 0.99
    # the first step is start-up's, as a finding
    assert finding(d, Bottleneck.STARTUP_BOUND, "Start-up") is not None


def test_the_last_marked_iteration_keeps_its_work() -> None:
    """The last marker is 40 us long; its iteration's 12 ms of GPU work are in the steady state."""
    b, _marks = marked_gpu_bound_training()
    tl = b.build(source="train.pt.trace.json", fmt="kineto")
    g = gap_causes(tl)
    last_gpu_end = max(k[1] for k in b.kernels)
    assert g.window is not None and g.window[1] == last_gpu_end
    m = timeline_metrics(tl)
    # 19 iterations of 6 kernels (and the first one's last kernel, launched before and still running)
    assert 6 * 19 <= m["kernel_count"] <= 6 * 19 + 1
    assert m["gpu_busy_ns"] == pytest.approx(19 * 12 * MS, rel=0.01)


# ============================================================================ 2. loops without markers


def unmarked_loop(iters: int = 30, first_use_ms: float = 15, fmt: str = "kineto"):
    """A whole-process capture of a launch-bound loop with no step markers at all (no schedule, no
    NVTX): start-up, then a first iteration whose first five launches each follow ``first_use_ms`` of
    untraced first-use host work, then ``iters - 1`` ordinary iterations of 20 short launches."""
    b = Builder()
    start_up(b)
    for i in range(iters):
        for j in range(20):
            if i == 0 and j < 5:
                b.host(int(first_use_ms * MS))
            b.host(8 * US)
            b.launch(KERNELS[j % len(KERNELS)], 2 * US, grid=1 + j)  # 20 distinct launches per iteration
    b.sync()
    return b.build(source="app.pt.trace.json" if fmt == "kineto" else "app.sqlite", fmt=fmt)


@pytest.mark.parametrize("fmt", ["kineto", "nsys"])
def test_a_loop_without_markers_leaves_its_slow_first_iteration_out(fmt: str) -> None:
    tl = unmarked_loop(fmt=fmt)
    d = diagnose_timeline(tl)[0]
    g = gap_causes(tl)
    # the five 15 ms first-use gaps of iteration 1 are warm-up, not the loop's host computation
    assert g.idle_by_cause()["host_compute"] == 0
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and d.verdict is Verdict.FIX
    assert "repeats every 20 launches" in d.mechanism and "the first left out as warm-up" in d.mechanism
    # the numbers are the loop's: 2 us kernels every 8 + 5 us of host time
    assert timeline_metrics(tl)["gpu_busy_fraction"] == pytest.approx(2 / 13, abs=0.02)


def test_an_unmarked_loop_with_no_slow_iteration_keeps_them_all() -> None:
    """A capture of the loop alone (a capture range): no iteration is warm-up, the steady state is all of it."""
    tl = unmarked_loop(first_use_ms=0)
    g = gap_causes(tl)
    first_call = int(tl.api.start_ns[np.flatnonzero(tl.api.category == tl.api.category[-2])[0]])
    assert g.window is not None and g.window[0] <= first_call + 1 * MS
    d = diagnose_timeline(tl)[0]
    assert "no warm-up to leave out" in d.mechanism


def test_loop_iterations_finds_the_period() -> None:
    loop = np.tile(np.arange(7), 10)
    idx, period = loop_iterations(loop, 0.75)
    assert period == 7 and len(idx) == 10 and np.all(np.diff(idx) == 7)
    # a warm-up with extra launches of other kernels in front: the boundaries of the loop stay put
    warm = np.concatenate(([90, 91, 92], loop))
    idx2, period2 = loop_iterations(warm, 0.75)
    assert period2 == 7 and np.all(np.diff(idx2) == 7) and idx2[-1] == len(warm) - 7
    # the rarest label launched twice per iteration: every second occurrence starts an iteration
    two = np.tile([5, 1, 2, 5, 3, 4], 8)
    idx3, period3 = loop_iterations(two, 0.75)
    assert period3 == 6 and np.all(np.diff(idx3) == 6)
    # a sequence that does not repeat has no period
    rng = np.random.default_rng(0)
    assert loop_iterations(rng.integers(0, 50, 300), 0.75) is None
    assert loop_iterations(np.arange(40), 0.75) is None


# ============================================================================ 3. dispatch inside the operator


def heavy_op_loop(launching: bool, steps: int = 12):
    """A Kineto capture (profiler steps) of a loop that spends 2 ms of host time without CUDA calls per step:
    inside the operator that then launches the step's first kernel (``launching``: an aten op's own
    host-side work, the first-call cost of PyTorch ops), or in a CPU operator of its own that launches
    nothing, before the launching operator begins (``aten::randint`` on a CPU tensor)."""
    b = Builder()
    for i in range(steps):
        t0 = b.t
        op0 = b.t
        b.host(2 * MS)
        if not launching:
            b.ops.append((op0, b.t, "aten::randint"))
            op0 = b.t
            b.host(5 * US)
        b.launch(KERNELS[0], 20 * US)
        b.ops.append((op0, b.t, "aten::index"))
        for j in range(19):
            o = b.t
            b.host(10 * US)
            b.launch(KERNELS[1 + j % 4], 20 * US)
            b.ops.append((o, b.t, "aten::add_"))
        b.sync()
        b.step(i, t0)
    return b.build(source="loop.pt.trace.json", fmt="kineto")


def test_host_time_inside_the_launching_operator_is_dispatch() -> None:
    tl = heavy_op_loop(launching=True)
    g = gap_causes(tl)
    assert g.idle_by_cause()["host_compute"] == 0 and g.idle_by_cause()["host"] > 10 * 2 * MS
    assert diagnose_timeline(tl)[0].bottleneck is Bottleneck.HOST_LAUNCH_BOUND


def test_host_time_before_the_launching_operator_is_host_compute() -> None:
    tl = heavy_op_loop(launching=False)
    g = gap_causes(tl)
    assert g.idle_by_cause()["host_compute"] > 10 * 2 * MS
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and "aten::randint" in d.headline


# ============================================================================ 4. one-off gaps


def step_loop(iters: int = 50, stall_every: int = 0, stall_at: int = 25, stall_ms: float = 40):
    """An nsys capture of a launch-bound loop with NVTX 'step N' ranges; one step (``stall_at``), or every
    ``stall_every``-th, spends ``stall_ms`` in untraced host work before its launches."""
    b = Builder()
    for i in range(iters):
        t0 = b.t
        if (stall_every and i % stall_every == stall_every - 1) or (not stall_every and i == stall_at):
            b.host(int(stall_ms * MS))
        launch_bound_iteration(b)
        b.mark(f"step {i}", t0)
    b.sync()
    return b.build()


def test_one_host_gap_among_many_iterations_is_one_time_work() -> None:
    tl = step_loop()
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and d.verdict is Verdict.FIX
    f = finding(d, Bottleneck.HOST_COMPUTE_BOUND, "One-time host work")
    assert f is not None and "1 gap of 40 ms" in f.headline
    m = timeline_metrics(tl)
    # the numbers are the loop's: the 40 ms gap is left out like start-up
    assert m["host_compute_idle_ns"] == 0 and m["wall_ns"] < 20 * MS
    assert m["gpu_busy_fraction"] == pytest.approx(2 / 13, abs=0.02)
    assert f.share == pytest.approx(40 * MS / (m["wall_ns"] + 40 * MS), abs=0.01)
    # the plot still shows the gap, as one-time work; the other gaps are the ones the diagnosis counted
    g = gap_causes(tl)
    one = g.cause == "startup"
    assert int((g.end_ns - g.start_ns)[one].sum()) == pytest.approx(
        40 * MS, abs=20 * US
    )  # + the dispatch after it
    assert int((g.end_ns - g.start_ns)[~one].sum()) == m["gpu_idle_ns"]


def test_host_gaps_that_recur_stay_the_verdict() -> None:
    tl = step_loop(stall_every=10)  # 5 stalls in 50 steps: a periodic host task (logging, a check)
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and d.verdict is Verdict.FIX
    assert finding(d, Bottleneck.HOST_COMPUTE_BOUND, "One-time") is None


def test_one_host_gap_in_a_short_capture_stays_inconclusive() -> None:
    """Three steps (two after warm-up): one gap cannot be told from the loop's own work."""
    tl = step_loop(iters=3, stall_at=2)
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and d.verdict is Verdict.INCONCLUSIVE


# ============================================================================ 5. what covers the gaps


def test_a_loader_range_that_marks_the_iterations_still_names_the_gaps() -> None:
    """No profiler steps: the DataLoader's ``__next__`` annotation is the repeated range that marks the
    iterations, and it is also what the host runs in the gaps (it launches nothing)."""
    tl = dataloader_starved(op=None, nvtx=LOADER, steps=False)
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND
    assert LOADER in d.headline and "num_workers" in d.fix


def test_a_step_range_is_never_the_cover_of_its_own_gaps() -> None:
    """NVTX 'step N' ranges hold the loader's gaps and every launch: they are the loop, not an explanation."""
    tl = dataloader_starved(fmt="nsys", op=None)
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND
    assert "untraced" in d.headline and "step" not in d.headline


# ============================================================================ 6. work held on the device


def test_work_queued_on_an_idle_gpu_for_most_of_the_gap_is_a_device_wait() -> None:
    b = Builder()
    for i in range(20):
        t0 = b.t
        for j in range(10):
            b.host(8 * US)
            b.launch(KERNELS[j % 5], 2 * US)
        b.host(30 * US)  # the GPU has gone idle
        # launched now, but held 5 ms by an event of another stream (another GPU, another process)
        c = b.corr
        b.corr += 1
        b.api.append((b.t, b.t + 5 * US, c, "cudaLaunchKernel_v7000"))
        start = max(b.gpu_free, b.t) + 5 * MS
        b.kernels.append((start, start + 100 * US, c, KERNELS[4], 0))
        b.dims.append((1, 128))
        b.gpu_free = start + 100 * US
        b.t += 5 * US
        b.host(3 * MS)  # the host moves on (Python without CUDA calls) while the GPU waits
        b.sync()
        b.mark(f"step {i}", t0)
    g = gap_causes(b.build())
    by = g.idle_by_cause()
    assert by["device_wait"] >= 19 * 4 * MS and by["host_compute"] == 0


def test_marker_iterations_carry_their_gpu_work_to_the_step_times_and_the_critical_path() -> None:
    """A step is the loop's period: the GPU work launched after the loader's range belongs to its step, so the
    step times and the critical path see it, and the loader keeps its name on the path."""
    from kprof.diagnose.compare import step_times
    from kprof.diagnose.critical_path import annotate, critical_paths

    tl = dataloader_starved(op=None, nvtx=LOADER, steps=False)
    st = step_times(tl)
    assert st.count == 10 and st.projected and (st.gpu_end_ns >= 0).all()
    assert np.median(st.durations_ns) == pytest.approx(20 * MS + 30 * 210 * US, rel=0.05)
    s = critical_paths(tl)
    assert len(s.paths) >= 8
    scope, ns, _ = s.top(("host",), by="scope")[0]
    assert scope == LOADER and ns / s.total_ns > 0.5
    d = annotate(tl, diagnose_timeline(tl))[0]
    assert "On the critical path" in d.mechanism and LOADER in d.mechanism.split("On the critical path")[1]


def test_iterations_found_in_the_gpu_work_do_not_make_a_gap_one_off() -> None:
    """Two steps of ten identical kernels, each after 30 ms of host work: the GPU work repeats every launch
    (20 'iterations'), but the program's iteration is the step and the gap is in both: not one-time work."""
    b = Builder()
    start_up(b)
    for _ in range(2):
        b.host(30 * MS)
        for _ in range(10):
            b.host(8 * US)
            b.launch(KERNELS[0], 500 * US)
    b.sync()
    d = diagnose_timeline(b.build(source="app.pt.trace.json", fmt="kineto"))[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and d.verdict is Verdict.INCONCLUSIVE
    assert finding(d, Bottleneck.HOST_COMPUTE_BOUND, "One-time") is None


def test_a_tiny_one_off_gap_is_left_out_without_a_finding() -> None:
    tl = step_loop(iters=200, stall_ms=1.2)  # 1.2 ms once in 200 steps of ~0.26 ms: 2% of the steady state
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    assert finding(d, Bottleneck.HOST_COMPUTE_BOUND) is None
    assert timeline_metrics(tl)["host_compute_idle_ns"] == 0
