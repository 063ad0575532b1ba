#!/usr/bin/env python3
"""Shrink an nsys SQLite export to fit the gallery's size budget (blind7), stdlib only.

    python3 trim_osrt.py EXPORT.sqlite [MIN_NS]

Deletes the OS-runtime rows shorter than MIN_NS (default 10000 ns = 10 us) from OSRT_API, except the
earliest- and latest-starting rows (so the capture span, which counts OS-runtime calls by their start, is
unchanged), deletes every row of OSRT_CALLCHAINS (the OS-runtime calls' backtraces), and VACUUMs. Every other
table (CUDA API, kernels, copies, NVTX, ...) is left as nsys exported it. Used on tl_compile_oneshot.sqlite:
a torch.compile start-up traced with -t osrt held 146,977 OSRT_API rows (96,535 of them mmap64/munmap, mostly the
imports; 8,448 rows last 10 us or more) and 79,210 callchain rows, 3.16 MB gzip'd; trimmed 8,450 rows, 0.49 MB.
Prints the row counts before and after.
"""

import sqlite3
import sys


def main(argv):
    path = argv[0]
    min_ns = int(argv[1]) if len(argv) > 1 else 10000
    con = sqlite3.connect(path)
    n0 = con.execute("select count(*) from OSRT_API").fetchone()[0]
    c0 = con.execute("select count(*) from OSRT_CALLCHAINS").fetchone()[0]
    lo, hi = con.execute("select min(start), max(start) from OSRT_API").fetchone()
    con.execute("delete from OSRT_API where end - start < ? and start != ? and start != ?", (min_ns, lo, hi))
    con.execute("delete from OSRT_CALLCHAINS")
    con.commit()
    con.execute("vacuum")
    n1 = con.execute("select count(*) from OSRT_API").fetchone()[0]
    con.close()
    print(f"{path}: OSRT_API {n0} -> {n1} rows (kept calls >= {min_ns} ns and the first/last), "
          f"OSRT_CALLCHAINS {c0} -> 0 rows")


if __name__ == "__main__":
    main(sys.argv[1:])
