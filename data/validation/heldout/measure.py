#!/usr/bin/env python3
"""Re-check the held-out timeline labels: the numbers labels.json quotes, computed from the files.

Its entries are this
gallery's four Kineto traces. Stdlib only (sqlite3, json, gzip); it never imports kprof. Usage:
    python3 data/validation/heldout/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, ...) and the code are shared by every gallery: see
../measure_common.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from measure_common import C, K, _entry, main  # noqa: E402

# the four held-out Kineto traces (files in this folder; see README.md for why each anchor is once per step)
_entry("loader_cpu_augment", "loader_cpu_augment.json.gz", C("HtoD", 32 * 3 * 112 * 112 * 4, 1))
_entry("launch_small_ops", "launch_small_ops.json.gz", K(r"addcdiv", 24))
_entry("item_pagerank", "item_pagerank.json.gz", K(r"gemv2T", 1), skip=5)
_entry("gpu_bound_mlp", "gpu_bound_mlp.json.gz", K(r"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT", 3))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], HERE))
