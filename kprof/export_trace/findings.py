"""kprof's findings as trace events: the verdict over the steady-state window, the idle gaps named by
their cause, the launches to profile with ncu, and each step's critical path."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from kprof.timeline_model import Timeline, api_base_name

if TYPE_CHECKING:
    from kprof.diagnose.critical_path import CriticalPathSummary
    from kprof.diagnose.timeline import GapCauses
    from kprof.model import Diagnosis

from kprof.export_trace.tracks import (
    CRITICAL_TID,
    GAPS_TID,
    KPROF_PID,
    NCU_TID,
    VERDICT_TID,
    _cover,
    _Tracks,
    _x,
)

GAP_LABELS: dict[str, str] = {
    "host": "idle: host issuing work",
    "host_compute": "idle: host computing",
    "sync": "idle: after a blocking sync",
    "copy": "idle: waiting on a copy",
    "startup": "idle: start-up",
    "teardown": "idle: teardown",
    "device_wait": "idle: queued work waiting on the device",
    "unknown": "idle: cause unknown (no host trace)",
}
"""Slice names of the idle gaps, by the cause :func:`kprof.diagnose.timeline.gap_causes` gives them
(a cause not listed here is named ``idle: <cause>``)."""

GAP_BOTTLENECKS: dict[str, str] = {
    "host": "host_launch_bound",
    "host_compute": "host_compute_bound",
    "sync": "sync_bound",
    "copy": "transfer_bound",
    "startup": "startup_bound",
    "teardown": "startup_bound",
}
"""The bottleneck id whose time each gap cause counts toward."""

_CNAME: dict[str, str] = {
    "host": "thread_state_runnable",
    "host_compute": "thread_state_running",
    "sync": "terrible",
    "copy": "yellow",
    "startup": "startup",
    "teardown": "startup",
    "device_wait": "grey",
    "unknown": "black",
}
"""chrome://tracing's reserved colour names per cause (Perfetto colours by slice name, hence by cause)."""

_NAMED_BY_OP = frozenset({"host_compute"})
"""Causes whose slice name also says which host operator or range covers the gap."""


_NCU_IN_BACKTICKS = re.compile(r"`(ncu\s(?:[^`']|'[^']*')*)`")
"""An ncu command in backticks; a kernel name in it may hold a backtick, inside the shell's single quotes."""


def ncu_targets(diagnosis: Diagnosis) -> list[tuple[str, str, bool]]:
    """The kernels a diagnosis asks to profile: ``(regex, command, match_demangled)`` per ncu command in
    its ``next_step`` (``-k 'regex:...'``; ``--kernel-name-base demangled`` matches full names).

    Examples
    --------
    >>> from kprof.model import Diagnosis, Verdict, Subject, SubjectKind
    >>> d = Diagnosis(subject=Subject(kind=SubjectKind.CAPTURE, name="x"), bottleneck=None,
    ...               verdict=Verdict.INCONCLUSIVE, headline="h",
    ...               next_step="Profile: `ncu --set full -k 'regex:^gemm$' --launch-skip 2 -o a ./app`")
    >>> ncu_targets(d)[0][:2]
    ('^gemm$', "ncu --set full -k 'regex:^gemm$' --launch-skip 2 -o a ./app")
    """
    out: list[tuple[str, str, bool]] = []
    text = diagnosis.next_step or ""
    for m in _NCU_IN_BACKTICKS.finditer(text):  # every command kprof prints is in backticks
        cmd = m.group(1).strip()
        try:
            argv = shlex.split(cmd)
        except ValueError:
            continue
        for i, a in enumerate(argv[:-1]):
            if a in ("-k", "--kernel-name"):
                k = argv[i + 1]
                regex = k[len("regex:") :] if k.startswith("regex:") else "^" + re.escape(k) + "$"
                demangled = (
                    "--kernel-name-base" in argv and argv[argv.index("--kernel-name-base") + 1] == "demangled"
                )
                out.append((regex, cmd, demangled))
                break
    return out


