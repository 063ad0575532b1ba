"""A GPU-heavy training loop that logs the loss every 10 steps with loss.item(), whole process (nsys).

4 x Linear(4096, 4096) (BF16 weights, no bias) with GELU between, batch 8192, MSE loss, AdamW(fused=True):
~3.3 TFLOP per step (~5-6 ms of GEMMs on the H200). Every 10th step the host reads the loss (`loss.item()`,
a blocking device-to-host copy) to print it; the other 9 steps never wait. Each step starts with a 12-byte
pinned host-to-device copy of the step number (the loop's marker). NVTX ranges "step".
`--time`: plain ms per step with the logging and without it.
"""

import sys
import time

from _driver import run, torch

L, D, B = 4, 4096, 8192
STEPS = 40
LOG = "--no-log" not in sys.argv


def setup():
    torch.manual_seed(0)
    layers = []
    for k in range(L):
        layers.append(torch.nn.Linear(D, D, bias=False))
        if k < L - 1:
            layers.append(torch.nn.GELU())
    net = torch.nn.Sequential(*layers).to(device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True)
    x = torch.randn(B, D, device="cuda", dtype=torch.bfloat16)
    tgt = torch.randn(B, D, device="cuda", dtype=torch.bfloat16)
    marker = torch.zeros(3, dtype=torch.int32, device="cuda")
    host = torch.zeros(3, dtype=torch.int32).pin_memory()
    return {"net": net, "opt": opt, "x": x, "tgt": tgt, "marker": marker, "host": host, "log": []}


def step(s, i):
    torch.cuda.nvtx.range_push("step")
    s["host"][0] = i
    s["marker"].copy_(s["host"], non_blocking=True)
    loss = torch.nn.functional.mse_loss(s["net"](s["x"]).float(), s["tgt"].float())
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
    if LOG and i % 10 == 9:
        s["log"].append(loss.item())
        print(f"step {i}: loss {s['log'][-1]:.4f}", flush=True)
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if "--time" in sys.argv:
        s = setup()
        for i in range(10):
            step(s, i)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(50):
            step(s, i)
        torch.cuda.synchronize()
        print(f"periodic_log_sync ({'loss.item() every 10 steps' if LOG else 'no logging'}): "
              f"{(time.perf_counter() - t0) / 50 * 1e3:.3f} ms per step (plain, 50 steps)")
    else:
        run(setup, step, steps=STEPS)
