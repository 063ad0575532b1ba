"""F.scaled_dot_product_attention, BF16, B=8, H=16, S=2048, head dim 128, no mask, no dropout (inference):
python3 sdpa_flash.py [--sanity]. PyTorch picks its backend (on the H200: the FlashAttention-2 kernel
built into ATen is the expected one). 4 * B * H * S^2 * D = 275 GFLOP per call."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from _tcommon import main

B, H, S, D = 8, 16, 2048, 128
torch.manual_seed(0)
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
o = None


def fn():
    global o
    o = F.scaled_dot_product_attention(q, k, v)


def check():
    fn()
    qs, ks, vs = (t[:1, :2].float() for t in (q, k, v))
    ref = torch.softmax(qs @ ks.transpose(-1, -2) / D**0.5, -1) @ vs
    err = float((o[:1, :2].float() - ref).abs().max())
    assert err < 2e-2, err
    return f"batch 0, heads 0-1: max |err| vs FP32 math {err:.1e}"


main(fn, f"sdpa bf16 B={B} H={H} S={S} D={D}", check, flops=4 * B * H * S * S * D)
