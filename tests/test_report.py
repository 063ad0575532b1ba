"""``kprof report``: inputs to notebooks, papermill, one self-contained HTML file, in a real browser.

The slow tests share one report, built once per session from the shipped samples plus a
crafted capture whose kernel is named ``<script>alert(1)</script>``. The browser tests
run Debian's ``chromium`` headless (no network: every host name resolves to nothing) and
skip when it is absent, unless ``KPROF_REQUIRE_CHROMIUM=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import html as htmllib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from kprof import report
from kprof.cli import main
from kprof.errors import KprofInputError

from . import browser
from .conftest import SAMPLES

EVIL = "<script>alert(1)</script>"
EVIL_FILE = "<img src=x onerror=alert(2)>"
NCU_MAGIC = b"NVR\x00"


# ------------------------------------------------------------------ crafted inputs


def crafted_trace(path: Path, kernel: str = EVIL, n: int = 40) -> Path:
    """A PyTorch-profiler trace: ``n`` launches of one kernel named ``kernel``, GPU busy 93%."""
    events = []
    for i in range(n):
        t = 1000 + i * 100
        args = {"correlation": i + 1}
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t, "dur": 4, "args": args})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 5, "dur": 93,
                       "args": {**args, "device": 0, "stream": 7, "grid": [64, 1, 1], "block": [256, 1, 1]}})  # fmt: skip
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return path


# ------------------------------------------------------------------ fast: inputs, cleaning, export, writing


def test_inputs_go_to_their_stages_and_pairs_are_found(tmp_path):
    before = tmp_path / "t_before.ncu-rep"
    after = tmp_path / "t_after.ncu-rep"
    other = tmp_path / "other.ncu-rep"
    for p in (before, after, other):
        p.write_bytes(NCU_MAGIC + b"x")
    trace = crafted_trace(tmp_path / "cap.json")
    inputs = report.sort_inputs([after, trace, before, other])
    assert inputs.timelines == (str(trace),)
    assert inputs.kernels == (str(after), str(before), str(other))
    assert inputs.pairs == ((str(before), str(after)),)
    assert inputs.stages() == ["timeline", "kernel", "mechanism", "compare"]
    assert report.stage_parameters("kernel", inputs)["pairs"] == [[str(before), str(after)]]
    assert report.stage_parameters("compare", inputs)["pairs"] == [[str(before), str(after)]]
    assert report.sort_inputs([trace]).stages() == ["timeline"]


def test_gzipped_reports_pair_like_plain_ones(samples_dir):
    """The shipped kernel reports are stored as NAME.ncu-rep.gz: the default report still finds their pairs."""
    pairs = report.find_pairs(report.sample_paths("kernel"))
    assert sorted((Path(b).name, Path(a).name) for b, a in pairs) == [
        ("pair_smem_column_sum_before.ncu-rep.gz", "pair_smem_column_sum_after.ncu-rep.gz"),
        ("pair_transpose_before.ncu-rep.gz", "pair_transpose_after.ncu-rep.gz"),
    ]
    assert report.find_pairs(["a/t_before.sqlite.gz", "a/t_after.sqlite.gz"]) == [
        ("a/t_before.sqlite.gz", "a/t_after.sqlite.gz")
    ]


def test_ranks_of_one_job_go_to_the_job_stage(samples_dir):
    from kprof.jobs import sample_job_paths

    ranks = sample_job_paths("ddp_straggler")
    single = str(samples_dir / "timeline" / "gpu_bound.sqlite")
    inputs = report.sort_inputs([single, *ranks])
    assert inputs.timelines == (single,)
    assert inputs.jobs == (tuple(ranks),)
    assert inputs.stages() == ["timeline", "job"]
    assert report.stage_parameters("job", inputs)["timeline_paths"] == ranks
    two = report.Inputs((), (), (), (tuple(ranks), tuple(ranks)))
    assert two.stages() == ["job", "job:2"]
    assert report.stage_template("job:2") == "04_job.ipynb"
    assert report.stage_title("job:2") == "Job (many ranks) (2)"


def test_a_folder_stands_for_the_profiles_in_it(tmp_path, samples_dir):
    import shutil

    runs = tmp_path / "runs"
    (runs / "deeper").mkdir(parents=True)
    shutil.copy(samples_dir / "timeline" / "sync_bound.sqlite", runs)
    shutil.copy(samples_dir / "ncu" / "small_grid.ncu-rep.gz", runs / "deeper")
    (runs / "notes.json").write_text('{"not": "a trace"}')  # data files beside profiles are skipped
    (runs / "train.py").write_text("print()")
    inputs = report.sort_inputs([runs])
    assert inputs.timelines == (str(runs / "sync_bound.sqlite"),)
    assert inputs.kernels == (str(runs / "deeper" / "small_grid.ncu-rep.gz"),)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(KprofInputError, match="holds no profile"):
        report.sort_inputs([empty])


def test_each_report_is_read_once_per_report(monkeypatch, samples_dir):
    # two kernels for the samples' five notebooks (two cores, no third start-up): the kernel stages
    # together, the others together in the workflow's order; the sections are put back in order
    runs = report.report_runs(["timeline", "job", "kernel", "mechanism", "compare"])
    assert runs == [("timeline", "job", "compare"), report.KERNEL_LANE]
    assert report.report_runs(["kernel", "mechanism", "compare"]) == [("kernel", "mechanism", "compare")]
    assert report.report_runs(["timeline", "job"]) == [("timeline",), ("job",)]
    # ... and every notebook reads and diagnoses through the per-process memo, never kprof.load directly
    for stage in ("timeline", "kernel", "mechanism", "compare"):
        nb = nbformat.read(report.template_path(stage), as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "kprof.load(" not in code and re.search(r"report\.(kernel_entries|load_profile)\(", code)
        assert not re.search(r"(?<![\w.])diagnose\(|kprof\.compare\(", code), (
            stage
        )  # diagnoses_of, compare_loaded
    import kprof.io

    calls: list[str] = []
    real = kprof.io.load
    monkeypatch.setattr(kprof.io, "load", lambda p: calls.append(p) or real(p))
    monkeypatch.setattr(report.views, "_LOADED", {})
    p = str(samples_dir / "ncu" / "small_grid.ncu-rep.gz")
    profiles, entries = report.kernel_entries([p])
    assert report.kernel_entries([p])[0][p] is profiles[p] and report.load_profile(p) is profiles[p]
    assert calls == [p]  # read once, however many notebooks ask
    assert entries[0][2].file == p
    import kprof.api

    diagnosed: list[object] = []
    real_diagnose = kprof.api.diagnose
    monkeypatch.setattr(kprof.api, "diagnose", lambda x, **kw: diagnosed.append(x) or real_diagnose(x, **kw))
    monkeypatch.setattr(report.views, "_DIAGNOSED", {})
    first = report.kernel_entries([p])[1]
    assert (
        report.kernel_entries([p])[1] == first
        and report.diagnoses_of(profiles[p])[0].headline == first[0][2].headline
    )
    assert diagnosed == [profiles[p]]  # diagnosed once, however many notebooks list its launches


def test_the_before_after_notebook_compares_with_the_diagnoses_already_made(samples_dir):
    import kprof

    b, a = (str(samples_dir / "ncu" / f"pair_transpose_{x}.ncu-rep.gz") for x in ("before", "after"))
    pb, pa = report.load_profile(b), report.load_profile(a)
    known = report.diagnoses_of(pb)
    (c,) = report.compare_loaded(pb, pa)
    assert c.before == known[0]  # the kernel notebook's diagnosis, not a second one
    assert [x.to_dict() for x in report.compare_loaded(pb, pa)] == [
        x.to_dict() for x in kprof.compare(pb, pa)
    ]


def test_report_processes_import_nbformat_without_the_iri_grammar():
    """``kprof report`` and its worker skip jsonschema's optional rfc3987-syntax (a Lark grammar compiled at
    import, 1.3 s of CPU per process); notebooks still validate; a library caller's modules are left alone."""
    code = (
        "import sys, time\n"
        "from kprof.report import skip_iri_grammar\n"
        "skip_iri_grammar()\n"
        "import nbformat\n"
        "nbformat.validate(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')]))\n"
        "print(sys.modules.get('rfc3987_syntax', 'absent'))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (
        r.stdout.strip() == "None"
    )  # marked absent: jsonschema's `import rfc3987_syntax` raised ImportError
    after = "import jsonschema, sys\nfrom kprof.report import skip_iri_grammar\nskip_iri_grammar()\nprint(sys.modules.get('rfc3987_syntax', 'absent') is None)"
    r = subprocess.run([sys.executable, "-c", after], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr  # jsonschema already there: untouched
    src = (Path(report.__file__).parent / "__main__.py").read_text()
    assert "skip_iri_grammar()" in src  # the worker process does it too


def test_display_names_are_never_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    here = str(tmp_path / "mine" / "a.sqlite")
    names = report.display_names([here, "/srv/x/runs/b.ncu-rep", "/opt/y/runs/b.ncu-rep", "/opt/y/c.ncu-rep"])
    assert names[here] == "mine/a.sqlite"  # as typed from the current directory
    assert (
        names["/srv/x/runs/b.ncu-rep"] == "x/runs/b.ncu-rep"
        and names["/opt/y/runs/b.ncu-rep"] == "y/runs/b.ncu-rep"
    )
    assert names["/opt/y/c.ncu-rep"] == "opt/y/c.ncu-rep"  # as many folders as keep all the names apart
    assert not any(os.path.isabs(n) or n.startswith("..") for n in names.values())
    assert report.display_names(["/srv/a/x.sqlite", "/srv/a/b/y.sqlite"]) == {
        "/srv/a/x.sqlite": "x.sqlite",
        "/srv/a/b/y.sqlite": "b/y.sqlite",
    }


def test_bad_input_fails_before_any_notebook_runs(tmp_path, capsys):
    missing = tmp_path / "nope.sqlite"
    with pytest.raises(KprofInputError, match=r"nope\.sqlite: no such file"):
        report.build_report([missing], tmp_path / "r.html", log=None)
    assert main(["report", str(missing), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.sqlite" in err
    assert not (tmp_path / "r.html").exists()


def test_cli_without_paths_reports_on_the_samples(monkeypatch, tmp_path):
    seen = {}

    def fake(paths, output, show_code=False, **kw):
        seen.update(paths=paths, output=output, show_code=show_code)
        return Path(output)

    monkeypatch.setattr(report, "build_report", fake)
    assert main(["report", "-o", str(tmp_path / "x.html")]) == 0
    assert seen == {"paths": [], "output": str(tmp_path / "x.html"), "show_code": False}
    assert main(["report", "a.sqlite", "b.ncu-rep", "--show-code"]) == 0
    assert seen == {"paths": ["a.sqlite", "b.ncu-rep"], "output": "report.html", "show_code": True}


def test_sample_paths_pick_one_file_per_timeline_sample():
    if report.samples_dir() is None:
        pytest.skip("no data/samples")
    tl = report.sample_paths("timeline")
    stems = [Path(p).name.split(".")[0] for p in tl]
    assert len(stems) == len(set(stems)) and tl
    assert all(p.endswith((".sqlite", ".sqlite.gz", ".nsys-rep", ".json.gz", ".json")) for p in tl)
    assert not any(p.endswith(".nsys-rep") for p in tl)  # every sample has its export: no nsys needed
    assert all(p.endswith((".ncu-rep", ".ncu-rep.gz")) for p in report.sample_paths("kernel"))


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    report.atomic_write(out, "old")
    assert out.read_text() == "old"

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        report.atomic_write(out, "new")
    assert out.read_text() == "old"  # the previous report is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary left behind


def _nb_with_outputs() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("x = 1")
    params.metadata["tags"] = ["parameters"]
    injected = nbformat.v4.new_code_cell("x = 2")
    injected.metadata["tags"] = ["injected-parameters"]
    cell = nbformat.v4.new_code_cell("show()")
    view = {"model_id": "abc", "version_major": 2, "version_minor": 0}
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={report.WIDGET_VIEW_MIME: view, "text/html": "<p>static</p>", "text/plain": "picker"},
        ),
        nbformat.v4.new_output("display_data", data={report.WIDGET_VIEW_MIME: view, "text/plain": "VBox()"}),
        nbformat.v4.new_output(
            "display_data", data={report.DIAGNOSES_MIME: {"diagnoses": []}, "text/plain": ""}
        ),
    ]
    nb.cells = [params, injected, cell]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return nb


def test_clean_outputs_keeps_the_static_view_of_widgets():
    nb = report._clean_outputs(_nb_with_outputs(), show_code=False)
    assert "widgets" not in nb.metadata
    assert len(nb.cells) == 1  # parameter cells dropped
    (out,) = nb.cells[0].outputs
    assert set(out["data"]) == {"text/html", "text/plain"}
    kept = report._clean_outputs(_nb_with_outputs(), show_code=True)
    assert [c.metadata.get("tags") for c in kept.cells][:2] == [["parameters"], ["injected-parameters"]]


def test_explorer_bundle_has_widget_html_and_text():
    class W:
        def _repr_mimebundle_(self, **kw):
            return {"text/plain": "W()", report.WIDGET_VIEW_MIME: {"model_id": "m"}}

    b = report.Explorer("<p>static</p>", "text", W())._repr_mimebundle_()
    assert b == {
        "text/plain": "text",
        "text/html": "<p>static</p>",
        report.WIDGET_VIEW_MIME: {"model_id": "m"},
    }
    assert set(report.Explorer("<p/>", "t")._repr_mimebundle_()) == {"text/plain", "text/html"}


def _remote_refs(html: str) -> list[str]:
    """Scripts, stylesheets, images or fonts that would be fetched from the network."""
    tags = re.findall(r"<(?:script|link|img|iframe|source)\b[^>]*>", html, flags=re.I)
    remote = [t for t in tags if re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", t, flags=re.I)]
    remote += re.findall(r"@import\s+url\(\s*[\"']?(?:https?:)?//[^)]*\)", html, flags=re.I)
    return remote


def test_export_is_self_contained_and_hides_code():
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("print('secret code')")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="visible output\n")]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), code]
    hidden = report.export_html(nb)
    assert "visible output" in hidden and "secret code" not in hidden
    assert _remote_refs(hidden) == []
    assert "<script" not in hidden  # no require.js, MathJax, widget manager
    shown = report.export_html(nb, show_code=True)
    assert "secret" in shown and _remote_refs(shown) == []


