"""Run every workload once without a profiler: correctness (Triton), real duration (CUDA events,
median of 10 after warm-up), and the kernels one call launches (torch.profiler). Prints one block
per workload; a failure is printed and the next workload runs."""

from __future__ import annotations

import importlib
import statistics
import sys
import traceback

import torch

RUNS = [
    ("triton_matmul_fp32_ieee", []), ("triton_matmul_bf16", []), ("triton_matmul_bf16", ["--config", "tiny"]),
    ("triton_softmax", []), ("triton_add_tiny_block", []), ("torch_add", []), ("torch_sum_dim", []),
    ("torch_permute_copy", []), ("torch_index_select_random", []), ("torch_softmax_few_rows", []),
    ("cublas_gemm", ["fp32", "4096", "4096", "4096"]), ("cublas_gemm", ["tf32", "4096", "4096", "4096"]),
    ("cublas_gemm", ["bf16", "4096", "4096", "4096"]), ("cublas_gemm", ["fp64", "3072", "3072", "3072"]),
    ("cublas_gemm", ["bf16", "512", "512", "1024"]), ("cudnn_conv_bf16", []), ("sdpa_flash_bf16", []),
]


def kernels_of(fn) -> list[str]:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = []
    for e in prof.events():
        if "CUDA" in str(getattr(e, "device_type", "")):
            t = getattr(e, "device_time", None)
            if t is None:
                t = getattr(e, "cuda_time", 0.0)
            out.append(f"{e.name[:150]} ({t:.1f} us)")
    return out


def main() -> int:
    only = sys.argv[1:]
    bad = 0
    for mod_name, argv in RUNS:
        if only and mod_name not in only:
            continue
        print(f"### {mod_name} {' '.join(argv)}", flush=True)
        try:
            mod = importlib.import_module(mod_name)
            fn, info = mod.make(list(argv))
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(10):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e) * 1e3)
            med = statistics.median(times)
            line = f"  {info['label']}: median {med:.1f} us (min {min(times):.1f}, max {max(times):.1f})"
            if "flops" in info:
                line += f", {info['flops'] / med / 1e6:.1f} TFLOP/s"
            if "bytes" in info:
                line += f", {info['bytes'] / med / 1e3:.0f} GB/s of compulsory bytes"
            print(line)
            if "check" in info:
                print(f"  check (max error vs torch): {info['check']():.3g}")
            for k in kernels_of(fn):
                print(f"  kernel: {k}")
            del fn, info
        except Exception:  # noqa: BLE001 - report and go on
            bad += 1
            traceback.print_exc()
        torch.cuda.empty_cache()
        sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
