"""Classes of error an independent senior-CUDA review found in kprof's timeline diagnoses
(docs/review/rubric_review.md, rows 17-24 and ranked items 1, 3, 5, 8, 10), each fixed as a class: a test on the
real file that showed it (where it is in this checkout) and a synthetic case where the text must not appear.

1. The capture is the span of every event, not of the CUDA calls (148 ms quoted for a 567 ms capture).
2. Advice in the program's language (PyTorch/Triton start-up advice for a CUDA C++ binary).
3. No launch-bound verdict from a handful of launches ("issues 1 kernels", CUDA graphs advised).
4. Below 80% GPU-busy the text never says "rarely idle"; a recoverable idle cause is the fix, with its bound.
5. Expectations that move and stay reachable (syncs 400 -> 400; GPU-busy to 99.9% with 4,255 kernels).
6. What syncs is named (.item(), not "explicit synchronize()"), and the critical path leaves warm-up out.
7. Copies on the compute stream: the stream is named, non_blocking is not advised twice.
8. A gpu_bound capture of elementwise kernels gets the one change that fits (fusion), not a menu.
9. A PyTorch profiler annotation is not an "NVTX range".
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from kprof import thresholds as th
from kprof.api import diagnose
from kprof.diagnose import timeline as T
from kprof.diagnose.critical_path import critical_paths
from kprof.diagnose.timeline import diagnose_timeline, timeline_metrics
from kprof.diagnose.timeline.context import _context
from kprof.diagnose.timeline.gaps import _steady_state
from kprof.diagnose.timeline.sync import _drained_by_sync
from kprof.io.nsys import load_nsys_sqlite
from kprof.model import Bottleneck, Diagnosis, Verdict
from kprof.timeline_model import Timeline

from .test_critical_path import Loop
from .test_timeline_steady import PINNED, copy_loop
from .timeline_builder import KERNELS, MS, US, Builder, dataloader_starved

REPO = Path(__file__).resolve().parents[2]


@cache
def _diagnoses(rel: str) -> tuple[Diagnosis, ...]:
    p = REPO / "data" / rel
    if not p.exists():
        pytest.skip(f"{p} is not in this checkout")
    return tuple(diagnose(p))


def _text(d: Diagnosis) -> str:
    return d.to_text()


def _expect(d: Diagnosis, metric: str):
    return next(x for x in d.expect if x.metric == metric)


# ----------------------------------------------------------------------------- 1. the capture's span
def test_capture_span_counts_every_event_of_the_export() -> None:
    """one_launch_cudamalloc: 415 ms pass before the first CUDA call (most of it nsys's own set-up in the
    process); the capture is 567 ms (measure.py), never the 148 ms of the CUDA calls."""
    d = _diagnoses("validation/timeline/profiles/one_launch_cudamalloc.sqlite.gz")[0]
    assert d.bottleneck is Bottleneck.STARTUP_BOUND
    assert "567 ms of 567 ms" in d.headline and "148 ms" not in d.headline
    assert "the 567 ms capture" in d.evidence[0].reference
    assert "before the program's first CUDA call" in d.mechanism and "profiler's own set-up" in d.mechanism
    # whole-process PyTorch captures: the process's exit and its start before CUDA count too
    w = _diagnoses("samples/timeline/whole_process_launch_bound.sqlite.gz")[0]
    assert any("of the 11.4 s capture" in f.headline for f in w.findings)
    t = _diagnoses("samples/timeline/teardown_after_loop.sqlite.gz")[0]
    assert any("of the 7 s capture" in f.headline and "End of the process" in f.headline for f in t.findings)


def _export_with_host_events(path: Path, osrt: bool = True) -> Path:
    from tests.io.test_nsys import make_export

    make_export(path)
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER, nameId INTEGER, globalTid INTEGER);
        CREATE TABLE PROFILER_OVERHEAD (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER,
            nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);
        INSERT INTO StringIds VALUES (40, 'CUDA profiling initialization'), (41, 'dlopen(libfoo.so)');
        INSERT INTO PROFILER_OVERHEAD VALUES (50, 250, 1, 40, 0), (200, 300, 1, 40, 0), (320, 380, 1, 41, 0);
    """)
    if osrt:
        # a poll() that begins before the CUDA calls and ends far after them counts by its start only
        con.executescript("""
            INSERT INTO OSRT_API VALUES (100, 150, 0, 1), (21500, 999999999, 0, 1);
        """)
    con.commit()
    con.close()
    return path