# ------------------------------------------------------------------ slow: one real report per session


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict:
    """The report on every shipped sample plus the crafted capture, built once."""
    if report.samples_dir() is None:
        pytest.skip(f"no sample gallery at {SAMPLES}")
    d = tmp_path_factory.mktemp("report")
    evil = crafted_trace(d / f"crafted_{EVIL_FILE}.json")
    out = d / "out" / "report.html"
    log = io.StringIO()
    from kprof.jobs import sample_job_paths

    paths = [*report.sample_paths(), *sample_job_paths("ddp_straggler"), str(evil)]
    result = report.build_report(paths, out, log=log)
    return {
        "path": result,
        "html": result.read_text(encoding="utf-8"),
        "log": log.getvalue(),
        "inputs": paths,
    }


@pytest.mark.slow
def test_report_is_written_with_progress(built):
    assert built["path"].is_file()
    assert sorted(p.name for p in built["path"].parent.iterdir()) == ["report.html"]  # no leftovers
    lines = built["log"].splitlines()
    runs = [ln for ln in lines if "executed in" in ln]
    names = sorted(n for ln in runs for n in re.search(r"\] (.+) executed", ln).group(1).split(" + "))
    assert names == sorted(report.TEMPLATES.values())  # every notebook ran, once
    # two kernels: the kernel and mechanism notebooks (each ncu report read once), and the others
    assert sorted(re.search(r"\] (.+) executed", ln).group(1) for ln in runs) == [
        "01_timeline.ipynb + 04_job.ipynb + 05_compare.ipynb",
        "02_kernel.ipynb + 03_mechanism.ipynb",
    ]
    assert all(re.search(r"executed in \d+\.\d s$", ln) for ln in runs)
    assert lines[-1].startswith("kprof report: exported") and str(built["path"]) in lines[-1]


