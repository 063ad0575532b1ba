"""The measuring engine of the validation galleries' measure.py scripts (timeline, heldout, final, blind4,
blind5, ...): the numbers their labels.json quote, computed from the files. Each gallery's measure.py declares its
entries with :func:`_entry` and calls :func:`main`. Stdlib only (sqlite3, json, gzip); it never imports kprof.

Every entry in WINDOWS below names how its steady-state window is found in the file, from what the
program is known to do (the loop's "anchor": a GPU activity that happens exactly once per loop
iteration, with the first `skip` iterations left out as warm-up). The window runs from the GPU start
of anchor number `skip` to the GPU start of the LAST anchor, so it holds whole iterations (each with
the gap that follows it) and leaves out the first iterations (lazy loading) and the drain of the last.
Kernel names are used here only to find the loop's iterations for measuring, never to judge.

Definitions (all times in the file's own clock; nsys ns, Kineto us, printed in ms):
  capture span      first to last recorded event of any kind (nsys: CUDA API, OS runtime, NVTX, GPU
                    activity; Kineto: every complete event, ph X). nsys's own session length
                    (ANALYSIS_DETAILS.duration) is printed beside it.
  GPU busy          union of kernel + memcpy + memset (+ CUDA-graph trace) intervals, clipped to the
                    window, over the window's length; also kernel-only and copy-only unions.
  start-up          capture start .. window start; "loop end" = end of the last GPU activity that
                    starts before the teardown marker (first call matching `teardown_api` after the
                    last anchor) or, without one, the last GPU activity; "after loop" = loop end ..
                    capture end.
  idle cover        the window's GPU-idle time split by what the host was inside at that moment
                    (any thread): a synchronizing call (cuda*Synchronize, cuStreamSynchronize,
                    cuCtxSynchronize, cuEventSynchronize), a memcpy/memset API call, a launch
                    (cudaLaunchKernel*, cuLaunchKernel*, cudaGraphLaunch*), another CUDA API call,
                    or no CUDA API call at all; "after sync" = idle time in gaps that begin within
                    50 us after a synchronizing call returned.
  covering ranges   for the no-CUDA-call idle time: how much of it lies inside NVTX ranges / OS
                    runtime calls (nsys) or inside each CPU op / user annotation / python function
                    name (Kineto; nested ops count once per name), split into the process's main
                    thread (tid == pid) and other threads (e.g. PyTorch's autograd engine thread,
                    which launches the backward pass, or background threads sitting in poll()).
  copies            in the window: count, bytes, time, and memory kind (nsys srcKind/dstKind;
                    Kineto: the memcpy event's name, e.g. "Memcpy HtoD (Pageable -> Device)").
  syncs             in the window: synchronizing API calls (count, host time) and, for nsys,
                    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION rows.
"""

from __future__ import annotations

import bisect
import gzip
import json
import os
import re
import sqlite3
import sys
import tempfile
from collections import defaultdict

HERE = ""
"""The gallery folder whose files are measured (set by :func:`main`)."""

# id -> (file, anchor, skip, teardown_api). anchor: None (one-shot: no loop), or a dict:
#   {"type": "kernel", "match": regex on the kernel name, "every": k, "last": n} (of the kernels that
#   match, keep the last n if given, then every k-th), {"type": "graph"} (each CUDA-graph trace row), or
#   {"type": "memcpy", "kind": "HtoD", "bytes": exact size or None, "every": k}.
WINDOWS: dict[str, tuple[str, dict | None, int, str | None]] = {}


def _entry(eid, fname, anchor, skip=2, teardown=None):
    WINDOWS[eid] = (fname, anchor, skip, teardown)


def K(match, every=1, last=None):
    return {"type": "kernel", "match": match, "every": every, "last": last}


def C(kind="HtoD", nbytes=None, every=1):
    return {"type": "memcpy", "kind": kind, "bytes": nbytes, "every": every}

SYNC_RE = re.compile(r"^(cuda(Device|Stream|Event)Synchronize|cu(Stream|Ctx|Event)Synchronize)")
COPY_RE = re.compile(r"^(cuda|cu)Memcpy|^(cuda|cu)Memset")
LAUNCH_RE = re.compile(r"^(cudaLaunch|cuLaunch|cudaGraphLaunch|cuGraphLaunch)")
MEMKIND = {
    0: "pageable",
    1: "pinned",
    2: "device",
    3: "array",
    4: "managed",
    5: "device static",
    6: "managed static",
    7: "unknown",
}
COPYKIND = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}


