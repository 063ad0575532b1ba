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
mechanism (the Timeline's notes). A kernel launch whose time, cycles, SM count or launch size is impossible
is not judged at all: every rule reads them. Its other values out of range (a negative count, a unit above its
peak) are set aside and the launch is judged without them; the verdict is refused only when a rule read one of
them that ncu does not write itself (ncu's own negative results of counters from different replay passes are
named as counter artefacts, never a reason to refuse: :func:`set_aside`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kprof import thresholds as th
from kprof.kernel_model import KernelLaunch, OddValue
from kprof.model import Confidence, Diagnosis, Evidence, Subject, SubjectKind, Verdict

if TYPE_CHECKING:  # imported where a timeline is judged: a kernel report's diagnosis needs no numpy
    from kprof.timeline_model import DamagedRows, Timeline

DAMAGED = "The data is damaged"
"""How every diagnosis of damaged data begins (:func:`is_damaged` looks for it)."""


def is_damaged(d: Diagnosis) -> bool:
    """True for a diagnosis this module made: no verdict, because the data cannot be true."""
    return d.verdict is Verdict.INCONCLUSIVE and d.bottleneck is None and d.headline.startswith(f"{DAMAGED}:")


def _lasts(ds: Sequence[DamagedRows], prefix: str) -> str:
    """``"0 ns"`` or ``"under 300 ns"``: how long the rows of a record of rows without time last (its reason
    begins with ``prefix``, then the duration)."""
    for d in ds:
        if d.why.startswith(prefix):
            return d.why.removeprefix(prefix).split(",", 1)[0].strip()
    return "0 ns"


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
    from kprof.timeline_model import MEASURED_TABLES, NO_GPU_TIME, TABLE_WORDS

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
    kept = [(table, total, ds) for table, _c, total, _s, ds in heavy if all(d.kept for d in ds)]
    capture = [(table, total) for table, total, ds in kept if ds[0].why.startswith(NO_GPU_TIME)]
    if capture:  # every GPU operation of the capture (timeline_model rule 5)
        n = sum(total for _, total in capture)
        each = ", ".join(f"{total:,} {TABLE_WORDS[table]} rows" for table, total in capture)
        lasts = _lasts([d for _, _, ds in kept for d in ds], NO_GPU_TIME)
        parts.append(f"every one of its {n:,} GPU operations ({each}) lasts {lasts}")
    tables_kept = [(table, total, ds) for table, total, ds in kept if (table, total) not in capture]
    for table, total, ds in tables_kept:  # every row of one GPU table (rule 4)
        word = TABLE_WORDS[table]
        parts.append(f"every one of its {total:,} {word} rows lasts {_lasts(ds, f'every {word} row lasts')}")
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
    all_kept = all(d.kept for *_, ds in heavy for d in ds)
    no_time = "GPU" if capture else " or ".join(TABLE_WORDS[t] for t, _, _ in tables_kept)
    verdict_words = (
        f"there is no {no_time} time to measure" if all_kept else "no verdict is built on the gaps they leave"
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
    """The diagnosis of a launch whose time, cycles, SM count or launch size no measurement gives, or None.

    Examples
    --------
    >>> from kprof.kernel_model import Metric
    >>> damaged_launch(KernelLaunch(id=0, name="k", metrics={"gpu__time_duration.sum": Metric(900.0, "ns")})) is None
    True
    """
    bad = k.impossible_values()
    return _damaged_values(k, bad, read_by_all=True) if bad else None


def set_aside(k: KernelLaunch, d: Diagnosis, odd: Sequence[OddValue], reads: set[str]) -> Diagnosis:
    """``d``, the diagnosis of ``k`` made without its values out of range (``odd``), with a note naming them; or
    the damaged-data diagnosis when ``d`` read one of them (``reads``) that ncu does not write itself.

    A value ncu writes itself (:attr:`OddValue.artefact`: a negative result of counters from different replay
    passes) never blocks a verdict: the rules that would read it see it as not collected. Any other value out of
    range blocks the verdict only when a rule looked it up; one that no rule reads changes nothing.

    Examples
    --------
    >>> from kprof.kernel_model import Metric
    >>> hit = "lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum"
    >>> k = KernelLaunch(id=0, name="k", metrics={hit: Metric(-1.0, "sector")})
    >>> d = Diagnosis(subject=Subject(kind=SubjectKind.KERNEL, name="k"), bottleneck=None,
    ...               verdict=Verdict.INCONCLUSIVE, headline="h", next_step="n")
    >>> "a counter artefact" in set_aside(k, d, k.odd_values(), {hit}).mechanism
    True
    """
    used = [o for o in odd if not o.artefact and o.metric in reads]
    if used:
        return _damaged_values(k, [(o.metric, o.value, o.why) for o in used], read_by_all=False)
    notes = []
    for o in odd:
        value = _with_unit(k, o.metric, o.value)
        if o.artefact:
            notes.append(
                f"The report holds {value} for {o.metric}, a counter artefact that ncu writes itself ({o.why}); "
                "not used"
            )
        else:
            notes.append(
                f"The report holds {value} for {o.metric}, which no measurement gives ({o.why}); not used"
            )
    shown = notes[:3] + ([f"{len(notes) - 3} more such values are not used either"] if len(notes) > 3 else [])
    return replace(d, mechanism=f"{d.mechanism} {'. '.join(shown)}.".strip())


def _with_unit(k: KernelLaunch, metric: str, value: float) -> str:
    m = k.metric(metric)
    unit = m.unit if m is not None and m.unit else ""
    return f"{value:g}{unit}" if unit in ("", "%") else f"{value:g} {unit}"


def _damaged_values(
    k: KernelLaunch, bad: Sequence[tuple[str, float, str]], *, read_by_all: bool
) -> Diagnosis:
    """No verdict: ``bad`` (metric, value, why) holds values no measurement gives that the verdict would read."""
    name, value, why = bad[0]
    others = f"; {len(bad) - 1} more of its values are impossible too" if len(bad) > 1 else ""
    evidence = []
    for metric, v, reason in bad[:3]:
        m = k.metric(metric)
        evidence.append(
            Evidence(
                name=metric, value=v, unit=m.unit if m is not None else "", reference=reason, metric=metric
            )
        )
    reads = (
        "Every rule reads the launch's time, cycles, SM count and launch size; with one of them impossible"
        if read_by_all
        else f"The rules that judge this launch read {name}; with it impossible"
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
        headline=f"{DAMAGED}: {k.name}'s {name} is {_with_unit(k, name, value)}, which no measurement gives "
        f"({why}){others}; no verdict is built on this launch.",
        evidence=tuple(evidence),
        mechanism=f"{reads} (no SMs, no time, a negative count, a unit above its peak) any verdict would be an "
        "artifact of the value. Whether it came from the capture, an export, a conversion or an edit, the "
        "file alone does not tell: its structure is sound.",
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


__all__ = ["DAMAGED", "damaged_job", "damaged_launch", "damaged_timeline", "is_damaged", "set_aside"]
