"""Verify a fix: compare a profile before a change with one after it.

:func:`compare_profiles` matches what can be matched, measures the speedup, takes both sides'
diagnoses and checks every ``expect`` of the before diagnosis against the after profile. It judges
loaded profiles only: :func:`kprof.compare` (:mod:`kprof.api`) loads the files and passes the
diagnoses in, and ``kprof compare`` (:mod:`kprof.cli`) prints the result. The result types live
in :mod:`kprof.comparison_model`.

Matching
    *Kernel reports* (ncu): launches by (name, grid, block); a kernel whose name matches but
    whose launch configuration changed is compared with a note, and so are two reports of one
    kernel each under different names (a kernel rewritten and renamed). Durations taken under ncu are
    serialized and replayed: the speedup says so (pass timelines of both runs to take kernel
    durations from them instead). *Timelines* (nsys, PyTorch profiler): by iteration, i.e.
    profiler steps or the repeated NVTX range that the timeline diagnosis uses, each step
    projected onto the GPU through the correlation ids of the work it launched (an NVTX range
    marks when the host enqueued a step, not when the GPU ran it), per-step medians compared.
    Two captures without steps are compared capture against capture (steady-state wall time).
    An nsys capture may be compared with a PyTorch profiler trace of the same program.

Never a made-up speedup
    Different GPUs, no kernel in common (unless each report holds one kernel), or a kernel report
    against a timeline raise
    :class:`~kprof.errors.KprofInputError` with one line naming both files and what differs.
    Timelines whose steady states cannot be matched (steps on one side only, differently named
    NVTX ranges) give a comparison with ``verdict="inconclusive"`` and no speedup.

Noise
    The verdict is ``improved`` or ``regressed`` only beyond a noise threshold, and the
    comparison says which threshold and why (``noise``) and gives the speedup's interval
    (``speedup_interval``, which excludes 1 exactly then): for ncu durations the measured
    launch-to-launch and process-to-process spread on the H200 (``NCU_DURATION_NOISE``); for
    timelines 3 standard errors of the speedup (``TIMELINE_NOISE_Z``), from each capture's own
    bootstrap standard error of its median step and, per side, the process-to-process term of its
    host-paced share (``HOST_PACED_PROCESS_SD``), never below ``TIMELINE_MIN_NOISE``. A
    host-limited pair whose change lies within the widest spread measured between processes
    (``HOST_PACED_WORST_SPREAD``) gets a caveat and a ``next_step``: how many captures per side
    would settle it. Every threshold is in :mod:`kprof.thresholds` with its source.

Expectations
    Each :class:`~kprof.model.Expectation` of the before diagnosis is looked up in both
    profiles (ncu metrics and ``derived:*`` names through
    :func:`kprof.diagnose.kernel.metric_value`, timeline keys through
    :func:`kprof.diagnose.timeline.timeline_metrics`) and is ``met`` when the metric moved the
    predicted way by more than the noise and, given a target, covered at least half of the way
    to it (``EXPECTATION_MIN_PROGRESS``); ``met`` is None, with the reason, when a value is missing.

Modules: :mod:`~kprof.diagnose.compare.steps` (steps and their durations),
:mod:`~kprof.diagnose.compare.verdicts` (noise, verdict, expectation checks),
:mod:`~kprof.diagnose.compare.matching` (shared matching), :mod:`~kprof.diagnose.compare.kernels`
and :mod:`~kprof.diagnose.compare.timelines` (the two kinds of comparison).
"""

from __future__ import annotations

from kprof.comparison_model import Comparison, ComparisonVerdict, ExpectationCheck
from kprof.diagnose.compare.kernels import UNDER_NCU as UNDER_NCU
from kprof.diagnose.compare.kernels import _compare_kernels
from kprof.diagnose.compare.matching import Diagnoser, _pair
from kprof.diagnose.compare.steps import StepTimes, aligned_windows, step_times
from kprof.diagnose.compare.steps import _iterations as _iterations
from kprof.diagnose.compare.timelines import _EXTENSIVE as _EXTENSIVE
from kprof.diagnose.compare.timelines import _HOST_PACED as _HOST_PACED
from kprof.diagnose.compare.timelines import _compare_timelines
from kprof.diagnose.compare.verdicts import MAD_TO_SIGMA as MAD_TO_SIGMA
from kprof.diagnose.compare.verdicts import MEDIAN_SE_FACTOR as MEDIAN_SE_FACTOR
from kprof.diagnose.compare.verdicts import check_expectation
from kprof.errors import KprofInputError
from kprof.kernel_model import KernelProfile
from kprof.timeline_model import Timeline


def compare_profiles(
    before: Timeline | KernelProfile,
    after: Timeline | KernelProfile,
    *,
    diagnose: Diagnoser,
    file_before: str | None = None,
    file_after: str | None = None,
    before_timeline: Timeline | None = None,
    after_timeline: Timeline | None = None,
) -> list[Comparison]:
    """Compare two loaded profiles of one kind: speedup, both diagnoses, expectations met.

    The judgement behind :func:`kprof.compare`, which loads the files and passes ``diagnose``
    (this module reads no file and calls no loader).

    Parameters
    ----------
    before, after
        Two :class:`~kprof.kernel_model.KernelProfile` or two :class:`~kprof.timeline_model.Timeline`.
    diagnose
        ``(profile, timeline or None) -> diagnoses``, as ``kprof.diagnose(profile, timeline=...)``.
    file_before, file_after
        The names to quote (default: each profile's ``source``).
    before_timeline, after_timeline
        For kernel reports: timelines of the same two runs; kernel durations come from them when
        both hold the kernel.

    Returns
    -------
    list of Comparison
        Kernel reports: one per matched kernel, the longest before first. Timelines: one.

    Raises
    ------
    KprofInputError
        The pair does not match (different GPUs, no kernel in common in reports of several kernels, a
        kernel report against a timeline): one line naming both files and what differs.

    Examples
    --------
    >>> from kprof.api import diagnose
    >>> cs = compare_profiles(before, after, diagnose=lambda p, tl: diagnose(p, timeline=tl))  # doctest: +SKIP
    """
    fb = file_before if file_before is not None else before.source
    fa = file_after if file_after is not None else after.source
    if isinstance(before, KernelProfile) and isinstance(after, KernelProfile):
        return _compare_kernels(before, after, fb, fa, before_timeline, after_timeline, diagnose)
    if isinstance(before, Timeline) and isinstance(after, Timeline):
        return _compare_timelines(before, after, fb, fa, diagnose)
    kb = "a timeline capture" if isinstance(before, Timeline) else "a kernel report"
    ka = "a timeline capture" if isinstance(after, Timeline) else "a kernel report"
    raise KprofInputError(
        _pair(fb, fa),
        f"{kb} before and {ka} after: compare two timelines or two kernel reports of the same program",
    )


__all__ = [
    "Comparison",
    "ComparisonVerdict",
    "Diagnoser",
    "ExpectationCheck",
    "StepTimes",
    "aligned_windows",
    "check_expectation",
    "compare_profiles",
    "step_times",
]
