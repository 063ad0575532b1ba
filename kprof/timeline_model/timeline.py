"""A whole capture (:class:`Timeline`): its tables, GPUs, span, notes and the rows set aside as
impossible (:class:`DamagedRows`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kprof.timeline_model.tables import (
    ApiTable,
    CopyTable,
    GraphTable,
    HostOpTable,
    KernelTable,
    MemsetTable,
    RangeTable,
    StepTable,
    SyncTable,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuInfo:
    """One GPU of the capture. Fields the input does not record are None."""

    device: int
    """The device id that the event tables' ``device`` column uses."""
    name: str = ""
    sm_count: int | None = None
    memory_bytes: int | None = None
    memory_bandwidth_bytes_per_s: float | None = None
    clock_hz: float | None = None
    compute_capability: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DamagedRows:
    """Rows of one event table that the loader set aside because their times cannot be true.

    Examples
    --------
    >>> DamagedRows(table="kernels", count=2, total=90, why="end before its start", first="row 3").share
    0.022222222222222223
    """

    table: str
    """The :class:`Timeline` attribute the rows belong to (``"kernels"``, ``"api"``, ...)."""
    count: int
    """Rows set aside (or, for ``kept=True``, rows that are impossible together and were kept)."""
    total: int
    """Rows the input held in that table, the set-aside ones included."""
    why: str
    """What cannot be true about them, e.g. ``"end before its start"``."""
    first: str
    """The first such row, as the input shows it (table row id or event, name, times)."""
    est_ns: int = 0
    """The time they would hold if they were like the table's other rows (count x median duration)."""
    kept: bool = False
    """True when the rows stay loaded (each is possible alone; together they are not)."""

    @property
    def share(self) -> float:
        return self.count / self.total if self.total else 0.0

    def describe(self) -> str:
        what = TABLE_WORDS.get(self.table, self.table)
        verb = "are impossible" if self.kept else "set aside"
        return f"{self.count:,} of {self.total:,} {what} rows {verb}: {self.why} (the first, {self.first})"


TABLE_WORDS = {
    "kernels": "kernel",
    "copies": "memory copy",
    "memsets": "memset",
    "graphs": "CUDA graph launch",
    "api": "CUDA API call",
    "syncs": "synchronization",
    "ranges": "NVTX range",
    "host_ops": "CPU operator",
    "steps": "profiler step",
}

GPU_TABLES = ("kernels", "copies", "memsets", "graphs")
"""The tables of work the GPU executed."""

