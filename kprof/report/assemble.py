"""The executed notebooks made into one report: the header with every verdict, the sections numbered,
what cannot be read offline dropped, exported as one self-contained HTML page and written atomically."""

from __future__ import annotations

import contextlib
import datetime
import html as htmllib
import os
import re
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.lifetime import hold
from kprof.outputs import give_permissions
from kprof.report.views import DIAGNOSES_MIME, WIDGET_VIEW_MIME

if TYPE_CHECKING:
    from kprof.report.inputs import Inputs


def _collect_diagnoses(nb: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if DIAGNOSES_MIME in data:
                found.extend(data[DIAGNOSES_MIME].get("diagnoses", []))
    return found


def _clean_outputs(nb: Any, show_code: bool) -> Any:
    """Drop what cannot be read offline: widget views (their static HTML stays), widget state,
    the diagnoses carrier, papermill's parameter cells (kept with ``show_code``), and the cells
    tagged ``report-skip`` (what the report's header already says)."""
    nb.metadata.pop("widgets", None)
    cells = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if not show_code and ("parameters" in tags or "injected-parameters" in tags):
            continue
        if "report-skip" in tags:  # a notebook's own verdict table: the report's header has them all
            continue
        if cell.get("cell_type") == "code":
            outputs = []
            for o in cell.get("outputs", []):
                data = o.get("data")
                if data is not None:
                    data.pop(DIAGNOSES_MIME, None)
                    had_widget = data.pop(WIDGET_VIEW_MIME, None) is not None
                    if not data or (had_widget and set(data) <= {"text/plain"}):
                        continue
                    if set(data) == {"text/plain"} and not str(data["text/plain"]).strip():
                        continue
                outputs.append(o)
            cell["outputs"] = outputs
        cells.append(cell)
    nb.cells = cells
    return nb


_SECTION = re.compile(r"^# (?:\d+[a-z]?\. )?(?P<title>.*)$")


def _number_sections(cells: list[Any]) -> list[str]:
    """Number the templates' titles (their ``# `` headings) 1, 2, 3... in the order shown; returns them."""
    titles: list[str] = []
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        first, _, rest = str(cell["source"]).partition("\n")
        m = _SECTION.match(first)
        if m:
            titles.append(f"{len(titles) + 1}. {m['title']}")
            cell["source"] = f"# {titles[-1]}" + (f"\n{rest}" if rest else "")
    return titles


def _header_cells(inputs: Inputs, diagnoses: list[dict[str, Any]], titles: list[str]) -> list[Any]:
    import nbformat

    from kprof.html import heading, overview
    from kprof.model import Diagnosis

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    intro = (
        "# kprof report\n\n"
        "Why is this GPU code slow, and what should change? Read in the order kprof works: "
        "**timeline first** (is the time even inside a kernel?), **kernel second** (which resource "
        "is saturated, where is the kernel on the roofline?), **mechanism third** (what in the code "
        "explains the gap to the roofline). The table below holds every verdict with its fix; each "
        "diagnosis is shown in full once, in the section of its input, with the plots that support it.\n"
    )
    diags = []
    for d in diagnoses:
        with contextlib.suppress(ValueError):
            diags.append(Diagnosis.from_dict(d))
    head = overview(diags, title="Headlines: the verdict of every input, timeline captures first", links=True)
    n_ranks = sum(len(j) for j in inputs.jobs)
    n_in = len(inputs.timelines) + len(inputs.kernels) + n_ranks
    jobs_desc = f", {n_ranks} rank capture(s) of {len(inputs.jobs)} job(s)" if inputs.jobs else ""
    note = heading(
        f"{n_in} input file{'s' if n_in != 1 else ''}: {len(inputs.timelines)} timeline capture(s){jobs_desc}, "
        f"{len(inputs.kernels)} kernel report(s). Generated {now} by kprof.",
        level=6,
    )
    out = nbformat.v4.new_code_cell(source="# kprof report header")
    out.outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": note.text, "text/html": note.html}),
        nbformat.v4.new_output("display_data", data={"text/plain": head.text, "text/html": head.html}),
    ]
    toc = "**Sections:** " + " · ".join(titles)
    return [nbformat.v4.new_markdown_cell(intro), out, nbformat.v4.new_markdown_cell(toc)]


