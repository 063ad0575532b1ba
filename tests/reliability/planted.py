"""Planted impossible values inside otherwise valid profiles (issue 31) and ncu's own out-of-range
values (issue 23, point 1), built in code from the shipped samples.

Each builder copies a sample, changes one class of values and writes the copy into the folder it is
given; nothing under ``data/samples`` is touched. :data:`CASES` names each class with the sample it
starts from, so a test (or the closing note's before/after table) can run them all.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.reliability.inputs import NCU_DETAILS_CSV, NCU_RAW_CSV, SAMPLES

TIMELINE = SAMPLES / "timeline"
ONE_LAUNCH = SAMPLES.parent / "validation" / "timeline" / "profiles" / "one_launch_cudamalloc.sqlite.gz"
"""One cudaMallocManaged, one kernel, one blocking copy back (a validation capture, H200)."""
GPU_OPS = ("kernel", "gpu_memcpy", "gpu_memset")
NSYS_GPU_TABLES = {
    "kernel": "CUPTI_ACTIVITY_KIND_KERNEL",
    "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
    "memset": "CUPTI_ACTIVITY_KIND_MEMSET",
}


@dataclass(frozen=True)
class Planted:
    """One planted class: ``build(folder)`` writes the file and returns its path."""

    id: str
    what: str
    sample: Path
    build: Callable[[Path], Path]


# ----------------------------------------------------------------------------- timelines


def _trace(src: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(src.read_bytes()))


def kineto(src: Path, mutate: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    """A copy of a PyTorch profiler sample with ``mutate`` applied to the whole trace."""

    def build(d: Path) -> Path:
        tr = _trace(src)
        mutate(tr)
        p = d / f"{src.name.removesuffix('.json.gz')}.json"
        p.write_text(json.dumps(tr))
        return p

    return build


def nsys(src: Path, *sql: str) -> Callable[[Path], Path]:
    """A copy of an nsys export with ``sql`` run on it."""

    def build(d: Path) -> Path:
        p = d / src.name.removesuffix(".gz")
        if src.name.endswith(".gz"):
            p.write_bytes(gzip.decompress(src.read_bytes()))
        else:
            shutil.copyfile(src, p)
        con = sqlite3.connect(p)
        for s in sql:
            con.execute(s)
        con.commit()
        con.close()
        return p

    return build


def _gpu_events(tr: dict[str, Any], cats: tuple[str, ...] = GPU_OPS) -> list[dict[str, Any]]:
    return [e for e in tr["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


def kineto_dur(cats: tuple[str, ...], dur: float, every: int = 1) -> Callable[[dict[str, Any]], None]:
    def mutate(tr: dict[str, Any]) -> None:
        for e in _gpu_events(tr, cats)[::every]:
            e["dur"] = dur

    return mutate


def kineto_shift(us: float) -> Callable[[dict[str, Any]], None]:
    """Every GPU event (and its flow end) moved by ``us``: the GPU clock off against the host's."""

    def mutate(tr: dict[str, Any]) -> None:
        for e in tr["traceEvents"]:
            if e.get("pid") == 0 and "ts" in e and e.get("ph") in ("X", "f"):
                e["ts"] = e["ts"] + us

    return mutate


def kineto_device(dev: int) -> Callable[[dict[str, Any]], None]:
    """Every GPU event on device ``dev``; the trace's deviceProperties still list device 0 only."""

    def mutate(tr: dict[str, Any]) -> None:
        for e in _gpu_events(tr):
            e.setdefault("args", {})["device"] = dev

    return mutate


def zero_ns(table: str, where: str = "1") -> str:
    return f'UPDATE {NSYS_GPU_TABLES[table]} SET "end" = start WHERE {where}'


# ----------------------------------------------------------------------------- ncu exports


def _csv(p: Path, rows: list[list[str]]) -> Path:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    p.write_text(out.getvalue(), encoding="utf-8")
    return p


def details_percent(scale: float, unit: str | None = None) -> Callable[[Path], Path]:
    """The details-page export with every value in % multiplied by ``scale`` (and relabelled ``unit``)."""

    def build(d: Path) -> Path:
        rows = list(csv.reader(io.StringIO(NCU_DETAILS_CSV.read_text(encoding="utf-8"))))
        ui, vi = rows[0].index("Metric Unit"), rows[0].index("Metric Value")
        for r in rows[1:]:
            if len(r) > vi and r[ui] == "%" and r[vi].strip():
                r[vi] = f"{float(r[vi].replace(',', '')) * scale:.2f}"
                if unit is not None:
                    r[ui] = unit
        return _csv(d / "details.csv", rows)

    return build


