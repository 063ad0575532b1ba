"""Profiles whose strings attack their readers: markup for the HTML, shell syntax for the suggested
commands, terminal escapes for the text output. Built in code from the shipped samples."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

from tests.reliability.inputs import SAMPLES

XSS_KERNEL = "<script>alert(1)</script>"
SHELL = "'$(touch PWNED)'`touch PWNED2`"
ESCAPE = "\x1b]0;owned\x07\x1b[2J"
KERNEL = f"{XSS_KERNEL}{SHELL}{ESCAPE}"
"""The top kernel's name: markup, then a quote that ends a single-quoted shell word, then escapes."""
NVTX = '"><img src=x onerror=alert(1)>'
PROCESS = "python</pre><script>alert(2)</script>"
MARKUP = ("<script", "<img", "</pre>", "onerror=alert")
"""What must never appear raw in HTML made from these profiles."""


def hostile_kineto_trace(path: Path) -> Path:
    """The gpu_bound PyTorch trace with its kernels, process and an annotation renamed to the strings above."""
    tr = json.loads(gzip.decompress((SAMPLES / "timeline" / "gpu_bound.json.gz").read_bytes()))
    first_step = None
    for e in tr["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = KERNEL
        elif e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
            e.setdefault("args", {})["name"] = PROCESS
        elif e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"):
            first_step = first_step or e
    if first_step is not None:  # an NVTX-like annotation inside the first step
        ann = dict(first_step, name=NVTX, args={})
        tr["traceEvents"].append(ann)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tr), encoding="utf-8")
    return path


def hostile_nsys_export(path: Path) -> Path:
    """A tiny nsys-like export: kernels named :data:`KERNEL`, an NVTX range :data:`NVTX`, process :data:`PROCESS`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
            demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER, gridY INTEGER,
            gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER, launchType INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
            eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
            returnValue INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
            text TEXT, globalTid INTEGER, textId INTEGER);
        CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
        CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, cuDevice INTEGER);
        """
    )
    con.executemany(
        "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
        [("EXPORT_PRODUCT_VERSION", "2025.3.1.0"), ("EXPORT_SCHEMA_VERSION", "3.20.3")],
    )
    con.executemany(
        "INSERT INTO StringIds VALUES (?, ?)",
        [(10, KERNEL), (11, KERNEL), (20, "cudaLaunchKernel_v7000"), (30, NVTX), (40, PROCESS)],
    )
    g = (1234 << 24) | 1234
    kernels, api = [], []
    t = 1_000_000
    for i in range(200):  # a GPU-bound capture: back-to-back kernels of 100 us
        api.append((t - 5_000, t - 1_000, 1, g, i, 20, 0))
        kernels.append((t, t + 100_000, 0, 7, i, 10, 11, 132, 1, 1, 256, 1, 1, 1))
        t += 101_000
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", kernels)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?)", api)
    con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, ?, ?, NULL)", (500_000, t, NVTX, g))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, ?, 30)", (600_000, t - 1, g))
    con.execute("INSERT INTO PROCESSES VALUES (?, 1234, ?)", (1234 << 24, PROCESS))
    con.execute("INSERT INTO ThreadNames VALUES (40, 0, ?)", (g,))
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 132, 0)", (PROCESS,))
    con.commit()
    con.close()
    return path
