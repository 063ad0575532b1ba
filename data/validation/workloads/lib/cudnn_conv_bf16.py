"""cuDNN convolution through torch.nn.functional.conv2d: bf16, channels_last (NHWC) input and weight.

N = 32, C = K = 256, 56 x 56, 3x3, padding 1, stride 1 (a ResNet stage-2 layer at batch 32):
2 * 32 * 56 * 56 * 256 * 256 * 9 = 118 GFLOP. torch.backends.cudnn.benchmark stays False (heuristics).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from _common import main


def make(argv: list[str]):
    x = torch.randn(32, 256, 56, 56, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    w = torch.randn(256, 256, 3, 3, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    flops = 2 * 32 * 56 * 56 * 256 * 256 * 9
    return (lambda: F.conv2d(x, w, padding=1)), {"label": "cuDNN conv2d bf16 NHWC 32x256x56x56, 3x3x256",
                                                 "flops": flops,
                                                 "regex": "fprop|conv|implicit|xmma|cutlass|nvjet|gemm|sm90"}


if __name__ == "__main__":
    main(make)
