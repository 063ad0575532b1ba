"""The typed results of kprof: a :class:`Diagnosis` and its parts.

Every result is a frozen dataclass, identical in Python, JSON and HTML.
``Diagnosis.to_dict()`` gives plain JSON-able data and ``Diagnosis.from_dict()``
rebuilds an equal object from it, so ``from_dict(json.loads(json.dumps(d.to_dict()))) == d``.

The loaded-data models (``Timeline``, ``KernelProfile``) live in
:mod:`kprof.timeline_model` and :mod:`kprof.kernel_model` and are re-exported here.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, fields
from typing import Any

from kprof import renderers


class Verdict(enum.StrEnum):
    """What the diagnosis concludes."""

    FIX = "fix"
    """A change is recommended."""
    HEALTHY = "healthy"
    """Near its roofline (or the GPU is busy with healthy kernels): do less work, don't tune."""
    INCONCLUSIVE = "inconclusive"
    """The evidence is insufficient; ``next_step`` names what would settle it."""


class Bottleneck(enum.StrEnum):
    """The stable bottleneck vocabulary (docs/rules.md explains each id)."""

    # timeline level
    HOST_LAUNCH_BOUND = "host_launch_bound"
    HOST_COMPUTE_BOUND = "host_compute_bound"
    SYNC_BOUND = "sync_bound"
    TRANSFER_BOUND = "transfer_bound"
    GPU_BOUND = "gpu_bound"
    STARTUP_BOUND = "startup_bound"
    # job level (many ranks)
    STRAGGLER = "straggler"
    COMMUNICATION_BOUND = "communication_bound"
    LOAD_IMBALANCE = "load_imbalance"
    # kernel level, resource
    DRAM_BANDWIDTH_BOUND = "dram_bandwidth_bound"
    L2_BANDWIDTH_BOUND = "l2_bandwidth_bound"
    L1_SHARED_BANDWIDTH_BOUND = "l1_shared_bandwidth_bound"
    COMPUTE_BOUND = "compute_bound"
    TENSOR_CORE_BOUND = "tensor_core_bound"
    LATENCY_BOUND = "latency_bound"
    # kernel level, mechanism
    UNCOALESCED_GLOBAL_ACCESS = "uncoalesced_global_access"
    SHARED_BANK_CONFLICTS = "shared_bank_conflicts"
    LOCAL_MEMORY_SPILL = "local_memory_spill"
    ATOMIC_CONTENTION = "atomic_contention"
    WARP_DIVERGENCE = "warp_divergence"
    SMALL_GRID = "small_grid"
    TAIL_EFFECT = "tail_effect"
    OCCUPANCY_LIMITED = "occupancy_limited"
    NO_TENSOR_CORES = "no_tensor_cores"
    INSTRUCTION_BOUND = "instruction_bound"


TIMELINE_BOTTLENECKS = frozenset(
    {
        Bottleneck.HOST_LAUNCH_BOUND,
        Bottleneck.HOST_COMPUTE_BOUND,
        Bottleneck.SYNC_BOUND,
        Bottleneck.TRANSFER_BOUND,
        Bottleneck.GPU_BOUND,
        Bottleneck.STARTUP_BOUND,
    }
)
JOB_BOTTLENECKS = frozenset({Bottleneck.STRAGGLER, Bottleneck.COMMUNICATION_BOUND, Bottleneck.LOAD_IMBALANCE})


class SubjectKind(enum.StrEnum):
    """What a diagnosis is about."""

    CAPTURE = "capture"
    """A whole timeline capture."""
    RANGE = "range"
    """An NVTX range or a profiler step inside a capture."""
    KERNEL = "kernel"
    """One kernel launch."""
    JOB = "job"
    """A multi-rank job."""


Number = int | float


