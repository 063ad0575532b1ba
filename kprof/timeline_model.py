"""The loaded form of a timeline capture (Nsight Systems or PyTorch profiler): a :class:`Timeline`.

Events are held column-wise, one frozen table per kind, each column a read-only numpy
array, so that a capture with ten million kernels costs a few hundred megabytes and
no Python object per event. Every time is in nanoseconds on the capture's own clock
(host and GPU timestamps on one axis, as both tools export them).

Names are held once: an event table carries an integer ``name_id`` per row and a
``names`` tuple that it indexes.

Codes used by the columns (CUPTI's own values, which nsys exports unchanged; the
Kineto loader maps its strings onto them):

- :class:`CopyTable` ``direction``: 1 host to device, 2 device to host, 8 device to device,
  10 peer to peer, 9 host to host, 0 unknown (see :data:`COPY_DIRECTION_NAMES`).
- ``src_kind`` / ``dst_kind``: 0 pageable, 1 pinned, 2 device, 4 managed, -1 unknown
  (see :data:`MEMORY_KIND_NAMES`).
- :class:`KernelTable` ``launch_type``: 1 regular, 2 cooperative (single device),
  3 cooperative (multi device), 0 unknown.
- :class:`ApiTable` ``category``: see :class:`ApiCategory`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.integer[Any]]

COPY_HTOD = 1
COPY_DTOH = 2
COPY_HTOH = 9
COPY_DTOD = 8
COPY_PTOP = 10
COPY_DIRECTION_NAMES: dict[int, str] = {
    0: "unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "HtoD (unified)",
    12: "DtoH (unified)",
    13: "DtoD (unified)",
}
MEM_PAGEABLE = 0
MEM_PINNED = 1
MEM_DEVICE = 2
MEM_MANAGED = 4
MEM_UNKNOWN = -1
MEMORY_KIND_NAMES: dict[int, str] = {
    -1: "unknown",
    0: "pageable",
    1: "pinned",
    2: "device",
    3: "array",
    4: "managed",
    5: "device static",
    6: "managed static",
    7: "unknown",
}
LAUNCH_COOPERATIVE = (2, 3)

TIMESTAMP_LIMIT_NS = 2**62
"""Nanosecond timestamps at or beyond 2**62 (146 years from the clock's origin) are not timestamps
(uninitialised, overflowed or corrupt fields): the loaders set such events aside instead of letting
one of them stretch the capture to centuries."""


class ApiCategory(enum.IntEnum):
    """What a host-side CUDA API call does, as far as GPU idle time is concerned."""

    OTHER = 0
    LAUNCH = 1
    """Enqueues a kernel or a graph (``cudaLaunchKernel``, ``cuLaunchKernelEx``, ``cudaGraphLaunch``)."""
    SYNC = 2
    """Blocks the host until the GPU is done (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
    ``cudaEventSynchronize``)."""
    COPY_SYNC = 3
    """A synchronous copy (``cudaMemcpy``, ``cuMemcpyDtoH``): blocks the host as a sync does."""
    COPY_ASYNC = 4
    """An asynchronous copy call (``cudaMemcpyAsync``); blocks anyway from pageable memory."""
    MEMSET = 5
    STARTUP = 6
    """One-time work: module or library loading, context creation, device queries."""
    ALLOC = 7
    """Allocation and freeing (``cudaMalloc``, ``cudaFree``, ``cudaHostAlloc``, ...)."""


_VERSION_SUFFIX = re.compile(r"_v\d+$")
_PTDS_SUFFIX = re.compile(r"_(ptsz|ptds)$")


def api_base_name(name: str) -> str:
    """The API name without nsys's version suffix: ``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``.

    Examples
    --------
    >>> api_base_name("cudaLaunchKernel_v7000")
    'cudaLaunchKernel'
    >>> api_base_name("cuMemcpyDtoHAsync_v2")
    'cuMemcpyDtoHAsync'
    """
    n = _VERSION_SUFFIX.sub("", name.strip())
    return _PTDS_SUFFIX.sub("", n)


def classify_api(name: str) -> ApiCategory:
    """The :class:`ApiCategory` of a CUDA runtime or driver API name (version suffixes ignored).

    Examples
    --------
    >>> classify_api("cuLaunchKernelEx").name
    'LAUNCH'
    >>> classify_api("cudaStreamSynchronize_v3020").name
    'SYNC'
    >>> classify_api("cudaMemcpy_v3020").name
    'COPY_SYNC'
    """
    n = api_base_name(name)
    low = n.lower()
    if "synchronize" in low and "query" not in low:
        return ApiCategory.SYNC
    if "launch" in low and (
        "kernel" in low or "graph" in low or "cooperative" in low or low.startswith("culaunch")
    ):
        return ApiCategory.LAUNCH
    if low.startswith(("cudamemset", "cumemset")):
        return ApiCategory.MEMSET
    if low.startswith(("cudamemcpy", "cumemcpy")):
        return ApiCategory.COPY_ASYNC if "async" in low else ApiCategory.COPY_SYNC
    if low.startswith(
        (
            "cudamalloc",
            "cudafree",
            "cumemalloc",
            "cumemfree",
            "cudahostalloc",
            "cumemhostalloc",
            "cudahostregister",
            "cumemhostregister",
            "cudahostunregister",
            "cumemhostunregister",
            "cudamallochost",
            "cudafreehost",
            "cumemallochost",
            "cumemfreehost",
            "cumemcreate",
            "cumemmap",
            "cumemunmap",
            "cumemrelease",
            "cumemaddressreserve",
            "cumemaddressfree",
        )
    ):
        return ApiCategory.ALLOC
    if low.startswith(
        (
            "culibraryload",
            "cumoduleload",
            "culinkcreate",
            "culinkadd",
            "culinkcomplete",
            "cuinit",
            "cuctxcreate",
            "cudeviceprimaryctxretain",
            "cudevicegetcount",
            "cudagetdevicecount",
            "cudagetdeviceproperties",
            "cudevicegetattribute",
            "cudadevicegetattribute",
            "culibrarygetmodule",
            "culibrarygetkernel",
            "cumodulegetfunction",
            "culibrarygetunifiedfunction",
            "cudafuncgetattributes",
            "cufuncgetattribute",
            "cugetproctaddress",
            "cudagetdriverentrypoint",
            "cumodulegetloadingmode",
            "cudastreamcreate",
            "custreamcreate",
            "cudaeventcreate",
            "cueventcreate",
            "cudagraphinstantiate",
            "cugraphinstantiate",
        )
    ) or low in ("cudasetdevice", "cudafree0"):
        return ApiCategory.STARTUP
    return ApiCategory.OTHER


def _ro(a: np.ndarray) -> np.ndarray:
    if a.flags.writeable:
        a.flags.writeable = False
    return a


def _i64(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


class _Table:
    """Common behaviour of the column tables: length, read-only arrays, short repr."""

    __slots__ = ()

    def _post_init(self) -> None:
        n: int | None = None
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                _ro(v)
                if f.name in ("grid", "block") and (v.ndim != 2 or v.shape[1] != 3):
                    raise ValueError(f"{type(self).__name__}.{f.name} must have shape (n, 3)")
                if n is None:
                    n = len(v)
                elif len(v) != n:
                    raise ValueError(f"{type(self).__name__}.{f.name} has {len(v)} rows, the table has {n}")
            elif isinstance(v, list):
                object.__setattr__(self, f.name, tuple(v))

    def __len__(self) -> int:
        return len(self.start_ns)  # type: ignore[attr-defined]

    @property
    def duration_ns(self) -> np.ndarray:
        """``end_ns - start_ns`` (a new array)."""
        return self.end_ns - self.start_ns  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        n = len(self)
        if n == 0:
            return f"{type(self).__name__}(0 rows)"
        total = int(np.sum(self.duration_ns))
        return f"{type(self).__name__}({n:,} rows, {total / 1e6:,.3f} ms summed)"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class KernelTable(_Table):
    """Kernel executions on the GPU.

    ``names`` holds the full (demangled) names and ``short_names`` the base function
    names (what ``ncu --kernel-name`` matches), both indexed by ``name_id``.
    """

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    stream: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    correlation: np.ndarray = field(default_factory=_i64)
    name_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    names: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    grid: np.ndarray | None = None
    """(n, 3) int32, or None when the input does not record it."""
    block: np.ndarray | None = None
    launch_type: np.ndarray | None = None
    """int8 per kernel (1 regular, 2/3 cooperative), or None when not recorded."""

    def __post_init__(self) -> None:
        self._post_init()
        if not self.short_names and self.names:
            object.__setattr__(self, "short_names", tuple(short_kernel_name(n) for n in self.names))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CopyTable(_Table):
    """Memory copies executed by the GPU's copy engines (or SMs for device-to-device)."""

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    stream: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    correlation: np.ndarray = field(default_factory=_i64)
    direction: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    bytes: np.ndarray = field(default_factory=_i64)
    src_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    dst_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    def __post_init__(self) -> None:
        self._post_init()

    def host_kind(self) -> np.ndarray:
        """Per copy, the memory kind of its host side (pageable/pinned/...), -1 when none or unknown."""
        out = np.full(len(self), MEM_UNKNOWN, dtype=np.int8)
        h2d = np.isin(self.direction, (1, 11))
        d2h = np.isin(self.direction, (2, 12))
        out[h2d] = self.src_kind[h2d]
        out[d2h] = self.dst_kind[d2h]
        return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class MemsetTable(_Table):
    """Memsets executed by the GPU."""

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    stream: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    correlation: np.ndarray = field(default_factory=_i64)
    bytes: np.ndarray = field(default_factory=_i64)

    def __post_init__(self) -> None:
        self._post_init()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class GraphTable(_Table):
    """CUDA graph executions traced whole (nsys's default ``--cuda-graph-trace=graph``).

    One row per graph launch, spanning the graph's first node start to its last node end.
    """

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    stream: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    correlation: np.ndarray = field(default_factory=_i64)
    graph_id: np.ndarray = field(default_factory=_i64)

    def __post_init__(self) -> None:
        self._post_init()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SyncTable(_Table):
    """GPU-side synchronization records (CUPTI SYNCHRONIZATION / Kineto ``cuda_sync``).

    ``kind``: 1 event sync, 2 stream wait event, 3 stream sync, 4 context sync, 0 unknown.
    The times are when the host was blocked.
    """

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int16))
    stream: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    correlation: np.ndarray = field(default_factory=_i64)
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    def __post_init__(self) -> None:
        self._post_init()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ApiTable(_Table):
    """Host-side CUDA runtime and driver API calls.

    ``thread`` indexes :attr:`Timeline.threads`; ``category`` holds an :class:`ApiCategory`
    per call (computed once per distinct name from ``names``).
    """

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    thread: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    correlation: np.ndarray = field(default_factory=_i64)
    name_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    names: tuple[str, ...] = ()
    category: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))

    def __post_init__(self) -> None:
        self._post_init()

    @staticmethod
    def categories_for(names: tuple[str, ...] | list[str], name_id: np.ndarray) -> np.ndarray:
        """Per-call :class:`ApiCategory` codes from the names (one classification per distinct name)."""
        lut = np.array([int(classify_api(n)) for n in names] or [0], dtype=np.int8)
        return lut[name_id] if len(name_id) else np.zeros(0, np.int8)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class HostOpTable(_Table):
    """Host-side work that is not a CUDA call: PyTorch operators and Python functions (Kineto only).

    Nested operators overlap; ``thread`` indexes :attr:`Timeline.threads`.
    """

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    thread: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    name_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._post_init()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class RangeTable(_Table):
    """Annotated host ranges: NVTX push/pop and start/end ranges, PyTorch ``record_function`` ranges.

    Ranges mark when the *host* did the work; project them onto the GPU through the
    correlation ids of the launches inside them before measuring GPU time.
    """

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    thread: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    name_id: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    names: tuple[str, ...] = ()
    domain: np.ndarray | None = None
    """int32 per range indexing ``domains`` (the NVTX domain it was pushed in), -1 for the default
    domain; None when the input does not record domains (Kineto)."""
    domains: tuple[str, ...] = ()
    """NVTX domain names (e.g. ``"NCCL"``: libraries push their ranges in a domain of their own)."""

    def __post_init__(self) -> None:
        self._post_init()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class StepTable(_Table):
    """Profiler steps (PyTorch ``ProfilerStep#N``), host times, with the step number."""

    start_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    thread: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    number: np.ndarray = field(default_factory=_i64)

    def __post_init__(self) -> None:
        self._post_init()


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


