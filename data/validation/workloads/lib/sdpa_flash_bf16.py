"""F.scaled_dot_product_attention with the flash-attention backend forced: bf16, batch 4, 16 heads,
sequence 4096, head dim 128, not causal. 4 * B * H * S^2 * D = 0.55 TFLOP."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from _common import main


def make(argv: list[str]):
    B, H, S, D = 4, 16, 4096, 128
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    def fn():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)

    return fn, {"label": f"SDPA flash bf16 B{B} H{H} S{S} D{D}", "flops": 4 * B * H * S * S * D, "regex": "flash"}


if __name__ == "__main__":
    main(make)
