"""A double-buffered input pipeline on two CUDA streams, whole process (nsys).

Four 64 MiB BF16 batches (8192 x 4096) live in pinned host memory. Each step, on a side stream, the NEXT
batch is copied host-to-device (non_blocking, pinned) into the device buffer the previous step has finished
with (event `free`), while the default stream runs 4 GEMMs (8192 x 4096 x 4096 each) on the CURRENT batch
after waiting for its copy (event `ready`). The host never waits inside the loop. NVTX range "step".
"""

from _driver import run, torch

B, H, NG = 8192, 4096, 4


def setup():
    torch.manual_seed(0)
    ws = [torch.randn(H, H, device="cuda", dtype=torch.bfloat16) * 0.015 for _ in range(NG)]
    host = [torch.randn(B, H).to(torch.bfloat16).pin_memory() for _ in range(4)]
    dev = [torch.empty(B, H, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    side = torch.cuda.Stream()
    ready = [torch.cuda.Event() for _ in range(2)]
    free = [torch.cuda.Event() for _ in range(2)]
    with torch.cuda.stream(side):
        dev[0].copy_(host[0], non_blocking=True)
        ready[0].record(side)
    return {"ws": ws, "host": host, "dev": dev, "side": side, "ready": ready, "free": free, "out": []}


def step(s, i):
    torch.cuda.nvtx.range_push("step")
    cur, nxt = i % 2, (i + 1) % 2
    main = torch.cuda.current_stream()
    with torch.cuda.stream(s["side"]):
        s["side"].wait_event(s["free"][nxt])  # the GEMMs of step i-1 are done with dev[nxt]
        s["dev"][nxt].copy_(s["host"][(i + 1) % 4], non_blocking=True)
        s["ready"][nxt].record(s["side"])
    main.wait_event(s["ready"][cur])
    h = s["dev"][cur]
    for w in s["ws"]:
        h = h @ w
    s["free"][cur].record(main)
    s["out"] = h
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    run(setup, step, steps=40)