def raw_values(**values: str | Callable[[str], str]) -> Callable[[Path], Path]:
    """The raw-page export with the named metrics set (a string) or changed (a function of the old value)."""

    def build(d: Path) -> Path:
        rows = list(csv.reader(io.StringIO(NCU_RAW_CSV.read_text(encoding="utf-8"))))
        for metric, v in values.items():
            i = rows[0].index(metric)
            for r in rows[1:]:
                if r and r[0].strip():  # launch rows (the units row has no ID)
                    r[i] = v(r[i]) if callable(v) else v
        return _csv(d / "raw.csv", rows)

    return build


def raw_pct_of_peak(scale: float) -> Callable[[Path], Path]:
    """The raw-page export with every ``pct_of_peak_sustained_elapsed`` value multiplied by ``scale``."""

    def build(d: Path) -> Path:
        rows = list(csv.reader(io.StringIO(NCU_RAW_CSV.read_text(encoding="utf-8"))))
        cols = [i for i, h in enumerate(rows[0]) if h.endswith("pct_of_peak_sustained_elapsed")]
        for r in rows[1:]:
            if r and r[0].strip():
                for i in cols:
                    with contextlib.suppress(ValueError):  # "n/a" stays as it is
                        r[i] = repr(float(r[i].replace(",", "")) * scale)
        return _csv(d / "raw.csv", rows)

    return build


RED_HIT = "lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum"
TENSOR_MIN = "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.min.pct_of_peak_sustained_elapsed"
GLD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
DRAM_READ = "dram__bytes_read.sum"
L2_SOL = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
UNREAD_COUNT = "idc__requests.sum"
"""Requests to the indexed constant cache: a plain count that no kernel rule reads."""


