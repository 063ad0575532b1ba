"""The public entry points: load a profile, diagnose it."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any

from kprof.errors import KprofInputError
from kprof.io import load
from kprof.model import Diagnosis

PathLike = str | os.PathLike[str]


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
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        obj = load(source)
    if isinstance(timeline, str | os.PathLike):
        timeline = load(timeline)

    from kprof.kernel_model import KernelProfile
    from kprof.timeline_model import Timeline

    if isinstance(obj, Timeline):
        from kprof.diagnose.critical_path import annotate
        from kprof.diagnose.timeline import diagnose_timeline

        result = annotate(
            obj, diagnose_timeline(obj)
        )  # sync/host-compute verdicts name their ops on the path
        path = path or obj.source
    elif isinstance(obj, KernelProfile):
        from kprof.diagnose.kernel import diagnose_kernels

        result = diagnose_kernels(obj, timeline=timeline if isinstance(timeline, Timeline) else None)
        path = path or obj.source
    else:
        raise TypeError(f"cannot diagnose a {type(obj).__name__}; pass a path, Timeline or KernelProfile")
    if not result:
        raise KprofInputError(path or "<input>", "produced no diagnosis (nothing to diagnose)")
    return [d if d.file else dataclasses.replace(d, file=path) for d in result]


def diagnose_many(paths: Iterable[PathLike]) -> list[Diagnosis]:
    """Diagnose several files in order; stops at the first bad input."""
    out: list[Diagnosis] = []
    for p in paths:
        out.extend(diagnose(p))
    return out
