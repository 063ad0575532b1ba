#!/usr/bin/env python3
"""Re-check the timeline labels: the numbers labels.json quotes, computed from the files themselves.

Stdlib only (sqlite3, json, gzip); it never imports kprof. Usage:
    python3 data/validation/timeline/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, ...) and the code are shared by every gallery: see
../measure_common.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from measure_common import C, K, _entry, main  # noqa: E402

GEMM = r"nvjet|gemm|xmma|cutlass"
P = "profiles/"
_entry("startup_then_gpu_bound", P + "startup_then_gpu_bound.sqlite.gz", K(GEMM, 8))
_entry("python_verify_between_steps", P + "python_verify_between_steps.sqlite.gz", K(GEMM, 8))
_entry("python_verify_between_steps_kineto", P + "python_verify_between_steps.json.gz", K(GEMM, 8))
_entry("item_each_step", P + "item_each_step.sqlite.gz", K(GEMM, 2), skip=5)
_entry("item_readback_sync", P + "item_readback_sync.sqlite.gz", K(GEMM, 1), skip=5)
_entry("item_readback_sync_kineto", P + "item_readback_sync.json.gz", K(GEMM, 1), skip=5)
_entry("pageable_copies", P + "pageable_copies.sqlite.gz", C("HtoD", 32 * 2**20, 2))
_entry("pinned_copies_7pct", P + "pinned_copies_7pct.sqlite.gz", C("HtoD", 678 * 4096 * 2, 1))
_entry("busy73_host_gaps", P + "busy73_host_gaps.sqlite.gz", K(r"reduce_kernel", 1))
_entry("triton_autotune_then_loop", P + "triton_autotune_then_loop.sqlite.gz", K(r"_scale_shift", 2, last=300))
_entry("one_launch_cudamalloc", P + "one_launch_cudamalloc.sqlite.gz", None)
_entry(
    "teardown_after_gpu_loop",
    P + "teardown_after_gpu_loop.sqlite.gz",
    K(r"triad", 1),
    teardown=r"cudaFree|cuModuleUnload|cudaDeviceReset",
)
_entry("cuda_graph_replay", P + "cuda_graph_replay.sqlite.gz", {"type": "graph"})
_entry("dataloader_numpy", P + "dataloader_numpy.sqlite.gz", C("HtoD", 256 * 4096 * 4, 1), skip=1)
_entry("decode_launch_bound", P + "decode_launch_bound.sqlite.gz", K(r"indexSelect", 1))
_entry("side_stream_serialized_copies", P + "side_stream_serialized_copies.sqlite.gz", C("HtoD", 64 * 2**20, 1))
_entry("one_shot_inference", P + "one_shot_inference.sqlite.gz", None)
# the four issue-13 samples in data/samples/timeline (same definitions)
S = "../../samples/timeline/"
_entry("sample:whole_process_launch_bound", S + "whole_process_launch_bound.sqlite.gz", K(r"nll_loss_forward", 1))
_entry("sample:whole_process_launch_bound_kineto", S + "whole_process_launch_bound.json.gz", K(r"nll_loss_forward", 1))
_entry("sample:host_compute_bound", S + "host_compute_bound.sqlite.gz", C("HtoD", 64 * 3 * 64 * 64 * 4, 1), skip=0)
_entry("sample:host_compute_bound_kineto", S + "host_compute_bound.json.gz", C("HtoD", 64 * 3 * 64 * 64 * 4, 1), skip=0)
_entry(
    "sample:teardown_after_loop",
    S + "teardown_after_loop.sqlite.gz",
    K(r"elementwise", 3),
    teardown=r"cudaFree|cudaDeviceReset",
)
_entry(
    "sample:teardown_after_loop_kineto", S + "teardown_after_loop.json.gz", K(r"elementwise", 3), teardown=r"cudaFree"
)
_entry("sample:pinned_unoverlapped_copies", S + "pinned_unoverlapped_copies.sqlite.gz", C("HtoD", 64 * 2**20, 1), skip=0)
_entry(
    "sample:pinned_unoverlapped_copies_kineto",
    S + "pinned_unoverlapped_copies.json.gz",
    C("HtoD", 64 * 2**20, 1),
    skip=0,
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], HERE))
