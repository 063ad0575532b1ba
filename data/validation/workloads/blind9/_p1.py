"""Shared state of the P1 / P3 / P4 programs: two fp32 vectors of p1_n floats (calib.json) on the GPU.

A "kernel pair" is y = sin(x); x = cos(y) (two elementwise kernels, each reads and writes p1_n floats:
memory-bound, ~2 x 4 x p1_n bytes each). One loop step runs two pairs. x converges to the fixed point of
cos(sin(x)) (~0.77): no overflow, no NaN, whatever the number of steps.
"""

from _b9 import DEV, params, torch


def make():
    p = params()
    torch.manual_seed(0)
    x = torch.rand(p["p1_n"], device=DEV)
    return {"x": x, "y": torch.empty_like(x), "p": p, "dump": None}


def pair(s):
    torch.sin(s["x"], out=s["y"])
    torch.cos(s["y"], out=s["x"])
