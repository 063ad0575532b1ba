"""Shared state of the P2 programs: a 2-layer tanh MLP in BF16, activations p2_rows x 4096 (calib.json).

Each layer: h = tanh(h @ W) (a cuBLAS GEMM, then an elementwise kernel), then a statistic of the layer's
large activations (|h| > 0.5 in the tanh output's positive tail: h > 0.5), kept on the GPU in s["stats"].
"""

from _b9 import DEV, params, torch

D, LAYERS, THR = 4096, 2, 0.5


def make():
    p = params()
    torch.manual_seed(0)
    x = torch.randn(p["p2_rows"], D, device=DEV).to(torch.bfloat16)
    ws = [(torch.randn(D, D, device=DEV) / D**0.5).to(torch.bfloat16) for _ in range(LAYERS)]
    return {"x": x, "ws": ws, "p": p, "stats": None}
