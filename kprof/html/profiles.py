"""Rich reprs of the loaded models (Timeline, KernelProfile) and of small report pieces.

As for a Diagnosis: one summary dict per object, rendered as plain text and as escaped
HTML (jinja2 autoescape) that carries the text as a ``<pre>`` fallback. Summaries hold
facts of the input (counts, spans, the costliest kernels), never a verdict.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from kprof.errors import printable

if TYPE_CHECKING:
    from kprof.kernel_model import KernelProfile
    from kprof.model import Diagnosis
    from kprof.timeline_model import Timeline

MAX_KERNEL_ROWS = 20
"""Launches listed in a KernelProfile repr; the rest are counted."""
TOP_KERNELS = 5
"""Kernels (by summed time) listed in a Timeline repr."""
NAME_WIDTH = 90


@functools.lru_cache(maxsize=1)
def profiles_css() -> str:
    """The stylesheet of these reprs: the package's ``style.css`` plus ``profiles.css`` (read once)."""
    from kprof.html._common import css

    extra = resources.files("kprof.html").joinpath("templates/profiles.css").read_text(encoding="utf-8")
    return css() + "\n" + extra


def _ms(ns: float) -> str:
    ms = ns / 1e6
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 1:
        return f"{ms:,.3g} ms"
    return f"{ns / 1e3:,.3g} µs"


def _short(name: str, width: int = NAME_WIDTH) -> str:
    name = " ".join(name.split())
    return name if len(name) <= width else name[: width - 1] + "…"


def _dim(v: Sequence[int] | None) -> str:
    return "x".join(str(int(x)) for x in v) if v is not None else "?"


# ------------------------------------------------------------------ Timeline


def timeline_summary(tl: Timeline) -> dict[str, Any]:
    """The one structure both reprs of a :class:`~kprof.timeline_model.Timeline` are made from."""
    import numpy as np

    from kprof.diagnose.intervals import total, union

    span = tl.span_ns()
    span_ns = 0 if span is None else span[1] - span[0]
    counts = [
        ("kernels", len(tl.kernels)),
        ("memory copies", len(tl.copies)),
        ("memsets", len(tl.memsets)),
        ("CUDA graph launches", len(tl.graphs)),
        ("sync records", len(tl.syncs)),
        ("CUDA API calls", len(tl.api)),
        ("host operators", len(tl.host_ops)),
        ("annotated ranges (NVTX)", len(tl.ranges)),
        ("profiler steps", len(tl.steps)),
    ]
    # GPU-busy per GPU, as the diagnosis measures it: the union of one device's work (two GPUs busy at
    # different times are not one GPU busy twice as long)
    tables = (tl.kernels, tl.copies, tl.memsets, tl.graphs)
    dev = np.concatenate([t.device for t in tables]).astype(np.int64)
    starts = np.concatenate([t.start_ns for t in tables]).astype(np.int64)
    ends = np.concatenate([t.end_ns for t in tables]).astype(np.int64)
    busy_by_dev = [(int(d), total(union(starts[dev == d], ends[dev == d]))) for d in np.unique(dev)]
    del dev, starts, ends

    def _busy(ns: int) -> str:
        return f"{_ms(ns)} ({100 * ns / span_ns:.1f}% of the span)" if span_ns else "0 ms"

    if len(busy_by_dev) > 1:
        gpu_busy = ", ".join(f"GPU{d} {_busy(b)}" for d, b in busy_by_dev)
    else:
        gpu_busy = _busy(busy_by_dev[0][1] if busy_by_dev else 0)
    top: list[dict[str, str]] = []
    k = tl.kernels
    if len(k):
        dur = (k.end_ns - k.start_ns).astype(np.float64)
        n_names = max(len(k.names), int(k.name_id.max()) + 1)
        summed = np.bincount(k.name_id, weights=dur, minlength=n_names)
        count = np.bincount(k.name_id, minlength=n_names)
        kernel_total = float(dur.sum()) or 1.0
        for i in np.argsort(-summed)[:TOP_KERNELS]:
            if count[i] == 0:
                continue
            name = k.names[i] if i < len(k.names) else f"kernel #{i}"
            top.append(
                {
                    "name": _short(name),
                    "full_name": name,
                    "count": f"{int(count[i]):,}",
                    "total": _ms(float(summed[i])),
                    "share": f"{100 * summed[i] / kernel_total:.0f}%",
                }
            )
    gpus = []
    for g in tl.gpus:
        desc = f"GPU{g.device}"
        if g.name:
            desc += f" {g.name}"
        if g.sm_count:
            desc += f" ({g.sm_count} SMs)"
        gpus.append(desc)
    return {
        "source": tl.source,
        "name": os.path.basename(tl.source) or tl.source,
        "format": tl.format,
        "tool_version": tl.tool_version,
        "command": tl.command,
        "gpus": gpus,
        "span": _ms(span_ns),
        "gpu_busy": gpu_busy,
        "counts": [{"what": what, "n": f"{n:,}"} for what, n in counts if n or what == "kernels"],
        "top_kernels": top,
        "threads": len(tl.threads),
        "notes": list(tl.notes),
    }


