"""Attach the source lines and the kernel's language to a kernel diagnosis.

:func:`localize` is the one step between the counters' verdict (:mod:`kprof.diagnose.kernel`) and
what a person reads: it adds ``where`` (the lines responsible, from :mod:`kprof.diagnose.where`) to the
diagnosis and to each finding, says how to get lines when the report has none, appends to the
mechanism what the responsible line does at the instruction level, and rewrites the fix in the
kernel's language (:mod:`kprof.diagnose.language`, :mod:`kprof.diagnose.fixes`). It never changes the
bottleneck, the verdict, the evidence or the expectations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kprof.diagnose.fixes import Context, localized_with_construct
from kprof.diagnose.language import kernel_origin
from kprof.diagnose.where import attribute
from kprof.kernel_model import KernelLaunch
from kprof.knowledge.instructions import sm_of
from kprof.model import Diagnosis, SubjectKind, Verdict
from kprof.rules.kernel.resource import NO_MECHANISM


def localize(k: KernelLaunch, d: Diagnosis) -> Diagnosis:
    """``d`` with its ``where`` lines, their note, and mechanism and fix worded for ``k``'s language.

    Examples
    --------
    >>> import kprof
    >>> from kprof.diagnose.kernel import diagnose_launch
    >>> k = kprof.load("data/samples/ncu/long_kernel_one_line.ncu-rep.gz")[0]  # doctest: +SKIP
    >>> diagnose_launch(k).where[0].line  # doctest: +SKIP
    22
    """
    if d.subject.kind is not SubjectKind.KERNEL:
        return d
    origin = kernel_origin(k)
    lang = origin.language.value
    att = attribute(k, d.bottleneck, language=lang)
    findings = tuple(
        replace(f, where=attribute(k, f.bottleneck, language=lang).lines) if not f.where else f
        for f in d.findings
    )
    ctx = Context(k=k, d=d, origin=origin, where=att.lines, sm=sm_of(k.compute_capability))
    mech_add, fix, construct = localized_with_construct(ctx)
    mechanism = d.mechanism
    if mech_add and mech_add not in mechanism:
        if construct:  # the construct explains the gap: "no mechanism explains it" goes
            mechanism = mechanism.replace(NO_MECHANISM, "")
        mechanism = f"{mechanism} {mech_add}".strip()
    note = att.note if d.verdict is not Verdict.HEALTHY else ""
    return replace(
        d,
        subject=replace(d.subject, language=lang),
        where=att.lines,
        where_note=note,
        mechanism=mechanism,
        fix=fix or d.fix,
        findings=findings,
    )


def localized(diagnose: Callable[..., Diagnosis]) -> Callable[..., Diagnosis]:
    """Decorate a ``(launch, ...) -> Diagnosis`` function so its result goes through :func:`localize`."""

    @functools.wraps(diagnose)
    def wrapper(k: KernelLaunch, *args: Any, **kwargs: Any) -> Diagnosis:
        return localize(k, diagnose(k, *args, **kwargs))

    return wrapper


__all__ = ["localize", "localized"]
