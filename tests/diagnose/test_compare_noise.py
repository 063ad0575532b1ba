"""The noise of a timeline comparison (issue 30): the captures' own standard errors (a bootstrap of each median step)
plus a process-to-process term per side (its host-paced share x HOST_PACED_PROCESS_SD), never below the GPU floor;
the constants recomputed from the measurements they cite; verdicts, intervals and the repeat-the-captures advice on
synthetic pairs of each class."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from kprof import thresholds as th
from kprof.api import compare
from kprof.comparison_model import ComparisonVerdict
from kprof.diagnose.compare import step_times
from kprof.diagnose.compare.verdicts import _median_rel_se, speedup_interval, step_noise
from kprof.diagnose.timeline import timeline_metrics
from kprof.io import load
from tests.conftest import REPO

from .test_compare import _synthetic_timeline

BLIND9 = REPO / "data" / "validation" / "blind9"
TL = REPO / "data" / "samples" / "timeline"

# ============================================================================ the constants, from their measurements

NSYS_THREE_PROCESSES = {
    # median step (ms) of three processes each under nsys, as quoted in thresholds.py; GPU work per step from the
    # sample captured of the same workload
    "host_launch_bound.sqlite": (3.01, 3.07, 4.98),
    "pair_graph_before.sqlite": (0.98, 1.20, 1.29),
    "sync_bound.sqlite": (3.06, 3.15, 3.44),
}
PLAIN_PROGRAMS = {
    # blind9 plain_runner label -> the capture that gives its GPU work per step
    "p1_before": "p1_sync_pairs_before.sqlite.gz",
    "p4_after": "p4_d2h_pageable_after.sqlite.gz",
    "s1_as_captured": "s1_item_branch.sqlite.gz",
}


def _gpu_ms_per_step(path) -> float:
    tl = load(path)
    m = timeline_metrics(tl)
    return m["gpu_busy_fraction"] * float(np.median(step_times(tl).durations_ns)) / 1e6


def _host_paced_sd(values_ms, gpu_ms: float) -> tuple[float, int]:
    """(sd of ln(median step) over processes / host-paced share, degrees of freedom)."""
    v = np.asarray(values_ms, np.float64)
    share = 1.0 - gpu_ms / float(np.median(v))
    return float(np.std(np.log(v), ddof=1)) / share, len(v) - 1


def _measured_runs() -> list[tuple[str, float, int]]:
    timings = BLIND9 / "plain_timings.txt"
    if not timings.exists() or not (TL / "sync_bound.sqlite").exists():
        pytest.skip("blind9 plain timings or the timeline samples not in this checkout")
    calls = timings.read_text().split("######## ")[1:3]  # call 2 (primary), call 1
    runs = []
    for call in calls:
        for label, capture in PLAIN_PROGRAMS.items():
            if label == "s1_as_captured" and call.startswith("call 1"):
                continue  # call 1 ran another S1 program (1024 rows), not the one captured
            values = [float(x) for x in re.findall(rf"r\d+ {label}\s+([\d.]+) ms/step", call)]
            assert len(values) in (3, 5), (label, values)
            sd, df = _host_paced_sd(values, _gpu_ms_per_step(BLIND9 / capture))
            runs.append((f"{call[:6]} {label}", sd, df))
    for name, values in NSYS_THREE_PROCESSES.items():
        sd, df = _host_paced_sd(values, _gpu_ms_per_step(TL / name))
        runs.append((f"nsys {name}", sd, df))
    return runs


def test_host_paced_process_sd_is_the_pooled_measured_spread() -> None:
    """HOST_PACED_PROCESS_SD = 16.3% pooled over 8 program runs (24 degrees of freedom), rounded up to 0.17."""
    runs = _measured_runs()
    assert len(runs) == 8
    df = sum(d for _, _, d in runs)
    pooled = math.sqrt(sum(d * sd**2 for _, sd, d in runs) / df)
    assert df == 24
    assert pooled == pytest.approx(0.163, abs=0.002)
    assert pooled <= th.HOST_PACED_PROCESS_SD <= pooled + 0.01


def test_host_paced_worst_spread_is_the_widest_measured() -> None:
    """host_launch_bound's host-paced part moved 1.72x between two of its three processes."""
    if not (TL / "host_launch_bound.sqlite").exists():
        pytest.skip("timeline samples not in this checkout")
    g = _gpu_ms_per_step(TL / "host_launch_bound.sqlite")
    lo, hi = (
        min(NSYS_THREE_PROCESSES["host_launch_bound.sqlite"]),
        max(NSYS_THREE_PROCESSES["host_launch_bound.sqlite"]),
    )
    assert (hi - g) / (lo - g) == pytest.approx(1 + th.HOST_PACED_WORST_SPREAD, abs=0.01)
    # a fully host-bound null pair at that spread stays unchanged under the process term
    assert th.TIMELINE_NOISE_Z * th.HOST_PACED_PROCESS_SD * math.hypot(0.91, 0.91) > hi / lo - 1


# ============================================================================ the captures' own standard error


