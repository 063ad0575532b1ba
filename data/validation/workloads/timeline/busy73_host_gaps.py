"""Kernels ~73% of each step, host-only gaps ~23% (whole process, no NVTX).

Start-up times one 4096^3 bf16 GEMM with CUDA events and the host's Python work per item, then picks
k GEMMs per step (~7.3 ms of GPU work) and n Python items (~2.5 ms of host work). Each step: k
back-to-back GEMMs, a loss read back with .item() (the host needs the value), then ~2.5 ms of pure
Python that uses it (no CUDA calls). The GPU is busy ~3/4 of the time; the rest is the host's Python
after each read-back.
"""

import time

from _whole import run, torch

GPU_MS, HOST_MS = 7.3, 2.5


def _host_work(n, seed):
    acc = seed
    for k in range(n):
        acc = (acc * 1.000001 + k) % 1e6
    return acc


def setup():
    torch.manual_seed(0)
    w = (torch.randn(4096, 4096, device="cuda") / 64).to(torch.bfloat16)
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.matmul(x, w)
    torch.cuda.synchronize()
    e0.record()
    for _ in range(10):
        torch.matmul(x, w)
    e1.record()
    torch.cuda.synchronize()
    gemm_ms = e0.elapsed_time(e1) / 10
    k = max(1, round(GPU_MS / gemm_ms))
    t = time.perf_counter()
    _host_work(200_000, 1.0)
    per_item_ms = (time.perf_counter() - t) * 1e3 / 200_000
    n = max(1, round(HOST_MS / per_item_ms))
    print(f"calibration: GEMM {gemm_ms:.4f} ms -> {k} per step; host {per_item_ms * 1e3:.3f} us/item -> {n} items",
          flush=True)
    return {"w": w, "x": x, "k": k, "n": n, "log": []}


def step(s, i):
    y = s["x"]
    for _ in range(s["k"]):
        y = torch.matmul(y, s["w"])
    loss = y[0].float().abs().mean().item()  # the host needs the value
    s["log"].append(_host_work(s["n"], loss))  # ~2.5 ms of Python, no CUDA calls


run(setup, step, steps=20, nvtx=False)
