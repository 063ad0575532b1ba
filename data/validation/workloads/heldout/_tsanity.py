"""Plain (unprofiled) run of every PyTorch / Triton / cuBLAS kernel workload in ONE process (torch is
imported once): each program is executed with --sanity (check, median CUDA-event time over 10 calls,
the kernels one call launches). Never run under ncu."""

from __future__ import annotations

import gc
import os
import runpy
import sys
import traceback

import torch

PROGRAMS = ["triton_layernorm_masked.py", "cublas_bmm_tiny.py", "torch_embedding_rows.py",
            "torch_cumsum_rows.py", "torch_sort_rows.py"]

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
bad = 0
for prog in PROGRAMS:
    print(f"### {prog}", flush=True)
    sys.argv = [prog, "--sanity"]
    try:
        runpy.run_path(os.path.join(here, prog), run_name="__main__")
    except Exception:  # noqa: BLE001 - report and go on
        bad += 1
        traceback.print_exc()
    gc.collect()
    torch.cuda.empty_cache()
sys.exit(1 if bad else 0)
