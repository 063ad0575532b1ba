#!/usr/bin/env python3
"""Re-check the blind5 timeline labels: the numbers labels.json quotes, computed from the files.

Its entries are this gallery's two nsys exports and one Kineto trace. Stdlib only (sqlite3,
json, gzip); it never imports kprof. Usage:
    python3 data/validation/blind5/measure.py [ENTRY_ID ...] [--json]
The definitions (window, GPU busy, idle cover, ...) and the code are shared by every gallery: see
../measure_common.py.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from measure_common import C, K, _entry, main  # noqa: E402

# the three blind5 timelines (files in this folder; each anchor happens exactly once per loop step, see README.md)
_entry("adam_foreach_off", "adam_foreach_off.sqlite.gz", C("HtoD", 12, 1))  # the 12-byte step-number marker
_entry("numpy_preproc", "numpy_preproc.json.gz", C("HtoD", 32 * 3 * 224 * 224 * 4, 1))  # the pageable batch upload
_entry("periodic_log_sync", "periodic_log_sync.sqlite.gz", C("HtoD", 12, 1))  # the 12-byte step-number marker


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], HERE))
