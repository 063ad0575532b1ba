"""The reprs of a :class:`~kprof.model.Diagnosis`: one summary, rendered as text and as escaped HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kprof.errors import printable as _printable
from kprof.html._common import _env, css, diagnosis_anchor, next_id
from kprof.model import _fmt

if TYPE_CHECKING:
    from kprof.model import Diagnosis


VERDICT_LABEL = {"fix": "fix", "healthy": "healthy", "inconclusive": "inconclusive"}


def diagnosis_summary(d: Diagnosis) -> dict[str, Any]:
    """The one structure both reprs of a Diagnosis are made from."""
    return {
        "subject": d.subject.describe(),
        "subject_kind": d.subject.kind.value,
        "file": d.file,
        "bottleneck": d.bottleneck.value if d.bottleneck else "undetermined",
        "verdict": d.verdict.value,
        "headline": d.headline,
        "evidence": [
            {
                "name": e.name,
                "value": e.format_value(),
                "reference": e.reference,
            }
            for e in d.evidence
        ],
        "where": [
            {
                "location": w.location,
                "share": None if w.share is None else _fmt(w.share, "fraction"),
                "quantity": w.quantity,
                "instruction": w.instruction,
                "detail": w.detail,
                "text": w.text.strip(),
                "describe": w.describe(),
            }
            for w in d.where
        ],
        "where_note": d.where_note,
        "mechanism": d.mechanism,
        "fix": d.fix,
        "expect": [x.describe() for x in d.expect],
        "confidence": f"{d.confidence.value:.2f}",
        "would_raise": d.confidence.would_raise,
        "next_step": d.next_step,
        "findings": [
            {
                "bottleneck": f.bottleneck.value,
                "headline": f.headline,
                "share": None if f.share is None else f"{100 * f.share:.0f}%",
                "evidence": [f"{e.name} = {e.format_value()}" for e in f.evidence],
                "where": [w.describe() for w in f.where],
            }
            for f in d.findings
        ],
    }


def printable(text: str) -> str:
    """``text`` with terminal control characters other than tab and newline shown escaped
    (``\\x1b``): a profile's strings must not retitle or clear the user's terminal."""
    return _printable(text, keep="\t\n")


def render_text(s: dict[str, Any]) -> str:
    """Plain text of a diagnosis summary: the four things a person needs, then the rest.

    Terminal control characters from a profile are shown escaped (:func:`printable`)."""
    return printable(_render_text(s))


def _render_text(s: dict[str, Any]) -> str:
    lines = [f"[{s['verdict']}] {s['bottleneck']}: {s['subject']}"]
    if s["file"]:  # two launches of one kernel in two reports read alike without it
        lines.append(f"  file: {s['file']}")
    lines.append(f"  {s['headline']}")
    if s["evidence"]:
        lines.append("  evidence:")
        for e in s["evidence"]:
            ref = f"  ({e['reference']})" if e["reference"] else ""
            lines.append(f"    - {e['name']}: {e['value']}{ref}")
    if s["where"]:
        lines.append("  where:")
        for w in s["where"]:
            lines.append(f"    - {w['describe']}")
    if s["where_note"]:
        lines.append(f"  {'where' if not s['where'] else 'source'}: {s['where_note']}")
    if s["mechanism"]:
        lines.append(f"  mechanism: {s['mechanism']}")
    if s["fix"]:
        lines.append(f"  fix: {s['fix']}")
    for x in s["expect"]:
        lines.append(f"  expect: {x}")
    conf = f"  confidence: {s['confidence']}"
    if s["would_raise"]:
        conf += f" (would rise with: {s['would_raise']})"
    lines.append(conf)
    if s["next_step"]:
        lines.append(f"  next: {s['next_step']}")
    for f in s["findings"]:
        share = f" [{f['share']}]" if f["share"] else ""
        at = f" (at {f['where'][0].split(' (', 1)[0].split(': ', 1)[0]})" if f["where"] else ""
        lines.append(f"  also: {f['bottleneck']}{share}: {f['headline']}{at}")
    return "\n".join(lines)


def anchor_of(s: dict[str, Any]) -> str:
    """The id a diagnosis's view carries for links to it (:func:`~kprof.html._common.diagnosis_anchor`)."""
    return diagnosis_anchor(str(s["subject"]), str(s["bottleneck"]), str(s["verdict"]), str(s["headline"]))


def render_html(s: dict[str, Any]) -> str:
    """Escaped HTML fragment of a diagnosis summary, with the text fallback inside."""
    return (
        _env()
        .get_template("diagnosis.html.j2")
        .render(s=s, text=render_text(s), css=css(), root_id=next_id("kp-diag"), anchor=anchor_of(s))
    )
