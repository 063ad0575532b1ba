"""Every event of the trace, in order (:func:`trace_events`), and what was laid on top (:class:`TraceInfo`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kprof.timeline_model import Timeline

if TYPE_CHECKING:
    from kprof.diagnose.critical_path import CriticalPathSummary
    from kprof.diagnose.timeline import GapCauses
    from kprof.model import Diagnosis

from kprof.export_trace.capture_events import _gpu_events, _host_events
from kprof.export_trace.findings import (
    _critical_path_events,
    _gap_events,
    _ncu_events,
    _verdict_events,
    ncu_targets,
)
from kprof.export_trace.tracks import (
    GPU_PID_BASE,
    HOST_PID,
    KPROF_PID,
    _meta,
    _Tracks,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceInfo:
    """What :func:`trace_events` laid on the capture (for the caller's summary line and tests)."""

    origin_ns: int
    window: tuple[int, int] | None
    gaps: int
    idle_by_cause: dict[str, int]
    ncu_kernels: tuple[str, ...]
    bottleneck: str | None
    critical_path: CriticalPathSummary | None = None
    """The critical paths of the steady-state steps (None when the capture has no steps with GPU work)."""


def trace_events(
    tl: Timeline, diagnoses: Sequence[Diagnosis] | None = None, gaps: GapCauses | None = None
) -> tuple[TraceInfo, Iterator[dict[str, Any]]]:
    """The Chrome trace events of a capture with kprof's findings, and what they show.

    Parameters
    ----------
    tl
        The capture.
    diagnoses
        Its timeline diagnoses (computed when None); the first is the capture's verdict.
    gaps
        Its idle gaps and their causes (:func:`kprof.diagnose.timeline.gap_causes`; computed when None).

    Returns
    -------
    (TraceInfo, iterator of dict)
        The events are produced lazily, metadata last (the viewers read it from anywhere).

    Examples
    --------
    >>> info, events = trace_events(Timeline(source="x", format="nsys"))  # doctest: +SKIP
    """
    from kprof.diagnose.critical_path import annotate
    from kprof.diagnose.timeline import diagnose_timeline, gap_causes

    if gaps is None:
        gaps = gap_causes(tl)
    if diagnoses is None:
        diagnoses = annotate(tl, diagnose_timeline(tl)) if tl.gpu_op_count else []
    diag = diagnoses[0] if diagnoses else None
    span = tl.span_ns() or (0, 0)
    origin = span[0]
    devices = sorted(
        set(tl.kernels.device.tolist())
        | set(tl.copies.device.tolist())
        | set(tl.memsets.device.tolist())
        | set(tl.graphs.device.tolist())
    )
    gpu_pids = {d: GPU_PID_BASE + n for n, d in enumerate(devices)}
    processes: dict[int, tuple[str, int]] = {KPROF_PID: ("kprof", 0)}
    for n, d in enumerate(devices):
        gname = tl.gpu_name(d)
        processes[gpu_pids[d]] = (f"GPU {d}" + (f" ({gname})" if gname else ""), 1 + n)
    processes[HOST_PID] = ("host" + (f": {tl.command}" if tl.command else ""), 1 + len(devices))
    ncu_names: list[str] = []
    if diag is not None:
        k = tl.kernels
        short = k.short_names or k.names
        for regex, _cmd, demangled in ncu_targets(diag):
            with contextlib.suppress(re.error):
                rx = re.compile(regex)
                ncu_names += [n for n in (k.names if demangled else short) if rx.search(n)]
    from kprof.diagnose.critical_path import critical_paths

    cp = critical_paths(tl) if tl.gpu_op_count else None
    info = TraceInfo(
        origin_ns=origin,
        window=gaps.window,
        gaps=len(gaps),
        idle_by_cause={c: v for c, v in gaps.idle_by_cause().items() if v},
        ncu_kernels=tuple(dict.fromkeys(ncu_names)),
        bottleneck=diag.bottleneck.value if diag is not None and diag.bottleneck is not None else None,
        critical_path=cp if cp is not None and cp.paths else None,
    )
    gpu_label = f"GPU {gaps.device}" if gaps.device is not None else "GPU"

    def events() -> Iterator[dict[str, Any]]:
        tracks = _Tracks()
        yield from _verdict_events(diag, gaps, span, tracks, origin)
        yield from _gap_events(tl, gaps, tracks, origin, gpu_label)
        yield from _ncu_events(tl, diag, gaps.window, tracks, origin)
        yield from _critical_path_events(info.critical_path, tracks, origin)
        yield from _gpu_events(tl, tracks, origin, gpu_pids)
        yield from _host_events(tl, tracks, origin)
        yield from _meta(tracks, processes)

    return info, events()
