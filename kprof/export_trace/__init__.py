"""``kprof export-trace``: the capture as a Chrome trace with kprof's findings laid on top.

The Chrome trace event format (JSON, optionally gzip-compressed) is what Perfetto
(ui.perfetto.dev, which opens files locally) and chrome://tracing open. The file holds:

- **kprof** (the first process): the steady-state window the diagnosis measured, named with its
  verdict, and the time before and after it; one slice per idle gap of the diagnosed GPU, named
  by the cause the diagnosis gave it (``idle: host issuing work``, ``idle: after a blocking sync``,
  ...), with the host operator, NVTX range and CUDA call that cover the most of it in its arguments;
  the launches of the kernels the diagnosis asks to profile with ncu, each with its command; and per
  steady-state step its critical path (:mod:`kprof.diagnose.critical_path`), one slice per segment.
- **GPU N**: one track per stream: kernels (short name, full name in the arguments), copies,
  memsets, CUDA graph launches.
- **host**: per thread, its CUDA API calls, its host operators (PyTorch profiler) and its ranges
  (NVTX, ``record_function``, profiler steps), each on its own track.

Times are microseconds from the capture's first timestamp (``otherData.kprof.origin_ns`` holds it),
so every value is exact to the nanosecond after the viewers' conversion. Slices on one track nest
properly: work that overlaps without nesting (two NVTX start/end ranges that cross) goes to an
extra track of the same thread, as the viewers would otherwise cut or drop it.

The events are streamed to the file (through gzip for ``.gz``), written atomically; the capture is
only read.

Modules: :mod:`~kprof.export_trace.tracks` (processes, threads, times),
:mod:`~kprof.export_trace.capture_events` (the capture's events), :mod:`~kprof.export_trace.findings`
(kprof's findings), :mod:`~kprof.export_trace.events` (all of them in order); this module writes the
trace and links it from the report.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import html
import io
import json
import os
import shlex
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kprof.errors import KprofInputError
from kprof.export_trace.events import TraceInfo, trace_events
from kprof.export_trace.findings import GAP_BOTTLENECKS, GAP_LABELS, ncu_targets
from kprof.export_trace.tracks import (
    CRITICAL_TID,
    GAPS_TID,
    GPU_PID_BASE,
    HOST_PID,
    KPROF_PID,
    NCU_TID,
    VERDICT_TID,
)
from kprof.export_trace.tracks import _cover as _cover
from kprof.export_trace.tracks import _lanes as _lanes
from kprof.outputs import check_output
from kprof.timeline_model import Timeline

if TYPE_CHECKING:
    import argparse

    from kprof.model import Diagnosis


EMBED_MAX_BYTES = 4 << 20
"""The HTML report embeds a trace of at most 4 MB (gzip) as a download link, about 5.3 MB of base64:
the report stays one file that opens offline, and a report of the shipped samples grows by ~1-2 MB.
A larger trace is linked by the command that writes it."""


def _write_json(events: Iterable[dict[str, Any]], other: dict[str, Any], f: IO[str]) -> int:
    # no "displayTimeUnit": Perfetto reads "ns" there as the unit of every ts (chrome://tracing only displays it)
    f.write('{"otherData": ')
    f.write(json.dumps(other, ensure_ascii=False))
    f.write(', "traceEvents": [\n')
    encode = json.JSONEncoder(
        ensure_ascii=False, separators=(",", ":")
    ).encode  # one encoder, not one per event
    n = 0
    batch: list[str] = []
    for ev in events:
        batch.append(encode(ev))
        if len(batch) == 4096:  # written in batches: one write per event cost as much as the encoding
            f.write((",\n" if n else "") + ",\n".join(batch))
            n += len(batch)
            batch = []
    if batch:
        f.write((",\n" if n else "") + ",\n".join(batch))
        n += len(batch)
    f.write("\n]}\n")
    return n


def _other(tl: Timeline, info: TraceInfo, diagnoses: Sequence[Diagnosis]) -> dict[str, Any]:
    from kprof._version import __version__

    return {
        "kprof": {
            "version": __version__,
            "source": tl.source,
            "origin_ns": info.origin_ns,
            "time_unit": "microseconds from origin_ns",
            "window_ns": list(info.window) if info.window else None,
            "idle_ns_by_cause": info.idle_by_cause,
            "ncu_kernels": list(info.ncu_kernels),
            "critical_path": info.critical_path.to_dict() if info.critical_path is not None else None,
            "diagnoses": [d.to_dict() for d in diagnoses],
        }
    }


def write_trace(
    tl: Timeline, output: str | os.PathLike[str], diagnoses: Sequence[Diagnosis] | None = None
) -> TraceInfo:
    """Write ``tl`` with kprof's findings as a Chrome trace to ``output`` (gzip when it ends in ``.gz``).

    Written through a temporary file in the same folder and renamed, so an interrupted run leaves the
    old file or none.

    Examples
    --------
    >>> import kprof
    >>> write_trace(kprof.load("data/samples/timeline/sync_bound.sqlite"), "sync.json.gz")  # doctest: +SKIP
    """
    from kprof.diagnose.critical_path import annotate
    from kprof.diagnose.timeline import diagnose_timeline

    out = Path(output)
    if diagnoses is None:
        diagnoses = annotate(tl, diagnose_timeline(tl)) if tl.gpu_op_count else []
    info, events = trace_events(tl, diagnoses)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            if out.name.endswith(".gz"):
                with (
                    gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz,
                    io.TextIOWrapper(gz, encoding="utf-8") as f,
                ):
                    _write_json(events, _other(tl, info, diagnoses), f)
            else:
                with io.TextIOWrapper(raw, encoding="utf-8") as f:
                    _write_json(events, _other(tl, info, diagnoses), f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return info


def trace_bytes(tl: Timeline, diagnoses: Sequence[Diagnosis] | None = None) -> tuple[TraceInfo, bytes]:
    """The gzip-compressed trace in memory (what the HTML report embeds)."""
    from kprof.diagnose.critical_path import annotate
    from kprof.diagnose.timeline import diagnose_timeline

    if diagnoses is None:
        diagnoses = annotate(tl, diagnose_timeline(tl)) if tl.gpu_op_count else []
    info, events = trace_events(tl, diagnoses)
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=6, mtime=0) as gz,
        io.TextIOWrapper(gz, encoding="utf-8") as f,
    ):
        _write_json(events, _other(tl, info, diagnoses), f)
    return info, buf.getvalue()


def default_output(path: str | os.PathLike[str]) -> str:
    """``<capture name without its extensions>.trace.json.gz`` in the current folder.

    Examples
    --------
    >>> default_output("runs/step.nsys-rep"), default_output("t/gpu_bound.json.gz")
    ('step.trace.json.gz', 'gpu_bound.trace.json.gz')
    """
    name = Path(path).name
    for ext in (".json.gz", ".sqlite.gz", ".nsys-rep", ".sqlite", ".json", ".pt.trace.json"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    return f"{name or 'capture'}.trace.json.gz"


def export_trace(
    capture: str | os.PathLike[str], output: str | os.PathLike[str] | None = None
) -> tuple[Path, TraceInfo]:
    """Load a timeline capture, diagnose it and write the annotated Chrome trace.

    Parameters
    ----------
    capture
        ``.nsys-rep``, nsys ``.sqlite``, or a PyTorch profiler ``.json[.gz]``.
    output
        The trace to write (``.json.gz`` or ``.json``); default :func:`default_output`.

    Raises
    ------
    KprofInputError
        The capture cannot be read or is not a timeline, or ``output`` is the capture itself.
    """
    from kprof.io import load

    src = Path(capture)
    # never the capture, another profile, a device or a protected file; only an earlier trace is replaced
    out = Path(output if output is not None else default_output(src))
    target = check_output(out, [src], kind="trace")  # links followed
    obj = load(src)
    if not isinstance(obj, Timeline):
        raise KprofInputError(
            src, "is a kernel report, not a timeline: export-trace takes an nsys or PyTorch profiler capture"
        )
    info = write_trace(obj, target)
    return out, info


@dataclass(frozen=True, slots=True)
class TraceLink:
    """A download link to a capture's annotated trace, for the HTML report (``_repr_html_``)."""

    filename: str
    data: bytes | None
    command: str
    info: TraceInfo

    def _repr_html_(self) -> str:
        open_hint = (
            "Open it in Perfetto (ui.perfetto.dev: drag the file in; it is read in your browser, nothing is "
            "uploaded) or chrome://tracing: the GPU streams and host threads with kprof's steady state, each idle "
            "gap named by its cause, and the kernels to profile with ncu."
        )
        if self.data is None:
            return (
                '<div class="kp-trace"><b>Annotated trace</b>: too large to embed here; write it with '
                f"<code>{html.escape(self.command)}</code>. {html.escape(open_hint)}</div>"
            )
        b64 = base64.b64encode(self.data).decode("ascii")
        return (
            f'<div class="kp-trace"><a download="{html.escape(self.filename)}" '
            f'href="data:application/gzip;base64,{b64}">Download the annotated trace '
            f"({html.escape(self.filename)}, {len(self.data) / 1e3:,.0f} kB)</a>. {html.escape(open_hint)}</div>"
        )

    def __repr__(self) -> str:
        return f"annotated trace: {self.command}"


