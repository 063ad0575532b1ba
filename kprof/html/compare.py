"""Rich reprs of a :class:`~kprof.comparison_model.Comparison`: one summary, text and escaped HTML.

As for a Diagnosis: the HTML comes from a jinja2 template with autoescape on, carries the text
as a ``<pre>`` fallback that the packaged CSS hides, and shows the before and after diagnoses
side by side (each rendered by ``diagnosis.html.j2``).
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from typing import TYPE_CHECKING, Any

from kprof.errors import printable
from kprof.model import _fmt

if TYPE_CHECKING:
    from kprof.comparison_model import Comparison, ExpectationCheck
    from kprof.model import Diagnosis


@functools.lru_cache(maxsize=1)
def compare_css() -> str:
    """The stylesheet of a comparison: the package's ``style.css`` plus ``compare.css`` (read once)."""
    from kprof.html._common import css

    extra = resources.files("kprof.html").joinpath("templates/compare.css").read_text(encoding="utf-8")
    return css() + "\n" + extra


def _ns(ns: float | None) -> str:
    if ns is None:
        return "missing"
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def _interval_text(c: Comparison) -> str:
    """``1.15-1.65x`` (the speedup's interval), or "" without one."""
    if c.speedup_interval is None:
        return ""
    lo, hi = c.speedup_interval
    return f"{lo:.3g}-{hi:.3g}x"


def _speedup_text(c: Comparison) -> str:
    if c.speedup is None:
        return "no speedup measured"
    s = c.speedup
    pm = f"±{100 * (c.noise_threshold or 0):.3g}%"
    iv = _interval_text(c)
    if c.verdict.value == "unchanged":
        return f"unchanged: {s:.3g}x, within the noise ({pm}: {iv})" if iv else f"unchanged: {s:.3g}x ({pm})"
    if s >= 1:
        return f"{s:.3g}x faster (interval {iv}, {pm})" if iv else f"{s:.3g}x faster"
    return f"{1 / s:.3g}x slower (speedup {s:.3g}x, interval {iv}, {pm})" if iv else f"{1 / s:.3g}x slower"


def _status(x: ExpectationCheck) -> str:
    return "unknown" if x.met is None else ("met" if x.met else "not met")


def _one_line(d: Diagnosis) -> str:
    b = d.bottleneck.value if d.bottleneck else "undetermined"
    return f"[{d.verdict.value}] {b}: {d.headline}"


def comparison_summary(c: Comparison) -> dict[str, Any]:
    """The one structure both reprs of a Comparison are made from."""
    from kprof.html.diagnosis import diagnosis_summary

    checks = []
    for x in c.expectations:
        predicted = x.direction.value
        if x.target is not None:
            predicted += f" to about {_fmt(x.target, x.unit)}"
        checks.append(
            {
                "status": _status(x),
                "what": x.label or x.metric,
                "metric": x.metric,
                "predicted": predicted,
                "before": _fmt(x.before, x.unit),
                "after": _fmt(x.after, x.unit),
                "reason": x.reason,
                "line": x.describe(),
            }
        )
    n_met = sum(1 for x in c.expectations if x.met)
    duration = ""
    if c.duration_before_ns is not None or c.duration_after_ns is not None:
        duration = f"{_ns(c.duration_before_ns)} before, {_ns(c.duration_after_ns)} after"
    return {
        "verdict": c.verdict.value,
        "speedup": _speedup_text(c),
        "subject": c.subject.describe(),
        "kind": c.kind,
        "duration": duration,
        "duration_source": c.duration_source,
        "noise": c.noise,
        "interval": _interval_text(c),
        "next_step": c.next_step,
        "file_before": c.file_before or "",
        "file_after": c.file_after or "",
        "name_before": os.path.basename(c.file_before or "") or "before",
        "name_after": os.path.basename(c.file_after or "") or "after",
        "before_line": _one_line(c.before),
        "after_line": _one_line(c.after),
        "before": diagnosis_summary(c.before),
        "after": diagnosis_summary(c.after),
        "expectations": checks,
        "met_count": f"{n_met} of {len(checks)} met",
        "notes": list(c.notes),
    }


def render_comparison_text(s: dict[str, Any]) -> str:
    """Plain text of a comparison summary: verdict and speedup, durations, noise, diagnoses, expectations."""
    lines = [f"[{s['verdict']}] {s['speedup']}: {s['subject']}"]
    if s["duration"]:
        lines.append(f"  duration: {s['duration']}; {s['duration_source']}")
    if s["noise"]:
        lines.append(f"  noise: {s['noise']}")
    lines.append(f"  before: {s['before_line']}")
    lines.append(f"  after:  {s['after_line']}")
    if s["expectations"]:
        lines.append(f"  expectations of the before diagnosis ({s['met_count']}):")
        for x in s["expectations"]:
            lines.append(f"    - [{x['status']}] {x['line']}")
    else:
        lines.append("  expectations of the before diagnosis: none (it predicted nothing to check)")
    for n in s["notes"]:
        lines.append(f"  note: {n}")
    if s["next_step"]:
        lines.append(f"  next step: {s['next_step']}")
    lines.append(f"  files: {s['file_before']} -> {s['file_after']}")
    return printable("\n".join(lines), keep="\t\n")  # no terminal control from a profile


def render_comparison_html(s: dict[str, Any], *, sides: bool = True) -> str:
    """Escaped HTML fragment of a comparison summary, with the text fallback inside.

    ``sides=False`` gives each diagnosis one line instead of its full card (the report shows the
    cards once, in the sections of the inputs)."""
    from kprof.html._common import _env, next_id
    from kprof.html.diagnosis import anchor_of, render_text

    root_id = next_id("kp-cmp")
    cards = [
        {
            "caption": f"before: {s['name_before']}",
            "s": s["before"],
            "text": render_text(s["before"]),
            "id": next_id("kp-diag"),
            "anchor": anchor_of(s["before"]),
        },
        {
            "caption": f"after: {s['name_after']}",
            "s": s["after"],
            "text": render_text(s["after"]),
            "id": next_id("kp-diag"),
            "anchor": anchor_of(s["after"]),
        },
    ]
    return (
        _env()
        .get_template("compare.html.j2")
        .render(
            c=s,
            sides=cards if sides else [],
            text=render_comparison_text(s),
            css=compare_css(),
            root_id=root_id,
        )
    )


def comparison_mimebundle(c: Comparison, *, sides: bool = True) -> dict[str, str]:
    """``text/plain`` and ``text/html`` of a Comparison, from one summary (``sides``: the two
    diagnoses in full, else one line each)."""
    s = comparison_summary(c)
    return {"text/plain": render_comparison_text(s), "text/html": render_comparison_html(s, sides=sides)}


__all__ = [
    "compare_css",
    "comparison_mimebundle",
    "comparison_summary",
    "render_comparison_html",
    "render_comparison_text",
]
