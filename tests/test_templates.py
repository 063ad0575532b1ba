"""The template notebooks shipped in ``kprof/templates`` and the worked examples in ``notebooks/``.

Fast tests check their shape (a papermill ``parameters`` cell, prose before code, the
diagnosis before the plots); the slow tests execute them with nbmake on the shipped
samples, live widgets included, and check what they displayed.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from kprof import report

from .conftest import REPO

TEMPLATES = [REPO / "kprof" / "templates" / name for name in report.TEMPLATES.values()]
EXAMPLES = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_the_three_stages_are_shipped_in_the_package():
    shipped = {p.name for p in (REPO / "kprof" / "templates").glob("*.ipynb")}
    assert {"01_timeline.ipynb", "02_kernel.ipynb", "03_mechanism.ipynb"} <= shipped
    for stage in report.TEMPLATES:
        assert report.template_path(stage).is_file()


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_shape(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    cells = nb.cells
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# ")
    (params,) = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert "interactive = True" in params.source
    assert re.search(r"^((timeline|kernel)_paths|before) = None", params.source, re.M)
    # the prose teaches why the order matters
    prose = " ".join(c.source for c in cells if c.cell_type == "markdown").lower()
    assert "why" in prose and any(w in prose for w in ("first", "second", "third"))
    # the verdicts come before any plot
    code = [c.source for c in cells if c.cell_type == "code"]
    first_overview = next(i for i, s in enumerate(code) if re.search(r"overview\(|display\(", s))
    first_plot = next(
        i for i, s in enumerate(code) if re.search(r"\bplot_\w+\(|timeline_explorer\(|kernel_picker\(", s)
    )
    assert first_overview < first_plot
    assert all(not c.get("outputs") for c in cells if c.cell_type == "code")  # shipped clean


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_clean(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.cells[0].cell_type == "markdown"
    assert "data/samples" in "".join(c.source for c in nb.cells)


# A few samples of each kind (both timeline formats, a before/after pair), so that the templates
# run quickly here; the report test runs them on every sample.
SUBSET = {
    "timeline_paths": ["timeline/host_launch_bound.sqlite", "timeline/pair_graph_after.json.gz"],
    "kernel_paths": [
        "ncu/pair_transpose_before.ncu-rep.gz",
        "ncu/pair_transpose_after.ncu-rep.gz",
        "ncu/no_tensor_cores.ncu-rep.gz",
    ],
}
# Templates whose inputs are not a plain list of captures get their own subset.
SUBSET_BY_TEMPLATE = {
    "04_job": {
        "timeline_paths": ["multirank/ddp_straggler_rank0.sqlite", "multirank/ddp_straggler_rank1.sqlite"]
    },
    "05_compare": {
        "pairs": [["ncu/pair_transpose_before.ncu-rep.gz", "ncu/pair_transpose_after.ncu-rep.gz"]]
    },
}


def _run(path: Path, tmp_path: Path | None = None, subset: bool = False):
    from nbmake.nb_run import NotebookRun

    samples = report.samples_dir()
    if samples is None:
        pytest.skip("no data/samples")
    if subset:
        # nbmake's mocks set variables right after the parameters cell, as papermill would
        nb = nbformat.read(path, as_version=4)
        (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        subset_files = SUBSET_BY_TEMPLATE.get(path.stem, SUBSET)

        def _abs(v):
            return [_abs(x) for x in v] if isinstance(v, list) else str(samples / v)

        mock = {k: _abs(v) for k, v in subset_files.items() if re.search(rf"^{k} = ", params.source, re.M)}
        params.metadata["nbmake"] = {"mock": mock}
        path = tmp_path / path.name
        nbformat.write(nb, path)
    result = NotebookRun(path, default_timeout=600).execute()
    assert result.error is None, f"{path.name} failed:\n{result.error.summary}\n{result.error.trace[-3000:]}"
    return result.nb


def _outputs(nb, mime: str) -> list[str]:
    return [
        str(o["data"][mime])
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if mime in o.get("data", {})
    ]


@pytest.mark.slow
@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_runs_on_samples_with_widgets(path: Path, tmp_path: Path):
    nb = _run(path, tmp_path, subset=True)
    html = _outputs(nb, "text/html")
    if path.stem == "05_compare":
        # the comparison's verdicts are the first thing shown after the pair's heading; every view is static
        first = next(h for h in html if "kp-heading" not in h)
        assert "kp-compare" in first and "improved" in first
        assert "6.75" in first  # pair_transpose's speedup, measured under ncu
        assert any("data:image/png;base64," in h for h in html) or _outputs(nb, "image/png")
        return
    assert "kp-overview" in html[0]  # the verdicts are the first thing shown
    shown = " ".join(html)
    assert (
        "sync_bound.sqlite" not in shown and "atomic_contention.ncu-rep.gz" not in shown
    )  # the subset was used
    assert ("host_launch_bound.sqlite" in shown) == (path.stem == "01_timeline")
    assert _outputs(nb, report.DIAGNOSES_MIME) or path.stem == "03_mechanism"
    # live widgets, each with a static view that survives export
    widgets = [
        o for c in nb.cells for o in c.get("outputs", []) if report.WIDGET_VIEW_MIME in o.get("data", {})
    ]
    assert widgets and all("text/html" in o["data"] for o in widgets)
    assert any("data:image/png;base64," in h for h in html) or _outputs(nb, "image/png")
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path: Path):
    nb = _run(path)
    assert _outputs(nb, "image/png") or any("data:image/png" in h for h in _outputs(nb, "text/html"))


# ------------------------------------------------------------------ copies, and the shipped ones stay clean


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_template_refuses_to_run_in_place_before_any_output(path: Path):
    nb = nbformat.read(path, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    setup = next(c for c in nb.cells[i + 1 :] if c.cell_type == "code").source
    call = setup.index("report.refuse_in_place()")
    # nothing before the guard displays, loads or plots
    assert not re.search(r"\b(display|print|load|diagnose|plot_\w+)\(", setup[:call])


def test_refuse_in_place_marks_the_shipped_folder_read_only(tmp_path, monkeypatch):
    from kprof.errors import KprofError

    shipped = tmp_path / "templates"
    shipped.mkdir()
    for p in TEMPLATES:
        (shipped / p.name).write_bytes(p.read_bytes())
    report.refuse_in_place(shipped)  # elsewhere (a copy, kprof report): nothing happens
    assert all((shipped / p.name).stat().st_mode & 0o222 for p in TEMPLATES)
    monkeypatch.chdir(shipped)  # Jupyter starts a notebook's kernel in the notebook's folder
    with pytest.raises(KprofError, match="kprof notebook NAME"):
        report.refuse_in_place(shipped)
    assert not any((shipped / p.name).stat().st_mode & 0o222 for p in TEMPLATES)


def test_kprof_notebook_writes_clean_copies_and_never_overwrites(tmp_path):
    import subprocess
    import sys

    def kprof(*args):
        return subprocess.run(
            [sys.executable, "-m", "kprof", *args], capture_output=True, text=True, timeout=120
        )

    r = kprof("notebook")
    assert r.returncode == 0 and all(name in r.stdout for name in report.TEMPLATES.values())
    r = kprof("notebook", "kernel", "03_mechanism.ipynb", "-o", str(tmp_path / "mine"))
    assert r.returncode == 0, r.stderr
    copies = sorted((tmp_path / "mine").iterdir())
    assert [p.name for p in copies] == ["02_kernel.ipynb", "03_mechanism.ipynb"]
    for p in copies:
        assert (
            nbformat.read(p, as_version=4).cells
            == nbformat.read(REPO / "kprof" / "templates" / p.name, 4).cells
        )
        assert p.stat().st_mode & 0o200  # the copy is the user's to run and save
    before = copies[0].read_bytes()
    copies[0].write_text("{}")
    r = kprof("notebook", "kernel", "-o", str(tmp_path / "mine"))
    assert r.returncode == 2 and "exists already" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert copies[0].read_text() == "{}"  # untouched
    assert kprof("notebook", "kernel", "-o", str(tmp_path / "mine"), "--force").returncode == 0
    assert copies[0].read_bytes() == before
    r = kprof("notebook", "roofline")
    assert r.returncode == 2 and "no template named 'roofline'" in r.stderr
    r = kprof("notebook", "all", "-o", str(tmp_path / "all"))
    assert r.returncode == 0 and len(list((tmp_path / "all").glob("*.ipynb"))) == len(report.TEMPLATES)
    r = kprof("notebook", "kernel", "-o", str(REPO / "kprof" / "templates"), "--force")
    assert r.returncode == 2 and "shipped template itself" in r.stderr


# ------------------------------------------------------------------ parameters: one path or a list


def test_path_parameters_take_one_path_or_a_list_and_refuse_the_rest_in_one_line():
    from kprof.errors import KprofError

    assert report.path_list("a.sqlite", "timeline_paths") == ["a.sqlite"]  # papermill -p passes a string
    assert report.path_list(Path("a.sqlite"), "timeline_paths") == ["a.sqlite"]
    assert report.path_list(("a", "b"), "kernel_paths") == ["a", "b"] and report.path_list(None, "x") is None
    assert report.pair_list(["a_before.ncu-rep", "a_after.ncu-rep"]) == [
        ["a_before.ncu-rep", "a_after.ncu-rep"]
    ]
    assert report.pair_list([["b1", "a1"], ("b2", "a2")]) == [["b1", "a1"], ["b2", "a2"]]
    for value, name, words in (
        (3, "timeline_paths", "timeline_paths must be a list of paths (or one path), not int"),
        (
            [1, "a"],
            "kernel_paths",
            "kernel_paths must be a list of paths (or one path), not a list of int, str",
        ),
        ("a_before.ncu-rep", "pairs", "pairs must be a list of [before, after] pairs of paths, not str"),
    ):
        with pytest.raises(KprofError) as e:
            (report.pair_list if name == "pairs" else report.path_list)(value, name)
        assert str(e.value) == words


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.stem)
def test_every_template_normalizes_its_path_parameters_after_the_guard(path: Path):
    nb = nbformat.read(path, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    setup = next(c for c in nb.cells[nb.cells.index(params) + 1 :] if c.cell_type == "code").source
    for name in ("timeline_paths", "kernel_paths", "pairs"):
        if re.search(rf"^{name} = ", params.source, re.M):
            call = "pair_list(pairs" if name == "pairs" else f'path_list({name}, "{name}")'
            assert f"{name} = report.{call}" in setup, (path.name, name)
            assert setup.index("refuse_in_place()") < setup.index(f"{name} = report.")


@pytest.mark.slow
def test_papermill_runs_the_timeline_template_on_one_path_given_as_a_string(tmp_path: Path):
    """Issue 28: ``papermill 01_timeline.ipynb out.ipynb -p timeline_paths FILE`` read FILE as characters."""
    from kprof.errors import KprofError

    sample = REPO / "data" / "samples" / "timeline" / "sync_bound.sqlite"
    if not sample.is_file():
        pytest.skip("no sample gallery")
    nb = report.execute_template("timeline", {"timeline_paths": str(sample), "interactive": False}, tmp_path)
    shown = " ".join(_outputs(nb, "text/html"))
    assert "sync_bound.sqlite" in shown and "kp-overview" in shown
    with pytest.raises(
        KprofError, match=r"^timeline_paths must be a list of paths \(or one path\), not int$"
    ):
        report.execute_template("timeline", {"timeline_paths": 3}, tmp_path)
