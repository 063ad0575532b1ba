"""The classes of error the sixth blind gallery (data/validation/blind6) exposed at 1bbb8b4 (scored once: 7/8 kernels,
4/4 timelines, two of them through an acceptable id), on the workloads of their class and where the rules must stay
silent.

1. ``index_add_`` onto 64 rows (ATen's indexFuncLargeIndex, 2^27 RED.ADDs on 4,096 addresses) was called
   ``atomic_contention`` ("the atomics serialize on a few addresses") from the atomics' share of the requests alone:
   no L2 slice is hot (busiest slice 32.5% against 11% on average), the warps wait on their loads (long_scoreboard
   60%, drain/lg_throttle/membar ~0), and the labeller's control with spread indices is not faster (1,033 vs 961 us).
   Without a hot slice the rule's saving is now bounded by the warps' own waits on their atomics; a RED returns no
   value, so long_scoreboard is not such a wait. The kernel is latency-bound, and the sentence on occupancy names the
   grid (0.5 of a wave) instead of "blocks finish unevenly"; the PyTorch fix no longer says "too little work per
   launch" of a 949 us kernel.
2. ``torch.cuda.empty_cache()`` every step: the host time between kernels is cudaFree and cudaMalloc (37% and 29% of
   the steady state), and the fix was a CUDA graph. The launch-bound words now name the calls that take the host time
   and, when they are allocations, give the allocator's fix and expect those calls to leave the loop.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kprof.diagnose.kernel import diagnose_kernels
from kprof.diagnose.timeline import diagnose_timeline
from kprof.io import load
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric
from kprof.model import Bottleneck, Diagnosis, Verdict
from kprof.rules.kernel.atomics import atomic_wait_stalls
from tests.conftest import REPO

B = Bottleneck
DATA = REPO / "data"


def _path(rel: str) -> Path:
    p = DATA / rel
    if not p.exists():
        pytest.skip(f"{p} not in this checkout")
    if ".ncu-rep" in p.name:
        pytest.importorskip("ncu_report")
    return p


@cache
def _kernel(rel: str) -> Diagnosis:
    prof = load(_path(rel))
    assert isinstance(prof, KernelProfile)
    return diagnose_kernels(prof)[0]


@cache
def _timeline(rel: str) -> Diagnosis:
    return diagnose_timeline(load(_path(rel)))[0]


def _fired(d: Diagnosis) -> set[Bottleneck]:
    return ({d.bottleneck} if d.bottleneck else set()) | {f.bottleneck for f in d.findings}


# ----------------------------------------------------------------------------- 1. atomics the warps do not wait on


def test_reds_do_not_count_long_scoreboard_as_a_wait_on_the_atomics() -> None:
    red = KernelLaunch(
        id=0, name="k", metrics={"l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": Metric(64.0)}
    )
    atom = KernelLaunch(
        id=0,
        name="k",
        metrics={
            "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum": Metric(64.0),
            "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum": Metric(64.0),
        },
    )
    assert "long_scoreboard" not in atomic_wait_stalls(red)
    assert {"drain", "lg_throttle", "membar"} <= set(atomic_wait_stalls(red))
    assert "long_scoreboard" in atomic_wait_stalls(atom)  # an ATOM's result is waited for


def test_index_add_onto_few_rows_is_latency_bound_not_atomic_contention() -> None:
    d = _kernel("validation/blind6/lib_index_add_hot.raw.csv.gz")
    assert d.bottleneck == B.LATENCY_BOUND and d.verdict == Verdict.FIX, d.headline
    assert B.ATOMIC_CONTENTION not in _fired(d)
    assert "0.5 of one wave" in d.mechanism and "unevenly" not in d.mechanism
    assert "too little work per launch" not in (d.fix or "") and "torch.compile" in (d.fix or "")


@pytest.mark.parametrize(
    "rel",
    [
        "samples/ncu/atomic_contention.ncu-rep.gz",
        "validation/cuda/sum_atomic_each.ncu-rep.gz",
        "validation/final/class_sum_atomic.ncu-rep.gz",
    ],
)
def test_genuine_contention_still_fires(rel: str) -> None:
    """Must not change: a hot slice (10x the average and more) with the warps draining or throttled on the REDs."""
    assert _kernel(rel).bottleneck == B.ATOMIC_CONTENTION


def test_a_long_pytorch_kernel_is_not_told_it_does_too_little_work() -> None:
    d = _kernel("validation/lib/torch_sum_dim.raw.csv.gz")  # 149 us, latency-bound
    assert d.bottleneck == B.LATENCY_BOUND
    assert "too little work per launch" not in (d.fix or "")


# ----------------------------------------------------------------------------- 2. allocation churn between kernels


def test_empty_cache_every_step_names_the_allocations_and_the_allocator_fix() -> None:
    d = _timeline("validation/blind6/tl_alloc_churn.sqlite.gz")
    assert d.bottleneck in (B.HOST_LAUNCH_BOUND, B.SYNC_BOUND), d.headline
    assert "cudaFree" in d.headline and "cudaMalloc" in d.headline and "_v3020" not in d.headline
    assert "empty_cache" in (d.fix or "") and "CUDA graph" not in (d.fix or "")
    calls = next(e for e in d.expect if e.metric == "allocation_calls")
    assert calls.target == 0 and calls.value_now and calls.value_now >= 11  # one pair per step at least


def test_a_launch_bound_loop_without_allocations_keeps_the_graph_fix() -> None:
    d = _timeline("samples/timeline/host_launch_bound.sqlite")
    assert d.bottleneck == B.HOST_LAUNCH_BOUND
    assert "CUDA graph" in (d.fix or "") and "empty_cache" not in (d.fix or "")
    assert not any(e.metric == "allocation_calls" for e in d.expect)
