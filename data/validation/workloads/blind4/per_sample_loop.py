"""Inference called once per sample in a Python loop, whole process (Kineto).

Each step takes a batch of 32 samples (32 x 1024 BF16, already on the GPU) and runs a 2-layer MLP
(Linear(1024, 1024) -> GELU -> Linear(1024, 1024)) on every sample separately (`net(xb[j:j + 1])`,
a batch of 1), then concatenates the 32 outputs: 97 kernel launches of a few microseconds each per step.
No host read-back. `--time`: plain ms per step of this loop and of the batched call `net(xb)`.
"""

import sys
import time

from _driver import run, torch

B, D, NB = 32, 1024, 40


def setup():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.GELU(), torch.nn.Linear(D, D))
    net = net.to(device="cuda", dtype=torch.bfloat16).eval()
    data = torch.randn(NB * B, D, device="cuda", dtype=torch.bfloat16)
    return {"net": net, "data": data}


def step(s, i):
    with torch.no_grad():
        xb = s["data"][(i % NB) * B:(i % NB + 1) * B]
        outs = [s["net"](xb[j:j + 1]) for j in range(B)]
        s["y"] = torch.cat(outs)


def step_batched(s, i):
    with torch.no_grad():
        s["y"] = s["net"](s["data"][(i % NB) * B:(i % NB + 1) * B])


if __name__ == "__main__":
    if "--time" in sys.argv:
        s = setup()
        for name, fn in (("per-sample loop", step), ("batched net(xb)", step_batched)):
            for i in range(10):
                fn(s, i)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(200):
                fn(s, i)
            torch.cuda.synchronize()
            print(f"per_sample_loop {name}: {(time.perf_counter() - t0) / 200 * 1e3:.3f} ms per step (plain, 200 steps)")
    else:
        run(setup, step, steps=14)
