#!/usr/bin/env python3
"""Re-check the final held-out timeline labels: the numbers labels.json quotes, computed from the files.

Its entries are this gallery's two nsys exports and two Kineto traces. Stdlib only (sqlite3,
json, gzip); it never imports kprof. Usage:
    python3 data/validation/final/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, ...) and the code are shared by every gallery: see
../measure_common.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from measure_common import C, K, _entry, main  # noqa: E402

# the four final timelines (files in this folder; each anchor happens exactly once per loop step, see README.md)
_entry("tokenize_feed", "tokenize_feed.sqlite.gz", K(r"vectorized_gather_kernel", 1))  # the embedding lookup
_entry("sync_each_gemm", "sync_each_gemm.sqlite.gz", K(r"^nvjet_", 2))  # 2 GEMMs per step, no other kernel in the loop
_entry("pageable_batches", "pageable_batches.json.gz", C("HtoD", 4096 * 4096 * 4, 1))  # the 64 MiB batch upload
_entry("conv_gpu_bound", "conv_gpu_bound.json.gz", K(r"fprop_implicit_gemm", 3))  # 3 convolutions per step


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], HERE))
