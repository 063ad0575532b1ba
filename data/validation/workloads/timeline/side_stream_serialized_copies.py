"""Pinned copies on a side stream that still do not overlap compute (whole process, NVTX "step N").

Each step copies a 64 MiB pinned batch (2048 x 8192 float32) to the GPU with non_blocking=True on a
separate copy stream, but the streams wait on each other both ways (the compute stream waits for the
copy it needs, and the copy stream waits for the compute stream before overwriting a buffer), so
every copy runs alone and every FP32 GEMM (2048x8192 @ 8192x1024, TF32 off) waits for it. The copy
is already pinned and already async; what is missing is overlap (double buffering with the right
event waits).
"""

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    host = [torch.full((2048, 8192), float(k + 1)).pin_memory() for k in range(2)]
    dev = [torch.empty(2048, 8192, device="cuda") for _ in range(2)]
    w = torch.randn(8192, 1024, device="cuda") / 90
    return {"host": host, "dev": dev, "w": w, "copy": torch.cuda.Stream(), "out": []}


def step(s, i):
    compute = torch.cuda.current_stream()
    buf = s["dev"][i % 2]
    s["copy"].wait_stream(compute)  # "don't overwrite a buffer still in use": waits for ALL prior compute
    with torch.cuda.stream(s["copy"]):
        buf.copy_(s["host"][i % 2], non_blocking=True)
    compute.wait_stream(s["copy"])
    y = buf @ s["w"]
    s["out"] = y


run(setup, step, steps=30, nvtx=True)