@pytest.mark.slow
def test_report_is_self_contained(built):
    h = built["html"]
    assert _remote_refs(h) == []
    assert "<script" not in h
    assert "from kprof.api import diagnose" not in h and "kernel_picker(" not in h  # code cells hidden
    images = re.findall(r'<img[^>]+src="data:image/png;base64,', h)
    n_timelines = len(report.sample_paths("timeline")) + 1
    assert len(images) >= n_timelines + 1  # each capture (whole, and zoomed when long), the roofline, ...


@pytest.mark.slow
def test_report_has_every_headline_in_order(built):
    from kprof.api import diagnose

    h = htmllib.unescape(built["html"])
    assert "kprof report" in h and "Headlines" in h
    titles = re.findall(r"<h1[^>]*>(\d+)\. ([^:<]+)", built["html"])
    assert [int(n) for n, _ in titles] == list(range(1, len(titles) + 1))  # 1, 2, 3...: no 1b, no gap
    assert [t for _, t in titles] == ["Timeline", "Job", "Kernel", "Mechanism", "Before and after"]
    for p in built["inputs"][:3] + built["inputs"][-3:]:
        d = diagnose(p)[0]
        assert d.headline in h, p


def _cards(h: str) -> list[str]:
    return [htmllib.unescape(m) for m in re.findall(r'<p class="kp-headline"[^>]*>(.*?)</p>', h, re.S)]


