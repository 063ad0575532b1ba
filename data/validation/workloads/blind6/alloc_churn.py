"""Inference loop that calls torch.cuda.empty_cache() after every step, whole process (nsys).

Each step: h = GELU(x @ W1); y = h @ W2; loss = mean(float(y)^2), BF16 x [8192, 4096], W1, W2 [4096, 4096]
(~0.55 TFLOP of GEMMs, ~1 ms on the H200), then `del h, y` and torch.cuda.empty_cache() "to keep memory low":
the caching allocator hands its free 64-128 MB blocks back with cudaFree (which waits for the device), and the
next step gets them again with cudaMalloc. Each step starts with a 12-byte pinned host-to-device copy of the step
number (the loop's marker). NVTX ranges "step". `--time`: plain ms per step with empty_cache and without.
"""

import sys
import time

from _driver import run, torch

D, B = 4096, 8192
STEPS = 12


def setup():
    torch.manual_seed(0)
    w1 = torch.randn(D, D, device="cuda", dtype=torch.bfloat16) / 64
    w2 = torch.randn(D, D, device="cuda", dtype=torch.bfloat16) / 64
    x = torch.randn(B, D, device="cuda", dtype=torch.bfloat16)
    marker = torch.zeros(3, dtype=torch.int32, device="cuda")
    host = torch.zeros(3, dtype=torch.int32).pin_memory()
    return {"w1": w1, "w2": w2, "x": x, "marker": marker, "host": host, "losses": [], "empty": True}


def step(s, i):
    torch.cuda.nvtx.range_push("step")
    s["host"][0] = i
    s["marker"].copy_(s["host"], non_blocking=True)
    h = torch.nn.functional.gelu(s["x"] @ s["w1"])
    y = h @ s["w2"]
    s["losses"].append(y.float().square().mean())
    del h, y
    if s["empty"]:
        torch.cuda.empty_cache()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if "--time" in sys.argv:
        for empty in (True, False):
            s = setup()
            s["empty"] = empty
            for i in range(5):
                step(s, i)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(30):
                step(s, i)
            torch.cuda.synchronize()
            print(f"alloc_churn ({'empty_cache() every step' if empty else 'no empty_cache'}): "
                  f"{(time.perf_counter() - t0) / 30 * 1e3:.3f} ms per step (plain, 30 steps)", flush=True)
    else:
        run(setup, step, steps=STEPS)
