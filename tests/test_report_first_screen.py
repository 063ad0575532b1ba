"""The report's first screen, as a newcomer meets it (issue 28): one line of fix per row, ids and file
names whole, identical fixes written once, every row a link to its diagnosis, every element id unique.

The page is the report's own header (:func:`kprof.report.assemble._header_cells`, exported by
:func:`kprof.report.export_html`) over the diagnoses of every shipped sample, followed by each diagnosis's
full view, so the links have their targets; it is checked in headless Chromium at 1280x1000 (a laptop's
first screen). The full report's ids and links are checked in ``tests/test_report.py``.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kprof import report
from kprof.html._common import first_sentence
from kprof.report.assemble import unique_ids

from . import browser
from .conftest import REPO

WINDOW = (1280, 1000)


class _Ids(HTMLParser):
    """Every element id of a page, and the targets of its in-page links."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id") is not None:
            self.ids.append(str(a["id"]))
        href = a.get("href") or ""
        if tag == "a" and href.startswith("#"):
            self.links.append(href[1:])


def ids_of(page: str) -> _Ids:
    p = _Ids()
    p.feed(page)
    return p


def assert_ids_unique_and_links_lead_somewhere(page: str) -> None:
    p = ids_of(page)
    twice = sorted(k for k, n in collections.Counter(p.ids).items() if n > 1)
    assert not twice, f"element ids used more than once: {twice[:10]}"
    dead = sorted(set(p.links) - set(p.ids))
    assert not dead, f"links to no element: {dead[:10]}"


# ------------------------------------------------------------------ fast: the id pass itself


def test_unique_ids_renames_later_holders_and_their_heading_links() -> None:
    page = (
        '<h2 id="What-next">What next<a class="anchor-link" href="#What-next">¶</a></h2>'
        '<div class="kp-root" id="kp-diag-1"><p id="kp-diag-1-headline">a</p></div>'
        '<h2 id="What-next">What next<a class="anchor-link" href="#What-next">¶</a></h2>'
        '<div class="kp-root" id="kp-diag-1"><p id="kp-diag-1-headline">b</p></div>'
        '<p id="kp-diag-1-2">taken</p><a href="#kp-diag-1">first</a><a href="#gone">dead</a>'
    )
    out = unique_ids(page)
    assert_ids_unique_and_links_lead_somewhere(out)
    assert '<h2 id="What-next-2">What next<a class="anchor-link" href="#What-next-2">' in out
    assert 'id="kp-diag-1-3"' in out  # kp-diag-1-2 was taken
    assert '<a href="#kp-diag-1">first</a>' in out  # a link to a twice-held id leads to the first
    assert "gone" not in out and ">dead</a>" in out  # a link to nothing keeps its text, not its href


def test_first_sentence_keeps_parentheses_code_and_abbreviations_whole() -> None:
    fix = (
        "Capture the loop body as a CUDA graph (torch.compile(mode='reduce-overhead'), e.g. one launch). "
        "Alternatively fuse."
    )
    assert first_sentence(fix) == fix.split(" Alternatively")[0]
    assert first_sentence("Keep `x.item()` out. Then.") == "Keep `x.item()` out."
    assert first_sentence("Use 1.5 ms less, i.e. Halve it") == "Use 1.5 ms less, i.e. Halve it"


# ------------------------------------------------------------------ the first screen


