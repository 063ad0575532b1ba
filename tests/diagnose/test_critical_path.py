"""The critical path of a step: synthetic loops whose path is known to the nanosecond, and the samples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import kprof
from kprof import thresholds as th
from kprof.diagnose.compare import step_times
from kprof.diagnose.critical_path import HTA_KIND, KINDS, agreement, critical_paths, window_path
from kprof.timeline_model import (
    ApiTable,
    CopyTable,
    HostOpTable,
    KernelTable,
    StepTable,
    Timeline,
)

US = 1_000
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples"


class Loop:
    """A PyTorch-profiler-like capture built event by event (times in ns)."""

    def __init__(self) -> None:
        self.k: list[tuple[int, int, int, int, str]] = []  # start, end, stream, corr, name
        self.c: list[tuple[int, int, int, int]] = []  # start, end, stream, corr (DtoH copies)
        self.api: list[tuple[int, int, int, int, str]] = []  # start, end, thread, corr, name
        self.ops: list[tuple[int, int, int, str]] = []  # start, end, thread, name
        self.steps: list[tuple[int, int, int]] = []  # start, end, thread
        self.corr = 0

    def launch(
        self, at: int, run: tuple[int, int], *, thread: int = 0, stream: int = 7, name: str = "k"
    ) -> None:
        self.corr += 1
        self.api.append((at, at + 5 * US, thread, self.corr, "cudaLaunchKernel"))
        self.k.append((run[0], run[1], stream, self.corr, name))

    def call(self, start: int, end: int, name: str, *, thread: int = 0) -> None:
        self.corr += 1
        self.api.append((start, end, thread, self.corr, name))

    def op(self, start: int, end: int, name: str, *, thread: int = 0) -> None:
        self.ops.append((start, end, thread, name))

    def step(self, start: int, end: int, *, thread: int = 0) -> None:
        self.steps.append((start, end, thread))

    def timeline(self) -> Timeline:
        def col(rows: Sequence[tuple], i: int, dt: type = np.int64) -> np.ndarray:
            return np.array([r[i] for r in rows], dt) if rows else np.zeros(0, dt)

        knames = sorted({r[4] for r in self.k})
        anames = sorted({r[4] for r in self.api})
        onames = sorted({r[3] for r in self.ops})
        kernels = KernelTable(
            start_ns=col(self.k, 0), end_ns=col(self.k, 1), device=np.zeros(len(self.k), np.int16),
            stream=col(self.k, 2, np.int32), correlation=col(self.k, 3),
            name_id=np.array([knames.index(r[4]) for r in self.k], np.int32), names=tuple(knames),
        )  # fmt: skip
        copies = CopyTable(
            start_ns=col(self.c, 0), end_ns=col(self.c, 1), device=np.zeros(len(self.c), np.int16),
            stream=col(self.c, 2, np.int32), correlation=col(self.c, 3), direction=np.full(len(self.c), 2, np.int8),
            bytes=np.full(len(self.c), 4, np.int64), src_kind=np.full(len(self.c), 2, np.int8),
            dst_kind=np.full(len(self.c), 1, np.int8),
        )  # fmt: skip
        nid = np.array([anames.index(r[4]) for r in self.api], np.int32)
        api = ApiTable(
            start_ns=col(self.api, 0), end_ns=col(self.api, 1), thread=col(self.api, 2, np.int32),
            correlation=col(self.api, 3), name_id=nid, names=tuple(anames),
            category=ApiTable.categories_for(tuple(anames), nid),
        )  # fmt: skip
        ops = HostOpTable(
            start_ns=col(self.ops, 0), end_ns=col(self.ops, 1), thread=col(self.ops, 2, np.int32),
            name_id=np.array([onames.index(r[3]) for r in self.ops], np.int32), names=tuple(onames),
        )  # fmt: skip
        steps = StepTable(
            start_ns=col(self.steps, 0), end_ns=col(self.steps, 1), thread=col(self.steps, 2, np.int32),
            number=np.arange(len(self.steps), dtype=np.int64),
        )  # fmt: skip
        return Timeline(source="loop.json", format="kineto", kernels=kernels, copies=copies, api=api,
                        host_ops=ops, steps=steps, threads=("main", "autograd"))  # fmt: skip


N_STEPS = 5  # the first is warm-up, so 4 paths


def test_gpu_bound_loop_path_is_the_kernels_and_their_gaps() -> None:
    """The host runs ahead; each step is 3 kernels of 100 us with 2 us between: 300 + 6 us."""
    lp = Loop()
    for s in range(N_STEPS):
        t0 = s * 306 * US
        lp.step(t0, t0 + 50 * US)
        for j in range(3):
            start = 40 * US + t0 + j * 102 * US
            lp.launch(t0 + 10 * j * US, (start, start + 100 * US), name="gemm")
    s = critical_paths(lp.timeline())
    assert len(s.paths) == N_STEPS - 1
    assert {k: v for k, v in s.ns_by_kind().items() if v} == {"kernel": 4 * 300 * US, "gpu_gap": 4 * 6 * US}
    assert s.top(("kernel",)) == [("gemm", 4 * 300 * US, 12)]


def test_host_bound_loop_path_is_the_host_then_the_last_launch() -> None:
    """Four 1-us kernels per 100-us step; the host issues them 25 us apart (5-us launch calls)."""
    lp = Loop()
    for s in range(N_STEPS):
        t0 = s * 100 * US
        lp.step(t0, t0 + 99 * US)
        lp.op(t0 + 10 * US, t0 + 30 * US, "python_work")
        for at in (5, 30, 55, 80):
            lp.launch(t0 + at * US, (t0 + (at + 8) * US, t0 + (at + 9) * US), name="add")
    s = critical_paths(lp.timeline())
    # window of a step: the previous step's last kernel end (S - 11 us) to this one's (S + 89 us)
    per_step = {"host_api": 15 * US, "host": 76 * US, "launch": 8 * US, "kernel": 1 * US}
    assert {k: v for k, v in s.ns_by_kind().items() if v} == {k: 4 * v for k, v in per_step.items()}
    assert ("python_work", 4 * 20 * US, 4) in s.top(("host",))
    assert sum(s.share_by_kind().values()) == pytest.approx(1.0)
    assert s.share_by_hta_kind()["cpu_bound"] == pytest.approx(91 / 100)


def _sync_loop(host_work_us: int = 50) -> Loop:
    """Per 180-us step: launch K (100 us on the GPU), block in cudaStreamSynchronize until K is done (+4 us),
    then preprocess on the host for ``host_work_us``."""
    lp = Loop()
    for s in range(N_STEPS):
        t0 = s * 180 * US
        lp.step(t0, t0 + 175 * US)
        lp.launch(t0, (t0 + 10 * US, t0 + 110 * US), name="gemm")
        lp.call(t0 + 6 * US, t0 + 114 * US, "cudaStreamSynchronize")
        lp.op(t0 + 120 * US, t0 + (120 + host_work_us) * US, "preprocess")
    return lp


def test_sync_loop_path_goes_through_the_sync_to_the_host_work() -> None:
    s = critical_paths(_sync_loop().timeline())
    per_step = {"kernel": 100 * US, "launch": 10 * US, "host": 66 * US, "sync": 4 * US}
    assert {k: v for k, v in s.ns_by_kind().items() if v} == {k: 4 * v for k, v in per_step.items()}
    assert s.top(("sync",)) == [("cudaStreamSynchronize", 4 * 4 * US, 4)]
    assert s.top(("host",))[0] == ("preprocess", 4 * 50 * US, 4)
    # 10 us more preprocessing in the same 66 us of host time: named time grows, unnamed time shrinks
    more = critical_paths(_sync_loop(host_work_us=60).timeline())
    assert more.ns_by_kind() == s.ns_by_kind()
    assert more.top(("host",)) == [("preprocess", 4 * 60 * US, 4), ("(no operator or range)", 4 * 6 * US, 4)]


def test_an_async_copy_waited_only_if_its_own_copy_finished_inside_it() -> None:
    """A kernel that happens to end during a non-blocking cudaMemcpyAsync did not release it; a copy from
    pageable memory, whose own transfer ends before the call returns, did."""
    from kprof.diagnose.critical_path import _waiting_calls

    lp = _sync_loop()
    t0 = 0
    lp.corr += 1
    lp.api.append((t0 + 105 * US, t0 + 112 * US, 0, lp.corr, "cudaMemcpyAsync"))  # K ends at 110 inside it
    lp.c.append((t0 + 130 * US, t0 + 131 * US, 9, lp.corr))  # its own copy runs later: it did not block
    lp.corr += 1
    lp.api.append((t0 + 140 * US, t0 + 150 * US, 0, lp.corr, "cudaMemcpyAsync"))
    lp.c.append((t0 + 141 * US, t0 + 149 * US, 9, lp.corr))  # done before the call returned: it blocked
    tl = lp.timeline()
    waiting = _waiting_calls(tl)
    names = [tl.api.names[i] for i in tl.api.name_id]
    got = {
        (int(tl.api.start_ns[i]) // US, names[i]): bool(waiting[i])
        for i in range(len(names))
        if tl.api.start_ns[i] < 180 * US
    }
    assert got == {(0, "cudaLaunchKernel"): False, (6, "cudaStreamSynchronize"): True,
                   (105, "cudaMemcpyAsync"): False, (140, "cudaMemcpyAsync"): True}  # fmt: skip


def test_the_path_follows_a_hand_off_between_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The autograd thread wakes after the main thread's forward pass: the forward pass is on the path."""
    lp = Loop()
    for s in range(N_STEPS):
        t0 = s * 4000 * US
        lp.step(t0, t0 + 3500 * US)
        lp.op(t0, t0 + 3000 * US, "forward")
        lp.op(t0 + 3100 * US, t0 + 3200 * US, "backward", thread=1)
        lp.launch(t0 + 3150 * US, (t0 + 3200 * US, t0 + 3300 * US), thread=1, name="bwd")
    s = critical_paths(lp.timeline())
    assert s.top(("host",), by="name")[0] == ("forward", 4 * 3000 * US, 4)
    assert ("backward", 4 * 50 * US, 4) in s.top(("host",))  # from the wake to the launch call
    assert 3000 * US > th.THREAD_HANDOFF_MIN_NS  # the silence of the autograd thread is a hand-off
    # without following hand-offs the path would stay on the silent autograd thread and miss the forward pass
    monkeypatch.setattr(th, "THREAD_HANDOFF_MIN_NS", 10**15)
    assert "forward" not in {n for n, _, _ in critical_paths(lp.timeline()).top(("host",))}


