"""torch.matmul through cuBLAS: python3 cublas_gemm.py DTYPE M N K.

DTYPE: fp32 (torch.backends.cuda.matmul.allow_tf32 = False: a true FP32 SGEMM), tf32
(allow_tf32 = True: FP32 tensors multiplied on the tensor cores as TF32), bf16, fp64 (DGEMM).
"""

from __future__ import annotations

import torch

from _common import main

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp64": torch.float64}


def make(argv: list[str]):
    name = argv[0]
    M, N, K = (int(v) for v in argv[1:4])
    torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
    torch.set_float32_matmul_precision("high" if name == "tf32" else "highest")
    a = torch.randn(M, K, device="cuda", dtype=DTYPES[name])
    b = torch.randn(K, N, device="cuda", dtype=DTYPES[name])
    return (lambda: torch.matmul(a, b)), {"label": f"cuBLAS {name} GEMM {M}x{N}x{K}", "flops": 2 * M * N * K,
                                          "regex": "gemm|nvjet|xmma|cutlass|sm90|sm80|Kernel"}


if __name__ == "__main__":
    main(make)
