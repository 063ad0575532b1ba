"""pair graph: a launch-bound chain of 75 tiny kernels and a copy per step, eager (before) or as a CUDA graph (after).

before (default):  every step re-dispatches 25 x (sin, mul, add) on a 1024-element tensor plus a
                   device-to-device copy from Python: 75 kernel launches of ~2 us kernels and a
                   memcpy, and the GPU idles between launches.
after (--graph):   the same step captured once with torch.cuda.CUDAGraph and replayed with one
                   cudaGraphLaunch per step; the kernels run back to back on the GPU.
"""
import sys

import torch

from _harness import main

use_graph = "--graph" in sys.argv
if use_graph:
    sys.argv.remove("--graph")

torch.manual_seed(0)
x = torch.randn(1024, device="cuda")
out = torch.empty_like(x)


def body() -> None:
    y = x
    for _ in range(25):
        y = torch.sin(y) * 0.5 + 0.1
    out.copy_(y)


if use_graph:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()

    def step(i: int) -> None:
        graph.replay()
else:

    def step(i: int) -> None:
        body()


main(step, warmup=10, steps=30)
