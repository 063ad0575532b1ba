"""One profiled launch of an ``.ncu-rep`` as a :class:`~kprof.kernel_model.KernelLaunch`: its metrics,
launch configuration, NVTX state, ncu's rule results, sections, source files and SASS (each
function's listing walked once per report)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from kprof.errors import KprofInputError
from kprof.kernel_model import KernelLaunch, Metric, MetricValue, RuleResult, SassLine

# SpeedOfLight's two headline metrics; a launch without them cannot be placed on the roofline.
SOL_METRICS = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
)

SASS_BYTES_PER_INSTRUCTION = 16  # every SASS instruction is 128 bits since Volta (sm_70)

MAX_SASS_LINES = 500_000  # a guard against walking off a function in a corrupt report

# Metric names are identifiers separated by '__', '.', ':' (e.g. "breakdown:sm__throughput...").
# ncu 2023.1 stored a bogus one literally named "regex:all\.(sum|...)$" when a --metrics regex was
# passed wrongly; such names are skipped (and noted), they are not metrics.
_METRIC_NAME = re.compile(r"^[A-Za-z0-9_@:.\-]+$")

_MSG_TYPES = {0: "", 1: "ok", 2: "warning", 3: "optimization", 4: "error"}

_SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}


def _load_action(
    path: str,
    action: Any,
    index: int,
    ncu_report: Any,
    notes: list[str],
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] | None = None,
    units: dict[str, str] | None = None,
    pending: list[PendingSass] | None = None,
) -> KernelLaunch:
    """One launch. ``listings`` and ``units`` carry what one launch read to the report's next ones: each
    function's SASS (:func:`_listing`) and each metric's unit. A unit belongs to the metric's name (its
    definition), not to the launch: over the 40 first launches of every report here (89 reports, 191,412
    unit reads) no name had two units; ``IMetric.unit()`` costs 45-70 µs, 0.1-0.16 s per launch of 2,240
    metrics.

    With ``pending`` (a list), the function's SASS is not read here: another process reads it
    (:func:`read_listing`) while this one reads the metrics, and :func:`join_sass` puts the two together.
    The launch is returned without SASS and source files, and what the join needs (the per-PC counters
    that can belong to the listing) is appended to ``pending``."""
    name = action.name()
    if name is None:
        raise KprofInputError(
            path,
            f"launch {index} has no kernel name: the report is truncated or incomplete "
            "(re-copy it, or profile again with `ncu --set full -o NAME ...`)",
        )
    names = list(action.metric_names())
    if not names:
        raise KprofInputError(path, f"launch {index} ({name}) holds no metrics: the report is incomplete")

    metrics: dict[str, Metric] = {}
    device_attributes: dict[str, MetricValue] = {}
    instanced: dict[str, Any] = {}
    skipped: list[str] = []
    for mname in names:
        if not _METRIC_NAME.match(mname):
            skipped.append(mname)
            continue
        m = action.metric_by_name(mname)
        if m is None:
            continue
        try:
            n_inst = m.num_instances()
        except Exception:
            n_inst = 0
        if n_inst > 0 and m.has_correlation_ids():
            instanced[mname] = m
        value = _scalar(m)
        if value is None:
            continue
        unit = units.get(mname) if units is not None else None
        if unit is None:
            unit = m.unit() or ""
            if units is not None:
                units[mname] = unit
        metrics[mname] = Metric(value, unit)
        if mname.startswith("device__attribute_"):
            device_attributes[mname.removeprefix("device__attribute_")] = value
    if skipped:
        notes.append(
            f"launch {index} ({name}): skipped {len(skipped)} entries whose names are not metric names "
            f"(e.g. {skipped[0][:60]!r})"
        )

    if not any(m in metrics for m in SOL_METRICS) and not any(k.startswith("launch__") for k in metrics):
        # Seen in a real ncu 2023.1 report: one launch whose metrics are all NaN and whose rules failed
        # ("Metric launch__block_size not found"). The other launches are fine; keep it, say so, and let
        # the diagnosis be inconclusive with the command that profiles it again.
        notes.append(
            f"launch {index} ({name}): ncu recorded no SpeedOfLight values and no launch statistics "
            "(its profiling failed); it is diagnosed as inconclusive"
        )

    mangled = _safe_name(action, ncu_report.IAction.NameBase_MANGLED)
    sass: tuple[SassLine, ...] = ()
    source_files: dict[str, str] = {}
    if pending is None:
        sass = _load_sass(action, metrics, instanced, listings, mangled or name)
        source_files = _source_files(action, {s.file for s in sass if s.file})
    else:
        starts = _function_starts(instanced)
        pending.append(PendingSass(mangled or name, tuple(starts), _counter_candidates(instanced, starts)))
    return KernelLaunch(
        id=index,
        name=name,
        demangled_name=_safe_name(action, ncu_report.IAction.NameBase_DEMANGLED) or name,
        mangled_name=mangled,
        grid=_dim3(metrics, "launch__grid_dim_"),
        block=_dim3(metrics, "launch__block_dim_"),
        registers_per_thread=_int(metrics, "launch__registers_per_thread"),
        shared_mem_per_block=_shared_mem(metrics),
        device=_str(device_attributes.get("display_name")),
        compute_capability=_cc(device_attributes),
        device_attributes=device_attributes,
        nvtx=_nvtx(action),
        metrics=metrics,
        rules=_rules(action),
        sass=sass,
        source_files=source_files,
        sections=_sections(action),
    )


def _scalar(m: Any) -> MetricValue | None:
    try:
        v = _value(m)
    except Exception:
        return None
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None  # ncu stores NaN for a metric it could not compute: that is missing, not a number
    if isinstance(v, int | float | str):
        return v
    return None


def _safe_name(action: Any, base: int) -> str | None:
    try:
        n = action.name(base)
    except Exception:
        return None
    return str(n) if n else None


def _int(metrics: Mapping[str, Metric], name: str) -> int | None:
    m = metrics.get(name)
    if m is None or isinstance(m.value, str):
        return None
    return int(m.value)


def _dim3(metrics: Mapping[str, Metric], prefix: str) -> tuple[int, int, int] | None:
    dims = [_int(metrics, prefix + c) for c in "xyz"]
    if any(d is None for d in dims):
        return None
    return (dims[0] or 0, dims[1] or 0, dims[2] or 0)


def _shared_mem(metrics: Mapping[str, Metric]) -> int | None:
    static = _int(metrics, "launch__shared_mem_per_block_static")
    dynamic = _int(metrics, "launch__shared_mem_per_block_dynamic")
    if static is None and dynamic is None:
        return None
    return (static or 0) + (dynamic or 0)


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _cc(attrs: Mapping[str, MetricValue]) -> str | None:
    major, minor = attrs.get("compute_capability_major"), attrs.get("compute_capability_minor")
    if major is None or minor is None:
        return None
    return f"{major}.{minor}"


def _nvtx(action: Any) -> tuple[str, ...]:
    try:
        state = action.nvtx_state()
    except Exception:
        return ()
    if state is None:
        return ()
    out: list[str] = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        if dom is None:
            continue
        dname = dom.name() or ""
        i = 0
        while True:
            r = dom.push_pop_range(i)
            if r is None:
                break
            rname = r.name() or ""
            out.append(f"{dname}:{rname}" if dname else rname)
            i += 1
        for rname in dom.start_end_ranges():
            out.append(f"{dname}:{rname}" if dname else rname)
    return tuple(out)


def _rules(action: Any) -> tuple[RuleResult, ...]:
    try:
        raw = action.rule_results_as_dicts()
    except Exception:
        return ()
    out: list[RuleResult] = []
    for d in raw:
        msg = d.get("rule_message") or {}
        sp = d.get("speedup_estimation") or {}
        speedup = sp.get("speedup") if isinstance(sp, dict) else None
        out.append(
            RuleResult(
                name=str(d.get("rule_identifier") or d.get("name") or ""),
                title=str(msg.get("title") or d.get("name") or ""),
                message=str(msg.get("message") or ""),
                section=str(d.get("section_identifier") or ""),
                speedup_estimate=float(speedup) if isinstance(speedup, int | float) else None,
                speedup_type=_SPEEDUP_TYPES.get(int(sp.get("type", 0)))
                if isinstance(sp, dict) and sp
                else None,
                kind=_MSG_TYPES.get(int(msg.get("type", 0) or 0), ""),
                focus_metrics=tuple(
                    str(f.get("name")) for f in d.get("focus_metrics") or () if f.get("name")
                ),
            )
        )
    return tuple(out)


def _source_files(action: Any, wanted: set[str]) -> dict[str, str]:
    """Path -> text of the source files the SASS maps to (``wanted``; text ``""`` when the report did not
    embed it)."""
    if not wanted:
        return {}
    try:
        raw = action.source_files() or {}
    except Exception:
        raw = {}
    out = {f: "" for f in wanted}
    for f, text in raw.items():
        if f in out and isinstance(text, str):
            out[f] = text
    return out


def _sections(action: Any) -> tuple[str, ...]:
    try:
        return tuple(str(s.identifier()) for s in action.sections())
    except Exception:
        return ()


@dataclass(frozen=True, slots=True)
class _Listing:
    """One function's SASS as the loader read it: text and source line by PC, in address order."""

    text_by_pc: dict[int, str]
    source: dict[int, tuple[str | None, int | None]]


