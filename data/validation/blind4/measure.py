#!/usr/bin/env python3
"""Re-check the blind4 timeline labels: the numbers labels.json quotes, computed from the files.

Its entries are this gallery's two nsys exports and two Kineto traces. Stdlib only (sqlite3,
json, gzip); it never imports kprof. Usage:
    python3 data/validation/blind4/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, ...) and the code are shared by every gallery: see
../measure_common.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from measure_common import C, K, _entry, main  # noqa: E402

# the four blind4 timelines (files in this folder; each anchor happens exactly once per loop step, see README.md)
_entry("compile_graph_break", "compile_graph_break.sqlite.gz", K(r"^nvjet_", 3))  # 3 Linear GEMMs per step, no other GEMM
_entry("pinned_overlap", "pinned_overlap.sqlite.gz", C("HtoD", 8192 * 4096 * 2, 1))  # the 64 MiB next-batch upload
_entry("loader_workers", "loader_workers.json.gz", C("HtoD", 64 * 3 * 112 * 112 * 4, 1))  # the pinned batch upload
_entry("per_sample_loop", "per_sample_loop.json.gz", K(r"CatArrayBatchedCopy", 1))  # the torch.cat that ends each step


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], HERE))
