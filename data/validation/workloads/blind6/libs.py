"""PyTorch eager ops that launch library kernels (ATen / cuBLAS), blind6 gallery.

    python3 libs.py NAME            build, check, 3 warm-up calls, one call inside cudaProfilerStart/Stop
    python3 libs.py --sanity NAME...   plain timings of the call and its controls, and the kernels it launches

bmm16        torch.bmm of 262144 independent 16x16 @ 16x16 FP32 products (805 MB of operands and result,
             2.1 GFLOP). Control: torch.add over tensors of the same size (the same 805 MB of traffic).
topk_small   torch.topk(k=4) along rows of 64 FP32 values, 2^20 rows (256 MiB in). Controls: x.amax(-1) (one
             read of the same 256 MiB) and torch.sort(descending) then slicing (the same answer another way).
index_add_hot  out[64, 64].index_add_(0, idx, src) with src [2^21, 64] FP32 (512 MiB) and idx uniform in 0..63:
             2^27 atomic adds onto 4096 addresses. Control: the same call with idx spread over 2^21 rows of a
             [2^21, 64] output (same number of atomics, no two on one address in a row).
upsample_nchw  F.interpolate(x, scale_factor=2, mode="bilinear") on x [32, 64, 256, 256] FP32 contiguous (NCHW):
             512 MiB in, 2 GiB out. Controls: the same with x in channels_last, and out.fill_ (the 2 GiB write alone).
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from _tcommon import main


def bmm16():
    n = 1 << 18
    torch.manual_seed(0)
    a = torch.randn(n, 16, 16, device="cuda")
    b = torch.randn(n, 16, 16, device="cuda")
    c = torch.empty(n, 16, 16, device="cuda")
    d = torch.empty_like(c)

    def fn():
        torch.bmm(a, b, out=c)

    def check():
        fn()
        ref = torch.bmm(a[:4096].double(), b[:4096].double())
        err = float((c[:4096].double() - ref).abs().max())
        assert err < 1e-3, err
        return f"first 4096 products: max |err| vs float64 {err:.1e} (TF32 matmul allowed: {torch.backends.cuda.matmul.allow_tf32})"

    nb = 3 * n * 256 * 4
    return {"fn": fn, "label": "torch.bmm fp32 262144 x (16x16 @ 16x16)", "check": check, "bytes": nb,
            "flops": 2 * n * 16 ** 3,
            "controls": [("torch.add(a, b, out) over the same tensors (same 805 MB)",
                          lambda: torch.add(a, b, out=d), nb)]}


def topk_small():
    rows = 1 << 20
    torch.manual_seed(1)
    x = torch.randn(rows, 64, device="cuda")
    v = torch.empty(rows, 4, device="cuda")
    i = torch.empty(rows, 4, device="cuda", dtype=torch.long)

    def fn():
        torch.topk(x, 4, dim=-1, out=(v, i))

    def check():
        fn()
        ref = torch.sort(x[:65536], dim=-1, descending=True).values[:, :4]
        assert torch.equal(v[:65536], ref)
        return "first 65536 rows equal to sort()[:, :4]"

    nb = rows * 64 * 4 + rows * 4 * 12
    return {"fn": fn, "label": "torch.topk k=4 over 2^20 rows of 64 fp32", "check": check, "bytes": nb,
            "controls": [("x.amax(-1) (one read of the same 256 MiB)", lambda: x.amax(-1), rows * 64 * 4),
                         ("torch.sort(x, -1, descending=True) then [:, :4]",
                          lambda: torch.sort(x, dim=-1, descending=True)[0][:, :4], rows * 64 * 4)]}


def index_add_hot():
    n = 1 << 21
    torch.manual_seed(2)
    src = torch.randn(n, 64, device="cuda")
    idx = torch.randint(0, 64, (n,), device="cuda")
    out = torch.zeros(64, 64, device="cuda")
    idx_spread = torch.randperm(n, device="cuda")
    out_big = torch.zeros(n, 64, device="cuda")

    def fn():
        out.index_add_(0, idx, src)

    def check():
        out.zero_()
        fn()
        ref = torch.zeros(64, 64, device="cuda", dtype=torch.float64).index_add_(0, idx, src.double())
        err = float((out.double() - ref).abs().max())
        assert err < 1e-2, err
        return f"max |err| vs float64 index_add_ {err:.1e}"

    nb = n * 64 * 4 + n * 8
    return {"fn": fn, "label": "index_add_ of 2^21 x 64 fp32 rows into 64 rows (idx uniform 0..63)", "check": check,
            "bytes": nb,
            "controls": [("index_add_ of the same rows into 2^21 rows (idx a permutation)",
                          lambda: out_big.index_add_(0, idx_spread, src), nb + n * 64 * 8)]}


def upsample_nchw():
    torch.manual_seed(3)
    x = torch.randn(32, 64, 256, 256, device="cuda")
    xcl = x.contiguous(memory_format=torch.channels_last)
    y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)

    def fn():
        F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)

    def check():
        got = F.interpolate(x[:1, :4], scale_factor=2, mode="bilinear", align_corners=False)
        ref = F.interpolate(x[:1, :4].cpu().double(), scale_factor=2, mode="bilinear", align_corners=False)
        err = float((got.cpu().double() - ref).abs().max())
        assert err < 1e-4, err
        return f"image 0, channels 0-3: max |err| vs CPU float64 {err:.1e}"

    nb = x.numel() * 4 * 5
    return {"fn": fn, "label": "F.interpolate bilinear x2 fp32 [32,64,256,256] NCHW", "check": check, "bytes": nb,
            "controls": [("the same on channels_last input",
                          lambda: F.interpolate(xcl, scale_factor=2, mode="bilinear", align_corners=False), nb),
                         ("y.fill_(1.0) (the 2 GiB output write alone)", lambda: y.fill_(1.0), x.numel() * 16)]}


WORKLOADS = {f.__name__: f for f in (bmm16, topk_small, index_add_hot, upsample_nchw)}

if __name__ == "__main__":
    sys.exit(main(WORKLOADS, sys.argv[1:]))
