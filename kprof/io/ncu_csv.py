"""Load an Nsight Compute CSV export: ``ncu --csv --page raw`` or ``ncu --csv --page details``.

This path needs no native module. It copes with what real exports hold:

- lines before the header (``==PROF==`` / ``==WARNING==`` messages, the program's own output
  when ``--csv`` went to stdout);
- numbers with thousands separators (``"32,746,880"``) and ``n/a`` values (kept missing, never 0);
- the units row of ``--page raw`` (the row under the header whose ID cell is empty);
- scaled units (``usecond``, ``Gbyte/second``, ``Ghz``, ``Kbyte``): values are converted to the base
  unit that ncu's own metrics use (``ns``, ``byte``, ``byte/second``, ``hz``) so rules read one scale;
- ``--page details`` rows labelled by display name (``Duration``, ``DRAM Throughput``): the labels of
  the standard sections are mapped to their metric names (``--print-metric-name name`` exports need
  no mapping), and rule rows (``Rule Name``, ``Estimated Speedup``) become :class:`RuleResult` s.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from kprof.errors import KprofInputError
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric, MetricValue, RuleResult

FIXED_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)

# (section identifier or display name, label) -> metric name, for `--page details` with labels.
# Labels are ncu's section-file labels (identical in 2023.1 and 2025.3); the same label can mean
# different metrics in different sections ("Memory Throughput"), hence the section key.
_LABELS: dict[str, str] = {
    # SpeedOfLight ("GPU Speed Of Light Throughput")
    "sol|dram frequency": "dram__cycles_elapsed.avg.per_second",
    "sol|sm frequency": "gpc__cycles_elapsed.avg.per_second",
    "sol|elapsed cycles": "gpc__cycles_elapsed.max",
    "sol|memory throughput": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sol|dram throughput": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sol|duration": "gpu__time_duration.sum",
    "sol|l1/tex cache throughput": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "sol|l2 cache throughput": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sol|sm active cycles": "sm__cycles_active.avg",
    "sol|compute (sm) throughput": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    # LaunchStats
    "launch|block size": "launch__block_size",
    "launch|grid size": "launch__grid_size",
    "launch|registers per thread": "launch__registers_per_thread",
    "launch|shared memory configuration size": "launch__shared_mem_config_size",
    "launch|driver shared memory per block": "launch__shared_mem_per_block_driver",
    "launch|dynamic shared memory per block": "launch__shared_mem_per_block_dynamic",
    "launch|static shared memory per block": "launch__shared_mem_per_block_static",
    "launch|# sms": "device__attribute_multiprocessor_count",
    "launch|threads": "launch__thread_count",
    "launch|waves per sm": "launch__waves_per_multiprocessor",
    # Occupancy
    "occupancy|block limit sm": "launch__occupancy_limit_blocks",
    "occupancy|block limit registers": "launch__occupancy_limit_registers",
    "occupancy|block limit shared mem": "launch__occupancy_limit_shared_mem",
    "occupancy|block limit warps": "launch__occupancy_limit_warps",
    "occupancy|block limit barriers": "launch__occupancy_limit_barriers",
    "occupancy|theoretical active warps per sm": "sm__maximum_warps_avg_per_active_cycle",
    "occupancy|theoretical occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "occupancy|achieved occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "occupancy|achieved active warps per sm": "sm__warps_active.avg.per_cycle_active",
    # SchedulerStats
    "scheduler|one or more eligible": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "scheduler|issued warp per scheduler": "smsp__issue_active.avg.per_cycle_active",
    "scheduler|active warps per scheduler": "smsp__warps_active.avg.per_cycle_active",
    "scheduler|eligible warps per scheduler": "smsp__warps_eligible.avg.per_cycle_active",
    # WarpStateStats
    "warpstate|warp cycles per issued instruction": "smsp__average_warp_latency_per_inst_issued.ratio",
    "warpstate|avg. active threads per warp": "smsp__thread_inst_executed_per_inst_executed.ratio",
    "warpstate|avg. not predicated off threads per warp": "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio",
    # ComputeWorkloadAnalysis
    "compute|issue slots busy": "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "compute|executed ipc active": "sm__inst_executed.avg.per_cycle_active",
    # MemoryWorkloadAnalysis
    "memory|memory throughput": "dram__bytes.sum.per_second",
    "memory|l1/tex hit rate": "l1tex__t_sector_hit_rate.pct",
    "memory|l2 hit rate": "lts__t_sector_hit_rate.pct",
    # InstructionStats
    "instructions|executed instructions": "smsp__inst_executed.sum",
}
_SECTION_KEYS = {
    "gpu speed of light throughput": "sol",
    "speedoflight": "sol",
    "launch statistics": "launch",
    "launchstats": "launch",
    "occupancy": "occupancy",
    "scheduler statistics": "scheduler",
    "schedulerstats": "scheduler",
    "warp state statistics": "warpstate",
    "warpstatestats": "warpstate",
    "compute workload analysis": "compute",
    "computeworkloadanalysis": "compute",
    "memory workload analysis": "memory",
    "memoryworkloadanalysis": "memory",
    "instruction statistics": "instructions",
    "instructionstats": "instructions",
}

# Unit scaling to ncu's base units. SI prefixes, as ncu prints them (its "Kbyte" is 1000 bytes:
# a 32768-byte shared-memory configuration shows as "32.77 Kbyte").
_SI = {"": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
_COUNTABLE = r"byte|sector|sectors|inst|cycle|request|warp|thread|block|register|pass|branches|sample"
_METRIC_NAME = re.compile(r"^[a-z][a-z0-9_]*__[A-Za-z0-9_.@:]+$")


def _normalize(value: float, unit: str) -> tuple[float, str]:
    """Scale a value to ncu's base unit: ``(12.5, "us") -> (12500.0, "ns")``, ``(3.2, "Ghz") -> (3.2e9, "hz")``,
    ``(3.76, "Tbyte/s") -> (3.76e12, "byte/s")``, ``(1.5, "Kbyte/cycle") -> (1500.0, "byte/cycle")``."""
    u = unit.strip()
    if not u:
        return value, u
    if u in _TIME_NS:
        return value * _TIME_NS[u], "ns"
    m = re.fullmatch(r"([KMGT]?)hz", u, flags=re.IGNORECASE)
    if m:
        return value * _SI[m.group(1).upper()], "hz"
    num, slash, den = u.partition("/")
    m = re.fullmatch(rf"([KMGTP]?)({_COUNTABLE})", num)
    if not m:
        return value, u
    value *= _SI[m.group(1)]
    num = m.group(2)
    if not slash:
        return value, num
    if den in _TIME_NS:  # per ns / per us / per second -> per second
        return value * 1e9 / _TIME_NS[den], f"{num}/s"
    return value, f"{num}/{den}"


def _parse_value(raw: str) -> MetricValue | None:
    s = raw.strip()
    if s == "" or s.lower() in {"n/a", "na", "nan", "-", "(n/a)"}:
        return None
    t = s.replace(",", "")
    if re.fullmatch(r"[+-]?\d+", t):
        return int(t)
    try:
        f = float(t)
    except ValueError:
        return s
    # "inf", "1e400": not a measurement; missing, like the NaN ncu writes for what it could not compute
    return f if math.isfinite(f) else None


def _dims(raw: str | None) -> tuple[int, int, int] | None:
    if not raw:
        return None
    nums = re.findall(r"\d+", raw.replace(",", " "))
    if len(nums) != 3:
        return None
    return (int(nums[0]), int(nums[1]), int(nums[2]))


_HEAD_CHARS = 1 << 16


def _read_rows(path: str) -> tuple[list[list[str]], bool]:
    """The rows from the header on, and whether the text ends with a line break (ncu's always does)."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace", newline="") as f:
            text = f.read(_HEAD_CHARS)  # binary data is refused before the whole file is read
            if "\x00" not in text:
                text += f.read()
    except OSError as exc:
        raise KprofInputError(path, f"cannot read: {exc.strerror}") from exc
    if "\x00" in text:
        raise KprofInputError(
            path, "not an ncu CSV export (the file holds NUL bytes: binary data, or UTF-16 text)"
        )
    lines = text.splitlines(keepends=True)
    start = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith('"ID",') or stripped.startswith("ID,"):
            start = i
            break
    if start is None:
        raise KprofInputError(
            path,
            'not an ncu CSV export (no header row starting with "ID"; expected `ncu --csv --page raw` or '
            "`--page details` output)",
        )
    try:
        rows = [
            row
            for row in csv.reader(io.StringIO("".join(lines[start:]), newline=""))
            if row and any(c.strip() for c in row)
        ]
    except csv.Error as exc:  # e.g. a stray carriage return inside an unquoted cell
        raise KprofInputError(path, f"not a well-formed CSV file ({exc})") from exc
    if text.endswith(("\n", "\r")):
        return rows, True
    # No line break at the end: the file may have been cut. A cut inside a quoted cell leaves an
    # odd number of quotes on the last line; the caller checks the last row's length.
    if lines[-1].count('"') % 2:
        raise KprofInputError(path, _truncated(len(lines), "ends inside a quoted cell"))
    return rows, False


def _truncated(line: int, how: str) -> str:
    return (
        f"the CSV export is truncated: its last line (line {line}) {how} and the file does not end with a "
        "line break; export it again (`ncu --import REPORT --csv --page raw > X.csv`)"
    )


def _check_last_row(path: str, rows: list[list[str]], header: list[str], needed: int, ended: bool) -> None:
    """Refuse a file whose last row was cut: fewer than ``needed`` cells and no final line break."""
    if ended:
        return
    if len(rows) <= 1:
        raise KprofInputError(path, _truncated(1, "is the header row"))
    if len(rows[-1]) < needed:
        raise KprofInputError(
            path, _truncated(len(rows), f"has {len(rows[-1])} of the header's {len(header)} columns")
        )


def load_ncu_csv(path: str | os.PathLike[str]) -> KernelProfile:
    """Load an ``ncu --csv`` export (``--page raw`` or ``--page details``).

    Parameters
    ----------
    path
        The CSV file. Lines before the header (``==PROF==`` messages, program output) are skipped.

    Returns
    -------
    KernelProfile
        ``format`` is ``ncu-csv-raw`` or ``ncu-csv-details``. There is no SASS and, for the raw page,
        no rule results: the diagnosis lowers its confidence accordingly.

    Raises
    ------
    KprofInputError
        No header, no data rows, or an unknown layout.

    Examples
    --------
    >>> prof = load_ncu_csv("data/samples/ncu/uncoalesced_global_access.raw.csv")  # doctest: +SKIP
    >>> prof[0].name, prof[0].value("launch__grid_size")  # doctest: +SKIP
    ('strided_gather', 16384.0)
    """
    from kprof.io.files import check_readable_file

    p = os.fspath(check_readable_file(path))
    rows, ended = _read_rows(p)
    header = [h.strip() for h in rows[0]]
    if "Metric Name" in header and "Metric Value" in header:
        _check_last_row(p, rows, header, header.index("Metric Value") + 1, ended)
        launches, notes = _details(p, header, rows[1:])
        fmt = "ncu-csv-details"
    else:
        _check_last_row(p, rows, header, len(header), ended)
        launches, notes = _raw(p, header, rows[1:])
        fmt = "ncu-csv-raw"
    if not launches:
        raise KprofInputError(p, "the CSV export holds no kernel rows (header only)")
    return KernelProfile(
        source=p, launches=tuple(launches), format=fmt, tool_version=None, notes=tuple(notes)
    )


def _cell(row: Sequence[str], col: dict[str, int], name: str) -> str | None:
    i = col.get(name)
    if i is None or i >= len(row):
        return None
    return row[i]


def _launch(
    path: str,
    ident: str | None,
    fixed: dict[str, str | None],
    metrics: dict[str, Metric],
    rules: Iterable[RuleResult],
) -> KernelLaunch:
    try:
        lid = int((ident or "").replace(",", ""))
    except ValueError as exc:
        raise KprofInputError(path, f"bad launch ID {ident!r} in the ID column") from exc
    name = (fixed.get("Kernel Name") or "").strip()
    if not name:
        raise KprofInputError(path, f"launch {lid} has an empty Kernel Name")
    short = _function_name(name)
    grid = _dims(fixed.get("Grid Size"))
    block = _dims(fixed.get("Block Size"))
    for prefix, dims in (("launch__grid_dim_", grid), ("launch__block_dim_", block)):
        if dims:
            for c, v in zip("xyz", dims, strict=True):
                metrics.setdefault(prefix + c, Metric(v, ""))
    attrs: dict[str, MetricValue] = {
        n.removeprefix("device__attribute_"): m.value
        for n, m in metrics.items()
        if n.startswith("device__attribute_")
    }
    cc = (fixed.get("CC") or "").strip() or None

    def _int(n: str) -> int | None:
        m = metrics.get(n)
        return int(m.value) if m is not None and isinstance(m.value, int | float) else None

    static, dynamic = (
        _int("launch__shared_mem_per_block_static"),
        _int("launch__shared_mem_per_block_dynamic"),
    )
    return KernelLaunch(
        id=lid,
        name=short,
        demangled_name=name,
        grid=grid,
        block=block,
        registers_per_thread=_int("launch__registers_per_thread"),
        shared_mem_per_block=None if static is None and dynamic is None else (static or 0) + (dynamic or 0),
        device=str(attrs["display_name"]) if "display_name" in attrs else None,
        compute_capability=cc,
        device_attributes=attrs,
        metrics=metrics,
        rules=tuple(rules),
        process=(fixed.get("Process Name") or None),
    )


def _function_name(demangled: str) -> str:
    """``void ns::k<(int)32>(int, float *)`` -> ``k`` (ncu's function-name base).

    ncu's CSV writes an anonymous namespace as ``unnamed>::`` (its ``<unnamed>`` loses the ``<``): a ``>`` without
    its ``<`` closes nothing.

    Examples
    --------
    >>> _function_name("void unnamed>::vectorized_layer_norm_kernel<BFloat16, float, 0>(int, T2, const T1 *)")
    'vectorized_layer_norm_kernel'
    """
    s = demangled.strip()
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):  # strip the parameter list: the last top-level '(...)'
        if ch in "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            cut = i
    s = s[:cut]
    depth, out = 0, []
    for ch in s:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    base = "".join(out).strip().split()[-1] if "".join(out).strip() else demangled
    return base.split("::")[-1]