@contextlib.contextmanager
def _in(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def screen(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The report's header over every sample's diagnoses, then their full views, exported as the report is."""
    import nbformat

    import kprof
    from kprof.diagnose.job import diagnose_summaries
    from kprof.jobs import job_name, sample_job_paths, summarize_ranks
    from kprof.report.assemble import _header_cells, export_html

    if report.samples_dir() is None:
        pytest.skip("no sample gallery")
    with _in(REPO):
        timelines = [os.path.relpath(p) for p in report.sample_paths("timeline")]
        kernels = [os.path.relpath(p) for p in report.sample_paths("kernel")]
        ranks = [os.path.relpath(p) for p in sample_job_paths("ddp_straggler")]
        diags = [d for p in timelines for d in kprof.diagnose(p)]  # as 01_timeline publishes them
        summaries = summarize_ranks(ranks, workers=1, progress=False)
        diags += diagnose_summaries(summaries, job=job_name(ranks))  # 04_job
        diags += [d for _, _, d in report.kernel_entries(kernels)[1]]  # 02_kernel
        inputs = report.sort_inputs([*timelines, *kernels, *ranks])
        inputs = inputs.renamed(report.display_names([*inputs.timelines, *inputs.kernels, *inputs.jobs[0]]))
    cells = _header_cells(inputs, [d.to_dict() for d in diags], ["1. Timeline", "2. Job", "3. Kernel"])
    views = nbformat.v4.new_code_cell("# every diagnosis in full")
    views.outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": d.to_text(), "text/html": d.to_html()})
        for d in diags
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [*cells, nbformat.v4.new_markdown_cell("# 1. Timeline\n\n## What next"), views]
    d = tmp_path_factory.mktemp("first-screen")
    page = export_html(nb)
    path = d / "first_screen.html"
    path.write_text(page, encoding="utf-8")
    return {"page": page, "path": path, "diagnoses": diags, "dir": d}


PROBE = """
const rows = [...document.querySelectorAll(".kp-overview tr.kp-ov-row")];
const out = {rows: rows.length, wrapped: [], overflow: [], dead: [], unlinked: 0, first_screen: 0, tall: [],
             fixes: [], viewport: [window.innerWidth, window.innerHeight]};
for (const r of rows) {
  const code = r.querySelector("code.kp-ov-id"), name = r.querySelector("a.kp-ov-name");
  for (const el of [code, name]) {
    if (el.getClientRects().length !== 1) out.wrapped.push(el.textContent);  // one line box: no break inside
    if (el.getBoundingClientRect().right > el.closest("td").getBoundingClientRect().right + 0.5)
      out.overflow.push(el.textContent);
  }
  const links = [...r.querySelectorAll('a[href^="#"]')];
  if (links.length < 2) out.unlinked++;
  for (const a of links) if (!document.getElementById(a.getAttribute("href").slice(1))) out.dead.push(a.textContent);
  if (r.getBoundingClientRect().bottom <= window.innerHeight) out.first_screen++;
}
for (const f of document.querySelectorAll(".kp-overview td.kp-fix-line")) {
  const one = parseFloat(getComputedStyle(f).fontSize) * 1.6;
  out.fixes.push(f.textContent.replace(/^\\s*fix( \\(\\d+ above\\))?:\\s*/, "").trim());
  if (f.getBoundingClientRect().height > 2 * one) out.tall.push(f.textContent.slice(0, 60));
}
const a = rows[Math.floor(rows.length / 2)].querySelector('a[href^="#"]');
location.hash = a.getAttribute("href");  // follow a row's link: its diagnosis comes to the top of the screen
out.jump = Math.round(document.getElementById(a.getAttribute("href").slice(1)).getBoundingClientRect().top);
out.scrolled = Math.round(window.scrollY);
kpProbe(out);
"""


@pytest.mark.slow
def test_every_id_of_the_first_screen_page_is_unique(screen: dict) -> None:
    assert_ids_unique_and_links_lead_somewhere(screen["page"])


@pytest.mark.slow
def test_identical_fixes_are_written_once_under_their_rows(screen: dict) -> None:
    groups = re.findall(r'<tbody class="kp-ov-group">(.*?)</tbody>', screen["page"], re.S)
    rows = sum(g.count('<tr class="kp-ov-row">') for g in groups)
    assert rows == len(screen["diagnoses"])
    lines = [re.search(r'<td class="kp-fix-line"[^>]*>(.*?)</td>', g, re.S) for g in groups]
    texts = [re.sub(r"<[^>]+>", "", m[1]).split(":", 1)[1].strip() for m in lines if m]
    assert len(texts) == len(set(texts)), "an identical fix written twice"
    # the two host-bound loops that PyTorch and a CUDA graph would fix alike share one line
    both = next(g for g in groups if "host_launch_bound.sqlite" in g)
    assert "pair_graph_before.sqlite" in both and "fix (2 above):" in both


@pytest.mark.slow
def test_first_screen_in_chromium_is_scannable(screen: dict) -> None:
    exe = browser.chromium()
    seen = browser.probe(exe, screen["dir"], screen["page"], PROBE, window=f"{WINDOW[0]},{WINDOW[1]}")
    n = len(screen["diagnoses"])
    assert seen["rows"] == n
    assert seen["wrapped"] == [] and seen["overflow"] == [], "an id or a file name broken or spilling"
    assert seen["unlinked"] == 0 and seen["dead"] == [], "every row links to its diagnosis"
    assert seen["tall"] == [], f"a fix over more than one line: {seen['tall']}"
    fixes = {" ".join(first_sentence(" ".join(d.fix.split())).split()) for d in screen["diagnoses"] if d.fix}
    assert all(" ".join(f.split()) in fixes for f in seen["fixes"]), "each fix line is a first sentence"
    # Chromium's viewport at --window-size=1280,1000 is 1280x857: the old table (a 10-15 line fix per row)
    # showed 5 whole rows there, this one 11 (measured on the samples); fonts vary between machines
    assert seen["first_screen"] >= 9, seen["first_screen"]
    assert 0 <= seen["jump"] <= 5 and seen["scrolled"] > WINDOW[1], (seen["jump"], seen["scrolled"])


@pytest.mark.slow
def test_first_screen_screenshot(screen: dict) -> None:
    from PIL import Image

    exe = browser.chromium()
    shot = screen["dir"] / "first_screen.png"
    r = browser.run(
        exe, screen["dir"], f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars",
        f"--screenshot={shot}", screen["path"].as_uri(),
    )  # fmt: skip
    assert shot.is_file(), r.stderr[-2000:]
    img = Image.open(shot).convert("L")
    assert img.size == WINDOW
    lo, hi = img.getextrema()
    assert hi - lo > 100  # text, not a blank page
    # text reaches the bottom of the screen: the verdict table fills it (dark pixels in the lowest tenth)
    bottom = img.crop((0, int(WINDOW[1] * 0.9), WINDOW[0], WINDOW[1]))
    assert sum(bottom.histogram()[:128]) > 500
    if os.environ.get("KPROF_SCREENSHOT_DIR"):  # keep it to look at (the before/after)
        Image.open(shot).save(Path(os.environ["KPROF_SCREENSHOT_DIR"]) / "report_first_screen.png")
