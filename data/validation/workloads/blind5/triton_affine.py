"""Triton per-channel affine on an NCHW BF16 activation, y = x * scale[c] + shift[c]
(x: 64 x 96 x 112 x 112, i.e. 77 M elements; scale/shift FP32 of length 96): python3 triton_affine.py {flat|rows} [--sanity].

flat: a 1-D grid over the flattened tensor, BLOCK=1024, with the offsets made int64 (the usual guard against
      overflow, `pid.to(tl.int64) * BLOCK`); the channel of each element is computed as (offs // HW) % C,
      i.e. an int64 division and an int64 remainder by runtime values for every element, and scale/shift are
      gathered per element.
rows: the control: a 2-D grid (one program row per (n, c) plane, BLOCK=2048 along HW); the channel is
      one scalar per program (pid_nc % C), scale/shift are two scalar loads."""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

from _tcommon import main


@triton.jit
def affine_flat(x_ptr, s_ptr, b_ptr, y_ptr, n_elem, C, HW, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elem
    c = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    s = tl.load(s_ptr + c, mask=mask)
    b = tl.load(b_ptr + c, mask=mask)
    tl.store(y_ptr + offs, (x * s + b).to(tl.bfloat16), mask=mask)


@triton.jit
def affine_rows(x_ptr, s_ptr, b_ptr, y_ptr, C, HW, BLOCK: tl.constexpr):
    pid_nc = tl.program_id(0)
    pid_hw = tl.program_id(1)
    c = pid_nc % C
    s = tl.load(s_ptr + c)
    b = tl.load(b_ptr + c)
    hw = pid_hw * BLOCK + tl.arange(0, BLOCK)
    mask = hw < HW
    base = pid_nc.to(tl.int64) * HW
    x = tl.load(x_ptr + base + hw, mask=mask).to(tl.float32)
    tl.store(y_ptr + base + hw, (x * s + b).to(tl.bfloat16), mask=mask)


MODE = sys.argv[1]
N, C, H, W = 64, 96, 112, 112
HW = H * W
torch.manual_seed(0)
x = torch.randn(N, C, H, W, device="cuda", dtype=torch.bfloat16)
scale = torch.rand(C, device="cuda", dtype=torch.float32) + 0.5
shift = torch.randn(C, device="cuda", dtype=torch.float32)
y = torch.empty_like(x)


def fn():
    if MODE == "flat":
        n = x.numel()
        affine_flat[(triton.cdiv(n, 1024),)](x, scale, shift, y, n, C, HW, BLOCK=1024, num_warps=4)
    else:
        affine_rows[(N * C, triton.cdiv(HW, 2048))](x, scale, shift, y, C, HW, BLOCK=2048, num_warps=8)


def check():
    fn()
    ref = (x.float() * scale[None, :, None, None] + shift[None, :, None, None]).to(torch.bfloat16)
    err = float((y.float() - ref.float()).abs().max())
    assert err < 0.05, err
    return f"max |err| vs PyTorch {err:.2e}"


main(fn, f"triton affine NCHW {N}x{C}x{H}x{W} bf16 ({MODE})", check, bytes_moved=4 * x.numel())