def _metric(name: str, unit: str, raw: str) -> Metric | None:
    v = _parse_value(raw)
    if v is None:
        return None
    if isinstance(v, int | float):
        val, u = _normalize(float(v), unit)
        if isinstance(v, int) and val == v:
            return Metric(v, u)
        return Metric(val, u)
    return Metric(v, unit.strip())


def _raw(path: str, header: list[str], rows: list[list[str]]) -> tuple[list[KernelLaunch], list[str]]:
    col = {h: i for i, h in enumerate(header)}
    if "ID" not in col or "Kernel Name" not in col:
        raise KprofInputError(path, "CSV header lacks the ID and Kernel Name columns of an ncu export")
    units: list[str] = [""] * len(header)
    data = rows
    if rows and not rows[0][col["ID"]].strip():
        units = rows[0] + [""] * (len(header) - len(rows[0]))
        data = rows[1:]
    notes: list[str] = []
    out: list[KernelLaunch] = []
    for row in data:
        if len(row) < len(FIXED_COLUMNS):
            continue
        metrics: dict[str, Metric] = {}
        for i, h in enumerate(header):
            if h in FIXED_COLUMNS or i >= len(row):
                continue
            m = _metric(h, units[i] if i < len(units) else "", row[i])
            if m is not None:
                metrics[h] = m
        fixed = {c: _cell(row, col, c) for c in FIXED_COLUMNS}
        out.append(_launch(path, _cell(row, col, "ID"), fixed, metrics, ()))
    ids = [k.id for k in out]
    notes += _repeated_ids([str(i) for n, i in enumerate(ids) if i in ids[:n]])
    return out, notes


