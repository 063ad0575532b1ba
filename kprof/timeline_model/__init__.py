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

Modules: :mod:`~kprof.timeline_model.tables` (the event tables and their codes),
:mod:`~kprof.timeline_model.timeline` (:class:`Timeline`), :mod:`~kprof.timeline_model.impossible`
(rows set aside), :mod:`~kprof.timeline_model.names` (API categories, short kernel names).
"""

from __future__ import annotations

from kprof.timeline_model.impossible import (
    NO_GPU_TIME,
    set_aside_impossible,
)
from kprof.timeline_model.names import (
    ApiCategory,
    api_base_name,
    classify_api,
    short_kernel_name,
)
from kprof.timeline_model.tables import (
    COPY_DIRECTION_NAMES,
    COPY_DTOD,
    COPY_DTOH,
    COPY_HTOD,
    COPY_HTOH,
    COPY_PTOP,
    LAUNCH_COOPERATIVE,
    MEM_DEVICE,
    MEM_MANAGED,
    MEM_PAGEABLE,
    MEM_PINNED,
    MEM_UNKNOWN,
    MEMORY_KIND_NAMES,
    TIMESTAMP_LIMIT_NS,
    ApiTable,
    CopyTable,
    GraphTable,
    HostOpTable,
    IntArray,
    KernelTable,
    MemsetTable,
    RangeTable,
    StepTable,
    SyncTable,
)
from kprof.timeline_model.timeline import (
    GPU_TABLES,
    MEASURED_TABLES,
    TABLE_WORDS,
    DamagedRows,
    GpuInfo,
    Timeline,
)

__all__ = [
    "COPY_DIRECTION_NAMES",
    "COPY_DTOD",
    "COPY_DTOH",
    "COPY_HTOD",
    "COPY_HTOH",
    "COPY_PTOP",
    "GPU_TABLES",
    "LAUNCH_COOPERATIVE",
    "MEASURED_TABLES",
    "MEMORY_KIND_NAMES",
    "MEM_DEVICE",
    "MEM_MANAGED",
    "MEM_PAGEABLE",
    "MEM_PINNED",
    "MEM_UNKNOWN",
    "NO_GPU_TIME",
    "TABLE_WORDS",
    "TIMESTAMP_LIMIT_NS",
    "ApiCategory",
    "ApiTable",
    "CopyTable",
    "DamagedRows",
    "GpuInfo",
    "GraphTable",
    "HostOpTable",
    "IntArray",
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
