"""Triton: add a per-row bias to a batch of [n_rows, n_cols] bf16 score matrices and zero each one's strict
upper triangle (col > row), over the flattened tensor: row and col come from one 1-D offset and the
runtime n_cols / n_rows (1999: odd, so Triton's divisible-by-16 specialisation does not apply).

    python3 triton_rowbias.py causal_rowbias [--sanity]
"""

import sys

import torch
import triton
import triton.language as tl

from _tcommon import main


@triton.jit
def causal_rowbias(x_ptr, bias_ptr, out_ptr, n_elements, n_rows, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    brow = offs // n_cols  # batch * n_rows + row
    col = offs % n_cols
    row = brow % n_rows
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(bias_ptr + brow, mask=mask, other=0.0)
    y = tl.where(col <= row, x.to(tl.float32) + b, 0.0)
    tl.store(out_ptr + offs, y.to(tl.bfloat16), mask=mask)


BATCH, S = 16, 1999  # 63.9M bf16 elements: 128 MB in, 128 MB out
BLOCK = 1024
torch.manual_seed(0)
X = torch.randn(BATCH, S, S, device="cuda", dtype=torch.bfloat16)
BIAS = torch.randn(BATCH * S, device="cuda", dtype=torch.float32)
OUT = torch.empty_like(X)


def launch():
    n = X.numel()
    causal_rowbias[(triton.cdiv(n, BLOCK),)](X, BIAS, OUT, n, S, S, BLOCK=BLOCK, num_warps=4)


def check():
    ref = torch.tril(X.float() + BIAS.view(BATCH, S, 1)).to(torch.bfloat16)
    err = float((OUT.float() - ref.float()).abs().max())
    assert err == 0.0, err
    OUT.zero_()
    return "equal to torch.tril(x + bias[..., None]) in bf16"


def make():
    from triton_rowbias_fix import controls

    def chk():
        launch()
        return check()

    return {"fn": launch, "label": f"triton causal_rowbias {BATCH}x{S}x{S} bf16, BLOCK={BLOCK}, n_rows/n_cols runtime",
            "check": chk, "bytes": 4 * X.numel(),
            "controls": controls(X, BIAS, OUT, check) if "--sanity" in sys.argv else []}


if __name__ == "__main__":
    sys.exit(main({"causal_rowbias": make}, sys.argv[1:]))
