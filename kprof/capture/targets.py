"""Which kernels to give ncu, read from the timeline: those that hold most of the GPU time, each with
the launch to profile past its warm-up, and whether its launches are cooperative."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kprof.timeline_model import Timeline


TOP_KERNELS_MAX = 3
"""ncu runs the whole program once per kernel (6-11 s each on the H200 for a PyTorch program,
much more with application replay); three kernels cover the time of nearly every program."""

TOP_KERNEL_MIN_SHARE = 0.10
"""Below a tenth of the GPU time, a kernel cannot change the total much even if made free;
the first kernel is always profiled."""

WARMUP_FRACTION = 10
"""Skip the first 1/WARMUP_FRACTION of a kernel's launches (at least 1, at most WARMUP_MAX)."""

WARMUP_MAX = 20
"""... but never more than this many: ncu intercepts every launch it skips, so a large skip
slows the capture, and twenty launches are past any warm-up seen in the H200 samples."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelTarget:
    """A kernel worth profiling with ncu, read from the timeline."""

    name: str
    """Full (demangled) name."""
    short_name: str
    """Function name without parameters or templates: what ``ncu -k`` matches by default."""
    gpu_time_ns: int
    share: float
    """Share of all kernel time in the capture (0..1)."""
    launches: int
    launch_skip: int
    """``ncu --launch-skip``: launches of ``short_name`` to pass before the profiled one."""
    skip_reason: str
    cooperative: bool = False
    """True when any launch was cooperative (grid sync): kernel replay would break it."""

    @property
    def kernel_filter(self) -> str:
        return self.short_name

    @property
    def replay_mode(self) -> str:
        return "application" if self.cooperative else "kernel"


def warmup_launches(n: int) -> int:
    """How many of a kernel's ``n`` launches to skip as warm-up.

    The first launches pay one-time costs that the steady state does not: lazy module loading
    (``cuLibraryLoadData``, 20-48 ms in the H200 captures), allocator growth, library autotuning,
    clocks still ramping. Skip a tenth of them, at least one (when there is more than one) and at
    most :data:`WARMUP_MAX`.

    Examples
    --------
    >>> [warmup_launches(n) for n in (1, 2, 10, 80, 1000)]
    [0, 1, 1, 8, 20]
    """
    if n <= 1:
        return 0
    return min(n - 1, WARMUP_MAX, max(1, n // WARMUP_FRACTION))


def _launch_order(timeline: Timeline) -> Any:
    """Indices of the kernel rows in the order the host launched them (ncu counts in that order)."""
    import numpy as np

    k = timeline.kernels
    corr = np.asarray(k.correlation)
    if len(corr) and bool((corr > 0).all()):
        return np.lexsort((np.asarray(k.start_ns), corr))
    return np.argsort(np.asarray(k.start_ns), kind="stable")


def _is_cooperative(timeline: Timeline, rows: Any) -> bool:
    import numpy as np

    from kprof.timeline_model import LAUNCH_COOPERATIVE

    lt = timeline.kernels.launch_type
    if lt is None or not len(rows):
        return False
    return bool(np.isin(np.asarray(lt)[rows], LAUNCH_COOPERATIVE).any())


def top_kernels(
    timeline: Timeline, *, max_kernels: int = TOP_KERNELS_MAX, min_share: float = TOP_KERNEL_MIN_SHARE
) -> list[KernelTarget]:
    """The kernels that hold most of the GPU time, each with the launch to profile.

    Kernels are ranked by their summed duration (distinct demangled names: two instantiations of a
    template are two kernels). ncu matches by function name, which instantiations share, so the
    ``launch_skip`` of a target counts every launch with its short name: it points at the first
    launch of *this* instantiation after its warm-up (:func:`warmup_launches`).

    Examples
    --------
    >>> import numpy as np
    >>> from kprof.timeline_model import KernelTable, Timeline
    >>> k = KernelTable(start_ns=np.arange(0, 100, 10), end_ns=np.arange(0, 100, 10) + 8,
    ...                 correlation=np.arange(1, 11), name_id=np.array([0, 1] * 5), names=("void gemm<1>()", "void add()"),
    ...                 device=np.zeros(10, np.int16), stream=np.zeros(10, np.int32))
    >>> [(t.short_name, t.launches, t.launch_skip) for t in top_kernels(Timeline(source="x", format="nsys", kernels=k))]
    [('gemm', 5, 1), ('add', 5, 1)]
    """
    import numpy as np

    k = timeline.kernels
    if len(k) == 0:
        return []
    ids = np.asarray(k.name_id)
    dur = np.asarray(k.duration_ns, dtype=np.float64)
    n_names = len(k.names)
    totals = np.bincount(ids, weights=dur, minlength=n_names)
    counts = np.bincount(ids, minlength=n_names)
    total = float(totals.sum())
    if total <= 0:
        return []
    shorts = list(k.short_names) if k.short_names else list(k.names)
    order = _launch_order(timeline)
    seq_ids = ids[order]
    seq_short = (
        np.array([shorts[i] for i in seq_ids], dtype=object) if len(seq_ids) else np.array([], dtype=object)
    )
    out: list[KernelTarget] = []
    for nid in np.argsort(-totals, kind="stable"):
        share = float(totals[nid]) / total
        if len(out) >= max_kernels or (out and share < min_share):
            break
        nid = int(nid)
        short = shorts[nid]
        same_short = seq_short == short
        positions = np.nonzero(seq_ids[same_short] == nid)[0]  # positions among launches matching `short`
        n = int(counts[nid])
        w = warmup_launches(n)
        skip = int(positions[w]) if len(positions) > w else 0
        others = int(same_short.sum()) - n
        if n == 1:
            reason = "it launched once, so that launch is profiled, warm-up included"
        else:
            reason = (
                f"skips its first {w} of {n} launches as warm-up (lazy module loading, allocator growth, "
                "autotuning, clocks ramping up)"
            )
        if others:
            reason += (
                f"; ncu matches by the function name `{short}`, which {others} launches of other "
                f"instantiations share, so --launch-skip {skip} counts those too"
            )
        out.append(
            KernelTarget(
                name=k.names[nid],
                short_name=short,
                gpu_time_ns=int(totals[nid]),
                share=share,
                launches=n,
                launch_skip=skip,
                skip_reason=reason,
                cooperative=_is_cooperative(timeline, np.nonzero(ids == nid)[0]),
            )
        )
    return out


def matching_launches(timeline: Timeline, regex: str) -> tuple[int, bool]:
    """Launches whose function name matches ``regex`` (``re.search``, as ncu's ``regex:``), and whether any was cooperative."""
    import numpy as np

    k = timeline.kernels
    if len(k) == 0:
        return 0, False
    pat = re.compile(regex[len("regex:") :] if regex.startswith("regex:") else regex)
    shorts = k.short_names or k.names
    hit = np.array([bool(pat.search(s)) for s in shorts] or [False])
    rows = np.nonzero(hit[np.asarray(k.name_id)])[0] if len(shorts) else np.array([], dtype=np.int64)
    return len(rows), _is_cooperative(timeline, rows)