def _gap_events(
    tl: Timeline, gaps: GapCauses, tracks: _Tracks, origin: int, gpu_label: str
) -> Iterator[dict[str, Any]]:
    if len(gaps) == 0:
        return
    tid = tracks.track(KPROF_PID, f"idle {gpu_label}: cause", GAPS_TID)
    gs, ge = gaps.start_ns, gaps.end_ns
    op_i = _cover(gs, ge, tl.host_ops.start_ns, tl.host_ops.end_ns)
    r_i = _cover(gs, ge, tl.ranges.start_ns, tl.ranges.end_ns)
    a_i = _cover(gs, ge, tl.api.start_ns, tl.api.end_ns)
    for j in range(len(gaps)):
        cause = str(gaps.cause[j])
        args: dict[str, Any] = {"cause": cause}
        if cause in GAP_BOTTLENECKS:
            args["counts_toward"] = GAP_BOTTLENECKS[cause]
        op = tl.host_ops.names[tl.host_ops.name_id[op_i[j]]] if op_i[j] >= 0 else None
        rng = tl.ranges.names[tl.ranges.name_id[r_i[j]]] if r_i[j] >= 0 else None
        call = api_base_name(tl.api.names[tl.api.name_id[a_i[j]]]) if a_i[j] >= 0 else None
        if op:
            args["host_op"] = op
        if rng:
            args["range"] = rng
        if call:
            args["cuda_call"] = call
        name = GAP_LABELS.get(cause, f"idle: {cause}")
        if cause in _NAMED_BY_OP and (op or rng):
            name = f"{name}: {op or rng}"
        ev = _x(name, "kprof.gap", KPROF_PID, tid, int(gs[j]), int(ge[j]), origin, args)
        if cause in _CNAME:
            ev["cname"] = _CNAME[cause]
        yield ev


def _verdict_events(
    diag: Diagnosis | None, gaps: GapCauses, span: tuple[int, int], tracks: _Tracks, origin: int
) -> Iterator[dict[str, Any]]:
    tid = tracks.track(KPROF_PID, "steady state (kprof's diagnosis)", VERDICT_TID)
    lo, hi = span
    win = gaps.window or span
    if win[0] > lo:
        yield _x("before the steady state", "kprof.window", KPROF_PID, tid, lo, win[0], origin)
    args: dict[str, Any] = {}
    name = "steady state"
    if diag is not None:
        bid = diag.bottleneck.value if diag.bottleneck is not None else "none"
        name = f"steady state: {bid} ({diag.verdict.value})"
        args = {"headline": diag.headline, "fix": diag.fix, "next_step": diag.next_step}
        args = {k: v for k, v in args.items() if v}
    yield _x(name, "kprof.window", KPROF_PID, tid, win[0], win[1], origin, args or None)
    if win[1] < hi:
        yield _x("after the steady state", "kprof.window", KPROF_PID, tid, win[1], hi, origin)


def _ncu_events(
    tl: Timeline, diag: Diagnosis | None, window: tuple[int, int] | None, tracks: _Tracks, origin: int
) -> Iterator[dict[str, Any]]:
    if diag is None:
        return
    targets = ncu_targets(diag)
    if not targets:
        return
    k = tl.kernels
    short = k.short_names or k.names
    tid = tracks.track(KPROF_PID, "profile with ncu (kprof's next step)", NCU_TID)
    lo, hi = window if window is not None else (-(2**62), 2**62)
    for regex, cmd, demangled in targets:
        try:
            rx = re.compile(regex)
        except re.error:
            continue
        pool = k.names if demangled else short
        ids = [i for i, n in enumerate(pool) if rx.search(n)]
        if not ids:
            continue
        sel = np.flatnonzero(np.isin(k.name_id, ids) & (k.start_ns >= lo) & (k.start_ns < hi))
        for i in sel[np.argsort(k.start_ns[sel], kind="stable")].tolist():
            nm = k.names[k.name_id[i]] if demangled else short[k.name_id[i]]
            yield _x(f"profile with ncu: {nm}", "kprof.ncu", KPROF_PID, tid, int(k.start_ns[i]), int(k.end_ns[i]),
                     origin, {"command": cmd, "name": k.names[k.name_id[i]]})  # fmt: skip


def _critical_path_events(
    cp: CriticalPathSummary | None, tracks: _Tracks, origin: int
) -> Iterator[dict[str, Any]]:
    """Per steady-state step, a slice over its critical path and, under it, one slice per segment
    (``kernel: gemm``, ``host: aten::mm``, ``sync: cudaStreamSynchronize in aten::item``, ...)."""
    if cp is None or not cp.paths:
        return
    tid = tracks.track(KPROF_PID, "critical path of each step (kprof)", CRITICAL_TID)
    for p in cp.paths:
        share = {k: round(v / p.duration_ns, 4) for k, v in p.by_kind().items() if v}
        yield _x(f"critical path, step {p.step}", "kprof.critical_path", KPROF_PID, tid, p.start_ns, p.end_ns,
                 origin, {"share_by_kind": share})  # fmt: skip
        for seg in p.segments:
            args: dict[str, Any] = {"kind": seg.kind}
            if seg.scope and seg.scope != seg.name:
                args["scope"] = seg.scope
            if seg.correlation is not None:
                args["correlation"] = seg.correlation
            name = f"{seg.kind}: {seg.name}" if seg.name else seg.kind
            yield _x(name, "kprof.critical_path", KPROF_PID, tid, seg.start_ns, seg.end_ns, origin, args)
