"""One-time work in a timeline: start-up, teardown and JIT compilation, and whether what follows repeats.

docs/rules.md: *the steady state leads*. A capture of a whole process holds start-up (context
creation, module loading, library handles, compilation, the first iteration) and teardown
(module unloading, context destruction, the free storm at exit); when repeated work follows
start-up, the first diagnosis is that steady state's, and start-up is a finding with its share.
``startup_bound`` leads only when nothing after start-up is repeated work.

This module holds the pure, array-level parts of that judgement; :mod:`kprof.diagnose.timeline`
assembles them with the GPU work and the iterations it finds:

- :func:`is_teardown_api`: API calls that only end a process's use of CUDA (``cuModuleUnload``,
  ``cudaDeviceReset``, ``cuCtxDestroy``, the frees and unmaps of a free storm).
- :func:`is_jit_name`: NVTX ranges and host operators that compile or autotune code at run time
  (nvFuser ``compileFusion``, NVRTC, TorchInductor/Triton compilation and autotuning).
- :func:`repeats`: whether a sequence of GPU work labels is a run of the same work (a loop):
  most launches are of work that occurs in each third of the sequence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from kprof import thresholds as th
from kprof.timeline_model import api_base_name

_TEARDOWN_PREFIXES = (
    "cumoduleunload",
    "culibraryunload",
    "cudadevicereset",
    "cuctxdestroy",
    "cudeviceprimaryctxrelease",
    "cudeviceprimaryctxreset",
    "cudastreamdestroy",
    "custreamdestroy",
    "cudaeventdestroy",
    "cueventdestroy",
    "cudagraphexecdestroy",
    "cugraphexecdestroy",
    "cudagraphdestroy",
    "cugraphdestroy",
    "cudafree",
    "cumemfree",
    "cumemunmap",
    "cumemrelease",
    "cumemaddressfree",
    "cudahostunregister",
    "cumemhostunregister",
    "cudamempooldestroy",
    "cumempooldestroy",
    "cuarraydestroy",
    "culinkdestroy",
)


def is_teardown_api(name: str) -> bool:
    """Whether a CUDA API call releases what start-up or the run created (version suffixes ignored).

    Stream-ordered frees (``cudaFreeAsync``) belong to a running program and are not teardown.

    Examples
    --------
    >>> is_teardown_api("cuModuleUnload"), is_teardown_api("cudaFree_v3020"), is_teardown_api("cudaFreeAsync")
    (True, True, False)
    >>> is_teardown_api("cudaLaunchKernel_v7000")
    False
    """
    low = api_base_name(name).lower()
    return low.startswith(_TEARDOWN_PREFIXES) and "async" not in low


def teardown_mask(names: tuple[str, ...] | list[str], name_id: np.ndarray) -> np.ndarray:
    """Per API call, whether it is teardown (:func:`is_teardown_api`), one test per distinct name."""
    lut = np.array([is_teardown_api(n) for n in names] or [False], bool)
    return lut[name_id] if len(name_id) else np.zeros(0, bool)


JIT_NAME = re.compile(r"compil(?:e|ing|ation)(?!d)|autotun|nvrtc|codegen", re.IGNORECASE)
"""Names of ranges and host operators that compile or autotune code at run time: nvFuser's
``FusionExecutor::compileFusion``, ``nvrtcCompileProgram``, TorchInductor's ``compile_fx_inner`` and
Dynamo's ``_compile``, Triton's ``CachingAutotuner.benchmark_all_configs``. Not ``Torch-Compiled
Region`` or ``CompiledFunction``: those *run* compiled code (hence the ``(?!d)``)."""


def is_jit_name(name: str) -> bool:
    """Whether a range or operator name marks run-time compilation or autotuning (one-time work).

    Examples
    --------
    >>> is_jit_name("FusionExecutor::compileFusion"), is_jit_name("CachingAutotuner.benchmark_all_configs")
    (True, True)
    >>> is_jit_name("Torch-Compiled Region: 0/0"), is_jit_name("CompiledFunction")
    (False, False)
    """
    return bool(JIT_NAME.search(name))


def jit_mask(names: tuple[str, ...] | list[str], name_id: np.ndarray) -> np.ndarray:
    """Per row, whether its name is run-time compilation (:func:`is_jit_name`), one test per name."""
    lut = np.array([is_jit_name(n) for n in names] or [False], bool)
    return lut[name_id] if len(name_id) else np.zeros(0, bool)


def repeats(labels: Iterable[np.ndarray], count: int, min_share: float) -> tuple[bool, float]:
    """Whether a stream of GPU-work labels (kernel names, graph ids, copy directions) is a run of the same work.

    ``labels`` yields the labels of the work in start order, a chunk at a time, ``count`` labels
    in all. A loop of at least three iterations puts at least one whole iteration into each
    third of its launches (a window one iteration long holds every label of the iteration, even
    when it starts mid-iteration), so every label of the loop occurs in all three thirds; one
    pass through a program (a single forward, a one-launch tool, two passes) runs different work
    in its first and last thirds. Returns ``(repeated, share)``: share is the fraction of the
    launches whose label occurs in every third, and ``repeated`` needs at least
    :data:`~kprof.thresholds.MIN_ITERATIONS_FOR_WARMUP_DROP` launches and a share of at least
    ``min_share`` (the timeline rule passes :data:`~kprof.thresholds.REPEATED_WORK_SHARE`).

    Examples
    --------
    >>> repeats([np.array([1, 2, 3] * 4)], 12, 0.75)
    (True, 1.0)
    >>> repeats([np.array([1, 2, 3, 4, 5, 6])], 6, 0.75)
    (False, 0.0)
    """
    if count < th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        return False, 0.0
    third = count // 3
    bounds = (third, count - third, count)
    per_third: list[dict[int, int]] = [{}, {}, {}]
    seen = 0
    for ch in labels:
        n = len(ch)
        for k, (a, b) in enumerate(zip((0, *bounds[:2]), bounds, strict=True)):
            lo, hi = max(a - seen, 0), min(b - seen, n)
            if lo < hi:
                u, c = np.unique(ch[lo:hi], return_counts=True)
                d = per_third[k]
                for x, y in zip(u.tolist(), c.tolist(), strict=True):
                    d[x] = d.get(x, 0) + y
        seen += n
    common = set(per_third[0]) & set(per_third[1]) & set(per_third[2])
    total = sum(sum(d.values()) for d in per_third)
    if not total or not common:
        return False, 0.0
    share = round(sum(d[x] for d in per_third for x in common) / total, 6)
    return share >= min_share, share


def loop_start(labels: np.ndarray, min_share: float) -> tuple[int, float] | None:
    """Where the last run of repeated work in a label sequence begins: ``(index, share)``, or None.

    The sequence is the GPU work after start-up, in start order. When all of it repeats
    (:func:`repeats`), the run begins at 0. Otherwise the earliest suffix that repeats is
    searched (suffixes of half, a quarter, ... of the work until one repeats, then a binary
    search between that one and the next longer), since one-time work before the loop (a
    warm-up pass, autotuning that benchmarks candidate configurations) makes a longer suffix
    fail. The run then starts after the last launch in its first third whose label does not
    occur in its middle and last thirds: what is left of the one-time work (an autotuner's last
    benchmark and cache-flush kernels) is not the loop.

    Examples
    --------
    >>> warmup = np.array([7, 8, 9, 7, 8, 9, 5, 6, 5, 6])
    >>> loop_start(np.concatenate([warmup, np.tile([1, 2], 20)]), 0.75)
    (10, 1.0)
    >>> loop_start(np.arange(20), 0.75) is None
    True
    """
    n = len(labels)
    ok, share = repeats([labels], n, min_share)
    start = 0
    if not ok:
        longer, found = 0, -1
        length = n // 2
        while length >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
            if repeats([labels[n - length :]], length, min_share)[0]:
                found = n - length
                break
            longer = n - length
            length //= 2
        if found < 0:
            return None
        a, b = longer, found  # labels[a:] does not repeat, labels[b:] does
        while b - a > 1:
            m = (a + b) // 2
            if repeats([labels[m:]], n - m, min_share)[0]:
                b = m
            else:
                a = m
        start = b
    run = labels[start:]
    third = len(run) // 3
    if third:
        loop = np.intersect1d(run[third : 2 * third], run[2 * third :])
        odd = np.flatnonzero(~np.isin(run[:third], loop))
        if len(odd):
            start += int(odd[-1]) + 1
    ok, share = repeats([labels[start:]], n - start, min_share)
    return (start, share) if ok else None


PERIOD_CANDIDATES = 32
"""Periods tried by :func:`loop_iterations`: the spacings to the last 1..32 earlier occurrences of the
loop's rarest label (a label launched up to 32 times per iteration). Each try is one vectorized compare of
the sequence with itself shifted, so a loop of ten million launches costs a few seconds at most."""


def loop_iterations(labels: np.ndarray, min_share: float) -> tuple[np.ndarray, int] | None:
    """Where each iteration of a run of repeated GPU work begins: ``(indices into labels, period)``, or None.

    ``labels`` is a run that :func:`repeats` (the loop, from :func:`loop_start` on). A loop launches
    the same sequence every iteration, so the sequence equals itself shifted by the period. The
    candidate periods are the spacings between the last occurrence of the loop's rarest label (the
    label, present in every third of the run, with the fewest launches) and its earlier occurrences;
    the period is the smallest candidate at which at least ``min_share`` of the run's last two
    thirds (the first may hold warm-up work that the later iterations do not repeat) equals itself
    shifted by it. An iteration then begins at every ``m``-th occurrence of the rarest label, where
    ``m`` is how often it is launched per period, counted back from its last occurrence (so that
    extra launches of it in the warm-up shift only the warm-up's boundaries). A sequence with a
    shorter period than the program's loop (the same kernels over three identical layers) yields
    that shorter period: the label sequence cannot tell them apart, and either is a unit of
    repeated work. None when no candidate matches or fewer than
    :data:`~kprof.thresholds.MIN_ITERATIONS_FOR_WARMUP_DROP` iterations result.

    Examples
    --------
    >>> run = np.array([1, 2, 3, 2] * 5)
    >>> idx, period = loop_iterations(run, 0.75)
    >>> idx.tolist(), period
    ([0, 4, 8, 12, 16], 4)
    >>> loop_iterations(np.arange(12), 0.75) is None
    True
    """
    n = len(labels)
    if n < th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        return None
    third = n // 3
    if third == 0:
        return None
    common = np.intersect1d(np.intersect1d(labels[:third], labels[third : 2 * third]), labels[2 * third :])
    if len(common) == 0:
        return None
    vals, counts = np.unique(labels, return_counts=True)
    keep = np.isin(vals, common)
    vals, counts = vals[keep], counts[keep]
    rare = vals[int(np.argmin(counts))]  # ties: the smallest label, deterministic
    pos = np.flatnonzero(labels == rare)
    c = len(pos)
    tail = labels[third:]
    for m in range(1, min(c - 1, PERIOD_CANDIDATES) + 1):
        p = int(pos[-1] - pos[-1 - m])
        if p <= 0 or 3 * p > n:
            break
        if len(tail) <= p:
            break
        match = np.count_nonzero(tail[p:] == tail[:-p]) / (len(tail) - p)
        if match >= min_share:
            starts = pos[(c - 1) % m :: m]
            if len(starts) < th.MIN_ITERATIONS_FOR_WARMUP_DROP:
                return None
            return starts, p
    return None


__all__ = [
    "JIT_NAME",
    "PERIOD_CANDIDATES",
    "is_jit_name",
    "is_teardown_api",
    "jit_mask",
    "loop_iterations",
    "loop_start",
    "repeats",
    "teardown_mask",
]
