"""Issue 13: the steady state leads, host computation is not launch overhead, teardown is one-time work,
expectations a user could reach, shares of the steady state, one-time work under many names.

Each rule is tested on a workload of its class (built in code with :mod:`tests.diagnose.timeline_builder`,
and the corpus where it holds one) and on workloads of the other classes, where it must not fire.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kprof import thresholds as th
from kprof.diagnose.phases import is_jit_name, is_teardown_api, repeats
from kprof.diagnose.timeline import diagnose_timeline, gap_causes, timeline_metrics
from kprof.model import Bottleneck, Diagnosis, Verdict

from .test_timeline import launch_bound, sync_loop
from .timeline_builder import (
    KERNELS,
    MS,
    US,
    Builder,
    dataloader_starved,
    launch_bound_iteration,
    one_pass_program,
    start_up,
    teardown,
    whole_process_launch_bound,
)


def finding(d: Diagnosis, b: Bottleneck, text: str = ""):
    return next((f for f in d.findings if f.bottleneck is b and text in f.headline), None)


def busy_evidence(d: Diagnosis) -> float:
    return next(e.value for e in d.evidence if e.metric == "gpu_busy_fraction")


# ============================================================================ 1. the steady state leads


def loop_only_busy_fraction() -> float:
    """GPU-busy fraction of the launch-bound loop alone: 2 us kernels, one every 8 + 5 us of host time."""
    return 2 / 13


@pytest.mark.parametrize("nvtx", [False, True], ids=["no-markers", "nvtx-steps"])
def test_whole_process_capture_leads_with_the_loop(nvtx: bool) -> None:
    tl = whole_process_launch_bound(nvtx=nvtx)
    lo, hi = tl.span_ns()
    ds = diagnose_timeline(tl)
    d = ds[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and d.verdict is Verdict.FIX
    # start-up is a finding with its share of the capture and the capture-range advice
    f = finding(d, Bottleneck.STARTUP_BOUND, "Start-up")
    assert f is not None and "capture-range" in f.headline
    # 250 ms context + 1 ms allocations + 40 ms setup + 5 x 8 ms of lazy module loading in the first iteration
    startup_share = (331 * MS) / (hi - lo)
    assert f.share == pytest.approx(startup_share, abs=0.01) and f.share > th.STARTUP_SHARE
    assert "created the context" in f.headline
    # the numbers quoted are the loop's own: busy ~15%, not the 4% of the whole capture
    assert busy_evidence(d) == pytest.approx(100 * loop_only_busy_fraction(), abs=1.0)
    assert timeline_metrics(tl)["gpu_busy_fraction"] == pytest.approx(loop_only_busy_fraction(), abs=0.01)
    assert not any(x.bottleneck is Bottleneck.STARTUP_BOUND for x in ds)


def test_startup_leads_only_when_nothing_after_it_repeats() -> None:
    ds = diagnose_timeline(one_pass_program())
    assert ds[0].bottleneck is Bottleneck.STARTUP_BOUND
    assert "does not repeat" in ds[0].headline and "created the context" in ds[0].headline
    assert ds[1].subject.name == "steady state"
    # the same program looping over its kernels: the loop leads
    b = Builder()
    start_up(b)
    for _ in range(20):
        for j in range(30):
            b.host(20 * US)
            b.launch(f"void layer_{j}(float*)", 200 * US)
    assert diagnose_timeline(b.build())[0].bottleneck is not Bottleneck.STARTUP_BOUND


def test_repeats_tells_a_loop_from_one_pass() -> None:
    loop = np.tile(np.arange(7), 3)
    share = th.REPEATED_WORK_SHARE
    assert repeats([loop[:5], loop[5:]], len(loop), share) == (True, 1.0)  # chunking does not matter
    assert repeats([np.arange(30)], 30, share)[0] is False
    # two passes (a warm-up and one measured pass) are not a loop either
    assert repeats([np.tile(np.arange(10), 2)], 20, share)[0] is False
    assert repeats([np.array([4, 4])], 2, share) == (False, 0.0)  # too few to tell


def test_job_and_compare_take_the_steady_state_bottleneck() -> None:
    from kprof.api import compare
    from kprof.diagnose.job import diagnose_summaries, summarize_timeline

    tls = [whole_process_launch_bound(nvtx=True), whole_process_launch_bound(nvtx=True, context_ms=300)]
    sums = [summarize_timeline(tl, rank=r, diagnoses=diagnose_timeline(tl)) for r, tl in enumerate(tls)]
    job = diagnose_summaries(sums)
    assert job[0].bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    c = compare(tls[0], tls[1])[0]
    assert c.before.bottleneck is c.after.bottleneck is Bottleneck.HOST_LAUNCH_BOUND


# ============================================================================ 2. host computation


def test_dataloader_starved_loop_is_host_compute_bound() -> None:
    d = diagnose_timeline(dataloader_starved())[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and d.verdict is Verdict.FIX
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in d.headline
    assert "num_workers" in d.fix and "pin_memory" in d.fix and "CUDA graph" not in d.fix
    hc = next(e for e in d.evidence if e.metric == "host_compute_idle_ns")
    m = timeline_metrics(dataloader_starved())
    assert hc.value == pytest.approx(m["host_compute_idle_ns"] / 1e6, rel=1e-3)
    # 20 ms of loading per ~26 ms step
    assert m["host_compute_idle_ns"] / m["wall_ns"] == pytest.approx(20 / 26.4, abs=0.03)
    cover = next(e for e in d.evidence if e.name.startswith("idle time covered by"))
    assert cover.value > 95
    # the expectation removes only that idle time
    wall = next(x for x in d.expect if x.metric == "wall_ns")
    assert wall.target == pytest.approx(m["wall_ns"] - m["host_compute_idle_ns"], rel=1e-6)
    assert not finding(d, Bottleneck.SYNC_BOUND)  # .item() ends each step, but the wait is the loader


def test_host_compute_without_a_trace_of_the_host_work() -> None:
    tl = dataloader_starved(fmt="nsys", op=None)
    d = diagnose_timeline(tl)[0]
    assert (
        d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and d.verdict is Verdict.FIX
    )  # 9 gaps: the loop's own
    assert "untraced" in d.headline and ("py-spy" in d.next_step or "-s process-tree" in d.next_step)
    assert "CUDA graph" not in d.fix and "on the GPU" in d.fix
    # an NVTX range over the preprocessing names it; the fix is the generic one (not a DataLoader's)
    d = diagnose_timeline(dataloader_starved(fmt="nsys", op=None, nvtx="preprocess"))[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and "NVTX range preprocess" in d.headline
    assert "num_workers" not in d.fix.split("(")[0] and "on the GPU" in d.fix


def test_one_host_compute_gap_is_inconclusive() -> None:
    b = Builder()
    b.launch(KERNELS[0], 10 * US)
    b.sync()
    b.host(500 * MS)
    b.launch(KERNELS[1], 10 * US)
    b.sync()
    d = diagnose_timeline(b.build())[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and d.verdict is Verdict.INCONCLUSIVE
    assert "more iterations" in d.next_step


@pytest.mark.parametrize(
    "tl",
    [
        pytest.param(launch_bound(), id="launch-bound"),
        pytest.param(sync_loop(), id="sync-bound"),
        pytest.param(whole_process_launch_bound(), id="whole-process-launch-bound"),
        pytest.param(dataloader_starved(load_ms=0.5), id="python-gaps-below-1ms"),
    ],
)
def test_host_compute_does_not_fire_on_dispatch_or_syncs(tl) -> None:
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is not Bottleneck.HOST_COMPUTE_BOUND
    assert not finding(d, Bottleneck.HOST_COMPUTE_BOUND)
    assert "host_compute" not in set(gap_causes(tl).cause)


def test_host_compute_gaps_that_begin_in_a_sync_are_not_sync_bound() -> None:
    """loss.item() at the end of each step drains the queue, then the loader runs for 20 ms: without the
    host-compute rule every one of those gaps began in a blocking copy and was a sync or copy wait."""
    g = gap_causes(dataloader_starved())
    by = g.idle_by_cause()
    assert by["host_compute"] > 10 * (by["sync"] + by["copy"])


# ============================================================================ 3. teardown


def test_teardown_is_one_time_work_not_a_sync() -> None:
    tl = whole_process_launch_bound(end=True)
    lo, hi = tl.span_ns()
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    assert not finding(d, Bottleneck.SYNC_BOUND)
    f = finding(d, Bottleneck.STARTUP_BOUND, "End of the process")
    assert f is not None and "teardown" in f.headline and "320 calls" in f.headline
    assert f.share == pytest.approx(250 * MS / (hi - lo), abs=0.02)  # 300 x 0.5 ms frees + 20 x 5 ms unloads
    # the steady state stops where teardown begins
    g = gap_causes(tl)
    assert g.window is not None and g.window[1] < hi - 240 * MS


def test_teardown_ends_a_loop_without_start_up_too() -> None:
    b = Builder()
    for _ in range(300):
        launch_bound_iteration(b, first=False)
    teardown(b)
    d = diagnose_timeline(b.build())[0]
    assert (
        d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    )  # was sync_bound: the last gap began in the final sync
    assert finding(d, Bottleneck.STARTUP_BOUND, "End of the process")


def test_teardown_names() -> None:
    assert is_teardown_api("cuModuleUnload") and is_teardown_api("cudaDeviceReset")
    assert is_teardown_api("cuMemUnmap") and is_teardown_api("cudaFree_v3020")
    assert not is_teardown_api("cudaFreeAsync") and not is_teardown_api("cudaMalloc_v3020")


def test_frees_inside_the_loop_are_not_teardown() -> None:
    b = Builder()
    for _ in range(200):
        launch_bound_iteration(b)
        b.call("cudaFree_v3020", 20 * US)
    b.launch(KERNELS[0], 2 * US)  # GPU work after the last free: no teardown at the end
    tl = b.build()
    d = diagnose_timeline(tl)[0]
    assert not finding(d, Bottleneck.STARTUP_BOUND)
    g = gap_causes(tl)
    assert g.window == tl.span_ns()


# ============================================================================ 4. expectations a user could reach


def copy_loop(
    host_kind: int, step_bytes: int = 336 << 20, copy_ms: float = 50, compute_us: float = 300
) -> Builder:
    """Six steps, each copying ``step_bytes`` to the GPU (pageable: a blocking call; pinned: async, then
    waited for) and computing ``compute_us`` on them."""
    b = Builder()
    for _ in range(6):
        b.copy(step_bytes, int(copy_ms * MS), host_kind=host_kind, blocking=host_kind == 0)
        b.launch(KERNELS[0], int(compute_us * US))
        b.sync()
    return b


PINNED = {"host_kind": 1, "step_bytes": 100 << 20, "copy_ms": 2.0, "compute_us": 3000}
"""Pinned 100 MB copies (2 ms) not overlapped with 3 ms of compute per step: the link floor (1.7 ms) fits
behind the compute, so overlapping reaches the target."""


def test_transfer_fix_is_bounded_by_the_link() -> None:
    """336 MB per step over a 63 GB/s link takes >= 5.3 ms; with 0.3 ms of compute to hide it behind,
    only keeping the data on the GPU reaches the without-copies wall time."""
    tl = copy_loop(host_kind=0).build()
    d = diagnose_timeline(tl)[0]
    m = timeline_metrics(tl)
    assert d.bottleneck is Bottleneck.TRANSFER_BOUND
    assert d.fix.startswith("Keep the data on the GPU") and "at best" in d.fix
    wall = next(x for x in d.expect if x.metric == "wall_ns")
    floor = next(e for e in d.evidence if e.name == "host-link floor of these copies")
    one_way = 6 * (336 << 20)  # bytes in the steady state (the whole capture: no start-up in it)
    assert floor.value == pytest.approx(one_way / 63e9 * 1e3, rel=0.01) and floor.value > 0.3 * 5
    # the target is the wall time without the copies, never below the GPU's own work
    assert m["wall_ns"] - m["copy_ns"] - 1 * MS <= wall.target < m["wall_ns"]
    assert wall.target >= m["gpu_busy_ns"] - m["copy_ns"]


def test_pinned_copies_get_no_pinning_advice() -> None:
    tl = copy_loop(**PINNED).build()
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.TRANSFER_BOUND
    # the copies share the kernels' stream: the fix is a stream of their own and an event, not non_blocking
    # (the calls already return at once) and not pinning (already pinned)
    assert d.fix.startswith(
        "Issue the copy of batch i+1 on its own stream (copy_stream = torch.cuda.Stream()"
    )
    assert "wait_stream" in d.fix and "non_blocking=True)" in d.fix and "with non_blocking" not in d.fix
    assert "same stream as the kernels" in d.mechanism and "already return at once" in d.mechanism
    assert "pin the host buffers" not in d.fix and "already pinned" in d.mechanism
    assert not any(x.metric == "pageable_copy_bytes" for x in d.expect)  # 0 -> 0 cannot move
    assert not any(e.metric == "pageable_copy_bytes" for e in d.evidence)


def _diagnoses_of_every_class() -> list[tuple[str, object]]:
    return [
        ("launch", launch_bound()),
        ("sync", sync_loop()),
        ("whole-process", whole_process_launch_bound(end=True)),
        ("dataloader", dataloader_starved()),
        ("pageable", copy_loop(0).build()),
        ("pinned", copy_loop(**PINNED).build()),
    ]


@pytest.mark.parametrize(
    "name,tl", _diagnoses_of_every_class(), ids=[n for n, _ in _diagnoses_of_every_class()]
)
def test_predicted_gains_are_bounded_by_the_causes_share(name: str, tl) -> None:
    d = diagnose_timeline(tl)[0]
    m = timeline_metrics(tl)
    for x in d.expect:
        if x.target is None or x.value_now is None:
            continue
        assert x.value_now != x.target or x.value_now == 0, f"{x.metric}: an expectation that cannot move"
        if x.metric == "wall_ns":
            # the wall time never drops below the GPU work that stays, nor by more than the idle + copy time
            assert x.target >= m["gpu_busy_ns"] - m["copy_ns"] - 1
            assert m["wall_ns"] - x.target <= m["gpu_idle_ns"] + m["copy_ns"] + 1
        if x.metric == "gpu_busy_fraction":
            assert x.target <= 1.0


# ============================================================================ 5. shares of what


def gpu_bound_with_final_sync() -> Builder:
    b = Builder()
    for _ in range(10):
        b.launch("void gemm(float*)", 1 * MS, call=3 * US)
    b.sync()
    b.host(150 * US)
    b.launch("void gemm(float*)", 1 * MS)
    b.sync()
    return b


def test_a_busy_capture_shows_no_sync_finding_explaining_most_of_its_idle_time() -> None:
    d = diagnose_timeline(gpu_bound_with_final_sync().build())[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND
    # the idle after the sync is ~1.4% of the wall: below MIN_FINDING_SHARE of the steady state
    assert not finding(d, Bottleneck.SYNC_BOUND)


@pytest.mark.parametrize(
    "name,tl", _diagnoses_of_every_class(), ids=[n for n, _ in _diagnoses_of_every_class()]
)
def test_findings_never_repeat_the_primary_and_report_shares_of_the_wall(name: str, tl) -> None:
    d = diagnose_timeline(tl)[0]
    assert all(f.bottleneck is not d.bottleneck for f in d.findings)
    g = gap_causes(tl)
    by = g.idle_by_cause()
    wall = timeline_metrics(tl)["wall_ns"]
    for f in d.findings:
        assert f.share is not None and th.MIN_FINDING_SHARE <= f.share <= 1
        cause = {
            Bottleneck.HOST_LAUNCH_BOUND: "host",
            Bottleneck.SYNC_BOUND: "sync",
            Bottleneck.HOST_COMPUTE_BOUND: "host_compute",
        }.get(f.bottleneck)
        if cause:
            assert f.share == pytest.approx(by[cause] / wall, abs=1e-6)


def test_timeline_repr_gives_gpu_busy_per_gpu() -> None:
    from kprof.html.profiles import render_timeline_text, timeline_summary

    b = Builder()
    for _ in range(10):
        b.launch(KERNELS[0], 1 * MS, device=0)
        b.host(9 * MS)
    for _ in range(10):
        b.launch(KERNELS[0], 1 * MS, device=1)
        b.host(9 * MS)
    tl = b.build()
    text = render_timeline_text(timeline_summary(tl))
    # each GPU is busy 10 ms of the 172 ms span; the union of both would say 20 ms
    assert "GPU0 10 ms (5.8% of the span)" in text and "GPU1 10 ms (5.8% of the span)" in text
    busy_line = next(line for line in text.splitlines() if "GPU busy" in line)
    assert "20 ms" not in busy_line


# ============================================================================ 6. one-time work has many names


def test_jit_names() -> None:
    for n in (
        "FusionExecutor::compileFusion",
        "nvrtcCompileProgram",
        "compile_fx_inner",
        "CachingAutotuner.benchmark_all_configs",
        "torch/_dynamo/convert_frame.py(700): _compile",
    ):
        assert is_jit_name(n), n
    for n in (
        "Torch-Compiled Region: 0/0",
        "CompiledFunction",
        "CompiledFunctionBackward",
        "aten::mm",
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    ):
        assert not is_jit_name(n), n


def test_jit_compile_ranges_are_start_up() -> None:
    b = Builder()
    b.host(2_000 * MS, nvtx="FusionExecutor::compileFusion")  # nvFuser compiles before the first launch
    for _ in range(300):
        launch_bound_iteration(b)
    tl = b.build()
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    f = finding(d, Bottleneck.STARTUP_BOUND, "Start-up")
    assert f is not None and "compilation" in f.headline
    # the same compile in the middle of the loop: its gap is start-up work, not host computation
    b = Builder()
    for i in range(300):
        launch_bound_iteration(b)
        if i == 150:
            b.host(50 * MS, nvtx="FusionExecutor::compileFusion")
    g = gap_causes(b.build())
    assert g.idle_by_cause()["startup"] >= 50 * MS and g.idle_by_cause()["host_compute"] == 0


def test_context_creating_first_malloc_in_a_one_launch_program() -> None:
    b = Builder()
    b.call("cudaMalloc_v3020", 300 * MS)  # creates the context
    b.call("cudaMalloc_v3020", 100 * US)
    b.copy(4 << 20, 300 * US, host_kind=0)
    b.launch("void saxpy(float*)", 50 * US)
    b.copy(4 << 20, 300 * US, direction=2, host_kind=0)
    d = diagnose_timeline(b.build())[0]
    assert d.bottleneck is Bottleneck.STARTUP_BOUND
    assert "created the context, 300 ms" in d.headline
    assert d.bottleneck is not Bottleneck.HOST_COMPUTE_BOUND


def test_an_ordinary_first_call_of_a_capture_range_is_not_context_creation() -> None:
    b = copy_loop(host_kind=0)  # starts with a 4 ms copy call, as every step does
    tl = b.build()
    d = diagnose_timeline(tl)[0]
    assert not finding(d, Bottleneck.STARTUP_BOUND)
    # the steady state is the whole loop: from the first call to when the GPU finishes the last copy
    g = gap_causes(tl)
    last_gpu = max(max(c[1] for c in b.copies), max((k[1] for k in b.kernels), default=0))
    assert g.window == (tl.span_ns()[0], last_gpu)


def test_kernels_holding_73_percent_make_it_gpu_bound_despite_23_percent_host_gaps() -> None:
    b = Builder()
    for _ in range(20):
        b.host(int(2.3 * MS))  # host-only (no CUDA call)
        for _ in range(73):
            b.launch(KERNELS[0], 100 * US, call=1 * US)
        b.sync()
    tl = b.build()
    m = timeline_metrics(tl)
    assert m["gpu_busy_fraction"] == pytest.approx(0.76, abs=0.03)
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND
    f = finding(d, Bottleneck.HOST_COMPUTE_BOUND)
    assert f is not None and f.share == pytest.approx(0.23, abs=0.03)


def test_copies_at_7_percent_of_a_host_bound_loop_are_not_transfer_bound() -> None:
    b = Builder()
    for _ in range(50):
        launch_bound_iteration(b)  # 260 us of launches
        b.copy(1 << 20, 21 * US, host_kind=0)  # ~7.4% of the step in a pageable copy
    tl = b.build()
    d = diagnose_timeline(tl)[0]
    m = timeline_metrics(tl)
    assert m["exposed_copy_ns"] / m["wall_ns"] == pytest.approx(0.074, abs=0.015)
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    f = finding(d, Bottleneck.TRANSFER_BOUND)
    assert f is not None and "pageable" in f.headline


def test_sync_bound_sample_shape_stays_sync_bound() -> None:
    """60% kernels, 40% idle after syncs (the gallery's sync_bound sample): below 2x, the sync leads."""
    b = Builder()
    for _ in range(40):
        b.launch("void gemm(float*)", 600 * US, call=3 * US)
        b.sync()
        b.host(395 * US)
    d = diagnose_timeline(b.build())[0]
    assert d.bottleneck is Bottleneck.SYNC_BOUND


# ============================================================================ corpus


def test_corpus_dataloader_trace_names_the_dataloader(corpus_dir: Path) -> None:
    from kprof.io import load

    p = corpus_dir / "kineto" / "resnet50_num_workers_0.worker0.pt.trace.json.gz"
    d = diagnose_timeline(load(p))[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND  # kernels 68% of the steady state
    f = finding(d, Bottleneck.HOST_COMPUTE_BOUND)
    assert f is not None and "enumerate(DataLoader)" in f.headline and "num_workers" in f.headline
    assert f.share == pytest.approx(0.23, abs=0.02)


def test_corpus_first_malloc_created_the_context(corpus_dir: Path) -> None:
    from kprof.io import load

    d = diagnose_timeline(load(corpus_dir / "pipit" / "perlmutter-cloverleaf-cuda.sqlite"))[0]
    f = finding(d, Bottleneck.STARTUP_BOUND, "Start-up")
    assert f is not None and "created the context, 234 ms" in f.headline
    assert d.bottleneck is Bottleneck.GPU_BOUND


# ============================================================================ where the loop begins and ends


def test_slow_leading_steps_are_warm_up_too() -> None:
    """A PyTorch-profiler trace of a whole run: ProfilerStep#1 holds lazy loading and runs 40x a steady step."""
    b = Builder()
    for i in range(12):
        t0 = b.t
        if i in (0, 1):
            b.call("cuLibraryLoadData", 40 * MS if i == 1 else 20 * MS)
        launch_bound_iteration(b)
        b.step(i, t0)
    tl = b.build(fmt="kineto", source="run.pt.trace.json")
    d = diagnose_timeline(tl)[0]
    assert (
        "ProfilerStep#2 to ProfilerStep#11 (10 steps; the first 2, ProfilerStep#0 to ProfilerStep#1, left out"
        in d.mechanism
    )
    assert busy_evidence(d) == pytest.approx(100 * loop_only_busy_fraction(), abs=1.0)
    # an ordinary loop keeps all but its first step
    b = Builder()
    for i in range(12):
        t0 = b.t
        launch_bound_iteration(b)
        b.step(i, t0)
    assert (
        "(11 steps; the first, ProfilerStep#0, left out"
        in diagnose_timeline(b.build(fmt="kineto"))[0].mechanism
    )


def test_autotuning_before_the_loop_is_not_the_steady_state() -> None:
    """An autotuner benchmarks one kernel name in six launch configurations (with cache-flush kernels and
    syncs between them) before the loop runs the chosen one: the steady state is the last run."""
    b = Builder()
    b.call("cudaMalloc_v3020", 200 * MS)
    for cfg in range(6):
        b.host(30 * MS)  # compiling the configuration (no CUDA call)
        for _ in range(100):
            b.launch("void zero_l2(int*)", 20 * US)
            b.launch("_scale_shift", (200 - 20 * cfg) * US, grid=1 << (18 - cfg), block=64 << (cfg // 2))
        b.sync()
    for _ in range(150):
        for _ in range(2):
            b.launch("_scale_shift", 127 * US, call=4 * US, grid=1 << 16, block=256)
    b.sync()
    tl = b.build()
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND
    g = gap_causes(tl)
    loop_start = 200 * MS + 6 * 30 * MS + 600 * (20 + 5 + 5) * US  # after the last benchmark
    assert g.window is not None and g.window[0] >= loop_start
    assert timeline_metrics(tl)["kernel_count"] == pytest.approx(300, abs=2)


def test_a_sync_the_host_barely_waits_in_is_not_sync_bound() -> None:
    """.item() once a step, but the GPU work is short: the host's dispatch after the sync, not the sync,
    keeps the GPU idle (the validation gallery's item_each_step)."""
    b = Builder()
    for _ in range(200):
        for j in range(6):
            b.host(25 * US)
            b.launch(KERNELS[j % 5], 12 * US)
        b.copy(4, 2 * US, direction=2, host_kind=0)  # .item(): waits ~10 us for the last kernel
    d = diagnose_timeline(b.build())[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    m = timeline_metrics(b.build())
    assert m["sync_wait_ns"] < 0.2 * m["gpu_idle_ns"]


def test_host_time_after_the_last_gpu_work() -> None:
    """nsys records the process to its exit: the host time after the loop is the end of the process. A
    PyTorch profiler trace ends when the profiler stops: there it is the program's own work, after the
    loop's last iteration (found by the loop's period), so not the loop's steady state either."""

    def program() -> Builder:
        b = Builder()
        for _ in range(100):
            launch_bound_iteration(b)
        b.sync()
        b.host(600 * MS)  # interpreter exit / the profiled program's host work
        b.call("cudaGetDeviceCount", 1 * US)  # the last event
        return b

    d = diagnose_timeline(program().build())[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    f = finding(d, Bottleneck.STARTUP_BOUND, "End of the process")
    assert f is not None and "exit" in f.headline and f.share > 0.9
    tl = program().build(fmt="kineto")
    g = gap_causes(tl)
    assert g.idle_by_cause()["host_compute"] == 0 and g.window is not None
    assert g.window[1] < tl.span_ns()[1] - 590 * MS  # the loop ends with its last iteration
    d = diagnose_timeline(tl)[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    f = finding(d, Bottleneck.STARTUP_BOUND, "After the loop")
    assert f is not None and "the program's own work" in f.headline and f.share > 0.9


def test_a_sync_inside_teardown_does_not_extend_the_loop() -> None:
    b = Builder()
    for _ in range(300):
        launch_bound_iteration(b)
    b.sync()
    for _ in range(200):
        b.call("cudaFree_v3020", 500 * US)
    b.call("cuCtxSynchronize", 10 * US)  # waits for nothing: the GPU has been idle since the loop
    b.call("cudaDeviceReset_v3020", 90 * MS)
    d = diagnose_timeline(b.build())[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and not finding(d, Bottleneck.SYNC_BOUND)
    f = finding(d, Bottleneck.STARTUP_BOUND, "End of the process")
    assert f is not None and "teardown" in f.headline