def test_bootstrap_standard_error_of_a_median_is_normal_theory_for_a_normal_spread() -> None:
    """On average over samples, 1.2533 sigma / sqrt(n) (one sample's bootstrap of a median varies 0.7-1.3x of it:
    the median's bootstrap is coarse, which is why the threshold takes 3 of them)."""
    ratios = []
    for seed in range(8):
        x = 100.0 * (1 + 0.05 * np.random.default_rng(seed).standard_normal(400))
        se = _median_rel_se(x)
        assert se == _median_rel_se(x)  # seeded: one interval per pair of files
        ratios.append(se / (math.sqrt(math.pi / 2) * 0.05 / math.sqrt(400)))
    assert float(np.mean(ratios)) == pytest.approx(1.0, abs=0.1)
    assert min(ratios) > 0.6 and max(ratios) < 1.4


def test_bootstrap_widens_for_two_kinds_of_step() -> None:
    """Steps that alternate between two durations: the median can land on either kind, so its error is far wider
    than a robust sigma around one of them would say."""
    x = np.resize([100.0, 100.5, 130.0, 130.5], 60)
    se = _median_rel_se(x)
    assert se is not None and se > 0.05
    assert _median_rel_se(np.full(60, 100.0)) == 0.0
    assert _median_rel_se(np.array([100.0])) is None


# ============================================================================ the combined noise and the verdicts


def test_step_noise_adds_both_terms_in_quadrature_and_keeps_the_floor() -> None:
    b, a = np.full(100, 100.0), np.full(100, 80.0)
    n = step_noise(b, a, 0.38, 0.03)
    assert n.threshold == pytest.approx(3 * 0.17 * math.hypot(0.38, 0.03))
    assert n.capture == 0.0 and n.process == pytest.approx(n.threshold)
    gpu = step_noise(b, a, 0.01, 0.01)
    assert gpu.threshold == th.TIMELINE_MIN_NOISE and "the floor" in gpu.text
    assert speedup_interval(1.38, n.threshold) == pytest.approx(
        (1.38 / (1 + n.threshold), 1.38 * (1 + n.threshold))
    )


@pytest.mark.parametrize(
    "before, after, verdict, caveat, repeat",
    [
        # beyond the interval and the widest process spread
        ((100, 0.62), (100 / 1.30, 0.95), ComparisonVerdict.IMPROVED, False, False),
        # beyond the interval, within the widest spread: improved, with the caveat and the repeat count
        ((100, 0.62), (100 / 1.22, 0.95), ComparisonVerdict.IMPROVED, True, True),
        # within the interval: unchanged, and how many captures would resolve it
        ((100, 0.62), (100 / 1.10, 0.95), ComparisonVerdict.UNCHANGED, False, True),
        # blind9's P4 class: a GPU-bound loop that starts blocking every step, 0.77x
        ((100, 0.95), (130, 0.73), ComparisonVerdict.REGRESSED, False, False),
    ],
)
def test_a_partly_host_limited_pair(before, after, verdict, caveat: bool, repeat: bool) -> None:
    """(step us, GPU-busy fraction) on each side; the rest of each step waits on the host. P1's class: 62% busy before,
    95% after, so the process term is 3 x 0.17 x hypot(0.38, 0.05) = +-19.6%: a 1.3x gain is improved (the +-70%
    floor called it unchanged), a 1.1x one is not resolved by one pair and gets the number of captures that would."""
    b = _synthetic_timeline([before[0] * 1000] * 40, before[1], source="b.sqlite")
    a = _synthetic_timeline([int(after[0] * 1000)] * 40, after[1], source="a.sqlite")
    (c,) = compare(b, a)
    assert c.verdict is verdict
    shares = (1 - before[1], 1 - after[1])
    proc = th.HOST_PACED_PROCESS_SD * math.hypot(*shares)
    assert c.noise_threshold == pytest.approx(3 * proc, rel=0.05)
    lo, hi = c.speedup_interval
    assert (lo > 1 or hi < 1) == (verdict is not ComparisonVerdict.UNCHANGED)
    assert any("differed by up to" in n for n in c.notes) is caveat
    assert bool(c.next_step) is repeat
    if repeat:
        n = int(re.search(r"Capture each side (\d+) times", c.next_step)[1])
        # with n captures per side the process term shrinks by sqrt(n): the least n that resolves the change
        assert 3 * proc / math.sqrt(n) < abs(math.log(c.speedup))
        assert n == 3 or 3 * proc / math.sqrt(n - 1) >= abs(math.log(c.speedup))


def test_a_gpu_limited_pair_keeps_the_two_percent_floor() -> None:
    b = _synthetic_timeline([100_000] * 40, 0.97, source="b.sqlite")
    a = _synthetic_timeline([97_000] * 40, 0.97, source="a.sqlite")
    (c,) = compare(b, a)
    assert c.noise_threshold == th.TIMELINE_MIN_NOISE and c.verdict is ComparisonVerdict.IMPROVED
    assert not c.next_step and not c.notes