def trace_link(
    tl: Timeline, diagnoses: Sequence[Diagnosis] | None = None, max_bytes: int = EMBED_MAX_BYTES
) -> TraceLink:
    """The capture's annotated trace as a download link for the HTML report (embedded up to ``max_bytes``)."""
    src = tl.source or "capture"
    filename = default_output(src)
    beside = os.path.join(os.path.dirname(src), filename)  # a printed command writes beside the capture
    command = f"kprof export-trace {shlex.quote(src)} -o {shlex.quote(beside)}"
    info, data = trace_bytes(tl, diagnoses)
    return TraceLink(
        filename=filename, data=data if len(data) <= max_bytes else None, command=command, info=info
    )


def cli(args: argparse.Namespace) -> int:
    """``kprof export-trace CAPTURE [-o OUT.json.gz]``."""
    import sys

    from kprof.model import _fmt

    out, info = export_trace(args.capture, args.output)
    idle = ", ".join(  # in the unit each size calls for (28.3 µs, 1.2 ms), as the diagnoses write times
        f"{c} {_fmt(float(v), 'ns')}" for c, v in sorted(info.idle_by_cause.items(), key=lambda kv: -kv[1])
    )
    print(
        f"wrote {out}: {info.gaps:,} idle gaps"
        + (f" ({idle})" if idle else "")
        + (f"; ncu targets: {', '.join(info.ncu_kernels)}" if info.ncu_kernels else "")
        + ". Open it in ui.perfetto.dev or chrome://tracing.",
        file=sys.stdout,
    )
    if info.critical_path is not None:
        print(info.critical_path.to_text(), file=sys.stdout)
    return 0


__all__ = [
    "CRITICAL_TID",
    "EMBED_MAX_BYTES",
    "GAPS_TID",
    "GAP_BOTTLENECKS",
    "GAP_LABELS",
    "GPU_PID_BASE",
    "HOST_PID",
    "KPROF_PID",
    "NCU_TID",
    "VERDICT_TID",
    "TraceInfo",
    "TraceLink",
    "cli",
    "default_output",
    "export_trace",
    "ncu_targets",
    "trace_bytes",
    "trace_events",
    "trace_link",
    "write_trace",
]
