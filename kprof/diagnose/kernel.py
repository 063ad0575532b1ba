"""Kernel stage: why one kernel launch is slow, from an Nsight Compute report.

The order docs/rules.md sets out:

1. **SpeedOfLight.** Which unit is closest to its peak: DRAM, L2, L1/shared, the tensor or
   FP32/FP64 pipes, or instruction issue; below 60% everywhere the kernel is latency bound.
2. **Roofline** (:mod:`kprof.diagnose.roofline`): achieved FLOP/s and bytes/s against the
   ceilings the report itself measured. A kernel whose limiting unit does *useful* work at
   >= :data:`~kprof.thresholds.HEALTHY_FRACTION_OF_PEAK` of its peak is ``healthy``: the
   advice is to do less work, never to tune a counter.
3. **Mechanisms.** Each rule estimates how much of the kernel's time it would remove if
   fixed (``savings``) from the two or three metrics that establish it; the largest one that
   explains the gap becomes the primary bottleneck, the others are findings ranked by their
   share of the gap. Counters that explain nothing (a cuBLAS GEMM's 168 registers, low
   occupancy and bank conflicts while its tensor pipes are at their peak) are never findings.

No rule looks at a kernel's or a file's name. Durations from ncu are labelled "measured under
ncu"; with a ``timeline`` the duration of the matching kernel is taken from it.

Derived metric names used in :class:`~kprof.model.Expectation` (``derived:...``) are
computed by :func:`metric_value`, so a later ``compare`` can read them from the after report.
"""

from __future__ import annotations

import statistics
from typing import Any

from kprof.diagnose.localize import localized
from kprof.diagnose.validity import damaged_launch, set_aside
from kprof.facts.kernel import (
    UNDER_NCU,
    build_facts,
    dram_bytes,
    kernel_floor_ns,
    metric_value,
)
from kprof.facts.names import DERIVED, DURATION
from kprof.facts.stalls import stall_reasons
from kprof.facts.units import has_tensor_cores
from kprof.kernel_model import KernelLaunch, KernelProfile
from kprof.model import Diagnosis, Verdict
from kprof.rules.kernel import MECHANISMS
from kprof.rules.kernel.verdict import verdict


def diagnose_launch(
    k: KernelLaunch,
    *,
    duration_ns: float | None = None,
    source_format: str = "ncu-rep",
    cooperative: bool = False,
    source: str | None = None,
    program: str | None = None,
) -> Diagnosis:
    """Diagnose one kernel launch (see the module docstring for the order of the checks).

    Parameters
    ----------
    k
        The launch, from :func:`kprof.io.ncu.load_ncu_report` or :func:`kprof.io.ncu_csv.load_ncu_csv`.
    duration_ns
        The kernel's real duration from a timeline, if known; otherwise ncu's duration is used and
        labelled "measured under ncu".
    source_format
        The profile's format (``ncu-rep``, ``ncu-csv-raw``, ``ncu-csv-details``): a details-page CSV drops
        the memory tables and source counters, and the advice for missing data says so.
    cooperative
        True when the launch is cooperative (grid-synchronizing): ncu's kernel replay breaks those, so the
        commands use ``--replay-mode application``.
    source
        The report's path: the suggested commands write the next capture beside it and compare the two.
    program
        The profiled program's command line (``KernelProfile.program``), which those commands run; a
        placeholder is printed without it.

    Examples
    --------
    >>> from kprof.kernel_model import KernelLaunch, Metric
    >>> k = KernelLaunch(id=0, name="k", metrics={"gpu__time_duration.sum": Metric(1000.0, "ns")})
    >>> diagnose_launch(k).verdict.value
    'inconclusive'
    """
    if (damaged := damaged_launch(k)) is not None:  # no time, no SMs, no threads: no verdict
        return damaged
    args: dict[str, Any] = {
        "duration_ns": duration_ns,
        "source_format": source_format,
        "cooperative": cooperative,
        "source": source,
        "program": program,
    }
    odd = k.odd_values()
    if not odd:
        return _judge(k, **args)
    # Values out of range are set aside (as if not collected); the verdict is built on the rest, and only a value
    # it reads, and that ncu does not write itself, leaves no verdict.
    reads: set[str] = set()
    d = _judge(k.reading(reads, without=[o.metric for o in odd]), **args)
    return set_aside(k, d, odd, reads)