def _walk_listing(action: Any, starts: list[int]) -> dict[int, str]:
    """Walk the SASS from each entry PC, 16 bytes per instruction, to the first PC without SASS."""
    text_by_pc: dict[int, str] = {}
    for start in starts:
        pc = start
        for _ in range(MAX_SASS_LINES):
            s = action.sass_by_pc(pc)
            if not s:
                break
            text_by_pc[pc] = " ".join(s.split())
            pc += SASS_BYTES_PER_INSTRUCTION
    return text_by_pc


def _source_lines(action: Any, pcs: Iterator[int]) -> dict[int, tuple[str | None, int | None]]:
    out: dict[int, tuple[str | None, int | None]] = {}
    for pc in pcs:
        file = line = None
        try:
            info = action.source_info(pc)
        except Exception:
            info = None
        if info is not None:
            try:
                file = info.file_name() or None
                ln = info.line()
                line = int(ln) if ln else None
            except Exception:
                file = line = None
        out[pc] = (file, line)
    return out


def _listing(
    action: Any,
    starts: list[int],
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] | None,
    function: str | None,
) -> _Listing:
    """The function's listing, read once per report: later launches of the same function (same name, same
    entry PCs) reuse it. A 154-launch report of a dozen kernels walked the same SASS 154 times, 281,000
    ``sass_by_pc`` calls. A cached listing is reused only when the first instruction at each entry PC
    still reads the same (a module loaded at another's address would not)."""
    key = (function, tuple(starts))
    hit = listings.get(key) if listings is not None else None
    if hit is not None and all(
        " ".join((action.sass_by_pc(pc) or "").split()) == hit.text_by_pc.get(pc) for pc in starts
    ):
        return hit
    text_by_pc = _walk_listing(action, starts)
    listing = _Listing(text_by_pc, _source_lines(action, iter(sorted(text_by_pc))))
    if listings is not None and text_by_pc:
        listings[key] = listing
    return listing