def _details(path: str, header: list[str], rows: list[list[str]]) -> tuple[list[KernelLaunch], list[str]]:
    col = {h: i for i, h in enumerate(header)}
    # A launch is a run of rows with one ID. The same ID again after another ID, with other launch
    # columns (kernel, grid, process...), or repeating a (section, metric) is another launch: two
    # exports pasted together restart at ID 0, and merging them would mix two kernels' metrics.
    by_id: dict[tuple[str, int], dict[str, Any]] = {}
    seen: dict[str, int] = {}
    last: str | None = None
    repeated: list[str] = []
    unmapped: set[str] = set()
    for row in rows:
        ident = (_cell(row, col, "ID") or "").strip()
        if not ident:
            continue
        fixed = {c: _cell(row, col, c) for c in FIXED_COLUMNS}
        section = (_cell(row, col, "Section Name") or "").strip()
        label = (_cell(row, col, "Metric Name") or "").strip()
        rule = (_cell(row, col, "Rule Name") or "").strip()
        entry = by_id.get((ident, seen.get(ident, 0)))
        if entry is not None and (
            ident != last or entry["fixed"] != fixed or (label and (section, label) in entry["labels"])
        ):
            seen[ident] += 1
            repeated.append(ident)
            entry = None
        seen.setdefault(ident, 0)
        last = ident
        if entry is None:
            entry = by_id[(ident, seen[ident])] = {
                "fixed": fixed,
                "metrics": {},
                "rules": [],
                "labels": set(),
            }
        if label:
            entry["labels"].add((section, label))
            name = (
                label
                if _METRIC_NAME.match(label)
                else _LABELS.get(f"{_SECTION_KEYS.get(section.lower(), section.lower())}|{label.lower()}")
            )
            if name is None:
                unmapped.add(label)
                name = f"label:{section}:{label}"
            m = _metric(name, _cell(row, col, "Metric Unit") or "", _cell(row, col, "Metric Value") or "")
            if m is not None:
                entry["metrics"][name] = m
        elif rule:
            speed = _parse_value(_cell(row, col, "Estimated Speedup") or "")
            entry["rules"].append(
                RuleResult(
                    name=rule,
                    title=rule,
                    message=(_cell(row, col, "Rule Description") or "").strip(),
                    section=section,
                    speedup_estimate=float(speed) if isinstance(speed, int | float) else None,
                    speedup_type=((_cell(row, col, "Estimated Speedup Type") or "").strip().lower() or None),
                    kind=(_cell(row, col, "Rule Type") or "").strip().lower(),
                )
            )
    notes = (
        [f"{len(unmapped)} details-page labels have no metric name and are kept as 'label:SECTION:LABEL'"]
        if unmapped
        else []
    )
    notes += _repeated_ids(repeated)
    launches = [_launch(path, ident, e["fixed"], e["metrics"], e["rules"]) for (ident, _), e in by_id.items()]
    return launches, notes


def _repeated_ids(ids: list[str]) -> list[str]:
    """A note naming launch IDs that more than one launch uses (kept apart, not merged)."""
    if not ids:
        return []
    shown = ", ".join(dict.fromkeys(ids[:5]))
    return [
        f"launch ID {shown} appears twice or more ({len(ids)} repeat(s)): each is kept as its own launch; the "
        "export holds more than one report (IDs restart at 0 in each)"
    ]


__all__ = ["load_ncu_csv"]
