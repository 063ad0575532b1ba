"""S2: S1's loop with boolean-mask indexing as the blocking call (one layer per step, no .item()).

Each step: h = tanh(x @ W) (BF16 GEMM, s2_rows x 4096 x 4096, s2_rows = 2048 from calib.json), then
stat = h[h > 0.5].sum(). Boolean-mask indexing has a data-dependent output size: PyTorch runs nonzero()
on the mask (cub count), copies the count to the host and synchronizes the stream before it can allocate
the result and launch the compaction and the gather; the GPU idles right after that sync while the host
launches them and the next step's GEMM. Nothing in the code says "sync": the block is inside h[mask].
step_fixed (the control timed by plain_runner.py, never captured): torch.where(h > 0.5, h, 0).sum(), the
same value with fixed-size tensors and no host sync.
"""

from _b9 import DEV, params, run, torch, warm_up

D, THR = 4096, 0.5


def step(s, i):
    h = torch.tanh(s["x"] @ s["w"])
    s["stat"] = h[h > THR].sum()  # boolean-mask indexing: nonzero -> D2H count copy -> stream sync


def step_fixed(s, i):
    h = torch.tanh(s["x"] @ s["w"])
    s["stat"] = torch.where(h > THR, h, 0).sum()


def make():
    p = params()
    torch.manual_seed(0)
    x = torch.randn(p["s2_rows"], D, device=DEV).to(torch.bfloat16)
    w = (torch.randn(D, D, device=DEV) / D**0.5).to(torch.bfloat16)
    return {"x": x, "w": w, "stat": None, "p": p}


def setup():
    s = make()
    warm_up(s, step)
    return s


def setup_fixed():
    s = make()
    warm_up(s, step_fixed)
    return s


if __name__ == "__main__":
    run(setup, step, steps=60)
