"""A two-GEMM BF16 chain with a cudaStreamSynchronize after EVERY kernel, whole process (captured with nsys).

Each step: h = x @ w1 (8192 x 4096 x 4096), sync, o = h @ w2 (8192 x 4096 x 4096), sync.
torch.cuda.current_stream().synchronize() is cudaStreamSynchronize: the host waits for each GEMM
(~0.2-0.4 ms of real work) before it launches the next, so the GPU idles for one
return-from-sync + launch latency per kernel and never has a second kernel queued.
"""

from _driver import run, torch


def setup():
    torch.manual_seed(0)
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    w1 = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) * 0.02
    w2 = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) * 0.02
    return {"x": x, "w1": w1, "w2": w2}


def step(s, i):
    stream = torch.cuda.current_stream()
    h = s["x"] @ s["w1"]
    stream.synchronize()
    s["o"] = h @ s["w2"]
    stream.synchronize()


if __name__ == "__main__":
    run(setup, step, steps=60)
