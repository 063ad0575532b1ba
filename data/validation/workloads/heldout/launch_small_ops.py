"""A hand-written Adam update (foreach off: one op per tensor) over 24 small parameter tensors, whole
process, Kineto. Every step runs 8 elementwise ops per tensor (mul_, add_, mul_, addcmul_, sqrt,
div, add_, addcdiv_): 192 kernel launches of 64 to 16384 elements each, a couple of microseconds of
GPU work apiece, and nothing else: no read-back, no data loading, no host computation beyond
dispatching the ops."""

import math

from _kineto import run, torch

SHAPES = [(64, 64), (64,), (256, 64), (256,), (128, 128), (128,), (64, 256), (64,)] * 3


def setup():
    torch.manual_seed(0)
    params = []
    for shp in SHAPES:
        p = torch.randn(shp, device="cuda")
        params.append((p, torch.randn_like(p) * 1e-2, torch.zeros_like(p), torch.zeros_like(p)))
    return {"params": params}


def step(s, i):
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    t = i + 1
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    for p, g, m, v in s["params"]:
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / bc1)


run(setup, step, steps=10)