# ------------------------------------------------------------------------------------------ intervals
def union(iv):
    out = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def clip(iv, a, b):
    return [[max(s, a), min(e, b)] for s, e in iv if e > a and s < b]


def length(iv):
    return sum(e - s for s, e in iv)


def complement(iv, a, b):
    out, cur = [], a
    for s, e in union(clip(iv, a, b)):
        if s > cur:
            out.append([cur, s])
        cur = max(cur, e)
    if cur < b:
        out.append([cur, b])
    return out


def intersect_len(a_iv, b_iv):
    """Length of the intersection of two unions."""
    a_iv, b_iv = union(a_iv), union(b_iv)
    i = j = 0
    tot = 0
    while i < len(a_iv) and j < len(b_iv):
        s, e = max(a_iv[i][0], b_iv[j][0]), min(a_iv[i][1], b_iv[j][1])
        if e > s:
            tot += e - s
        if a_iv[i][1] < b_iv[j][1]:
            i += 1
        else:
            j += 1
    return tot


def subtract(a_iv, b_iv):
    """a minus b (both any intervals)."""
    out = []
    b_iv = union(b_iv)
    for s, e in union(a_iv):
        out += complement(clip(b_iv, s, e), s, e)
    return out


# ------------------------------------------------------------------------------------------ loaders
def _nsys_main(gtid):
    """nsys serialized GlobalId: pid in bits 24-47, tid in bits 0-23; the main thread has tid == pid."""
    return gtid is not None and ((gtid >> 24) & 0xFFFFFF) == (gtid & 0xFFFFFF)


class Trace:
    """What measure() needs, in one unit: ns for nsys, us for Kineto (scale converts to ms)."""

    def __init__(self):
        self.kind = ""
        self.to_ms = 1.0
        self.span = (0, 0)
        self.kernels = []  # (start, end, name)
        self.copies = []  # (start, end, bytes, kind str, src kind str, dst kind str)
        self.memsets = []  # (start, end)
        self.graphs = []  # (start, end)
        self.api = []  # (start, end, name, thread)
        self.sync_rows = []  # nsys CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end)
        self.host_ranges = {}  # label -> list of (start, end, name, thread)
        self.duration = None  # nsys ANALYSIS_DETAILS.duration (session length), for reference


def _open_sqlite(path):
    if path.endswith(".gz"):
        with tempfile.NamedTemporaryFile(suffix=".sqlite", delete=False) as tmp, gzip.open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                tmp.write(chunk)
        return sqlite3.connect(f"file:{tmp.name}?mode=ro", uri=True), tmp.name
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True), None


def load_nsys(path):
    con, tmp = _open_sqlite(path)
    try:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        strings = dict(con.execute("select id, value from StringIds")) if "StringIds" in tables else {}
        t = Trace()
        t.kind, t.to_ms = "nsys", 1e-6
        t.duration = con.execute("select max(duration) from ANALYSIS_DETAILS").fetchone()[0]
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            t.kernels = [
                (s, e, strings.get(n, str(n)))
                for s, e, n in con.execute("select start, end, demangledName from CUPTI_ACTIVITY_KIND_KERNEL")
            ]
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            t.copies = [
                (s, e, b, COPYKIND.get(k, str(k)), MEMKIND.get(sk, str(sk)), MEMKIND.get(dk, str(dk)))
                for s, e, b, k, sk, dk in con.execute(
                    "select start, end, bytes, copyKind, srcKind, dstKind from CUPTI_ACTIVITY_KIND_MEMCPY"
                )
            ]
        if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
            t.memsets = list(con.execute("select start, end from CUPTI_ACTIVITY_KIND_MEMSET"))
        if "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" in tables:
            t.graphs = list(con.execute("select start, end from CUPTI_ACTIVITY_KIND_GRAPH_TRACE"))
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            t.api = [
                (s, e, re.sub(r"_v\d+$", "", strings.get(n, str(n))), _nsys_main(tid))
                for s, e, n, tid in con.execute("select start, end, nameId, globalTid from CUPTI_ACTIVITY_KIND_RUNTIME")
            ]
        if "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" in tables:
            t.sync_rows = list(con.execute("select start, end from CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"))
        if "NVTX_EVENTS" in tables:
            rows = con.execute(
                "select start, end, coalesce(text, (select value from StringIds where id = textId)), "
                "globalTid from NVTX_EVENTS where end is not null and end > start"
            )
            t.host_ranges["nvtx"] = [(s, e, n or "?", _nsys_main(tid)) for s, e, n, tid in rows]
        if "OSRT_API" in tables:
            t.host_ranges["osrt"] = [
                (s, e, strings.get(n, str(n)), _nsys_main(tid))
                for s, e, n, tid in con.execute("select start, end, nameId, globalTid from OSRT_API")
            ]
        # span: CUDA API, GPU activity and NVTX ranges from start to end; OS runtime calls count by their
        # start only (a poll() that began inside a capture range can end long after it)
        everything = [(s, e) for s, e, *_ in t.kernels + t.copies + t.api] + t.memsets + t.graphs + t.sync_rows
        everything += [(s, e) for s, e, _, _ in t.host_ranges.get("nvtx", [])]
        everything += [(s, s) for s, _, _, _ in t.host_ranges.get("osrt", [])]
        t.span = (min(s for s, _ in everything), max(e for _, e in everything))
        return t
    finally:
        con.close()
        if tmp:
            os.unlink(tmp)