def _cells(row: str) -> list[str]:
    return [
        " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", c)).split())
        for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


def _header_rows(h: str) -> list[list[str]]:
    """verdict, "bottleneck input", headline and the fix line of its group, per row of the header."""
    table = h[h.index('class="kp-overview') :]
    table = table[: table.index("</table>")]
    rows = []
    for group in re.findall(r'<tbody class="kp-ov-group">(.*?)</tbody>', table, re.S):
        fix = re.search(r'<tr class="kp-ov-fix">(.*?)</tr>', group, re.S)
        line = _cells(fix[1])[-1].split(":", 1)[1].strip() if fix else ""
        rows += [[*_cells(r), line] for r in re.findall(r'<tr class="kp-ov-row">(.*?)</tr>', group, re.S)]
    return rows


@pytest.mark.slow
def test_report_says_each_thing_once(built):
    h = built["html"]
    assert h.count('class="kp-overview') == 1  # one verdict table: the header's
    rows = _header_rows(h)
    cards = _cards(h)
    # every diagnosis of every input is a row of the header and a card exactly once
    assert sorted(" ".join(c.split()) for c in cards) == sorted(r[2] for r in rows)
    assert all(len(r) == 4 for r in rows)  # verdict, bottleneck and input, headline, the group's fix line
    fixes = [r[3] for r in rows if r[0] == "fix"]
    assert fixes and all(len(f) > 20 for f in fixes)  # the fix (its first sentence) is in the table
    # the comparisons name both diagnoses in one line each; their cards are in the inputs' sections
    assert 'class="kp-facts kp-cmp-lines"' in h and 'class="kp-cmp-side"' not in h