def _function_starts(instanced: Mapping[str, Any]) -> list[int]:
    """The function's entry PCs (``launch__function_pcs``)."""
    fpcs = instanced.get("launch__function_pcs")
    starts: list[int] = []
    if fpcs is not None:
        for i in range(fpcs.num_instances()):
            try:
                starts.append(int(fpcs.value(i)))
            except Exception:
                continue
    return starts


def _load_sass(
    action: Any,
    metrics: Mapping[str, Metric],
    instanced: Mapping[str, Any],
    listings: dict[tuple[str | None, tuple[int, ...]], _Listing] | None = None,
    function: str | None = None,
) -> tuple[SassLine, ...]:
    """Walk the function's SASS from its entry PC, 16 bytes per instruction, and attach per-PC counters.

    ``listings`` caches each function's text and source lines for the report's other launches
    (:func:`_listing`); the per-PC counters are each launch's own."""
    starts = _function_starts(instanced)
    if not starts:
        return ()
    listing = _listing(action, starts, listings, function)
    if not listing.text_by_pc:
        return ()
    return _sass_lines(listing, _pc_counters(_counter_candidates(instanced, starts), listing.text_by_pc))


Candidates = list[tuple[str, int, list[tuple[int, float]]]]
"""Per-PC counters that can belong to a listing: (metric name, its first correlation id, (PC, value) pairs)."""