def render_timeline_text(s: dict[str, Any]) -> str:
    """Plain text of a timeline summary."""
    lines = [f"Timeline ({s['format']}): {s['source']}"]
    if s["tool_version"]:
        lines.append(f"  tool: {s['tool_version']}")
    if s["command"]:
        lines.append(f"  command: {s['command']}")
    if s["gpus"]:
        lines.append(f"  GPUs: {', '.join(s['gpus'])}")
    lines.append(f"  span: {s['span']}; GPU busy (union of GPU work): {s['gpu_busy']}")
    lines.append("  " + ", ".join(f"{c['n']} {c['what']}" for c in s["counts"]))
    if s["top_kernels"]:
        lines.append("  costliest kernels (summed GPU time):")
        for t in s["top_kernels"]:
            lines.append(f"    - {t['total']} ({t['share']}, {t['count']} launches) {t['name']}")
    for n in s["notes"]:
        lines.append(f"  note: {n}")
    return printable("\n".join(lines), keep="\t\n")  # no terminal control from a profile


def render_timeline_html(s: dict[str, Any]) -> str:
    """Escaped HTML fragment of a timeline summary, with the text fallback inside."""
    from kprof.html._common import _env, next_id

    return (
        _env()
        .get_template("timeline.html.j2")
        .render(s=s, text=render_timeline_text(s), css=profiles_css(), root_id=next_id("kp-tl"))
    )


def timeline_mimebundle(tl: Timeline) -> dict[str, str]:
    """``text/plain`` and ``text/html`` of a Timeline, from one summary (for ``_repr_mimebundle_``)."""
    s = timeline_summary(tl)
    return {"text/plain": render_timeline_text(s), "text/html": render_timeline_html(s)}


# ------------------------------------------------------------------ KernelProfile


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0f}%"


def kernel_profile_summary(p: KernelProfile) -> dict[str, Any]:
    """The one structure both reprs of a :class:`~kprof.kernel_model.KernelProfile` are made from."""
    rows = []
    for k in p.launches[:MAX_KERNEL_ROWS]:
        dur = k.value("gpu__time_duration.sum")
        rows.append(
            {
                "id": str(k.id),
                "name": _short(k.display_name),
                "full_name": k.display_name,
                "grid": _dim(k.grid),
                "block": _dim(k.block),
                "registers": "?" if k.registers_per_thread is None else str(k.registers_per_thread),
                "duration": "n/a" if dur is None else _ms(dur),
                "compute": _pct(k.value("sm__throughput.avg.pct_of_peak_sustained_elapsed")),
                "memory": _pct(k.value("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")),
            }
        )
    devices = sorted({k.device for k in p.launches if k.device})
    return {
        "source": p.source,
        "name": os.path.basename(p.source) or p.source,
        "format": p.format,
        "tool_version": p.tool_version or "",
        "devices": devices,
        "n_launches": len(p.launches),
        "launches": rows,
        "more": max(0, len(p.launches) - MAX_KERNEL_ROWS),
        "notes": list(p.notes),
    }


def render_kernel_profile_text(s: dict[str, Any]) -> str:
    """Plain text of a kernel-profile summary."""
    lines = [f"KernelProfile ({s['format']}): {s['source']}"]
    if s["tool_version"]:
        lines.append(f"  tool: {s['tool_version']}")
    if s["devices"]:
        lines.append(f"  device: {', '.join(s['devices'])}")
    lines.append(f"  {s['n_launches']} launch{'es' if s['n_launches'] != 1 else ''} profiled")
    if s["launches"]:
        lines.append("  (durations measured under ncu: serialized and replayed, not the real duration)")
    for r in s["launches"]:
        lines.append(
            f"    #{r['id']} {r['name']} [grid {r['grid']}, block {r['block']}, {r['registers']} regs] "
            f"{r['duration']}, compute {r['compute']}, memory {r['memory']}"
        )
    if s["more"]:
        lines.append(f"    ... and {s['more']} more")
    for n in s["notes"]:
        lines.append(f"  note: {n}")
    return printable("\n".join(lines), keep="\t\n")  # no terminal control from a profile


def render_kernel_profile_html(s: dict[str, Any]) -> str:
    """Escaped HTML fragment of a kernel-profile summary, with the text fallback inside."""
    from kprof.html._common import _env, next_id

    return (
        _env()
        .get_template("kernel_profile.html.j2")
        .render(s=s, text=render_kernel_profile_text(s), css=profiles_css(), root_id=next_id("kp-kp"))
    )


