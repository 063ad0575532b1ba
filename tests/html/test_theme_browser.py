"""The reprs read well in light and dark notebook themes: checked in headless Chromium.

Every piece of text in the rich view must contrast with the page background by at least
4.5:1 (WCAG AA for body text) under JupyterLab's light and dark theme markers, and the
plain-text fallback must be hidden once the CSS applies.
"""

from __future__ import annotations

import pytest

from kprof.html import kernel_profile_mimebundle, overview, timeline_mimebundle

from .. import browser
from ..plot.synth import timeline
from ..test_model import make
from .test_profiles_repr import _profile

THEMES = {
    "light": ('data-jp-theme-light="true"', "#ffffff"),
    "dark": ('data-jp-theme-light="false"', "#111111"),
    "vscode-dark": ('class="vscode-dark"', "#1e1e1e"),
}

CONTRAST = """
const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
const lum = ([r, g, b]) => {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
};
const bg = parse(getComputedStyle(document.body).backgroundColor);
const worst = [];
let fallbackShown = 0, checked = 0;
for (const el of document.querySelectorAll(".kp-root *")) {
  const s = getComputedStyle(el);
  if (el.matches("pre.kp-text-fallback")) { if (s.display !== "none") fallbackShown++; continue; }
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own || s.display === "none" || el.closest(".kp-text-fallback")) continue;
  let [r, g, b, a] = parse(s.color); if (a === undefined) a = 1;
  const fg = [r * a + bg[0] * (1 - a), g * a + bg[1] * (1 - a), b * a + bg[2] * (1 - a)];
  const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  const ratio = (hi + 0.05) / (lo + 0.05);
  checked++;
  if (ratio < 4.5) worst.push([el.tagName, el.className, el.textContent.trim().slice(0, 40), ratio.toFixed(2)]);
}
kpProbe({checked, fallbackShown, worst});
"""


@pytest.fixture(scope="module")
def page() -> str:
    body = (
        make().to_html()
        + timeline_mimebundle(timeline(12, sync_every=4))["text/html"]
        + kernel_profile_mimebundle(_profile())["text/html"]
        + overview([make()], title="verdicts", links=True).html  # its links read like its text
    )
    return body


@pytest.mark.parametrize("theme", THEMES)
def test_text_contrasts_with_the_theme_background(theme, page, tmp_path):
    exe = browser.chromium()
    marker, bg = THEMES[theme]
    html = f'<!DOCTYPE html><html><body {marker} style="background: {bg}">{page}</body></html>'
    seen = browser.probe(exe, tmp_path, html, CONTRAST)
    assert seen["checked"] > 40
    assert seen["fallbackShown"] == 0
    assert seen["worst"] == [], f"low contrast in the {theme} theme: {seen['worst']}"