def _could_be_listed(starts: list[int]) -> Callable[[int], bool]:
    """Whether a PC can be in the listing walked from ``starts`` (:func:`_walk_listing`: at most
    :data:`MAX_SASS_LINES` instructions of 16 bytes from an entry PC). A superset of the listing's PCs,
    known before the listing is read."""
    span = MAX_SASS_LINES * SASS_BYTES_PER_INSTRUCTION
    if len(starts) == 1:
        s0 = starts[0]
        return lambda pc: 0 <= pc - s0 < span and not (pc - s0) % SASS_BYTES_PER_INSTRUCTION
    return lambda pc: any(0 <= pc - s < span and not (pc - s) % SASS_BYTES_PER_INSTRUCTION for s in starts)


def _counter_candidates(instanced: Mapping[str, Any], starts: list[int]) -> Candidates:
    """The per-PC counters: instanced metrics whose correlation ids are PCs of this function, read for
    the PCs that can be in its listing (:func:`_could_be_listed`); :func:`_pc_counters` keeps those of
    the listing's own PCs."""
    out: Candidates = []
    if not starts:
        return out
    listed = _could_be_listed(starts)
    for mname, m in instanced.items():
        if mname.startswith("launch__"):
            continue
        try:
            cids = m.correlation_ids()
            n = m.num_instances()
        except Exception:
            continue
        if cids is None or n == 0:
            continue
        cid_at = _instance_reader(cids)
        first = _as_int(cid_at, 0)
        if first is None or not listed(first):
            continue
        value_at = _instance_reader(m)
        pairs: list[tuple[int, float]] = []
        for i in range(n):
            pci = _as_int(cid_at, i)
            if pci is None or not listed(pci):
                continue
            try:
                v = value_at(i)
            except Exception:
                continue
            if isinstance(v, int | float) and not isinstance(v, bool):
                pairs.append((pci, float(v)))
        out.append((mname, first, pairs))
    return out


def _pc_counters(candidates: Candidates, text_by_pc: Mapping[int, str]) -> dict[int, dict[str, float]]:
    """PC -> metric -> value: the candidates whose first correlation id is a PC of the listing, at the
    listing's PCs (in the metrics' order)."""
    counters: dict[int, dict[str, float]] = {}
    for mname, first, pairs in candidates:
        if first not in text_by_pc:
            continue
        for pci, v in pairs:
            if pci in text_by_pc:
                counters.setdefault(pci, {})[mname] = v
    return counters


def _sass_lines(listing: _Listing, counters: Mapping[int, dict[str, float]]) -> tuple[SassLine, ...]:
    text_by_pc = listing.text_by_pc
    lines: list[SassLine] = []
    for pc in sorted(text_by_pc):
        file, line = listing.source[pc]
        lines.append(
            SassLine(pc=pc, text=text_by_pc[pc], file=file, line=line, counters=counters.get(pc, {}))
        )
    return tuple(lines)


@dataclass(frozen=True, slots=True)
class PendingSass:
    """What a launch read without its SASS needs from the listing (:func:`join_sass`)."""

    function: str | None
    starts: tuple[int, ...]
    candidates: Candidates


@dataclass(frozen=True, slots=True)
class ListingRead:
    """One launch's SASS listing read on its own (:func:`read_listing`), with its source files."""

    function: str | None
    starts: tuple[int, ...]
    listing: _Listing | None
    source_files: dict[str, str]


