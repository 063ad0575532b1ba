"""The result of checking a fix: a :class:`Comparison` of one kernel or one timeline, before and after.

Like a :class:`~kprof.model.Diagnosis`, a comparison is a frozen dataclass, identical in Python, JSON
and HTML. :func:`kprof.compare` builds them (:mod:`kprof.diagnose.compare` holds the judgement); the
reprs come from the presentation layer through :mod:`kprof.renderers`, so this module imports no
renderer.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

from kprof import renderers
from kprof.model import Diagnosis, Direction, Subject, _fmt, _to_jsonable


class ComparisonVerdict(enum.StrEnum):
    """What a comparison concludes."""

    IMPROVED = "improved"
    """Faster by more than the noise threshold."""
    REGRESSED = "regressed"
    """Slower by more than the noise threshold."""
    UNCHANGED = "unchanged"
    """Within the noise threshold."""
    INCONCLUSIVE = "inconclusive"
    """No speedup could be measured (the notes say why and what would settle it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectationCheck:
    """One ``expect`` of the before diagnosis, checked against the after profile.

    Examples
    --------
    >>> c = ExpectationCheck(metric="sync_count", direction=Direction.DOWN, target=0, before=161, after=0, met=True)
    >>> c.to_dict()["met"]
    True
    """

    metric: str
    direction: Direction
    target: float | None = None
    before: float | None = None
    after: float | None = None
    met: bool | None = None
    """True / False, or None when a value is missing or not comparable (``reason`` says which)."""
    label: str = ""
    unit: str = ""
    reason: str = ""
    """Why it is (not) met, in words."""
    progress: float | None = None
    """Share of the predicted move from ``before`` to ``target`` that happened (1 = reached)."""

    def __post_init__(self) -> None:
        if not isinstance(self.direction, Direction):
            object.__setattr__(self, "direction", Direction(self.direction))

    def to_dict(self) -> dict[str, Any]:
        """The contract's keys first (metric, direction, target, before, after, met), then the extras."""
        return {
            "metric": self.metric,
            "direction": self.direction.value,
            "target": self.target,
            "before": self.before,
            "after": self.after,
            "met": self.met,
            "label": self.label,
            "unit": self.unit,
            "reason": self.reason,
            "progress": self.progress,
        }

    def describe(self) -> str:
        """E.g. ``global store sectors per request down to about 4: 32 -> 4 (reached the target)``."""
        name = self.label or self.metric
        s = f"{name} {self.direction.value}"
        if self.target is not None:
            s += f" to about {_fmt(self.target, self.unit)}"
        s += f": {_fmt(self.before, self.unit)} -> {_fmt(self.after, self.unit)}"
        if self.reason:
            s += f"; {self.reason}"
        return s


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Comparison:
    """A before/after comparison of one kernel or one timeline. See :func:`compare`.

    ``speedup`` is duration before / duration after (> 1: faster), None when it could not be
    measured. ``noise_threshold`` is the relative change within which the verdict is
    ``unchanged``; ``noise`` says where it comes from.
    """

    subject: Subject
    verdict: ComparisonVerdict
    speedup: float | None
    before: Diagnosis
    after: Diagnosis
    expectations: tuple[ExpectationCheck, ...] = ()
    noise_threshold: float | None = None
    speedup_interval: tuple[float, float] | None = None
    """``(speedup / (1 + noise_threshold), speedup x (1 + noise_threshold))``: ``improved`` or ``regressed``
    exactly when it excludes 1; None without a speedup."""
    noise: str = ""
    next_step: str = ""
    """The experiment that would settle a change one pair of captures cannot (repeat each capture), or ""."""
    duration_source: str = ""
    """Where the durations come from: ``ncu: ...``, ``timeline steps: ...``, ``timeline capture: ...``."""
    duration_before_ns: float | None = None
    duration_after_ns: float | None = None
    file_before: str | None = None
    file_after: str | None = None
    kind: str = "kernel"
    """``kernel`` or ``timeline``."""
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, ComparisonVerdict):
            object.__setattr__(self, "verdict", ComparisonVerdict(self.verdict))
        object.__setattr__(self, "expectations", tuple(self.expectations))
        object.__setattr__(self, "notes", tuple(self.notes))
        if self.speedup_interval is not None:
            lo, hi = (float(x) for x in self.speedup_interval)
            object.__setattr__(self, "speedup_interval", (lo, hi))
        if self.speedup is None and self.verdict is not ComparisonVerdict.INCONCLUSIVE:
            raise ValueError("a comparison without a speedup must be inconclusive")
        if self.speedup is not None and not (math.isfinite(self.speedup) and self.speedup > 0):
            raise ValueError(f"speedup must be a positive finite number, got {self.speedup!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able data: the contract's keys first, then the extras (noise, durations, files, notes)."""
        return {
            "subject": _to_jsonable(self.subject),
            "verdict": self.verdict.value,
            "speedup": self.speedup,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "expectations": [e.to_dict() for e in self.expectations],
            "noise_threshold": self.noise_threshold,
            "speedup_interval": None if self.speedup_interval is None else list(self.speedup_interval),
            "noise": self.noise,
            "next_step": self.next_step,
            "duration_source": self.duration_source,
            "duration_before_ns": self.duration_before_ns,
            "duration_after_ns": self.duration_after_ns,
            "file_before": self.file_before,
            "file_after": self.file_after,
            "kind": self.kind,
            "notes": list(self.notes),
        }

    # ---------------------------------------------------------------- reprs
    def summary(self) -> dict[str, Any]:
        """The one summary that both the text and the HTML reprs are built from."""
        return renderers.presenter().comparison_summary(self)

    def to_text(self) -> str:
        """Plain-text rendering (what ``kprof compare`` prints)."""
        return renderers.presenter().render_comparison_text(self.summary())

    def to_html(self) -> str:
        """Self-contained HTML fragment: verdict, expectations, both diagnoses side by side (escaped)."""
        return renderers.presenter().render_comparison_html(self.summary())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        s = self.summary()
        present = renderers.presenter()
        return {
            "text/plain": present.render_comparison_text(s),
            "text/html": present.render_comparison_html(s),
        }

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        sp = "no speedup" if self.speedup is None else f"{self.speedup:.3g}x"
        return f"Comparison({self.verdict.value}, {sp}, {self.subject.describe()!r})"


__all__ = ["Comparison", "ComparisonVerdict", "ExpectationCheck"]