def kernel_profile_mimebundle(p: KernelProfile) -> dict[str, str]:
    """``text/plain`` and ``text/html`` of a KernelProfile, from one summary (for ``_repr_mimebundle_``)."""
    s = kernel_profile_summary(p)
    return {"text/plain": render_kernel_profile_text(s), "text/html": render_kernel_profile_html(s)}


# ------------------------------------------------------------------ report pieces


@dataclass(frozen=True, slots=True)
class Rendered:
    """A text/HTML pair that Jupyter displays (``_repr_mimebundle_``); ``str()`` gives the text."""

    text: str
    html: str

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self.html}

    def __str__(self) -> str:
        return self.text


def heading(title: str, level: int = 2, *, anchor: str | None = None, note: str = "") -> Rendered:
    """An escaped section heading (file names may hold markup) with an optional note below it."""
    from kprof.html._common import _env

    level = min(max(int(level), 1), 6)
    html = _env().get_template("heading.html.j2").render(title=title, level=level, anchor=anchor, note=note)
    text = title + (f"\n{note}" if note else "")
    return Rendered(text, html)


def overview_summary(diagnoses: Iterable[Diagnosis]) -> list[dict[str, str]]:
    """One row per diagnosis: file, subject, verdict, bottleneck, headline, fix (whole), ``fix_line`` (its
    first sentence: the rest is in the diagnosis) and ``anchor`` (the id its full view carries)."""
    from kprof.html._common import diagnosis_anchor, first_sentence

    rows = []
    for d in diagnoses:
        bottleneck = d.bottleneck.value if d.bottleneck else "undetermined"
        rows.append(
            {
                "file": os.path.basename(d.file) if d.file else "",
                "full_file": d.file or "",
                "subject": _short(d.subject.describe(), 70),
                "verdict": d.verdict.value,
                "bottleneck": bottleneck,
                "headline": d.headline,
                "fix": d.fix,
                "fix_line": first_sentence(" ".join(d.fix.split())) if d.fix else "",
                "anchor": diagnosis_anchor(d.subject.describe(), bottleneck, d.verdict.value, d.headline),
            }
        )
    return rows


def overview_groups(rows: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """The rows with the same verdict, bottleneck and first sentence of fix as one group (at the place of
    its first row), so an identical fix is written once: ``[{"fix_line", "rows"}, ...]``."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for i, r in enumerate(rows):
        key = (r["verdict"], r["bottleneck"], r["fix_line"]) if r["fix_line"] else ("", "", str(i))
        if key not in groups:
            groups[key] = {"fix_line": r["fix_line"], "rows": []}
            out.append(groups[key])
        groups[key]["rows"].append(r)
    return out


def render_overview_text(rows: Sequence[dict[str, str]]) -> str:
    """Plain text of an overview: two lines per diagnosis (verdict, input; headline), and the first sentence
    of the fix once per group of diagnoses that share it."""
    if not rows:
        return "(no diagnoses)"
    parts = []
    for g in overview_groups(rows):
        for r in g["rows"]:
            subject = " — " + r["subject"] if r["subject"] != r["file"] else ""
            parts.append(f"[{r['verdict']}] {r['bottleneck']}: {r['file']}{subject}\n    {r['headline']}")
        if g["fix_line"]:
            shared = f" (the {len(g['rows'])} above)" if len(g["rows"]) > 1 else ""
            parts[-1] += f"\n    fix{shared}: {g['fix_line']}"
    return printable("\n".join(parts), keep="\t\n")  # no terminal control from a profile


def overview(diagnoses: Iterable[Diagnosis], *, title: str = "", links: bool = False) -> Rendered:
    """A table of diagnoses, most important first as given: verdict, bottleneck, input and headline, then one
    line of fix (its first sentence) under each group of diagnoses that share it.

    ``links``: the input and the headline of each row link to the diagnosis's full view (its
    ``id``, :func:`~kprof.html._common.diagnosis_anchor`), for a page that shows it (the report).
    """
    from kprof.html._common import _env, next_id

    rows = overview_summary(diagnoses)
    text = render_overview_text(rows)
    if title:
        text = f"{title}\n{text}"
    html = (
        _env()
        .get_template("overview.html.j2")
        .render(
            groups=overview_groups(rows),
            title=title,
            text=text,
            css=profiles_css(),
            root_id=next_id("kp-ov"),
            links=links,
        )
    )
    return Rendered(text, html)


__all__ = [
    "Rendered",
    "heading",
    "kernel_profile_mimebundle",
    "kernel_profile_summary",
    "overview",
    "overview_groups",
    "overview_summary",
    "render_kernel_profile_html",
    "render_kernel_profile_text",
    "render_overview_text",
    "render_timeline_html",
    "render_timeline_text",
    "timeline_mimebundle",
    "timeline_summary",
]