# ---------------------------------------------------------------------------- impossible rows


def _row_text(fmt: str, t: Any, i: int) -> str:
    """One row as the input shows it: its name and times (Kineto's microseconds, nsys's nanoseconds)."""
    label = ""
    names = getattr(t, "names", ())
    nid = getattr(t, "name_id", None)
    if names and nid is not None and 0 <= int(nid[i]) < len(names):
        label = f"{names[int(nid[i])][:80]!r} "
    s, e = int(t.start_ns[i]), int(t.end_ns[i])
    if fmt == "kineto":
        return f"{label}ts {s / 1000:.3f} us, dur {(e - s) / 1000:.3f} us"
    return f"{label}start {s} ns, end {e} ns"


def _without(t: Any, drop: np.ndarray) -> Any:
    """Table ``t`` without the rows where ``drop`` is True (every column alike)."""
    keep = ~drop
    cols = {f.name: v[keep] for f in fields(t) if isinstance(v := getattr(t, f.name), np.ndarray)}
    return replace(t, **cols)


def set_aside_impossible(tl: Timeline) -> Timeline:
    """``tl`` without the rows whose times cannot be true; each kind counted and named in
    :attr:`Timeline.damaged` and in :attr:`Timeline.notes`. Both loaders call it last.

    What cannot be true (a row is counted under the first rule that catches it):

    1. An end before its start (a negative duration), or a time at or beyond 2**62 ns
       (:data:`TIMESTAMP_LIMIT_NS`).
    2. GPU work that starts before the CUDA call that launched it began (matched by correlation id,
       ids that one call holds), by more than :data:`~kprof.thresholds.CLOCK_ALIGNMENT_SLACK_NS`:
       both the GPU row and the call are set aside (one of them is wrong, and either would
       misplace a gap). In every capture of the samples and the corpus (nsys and PyTorch profiler,
       about 35,000 GPU operations) work started at least 2 us after its launch call began.
    3. GPU work farther from every host-side event (CUDA calls, operators, ranges, steps, the
       profiler's own span) than the host events' span plus the summed duration of all GPU work plus
       :data:`~kprof.thresholds.GPU_QUEUE_SLACK_NS`: work waits in a queue only behind other GPU work
       or for something the host does. Measured: at most 0.23 ms before the first host event and never
       after the last one, in the samples and the corpus.
    4. A capture whose every GPU operation lasts 0 ns: no GPU time was recorded. Those rows stay
       loaded (each alone is possible: the corpus's ResNet trace holds 292 kernels of 0 us, rounded
       from under 1 us) and are counted with ``kept=True``.

    Raises
    ------
    KprofInputError
        When a table the diagnosis measures (:data:`MEASURED_TABLES`) had rows and has none left.
    """
    from kprof.errors import KprofInputError
    from kprof.thresholds import CLOCK_ALIGNMENT_SLACK_NS, GPU_QUEUE_SLACK_NS

    tables = {name: getattr(tl, name) for name in TABLE_WORDS}
    bad = {name: np.zeros(len(t), dtype=bool) for name, t in tables.items()}
    found: list[tuple[str, str, np.ndarray]] = []  # (table, why, rows newly caught)

    def catch(name: str, why: str, rows: np.ndarray) -> None:
        rows = rows & ~bad[name]
        if rows.any():
            bad[name] |= rows
            found.append((name, why, rows))

    for name, t in tables.items():  # 1
        if len(t):
            catch(
                name,
                "a time at or beyond 2**62 ns (146 years)",
                (t.end_ns >= TIMESTAMP_LIMIT_NS) | (t.start_ns <= -TIMESTAMP_LIMIT_NS),
            )
            catch(name, "an end before its start", t.end_ns < t.start_ns)

    api = tl.api
    if len(api):  # 2
        ok = ~bad["api"] & (api.correlation > 0)
        rows = np.flatnonzero(ok) if not ok.all() else np.arange(len(api))
        ids = api.correlation[rows]
        if len(ids) > 1 and not np.all(ids[1:] >= ids[:-1]):  # calls are usually in id order already
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
        same = ids[1:] == ids[:-1]  # keep the ids that one call holds (processes may reuse ids)
        shared = np.zeros(len(ids), dtype=bool)
        shared[1:] |= same
        shared[:-1] |= same
        ids, rows = ids[~shared], rows[~shared]
        launch_start = api.start_ns[rows]
        api_bad = np.zeros(len(api), dtype=bool)
        for name in GPU_TABLES:
            t = tables[name]
            if not len(t) or not len(ids):
                continue
            j = np.clip(np.searchsorted(ids, t.correlation), 0, len(ids) - 1)
            hit = (ids[j] == t.correlation) & ~bad[name]
            early = hit & (t.start_ns < launch_start[j] - CLOCK_ALIGNMENT_SLACK_NS)
            if early.any():
                catch(name, "starts before the call that launched it began", early)
                api_bad[rows[j[early]]] = True
        catch("api", "launched GPU work that started before the call began", api_bad)

    host = [
        (int(t.start_ns[~bad[n]].min()), int(t.end_ns[~bad[n]].max()))
        for n, t in tables.items()
        if n not in GPU_TABLES and n != "syncs" and np.any(~bad[n])
    ]
    host += [(c, c) for c in (tl.capture_start_ns, tl.capture_end_ns) if c is not None]
    if host:  # 3
        lo, hi = min(h[0] for h in host), max(h[1] for h in host)
        gpu_ns = sum(int(np.sum(tables[n].duration_ns[~bad[n]])) for n in GPU_TABLES)
        slack = (hi - lo) + gpu_ns + GPU_QUEUE_SLACK_NS
        for name in GPU_TABLES:
            t = tables[name]
            if len(t):
                catch(
                    name,
                    f"lies farther from every host event than the capture can hold "
                    f"({slack / 1e9:,.3f} s: the host's span, all GPU work and 1 s)",
                    (t.start_ns > hi + slack) | (t.end_ns < lo - slack),
                )

    damaged = list(tl.damaged)
    notes = list(tl.notes)
    for name, why, rows in found:
        t = tables[name]
        kept = ~bad[name]
        mean = float(np.mean(t.duration_ns[kept])) if kept.any() else 0.0
        d = DamagedRows(
            table=name,
            count=int(np.count_nonzero(rows)),
            total=len(t),
            why=why,
            first=_row_text(tl.format, t, int(np.argmax(rows))),
            est_ns=round(mean * int(np.count_nonzero(rows))),
        )
        damaged.append(d)
        notes.append(d.describe())

    out = {name: _without(t, bad[name]) for name, t in tables.items() if bad[name].any()}
    for name in MEASURED_TABLES:
        lost = [d for d in damaged if d.table == name and not d.kept]
        if lost and not len(out.get(name, tables[name])):
            n_lost = sum(d.count for d in lost)
            raise KprofInputError(
                tl.source,
                f"every one of its {n_lost:,} {TABLE_WORDS[name]} rows has an impossible time: {lost[0].why} "
                f"(the first, {lost[0].first})",
            )
    gpu_rows = sum(len(out.get(n, tables[n])) for n in GPU_TABLES)
    if gpu_rows and all(not np.any(out.get(n, tables[n]).duration_ns) for n in GPU_TABLES):  # 4
        for name in GPU_TABLES:
            t = out.get(name, tables[name])
            if len(t):
                d = DamagedRows(
                    table=name,
                    count=len(t),
                    total=len(t),
                    why="every GPU operation of the capture lasts 0 ns, so no GPU time was recorded",
                    first=_row_text(tl.format, t, 0),
                    kept=True,
                )
                damaged.append(d)
                notes.append(d.describe())
    if not found and len(damaged) == len(tl.damaged):
        return tl
    return replace(tl, **out, damaged=tuple(damaged), notes=tuple(notes))


