"""Timeline diagnosis: is the time even inside a kernel, and if not, what was the host doing?

:func:`diagnose_timeline` takes a :class:`~kprof.timeline_model.Timeline` and returns
:class:`~kprof.model.Diagnosis` objects, the capture's verdict first.

How it decides (every threshold is in :mod:`kprof.thresholds`, each with its source):

1. **The steady state leads.** One-time work is told apart from the steady state. With >= 3
   iterations (profiler steps, or top-level NVTX ranges that repeat under one name once digits
   are ignored; a communication library's own ranges, NCCL's or MPI's, never count) an iteration
   runs from the start of its range to the start of the next (a repeated range may mark only part
   of its iteration: ``Optimizer.zero_grad``, the DataLoader's ``__next__``), and the steady state
   from the start of the first iteration after warm-up to when the GPU finishes the last one's
   work. Without iterations it begins at the first call that gives the GPU work after the last
   start-up (module and library loading, the first call that created the context, run-time
   compilation and autotuning ranges: :mod:`kprof.diagnose.phases`) issued before the bulk of
   the GPU work, and ends where teardown begins (unloads, context destruction and free storms
   after the last GPU work); when that work is a run of the same kernels
   (:func:`kprof.diagnose.phases.repeats`) with a period (:func:`kprof.diagnose.phases.loop_iterations`),
   the period's iterations are the loop's and their slow first ones are warm-up, as with steps.
   When the steady state is repeated work its verdict comes first and start-up and
   teardown are findings with their share of the capture; ``startup_bound`` leads only when
   nothing after start-up repeats and one-time work holds more than half of the capture.
2. **GPU-busy time.** The union of kernel, copy, memset and CUDA-graph intervals on the
   busiest GPU, against the steady state's wall time.
3. **Gap attribution.** Every idle gap is attributed to a cause from the mechanism, never
   from names of files or kernels: the GPU work that ends the gap is traced to its launch
   call through its correlation id. If that work was already queued when the GPU went idle,
   the GPU was waiting on a device-side dependency; so it was when that work was launched early
   in the gap and then sat queued for most of it (>= 1 ms, far beyond launch latency). If
   start-up calls or compilation ranges fill most of the gap, it is start-up work. If most of
   the gap lies in stretches of >= 1 ms in which the launching threads made no CUDA call, before
   the PyTorch operator that issues the work ending the gap began (time inside that operator is
   its dispatch), the host was computing something else (``host_compute_bound``: data loading,
   preprocessing, Python logic, communication); one or two such gaps in a steady state of many
   iterations are one-time work, left out of its numbers and reported as a finding. Else, if
   the host was blocked in a synchronizing call when the GPU went idle, the queue had drained
   behind a sync (``sync_bound``), or behind a blocking copy whose own transfer took most of
   the call (``transfer_bound``); otherwise the host was busy issuing work (Python, framework
   dispatch, launch calls) and the GPU ran out of it: ``host_launch_bound``. Work of zero
   length (start == end) ends no gap: the gap runs on to the next work that takes time.
4. **Shares decide.** Each cause holds a share of the steady state's wall time (transfers:
   copy time not overlapped by compute plus idle behind blocking copies). The kernels lead
   (``gpu_bound``, with the kernels ranked by their share of GPU time and the exact ``ncu``
   command for each) at >= 80% busy, or when they hold more than half of the wall and twice
   the largest cause; otherwise the largest cause leads. The others become findings with
   their share of the steady state's wall time (>= 5%) and what removing them saves at most,
   never the primary's id again. Below 80% busy a ``gpu_bound`` steady state whose largest
   idle cause holds GPU_BOUND_RECOVERABLE_SHARE of the wall is a fix (that cause's fix, with
   its bound), never "rarely idle". ``host_launch_bound`` is a rate: it needs
   MIN_LAUNCHES_FOR_LAUNCH_BOUND launches, else the verdict is inconclusive.

The capture is its first to last event of any kind: for an nsys export the loader adds the host
events it does not model (OS runtime calls from the process's start, before its first CUDA call;
:attr:`~kprof.timeline_model.Timeline.capture_start_ns`), and the profiler's own time inside the
process (``PROFILER_OVERHEAD``) is said apart. Advice is worded in the program's language told
from the capture (:func:`~kprof.diagnose.timeline.words._language`: PyTorch, other Python, compiled CUDA), never decided by it. A launch-bound fix
leads with batching when each iteration runs one group of several kernels MIN_REPEATS_FOR_BATCHING or
more times, and names an optimizer's foreach form only when the capture trains; host computation whose
gaps begin while the host is blocked in a sync (the queue drained on purpose) gets the queue-ahead fix.

Where the mechanism predicts a number, ``expect`` gives it as the target, bounded by the time
its cause holds: the GPU-busy fraction and wall time with the diagnosed cause's idle time
removed (host-caused idle for ``host_launch_bound``, idle without CUDA calls for
``host_compute_bound``, idle after syncs for ``sync_bound``). A launch-bound target keeps the
kernels' own time plus GRAPH_KERNEL_GAP_NS between consecutive kernels (measured inside CUDA
graphs on the H200): no launch path runs kernels gaplessly. No expectation predicts its current
value. For ``transfer_bound`` the copies
cannot move faster than the host link's peak rate: pinning and overlapping can hide them only
behind the compute there is, and when that is too little the fix leads with keeping the data on
the GPU. Expectations that cannot move (pageable bytes already 0) are left out. A ``gpu_bound``
capture gets directions only: how much a kernel fix saves is the kernel diagnosis's to say.

Memory. The tables are walked in start order a chunk of :data:`~kprof.diagnose.timeline.rows.CHUNK_ROWS` rows at a time
(merging kernels, copies, memsets and graphs on the fly; sorting an index only for a table
stored out of order), and the union of GPU work, its gaps and their attribution are computed
chunk by chunk (:func:`kprof.diagnose.intervals.union_chunks`,
:class:`~kprof.diagnose.intervals.UnionCursor`). Nothing the size of a table is copied: the
diagnosis of ten million kernels adds about 100 MB to the loaded timeline.

Where each part lives (each module imports only those above it):

=================  ==================================================================================
``rows``           event tables walked a chunk at a time; the GPU's busy intervals
``words``          units (one formatter), the program's language, kernel names
``iterations``     repeated ranges / profiler steps / the loop found in the GPU work; warm-up
``context``        what every verdict reads, once per capture: span, host calls, steady window
``gaps``           gap attribution: each idle stretch of the GPU given to its cause
``metrics``        :func:`timeline_metrics` and :func:`gap_causes` (public numbers)
``evidence``       shared evidence, confidence, capture and re-capture commands
``covers``         what fills host-compute gaps (operator, annotation, NVTX range) and its fix
``findings``       the causes besides the first, with their share
``one_time``       start-up and the end of the process as findings
``kernels``        the kernels to profile next (``ncu`` commands) and the NCCL share
``gpu_bound``      ``transfer``  ``launch``  ``host_compute``  ``sync``  ``startup``: one verdict family each
``classify``       the verdict: the steady state's largest cause leads (:func:`diagnose_timeline`)
=================  ==================================================================================

Metric keys used in ``expect`` (each computable from a Timeline by :func:`timeline_metrics`,
on the steady state, so that ``compare`` can look them up in the *after* capture):

========================  =====================================================
``wall_ns``               steady-state wall time
``gpu_busy_ns``           union of GPU work on the busiest GPU
``gpu_busy_fraction``     ``gpu_busy_ns / wall_ns``
``gpu_idle_ns``           ``wall_ns - gpu_busy_ns``
``mean_gap_ns``           mean idle gap between GPU work
``kernel_count``          kernels in the steady state
``launch_count``          launch API calls (kernels and graphs) in the steady state
``step_ns``               median iteration time (when iterations are known)
``sync_count``            blocking synchronizing calls in the steady state
``sync_wait_ns``          host time blocked in those calls
``copy_ns``               union of copy time on the busiest GPU
``exposed_copy_ns``       copy time not overlapped by compute
``pageable_copy_bytes``   bytes copied to or from pageable host memory
``host_compute_idle_ns``  GPU idle time while the host made no CUDA call (>= 1 ms stretches)
========================  =====================================================
"""

from __future__ import annotations

from kprof.diagnose.timeline.classify import diagnose_timeline
from kprof.diagnose.timeline.iterations import _iterations as _iterations
from kprof.diagnose.timeline.iterations import _marked_iterations as _marked_iterations
from kprof.diagnose.timeline.metrics import GAP_CAUSES, METRICS, GapCauses, gap_causes, timeline_metrics
from kprof.diagnose.timeline.words import NATIVE as NATIVE
from kprof.diagnose.timeline.words import PYTHON as PYTHON
from kprof.diagnose.timeline.words import PYTORCH as PYTORCH
from kprof.diagnose.timeline.words import _language as _language

__all__ = ["GAP_CAUSES", "METRICS", "GapCauses", "diagnose_timeline", "gap_causes", "timeline_metrics"]
