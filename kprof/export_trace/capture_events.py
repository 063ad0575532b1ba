"""The capture's own events: GPU work per stream, and per host thread its CUDA calls, operators and
ranges."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from kprof.timeline_model import COPY_DIRECTION_NAMES, MEMORY_KIND_NAMES, Timeline, api_base_name

if TYPE_CHECKING:
    pass

from kprof.export_trace.tracks import (
    HOST_PID,
    _laned,
    _Tracks,
    _x,
)


def _gpu_event(tl: Timeline, kind: str, i: int, pid: int, tid: int, origin: int) -> dict[str, Any]:
    k, c, m, g = tl.kernels, tl.copies, tl.memsets, tl.graphs
    if kind == "kernel":
        args: dict[str, Any] = {"name": k.names[k.name_id[i]], "correlation": int(k.correlation[i])}
        if k.grid is not None:
            args["grid"] = [int(x) for x in k.grid[i]]
        if k.block is not None:
            args["block"] = [int(x) for x in k.block[i]]
        short = k.short_names or k.names
        return _x(short[k.name_id[i]], "kernel", pid, tid, int(k.start_ns[i]), int(k.end_ns[i]), origin, args)
    if kind == "memcpy":
        d = COPY_DIRECTION_NAMES.get(int(c.direction[i]), "copy")
        args = {
            "bytes": int(c.bytes[i]),
            "src": MEMORY_KIND_NAMES.get(int(c.src_kind[i]), "unknown"),
            "dst": MEMORY_KIND_NAMES.get(int(c.dst_kind[i]), "unknown"),
            "correlation": int(c.correlation[i]),
        }
        return _x(f"memcpy {d}", "memcpy", pid, tid, int(c.start_ns[i]), int(c.end_ns[i]), origin, args)
    if kind == "memset":
        args = {"bytes": int(m.bytes[i]), "correlation": int(m.correlation[i])}
        return _x("memset", "memset", pid, tid, int(m.start_ns[i]), int(m.end_ns[i]), origin, args)
    args = {"graph_id": int(g.graph_id[i]), "correlation": int(g.correlation[i])}
    return _x("CUDA graph", "graph", pid, tid, int(g.start_ns[i]), int(g.end_ns[i]), origin, args)


def _gpu_events(
    tl: Timeline, tracks: _Tracks, origin: int, gpu_pids: dict[int, int]
) -> Iterator[dict[str, Any]]:
    tables: list[tuple[str, Any]] = [("kernel", tl.kernels), ("memcpy", tl.copies), ("memset", tl.memsets),
                                     ("graph", tl.graphs)]  # fmt: skip
    keys: set[tuple[int, int]] = set()
    for _, t in tables:
        keys |= set(zip(t.device.tolist(), t.stream.tolist(), strict=True))
    for dev, stream in sorted(keys):
        pid = gpu_pids[dev]
        sels = [(kind, t, np.flatnonzero((t.device == dev) & (t.stream == stream))) for kind, t in tables]
        starts = np.concatenate([t.start_ns[s] for _, t, s in sels])
        ends = np.concatenate([t.end_ns[s] for _, t, s in sels])
        which = [(kind, int(i)) for kind, _, s in sels for i in s.tolist()]
        for j, tid in _laned(tracks, pid, f"stream {stream}", starts, ends):
            kind, i = which[j]
            yield _gpu_event(tl, kind, i, pid, tid, origin)


def _host_events(tl: Timeline, tracks: _Tracks, origin: int) -> Iterator[dict[str, Any]]:
    a, ops, r, st = tl.api, tl.host_ops, tl.ranges, tl.steps
    threads = sorted(
        set(a.thread.tolist()) | set(ops.thread.tolist()) | set(r.thread.tolist()) | set(st.thread.tolist())
    )
    api_names = [api_base_name(n) for n in a.names]
    for th in threads:
        label = tl.threads[th] if 0 <= th < len(tl.threads) else f"thread {th}"
        # ranges and profiler steps: what the program said it was doing
        sel_r = np.flatnonzero(r.thread == th)
        sel_s = np.flatnonzero(st.thread == th)
        nr = len(sel_r)
        starts = np.concatenate([r.start_ns[sel_r], st.start_ns[sel_s]])
        ends = np.concatenate([r.end_ns[sel_r], st.end_ns[sel_s]])
        for j, tid in _laned(tracks, HOST_PID, f"{label}: ranges", starts, ends):
            if j < nr:
                i = int(sel_r[j])
                dom = ""
                if r.domain is not None and r.domains and 0 <= int(r.domain[i]) < len(r.domains):
                    dom = r.domains[int(r.domain[i])]
                yield _x(r.names[r.name_id[i]], "range", HOST_PID, tid, int(r.start_ns[i]), int(r.end_ns[i]),
                         origin, {"domain": dom} if dom else None)  # fmt: skip
            else:
                i = int(sel_s[j - nr])
                yield _x(f"ProfilerStep#{int(st.number[i])}", "step", HOST_PID, tid, int(st.start_ns[i]),
                         int(st.end_ns[i]), origin)  # fmt: skip
        sel_o = np.flatnonzero(ops.thread == th)
        for j, tid in _laned(tracks, HOST_PID, f"{label}: host ops", ops.start_ns[sel_o], ops.end_ns[sel_o]):
            i = int(sel_o[j])
            yield _x(ops.names[ops.name_id[i]], "host_op", HOST_PID, tid, int(ops.start_ns[i]), int(ops.end_ns[i]),
                     origin)  # fmt: skip
        sel_a = np.flatnonzero(a.thread == th)
        for j, tid in _laned(tracks, HOST_PID, f"{label}: CUDA API", a.start_ns[sel_a], a.end_ns[sel_a]):
            i = int(sel_a[j])
            yield _x(api_names[a.name_id[i]], "cuda_api", HOST_PID, tid, int(a.start_ns[i]), int(a.end_ns[i]),
                     origin, {"correlation": int(a.correlation[i])})  # fmt: skip
