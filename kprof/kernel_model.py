"""The loaded form of an Nsight Compute report: a :class:`KernelProfile` of :class:`KernelLaunch` es.

Loaders (:mod:`kprof.io.ncu`, :mod:`kprof.io.ncu_csv`) build these; the kernel
diagnosis (:mod:`kprof.diagnose.kernel`) reads them. Everything is frozen.

A metric the report does not hold is *absent* from :attr:`KernelLaunch.metrics`:
:meth:`KernelLaunch.value` then returns None, never 0. The raw counters are
available on request as a pandas DataFrame (:meth:`KernelLaunch.to_dataframe`,
:meth:`KernelProfile.to_dataframe`); the reprs stay short.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

MetricValue = int | float | str


def _frozen_map(m: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric value with its unit as ncu reports it (``"byte"``, ``"%"``, ``"ns"``, ...)."""

    value: MetricValue
    unit: str = ""

    def __repr__(self) -> str:
        return f"Metric({self.value!r}, {self.unit!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleResult:
    """One result of ncu's own rules (secondary evidence, never the verdict).

    ``speedup_estimate`` is ncu's estimated speedup in percent of the kernel's
    duration, or None when the rule gives none.
    """

    name: str
    """The rule identifier, e.g. ``"SOLBottleneck"``, ``"UncoalescedGlobalAccess"``."""
    title: str = ""
    message: str = ""
    section: str = ""
    speedup_estimate: float | None = None
    speedup_type: str | None = None
    """``"global"`` (whole kernel) or ``"local"`` (the affected part), as ncu labels it."""
    kind: str = ""
    """ncu's message type: ``"optimization"``, ``"warning"``, ``"ok"``, ``"error"`` or ``""``."""
    focus_metrics: tuple[str, ...] = ()

    def __repr__(self) -> str:
        sp = "" if self.speedup_estimate is None else f", est. speedup {self.speedup_estimate:.1f}%"
        return f"RuleResult({self.name}: {self.title!r}{sp})"