def test_loader_reads_the_span_and_the_profilers_own_time(tmp_path: Path) -> None:
    tl = load_nsys_sqlite(_export_with_host_events(tmp_path / "x.sqlite"))
    assert (tl.capture_start_ns, tl.capture_end_ns) == (100, 21500)
    assert tl.span_ns() == (100, 21500)
    assert tl.profiler_overhead == ((50, 300),)  # merged; the dlopen row is the program's own load
    # not-fire: without OS runtime calls the span is the CUDA tables' (no invented start)
    bare = load_nsys_sqlite(_export_with_host_events(tmp_path / "y.sqlite", osrt=False))
    assert bare.capture_start_ns is None and bare.span_ns() == (400, 21000)


def _launch_loop(iters: int = 40, launches: int = 20, command: str = "python3 train.py") -> Timeline:
    b = Builder()
    b.call("cudaMalloc_v3020", 200 * MS)  # the first call: context creation
    for i in range(iters):
        t0 = b.t
        for j in range(launches):
            b.host(8 * US)
            b.launch(KERNELS[j % len(KERNELS)], 2 * US)
        b.mark(f"step {i}", t0)
    return dataclasses.replace(b.build(), command=command)


def test_time_before_the_first_cuda_call_is_start_up_only_when_recorded() -> None:
    tl = _launch_loop()
    lo = int(tl.api.start_ns.min())
    with_start = dataclasses.replace(
        tl, capture_start_ns=lo - 1_000 * MS, profiler_overhead=((lo - 900 * MS, lo - 600 * MS),)
    )
    f = next(f for f in diagnose_timeline(with_start)[0].findings if "Start-up" in f.headline)
    assert "the process before its first CUDA call 1 s (300 ms of it the profiler's own set-up)" in f.headline
    # not-fire: no recorded start before the CUDA calls, nothing said about it
    f0 = next(f for f in diagnose_timeline(tl)[0].findings if "Start-up" in f.headline)
    assert "before its first CUDA call" not in f0.headline
    # a PyTorch profiler trace's own span (which may start well before any event) is not measured from
    kin = dataclasses.replace(with_start, format="kineto")
    assert all("before its first CUDA call" not in f.headline for f in diagnose_timeline(kin)[0].findings)


# ----------------------------------------------------------------------------- 2. the program's language
def test_language_is_told_from_the_capture() -> None:
    tl = _launch_loop()
    assert T._language(tl) == T.PYTHON
    assert T._language(dataclasses.replace(tl, command="./app --n 4")) == T.NATIVE
    assert T._language(dataclasses.replace(tl, format="kineto")) == T.PYTORCH
    torch_names = dataclasses.replace(
        tl.kernels, names=("void at::native::vectorized_elementwise_kernel<4>",)
    )
    assert T._language(dataclasses.replace(tl, command="./app", kernels=torch_names)) == T.PYTORCH
    assert (
        T._language(dataclasses.replace(tl, command="./app", threads=("main", "pt_autograd_0"))) == T.PYTORCH
    )


_TORCH_WORDS = re.compile(r"torch|TORCHINDUCTOR|Triton|DataLoader|py-spy")


