"""A CUDA-graph replay loop (whole process, NVTX "step N" ranges).

Start-up: a chain of 40 x (sin, mul, add) on a 1M-float tensor plus a device copy, run 3 times
eagerly on a side stream (warm-up), then captured once into a torch.cuda.CUDAGraph. Loop: 200
replays, one cudaGraphLaunch each, no host sync. Each replay is ~121 short kernels that run back to
back on the GPU; the host needs ~10-20 us per replay, less than the GPU needs to run it.
With nsys's default --cuda-graph-trace=graph the loop's kernels are not in CUPTI_ACTIVITY_KIND_KERNEL
(that table holds only the eager warm-up): they appear as one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row
per replay.
"""

from _whole import run, torch


def setup():
    torch.manual_seed(0)
    x = torch.randn(2**20, device="cuda")
    out = torch.empty_like(x)

    def body():
        y = x
        for _ in range(40):
            y = torch.sin(y) * 0.5 + 0.1
        out.copy_(y)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return {"graph": graph, "x": x, "out": out}


def step(s, i):
    s["graph"].replay()


run(setup, step, steps=200, nvtx=True)
