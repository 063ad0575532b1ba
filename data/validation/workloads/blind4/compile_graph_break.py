"""torch.compile'd 3-layer MLP (inference, BF16) with an anomaly guard that breaks the graph, whole process (nsys).

After each of the first two layers the forward pass checks `if not torch.isfinite(x).all(): raise ...`.
A Python branch on a tensor value cannot be traced: Dynamo splits the forward into 3 compiled graphs and
evaluates the condition eagerly, which copies the flag to the host (a blocking device-to-host read) twice
per step. Each graph is one 2048 x 4096 x 4096 GEMM + fused bias/GELU (+ the isfinite reduction).
`--fixed`: the same model with the guard written as torch._assert_async (no graph break, no host read);
the plain-timing control.
"""

import os
import sys
import time

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile-worker subprocesses in the capture

from _driver import run, torch  # noqa: E402

B, H = 2048, 4096
FIXED = "--fixed" in sys.argv


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(H, H) for _ in range(3))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = torch.nn.functional.gelu(layer(x))
            if i < 2:
                if FIXED:
                    torch._assert_async(torch.isfinite(x).all())
                elif not torch.isfinite(x).all():  # data-dependent branch: graph break + host read
                    raise FloatingPointError(f"non-finite activations after layer {i}")
        return x


def setup():
    torch.manual_seed(0)
    net = MLP().to(device="cuda", dtype=torch.bfloat16).eval()
    for p in net.parameters():
        p.data.mul_(0.5)
    cnet = torch.compile(net)
    x = torch.randn(B, H, device="cuda", dtype=torch.bfloat16)
    return {"net": cnet, "x": x}


def step(s, i):
    with torch.no_grad():
        s["y"] = s["net"](s["x"])


if __name__ == "__main__":
    if "--time" in sys.argv:  # plain timing (no profiler): ms per step after warm-up
        s = setup()
        for i in range(20):
            step(s, i)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(200):
            step(s, i)
        torch.cuda.synchronize()
        print(f"compile_graph_break {'--fixed' if FIXED else '(guard with graph break)'}: "
              f"{(time.perf_counter() - t0) / 200 * 1e3:.3f} ms per step (plain, 200 steps)")
    else:
        run(setup, step, steps=60)