def test_a_cuda_cpp_program_gets_cuda_cpp_advice() -> None:
    d = _diagnoses("validation/timeline/profiles/one_launch_cudamalloc.sqlite.gz")[0]
    assert not _TORCH_WORDS.search(d.fix + d.next_step), d.fix + d.next_step
    assert "cudaProfilerStart()" in d.next_step and "--capture-range=cudaProfilerApi" in d.next_step
    assert "cudaMalloc" in d.fix and "context" in d.fix  # the part that holds the program's own one-time cost
    # the same launch-bound loop, as a CUDA C++ program and as a Python one
    native = diagnose_timeline(_launch_loop(command="./app"))[0]
    assert native.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    assert "cudaStreamBeginCapture" in native.fix and not _TORCH_WORDS.search(native.fix)
    assert all(not _TORCH_WORDS.search(f.headline) for f in native.findings)
    python = diagnose_timeline(_launch_loop())[0]
    assert "torch.compile" in python.fix and "cudaStreamBeginCapture" not in python.fix


# ----------------------------------------------------------------------------- 3. a rate needs a loop
def test_no_launch_bound_verdict_from_one_launch() -> None:
    ds = _diagnoses("validation/timeline/profiles/one_launch_cudamalloc.sqlite.gz")
    assert len(ds) == 1 and not any(d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND for d in ds)
    assert "issues 1 kernels" not in "".join(_text(d) for d in ds)


def _dispatch_bound(launches: int) -> Timeline:
    """Launches separated by 0.5 ms of host dispatch that keeps making short CUDA calls (never 1 ms without one)."""
    b = Builder()
    for i in range(launches):
        for _ in range(25):
            b.call("cudaGetDevice", 2 * US)
            b.host(18 * US)
        b.launch(f"void k{i}(float*)", 50 * US)
    return b.build()


def test_few_launches_are_inconclusive_many_are_launch_bound() -> None:
    few = diagnose_timeline(_dispatch_bound(3))[0]
    assert few.verdict is Verdict.INCONCLUSIVE and few.bottleneck is None and "too few" in few.headline
    many = diagnose_timeline(_dispatch_bound(th.MIN_LAUNCHES_FOR_LAUNCH_BOUND * 3))[0]
    assert many.bottleneck is Bottleneck.HOST_LAUNCH_BOUND  # not-fire: a loop of launches keeps its verdict


