"""Rich reprs: one summary per object, rendered as plain text and as escaped HTML.

The HTML is built with jinja2 (autoescape on), so kernel names such as
``void k<float, 4>(int*)`` render literally. It carries a plain-text ``<pre>``
fallback that the packaged CSS hides; where CSS is stripped (an untrusted
notebook, a GitHub render) the text still shows. Element ids come from a counter
that tests reset with :func:`reset_ids`, so snapshots are stable.
"""

from __future__ import annotations

from kprof.html._common import _env, css, next_id, reset_ids
from kprof.html.compare import (
    comparison_mimebundle,
    comparison_summary,
    render_comparison_html,
    render_comparison_text,
)
from kprof.html.diagnosis import (
    VERDICT_LABEL,
    diagnosis_summary,
    printable,
    render_html,
    render_text,
)
from kprof.html.profiles import (
    Rendered,
    heading,
    kernel_profile_mimebundle,
    kernel_profile_summary,
    overview,
    render_kernel_profile_html,
    render_kernel_profile_text,
    render_timeline_html,
    render_timeline_text,
    timeline_mimebundle,
    timeline_summary,
)
from kprof.model import _fmt

__all__ = [
    "VERDICT_LABEL",
    "Rendered",
    "_env",
    "_fmt",
    "comparison_mimebundle",
    "comparison_summary",
    "css",
    "diagnosis_summary",
    "heading",
    "kernel_profile_mimebundle",
    "kernel_profile_summary",
    "next_id",
    "overview",
    "printable",
    "render_comparison_html",
    "render_comparison_text",
    "render_html",
    "render_kernel_profile_html",
    "render_kernel_profile_text",
    "render_text",
    "render_timeline_html",
    "render_timeline_text",
    "reset_ids",
    "timeline_mimebundle",
    "timeline_summary",
]