def _finite(x: Number | None, what: str) -> None:
    if x is not None and isinstance(x, float) and not math.isfinite(x):
        raise ValueError(f"{what} must be finite, got {x!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """What was diagnosed: the capture, an NVTX range, one kernel launch, or a job.

    Examples
    --------
    >>> s = Subject(kind=SubjectKind.KERNEL, name="void k<float, 4>(int*)", grid=(8, 1, 1), block=(128, 1, 1))
    >>> s.describe()
    'void k<float, 4>(int*) [grid 8x1x1, block 128x1x1]'
    """

    kind: SubjectKind
    name: str
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    launch: int | None = None
    """Index of the launch within its report (ncu ``ID``), or None."""
    device: str | None = None
    """GPU name, when known."""
    ranks: int | None = None
    """Number of ranks, for a job."""
    language: str | None = None
    """For a kernel: the language it was written in (``cuda``, ``triton``, ``pytorch``, ``inductor``,
    ``library``, ``unknown``), told from the report's source files and names (words only, never a verdict)."""

    def __post_init__(self) -> None:
        if not isinstance(self.kind, SubjectKind):
            object.__setattr__(self, "kind", SubjectKind(self.kind))
        for name in ("grid", "block"):
            v = getattr(self, name)
            if v is not None:
                v = tuple(int(x) for x in v)
                if len(v) != 3:
                    raise ValueError(f"{name} must have 3 dimensions, got {v!r}")
                object.__setattr__(self, name, v)

    def describe(self) -> str:
        """One line: the name, plus grid and block for a kernel."""
        s = self.name
        if self.grid is not None and self.block is not None:
            g = "x".join(str(x) for x in self.grid)
            b = "x".join(str(x) for x in self.block)
            s += f" [grid {g}, block {b}]"
        if self.ranks is not None:
            s += f" ({self.ranks} ranks)"
        return s


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """One metric that establishes a bottleneck, and what it is judged against.

    ``value`` may be None when the metric is missing from the input; missing is
    never the same as zero.
    """

    name: str
    value: Number | str | None
    unit: str = ""
    reference: str = ""
    """The yardstick in words, e.g. ``"ideal 4 sectors/request for 4-byte loads"``."""
    reference_value: Number | None = None
    metric: str | None = None
    """The raw metric name(s) it came from, e.g. an ncu metric id."""

    def __post_init__(self) -> None:
        if isinstance(self.value, float):
            _finite(self.value, f"evidence {self.name!r} value")
        _finite(self.reference_value, f"evidence {self.name!r} reference_value")

    def format_value(self) -> str:
        """The value with its unit, rounded for reading."""
        return _fmt(self.value, self.unit)


class Direction(enum.StrEnum):
    """Which way a metric should move if a fix is right."""

    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """A prediction that a fix can be checked against.

    ``metric`` is a key that :mod:`kprof.diagnose.compare` can look up in the
    after profile: an ncu metric name, or a timeline quantity such as
    ``gpu_busy_fraction`` or ``duration_ns``.
    """

    metric: str
    direction: Direction
    target: Number | None = None
    """Roughly where it should end up (same unit as ``value_now``), or None if only the direction is predicted."""
    unit: str = ""
    value_now: Number | None = None
    """The value in the diagnosed profile."""
    label: str = ""
    """The metric in words."""
    basis: str = ""
    """Where ``target`` comes from, in words: a floor (``"the ideal for 4-byte loads"``), a measured control, or
    the share of the gap the fix removes (``"the 36.2% of the time the excess sectors hold"``). Empty only when
    there is no target."""

    def __post_init__(self) -> None:
        if not isinstance(self.direction, Direction):
            object.__setattr__(self, "direction", Direction(self.direction))
        _finite(self.target, f"expectation {self.metric!r} target")
        _finite(self.value_now, f"expectation {self.metric!r} value_now")

    def describe(self) -> str:
        """E.g. ``sectors per request down from 32 to about 4 (the ideal for 4-byte loads)``: the target's basis in
        parentheses after it."""
        name = self.label or self.metric
        arrow = "up" if self.direction is Direction.UP else "down"
        # a *_fraction metric (0..1) without a unit prints as a percentage, as its evidence does
        unit = self.unit or ("fraction" if self.metric.endswith("_fraction") else "")
        s = f"{name} {arrow}"
        if self.value_now is not None:
            s += f" from {_fmt(self.value_now, unit)}"
        if self.target is not None:
            s += f" to about {_fmt(self.target, unit)}"
            if self.basis:
                s += f" ({self.basis})"
        return s


@dataclass(frozen=True, slots=True, kw_only=True)
class Confidence:
    """How sure the diagnosis is (0..1) and what would raise that."""

    value: float
    would_raise: str = ""

    def __post_init__(self) -> None:
        v = float(self.value)
        if not (0.0 <= v <= 1.0):
            raise ValueError(f"confidence must be within 0..1, got {self.value!r}")
        object.__setattr__(self, "value", v)


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceLine:
    """One source line (or, without line info, one SASS instruction) responsible for a bottleneck.

    ``share`` is the line's part of what the bottleneck measures (excess sectors, replayed wavefronts,
    stall samples, ...: ``quantity`` says which), summed over the SASS instructions of that line.

    Examples
    --------
    >>> w = SourceLine(file="k.cu", line=22, text="float pe = pos_t[col * rows + row];", share=1.0,
    ...                instruction="LDG.E.CONSTANT", value=14680064, quantity="excess L2 sectors")
    >>> w.describe()
    'k.cu:22 (100% of the excess L2 sectors, LDG.E.CONSTANT): float pe = pos_t[col * rows + row];'
    """

    file: str | None = None
    """The source file as the report names it (a path on the profiled machine), or None without line info."""
    line: int | None = None
    text: str = ""
    """The line's source text, when the report embeds the file (``--import-source yes``)."""
    share: float | None = None
    """Share (0..1) of the bottleneck's measured quantity on this line."""
    instruction: str = ""
    """The SASS opcode at fault on this line (the one carrying most of the quantity), e.g. ``LDG.E.CONSTANT``."""
    value: Number | None = None
    """The quantity on this line, in the unit of ``quantity``."""
    quantity: str = ""
    """What ``value`` and ``share`` count, e.g. ``"excess L2 sectors"``, ``"stall samples"``."""
    detail: str = ""
    """What the instruction does wrong here, in numbers, e.g. ``"32 sectors per request, ideal 4"``."""
    pc: int | None = None
    """Offset of that instruction from the function's entry (bytes)."""

    def __post_init__(self) -> None:
        if self.share is not None and not (0.0 <= self.share <= 1.0):
            raise ValueError(f"source line share must be within 0..1, got {self.share!r}")
        _finite(self.value, "source line value")

    @property
    def location(self) -> str:
        """``file:line`` with the file's base name, or ``SASS +0x1a0`` without line info."""
        if self.file and self.line is not None:
            return f"{self.file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{self.line}"
        if self.pc is not None:
            return f"SASS +{self.pc:#x}"
        return "unknown location"

    def describe(self) -> str:
        """One line: location, share, instruction, detail and source text."""
        parts = []
        if self.share is not None:
            parts.append(
                f"{_sig(100 * self.share)}% of the {self.quantity}"
                if self.quantity
                else f"{_sig(100 * self.share)}%"
            )
        if self.instruction:
            parts.append(self.instruction)
        if self.detail:
            parts.append(self.detail)
        s = self.location + (f" ({', '.join(parts)})" if parts else "")
        if self.text.strip():
            s += f": {self.text.strip()}"
        return s


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A secondary finding, ranked by the share of the time it explains."""

    bottleneck: Bottleneck
    headline: str
    evidence: tuple[Evidence, ...] = ()
    share: float | None = None
    """Share (0..1) of the time in question that it explains, None if unknown: of the kernel's gap to its
    roofline for a kernel finding, of the steady state's wall time (start-up and teardown: of the capture's)
    for a timeline finding; the headline says which."""
    where: tuple[SourceLine, ...] = ()
    """The source lines responsible, most first (see :class:`SourceLine`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.bottleneck, Bottleneck):
            object.__setattr__(self, "bottleneck", Bottleneck(self.bottleneck))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "where", tuple(self.where))
        if self.share is not None and not (0.0 <= self.share <= 1.0):
            raise ValueError(f"finding share must be within 0..1, got {self.share!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """What limits a subject and what to change (docs/json-schema.md describes each field).

    Examples
    --------
    >>> d = Diagnosis(
    ...     subject=Subject(kind=SubjectKind.CAPTURE, name="train.nsys-rep"),
    ...     bottleneck=None,
    ...     verdict=Verdict.INCONCLUSIVE,
    ...     headline="No kernel activity in the capture.",
    ...     confidence=Confidence(value=0.5, would_raise="a capture with CUDA tracing on"),
    ... )
    >>> Diagnosis.from_dict(d.to_dict()) == d
    True
    """

    subject: Subject
    bottleneck: Bottleneck | None
    verdict: Verdict
    headline: str
    evidence: tuple[Evidence, ...] = ()
    mechanism: str = ""
    fix: str = ""
    expect: tuple[Expectation, ...] = ()
    confidence: Confidence = field(default_factory=lambda: Confidence(value=0.5))
    next_step: str = ""
    findings: tuple[Finding, ...] = ()
    file: str | None = None
    """The input file the diagnosis came from."""
    where: tuple[SourceLine, ...] = ()
    """The source lines responsible, most first, when the profile has source (see :class:`SourceLine`)."""
    where_note: str = ""
    """Why ``where`` is empty or partial, and how to get the lines (``-lineinfo``, ``--import-source yes``)."""

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, Verdict):
            object.__setattr__(self, "verdict", Verdict(self.verdict))
        if self.bottleneck is not None and not isinstance(self.bottleneck, Bottleneck):
            object.__setattr__(self, "bottleneck", Bottleneck(self.bottleneck))
        if self.bottleneck is None and self.verdict is not Verdict.INCONCLUSIVE:
            raise ValueError("bottleneck may be None only when the verdict is inconclusive")
        if not self.headline.strip():
            raise ValueError("a diagnosis needs a headline")
        for name in ("evidence", "expect", "findings", "where"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.verdict is Verdict.INCONCLUSIVE and not self.next_step.strip():
            raise ValueError("an inconclusive diagnosis must say what would settle it (next_step)")

    # ---------------------------------------------------------------- JSON
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data in the order of the CLI contract."""
        return {
            "file": self.file,
            "subject": _to_jsonable(self.subject),
            "bottleneck": self.bottleneck.value if self.bottleneck else None,
            "verdict": self.verdict.value,
            "headline": self.headline,
            "evidence": [_to_jsonable(e) for e in self.evidence],
            "mechanism": self.mechanism,
            "fix": self.fix,
            "expect": [_to_jsonable(e) for e in self.expect],
            "confidence": _to_jsonable(self.confidence),
            "next_step": self.next_step,
            "findings": [_to_jsonable(f) for f in self.findings],
            "where": [_to_jsonable(w) for w in self.where],
            "where_note": self.where_note,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        """Rebuild a Diagnosis from :meth:`to_dict` output (after a JSON round trip too)."""
        try:
            return cls(
                file=data.get("file"),
                subject=_from_jsonable(Subject, data["subject"]),
                bottleneck=Bottleneck(data["bottleneck"]) if data.get("bottleneck") else None,
                verdict=Verdict(data["verdict"]),
                headline=data["headline"],
                evidence=tuple(_from_jsonable(Evidence, e) for e in data.get("evidence", ())),
                mechanism=data.get("mechanism", ""),
                fix=data.get("fix", ""),
                expect=tuple(_from_jsonable(Expectation, e) for e in data.get("expect", ())),
                confidence=_from_jsonable(Confidence, data["confidence"]),
                next_step=data.get("next_step", ""),
                findings=tuple(_from_jsonable(Finding, f) for f in data.get("findings", ())),
                where=tuple(_from_jsonable(SourceLine, w) for w in data.get("where", ())),
                where_note=data.get("where_note", ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a kprof diagnosis: {exc}") from exc

    # ---------------------------------------------------------------- reprs
    def summary(self) -> dict[str, Any]:
        """The one summary that both the text and the HTML reprs are built from."""
        return renderers.presenter().diagnosis_summary(self)

    def to_text(self) -> str:
        """Plain-text rendering (what ``kprof diagnose`` prints)."""
        return renderers.presenter().render_text(self.summary())

    def to_html(self) -> str:
        """Self-contained HTML fragment (escaped; readable with CSS stripped)."""
        return renderers.presenter().render_html(self.summary())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.to_text(), "text/html": self.to_html()}

    def __str__(self) -> str:
        return self.to_text()


# -------------------------------------------------------------------- helpers


TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
"""Time units a value may come in, in nanoseconds; printed as ns, µs, ms or s."""
BYTE_UNITS = {"B": 1.0, "byte": 1.0, "bytes": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
"""Byte units a value may come in; printed as B, kB, MB, GB or TB (decimal, as ncu and nsys print them)."""
_TIME_SCALE = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))
_BYTE_SCALE = (("B", 1.0), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12))


def _sig(v: float, digits: int = 3) -> str:
    """``v`` to ``digits`` significant digits in positional notation, trailing zeros dropped;
    1000 and above as a whole number with thousands separators.

    Examples
    --------
    >>> [_sig(x) for x in (0.0038, 0.004, 6.3249, 98.14, 454.46, 49962769.0, 0.0)]
    ['0.0038', '0.004', '6.32', '98.1', '454', '49,962,769', '0']
    """
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    a = abs(v)
    if a >= 10 ** (digits - 1) * 10 - 0.5:
        return f"{round(v):,}"
    places = max(0, digits - 1 - math.floor(math.log10(a)))
    s = f"{v:.{places}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _scaled(v: float, scale: tuple[tuple[str, float], ...]) -> str:
    """``v`` (in the scale's base unit) in the largest unit that keeps it at 1 or more, 3 significant digits."""
    name, f = scale[0]
    for n, g in scale:
        if abs(v) >= g * 0.9995:  # 999.7 ns prints as 1 µs, not 1,000 ns
            name, f = n, g
    return f"{_sig(v / f)} {name}"


def _fmt(value: Number | str | None, unit: str = "") -> str:
    """Format a number for reading, the one formatter of every value kprof prints.

    Times (``ns``, ``us``, ``ms``, ``s``) print in ns, µs, ms or s and bytes in B, kB, MB, GB
    with 3 significant digits; ``fraction`` (0..1) prints as a percentage; other values with 3
    significant digits (never in exponent notation), counts whole with thousands separators.

    Examples
    --------
    >>> _fmt(49962769, "ns"), _fmt(0.928, "us"), _fmt(335544320, "B"), _fmt(0.0632, "fraction")
    ('50 ms', '928 ns', '336 MB', '6.32%')
    >>> _fmt(0.00375, "waves"), _fmt(65871420), _fmt(77.6, "% of peak")
    ('0.00375 waves', '65,871,420', '77.6% of peak')
    """
    if value is None:
        return "missing"
    if isinstance(value, str):
        return f"{value} {unit}".strip()
    if isinstance(value, bool):
        return str(value)
    v = float(value)
    if unit in TIME_UNITS:
        return _scaled(v * TIME_UNITS[unit], _TIME_SCALE)
    if unit in BYTE_UNITS:
        return _scaled(v * BYTE_UNITS[unit], _BYTE_SCALE)
    if unit == "fraction":
        return _sig(100 * v) + "%"
    s = f"{value:,}" if isinstance(value, int) else _sig(v)
    if not unit:
        return s
    if unit.startswith("%"):  # "%", "% of peak": no space before the percent sign
        return s + unit
    return f"{s} {unit}"


def _to_jsonable(obj: Any) -> Any:
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, tuple | list):
        return [_to_jsonable(x) for x in obj]
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: _to_jsonable(getattr(obj, f.name)) for f in fields(obj)}
    return obj


def _from_jsonable(cls: type, data: dict[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    names = {f.name for f in fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ValueError(f"unknown fields for {cls.__name__}: {sorted(unknown)}")
    for name, value in data.items():
        if cls is Finding and name == "evidence":
            value = tuple(_from_jsonable(Evidence, e) for e in value)
        elif cls is Finding and name == "where":
            value = tuple(_from_jsonable(SourceLine, w) for w in value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


__all__ = [
    "JOB_BOTTLENECKS",
    "TIMELINE_BOTTLENECKS",
    "Bottleneck",
    "Confidence",
    "Diagnosis",
    "Direction",
    "Evidence",
    "Expectation",
    "Finding",
    "SourceLine",
    "Subject",
    "SubjectKind",
    "Verdict",
]


def __getattr__(name: str) -> Any:
    # Re-export the loaded-data models lazily (they import numpy/pandas).
    if name == "Timeline":
        from kprof.timeline_model import Timeline

        return Timeline
    if name == "KernelProfile":
        from kprof.kernel_model import KernelProfile

        return KernelProfile
    raise AttributeError(f"module 'kprof.model' has no attribute {name!r}")
