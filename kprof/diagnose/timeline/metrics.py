"""The public numbers of a timeline: :func:`timeline_metrics` (what ``expect`` and ``kprof compare``
measure) and :func:`gap_causes` (the idle gaps and their causes, for plots and trace exports)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kprof import thresholds as th
from kprof.diagnose.timeline.context import _Context, _context
from kprof.diagnose.timeline.gaps import _CAUSES, _steady_state
from kprof.diagnose.timeline.iterations import REPEATED_WORK
from kprof.diagnose.timeline.words import _ms
from kprof.timeline_model import (
    Timeline,
)

METRICS: dict[str, str] = {
    "wall_ns": "steady-state wall time",
    "gpu_busy_ns": "GPU-busy time (union of kernels, copies, memsets, graphs)",
    "gpu_busy_fraction": "GPU-busy fraction",
    "gpu_idle_ns": "GPU idle time",
    "mean_gap_ns": "mean idle gap",
    "kernel_count": "kernels",
    "launch_count": "launch calls",
    "step_ns": "median iteration time",
    "sync_count": "blocking syncs",
    "sync_wait_ns": "host time blocked in syncs",
    "copy_ns": "copy time",
    "exposed_copy_ns": "copy time not overlapped by compute",
    "pageable_copy_bytes": "bytes copied through pageable memory",
    "host_compute_idle_ns": "GPU idle time while the host made no CUDA call for >= 1 ms",
    "host_paced_idle_ns": "GPU idle time waiting on the host (every idle cause but work queued behind a "
    "device-side dependency)",
}
"""The metric keys of ``expect``, with what each means (see the module docstring)."""


GAP_CAUSES: tuple[str, ...] = _CAUSES
"""The causes :func:`gap_causes` gives an idle gap, as the diagnosis attributes them:

- ``host``: the host was still issuing work when the GPU ran out of it (``host_launch_bound``);
- ``host_compute``: most of the gap lies in stretches of >= 1 ms in which the launching threads made no
  CUDA call: the host computed something else (``host_compute_bound``);