@pytest.mark.slow
def test_report_element_ids_are_unique_and_every_link_leads_somewhere(built):
    """Issue 28: ``kp-diag-1`` three times and ``What-next`` three times sent links to the wrong place."""
    from .test_report_first_screen import assert_ids_unique_and_links_lead_somewhere, ids_of

    assert_ids_unique_and_links_lead_somewhere(built["html"])
    head = built["html"][built["html"].index('class="kp-overview') :]
    head = head[: head.index("</table>")]
    rows = head.count('<tr class="kp-ov-row">')
    linked = set(re.findall(r'href="#(kp-d-[0-9a-f]+)"', head))
    assert rows and len(linked) == rows  # every row of the header links to its own diagnosis
    assert linked <= set(ids_of(built["html"]).ids)


@pytest.mark.slow
def test_report_shows_no_absolute_path(built):
    h = htmllib.unescape(built["html"])
    for p in built["inputs"]:
        folder = os.path.dirname(os.path.abspath(p))
        assert folder not in h, folder
    assert os.getcwd() not in h
    # inputs under the current directory are named as typed from it (valid in the suggested commands)
    rel = os.path.relpath(report.sample_paths("kernel")[0])
    assert not rel.startswith("..") and rel in h


@pytest.mark.slow
def test_each_capture_shows_the_charts_its_caption_names(built):
    h = built["html"]
    views = re.findall(r'<div class="kp-timeline-views">(.*?)</div>', h, re.S)
    assert len(views) == len(report.sample_paths("timeline")) + 1
    for v in views:
        n = len(re.findall(r"<img ", v))
        caption = htmllib.unescape(re.search(r'<p class="kp-caption">(.*?)</p>', v, re.S).group(1))
        assert caption.startswith({1: "One chart", 2: "Two charts"}[n]), caption


@pytest.mark.slow
def test_profile_strings_are_text_not_markup(built):
    h = built["html"]
    assert EVIL not in h and EVIL_FILE not in h
    assert htmllib.escape(EVIL, quote=False) in h
    assert f"crafted_{htmllib.escape(EVIL_FILE, quote=False)}.json" in h


# ------------------------------------------------------------------ the browser