def merge_notebooks(parts: Sequence[tuple[Any, Any]], inputs: Inputs, show_code: bool) -> Any:
    """One notebook: the header (every verdict with its fix), then each executed run, its
    sections numbered in order."""
    import nbformat

    diagnoses: list[dict[str, Any]] = []
    for _run, nb in parts:
        diagnoses.extend(_collect_diagnoses(nb))
    merged = nbformat.v4.new_notebook()
    first = parts[0][1] if parts else None
    if first is not None:
        merged.metadata.update(
            {k: v for k, v in first.metadata.items() if k in ("kernelspec", "language_info")}
        )
    merged.metadata["title"] = "kprof report"
    body: list[Any] = []
    for _run, nb in parts:
        body.extend(_clean_outputs(nb, show_code).cells)
    # a run may hold stages that are not neighbours in the workflow (timeline, job, compare): each
    # section goes back to its stage's place, in the order the stages are read
    order = {st: i for i, st in enumerate(inputs.stages())}
    body = [
        c
        for _, c in sorted(
            enumerate(body), key=lambda t: (order.get(t[1].metadata.get("kprof_stage"), -1), t[0])
        )
    ]
    titles = _number_sections(body)
    merged.cells = _header_cells(inputs, diagnoses, titles) + body
    for i, c in enumerate(merged.cells):
        c["id"] = f"kp-cell-{i}"
    return merged


def export_html(nb: Any, show_code: bool = False) -> str:
    """Export a notebook as one self-contained HTML page (no network resources needed)."""
    from nbconvert import HTMLExporter

    base = Path(str(resources.files("kprof.html").joinpath("templates", "nbconvert")))
    exporter = HTMLExporter(
        template_name="kprof",
        extra_template_basedirs=[str(base)],
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
        theme="light",
    )
    body, _ = exporter.from_notebook_node(nb)
    return unique_ids(str(body))


_ID = re.compile(r'\bid="([^"]*)"')
_HREF = re.compile(r'\bhref="#([^"]*)"')
_HEADING_END = re.compile(r"</h[1-6]>")


def unique_ids(page: str) -> str:
    """``page`` with every element id unique, and in-page links that lead somewhere.

    The notebooks of a report run in separate kernels, each counting its element ids from 1, and each
    template has its own "What next" heading: the second and later holders of an id get ``ID-2``,
    ``ID-3`` (a heading's own anchor link, up to its closing tag, follows it). A link to an id the
    page does not hold (a diagnosis the report does not show in full) loses its ``href``; a link to an
    id held twice leads to the first holder, the diagnosis's first full view.
    """
    taken = set(_ID.findall(page))
    seen: dict[str, int] = {}
    out: list[str] = []
    pos = 0
    for m in _ID.finditer(page):
        if m.start() < pos:  # inside a heading already copied
            continue
        x = m[1]
        seen[x] = seen.get(x, 0) + 1
        if seen[x] == 1:
            continue
        n = seen[x]
        new = f"{x}-{n}"
        while new in taken:
            n += 1
            new = f"{x}-{n}"
        taken.add(new)
        out.append(page[pos : m.start(1)])
        out.append(new)
        pos = m.end(1)
        tag_start = page.rfind("<", 0, m.start())
        if re.match(r"<h[1-6]\b", page[tag_start : tag_start + 3]):
            end = _HEADING_END.search(page, m.end())
            if end is not None:  # nbconvert's anchor link inside the heading names it too
                inner = page[m.end(1) : end.start()].replace(f'href="#{x}"', f'href="#{new}"')
                out.append(inner)
                pos = end.start()
    out.append(page[pos:])
    page = "".join(out)
    ids = set(_ID.findall(page))
    return _HREF.sub(lambda m: m[0] if m[1] in ids else "", page)


def atomic_write(path: Path, data: str) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    hold(fd)  # owned while written: a later run removes it only once this process is gone
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        give_permissions(tmp, path)  # an earlier report keeps its mode; a new one follows the umask
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _footer(timings: list[tuple[str, float]], total: float) -> Any:
    import nbformat

    parts = ", ".join(f"{name} {dt:.1f} s" for name, dt in timings)
    html = f'<p class="kp-report-footer">Built by kprof in {total:.1f} s ({htmllib.escape(parts)}).</p>'
    cell = nbformat.v4.new_code_cell(source="# kprof report footer")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/plain": f"built in {total:.1f} s", "text/html": html}
        )
    ]
    return cell