- ``sync``: the queue had drained behind a blocking call (``sync_bound``);
- ``copy``: the host was blocked in a copy whose own transfer took most of the call (``transfer_bound``);
- ``startup``: one-time work: start-up calls (module loading, context creation) fill the gap
  (``startup_bound``), or host work without CUDA calls that happened in only one or two gaps of a steady
  state of many iterations (left out of the steady state's numbers);
- ``device_wait``: the work that ends the gap was already queued: a device-side dependency;
- ``unknown``: the capture has no host-side CUDA API events to attribute the gap with.
"""


@dataclass(frozen=True, slots=True, eq=False)
class GapCauses:
    """The idle gaps of the diagnosed GPU in the steady state, each with the cause the diagnosis gave it.

    ``start_ns``/``end_ns`` are the gaps (clipped to ``window``, in time order) and ``cause`` holds one
    of :data:`GAP_CAUSES` per gap. ``window`` is the steady state the diagnosis measured (None when
    the capture holds no GPU work) and ``device`` the GPU whose gaps these are (the busiest).
    """

    start_ns: np.ndarray
    end_ns: np.ndarray
    cause: np.ndarray
    window: tuple[int, int] | None = None
    device: int | None = None

    def __len__(self) -> int:
        return len(self.start_ns)

    def idle_by_cause(self) -> dict[str, int]:
        """Idle nanoseconds per cause (every cause of :data:`GAP_CAUSES`, 0 when absent)."""
        dur = self.end_ns - self.start_ns
        return {c: int(dur[self.cause == c].sum()) for c in GAP_CAUSES}

    def __repr__(self) -> str:
        idle = {c: v for c, v in self.idle_by_cause().items() if v}
        parts = ", ".join(f"{c} {_ms(v)}" for c, v in sorted(idle.items(), key=lambda kv: -kv[1]))
        return f"GapCauses({len(self):,} gaps" + (f": {parts}" if parts else "") + ")"


def gap_causes(tl: Timeline) -> GapCauses:
    """The steady state's idle GPU gaps with their causes, from the pass that the diagnosis makes.

    The same context and gap attribution as :func:`diagnose_timeline` (the busiest GPU, the same
    steady state, the whole capture when the steady state is empty), so a timeline plot labelled
    with these causes shows what the diagnosis counted: ``plot_timeline(tl, gaps=gap_causes(tl))``.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> gap_causes(Timeline(source="x", format="nsys"))
    GapCauses(0 gaps)
    """
    if tl.gpu_op_count == 0:
        empty = np.zeros(0, np.int64)
        return GapCauses(empty, empty.copy(), np.zeros(0, dtype="<U1"))
    ctx = _context(tl)
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    st = _steady_state(ctx, chunks)
    windows = st.window
    if len(st.one_off[0]):  # one-time host work inside the loop: left out of the numbers, shown as one-time
        code = np.full(len(st.one_off[0]), _CAUSES.index("startup"), np.int8)
        chunks.append((st.one_off[0], st.one_off[1], code))
        chunks.sort(key=lambda c: int(c[0][0]) if len(c[0]) else 0)
    if chunks:
        starts = np.concatenate([c[0] for c in chunks]).astype(np.int64, copy=False)
        ends = np.concatenate([c[1] for c in chunks]).astype(np.int64, copy=False)
        codes = np.concatenate([c[2] for c in chunks])
        o = np.argsort(starts, kind="stable")
        starts, ends, codes = starts[o], ends[o], codes[o]
    else:
        starts, ends, codes = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int8)
    labels = np.array(GAP_CAUSES)
    return GapCauses(
        start_ns=starts,
        end_ns=ends,
        cause=labels[codes],
        window=(int(windows[0][0]), int(windows[1][-1])),
        device=ctx.gpu.device,
    )


def timeline_metrics(tl: Timeline) -> dict[str, float]:
    """The ``expect`` metrics (see :data:`METRICS`) measured on a timeline's steady state.

    Empty when the timeline holds no GPU work.

    Examples
    --------
    >>> from kprof.timeline_model import Timeline
    >>> timeline_metrics(Timeline(source="x", format="nsys"))
    {}
    """
    if tl.gpu_op_count == 0:
        return {}
    ctx = _context(tl)
    w = _steady_state(ctx).stats
    out: dict[str, float] = {
        "wall_ns": float(w.wall_ns),
        "gpu_busy_ns": float(w.busy_ns),
        "gpu_busy_fraction": w.busy_fraction,
        "gpu_idle_ns": float(w.idle_ns),
        "mean_gap_ns": w.mean_gap_ns,
        "kernel_count": float(w.kernel_count),
        "launch_count": float(w.launch_count),
        "sync_count": float(w.sync_count),
        "sync_wait_ns": float(w.sync_wait_ns),
        "copy_ns": float(w.copy_ns),
        "exposed_copy_ns": float(w.exposed_copy_ns),
        "pageable_copy_bytes": float(w.pageable_bytes),
        "host_compute_idle_ns": float(w.idle_by_cause.get("host_compute", 0)),
        "host_paced_idle_ns": float(w.idle_ns - w.idle_by_cause.get("device_wait", 0)),
    }
    st = _step_times(ctx) if ctx.its.kind != REPEATED_WORK else None  # no marked step to compare
    if st is not None:
        out["step_ns"] = float(np.median(st))
    return out


def _step_times(ctx: _Context) -> np.ndarray | None:
    s, e = ctx.iterations
    if len(s) == 0:
        return None
    if len(s) >= th.MIN_ITERATIONS_FOR_WARMUP_DROP:
        k = ctx.its.warmup
        s, e = s[k:], e[k:]
    # an iteration's time is start-to-next-start (the loop period), the last one its own length
    period = np.empty(len(s), np.int64)
    period[:-1] = np.diff(s)
    period[-1] = e[-1] - s[-1]
    return period