# Runs in a copy of the report once everything has loaded; reports what it saw.
PROBE = """
  const shown = (el) => {
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.display !== "none" && s.visibility !== "hidden"
      && el.closest("details:not([open])") === null;
  };
  const imgs = [...document.querySelectorAll("img")];
  const out = {
    headlines: [...document.querySelectorAll(".kp-headline, .kp-overview td")].filter(shown).length,
    first_table_visible: shown(document.querySelector(".kp-overview")),
    fallback_visible: [...document.querySelectorAll("pre.kp-text-fallback")].filter(shown).length,
    images: imgs.length,
    images_decoded: imgs.filter((i) => i.complete && i.naturalWidth > 100).length,
    images_visible: imgs.filter((i) => shown(i) && i.getBoundingClientRect().height > 100).length,
    scripts: document.querySelectorAll("script").length,
    evil_as_text: document.body.innerText.includes("<script>alert(1)<\\/script>"),
  };
  kpProbe(out);
"""


@pytest.fixture(scope="session")
def browser_view(built, tmp_path_factory) -> dict:
    exe = browser.chromium()
    d = tmp_path_factory.mktemp("browser")
    seen = browser.probe(exe, d, built["html"], PROBE)
    shot = d / "report.png"
    r = browser.run(exe, d, "--window-size=1280,2400", f"--screenshot={shot}", built["path"].as_uri())
    assert shot.is_file(), r.stderr[-2000:]
    return {"probe": seen, "screenshot": shot}


@pytest.mark.slow
def test_browser_shows_headlines_and_plots(browser_view):
    p = browser_view["probe"]
    assert p["first_table_visible"] and p["headlines"] >= 10
    assert p["fallback_visible"] == 0  # CSS applied: the rich view shows, the text fallback hides
    assert p["images"] >= 10 and p["images_decoded"] == p["images"]
    assert p["images_visible"] >= 8  # whole/zoomed timelines, roofline, pairs, first picked kernel
    assert p["scripts"] == 1  # only the probe: the report itself runs no script
    assert p["evil_as_text"]  # the crafted kernel name reads as text


FOLLOW = """
  const hidden = [];
  const links = [...document.querySelectorAll(".kp-overview a.kp-ov-link")];
  for (const a of links) {
    location.hash = a.getAttribute("href");
    const t = document.getElementById(a.getAttribute("href").slice(1));
    const r = t.getBoundingClientRect();  // a diagnosis inside a closed kernel picker opens with the link
    if (t.closest("details:not([open])") !== null || r.top < -1 || r.top > window.innerHeight)
      hidden.push(a.textContent.slice(0, 60));
  }
  kpProbe({links: links.length, hidden});
"""


@pytest.mark.slow
def test_browser_follows_every_header_link_to_its_diagnosis(built, tmp_path):
    exe = browser.chromium()
    seen = browser.probe(exe, tmp_path, built["html"], FOLLOW, window="1280,1000")
    assert seen["links"] >= 40 and seen["hidden"] == [], seen["hidden"]


@pytest.mark.slow
def test_browser_screenshot_is_not_blank(browser_view):
    from PIL import Image

    img = Image.open(browser_view["screenshot"]).convert("L")
    assert img.size == (1280, 2400)
    lo, hi = img.getextrema()
    assert hi - lo > 100  # text and plots, not a blank page
    assert len(img.histogram()) == 256 and sum(1 for v in img.histogram() if v) > 32


# ------------------------------------------------------------------ failures


@pytest.mark.slow
def test_unreadable_report_fails_with_one_line_and_writes_nothing(tmp_path):
    bad = tmp_path / "broken.ncu-rep"
    bad.write_bytes(NCU_MAGIC + os.urandom(2048))
    out = tmp_path / "r.html"
    r = subprocess.run(
        [sys.executable, "-m", "kprof", "report", str(bad), "-o", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kprof: error:")]
    assert len(errors) == 1 and "broken.ncu-rep" in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.ncu-rep"]


@pytest.mark.slow
def test_parallel_runs_do_not_clobber_each_other(tmp_path):
    trace = crafted_trace(tmp_path / "cap.json")
    out = tmp_path / "out" / "report.html"
    cmd = [sys.executable, "-m", "kprof", "report", str(trace), "-o", str(out)]
    runs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in runs]
    for rc, err in results:
        assert rc == 0, err
        progress = [ln for ln in err.splitlines() if ln.startswith("kprof report:")]
        assert any("01_timeline.ipynb executed in" in ln for ln in progress)
    html = out.read_text(encoding="utf-8")
    assert html.rstrip().endswith("</html>") and "GPU-bound" in html
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.html"]
