"""Training loop that copies its accuracy to a pageable host tensor every step, whole process (nsys).

4 x Linear(4096, 4096) BF16 (GELU between), batch 4096, cross entropy over 4096 classes, AdamW(fused=True):
~1.6 TFLOP per step. Before launching a step the host prepares the next batch's label ids in NumPy (a stand-in
for a tokenizer/sampler: a fixed amount of work, calibrated once in setup() to ~60% of the GPU step time).
After the step: acc = (logits.argmax(-1) == labels).float().mean(); host_acc.copy_(acc, non_blocking=True) into
a *pageable* CPU tensor; "non_blocking" does not apply to pageable memory, so the call returns only when the
GPU has finished the step, and the next step's NumPy work then runs while the GPU waits. Each step starts with
a 12-byte pinned host-to-device copy of the step number (the loop's marker). NVTX ranges "step", "host_prep".
`--time`: plain ms per step as captured, with a pinned buffer + event read one step later, and of the two
halves alone.
"""

import sys
import time

import numpy as np

from _driver import run, torch

L, D, B = 4, 4096, 4096
STEPS = 14


def host_prep(s):
    rng = s["rng"]
    for _ in range(s["reps"]):
        np.sort(rng.random(5000))
    return rng.integers(0, D, B)


def gpu_step(s):
    with torch.autocast("cuda", enabled=False):
        logits = s["net"](s["x"])
        loss = torch.nn.functional.cross_entropy(logits.float(), s["labels"])
    loss.backward()
    s["opt"].step()
    s["opt"].zero_grad(set_to_none=True)
    return (logits.argmax(-1) == s["labels"]).float().mean()


def setup(pinned=False):
    torch.manual_seed(0)
    layers = []
    for k in range(L):
        layers.append(torch.nn.Linear(D, D, bias=False))
        if k < L - 1:
            layers.append(torch.nn.GELU())
    net = torch.nn.Sequential(*layers).to(device="cuda", dtype=torch.bfloat16)
    s = {"net": net, "opt": torch.optim.AdamW(net.parameters(), lr=1e-4, fused=True),
         "x": torch.randn(B, D, device="cuda", dtype=torch.bfloat16),
         "labels": torch.randint(0, D, (B,), device="cuda"),
         "marker": torch.zeros(3, dtype=torch.int32, device="cuda"),
         "host": torch.zeros(3, dtype=torch.int32).pin_memory(),
         "rng": np.random.default_rng(0), "reps": 1, "log": [], "pinned": pinned,
         "host_acc": torch.zeros((), pin_memory=pinned), "ev": None}
    # calibrate: GPU step time and one NumPy rep, then reps so that host_prep ~ 0.6 x GPU step
    for _ in range(3):
        gpu_step(s)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        gpu_step(s)
    torch.cuda.synchronize()
    g = (time.perf_counter() - t0) / 5
    t0 = time.perf_counter()
    for _ in range(20):
        np.sort(s["rng"].random(5000))
    h = (time.perf_counter() - t0) / 20
    s["reps"] = max(1, round(0.6 * g / h))
    print(f"setup: GPU step {g * 1e3:.2f} ms, one NumPy rep {h * 1e3:.3f} ms -> {s['reps']} reps", flush=True)
    return s


def step(s, i):
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_push("host_prep")
    host_prep(s)
    torch.cuda.nvtx.range_pop()
    s["host"][0] = i
    s["marker"].copy_(s["host"], non_blocking=True)
    acc = gpu_step(s)
    if s["pinned"]:  # the fix: pinned buffer, read one step later after its event
        if s["ev"] is not None:
            s["ev"].synchronize()  # the previous step's copy: long done by now
            s["log"].append(float(s["host_acc"]))
        s["host_acc"].copy_(acc, non_blocking=True)
        s["ev"] = torch.cuda.Event()
        s["ev"].record()
    else:
        s["host_acc"].copy_(acc, non_blocking=True)  # pageable: returns after the GPU finished the step
        s["log"].append(float(s["host_acc"]))
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if "--time" in sys.argv:
        for pinned in (False, True):
            s = setup(pinned)
            for i in range(3):
                step(s, i)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for i in range(20):
                step(s, i)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            for i in range(20):
                host_prep(s)
            t2 = time.perf_counter()
            print(f"d2h_pageable ({'pinned buffer + event, read one step later' if pinned else 'pageable copy_ every step'}): "
                  f"{(t1 - t0) / 20 * 1e3:.3f} ms per step; host_prep alone {(t2 - t1) / 20 * 1e3:.3f} ms "
                  f"(plain, 20 steps)", flush=True)
        s = setup()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(20):
            gpu_step(s)
        torch.cuda.synchronize()
        print(f"d2h_pageable: GPU step alone (no host_prep, no copy) {(time.perf_counter() - t0) / 20 * 1e3:.3f} ms",
              flush=True)
    else:
        run(setup, step, steps=STEPS)
