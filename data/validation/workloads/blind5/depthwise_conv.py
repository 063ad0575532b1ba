"""Depthwise 3x3 convolution (MobileNet-style block), FP32, NCHW: x 32 x 256 x 112 x 112, Conv2d(256, 256, 3,
padding=1, groups=256, bias=False): python3 depthwise_conv.py {nchw|cl} [--sanity].
nchw: the default contiguous (NCHW) tensors. For FP32 NCHW depthwise, ATen does not use cuDNN but its own
      conv_depthwise2d kernel (one thread per output element).
cl:   the control: the same convolution with input and weight in channels_last (ATen hands channels_last
      depthwise to cuDNN).
The floor is 411 MB read + 411 MB written."""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from _tcommon import main

MODE = sys.argv[1]
N, C, H, W = 32, 256, 112, 112
torch.manual_seed(0)
x = torch.randn(N, C, H, W, device="cuda", dtype=torch.float32)
w = torch.randn(C, 1, 3, 3, device="cuda", dtype=torch.float32) / 3
if MODE == "cl":
    x = x.contiguous(memory_format=torch.channels_last)
    w = w.contiguous(memory_format=torch.channels_last)
torch.backends.cudnn.allow_tf32 = False
y = None


def fn():
    global y
    y = F.conv2d(x, w, padding=1, groups=C)


def check():
    fn()
    xs = x[:1].double()
    ref = F.conv2d(xs.cpu(), w.double().cpu(), padding=1, groups=C)
    err = float((y[:1].double().cpu() - ref).abs().max())
    assert err < 1e-3, err
    return f"image 0: max |err| vs float64 CPU conv {err:.1e}"


main(fn, f"depthwise conv3x3 fp32 {N}x{C}x{H}x{W} ({MODE})", check, bytes_moved=8 * x.numel(),
     flops=2 * 9 * x.numel())
