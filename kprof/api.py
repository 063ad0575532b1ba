"""The public entry points: load a profile, diagnose it, compare two.

This is where files meet judgements: :mod:`kprof.io` loads, :mod:`kprof.diagnose` judges what
was loaded (and never reads a file), and the functions here join the two.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kprof.errors import KprofInputError
from kprof.io import load
from kprof.model import Diagnosis

if TYPE_CHECKING:
    from kprof.comparison_model import Comparison
    from kprof.kernel_model import KernelProfile
    from kprof.timeline_model import Timeline

PathLike = str | os.PathLike[str]


def _import_while_loading(path: str) -> threading.Thread | None:
    """Import the kernel judgements in a thread while a kernel report loads, or None.

    An ``.ncu-rep`` is read in another process (:mod:`kprof.io.ncu`); this one only waits for it, so
    the imports (about 0.1 s) cost no time there. A failed import is left for the real one, which
    raises it."""
    if not path.lower().endswith((".ncu-rep", ".ncu-rep.gz")) or "kprof.diagnose.kernel" in sys.modules:
        return None

    def run() -> None:
        with contextlib.suppress(Exception):
            importlib.import_module("kprof.diagnose.kernel")

    t = threading.Thread(target=run, name="kprof-import", daemon=True)
    t.start()
    return t


def diagnose(source: Any, *, timeline: Any = None) -> list[Diagnosis]:
    """Diagnose one profile, most important first.

    Parameters
    ----------
    source
        A path (``.nsys-rep``, nsys ``.sqlite``, PyTorch profiler ``.json[.gz]``,
        ``.ncu-rep``, ncu ``.csv``) or an already loaded ``Timeline`` / ``KernelProfile``.
    timeline
        For a kernel profile: a ``Timeline`` (or path) of the same program, whose
        kernel durations replace those measured under ncu.

    Returns
    -------
    list of Diagnosis
        For a timeline, the capture's verdict first; for an ncu report, one per launch.

    Examples
    --------
    >>> import kprof
    >>> kprof.diagnose("data/samples/host_launch_bound.sqlite")[0].bottleneck  # doctest: +SKIP
    <Bottleneck.HOST_LAUNCH_BOUND: 'host_launch_bound'>
    """
    path: str | None = None
    obj = source
    if isinstance(source, str | os.PathLike) and timeline is None and _is_kernel_report(source):
        with kernel_diagnoses(source) as (_total, scored):
            ranked = sorted(scored, key=lambda t: (-t[0], t[1]))
        return [d for _, _, d in ranked]
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        importing = _import_while_loading(path)
        try:
            obj = load(source)
        finally:
            if importing is not None:
                importing.join()
    if isinstance(timeline, str | os.PathLike):
        timeline = load(timeline)

    # The kernel model first: a kernel report's diagnosis needs neither the timeline model nor numpy.
    from kprof.kernel_model import KernelProfile

    if isinstance(obj, KernelProfile):
        from kprof.diagnose.kernel import diagnose_kernels

        if timeline is not None:
            from kprof.timeline_model import Timeline

            timeline = timeline if isinstance(timeline, Timeline) else None
        result = diagnose_kernels(obj, timeline=timeline)
        path = path or obj.source
    else:
        from kprof.timeline_model import Timeline

        if not isinstance(obj, Timeline):
            raise TypeError(f"cannot diagnose a {type(obj).__name__}; pass a path, Timeline or KernelProfile")
        from kprof.diagnose.critical_path import annotate
        from kprof.diagnose.timeline import diagnose_timeline

        result = annotate(
            obj, diagnose_timeline(obj)
        )  # sync/host-compute verdicts name their ops on the path
        path = path or obj.source
    if not result:
        raise KprofInputError(path or "<input>", "produced no diagnosis (nothing to diagnose)")
    return [d if d.file else dataclasses.replace(d, file=path) for d in result]


def _is_kernel_report(path: PathLike) -> bool:
    """An ``.ncu-rep`` (or ``.ncu-rep.gz``) by its name (:func:`~kprof.io.files.detect_format` checks it)."""
    return os.fspath(path).lower().endswith((".ncu-rep", ".ncu-rep.gz"))


@contextlib.contextmanager
def kernel_diagnoses(
    path: PathLike,
) -> Iterator[tuple[int, Iterator[tuple[float, int, Diagnosis]]]]:
    """The diagnoses of an ``.ncu-rep`` report's launches as they are read, without holding the launches:
    ``(number of launches, iterator of (importance, launch id, diagnosis))`` in the order the launches
    arrive. :func:`diagnose` sorts them (importance first, then launch id).

    Examples
    --------
    >>> with kernel_diagnoses("report.ncu-rep") as (n, scored):  # doctest: +SKIP
    ...     worst = max(scored, key=lambda t: t[0])[2]
    """
    from kprof.io import stream_launches

    p = os.fspath(path)
    importing = _import_while_loading(p)
    try:
        with stream_launches(path) as launches:
            if importing is not None:
                importing.join()
                importing = None
            from kprof.diagnose.kernel import scored_diagnoses
            from kprof.io.program import program_for

            program = program_for(launches.source, None) or None  # as kprof.io.load gives a report

            def scored() -> Iterator[tuple[float, int, Diagnosis]]:
                for score, i, d in scored_diagnoses(
                    launches, launches.source, launches.format, program=program
                ):
                    yield score, i, d if d.file else dataclasses.replace(d, file=p)

            yield launches.total, scored()
    finally:
        if importing is not None:
            importing.join()


def diagnose_many(paths: Iterable[PathLike]) -> list[Diagnosis]:
    """Diagnose several files in order; stops at the first bad input."""
    out: list[Diagnosis] = []
    for p in paths:
        out.extend(diagnose(p))
    return out


def _loaded(x: Any) -> tuple[Timeline | KernelProfile, str]:
    from kprof.kernel_model import KernelProfile
    from kprof.timeline_model import Timeline

    if isinstance(x, str | os.PathLike):
        return load(x), os.fspath(x)
    if isinstance(x, Timeline | KernelProfile):
        return x, x.source
    raise TypeError(f"cannot compare a {type(x).__name__}; pass a path, Timeline or KernelProfile")


def compare(
    before: Any,
    after: Any,
    *,
    before_timeline: Any = None,
    after_timeline: Any = None,
) -> list[Comparison]:
    """Compare a profile before a change with one after it: speedup, both diagnoses, expectations met.

    Loads what is given as paths, then :func:`kprof.diagnose.compare.compare_profiles` judges
    (matching, noise, expectations: see that module).

    Parameters
    ----------
    before, after
        Paths (``.ncu-rep``, ncu ``.csv``, ``.nsys-rep``, nsys ``.sqlite``, PyTorch profiler
        ``.json[.gz]``) or loaded :class:`~kprof.kernel_model.KernelProfile` /
        :class:`~kprof.timeline_model.Timeline` objects, both of one kind.
    before_timeline, after_timeline
        For kernel reports: timelines (or paths) of the same two runs. When both hold the kernel,
        its durations come from them instead of from ncu.

    Returns
    -------
    list of Comparison
        Kernel reports: one per matched kernel, the longest before first. Timelines: one.

    Raises
    ------
    KprofInputError
        A file cannot be read, or the pair does not match (different GPUs, no kernel in common, a
        kernel report against a timeline): one line naming both files and what differs.

    Examples
    --------
    >>> import kprof
    >>> c = kprof.compare("data/samples/ncu/pair_transpose_before.ncu-rep.gz",
    ...                   "data/samples/ncu/pair_transpose_after.ncu-rep.gz")[0]  # doctest: +SKIP
    >>> c.verdict.value, round(c.speedup, 1)  # doctest: +SKIP
    ('improved', 6.8)
    """
    from kprof.diagnose.compare import compare_profiles
    from kprof.kernel_model import KernelProfile
    from kprof.timeline_model import Timeline

    ob, fb = _loaded(before)
    oa, fa = _loaded(after)
    tl_b: Timeline | KernelProfile | None = None
    tl_a: Timeline | KernelProfile | None = None
    if isinstance(ob, KernelProfile) and isinstance(oa, KernelProfile):
        tl_b = _loaded(before_timeline)[0] if before_timeline is not None else None
        tl_a = _loaded(after_timeline)[0] if after_timeline is not None else None
        for t, f in ((tl_b, before_timeline), (tl_a, after_timeline)):
            if t is not None and not isinstance(t, Timeline):
                raise KprofInputError(
                    os.fspath(f) if isinstance(f, str | os.PathLike) else "<timeline>", "is not a timeline"
                )
    return compare_profiles(
        ob,
        oa,
        diagnose=lambda profile, timeline: diagnose(profile, timeline=timeline),
        file_before=fb,
        file_after=fa,
        before_timeline=tl_b if isinstance(tl_b, Timeline) else None,
        after_timeline=tl_a if isinstance(tl_a, Timeline) else None,
    )