def load_kineto(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    t = Trace()
    t.kind, t.to_ms = "kineto", 1e-3
    xs = [e for e in d.get("traceEvents", []) if e.get("ph") == "X" and "ts" in e]
    t.span = (min(e["ts"] for e in xs), max(e["ts"] + e.get("dur", 0) for e in xs))
    cpu = defaultdict(list)
    for e in xs:
        cat, s = e.get("cat", ""), e["ts"]
        en = s + e.get("dur", 0)
        name = e.get("name", "")
        if cat == "kernel":
            t.kernels.append((s, en, name))
        elif cat == "gpu_memcpy":
            m = re.search(r"Memcpy (\w+) \((\w[\w ]*) -> (\w[\w ]*)\)", name)
            kind, src, dst = (m.group(1), m.group(2).lower(), m.group(3).lower()) if m else (name, "?", "?")
            t.copies.append((s, en, e.get("args", {}).get("bytes", 0), kind, src, dst))
        elif cat == "gpu_memset":
            t.memsets.append((s, en))
        elif cat in ("cuda_runtime", "cuda_driver"):
            t.api.append((s, en, name, e.get("tid") == e.get("pid")))
        elif cat in ("cpu_op", "user_annotation", "python_function"):
            cpu[cat].append((s, en, name, e.get("tid") == e.get("pid")))
    t.host_ranges = dict(cpu)
    return t


def load(path):
    return load_nsys(path) if ".sqlite" in os.path.basename(path) else load_kineto(path)


# ------------------------------------------------------------------------------------------ measure
def anchors(t, anchor):
    if anchor is None:
        return []
    if anchor["type"] == "graph":
        return sorted(st for st, _ in t.graphs)
    if anchor["type"] == "memcpy":
        xs = sorted(
            st
            for st, _, nb, k, _, _ in t.copies
            if k == anchor["kind"] and (anchor["bytes"] is None or nb == anchor["bytes"])
        )
        return xs[:: anchor["every"]]
    rx = re.compile(anchor["match"])
    xs = sorted(st for st, _, n in t.kernels if rx.search(n))
    if anchor.get("last"):
        xs = xs[-anchor["last"] :]
    return xs[:: anchor["every"]]


def measure(eid):
    fname, anchor, skip, teardown = WINDOWS[eid]
    path = os.path.join(HERE, fname)
    t = load(path)
    ms = t.to_ms
    r = {"id": eid, "file": fname, "kind": t.kind}
    c0, c1 = t.span
    gpu_k = [(s, e) for s, e, _ in t.kernels]
    gpu_c = [(s, e) for s, e, *_ in t.copies]
    gpu_all = gpu_k + gpu_c + list(t.memsets) + list(t.graphs)
    first_gpu = min((s for s, _ in gpu_all), default=None)
    last_gpu = max((e for _, e in gpu_all), default=None)
    r["capture_span_ms"] = (c1 - c0) * ms
    r["nsys_session_duration_ms"] = None if t.duration is None else t.duration * ms
    r["first_gpu_activity_ms"] = None if first_gpu is None else (first_gpu - c0) * ms
    r["first_cuda_api_ms"] = min(((s - c0) * ms for s, *_ in t.api), default=None)
    r["last_gpu_activity_end_ms"] = None if last_gpu is None else (last_gpu - c0) * ms
    r["gpu_busy_ms_whole_capture"] = length(union(clip(gpu_all, c0, c1))) * ms
    r["gpu_busy_whole_capture_pct"] = 100 * length(union(clip(gpu_all, c0, c1))) / (c1 - c0)
    r["counts_whole_capture"] = {
        "kernels": len(t.kernels),
        "copies": len(t.copies),
        "memsets": len(t.memsets),
        "graph_launches": len(t.graphs),
        "api_calls": len(t.api),
    }
    api_names = defaultdict(lambda: [0, 0.0])
    for s, e, n, _ in t.api:
        api_names[n][0] += 1
        api_names[n][1] += (e - s) * ms
    r["api_whole_capture_top"] = {
        n: {"count": c, "ms": round(x, 3)} for n, (c, x) in sorted(api_names.items(), key=lambda kv: -kv[1][1])[:8]
    }

    a = anchors(t, anchor)
    r["anchors"] = len(a)
    if anchor is None or len(a) <= skip + 1:
        r["window"] = None
        r["note"] = "no repeated work: no steady-state window"
        return r
    w0, w1 = a[skip], a[-1]
    iters = len(a) - 1 - skip
    r["window"] = {
        "start_ms": (w0 - c0) * ms,
        "end_ms": (w1 - c0) * ms,
        "length_ms": (w1 - w0) * ms,
        "iterations": iters,
        "ms_per_iteration": (w1 - w0) * ms / iters,
        "anchor": anchor,
        "skipped_iterations": skip,
    }
    # start-up / loop / after-loop split
    t_td = None
    if teardown:
        rx = re.compile(teardown)
        t_td = min((s for s, _, n, _ in t.api if s > a[-1] and rx.search(n)), default=None)
    loop_end = max((e for s, e in gpu_all if t_td is None or s < t_td), default=w1)
    r["startup_ms"] = (w0 - c0) * ms
    r["startup_share_pct"] = 100 * (w0 - c0) / (c1 - c0)
    r["first_anchor_ms"] = (a[0] - c0) * ms
    r["loop_ms_first_anchor_to_loop_end"] = (loop_end - a[0]) * ms
    r["loop_share_pct"] = 100 * (loop_end - a[0]) / (c1 - c0)
    r["after_loop_ms"] = (c1 - loop_end) * ms
    r["after_loop_share_pct"] = 100 * (c1 - loop_end) / (c1 - c0)
    if t_td is not None:
        td_api = [(s, e, n) for s, e, n, _ in t.api if s >= t_td]
        byname = defaultdict(lambda: [0, 0.0])
        for s, e, n in td_api:
            byname[n][0] += 1
            byname[n][1] += (e - s) * ms
        r["teardown"] = {
            "starts_ms": (t_td - c0) * ms,
            "to_capture_end_ms": (c1 - t_td) * ms,
            "share_pct": 100 * (c1 - t_td) / (c1 - c0),
            "api": {n: {"count": c, "ms": round(x, 3)} for n, (c, x) in byname.items()},
        }

    # steady state
    W = w1 - w0
    busy = union(clip(gpu_all, w0, w1))
    r["gpu_busy_pct"] = 100 * length(busy) / W
    r["kernel_busy_pct"] = 100 * length(union(clip(gpu_k + list(t.graphs), w0, w1))) / W
    r["copy_busy_pct"] = 100 * length(union(clip(gpu_c, w0, w1))) / W
    r["copy_overlapped_with_kernels_ms"] = intersect_len(clip(gpu_c, w0, w1), clip(gpu_k + list(t.graphs), w0, w1)) * ms
    kin = [(s, e, n) for s, e, n in t.kernels if w0 <= s < w1]
    r["kernels_in_window"] = len(kin)
    r["graph_launches_in_window"] = sum(1 for s, _ in t.graphs if w0 <= s < w1)
    if kin:
        durs = sorted((e - s) * ms * 1e3 for s, e, _ in kin)
        r["kernel_us_mean"] = sum(durs) / len(durs)
        r["kernel_us_median"] = durs[len(durs) // 2]
    cw = [c for c in t.copies if w0 <= c[0] < w1]
    cstat = defaultdict(lambda: [0, 0, 0.0])
    for s, e, b, k, sk, dk in cw:
        key = f"{k} {sk}->{dk}"
        cstat[key][0] += 1
        cstat[key][1] += b
        cstat[key][2] += (e - s) * ms
    r["copies_in_window"] = {
        k: {
            "count": c,
            "MiB": round(b / 2**20, 2),
            "ms": round(x, 3),
            "GB_per_s": round(b / (x * 1e-3) / 1e9, 2) if x else None,
        }
        for k, (c, b, x) in cstat.items()
    }
    # host side
    api_w = [(s, e, n) for s, e, n, _ in t.api if e > w0 and s < w1]
    sync = [(s, e) for s, e, n in api_w if SYNC_RE.search(n)]
    copy_api = [(s, e) for s, e, n in api_w if COPY_RE.search(n)]
    launch = [(s, e) for s, e, n in api_w if LAUNCH_RE.search(n)]
    other = [(s, e) for s, e, n in api_w if not (SYNC_RE.search(n) or COPY_RE.search(n) or LAUNCH_RE.search(n))]
    r["sync_calls_in_window"] = len(sync)
    r["sync_host_ms"] = length(union(clip(sync, w0, w1))) * ms
    r["sync_host_share_pct"] = 100 * length(union(clip(sync, w0, w1))) / W
    r["memcpy_api_calls_in_window"] = len(copy_api)
    r["memcpy_api_host_share_pct"] = 100 * length(union(clip(copy_api, w0, w1))) / W
    r["launch_calls_in_window"] = len(launch)
    r["launch_host_share_pct"] = 100 * length(union(clip(launch, w0, w1))) / W
    r["cupti_sync_rows_in_window"] = sum(1 for s, _ in t.sync_rows if w0 <= s < w1)
    nm = defaultdict(int)
    for _, _, n in api_w:
        nm[n] += 1
    r["api_in_window"] = dict(sorted(nm.items(), key=lambda kv: -kv[1])[:8])

    idle = complement(busy, w0, w1)
    idle_len = length(idle)
    r["gpu_idle_ms"] = idle_len * ms
    left = idle
    cover = {}
    for label, iv in (("sync", sync), ("memcpy_api", copy_api), ("launch", launch), ("other_cuda_api", other)):
        part = intersect_len(left, clip(iv, w0, w1))
        cover[label] = part
        left = subtract(left, iv)
    cover["no_cuda_api"] = length(left)
    r["idle_cover_pct_of_idle"] = {k: round(100 * v / idle_len, 1) if idle_len else 0.0 for k, v in cover.items()}
    r["idle_cover_pct_of_window"] = {k: round(100 * v / W, 1) for k, v in cover.items()}
    # gaps right after a sync
    sync_ends = sorted(e for _, e in sync)
    after = 0
    gaps = sorted(idle)
    for gs, ge in gaps:
        j = bisect.bisect_left(sync_ends, gs - 50_000 * (1 if t.kind == "nsys" else 1e-3))
        if j < len(sync_ends) and sync_ends[j] <= ge:
            after += ge - gs
    r["idle_in_gaps_after_sync_pct_of_idle"] = round(100 * after / idle_len, 1) if idle_len else 0.0
    glens = sorted((ge - gs) * ms * 1e3 for gs, ge in gaps)
    r["gaps"] = {
        "count": len(glens),
        "median_us": glens[len(glens) // 2] if glens else 0,
        "max_us": glens[-1] if glens else 0,
        "over_1ms": sum(1 for g in glens if g > 1000),
    }
    # what covers the no-CUDA-API idle time
    # main thread: the process's first thread (nsys: tid == pid in globalTid; Kineto: tid == pid). In
    # PyTorch training the backward pass launches from the autograd engine's own thread.
    main_calls = sum(1 for s, e, n, m in t.api if e > w0 and s < w1 and m)
    r["api_calls_in_window_main_thread_pct"] = round(100 * main_calls / max(1, len(api_w)), 1)
    cov = {}
    for label, ranges in t.host_ranges.items():
        for where in ("main thread", "other threads"):
            names = defaultdict(list)
            for s, e, n, is_main in ranges:
                if e > w0 and s < w1 and (is_main == (where == "main thread")):
                    names[re.sub(r"\d+", "N", n)].append((s, e))
            tops = sorted(((intersect_len(left, iv), n) for n, iv in names.items()), reverse=True)[:5]
            got = {n: round(100 * v / idle_len, 1) for v, n in tops if v > 0}
            if got:
                cov[f"{label} ({where})"] = got
    r["no_cuda_api_idle_covered_by_pct_of_idle"] = cov
    # what the process does after the loop (exit included)
    after_api = defaultdict(lambda: [0, 0.0])
    for s, e, n, _ in t.api:
        if s >= loop_end:
            after_api[n][0] += 1
            after_api[n][1] += (e - s) * ms
    r["api_after_loop_top"] = {
        n: {"count": c, "ms": round(x, 3)} for n, (c, x) in sorted(after_api.items(), key=lambda kv: -kv[1][1])[:6]
    }
    return r


def _fmt(r):
    lines = [
        f"== {r['id']} ({r['file']}, {r['kind']})",
        f"  capture {r['capture_span_ms']:.1f} ms (nsys session {r['nsys_session_duration_ms']}); first GPU activity at {r['first_gpu_activity_ms'] or 0:.1f} ms; "
        f"GPU busy over the whole capture {r['gpu_busy_whole_capture_pct']:.3f}% ({r['gpu_busy_ms_whole_capture']:.3f} ms); "
        f"first CUDA API call at {r['first_cuda_api_ms'] or 0:.1f} ms; last GPU activity ends at "
        f"{r['last_gpu_activity_end_ms'] or 0:.1f} ms; {r['counts_whole_capture']}",
    ]
    lines.append(f"  API (whole capture, by host time): {r['api_whole_capture_top']}")
    if not r.get("window"):
        lines.append(f"  {r.get('note')}; anchors {r['anchors']}")
        return "\n".join(lines)
    w = r["window"]
    lines.append(
        f"  window {w['start_ms']:.1f}..{w['end_ms']:.1f} ms = {w['length_ms']:.2f} ms, {w['iterations']} iterations "
        f"({w['ms_per_iteration']:.3f} ms each; anchor {w['anchor']}, first {w['skipped_iterations']} skipped)"
    )
    lines.append(
        f"  start-up {r['startup_ms']:.1f} ms = {r['startup_share_pct']:.1f}% of the capture (first anchor at "
        f"{r['first_anchor_ms']:.1f} ms); loop {r['loop_ms_first_anchor_to_loop_end']:.1f} ms = "
        f"{r['loop_share_pct']:.1f}%; after the loop {r['after_loop_ms']:.1f} ms = {r['after_loop_share_pct']:.1f}%"
    )
    if "teardown" in r:
        lines.append(
            f"  teardown from {r['teardown']['starts_ms']:.1f} ms: {r['teardown']['to_capture_end_ms']:.1f} ms "
            f"= {r['teardown']['share_pct']:.1f}%; {r['teardown']['api']}"
        )
    lines.append(
        f"  steady state: GPU busy {r['gpu_busy_pct']:.1f}% (kernels {r['kernel_busy_pct']:.1f}%, copies "
        f"{r['copy_busy_pct']:.1f}%, copy/kernel overlap {r['copy_overlapped_with_kernels_ms']:.3f} ms); "
        f"{r['kernels_in_window']} kernels, mean {r.get('kernel_us_mean', 0):.2f} us, median "
        f"{r.get('kernel_us_median', 0):.2f} us; graph launches {r['graph_launches_in_window']}"
    )
    lines.append(f"  copies: {r['copies_in_window']}")
    lines.append(
        f"  host: {r['launch_calls_in_window']} launches ({r['launch_host_share_pct']:.1f}% of the window in "
        f"launch calls), {r['sync_calls_in_window']} sync calls ({r['sync_host_ms']:.2f} ms, "
        f"{r['sync_host_share_pct']:.1f}%), {r['memcpy_api_calls_in_window']} memcpy/memset calls "
        f"({r['memcpy_api_host_share_pct']:.1f}%), CUPTI sync rows {r['cupti_sync_rows_in_window']}; "
        f"API: {r['api_in_window']}"
    )
    lines.append(
        f"  GPU idle {r['gpu_idle_ms']:.2f} ms; host during idle (% of idle): {r['idle_cover_pct_of_idle']}; "
        f"idle in gaps right after a sync: {r['idle_in_gaps_after_sync_pct_of_idle']}%"
    )
    lines.append(f"  gaps: {r['gaps']}")
    lines.append(f"  no-CUDA-API idle covered by (% of idle): {r['no_cuda_api_idle_covered_by_pct_of_idle']}")
    lines.append(f"  API after the loop: {r['api_after_loop_top']}")
    return "\n".join(lines)


def main(argv, here):
    """Measure the entries named in ``argv`` (all without names) of the gallery in folder ``here``."""
    global HERE
    HERE = here
    as_json = "--json" in argv
    ids = [a for a in argv if not a.startswith("--")] or list(WINDOWS)
    out = []
    for eid in ids:
        fname = WINDOWS[eid][0]
        if not os.path.exists(os.path.join(HERE, fname)):
            print(f"{eid}: {fname} missing", file=sys.stderr)
            continue
        r = measure(eid)
        out.append(r)
        if not as_json:
            print(_fmt(r))
    if as_json:
        print(json.dumps(out, indent=1, default=float))
    return 0

