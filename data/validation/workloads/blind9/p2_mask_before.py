"""P2 before (also the S2 single-timeline entry): boolean-mask indexing in every layer of a small MLP loop.

Each layer: h = tanh(h @ W); big = h[h > 0.5]; stat = big.sum(). Indexing with a boolean mask has a
data-dependent output size, so PyTorch runs nonzero() on the mask, copies the count to the host and
synchronizes the stream before it can allocate the result and launch the gather: one host sync per layer,
and the GPU idles while the host returns from it and launches the rest of the layer and the next GEMM.
The fix (p2_where_after.py) computes the same statistic with torch.where and no sync.
"""

from _b9 import run, torch, warm_up
from _p2 import THR, make


def step(s, i):
    h = s["x"]
    stats = []
    for w in s["ws"]:
        h = torch.tanh(h @ w)
        big = h[h > THR]  # boolean-mask indexing: nonzero -> D2H count copy -> stream sync, every layer
        stats.append(big.sum())
    s["stats"] = stats


def setup():
    s = make()
    warm_up(s, step, 3)
    return s


if __name__ == "__main__":
    run(setup, step, steps=50)
