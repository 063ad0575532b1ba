#!/usr/bin/env python3
"""Re-check the blind6 timeline labels: the numbers labels.json quotes, computed from the files.

Its entries are this gallery's three nsys exports and one Kineto trace. Stdlib only (sqlite3,
json, gzip); it never imports kprof. Usage:
    python3 data/validation/blind6/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, ...) and the code are shared by every gallery: see
../measure_common.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from measure_common import C, _entry, main  # noqa: E402

# the four blind6 timelines (files in this folder; each anchor happens exactly once per loop step, see README.md)
_entry("tl_alloc_churn", "tl_alloc_churn.sqlite.gz", C("HtoD", 12, 1))  # the 12-byte step-number marker
_entry("tl_recompile_shapes", "tl_recompile_shapes.sqlite.gz", C("HtoD", 12, 1))  # the 12-byte step-number marker
_entry("tl_d2h_pageable", "tl_d2h_pageable.sqlite.gz", C("HtoD", 12, 1))  # the 12-byte step-number marker
_entry("tl_overlap_pipeline", "tl_overlap_pipeline.json.gz", C("HtoD", 8192 * 1024 * 2, 1))  # the batch upload


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], HERE))