MEASURED_TABLES = (*GPU_TABLES, "api")
"""Tables whose times the timeline diagnosis measures (GPU work and the CUDA calls that enqueue it)."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Timeline:
    """One timeline capture: GPU work, host API calls, annotations, in nanoseconds.

    Examples
    --------
    >>> tl = Timeline(source="x.sqlite", format="nsys")
    >>> tl
    Timeline(nsys 'x.sqlite': 0 kernels, 0 copies, 0 memsets, 0 graph launches, 0 API calls, span 0 ms)
    >>> tl.kernel_count
    0
    """

    source: str
    format: str
    """``"nsys"`` or ``"kineto"``."""
    gpus: tuple[GpuInfo, ...] = ()
    kernels: KernelTable = field(default_factory=KernelTable)
    copies: CopyTable = field(default_factory=CopyTable)
    memsets: MemsetTable = field(default_factory=MemsetTable)
    graphs: GraphTable = field(default_factory=GraphTable)
    syncs: SyncTable = field(default_factory=SyncTable)
    api: ApiTable = field(default_factory=ApiTable)
    host_ops: HostOpTable = field(default_factory=HostOpTable)
    ranges: RangeTable = field(default_factory=RangeTable)
    steps: StepTable = field(default_factory=StepTable)
    threads: tuple[str, ...] = ()
    """Host thread labels, indexed by the tables' ``thread`` columns."""
    capture_start_ns: int | None = None
    """Where the capture itself says it began (Kineto's profiler span; nsys: the first host event the loader
    does not model, an OS runtime call of the process's start), else None."""
    capture_end_ns: int | None = None
    profiler_overhead: tuple[tuple[int, int], ...] = ()
    """Merged intervals in which the profiler itself worked inside the process (nsys ``PROFILER_OVERHEAD``:
    its CUDA and OS-runtime tracing initialization, buffer flushes), time the program does not spend when it
    runs unprofiled; empty when the capture does not record it."""
    tool_version: str = ""
    """E.g. ``"nsys 2025.3.1 (export schema 3.20)"`` or ``"kineto schema 1"``."""
    command: str = ""
    """The profiled process's name or command line when the capture records it."""
    working_dir: str = ""
    """The profiled process's working directory, as the capture records it (nsys), else ""."""
    written_at: str = ""
    """The absolute path the capture's file was written to, as it records it (an nsys export), else ""."""
    program: str = ""
    """``command`` as it runs from the current folder: its file arguments rewritten to where those files
    are now (:func:`kprof.io.program.program_for`, filled by :func:`kprof.load`), "" when none was found."""
    notes: tuple[str, ...] = ()
    """What the loader noticed about the input (missing tables, unsupported events, ...)."""
    has_host_trace: bool = True
    """False when the input holds no host-side CUDA API events at all (e.g. GPU-only exports)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Counts of events the loader saw but does not model (e.g. ``cuda_profiler_range``) or set aside
    (e.g. ``"CUPTI_ACTIVITY_KIND_KERNEL rows with an impossible time"``; ``notes`` says which)."""
    damaged: tuple[DamagedRows, ...] = ()
    """Rows whose times cannot be true, per table and reason (:func:`set_aside_impossible`): the
    diagnosis is inconclusive when they are a real share of the data."""

    def __post_init__(self) -> None:
        if self.format not in ("nsys", "kineto"):
            raise ValueError(f"format must be 'nsys' or 'kineto', got {self.format!r}")
        object.__setattr__(self, "gpus", tuple(self.gpus))
        object.__setattr__(self, "threads", tuple(self.threads))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "damaged", tuple(self.damaged))
        object.__setattr__(
            self, "profiler_overhead", tuple((int(a), int(b)) for a, b in self.profiler_overhead)
        )

    # ------------------------------------------------------------------ quick facts
    @property
    def kernel_count(self) -> int:
        return len(self.kernels)

    @property
    def gpu_op_count(self) -> int:
        """Kernels + copies + memsets + graph launches."""
        return len(self.kernels) + len(self.copies) + len(self.memsets) + len(self.graphs)

    def span_ns(self) -> tuple[int, int] | None:
        """(first, last) timestamp over every traced event, or None for an empty capture."""
        lo: list[int] = []
        hi: list[int] = []
        for t in (
            self.kernels,
            self.copies,
            self.memsets,
            self.graphs,
            self.api,
            self.ranges,
            self.steps,
            self.host_ops,
            self.syncs,
        ):
            if len(t):
                lo.append(int(t.start_ns.min()))
                hi.append(int(t.end_ns.max()))
        if self.capture_start_ns is not None:
            lo.append(self.capture_start_ns)
        if self.capture_end_ns is not None:
            hi.append(self.capture_end_ns)
        if not lo:
            return None
        return min(lo), max(hi)

    def gpu_name(self, device: int | None = None) -> str | None:
        for g in self.gpus:
            if device is None or g.device == device:
                return g.name or None
        return None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """``text/plain`` and ``text/html`` for Jupyter: a summary of the capture (see :mod:`kprof.html`)."""
        from kprof import renderers

        return renderers.presenter().timeline_mimebundle(self)

    def __repr__(self) -> str:
        span = self.span_ns()
        ms = 0.0 if span is None else (span[1] - span[0]) / 1e6
        return (
            f"Timeline({self.format} {self.source!r}: {len(self.kernels):,} kernels, {len(self.copies):,} copies, "
            f"{len(self.memsets):,} memsets, {len(self.graphs):,} graph launches, {len(self.api):,} API calls, "
            f"span {ms:,.4g} ms)"
        )
