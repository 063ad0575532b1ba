"""Training step of a deep, narrow MLP with torch.optim.Adam(foreach=False), whole process (nsys).

12 blocks of Linear(512, 512) + LayerNorm(512) + GELU (48 parameter tensors, 3.2 M parameters), batch 2048,
FP32 weights and activations (the default), MSE loss against a fixed target.
With foreach=False, Adam updates the 48 tensors one at a time: about 7 small elementwise kernels per tensor,
~340 launches per step for 13 MB of optimizer state. Each step starts with a 12-byte pinned host-to-device
copy of the step number (the loop's marker in the timeline; no host wait). NVTX ranges "step".
`--time`: plain ms per step with foreach=False, with the default (foreach) and with fused=True.
"""

import sys
import time

from _driver import run, torch

L, D, B = 12, 512, 2048
STEPS = 7


def make(foreach=False, fused=None):
    torch.manual_seed(0)
    layers = []
    for _ in range(L):
        layers += [torch.nn.Linear(D, D), torch.nn.LayerNorm(D), torch.nn.GELU()]
    net = torch.nn.Sequential(*layers).cuda()
    kw = {"fused": True} if fused else {"foreach": foreach}
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, **kw)
    x = torch.randn(B, D, device="cuda")
    tgt = torch.randn(B, D, device="cuda")
    marker = torch.zeros(3, dtype=torch.int32, device="cuda")
    host = torch.zeros(3, dtype=torch.int32).pin_memory()
    return {"net": net, "opt": opt, "x": x, "tgt": tgt, "marker": marker, "host": host}


def setup():
    return make(foreach=False)


def step(s, i):
    torch.cuda.nvtx.range_push("step")
    s["host"][0] = i
    s["marker"].copy_(s["host"], non_blocking=True)
    loss = torch.nn.functional.mse_loss(s["net"](s["x"]), s["tgt"])
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if "--time" in sys.argv:
        for name, kw in (("foreach=False", {"foreach": False}), ("foreach=True", {"foreach": True}),
                         ("fused=True", {"fused": True})):
            s = make(**kw)
            for i in range(10):
                step(s, i)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(50):
                step(s, i)
            torch.cuda.synchronize()
            print(f"adam_foreach_off Adam({name}): {(time.perf_counter() - t0) / 50 * 1e3:.3f} ms per step (plain, 50 steps)")
    else:
        run(setup, step, steps=STEPS)