# ---------------------------------------------------------------------------- names


def _strip_balanced_suffix(s: str, open_c: str, close_c: str) -> str:
    """Remove one trailing balanced ``open_c ... close_c`` group (e.g. a parameter list)."""
    s = s.rstrip()
    if not s.endswith(close_c):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c == close_c:
            depth += 1
        elif c == open_c:
            depth -= 1
            if depth == 0:
                return s[:i].rstrip()
    return s


def _split_top(s: str, sep: str) -> list[str]:
    """Split ``s`` on ``sep`` outside <>, () and [] groups."""
    out: list[str] = []
    depth = 0
    cur = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth = max(0, depth - 1)
        elif depth == 0 and s.startswith(sep, i):
            out.append(s[cur:i])
            i += len(sep)
            cur = i
            continue
        i += 1
    out.append(s[cur:])
    return out


def short_kernel_name(name: str) -> str:
    """The base function name of a demangled kernel name (what nsys calls ``shortName``).

    Examples
    --------
    >>> short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
    ...                   "at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)")
    'vectorized_elementwise_kernel'
    >>> short_kernel_name("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN")
    'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN'
    >>> short_kernel_name("void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false>(float*, int)")
    'softmax_warp_forward'
    """
    s = name.strip()
    if not s:
        return s
    # the parameter list, then trailing qualifiers like " const"
    s = _strip_balanced_suffix(s, "(", ")")
    s = _strip_balanced_suffix(s, "<", ">")
    # the last :: component outside templates
    parts = _split_top(s, "::")
    last = parts[-1].strip()
    # return type and other leading words ("void foo")
    words = _split_top(last, " ")
    last = words[-1].strip() if words else last
    last = _strip_balanced_suffix(last, "<", ">")
    return last or name.strip()


__all__ = [
    "COPY_DIRECTION_NAMES",
    "GPU_TABLES",
    "MEASURED_TABLES",
    "MEMORY_KIND_NAMES",
    "TIMESTAMP_LIMIT_NS",
    "ApiCategory",
    "ApiTable",
    "CopyTable",
    "DamagedRows",
    "GpuInfo",
    "GraphTable",
    "HostOpTable",
    "KernelTable",
    "MemsetTable",
    "RangeTable",
    "StepTable",
    "SyncTable",
    "Timeline",
    "api_base_name",
    "classify_api",
    "set_aside_impossible",
    "short_kernel_name",
]
