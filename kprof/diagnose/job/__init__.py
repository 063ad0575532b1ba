"""Job diagnosis: many ranks of one distributed job, each reduced to a small :class:`RankSummary`.

One rank's timeline cannot tell whether the job waits for a straggler or is bound by
communication: a rank that waits inside an all-reduce looks, on its own, like a GPU busy
with NCCL kernels. The job view compares the ranks step by step.

Two pure steps:

1. :func:`summarize_timeline` reduces one rank's :class:`~kprof.timeline_model.Timeline` to a
   :class:`RankSummary` of a few kilobytes: per step, the rank's compute time (union of its
   non-NCCL kernels), its NCCL kernel time, and its *exposed* communication (NCCL kernel time
   not overlapped by compute kernels on the same GPU), plus the step's period on the GPU.
   Steps are profiler steps (``ProfilerStep#N``) or the repeated NVTX range that covers the
   most time (``step 3``), projected onto the GPU through the correlation ids of the launches
   issued inside them (docs/inputs.md: NVTX marks when the host enqueued work, not when it ran).
2. :func:`diagnose_summaries` aligns the ranks' steps by step number (by order when the
   numbers do not match), leaves the first common step out as warm-up when there are at
   least three, and judges the job on per-rank medians over the aligned steps.

How it decides (thresholds in :mod:`kprof.thresholds`, "job" section, each with its source):

- **straggler**: one or a few ranks (at most ``STRAGGLER_MAX_FRACTION`` of them) compute
  longer per step than the typical rank (more than ``STRAGGLER_MIN_EXCESS``), and the other
  ranks' exposed NCCL time per step is correspondingly longer (by at least
  ``STRAGGLER_WAIT_MATCH`` of the excess): they wait for it inside the collectives. The same
  test on a rank's non-waiting time (step minus exposed NCCL) finds a straggler whose GPU
  is idle rather than busy (a host-side delay: data loading, a slow CPU).
- **load_imbalance**: compute per step differs across ranks (more than
  ``LOAD_IMBALANCE_SPREAD``) but not as a few outliers.
- **communication_bound**: on every rank, exposed NCCL time is the largest share of the
  step (more than compute and more than idle time).
- otherwise the bottleneck the ranks share (their own timeline diagnoses), for the job.

The *typical* rank is the median of the faster half of the ranks: slow ranks, at most half,
never move it, and with two ranks it is the faster one.

Rules come from the mechanism only: NCCL kernels are recognised by their function name
(``ncclDevKernel_*``, ``ncclKernel_*``), never by file names.
"""

from __future__ import annotations

from kprof.diagnose.job.classify import diagnose_summaries
from kprof.diagnose.job.stats import JobStats, job_stats, straggler_ranks, typical
from kprof.diagnose.job.summary import MAX_SAMPLE_INTERVALS as MAX_SAMPLE_INTERVALS
from kprof.diagnose.job.summary import TOP_KERNEL_NAMES as TOP_KERNEL_NAMES
from kprof.diagnose.job.summary import RankSummary, is_nccl_kernel, summarize_timeline
from kprof.diagnose.job.summary import _cap as _cap

__all__ = [
    "JobStats",
    "RankSummary",
    "diagnose_summaries",
    "is_nccl_kernel",
    "job_stats",
    "straggler_ranks",
    "summarize_timeline",
    "typical",
]