@localized
def _judge(
    k: KernelLaunch,
    *,
    duration_ns: float | None,
    source_format: str,
    cooperative: bool,
    source: str | None,
    program: str | None,
) -> Diagnosis:
    label = "timeline" if duration_ns is not None else UNDER_NCU
    duration = duration_ns if duration_ns is not None else k.value(DURATION)
    f = build_facts(
        k,
        duration,
        label,
        source_format=source_format,
        cooperative=cooperative,
        source=source,
        program=program,
    )
    found = [m for m in (rule(f) for rule in MECHANISMS) if m is not None]
    return verdict(f, found)


# ------------------------------------------------------------------------------------ timeline
def _timeline_matches(timeline: Any, k: KernelLaunch) -> tuple[list[float], bool]:
    """Durations (ns) of the timeline's kernels with this launch's name, and whether any was cooperative.

    Reads :class:`kprof.timeline_model.KernelTable` columns (``start_ns``, ``end_ns``, ``name_id``,
    ``names``, ``short_names``, ``launch_type``); anything else yields no match.
    """
    table = getattr(timeline, "kernels", None)
    names = tuple(getattr(table, "names", ()) or ())
    shorts = tuple(getattr(table, "short_names", ()) or ())
    ids = getattr(table, "name_id", None)
    if table is None or ids is None or not names:
        return [], False
    wanted = {n for n in (k.demangled_name, k.mangled_name) if n}
    hit_ids = {
        i for i in range(len(names)) if names[i] in wanted or (i < len(shorts) and shorts[i] == k.name)
    }
    if not hit_ids:
        return [], False
    rows = [r for r in range(len(ids)) if int(ids[r]) in hit_ids]
    starts, ends = table.start_ns, table.end_ns
    durations = [float(ends[r] - starts[r]) for r in rows]
    lt = getattr(table, "launch_type", None)
    coop = lt is not None and any(int(lt[r]) in (2, 3) for r in rows)
    return durations, coop


def diagnose_kernels(profile: KernelProfile, timeline: Any = None) -> list[Diagnosis]:
    """One :class:`~kprof.model.Diagnosis` per launch in ``profile``, most important first.

    Importance is the time a fix could win: the launch's duration times its gap to the roof.

    Parameters
    ----------
    profile
        A loaded ncu report or CSV export.
    timeline
        Optional :class:`~kprof.timeline_model.Timeline` of the same program: when a kernel of the
        same name is in it, its median duration replaces the one measured under ncu.

    Examples
    --------
    >>> import kprof
    >>> ds = diagnose_kernels(kprof.load("data/samples/ncu/small_grid.ncu-rep.gz"))  # doctest: +SKIP
    >>> ds[0].bottleneck.value  # doctest: +SKIP
    'small_grid'
    """
    scored: list[tuple[float, int, Diagnosis]] = []
    for k in profile.launches:
        tl, coop = _timeline_matches(timeline, k) if timeline is not None else ([], False)
        d = diagnose_launch(
            k,
            duration_ns=statistics.median(tl) if tl else None,
            source_format=profile.format,
            cooperative=coop,
            source=profile.source,
            program=profile.program or None,
        )
        dur = (statistics.median(tl) if tl else k.value(DURATION)) or 0.0
        weight = {Verdict.FIX: 1.0, Verdict.INCONCLUSIVE: 0.5, Verdict.HEALTHY: 0.1}[d.verdict]
        scored.append((dur * weight, k.id, d))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return [d for _, _, d in scored]


__all__ = [
    "DERIVED",
    "DURATION",
    "diagnose_kernels",
    "diagnose_launch",
    "dram_bytes",
    "has_tensor_cores",
    "kernel_floor_ns",
    "metric_value",
    "stall_reasons",
]
