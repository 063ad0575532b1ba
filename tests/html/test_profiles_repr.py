"""Rich reprs of Timeline and KernelProfile (and the report's overview/heading pieces).

Text and HTML come from one summary; every string from a profile is escaped; the text
fallback is the text repr; element ids are stable after :func:`kprof.html.reset_ids`.
HTML snapshots live in ``snapshots/`` (``KPROF_UPDATE_SNAPSHOTS=1`` rewrites them).
"""

from __future__ import annotations

import html as htmllib
import os
import re
from pathlib import Path

import pytest

from kprof.html import (
    heading,
    kernel_profile_mimebundle,
    overview,
    reset_ids,
    timeline_mimebundle,
)
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric

from ..plot.synth import launch, timeline
from ..test_model import make

EVIL = "<script>alert(1)</script>"
SNAPSHOTS = Path(__file__).parent / "snapshots"


def _fallback(h: str) -> str:
    pre = re.search(r'<pre class="kp-text-fallback">(.*?)</pre>', h, re.S)
    assert pre is not None
    return htmllib.unescape(pre.group(1))


def _without_style(h: str) -> str:
    return re.sub(r"<style>.*?</style>", "<style/>", h, flags=re.S)


def _check_snapshot(name: str, h: str) -> None:
    path = SNAPSHOTS / name
    body = _without_style(h)
    if os.environ.get("KPROF_UPDATE_SNAPSHOTS") or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(body, encoding="utf-8")
        if not os.environ.get("KPROF_UPDATE_SNAPSHOTS"):
            pytest.fail(f"snapshot {path} was missing and has been written; rerun")
    assert body == path.read_text(encoding="utf-8"), (
        f"HTML differs from {path} (KPROF_UPDATE_SNAPSHOTS=1 rewrites it)"
    )


def _profile(name: str = "void k<float, 4>(int*)") -> KernelProfile:
    k = launch(0, name, sol={"compute": 41.0, "memory": 76.0})
    k2 = KernelLaunch(id=1, name="bare", metrics={"gpu__time_duration.sum": Metric(2500.0, "ns")})
    return KernelProfile(
        source=f"/r/{name}.ncu-rep", launches=(k, k2), tool_version="2025.3.1", notes=("n1",)
    )


def test_timeline_text_and_html_say_the_same_thing():
    tl = timeline(20, sync_every=5)
    b = timeline_mimebundle(tl)
    assert set(b) == {"text/plain", "text/html"}
    text, h = b["text/plain"], b["text/html"]
    assert _fallback(h) == text
    for needle in (
        "20 kernels",
        "4 memory copies",
        "void k<float>(float*)",
        "GPU busy",
        "python3" if False else "span",
    ):
        assert needle in text
        assert htmllib.escape(needle, quote=False) in h
    assert "20 launches" in text  # costliest kernels: summed time, share, launches
    assert re.search(r'<div class="kp-timeline kp-rich" hidden>', h)


def test_kernel_profile_text_and_html_say_the_same_thing():
    b = kernel_profile_mimebundle(_profile())
    text, h = b["text/plain"], b["text/html"]
    assert _fallback(h) == text
    for needle in (
        "void k<float, 4>(int*)",
        "grid 4x1x1",
        "compute 41%",
        "memory 76%",
        "12 µs",
        "2 launches",
    ):
        assert needle in text
    assert htmllib.escape("void k<float, 4>(int*)", quote=False) in h
    assert "under ncu" in text and "under ncu" in h  # ncu durations are labelled as such
    assert "n/a" in text  # the bare launch has no SOL: missing, never 0%


@pytest.mark.parametrize("which", ["timeline", "kernel", "overview", "heading"])
def test_profile_strings_are_escaped(which):
    if which == "timeline":
        h = timeline_mimebundle(timeline(5, kernel_name=EVIL))["text/html"]
    elif which == "kernel":
        h = kernel_profile_mimebundle(_profile(EVIL))["text/html"]
    elif which == "overview":
        h = overview([make(headline=f"slow {EVIL}", file=f"/x/{EVIL}")], title=EVIL).html
    else:
        h = heading(EVIL, note=EVIL).html
    assert "<script>" not in h
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in h


def test_css_hides_the_fallback_and_follows_dark_themes():
    h = kernel_profile_mimebundle(_profile())["text/html"]
    assert ".kp-root .kp-text-fallback { display: none; }" in h
    assert ".kp-root .kp-rich[hidden] { display: block; }" in h
    for dark in ('body[data-jp-theme-light="false"]', 'html[data-theme="dark"]', "body.vscode-dark"):
        assert dark in h
    assert "--jp-content-font-color0" in h  # colours fall back to JupyterLab's variables
    # every class is kp- prefixed
    classes = {c for attr in re.findall(r'class="([^"]*)"', h) for c in attr.split()}
    assert classes and all(c.startswith("kp-") for c in classes)


def test_snapshots_with_stable_ids():
    reset_ids()
    t = timeline_mimebundle(timeline(12, streams=(7, 9)))["text/html"]
    k = kernel_profile_mimebundle(_profile())["text/html"]
    o = overview([make()], title="verdicts").html
    assert 'id="kp-tl-1"' in t and 'id="kp-kp-2"' in k and 'id="kp-ov-3"' in o
    reset_ids()
    assert timeline_mimebundle(timeline(12, streams=(7, 9)))["text/html"] == t
    _check_snapshot("timeline.html", t)
    _check_snapshot("kernel_profile.html", k)
    _check_snapshot("overview.html", o)


def test_diagnosis_css_reaches_the_browser_unescaped():
    # inside <style> the browser does not unescape entities: quoted selectors must stay quoted
    h = make().to_html()
    assert 'body[data-jp-theme-light="false"] .kp-root' in h
    style = re.search(r"<style>(.*?)</style>", h, re.S).group(1)
    assert "&#34;" not in style and "&#39;" not in style and "&quot;" not in style