CASES: dict[str, Planted] = {
    c.id: c
    for c in (
        # ---- issue 31: GPU rows of 0 ns
        Planted(
            "nsys-every-kernel-0ns-memsets-kept",
            "every kernel row at 0 ns, the memsets as captured",
            TIMELINE / "gpu_bound.sqlite",
            nsys(TIMELINE / "gpu_bound.sqlite", zero_ns("kernel")),
        ),
        Planted(
            "nsys-half-the-kernels-0ns",
            "every other kernel row at 0 ns",
            TIMELINE / "gpu_bound.sqlite",
            nsys(TIMELINE / "gpu_bound.sqlite", zero_ns("kernel", "rowid % 2 = 0")),
        ),
        Planted(
            "kineto-every-kernel-dur-0",
            "every Kineto kernel with dur 0 (the memsets as captured)",
            TIMELINE / "gpu_bound.json.gz",
            kineto(TIMELINE / "gpu_bound.json.gz", kineto_dur(("kernel",), 0)),
        ),
        Planted(
            "nsys-every-memcpy-0ns",
            "every memcpy row at 0 ns",
            TIMELINE / "transfer_bound.sqlite",
            nsys(TIMELINE / "transfer_bound.sqlite", zero_ns("memcpy")),
        ),
        Planted(
            "kineto-every-memcpy-dur-0",
            "every Kineto memcpy with dur 0",
            TIMELINE / "sync_bound.json.gz",
            kineto(TIMELINE / "sync_bound.json.gz", kineto_dur(("gpu_memcpy",), 0)),
        ),
        Planted(
            "nsys-every-kernel-0ns-copies-kept",
            "every kernel row at 0 ns, the copies as captured",
            TIMELINE / "transfer_bound.sqlite",
            nsys(TIMELINE / "transfer_bound.sqlite", zero_ns("kernel")),
        ),
        Planted(
            "nsys-one-kernel-0ns",
            "one kernel row of 80 at 0 ns (a few such rows: named, the verdict kept)",
            TIMELINE / "gpu_bound.sqlite",
            nsys(TIMELINE / "gpu_bound.sqlite", zero_ns("kernel", "rowid = 7")),
        ),
        # ---- issue 31: percent of peak above 100
        Planted(
            "details-percent-x1000",
            'every "%" value of the details page 1000x too large',
            NCU_DETAILS_CSV,
            details_percent(1000.0),
        ),
        Planted(
            "details-percent-x1000-relabelled",
            'every "%" value 1000x too large and relabelled "Mbyte"',
            NCU_DETAILS_CSV,
            details_percent(1000.0, "Mbyte"),
        ),
        Planted(
            "raw-pct-of-peak-x1000",
            "every pct_of_peak_sustained_elapsed value of the raw page 1000x too large",
            NCU_RAW_CSV,
            raw_pct_of_peak(1000.0),
        ),
        # ---- issue 31: silent clock and device trouble
        Planted(
            "kineto-gpu-clock-5ms-late",
            "every GPU event 5 ms later (the GPU clock shifted against the host's)",
            TIMELINE / "gpu_bound.json.gz",
            kineto(TIMELINE / "gpu_bound.json.gz", kineto_shift(5000.0)),
        ),
        Planted(
            "nsys-gpu-clock-5ms-late",
            "every GPU row 5 ms later",
            TIMELINE / "gpu_bound.sqlite",
            nsys(
                TIMELINE / "gpu_bound.sqlite",
                *(
                    f'UPDATE {t} SET start = start + 5000000, "end" = "end" + 5000000'
                    for t in NSYS_GPU_TABLES.values()
                    if t != "CUPTI_ACTIVITY_KIND_MEMCPY"
                ),
            ),
        ),
        Planted(
            "nsys-gpu-clock-5ms-late-blocking-copy",
            "every GPU row 5 ms later in a capture whose only wait is a blocking cudaMemcpy to the host",
            ONE_LAUNCH,
            nsys(
                ONE_LAUNCH,
                *(
                    f'UPDATE {t} SET start = start + 5000000, "end" = "end" + 5000000'
                    for t in (NSYS_GPU_TABLES["kernel"], NSYS_GPU_TABLES["memcpy"])
                ),
            ),
        ),
        Planted(
            "kineto-gpu-clock-5ms-early",
            "every GPU event 5 ms earlier (before the calls that launched it: caught before this change)",
            TIMELINE / "gpu_bound.json.gz",
            kineto(TIMELINE / "gpu_bound.json.gz", kineto_shift(-5000.0)),
        ),
        Planted(
            "kineto-work-on-device-3",
            "every GPU event on device 3 while deviceProperties lists device 0",
            TIMELINE / "gpu_bound.json.gz",
            kineto(TIMELINE / "gpu_bound.json.gz", kineto_device(3)),
        ),
        Planted(
            "nsys-work-on-device-3",
            "every GPU row on device 3 while TARGET_INFO_GPU lists device 0",
            TIMELINE / "gpu_bound.sqlite",
            nsys(
                TIMELINE / "gpu_bound.sqlite",
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 3",
                "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET deviceId = 3",
            ),
        ),
        # ---- issue 23 point 1: negative values ncu itself writes, and ones it does not
        Planted(
            "raw-red-lookup-hit-minus-2102",
            f"{RED_HIT} at -2102 sectors (seen in a genuine A100 report)",
            NCU_RAW_CSV,
            raw_values(**{RED_HIT: "-2102"}),
        ),
        Planted(
            "raw-tensor-min-pct-minus-1.8",
            f"{TENSOR_MIN} at -1.8% (seen in a genuine report)",
            NCU_RAW_CSV,
            raw_values(**{TENSOR_MIN: "-1.8"}),
        ),
        Planted(
            "raw-threads-per-instruction-negative",
            f"{THREADS_PER_INST}, which the divergence rule reads, at -3 (a ratio ncu computes)",
            NCU_RAW_CSV,
            raw_values(**{THREADS_PER_INST: "-3"}),
        ),
        Planted(
            "raw-global-load-sectors-negative",
            f"{GLD_SECTORS}, which the coalescing verdict reads, at -4e6",
            NCU_RAW_CSV,
            raw_values(**{GLD_SECTORS: "-4000000"}),
        ),
        Planted(
            "raw-unread-count-negative",
            f"{UNREAD_COUNT}, a count no rule reads, at -5",
            NCU_RAW_CSV,
            raw_values(**{UNREAD_COUNT: "-5"}),
        ),
        Planted(
            "raw-l2-throughput-150pct",
            f"{L2_SOL}, SpeedOfLight's L2 value, at 150%",
            NCU_RAW_CSV,
            raw_values(**{L2_SOL: "150"}),
        ),
    )
}
