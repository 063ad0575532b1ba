"""Inference pipeline that uploads the next batch on a side stream while the current one computes,
whole process (PyTorch profiler / Kineto).

Batches: BF16 [8192, 1024] (16 MiB) in pinned host memory; each step copies batch i+1 host-to-device on a copy
stream (non_blocking, double-buffered device buffers guarded by events) while the default stream runs
Linear(1024->4096) + 3 x Linear(4096->4096) with GELU between (~0.89 TFLOP, ~1.3 ms) on batch i, and adds the
output's sum into a device accumulator. No host synchronisation inside the loop. `--time`: plain ms per step
pipelined, with the copy on the default stream (serialised), and compute alone.
"""

import sys
import time

from _driver import run, torch

B, D_IN, D = 8192, 1024, 4096
STEPS = 16


def setup(serial=False):
    torch.manual_seed(0)
    dims = [D_IN, D, D, D, D]
    layers = []
    for k in range(4):
        layers.append(torch.nn.Linear(dims[k], dims[k + 1], bias=False))
        if k < 3:
            layers.append(torch.nn.GELU())
    net = torch.nn.Sequential(*layers).to(device="cuda", dtype=torch.bfloat16).eval()
    host = [torch.randn(B, D_IN, dtype=torch.bfloat16).pin_memory() for _ in range(3)]
    bufs = [torch.empty(B, D_IN, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    bufs[0].copy_(host[0])
    torch.cuda.synchronize()
    return {"net": net, "host": host, "bufs": bufs, "copy": torch.cuda.Stream(),
            "ready": [torch.cuda.Event() for _ in range(2)], "free": [torch.cuda.Event() for _ in range(2)],
            "acc": torch.zeros((), device="cuda", dtype=torch.float32), "serial": serial, "compute_only": False}


@torch.no_grad()
def step(s, i):
    cur, nxt = i % 2, (i + 1) % 2
    main = torch.cuda.current_stream()
    if not s["compute_only"]:
        if s["serial"]:
            s["bufs"][nxt].copy_(s["host"][(i + 1) % 3], non_blocking=True)
        else:
            with torch.cuda.stream(s["copy"]):
                if i > 0:
                    s["copy"].wait_event(s["free"][nxt])  # batch i-1 (same buffer) consumed
                s["bufs"][nxt].copy_(s["host"][(i + 1) % 3], non_blocking=True)
                s["ready"][nxt].record(s["copy"])
            if i > 0:
                main.wait_event(s["ready"][cur])
    y = s["net"](s["bufs"][cur])
    s["acc"] += y.float().sum()
    s["free"][cur].record(main)


if __name__ == "__main__":
    if "--time" in sys.argv:
        for name, kw in (("pipelined (side-stream upload)", {}), ("copy on the default stream", {"serial": True}),
                         ("compute alone (no upload)", {"compute_only": True})):
            serial = kw.get("serial", False)
            s = setup(serial)
            s["compute_only"] = kw.get("compute_only", False)
            for i in range(4):
                step(s, i)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(4, 34):
                step(s, i)
            torch.cuda.synchronize()
            print(f"overlap_pipeline ({name}): {(time.perf_counter() - t0) / 30 * 1e3:.3f} ms per step (plain, 30 steps)",
                  flush=True)
    else:
        run(setup, step, steps=STEPS)
