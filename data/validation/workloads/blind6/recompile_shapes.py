"""torch.compile(dynamic=False) on a batch whose row count changes every step, whole process (nsys).

f(x) = mean(GELU(x @ W + b)^2, -1), W [1024, 1024] FP32; step i feeds x with 256 + 32*i rows. With
dynamic=False every new shape is a guard failure and a full Dynamo + Inductor recompile (Triton kernels
built in this process: TORCHINDUCTOR_COMPILE_THREADS=1; fresh Inductor/Triton caches per process, so nothing
comes from an earlier run). The recompile limit is raised so all 7 steps compile. Each step starts with a
12-byte pinned host-to-device copy of the step number (the loop's marker). NVTX ranges "step".
`--time`: plain wall ms of each step as captured, then with the rows padded to one bucket (512) and with
dynamic=True (each after torch._dynamo.reset(), fresh caches too).
"""

import os
import sys
import tempfile
import time

os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="blind6_inductor_")
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="blind6_triton_")
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"

from _driver import run, torch  # noqa: E402

import torch._dynamo  # noqa: E402

for _name in ("recompile_limit", "cache_size_limit"):
    if hasattr(torch._dynamo.config, _name):
        setattr(torch._dynamo.config, _name, 64)

D = 1024
STEPS = 7


def f(x, w, b):
    return torch.nn.functional.gelu(x @ w + b).square().mean(-1)


def setup(dynamic=False, pad=False):
    torch.manual_seed(0)
    w = torch.randn(D, D, device="cuda") / 32
    b = torch.randn(D, device="cuda")
    xs = [torch.randn(256 + 32 * i, D, device="cuda") for i in range(STEPS)]
    marker = torch.zeros(3, dtype=torch.int32, device="cuda")
    host = torch.zeros(3, dtype=torch.int32).pin_memory()
    return {"cf": torch.compile(f, dynamic=dynamic), "w": w, "b": b, "xs": xs, "marker": marker, "host": host,
            "out": [], "pad": pad}


def step(s, i):
    torch.cuda.nvtx.range_push("step")
    s["host"][0] = i
    s["marker"].copy_(s["host"], non_blocking=True)
    x = s["xs"][i]
    if s["pad"]:
        x = torch.nn.functional.pad(x, (0, 0, 0, 512 - x.shape[0]))
    s["out"].append(s["cf"](x, s["w"], s["b"]))
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if "--time" in sys.argv:
        for name, kw in (("dynamic=False, a new row count every step", {}),
                         ("dynamic=False, rows padded to 512", {"pad": True}),
                         ("dynamic=True", {"dynamic": True})):
            torch._dynamo.reset()
            s = setup(**kw)
            per = []
            for i in range(STEPS):
                t0 = time.perf_counter()
                step(s, i)
                torch.cuda.synchronize()
                per.append((time.perf_counter() - t0) * 1e3)
            print(f"recompile_shapes ({name}): plain wall ms per step (synchronized): "
                  f"{', '.join(f'{p:.1f}' for p in per)}; steps 2-{STEPS - 1} mean {sum(per[2:]) / len(per[2:]):.1f} ms",
                  flush=True)
    else:
        run(setup, step, steps=STEPS)