@dataclass(frozen=True, slots=True, kw_only=True)
class SassLine:
    """One SASS instruction at ``pc``, its source line when the report has one, and per-PC counters."""

    pc: int
    text: str
    """The instruction as ncu disassembles it, predicate included: ``"@P0 LDG.E R2, [R4.64]"``."""
    file: str | None = None
    line: int | None = None
    counters: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """Per-PC source counters (e.g. ``inst_executed``, stall samples), when collected."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "counters", _frozen_map(self.counters))

    @property
    def opcode(self) -> str:
        """The full opcode with modifiers, without predicate: ``"LDG.E.128"``."""
        parts = self.text.split()
        if parts and parts[0].startswith("@"):
            parts = parts[1:]
        return parts[0].rstrip(";") if parts else ""

    @property
    def mnemonic(self) -> str:
        """The opcode without modifiers: ``"LDG"``."""
        return self.opcode.split(".", 1)[0]

    def __repr__(self) -> str:
        where = f" {self.file}:{self.line}" if self.file and self.line else ""
        return f"SassLine({self.pc:#x} {self.text.strip()!r}{where})"


POSITIVE_METRICS = {
    "gpu__time_duration.sum": "a kernel takes time",
    "gpc__cycles_elapsed.max": "a kernel takes cycles",
    "sm__cycles_elapsed.avg": "a kernel takes cycles",
    "device__attribute_multiprocessor_count": "a GPU has at least 1 SM",
    "launch__grid_size": "a launch has at least 1 block",
    "launch__block_size": "a block has at least 1 thread",
    "launch__thread_count": "a launch has at least 1 thread",
}
"""Metrics that are above 0 in every real report (:meth:`KernelLaunch.impossible_values`)."""

_BOUNDED_PCT_OF_PEAK = (
    ".pct_of_peak_sustained_elapsed",
    ".avg.pct_of_peak_sustained_active",
    ".sum.pct_of_peak_sustained_active",
)
"""Utilisations that no unit can exceed: a count over its peak rate times the *elapsed* cycles (every rollup: the
cycles are the same for every unit), or the units' total over their summed *active* cycles (``.avg``/``.sum``).
The per-unit extremes over active cycles (``.max``/``.min.pct_of_peak_sustained_active``) divide one unit's count
by the units' mean active cycles: a busy unit of an unbalanced launch reaches 1,622% of it in a real report (see
:data:`~kprof.thresholds.NCU_PCT_OF_PEAK_MAX`), so they are not bounded."""


def ncu_derived(name: str) -> str | None:
    """Why ncu itself can write ``name`` below 0, or None when it cannot (a count, a time, a launch value).

    No hardware counter counts below zero. ncu writes a negative value only for a metric it computes from
    other counters, and does not clamp it: "measurement values that lie outside the expected logical range
    of a metric ... are not clamped by the tool", most often because the counters behind one metric were
    collected in different replay passes (Nsight Compute Kernel Profiling Guide, "Range and Precision").
    Which metrics ncu computes shows in their names:

    - ``derived__*``: ncu's derived metrics, formulas over other metrics;
    - hit counts and hit rates (``_hit`` in the counter): a cache's hits are computed from its lookups and
      misses; genuine reports hold ``lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum`` at -1 and -2102
      sectors (a cuBLAS GEMM, an A100 kernel: issue 23);
    - ratios and percentages (``.pct``, ``.ratio``, ``.pct_of_peak_*``, ``.per_cycle_*``) and the per-unit
      minimum (``.min``): a ratio is negative only when its counter is such a difference, and the least busy
      unit's value is where a difference of two passes is largest against the value (genuine reports hold
      ``sm__pipe_tensor_type_..._cycles_active.min.pct_of_peak_sustained_elapsed`` at -1.8%).

    Plain counts (``.sum``, ``.avg``, ``.max``), rates per second, peaks, times, elapsed cycles and launch
    values are counted or set once: ncu writes none of them negative.

    Examples
    --------
    >>> ncu_derived("lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum") is not None
    True
    >>> ncu_derived("dram__bytes_read.sum") is None
    True
    """
    base, _, sub = name.partition(".")
    rollup, _, rest = sub.partition(".")
    if (
        name in POSITIVE_METRICS
        or base.startswith(("launch__", "device__attribute_"))
        or "cycles_elapsed" in base
    ):
        return None
    if base.startswith("derived__"):
        return "one of ncu's derived metrics, a formula over other metrics"
    if re.search(r"_hit(?:_|$)", base.split("__", 1)[-1]):
        return "a hit count, which ncu computes from the cache's lookups and misses"
    if sub in ("pct", "ratio") or rollup in ("pct", "ratio") or rest.startswith(("pct_of_peak", "per_cycle")):
        return "a ratio of counters that ncu may collect in different replay passes"
    if rollup == "min":
        return "the least busy unit's value, where a difference of replay passes weighs most"
    return None


@dataclass(frozen=True, slots=True)
class OddValue:
    """A metric value outside the range any measurement gives (:meth:`KernelLaunch.odd_values`)."""

    metric: str
    value: float
    why: str
    """What cannot be true about it, or why ncu writes it (when ``artefact``)."""
    artefact: bool = False
    """True for a value ncu itself writes for this kind of metric (:func:`ncu_derived`): it is set aside and
    named, never a reason to refuse the launch."""


class _Reads(Mapping[str, "Metric"]):
    """A launch's metrics that note each name a rule looks up (``get``, ``[]``, ``in``) in ``log``; iterating
    (a scan by name pattern) notes nothing."""

    __slots__ = ("_log", "_metrics")

    def __init__(self, metrics: Mapping[str, Metric], log: set[str]) -> None:
        self._metrics, self._log = metrics, log

    def __getitem__(self, name: str) -> Metric:
        self._log.add(name)
        return self._metrics[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._metrics)

    def __len__(self) -> int:
        return len(self._metrics)

    def items(self) -> Any:
        return self._metrics.items()

    def values(self) -> Any:
        return self._metrics.values()


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelLaunch:
    """One profiled kernel launch (an ncu *action*).

    Examples
    --------
    >>> k = KernelLaunch(id=0, name="axpy", metrics={"gpu__time_duration.sum": Metric(1200.0, "ns")})
    >>> k.value("gpu__time_duration.sum"), k.value("dram__bytes.sum")
    (1200.0, None)
    """

    id: int
    """Index of the launch in its report (ncu's ``ID`` column)."""
    name: str
    """Function name as ncu shows it (``NameBase_FUNCTION``)."""
    demangled_name: str = ""
    mangled_name: str | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers_per_thread: int | None = None
    shared_mem_per_block: int | None = None
    """Static plus dynamic shared memory per block, bytes (without the driver's reserve)."""
    device: str | None = None
    """GPU name (``device__attribute_display_name``)."""
    compute_capability: str | None = None
    device_attributes: Mapping[str, MetricValue] = field(default_factory=lambda: MappingProxyType({}))
    """``device__attribute_*`` values, keyed without the prefix."""
    nvtx: tuple[str, ...] = ()
    """NVTX push/pop ranges open around the launch, outermost first (``domain:range``)."""
    metrics: Mapping[str, Metric] = field(default_factory=lambda: MappingProxyType({}))
    rules: tuple[RuleResult, ...] = ()
    sass: tuple[SassLine, ...] = ()
    source_files: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Source files the report names for this kernel, path -> text (``""`` when the file was not
    embedded: ncu's ``--import-source yes`` embeds it; ``-lineinfo`` alone maps the SASS to it)."""
    sections: tuple[str, ...] = ()
    """Identifiers of the ncu sections collected (``SpeedOfLight``, ``MemoryWorkloadAnalysis``, ...)."""
    process: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", _frozen_map(self.metrics))
        object.__setattr__(self, "device_attributes", _frozen_map(self.device_attributes))
        object.__setattr__(self, "source_files", _frozen_map(self.source_files))
        for name in ("grid", "block"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, tuple(int(x) for x in v))
        for name in ("nvtx", "rules", "sass", "sections"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    # ---------------------------------------------------------------- access
    def metric(self, name: str) -> Metric | None:
        """The metric, or None when the report does not hold it."""
        return self.metrics.get(name)

    def value(self, name: str) -> float | None:
        """The metric's numeric value, or None when it is missing or not a number."""
        m = self.metrics.get(name)
        if m is None or isinstance(m.value, str | bool):
            return None
        return float(m.value)

    def first_value(self, *names: str) -> tuple[str, float] | None:
        """The first of ``names`` that the report holds, with its value (metric names change across ncu versions)."""
        for n in names:
            v = self.value(n)
            if v is not None:
                return n, v
        return None

    def impossible_values(self) -> tuple[tuple[str, float, str], ...]:
        """``(metric, value, what cannot be true)`` for each value every rule reads that no measurement can give:
        a duration, elapsed cycles, SM count or launch size of 0 or less. Empty for every sample, validation
        and corpus report. Other metrics out of range are :meth:`odd_values`.

        Examples
        --------
        >>> KernelLaunch(id=0, name="k", metrics={"gpu__time_duration.sum": Metric(-5, "ns")}).impossible_values()
        (('gpu__time_duration.sum', -5.0, 'a kernel takes time'),)
        """
        out: list[tuple[str, float, str]] = []
        for name, why in POSITIVE_METRICS.items():
            v = self.value(name)
            if v is None and name.startswith("device__attribute_"):
                a = self.device_attributes.get(name.removeprefix("device__attribute_"))
                v = float(a) if isinstance(a, int | float) and not isinstance(a, bool) else None
            if v is not None and v <= 0:
                out.append((name, v, why))
        for label, dims in (("launch__grid_dim", self.grid), ("launch__block_dim", self.block)):
            if dims is not None and min(dims) <= 0 and not any(n.startswith(label) for n, _, _ in out):
                out.append(
                    (f"{label}_{'xyz'[dims.index(min(dims))]}", float(min(dims)), "a launch has at least 1")
                )
        return tuple(out)

    def odd_values(self) -> tuple[OddValue, ...]:
        """The metrics (beyond :meth:`impossible_values`) whose values lie outside what any measurement gives:
        below -:data:`~kprof.thresholds.NCU_NEGATIVE_TOLERANCE` (ncu rounds some derived percentages a hair
        below 0), or a utilisation bounded by its peak (:data:`_BOUNDED_PCT_OF_PEAK`) above
        :data:`~kprof.thresholds.NCU_PCT_OF_PEAK_MAX`. A negative value of a metric ncu computes
        (:func:`ncu_derived`) is one ncu writes itself (``artefact=True``). None in any sample, validation or
        corpus report; :func:`kprof.diagnose.kernel.diagnose_launch` sets them aside and refuses the launch only
        when its verdict would read one that is not an artefact.

        Examples
        --------
        >>> hit = "lts__t_sectors_srcunit_tex_op_red_lookup_hit.sum"
        >>> [(o.value, o.artefact) for o in KernelLaunch(id=0, name="k", metrics={hit: Metric(-2102, "sector")}).odd_values()]
        [(-2102.0, True)]
        """
        from kprof.thresholds import NCU_NEGATIVE_TOLERANCE, NCU_PCT_OF_PEAK_MAX

        out: list[OddValue] = []
        for name, m in sorted(self.metrics.items()):  # items(): a scan, not a look-up (see reading())
            if (
                name in POSITIVE_METRICS
                or name.startswith("device__attribute_")
                or isinstance(m.value, str | bool)
            ):
                continue
            v = float(m.value)
            if v < -NCU_NEGATIVE_TOLERANCE:
                why = ncu_derived(name)
                out.append(
                    OddValue(name, v, why, artefact=True)
                    if why is not None
                    else OddValue(name, v, "ncu writes no negative value for a count, a rate or a time")
                )
            elif v > NCU_PCT_OF_PEAK_MAX and name.endswith(_BOUNDED_PCT_OF_PEAK):
                out.append(
                    OddValue(
                        name,
                        v,
                        f"no unit runs above its peak; ncu's own overshoot stays under {NCU_PCT_OF_PEAK_MAX:g}%",
                    )
                )
        return tuple(out)

    def reading(self, log: set[str], without: Iterable[str] = ()) -> KernelLaunch:
        """This launch without the metrics ``without`` (as if not collected), noting in ``log`` each metric name
        looked up on it: what a diagnosis of it reads."""
        drop = set(without)
        k = replace(self, metrics={n: m for n, m in self.metrics.items() if n not in drop})
        object.__setattr__(k, "metrics", _Reads(k.metrics, log))
        return k

    def rule(self, name: str) -> RuleResult | None:
        """ncu's result for the rule identifier ``name``, or None."""
        for r in self.rules:
            if r.name == name:
                return r
        return None

    @property
    def display_name(self) -> str:
        """The demangled name when known, else the function name."""
        return self.demangled_name or self.name

    @property
    def threads_per_block(self) -> int | None:
        if self.block is None:
            return None
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int | None:
        if self.grid is None:
            return None
        return self.grid[0] * self.grid[1] * self.grid[2]

    def source_line(self, file: str | None, line: int | None) -> str:
        """The text of ``line`` (1-based) of ``file`` when the report embeds that file, else ``""``."""
        if not file or line is None or line < 1:
            return ""
        text = self.source_files.get(file) or ""
        lines = text.splitlines()
        return lines[line - 1] if line <= len(lines) else ""

    def to_dataframe(self) -> pd.DataFrame:
        """All raw metrics of this launch: columns ``metric``, ``value``, ``unit`` (on request, never a headline)."""
        import pandas as pd

        rows = [(k, m.value, m.unit) for k, m in sorted(self.metrics.items())]
        return pd.DataFrame(rows, columns=["metric", "value", "unit"])

    def sass_dataframe(self) -> pd.DataFrame:
        """The SASS listing: ``pc``, ``text``, ``opcode``, ``file``, ``line`` and one column per per-PC counter."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        for s in self.sass:
            row: dict[str, Any] = {
                "pc": s.pc,
                "text": s.text,
                "opcode": s.opcode,
                "file": s.file,
                "line": s.line,
            }
            row.update(s.counters)
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        parts = [f"#{self.id} {self.name}"]
        if self.grid and self.block:
            parts.append(f"grid {'x'.join(map(str, self.grid))}, block {'x'.join(map(str, self.block))}")
        if self.device:
            parts.append(self.device)
        parts.append(f"{len(self.metrics)} metrics")
        if self.rules:
            parts.append(f"{len(self.rules)} rule results")
        if self.sass:
            parts.append(f"{len(self.sass)} SASS lines")
        return f"KernelLaunch({', '.join(parts)})"


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelProfile:
    """An Nsight Compute report (or its CSV export): the profiled launches, in report order.

    Examples
    --------
    >>> p = KernelProfile(source="r.ncu-rep", launches=(KernelLaunch(id=0, name="k"),))
    >>> len(p), p[0].name
    (1, 'k')
    """

    source: str
    """The path it was loaded from."""
    launches: tuple[KernelLaunch, ...] = ()
    format: str = "ncu-rep"
    """``ncu-rep``, ``ncu-csv-raw`` or ``ncu-csv-details``."""
    tool_version: str | None = None
    """Version of the reader (ncu_report) or of the exporting tool, when known."""
    notes: tuple[str, ...] = ()
    """What the loader had to skip or repair, one line each."""
    program: str = ""
    """The profiled program's command line as it runs from the current folder, when known (an ncu report
    does not give it to kprof: a manifest beside the report may, :func:`kprof.io.program.program_for`), else ""."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "launches", tuple(self.launches))
        object.__setattr__(self, "notes", tuple(self.notes))

    def __len__(self) -> int:
        return len(self.launches)

    def __iter__(self) -> Iterator[KernelLaunch]:
        return iter(self.launches)

    def __getitem__(self, i: int) -> KernelLaunch:
        return self.launches[i]

    def to_dataframe(self) -> pd.DataFrame:
        """Every metric of every launch, long form: ``launch``, ``kernel``, ``metric``, ``value``, ``unit``."""
        import pandas as pd

        rows = [
            (k.id, k.name, name, m.value, m.unit)
            for k in self.launches
            for name, m in sorted(k.metrics.items())
        ]
        return pd.DataFrame(rows, columns=["launch", "kernel", "metric", "value", "unit"])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        from kprof import renderers

        return renderers.presenter().kernel_profile_mimebundle(self)

    def __repr__(self) -> str:
        names = sorted({k.name for k in self.launches})
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} kernels)" if len(names) > 3 else "")
        return f"KernelProfile({self.source!r}, {self.format}, {len(self.launches)} launches: {shown})"


__all__ = [
    "POSITIVE_METRICS",
    "KernelLaunch",
    "KernelProfile",
    "Metric",
    "MetricValue",
    "OddValue",
    "RuleResult",
    "SassLine",
    "ncu_derived",
]
