"""Harness for the blind9 timeline programs (whole-process nsys captures and plain multi-process timings).

A program defines ``setup() -> state`` and ``step(state, i)`` (and, for a single-timeline entry, a
``step_fixed`` control) and ends with ``if __name__ == "__main__": run(setup, step, steps=N)``.

``python3 PROG.py`` (what generate.sh captures with ``nsys profile``): setup (which builds the tensors and
runs WARM unmarked warm-up steps, then one torch.cuda.synchronize()), then N steps, each inside an NVTX
range "step i" (i = 0..N-1), then one torch.cuda.synchronize(). Prints the phases' wall-clock durations.

``plain(setup, step)`` (called by plain_runner.py in a fresh process per measurement, never under a
profiler): setup + warm-up as above, then CHUNKS chunks of CHUNK steps; each chunk is timed with
time.perf_counter() between two torch.cuda.synchronize() calls; the chunk's time / CHUNK is one per-step
value; the process's value is the median of its chunks.

Sizes come from calib.json beside this file (written on the device by calib.py before the captures, so
before and after programs of one pair use the same sizes); without it, the defaults in DEFAULTS.
The device is CUDA; B9_DEVICE=cpu runs the same code on the CPU (a smoke test only: no timing meaning).
"""

from __future__ import annotations

import json
import os
import statistics
import time

T_START = time.perf_counter()
import torch  # noqa: E402

T_TORCH = time.perf_counter()
HERE = os.path.dirname(os.path.abspath(__file__))
DEV = os.environ.get("B9_DEVICE", "cuda")
if DEV == "cpu":  # smoke test on a machine without a GPU: the CUDA-only calls become no-ops
    torch.cuda.synchronize = lambda *a, **k: None
WARM = 5
CHUNK, CHUNKS = 40, 5

DEFAULTS = {
    "p1_n": 1 << 24,  # floats per tensor of the P1 sin/cos pairs
    "p2_rows": 4096,  # rows of the P2 activations (x: rows x 4096 bf16)
    "s1_rows": 2048,  # rows of the S1 activations
    "s2_rows": 2048,  # rows of the S2 activations
    "p4_bytes": 65536,  # bytes copied device -> pageable host per step in P4's after
}


OVERRIDE: dict = {}  # calib.py sets candidate sizes here


def params() -> dict:
    p = dict(DEFAULTS)
    path = os.environ.get("B9_CALIB", os.path.join(HERE, "calib.json"))
    if os.path.exists(path):
        with open(path) as f:
            p.update({k: v for k, v in json.load(f).items() if k in DEFAULTS})
    p.update(OVERRIDE)
    if DEV == "cpu":  # smoke test: small sizes
        p.update({"p1_n": 1 << 12, "p2_rows": 64, "s1_rows": 64, "s2_rows": 64, "p4_bytes": 1024})
    return p


def sync() -> None:
    if DEV == "cuda":
        torch.cuda.synchronize()


def push(name: str) -> None:
    if DEV == "cuda":
        torch.cuda.nvtx.range_push(name)


def pop() -> None:
    if DEV == "cuda":
        torch.cuda.nvtx.range_pop()


def warm_up(s, step, n: int = WARM) -> None:
    for i in range(n):
        step(s, -1 - i)
    sync()


def run(setup, step, *, steps: int) -> None:
    t0 = time.perf_counter()
    s = setup()  # includes the warm-up steps
    t1 = time.perf_counter()
    for i in range(steps):
        push(f"step {i}")
        step(s, i)
        pop()
    sync()
    t2 = time.perf_counter()
    print(
        f"import torch {T_TORCH - T_START:.3f} s, setup+warm-up {t1 - t0:.3f} s, loop {t2 - t1:.4f} s "
        f"({steps} NVTX-marked steps, {(t2 - t1) / steps * 1e3:.4f} ms/step incl. the final synchronize)",
        flush=True,
    )


def plain(setup, step) -> dict:
    s = setup()
    per = []
    for _ in range(CHUNKS):
        sync()
        t0 = time.perf_counter()
        for i in range(CHUNK):
            step(s, i)
        sync()
        per.append((time.perf_counter() - t0) / CHUNK * 1e3)
    return {"ms_per_step": statistics.median(per), "chunks_ms": [round(x, 5) for x in per]}