# ----------------------------------------------------------------------------- 4. below 80% busy
def test_busy73_is_a_fix_whose_text_matches_its_numbers() -> None:
    d = _diagnoses("validation/timeline/profiles/busy73_host_gaps.sqlite.gz")[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND and d.verdict is Verdict.FIX
    text = _text(d)
    assert "rarely idle" not in text and "never drains" not in text and "rarely drains" not in text
    assert "recovers up to 47.7 ms of the 184 ms" in d.fix
    hc = _expect(d, "host_compute_idle_ns")
    assert hc.value_now == pytest.approx(47.7e6, rel=0.01) and hc.target == 0
    wall = _expect(d, "wall_ns")
    assert wall.target == pytest.approx(wall.value_now - hc.value_now, rel=1e-6)
    # the host gap stays a finding with its fix and its bound
    f = next(f for f in d.findings if f.bottleneck is Bottleneck.HOST_COMPUTE_BOUND)
    assert "saves up to 47.7 ms" in f.headline and "off the GPU's critical path" in f.headline


def _kernels_and_host_gaps(host_ms: float, iters: int = 12) -> Timeline:
    """Each step: 10 kernels of 1 ms queued at once, a sync, then ``host_ms`` of host work without CUDA calls."""
    b = Builder()
    for i in range(iters):
        t0 = b.t
        for _ in range(10):
            b.launch("void gemm(float*)", 1 * MS)
        b.sync()
        b.host(int(host_ms * MS))
        b.mark(f"step {i}", t0)
    return b.build()


def test_recoverable_idle_below_80_percent_busy_is_the_fix() -> None:
    d = diagnose_timeline(_kernels_and_host_gaps(3.0))[0]  # ~77% busy, 23% host gaps
    assert d.bottleneck is Bottleneck.GPU_BOUND and d.verdict is Verdict.FIX
    assert d.evidence[0].value < 100 * th.GPU_BOUND_BUSY_FRACTION and "below 80%" in d.evidence[0].reference
    assert "rarely" not in d.mechanism and "queue drains" in d.mechanism
    # not-fire: at >= 80% busy the kernels are the story, the verdict healthy
    h = diagnose_timeline(_kernels_and_host_gaps(1.2))[0]
    assert h.verdict is Verdict.HEALTHY and "rarely drains" in h.mechanism
    assert h.evidence[0].value >= 100 * th.GPU_BOUND_BUSY_FRACTION


# ----------------------------------------------------------------------------- 5. expectations that move
def test_launch_bound_targets_keep_the_kernels_and_a_gap_between_them() -> None:
    for rel in (
        "samples/timeline/whole_process_launch_bound.sqlite.gz",
        "validation/heldout/launch_small_ops.json.gz",
    ):
        d = _diagnoses(rel)[0]
        assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
        tl = __import__("kprof").load(str(REPO / "data" / rel))
        m = timeline_metrics(tl)
        floor = m["gpu_busy_ns"] + m["kernel_count"] * th.GRAPH_KERNEL_GAP_NS
        wall = _expect(d, "wall_ns")
        busy = _expect(d, "gpu_busy_fraction")
        assert wall.target >= floor * 0.999, rel
        assert busy.target <= m["gpu_busy_ns"] / floor + 1e-3 and busy.target < 0.99, rel
    # the measured pair: the prediction for the eager loop met the CUDA-graph capture (test_compare)


def test_sync_expectation_moves() -> None:
    d = _diagnoses("validation/timeline/profiles/item_readback_sync.json.gz")[0]
    assert d.bottleneck is Bottleneck.SYNC_BOUND
    s = _expect(d, "sync_count")
    assert s.value_now == 400 and s.target == 0
    for x in d.expect:
        assert x.target is None or x.target != x.value_now, x


# ----------------------------------------------------------------------------- 6. what syncs, on the path
def test_the_sync_is_named_from_the_operator_that_made_it() -> None:
    d = _diagnoses("validation/timeline/profiles/item_readback_sync.json.gz")[0]
    assert ".item()" in d.mechanism and ".item()" in d.fix
    assert "synchronize()" not in d.fix and "explicit" not in d.mechanism  # the code has none in its loop
    # the nsys capture of the same program has no operators: a stream sync after 4-byte reads is .item()
    n = _diagnoses("validation/timeline/profiles/item_readback_sync.sqlite.gz")[0]
    assert n.bottleneck is Bottleneck.SYNC_BOUND and ".item()" in n.fix
    assert "scalar read back" in n.mechanism and "aten::" not in n.mechanism  # no operator was recorded


def _sync_loop(name: str, command: str = "python3 train.py") -> Timeline:
    b = Builder()
    for i in range(20):
        t0 = b.t
        for j in range(4):
            b.launch(KERNELS[j], 100 * US)
        b.call(name, 1 * US)
        c = b.api[-1]
        b.api[-1] = (c[0], max(c[1], b.gpu_free + 500), c[2], c[3])  # blocks until the GPU is done
        b.t = b.api[-1][1]
        for _ in range(30):
            b.host(10 * US)
            b.call("cudaGetDevice", 1 * US)
        b.mark(f"step {i}", t0)
    return dataclasses.replace(b.build(), command=command)


def test_sync_fix_follows_the_call_that_blocks() -> None:
    dev = diagnose_timeline(_sync_loop("cudaDeviceSynchronize_v3020"))[0]
    assert dev.bottleneck is Bottleneck.SYNC_BOUND
    assert "torch.cuda.synchronize()" in dev.fix and ".item()" not in dev.fix
    stream = diagnose_timeline(_sync_loop("cudaStreamSynchronize_v3020"))[0]
    assert "instead of draining the stream" in stream.fix and "torch.cuda.synchronize()" not in stream.fix
    native = diagnose_timeline(_sync_loop("cudaStreamSynchronize_v3020", command="./app"))[0]
    assert "cudaEventRecord" in native.fix and "torch" not in native.fix


def test_the_critical_path_leaves_warm_up_steps_out() -> None:
    """item_readback_sync: the second profiler step (88 ms of first-use work in aten::mm) set 'GPU work holds
    3.39% of the step' against 50.6% GPU-busy; without it the path's GPU share is the GPU-busy fraction's."""
    d = _diagnoses("validation/timeline/profiles/item_readback_sync.json.gz")[0]
    m = re.search(r"GPU work on the path holds ([\d.]+)% of the step time", d.mechanism)
    busy = next(e.value for e in d.evidence if e.metric == "gpu_busy_fraction")
    assert m is not None and abs(float(m[1]) - busy) < 5, d.mechanism
    # synthetic: steps of 180 us; the first one's 50 ms of host work sets the first steady step's path: left out
    lp = Loop()
    t = 0
    for s in range(8):
        dur = 50_000 * US if s == 0 else 180 * US
        lp.step(t, t + dur - 5 * US)
        lp.launch(t, (t + 10 * US, t + 110 * US), name="gemm")
        lp.call(t + 6 * US, t + 114 * US, "cudaStreamSynchronize")
        lp.op(t + 120 * US, t + dur - 10 * US, "preprocess")
        t += dur
    s = critical_paths(lp.timeline())
    assert len(s.paths) == 6 and max(p.duration_ns for p in s.paths) < 200 * US
    # not-fire: steps of even length all stay
    lp2 = Loop()
    for k in range(8):
        t0 = k * 180 * US
        lp2.step(t0, t0 + 175 * US)
        lp2.launch(t0, (t0 + 10 * US, t0 + 110 * US), name="gemm")
        lp2.call(t0 + 6 * US, t0 + 114 * US, "cudaStreamSynchronize")
    assert len(critical_paths(lp2.timeline()).paths) == 7


# ----------------------------------------------------------------------------- 7. copies and streams
def test_copies_on_the_compute_stream_get_a_stream_and_an_event() -> None:
    d = _diagnoses("samples/timeline/pinned_unoverlapped_copies.sqlite.gz")[0]
    assert d.bottleneck is Bottleneck.TRANSFER_BOUND
    assert "same stream as the kernels" in d.mechanism
    assert "with non_blocking=True" not in d.fix  # the program already copies with non_blocking=True
    assert "torch.cuda.Stream()" in d.fix and "wait_stream" in d.fix


def test_copy_advice_follows_how_the_copies_were_issued() -> None:
    tl = copy_loop(**PINNED).build()
    side = dataclasses.replace(
        tl, copies=dataclasses.replace(tl.copies, stream=np.full(len(tl.copies), 9, np.int32))
    )
    d = diagnose_timeline(side)[0]
    assert "same stream" not in d.mechanism  # not-fire: the copies have a stream of their own
    b = Builder()  # pinned copies whose calls wait for the copy: the host is told to stop waiting
    for i in range(6):
        t0 = b.t
        b.copy(100 << 20, 2 * MS, host_kind=1, blocking=True)
        b.launch(KERNELS[0], 3 * MS)
        b.sync()
        b.mark(f"step {i}", t0)
    blocking = diagnose_timeline(b.build())[0]
    assert blocking.bottleneck is Bottleneck.TRANSFER_BOUND
    assert "with non_blocking=True" in blocking.fix and "already return at once" not in blocking.mechanism
    native = diagnose_timeline(dataclasses.replace(tl, command="./app"))[0]
    assert "cudaStreamWaitEvent" in native.fix and "torch" not in native.fix


# ----------------------------------------------------------------------------- 8. the change that fits
def test_elementwise_kernels_at_their_roof_get_fusion_not_a_menu() -> None:
    d = _diagnoses("samples/timeline/teardown_after_loop.sqlite.gz")[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND and d.verdict is Verdict.HEALTHY
    assert "elementwise kernels (add, mul)" in d.fix and "torch.compile" in d.fix
    assert "lower precision" not in d.fix and "smaller problem" not in d.fix
    assert "rarely idle" not in d.fix


def _back_to_back(names: tuple[str, ...]) -> Timeline:
    b = Builder()
    for i in range(10):
        t0 = b.t
        for n in names:
            b.launch(n, 2 * MS)
        b.mark(f"step {i}", t0)
    return b.build()


def test_gpu_bound_fix_is_worded_by_the_kernels() -> None:
    ew = _back_to_back(
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, std::array<char *, 2>>(int, T2, T3)",
        )
    )
    d = diagnose_timeline(ew)[0]
    assert d.verdict is Verdict.HEALTHY and re.search(r"elementwise kernels \((add, mul|mul, add)\)", d.fix)
    gemm = diagnose_timeline(_back_to_back(("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",)))[0]
    assert "elementwise" not in gemm.fix and "matrix multiply" in gemm.fix  # not-fire


# ----------------------------------------------------------------------------- 9. annotations are not NVTX
def test_a_pytorch_annotation_is_not_called_an_nvtx_range() -> None:
    d = _diagnoses("validation/heldout/loader_cpu_augment.json.gz")[0]
    assert "NVTX range" not in d.mechanism and "of the annotation 'enumerate(DataLoader)" in d.mechanism
    nsys = diagnose_timeline(_launch_loop())[0]
    assert "NVTX ranges 'step" in nsys.mechanism  # not-fire: an nsys capture's ranges are NVTX
    kin = diagnose_timeline(dataclasses.replace(_launch_loop(), format="kineto"))[0]
    assert "annotations 'step" in kin.mechanism and "NVTX" not in kin.mechanism


# ----------------------------------------------------------------------------- launch-bound fix wording
def _per_sample_loop(
    body: tuple[str, ...], repeats: int, extra: tuple[str, ...] = (), steps: int = 8
) -> Timeline:
    """A launch-bound loop whose step runs the kernels of ``body`` ``repeats`` times, then ``extra`` once."""
    b = Builder()
    for i in range(steps):
        t0 = b.t
        for _ in range(repeats):
            for name in body:
                b.host(8 * US)
                b.launch(name, 2 * US)
        for name in extra:
            b.host(8 * US)
            b.launch(name, 2 * US)
        b.mark(f"step {i}", t0)
    return b.build(source="infer.sqlite")


def test_a_group_of_kernels_repeated_per_step_gets_batching_first() -> None:
    # 32 batch-1 passes of Linear-GELU-Linear per step (blind4 per_sample_loop's construct): batching first
    gemm, gelu, cat = "void gemm_bias(float*)", "void gelu_kernel(float*)", "void cat_kernel(float*)"
    d = diagnose_timeline(_per_sample_loop((gemm, gelu, gemm), 32, (cat,)))[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND
    assert d.fix.startswith("Each iteration runs the same 3 kernels 32 times"), d.fix
    assert "divides their launches by 32" in d.fix and "Otherwise: capture the loop body" in d.fix
    assert "SGD(foreach=True)" not in d.fix  # an inference loop: no backward, no optimizer in the capture
    # not-fire: 3 repeats are as often 3 layers in sequence; counts without a common factor >= 4 are no group
    three = diagnose_timeline(_per_sample_loop((gemm, gelu), 3, (cat,)))[0]
    assert three.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and not three.fix.startswith("Each iteration")
    mixed = diagnose_timeline(_per_sample_loop((gemm, gelu), 8, (gemm, cat, cat, cat)))[0]
    assert not mixed.fix.startswith("Each iteration"), mixed.fix  # gemm 9, gelu 8, cat 3 per step: gcd 1
    # one kernel many times is a chain to fuse or a per-tensor loop: no batching sentence
    one = diagnose_timeline(_per_sample_loop((gemm,), 40))[0]
    assert not one.fix.startswith("Each iteration") and "torch._foreach_" in one.fix


def test_the_optimizer_advice_needs_a_training_step_in_the_capture() -> None:
    bwd = "void threshold_backward_kernel(float*)"
    d = diagnose_timeline(_per_sample_loop(("void relu_kernel(float*)", bwd), 1, ("void mm(float*)",) * 3))[0]
    assert d.bottleneck is Bottleneck.HOST_LAUNCH_BOUND and "foreach/fused optimizer" in d.fix
    assert "fused=True" in d.fix  # no optimizer range in this capture: the switch, for each optimizer
    inference = diagnose_timeline(
        _per_sample_loop(("void relu_kernel(float*)",), 1, ("void mm(float*)",) * 3)
    )[0]
    assert "optimizer" not in inference.fix and "torch._foreach_" in inference.fix
    # the expectation says where its 130 ns between kernels comes from
    busy = next(x for x in d.expect if x.metric == "gpu_busy_fraction")
    assert "measured inside CUDA graphs" in busy.describe()


# ----------------------------------------------------------------------------- host code after a drained queue
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _host_work_loop(sync_first: bool, command: str = "python3 train.py") -> Timeline:
    """Each step queues 1.8 ms of GEMMs, then runs 3 ms of host code; with ``sync_first`` the host first blocks
    until the GPU is done (a .item() of the loss), so nothing is queued behind the host code."""
    b = Builder()
    for i in range(8):
        t0 = b.t
        for _ in range(6):
            b.launch("void gemm_kernel(float*)", 300 * US)
        if sync_first:
            b.sync()
        b.host(3 * MS)
        if not sync_first:
            b.sync()
        b.mark(f"step {i}", t0)
    tl = b.build(source="train.sqlite")
    return dataclasses.replace(tl, command=command)


def test_host_code_after_a_sync_drained_the_queue_gets_queue_ahead_advice() -> None:
    d = _diagnoses("validation/timeline/profiles/busy73_host_gaps.sqlite.gz")[0]
    assert "These gaps begin while the host is blocked in a scalar read back" in d.mechanism
    assert d.fix.startswith("Queue GPU work before the host code")
    # the capture cannot tell whether that code prepares the next input: the moving-off fix follows, conditioned
    assert d.fix.index("If this code prepares the next step's input instead") > d.fix.index(
        "torch.cuda.Event"
    )
    assert "non_blocking=True" in d.fix and "torch.cuda.Event" in d.fix
    synth = diagnose_timeline(_host_work_loop(sync_first=True))[0]
    assert synth.bottleneck is Bottleneck.HOST_COMPUTE_BOUND, synth.headline
    assert "blocked in cudaStreamSynchronize" in synth.mechanism and synth.fix.startswith("Queue GPU work")
    native = diagnose_timeline(_host_work_loop(sync_first=True, command="./app --steps 8"))[0]
    assert "cudaMemcpyAsync" in native.fix and "torch" not in native.fix
    # not-fire: the host code runs while the GPU still has queued work (the sync comes after it)
    late = diagnose_timeline(_host_work_loop(sync_first=False))[0]
    assert late.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and "blocked in" not in late.mechanism
    assert not late.fix.startswith("Queue GPU work")
    loader = _diagnoses("samples/timeline/host_compute_bound.json.gz")[0]
    assert "blocked in" not in loader.mechanism and "DataLoader(num_workers" in loader.fix
    # not-fire: a DataLoader after the loss's .item() also begins in a blocking call, but the next step needs
    # its batch: it can only be moved off the critical path (workers), not queued behind
    tl = dataloader_starved(fmt="kineto", op=LOADER)
    ctx = _context(tl)
    w = _steady_state(ctx).stats
    assert _drained_by_sync(ctx, w, None) is not None  # the gaps do begin in the sync
    fed = diagnose_timeline(tl)[0]
    assert fed.bottleneck is Bottleneck.HOST_COMPUTE_BOUND and "num_workers" in fed.fix
    assert not fed.fix.startswith("Queue GPU work") and "blocked in" not in fed.mechanism