def read_listing(action: Any, ncu_report: Any) -> ListingRead | None:
    """The SASS half of :func:`_load_action` for ``action``: its function's listing and the source files
    it maps to. None when the launch has no name or no metrics (the other half says why)."""
    name = action.name()
    if name is None or not list(action.metric_names()):
        return None
    fpcs = action.metric_by_name("launch__function_pcs")
    instanced: dict[str, Any] = {}
    if fpcs is not None:  # as _load_action keeps it: an instanced metric with correlation ids
        try:
            n_inst = fpcs.num_instances()
        except Exception:
            n_inst = 0
        if n_inst > 0 and fpcs.has_correlation_ids():
            instanced["launch__function_pcs"] = fpcs
    starts = _function_starts(instanced)
    function = _safe_name(action, ncu_report.IAction.NameBase_MANGLED) or name
    if not starts:
        return ListingRead(function, (), None, {})
    listing = _listing(action, starts, None, function)
    files = {f for f, _ in listing.source.values() if f}
    return ListingRead(function, tuple(starts), listing, _source_files(action, files))


def join_sass(launch: KernelLaunch, pending: PendingSass, read: ListingRead) -> KernelLaunch:
    """``launch`` (read without its SASS) with the listing that another process read."""
    import dataclasses

    if (read.function, read.starts) != (pending.function, pending.starts):
        raise RuntimeError(f"launch {launch.id}: the SASS listing read is of another function")
    if not pending.starts or read.listing is None or not read.listing.text_by_pc:
        return launch
    counters = _pc_counters(pending.candidates, read.listing.text_by_pc)
    return dataclasses.replace(
        launch, sass=_sass_lines(read.listing, counters), source_files=read.source_files
    )


_DISPATCH: tuple[type, Callable[..., Any], dict[Any, Callable[..., Any]]] | None = None


def _dispatch(m: Any) -> tuple[Callable[..., Any], dict[Any, Callable[..., Any]]] | None:
    """ncu_report's own accessors by value kind, as ``IMetric.value`` dispatches, for ``m`` (None where
    this ncu_report build lacks them or ``m`` is not its ``IMetric``: then ``m.value`` is called)."""
    global _DISPATCH
    if _DISPATCH is None:
        try:
            from ncu_report import IMetric as metric
            from ncu_report import _ncu_report as raw

            _DISPATCH = (
                metric,
                raw.IMetric_kind,
                {
                    metric.ValueKind_DOUBLE: raw.IMetric_as_double,
                    metric.ValueKind_FLOAT: raw.IMetric_as_double,
                    metric.ValueKind_STRING: raw.IMetric_as_string,
                    metric.ValueKind_UINT32: raw.IMetric_as_uint64,
                    metric.ValueKind_UINT64: raw.IMetric_as_uint64,
                },
            )
        except (ImportError, AttributeError):
            return None
    cls, kind_of, by_kind = _DISPATCH
    return (kind_of, by_kind) if isinstance(m, cls) else None


def _instance_reader(m: Any) -> Callable[[int], Any]:
    """``i -> m.value(i)`` without ncu_report's per-call wrapper.

    ``IMetric.value`` builds a dict of seven lambdas on every call to dispatch on the value's kind; a
    report's per-PC counters are tens of thousands of such calls (35,000 in a 1,400-instruction kernel:
    0.2 s of a 1.2 s diagnosis) and its scalar metrics 2,240 per launch. This dispatches the same way, on
    the same kind read per value, through the module's own accessors (:func:`_dispatch`)."""
    d = _dispatch(m)
    if d is None:
        return cast(Callable[[int], Any], m.value)
    kind_of, by_kind = d

    def value_at(i: int) -> Any:
        read = by_kind.get(kind_of(m, i))
        return None if read is None else read(m, i)

    return value_at


def _value(m: Any) -> Any:
    """``m.value()`` (the metric's single value) through :func:`_dispatch`."""
    d = _dispatch(m)
    if d is None:
        return m.value()
    read = d[1].get(d[0](m))
    return None if read is None else read(m)


def _as_int(value_at: Callable[[int], Any], i: int) -> int | None:
    try:
        v = value_at(i)
    except Exception:
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None
