"""Synthetic inputs for the plot tests, built in code."""

from __future__ import annotations

import numpy as np

from kprof.kernel_model import KernelLaunch, Metric
from kprof.timeline_model import (
    ApiCategory,
    ApiTable,
    CopyTable,
    KernelTable,
    SyncTable,
    Timeline,
)

SM_HZ = 1.5e9
DRAM_HZ = 2.0e9
PEAK_FFMA_PER_CYCLE = 16896.0  # -> 2 * 16896 * 1.5e9 = 50.7 TFLOP/s
PEAK_DRAM_PER_CYCLE = 2000.0  # -> 4 TB/s


def launch(
    id: int = 0,
    name: str = "k",
    *,
    ffma_per_cycle: float = 1000.0,
    dram_bps: float = 1e12,
    l2_bps: float | None = 2e12,
    l1_bps: float | None = 4e12,
    stalls: dict[str, float] | None = None,
    sol: dict[str, float] | None = None,
) -> KernelLaunch:
    """A launch with the metrics the roofline, SOL and stall plots read."""
    m: dict[str, Metric] = {
        "sm__cycles_elapsed.avg.per_second": Metric(SM_HZ, "hz"),
        "smsp__cycles_elapsed.avg.per_second": Metric(SM_HZ, "hz"),
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": Metric(
            PEAK_FFMA_PER_CYCLE, "inst/cycle"
        ),
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed": Metric(0.0, "inst/cycle"),
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed": Metric(0.0, "inst/cycle"),
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed": Metric(
            ffma_per_cycle, "inst/cycle"
        ),
        "dram__bytes.sum.per_second": Metric(dram_bps, "byte/s"),
        "dram__bytes.sum.peak_sustained": Metric(PEAK_DRAM_PER_CYCLE, "byte/cycle"),
        "dram__cycles_elapsed.avg.per_second": Metric(DRAM_HZ, "hz"),
        "gpu__time_duration.sum": Metric(12_000.0, "ns"),
    }
    if l2_bps is not None:
        m["lts__t_bytes.sum.per_second"] = Metric(l2_bps, "byte/s")
        m["lts__t_bytes.sum.peak_sustained"] = Metric(5000.0, "byte/cycle")
        m["lts__cycles_elapsed.avg.per_second"] = Metric(SM_HZ, "hz")
    if l1_bps is not None:
        m["l1tex__t_bytes.sum.per_second"] = Metric(l1_bps, "byte/s")
        m["l1tex__t_bytes.sum.peak_sustained"] = Metric(20000.0, "byte/cycle")
        m["l1tex__cycles_elapsed.avg.per_second"] = Metric(SM_HZ, "hz")
    for reason, v in (stalls or {}).items():
        m[f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"] = Metric(v, "")
    sol = {"compute": 40.0, "memory": 75.0, "dram": 70.0} if sol is None else sol
    names = {
        "compute": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "memory": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    }
    for key, v in sol.items():
        m[names[key]] = Metric(v, "%")
    return KernelLaunch(id=id, name=name, grid=(4, 1, 1), block=(128, 1, 1), metrics=m)


def timeline(
    n: int = 50,
    *,
    period_ns: int = 10_000,
    kernel_ns: int = 4_000,
    streams: tuple[int, ...] = (7,),
    kernel_name: str = "void k<float>(float*)",
    sync_every: int = 0,
) -> Timeline:
    """``n`` launches, one every ``period_ns``, each kernel ``kernel_ns`` long, round-robin over
    ``streams``; the host issues a launch call before each kernel, and a blocking sync
    every ``sync_every`` launches (0: never), which also ends in a DtoH copy."""
    t0 = 1_000_000
    starts = t0 + np.arange(n, dtype=np.int64) * period_ns + 2_000
    ends = starts + kernel_ns
    k = KernelTable(
        start_ns=starts,
        end_ns=ends,
        device=np.zeros(n, np.int16),
        stream=np.array([streams[i % len(streams)] for i in range(n)], np.int32),
        correlation=np.arange(n, dtype=np.int64),
        name_id=np.zeros(n, np.int32),
        names=(kernel_name,),
    )
    a_s = [starts - 1_500]
    a_e = [starts - 500]
    a_c = [np.full(n, int(ApiCategory.LAUNCH), np.int8)]
    a_n = [np.zeros(n, np.int32)]
    names = ["cudaLaunchKernel"]
    copies = CopyTable()
    syncs = SyncTable()
    if sync_every:
        idx = np.arange(sync_every - 1, n, sync_every)
        ss = ends[idx] - 3_000
        se = ends[idx] + 4_000
        a_s.append(ss)
        a_e.append(se)
        a_c.append(np.full(len(idx), int(ApiCategory.SYNC), np.int8))
        a_n.append(np.ones(len(idx), np.int32))
        names.append("cudaStreamSynchronize")
        m = len(idx)
        copies = CopyTable(
            start_ns=ends[idx] + 500,
            end_ns=ends[idx] + 3_000,
            device=np.zeros(m, np.int16),
            stream=np.full(m, streams[0], np.int32),
            correlation=np.arange(n, n + m, dtype=np.int64),
            direction=np.full(m, 2, np.int8),
            bytes=np.full(m, 4096, np.int64),
            src_kind=np.full(m, 2, np.int8),
            dst_kind=np.full(m, 0, np.int8),
        )
        syncs = SyncTable(
            start_ns=ss,
            end_ns=se,
            device=np.zeros(m, np.int16),
            stream=np.full(m, streams[0], np.int32),
            correlation=np.arange(n + m, n + 2 * m, dtype=np.int64),
            kind=np.full(m, 3, np.int8),
        )
    s = np.concatenate(a_s)
    order = np.argsort(s, kind="stable")
    api = ApiTable(
        start_ns=s[order],
        end_ns=np.concatenate(a_e)[order],
        thread=np.zeros(len(s), np.int32),
        correlation=np.arange(len(s), dtype=np.int64),
        name_id=np.concatenate(a_n)[order],
        names=tuple(names),
        category=np.concatenate(a_c)[order],
    )
    return Timeline(
        source="/captures/<b>run</b>.sqlite",
        format="nsys",
        kernels=k,
        copies=copies,
        syncs=syncs,
        api=api,
        threads=("python3 (main)",),
    )