def test_without_steps_the_window_path_covers_the_capture() -> None:
    lp = _sync_loop()
    lp.steps.clear()
    tl = lp.timeline()
    assert critical_paths(tl).paths == ()
    (p,) = window_path(tl).paths
    assert p.start_ns == tl.span_ns()[0] and p.end_ns == 4 * 180 * US + 110 * US
    assert sum(s.duration_ns for s in p.segments) == p.duration_ns


def test_agreement_is_one_minus_total_variation() -> None:
    assert agreement({"a": 0.5, "b": 0.5}, {"a": 0.5, "b": 0.5}) == 1.0
    assert agreement({"a": 1.0}, {"b": 1.0}) == 0.0
    assert set(HTA_KIND) == set(KINDS)


# ----------------------------------------------------------------------------- samples
TIMELINES = sorted([*SAMPLES.glob("timeline/*.sqlite"), *SAMPLES.glob("timeline/*.sqlite.gz"), *SAMPLES.glob("timeline/*.json.gz"),
                    *SAMPLES.glob("multirank/*.sqlite"), *SAMPLES.glob("multirank/*.json.gz")])  # fmt: skip


@pytest.mark.skipif(not TIMELINES, reason="no timeline samples")
@pytest.mark.parametrize("src", TIMELINES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_paths_tile_the_steps_that_compare_measures(src: Path) -> None:
    tl = kprof.load(src)
    s = critical_paths(tl)
    st = step_times(tl)
    assert s.paths, s.notes
    for p in s.paths:
        assert p.segments[0].start_ns == p.start_ns and p.segments[-1].end_ns == p.end_ns
        assert all(a.end_ns == b.start_ns for a, b in zip(p.segments, p.segments[1:], strict=False))
        assert all(seg.kind in KINDS and seg.duration_ns > 0 for seg in p.segments)
    # each path is one of the step durations kprof compare measures (consecutive linked steps)
    durations = set(np.round(st.durations_ns).astype(np.int64).tolist())
    assert all(p.duration_ns in durations for p in s.paths)


@pytest.mark.parametrize(
    ("name", "kinds", "least"),
    [
        ("gpu_bound", ("kernel", "memset"), 0.95),
        ("host_launch_bound", ("host", "host_api"), 0.95),
        ("pair_graph_before", ("host", "host_api"), 0.95),
        ("pair_graph_after", ("kernel", "graph", "copy", "gpu_gap"), 0.95),
        ("transfer_bound", ("copy",), 0.80),
    ],
)
@pytest.mark.parametrize("ext", ["sqlite", "json.gz"])
def test_sample_paths_say_what_limits_each_sample(
    name: str, kinds: tuple[str, ...], least: float, ext: str
) -> None:
    src = SAMPLES / "timeline" / f"{name}.{ext}"
    if not src.is_file():
        pytest.skip(f"{src.name} not in data/samples")
    share = critical_paths(kprof.load(src)).share_by_kind()
    assert sum(share[k] for k in kinds) >= least, share


@pytest.mark.parametrize("ext", ["sqlite", "json.gz"])
def test_the_sync_bound_sample_path_passes_through_every_item_sync(ext: str) -> None:
    src = SAMPLES / "timeline" / f"sync_bound.{ext}"
    if not src.is_file():
        pytest.skip(f"{src.name} not in data/samples")
    s = critical_paths(kprof.load(src))
    syncs = s.top(("sync",))
    assert syncs and all(n.startswith("cudaStreamSynchronize") for n, _, _ in syncs)
    # one sync per .item(): 32 per step in this workload (160 in the 5 steady steps)
    assert sum(c for _, _, c in syncs) == 32 * len(s.paths)
    if ext == "json.gz":  # the operator that blocked: .item() -> aten::_local_scalar_dense
        assert syncs[0][0] == "cudaStreamSynchronize in aten::_local_scalar_dense"
    share = s.share_by_kind()
    assert (
        share["kernel"] + share["copy"] < 0.8
    )  # the GPU alone does not set the step: the host turnaround does


def test_the_dataloader_starved_corpus_trace_names_the_loader() -> None:
    src = REPO.parent / "shared" / "corpus" / "kineto" / "resnet50_num_workers_0.worker0.pt.trace.json.gz"
    if not src.is_file():
        pytest.skip(f"{src} not present")
    s = critical_paths(kprof.load(src))
    scope, ns, _ = s.top(("host",), by="scope")[0]
    assert scope.startswith("enumerate(DataLoader)") and ns / s.total_ns > 0.15


def test_path_sentences_name_the_syncs_and_the_host_work_on_the_path() -> None:
    from kprof.diagnose.critical_path import path_sentence

    sync = critical_paths(_sync_loop().timeline())
    text = path_sentence(sync, "sync_bound")
    assert text is not None
    assert "waits for the GPU once (cudaStreamSynchronize)" in text
    assert "GPU work on the path holds 55.6% of the step" in text  # 100 of 180 us
    assert "turnaround after each wait (waking, issuing the next work) 44.4%" in text  # 4 + 66 + 10 us
    hand = Loop()
    for s in range(N_STEPS):
        t0 = s * 4000 * US
        hand.step(t0, t0 + 3500 * US)
        hand.op(t0, t0 + 3000 * US, "enumerate(DataLoader)#__next__")
        hand.launch(t0 + 3150 * US, (t0 + 3200 * US, t0 + 3300 * US), name="k")
    text = path_sentence(critical_paths(hand.timeline()), "host_compute_bound")
    assert text is not None and "enumerate(DataLoader)#__next__ 75%" in text  # 3 of 4 ms
    assert path_sentence(sync, "gpu_bound") is None


def test_a_kernel_held_by_its_launch_latency_puts_the_host_on_the_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Launches every 10 us, each kernel starting 6 us after its call: after a 9-us kernel the next launch
    was issued while that kernel still ran (HTA's rule would call it kernel-kernel), yet it could not start
    before its call plus the capture's 6-us launch latency: the host's pace sets the step."""
    lp = Loop()
    for s in range(N_STEPS):
        t0 = s * 100 * US
        lp.step(t0, t0 + 99 * US)
        for j in range(10):
            at = t0 + 10 * j * US
            lp.launch(at, (at + 6 * US, at + 6 * US + (9 if j % 2 == 0 else 2) * US))
    tl = lp.timeline()
    share = critical_paths(tl).share_by_kind()
    assert share["host"] + share["host_api"] + share["launch"] > 0.9, share
    monkeypatch.setattr(th, "LAUNCH_LATENCY_MIN_SAMPLES", 10**9)  # no latency: the launch call's start alone
    assert critical_paths(tl).share_by_kind()["gpu_gap"] > 0, "the rule is what moved the path to the host"


@pytest.mark.parametrize("ext", ["sqlite", "json.gz"])
def test_a_sync_bound_diagnosis_names_the_syncs_on_the_critical_path(ext: str) -> None:
    src = SAMPLES / "timeline" / f"sync_bound.{ext}"
    if not src.is_file():
        pytest.skip(f"{src.name} not in data/samples")
    d = kprof.diagnose(src)[0]
    assert d.bottleneck is not None and d.bottleneck.value == "sync_bound"
    assert "On the critical path of the " in d.mechanism and "cudaStreamSynchronize" in d.mechanism
    if ext == "json.gz":
        assert "(cudaStreamSynchronize in aten::_local_scalar_dense)" in d.mechanism
    # the same diagnosis from the timeline diagnosis alone does not have it: the path adds it
    from kprof.diagnose.timeline import diagnose_timeline

    assert "On the critical path" not in diagnose_timeline(kprof.load(src))[0].mechanism


def test_a_host_compute_bound_diagnosis_names_the_host_work_on_the_critical_path() -> None:
    from kprof.model import Bottleneck

    if "HOST_COMPUTE_BOUND" not in Bottleneck.__members__:
        pytest.skip("host_compute_bound is not in the vocabulary yet (issue 13)")
    src = SAMPLES / "timeline" / "host_compute_bound.json.gz"
    if not src.is_file():
        pytest.skip(f"{src.name} not in data/samples")
    d = kprof.diagnose(src)[0]
    assert d.bottleneck is Bottleneck.HOST_COMPUTE_BOUND
    assert "host work outside CUDA calls holds" in d.mechanism
    assert (
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
        in d.mechanism.split("On the critical path")[1]
    )
