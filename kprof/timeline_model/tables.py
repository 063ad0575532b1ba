"""The event tables of a timeline, column-wise (see :mod:`kprof.timeline_model`), and the codes their
columns use."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from kprof.timeline_model.names import classify_api, short_kernel_name

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
