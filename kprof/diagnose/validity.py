"""Is the data possible at all? The first check of every diagnosis.

The loaders set aside rows whose times cannot be true and record them
(:attr:`kprof.timeline_model.Timeline.damaged`, :func:`kprof.timeline_model.set_aside_impossible`);
a kernel launch says which of its values no measurement can give
(:meth:`kprof.kernel_model.KernelLaunch.impossible_values`). This module decides when that damage
leaves nothing to judge, and then says so instead of a verdict: ``inconclusive``, headline "The data
is damaged", the damaged rows or values as evidence, and how to get a sound file.

A timeline is judged on what is left when the set-aside rows are few: they would have held less
than :data:`~kprof.thresholds.DAMAGED_TIME_SHARE` of the wall time and are fewer than
:data:`~kprof.thresholds.DAMAGED_ROW_SHARE` of their table. The diagnosis then names them in its
mechanism (the Timeline's notes). A kernel launch with any impossible value is not judged at all:
each rule reads the SpeedOfLight and launch values, and one impossible value among them (no SMs, a
negative utilisation) makes any verdict an artifact of the damage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kprof import thresholds as th
from kprof.kernel_model import KernelLaunch
from kprof.model import Confidence, Diagnosis, Evidence, Subject, SubjectKind, Verdict

if TYPE_CHECKING:  # imported where a timeline is judged: a kernel report's diagnosis needs no numpy
    from kprof.timeline_model import DamagedRows, Timeline

DAMAGED = "The data is damaged"
"""How every diagnosis of damaged data begins (:func:`is_damaged` looks for it)."""


def is_damaged(d: Diagnosis) -> bool:
    """True for a diagnosis this module made: no verdict, because the data cannot be true."""
    return d.verdict is Verdict.INCONCLUSIVE and d.bottleneck is None and d.headline.startswith(f"{DAMAGED}:")


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 else f"{x:.2%}"


def damaged_timeline(tl: Timeline) -> Diagnosis | None:
    """The diagnosis of a capture whose impossible rows are a real share of it, or None (judge it).

    Examples
    --------
    >>> damaged_timeline(Timeline(source="x.sqlite", format="nsys")) is None
    True
    """
    if not tl.damaged:
        return None
    from kprof.timeline_model import MEASURED_TABLES, TABLE_WORDS

    span = tl.span_ns()
    wall = span[1] - span[0] if span is not None else 0
    by_table: dict[str, list[DamagedRows]] = {}
    for d in tl.damaged:
        if d.table in MEASURED_TABLES:
            by_table.setdefault(d.table, []).append(d)
    heavy: list[tuple[str, int, int, float, list[DamagedRows]]] = []
    for table, ds in by_table.items():
        aside = [d for d in ds if not d.kept]
        count = sum(d.count for d in aside)
        total = len(getattr(tl, table)) + count
        est = sum(d.est_ns for d in aside)
        time_share = est / wall if wall > 0 else 0.0
        if any(d.kept for d in ds):
            count = total = len(getattr(tl, table))
        row_share = count / total if total else 0.0
        if row_share >= th.DAMAGED_ROW_SHARE or time_share >= th.DAMAGED_TIME_SHARE:
            heavy.append((table, count, total, time_share, ds))
    if not heavy:
        return None

    parts, evidence = [], []
    zero = [(table, total) for table, _c, total, _s, ds in heavy if all(d.kept for d in ds)]
    if zero:
        n = sum(total for _, total in zero)
        each = ", ".join(f"{total:,} {TABLE_WORDS[table]} rows" for table, total in zero)
        parts.append(f"every one of its {n:,} GPU operations ({each}) lasts 0 ns")
    for table, count, total, time_share, ds in heavy:
        word = TABLE_WORDS[table]
        aside = [d for d in ds if not d.kept]
        if aside:
            whys = "; ".join(dict.fromkeys(d.why for d in aside))
            parts.append(
                f"{count:,} of {total:,} {word} rows ({_pct(count / total)}) have times that cannot be true: {whys}"
            )
        for d in ds:
            evidence.append(
                Evidence(
                    name=f"{word} rows {'of 0 ns' if d.kept else 'set aside'}",
                    value=d.count,
                    unit="rows",
                    reference=f"of {d.total:,}: {d.why}; the first, {d.first}",
                    reference_value=d.total,
                )
            )
        if time_share > 0:
            evidence.append(
                Evidence(
                    name=f"time the set-aside {word} rows would hold",
                    value=round(sum(d.est_ns for d in aside) / 1e6, 3),
                    unit="ms",
                    reference=f"{_pct(time_share)} of the {wall / 1e6:,.3f} ms capture at their table's mean duration; "
                    f"a verdict needs under {th.DAMAGED_TIME_SHARE:.0%}",
                    reference_value=round(th.DAMAGED_TIME_SHARE * wall / 1e6, 3),
                )
            )
    all_zero = all(d.kept for *_, ds in heavy for d in ds)
    verdict_words = (
        "there is no GPU time to measure" if all_zero else "no verdict is built on the gaps they leave"
    )
    fresh = (
        "Export the report again (`nsys export --type sqlite --force-overwrite true -o fresh.sqlite REPORT.nsys-rep`) "
        "or capture again"
        if tl.format == "nsys"
        else "Capture the trace again (torch.profiler with ProfilerActivity.CPU and ProfilerActivity.CUDA), or take "
        "the original file if this one was edited or converted"
    )
    return Diagnosis(
        subject=Subject(kind=SubjectKind.CAPTURE, name=tl.source.rsplit("/", 1)[-1], device=tl.gpu_name()),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"{DAMAGED}: {'; '.join(parts)}; {verdict_words}.",
        evidence=tuple(evidence),
        mechanism="kprof measures the time the GPU is busy and attributes each idle gap to what the host did in "
        "it; rows whose times cannot be true leave holes in exactly that record (a missing kernel is an idle "
        "gap; a call set aside is a gap with no cause). With fewer such rows (under "
        f"{th.DAMAGED_TIME_SHARE:.0%} of the wall time and under {th.DAMAGED_ROW_SHARE:.0%} of a table) kprof "
        "diagnoses the rest and names them; here they are too many. "
        + " ".join(f"{n[0].upper()}{n[1:]}." for n in tl.notes),
        confidence=Confidence(value=0.9, would_raise="a capture whose rows are all possible"),
        next_step=f"{fresh}, then diagnose the new file. If the same rows come back, the capture itself recorded "
        "them (clock or buffer trouble in the profiler): capture a shorter window.",
    )


def damaged_launch(k: KernelLaunch) -> Diagnosis | None:
    """The diagnosis of a launch that holds a value no measurement can give, or None (judge it).

    Examples
    --------
    >>> from kprof.kernel_model import Metric
    >>> damaged_launch(KernelLaunch(id=0, name="k", metrics={"gpu__time_duration.sum": Metric(900.0, "ns")})) is None
    True
    """
    bad = k.impossible_values()
    if not bad:
        return None
    name, value, why = bad[0]
    m = k.metric(name)
    unit = f" {m.unit}" if m is not None and m.unit else ""
    others = f"; {len(bad) - 1} more of its values are impossible too" if len(bad) > 1 else ""
    evidence = []
    for metric, v, reason in bad[:3]:
        m = k.metric(metric)
        evidence.append(
            Evidence(
                name=metric, value=v, unit=m.unit if m is not None else "", reference=reason, metric=metric
            )
        )
    return Diagnosis(
        subject=Subject(
            kind=SubjectKind.KERNEL,
            name=k.display_name,
            grid=k.grid,
            block=k.block,
            launch=k.id,
            device=k.device,
        ),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"{DAMAGED}: {k.name}'s {name} is {value:g}{unit}, which no measurement gives "
        f"({why}){others}; no verdict is built on this launch.",
        evidence=tuple(evidence),
        mechanism="Every rule reads the launch's SpeedOfLight and launch values; with one of them impossible (no "
        "SMs, no time, a negative count or utilisation) any verdict would be an artifact of the damage. ncu "
        "writes no such value: the file was edited, converted or cut.",
        confidence=Confidence(value=0.9, would_raise="a report whose values are all possible"),
        next_step="Export the report again from the .ncu-rep (`ncu --import <report>.ncu-rep --csv --page raw > "
        "<report>.raw.csv`), or profile the kernel again (`ncu --set full`), and diagnose the new file.",
    )


def damaged_job(
    job: str, ranks: Sequence[tuple[int, str, Sequence[Diagnosis]]], device: str | None = None
) -> Diagnosis | None:
    """The job's diagnosis when a rank's capture is damaged (``ranks``: rank, path, its diagnoses), or None.

    A job verdict compares the ranks' steps; one rank's missing kernels would read as less compute
    (a load imbalance) or as a straggler elsewhere, so no job verdict is built on a damaged rank.
    """
    bad = [(r, path, d) for r, path, ds in ranks for d in ds[:1] if is_damaged(d)]
    if not bad:
        return None
    names = ", ".join(f"rank {r} ({path.rsplit('/', 1)[-1]})" for r, path, _ in bad[:4])
    more = f" and {len(bad) - 4} more" if len(bad) > 4 else ""
    r, _, d = bad[0]
    return Diagnosis(
        subject=Subject(kind=SubjectKind.JOB, name=job, ranks=len(ranks), device=device),
        bottleneck=None,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"{DAMAGED}: the capture of {names}{more} holds rows that cannot be true; no job verdict "
        "compares ranks when one of them is damaged.",
        evidence=tuple(
            Evidence(name=f"rank {r}: {e.name}", value=e.value, unit=e.unit, reference=e.reference)
            for e in d.evidence[:3]
        ),
        mechanism="A job verdict compares the ranks' steps (compute, exposed collectives, waits); rows set aside "
        "in one rank read as less compute there, which looks like a load imbalance or hides a straggler. "
        f"Rank {r}: {d.headline.removeprefix(DAMAGED + ': ')}",
        confidence=Confidence(value=0.9, would_raise="captures of every rank whose rows are all possible"),
        next_step=f"Capture the job again (or take the ranks' original files); rank {r}'s own diagnosis below says "
        "which rows are damaged.",
    )


__all__ = ["DAMAGED", "damaged_job", "damaged_launch", "damaged_timeline", "is_damaged"]
