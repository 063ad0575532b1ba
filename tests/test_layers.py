"""kprof's layers do not loop back (issue 16, point 2).

The import graph of ``kprof`` is built from the source's syntax tree: every ``import`` and
``from ... import`` anywhere in a module, inside functions included (a function-level import is
still a dependency; it only runs later). Imports under ``if TYPE_CHECKING:`` are left out: they
never run. The graph must have no cycle, and no module may import a module of a layer above its
own or a sibling layer it must not know.

The layers are those of docs/architecture.md (data flows one way: load -> model -> diagnose ->
present), lowest first:

==============  =========================================================  ==========================
layer           modules                                                    may import
==============  =========================================================  ==========================
base            errors, thresholds, knowledge, commands, lifetime          base
model           model, kernel_model, timeline_model, comparison_model      base, model
io              io.* (one loader per format)                               base, model
facts           facts.*, diagnose.{intervals, roofline, sass, language}    base, model
rules           rules.*, the other diagnose.* modules (judgements)         base, model, facts
orchestration   api, jobs, explain, capture_sass                           all of the above
presentation    html.*, plot.*                                             base, model, facts
products        report, export_trace, outputs                              all but interface
interface       kprof (the package), cli, capture, mcp_server, __main__    everything
==============  =========================================================  ==========================

So loaders never diagnose, diagnoses never load files, print or render, the model knows no
renderer (the package installs kprof.html behind :mod:`kprof.renderers`), and plots and HTML never
import a judgement.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "kprof"

LAYERS: dict[str, tuple[str, ...]] = {
    "base": (
        "kprof.errors",
        "kprof.thresholds",
        "kprof.knowledge",
        "kprof.commands",
        "kprof.lifetime",
        "kprof._version",
    ),
    "model": (
        "kprof.model",
        "kprof.kernel_model",
        "kprof.timeline_model",
        "kprof.comparison_model",
        "kprof.renderers",
    ),
    "io": ("kprof.io",),
    "facts": (
        "kprof.diagnose.intervals",
        "kprof.diagnose.roofline",
        "kprof.diagnose.sass",
        "kprof.diagnose.language",
        "kprof.facts",
    ),
    "rules": ("kprof.diagnose", "kprof.rules"),
    "orchestration": ("kprof.api", "kprof.jobs", "kprof.explain", "kprof.capture_sass"),
    "presentation": ("kprof.html", "kprof.plot"),
    "products": ("kprof.report", "kprof.export_trace", "kprof.outputs"),
    "interface": ("kprof.cli", "kprof.capture", "kprof.mcp_server", "kprof.__main__", "kprof"),
}
"""Each layer's modules, by name prefix (the longest prefix decides: ``kprof.diagnose.sass`` is a
fact, the rest of ``kprof.diagnose`` rules, and the bare package ``kprof`` the interface)."""

MAY_IMPORT: dict[str, frozenset[str]] = {
    "base": frozenset({"base"}),
    "model": frozenset({"base", "model"}),
    "io": frozenset({"base", "model", "io"}),
    "facts": frozenset({"base", "model", "facts"}),
    "rules": frozenset({"base", "model", "facts", "rules"}),
    "orchestration": frozenset({"base", "model", "io", "facts", "rules", "orchestration"}),
    "presentation": frozenset({"base", "model", "facts", "presentation"}),
    "products": frozenset(
        {"base", "model", "io", "facts", "rules", "orchestration", "presentation", "products"}
    ),
    "interface": frozenset(LAYERS),
}

PENDING: dict[tuple[str, str], str] = {
    ("kprof.plot.job", "kprof.diagnose.job"): (
        "job_stats/RankSummary are facts that live in the job rules; they move to a facts module when "
        "the rules move into their own modules (issue 16, point 1)"
    ),
}
"""Edges that break the layering today, each with the change that removes it. The test fails when one
of them disappears, so that the list only shrinks."""


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The kprof module that ``import name`` loads last (``kprof.io.ncu.load`` -> ``kprof.io.ncu``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_only(tree: ast.Module) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = (
                test.id
                if isinstance(test, ast.Name)
                else test.attr
                if isinstance(test, ast.Attribute)
                else ""
            )
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skip.update(id(n) for n in ast.walk(child))
    return skip


def imports_of(module: str) -> Iterator[tuple[str, int]]:
    """``(imported kprof module, line)`` for every import in ``module``'s source, functions included."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _type_checking_only(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target:
                    yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            for alias in node.names:  # `from kprof import thresholds` imports the module kprof.thresholds
                full = f"{name}.{alias.name}"
                target = full if full in MODULES else _resolve(name)
                if target:
                    yield target, node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}, without self-imports."""
    graph: dict[str, dict[str, int]] = {}
    for m in MODULES:
        edges: dict[str, int] = {}
        for target, line in imports_of(m):
            if target != m:
                edges.setdefault(target, line)
        graph[m] = edges
    return graph


GRAPH = import_graph()


def layer_of(module: str) -> str:
    best, best_len = None, -1
    for layer, prefixes in LAYERS.items():
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = layer, len(p)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def violations(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], str]:
    out = {}
    for m, edges in graph.items():
        lm = layer_of(m)
        for t, line in edges.items():
            lt = layer_of(t)
            if lt not in MAY_IMPORT[lm]:
                out[(m, t)] = f"{MODULES[m].relative_to(PKG.parent)}:{line}: {m} ({lm}) imports {t} ({lt})"
    return out


# ------------------------------------------------------------------------------------------- tests


def test_every_module_has_a_layer() -> None:
    for m in MODULES:
        layer_of(m)


def test_no_import_cycle() -> None:
    found = cycles(GRAPH)
    detail = []
    for comp in found:
        members = set(comp)
        edges = [f"{a} -> {b}" for a in comp for b in GRAPH[a] if b in members]
        detail.append(", ".join(edges))
    assert not found, "import cycles in kprof:\n" + "\n".join(detail)


def test_no_import_against_the_layers() -> None:
    bad = {e: why for e, why in violations(GRAPH).items() if e not in PENDING}
    assert not bad, "imports against the layers (see this module's docstring):\n" + "\n".join(
        sorted(bad.values())
    )


def test_pending_exceptions_still_exist() -> None:
    gone = [f"{a} -> {b}" for (a, b) in PENDING if (a, b) not in violations(GRAPH)]
    assert not gone, f"no longer imported, remove from PENDING: {gone}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import kprof.html\n", {"kprof.html"}),
        ("def f():\n    from kprof.html import render_text\n", {"kprof.html"}),
        ("from kprof import thresholds as th\n", {"kprof.thresholds"}),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kprof.html import css\n", set()),
        ("from . import roofline\n", {"kprof.diagnose.roofline"}),
    ],
)
def test_the_graph_sees_every_kind_of_import(
    source: str, expected: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker itself: function-level and relative imports count, TYPE_CHECKING ones do not."""
    fake = tmp_path / "probe.py"
    fake.write_text(source)
    monkeypatch.setitem(MODULES, "kprof.diagnose.probe", fake)
    assert {t for t, _ in imports_of("kprof.diagnose.probe")} == expected


def test_a_model_to_renderer_edge_would_be_caught() -> None:
    """The layer check fails on the edge this issue removed (model -> html) and on a cycle."""
    graph = {m: dict(e) for m, e in GRAPH.items()}
    graph["kprof.model"]["kprof.html"] = 1
    assert ("kprof.model", "kprof.html") in violations(graph)
    graph["kprof.html"]["kprof.model"] = 1
    assert any({"kprof.model", "kprof.html"} <= set(c) for c in cycles(graph))


IO_CALLS = {"print", "open", "input", "breakpoint"}
IO_ATTRIBUTES = {"read_text", "read_bytes", "write_text", "write_bytes", "stdout", "stderr", "environ"}
IO_MODULES = {"subprocess", "shutil", "tempfile", "sqlite3", "socket", "urllib", "http"}


def io_in(module: str) -> list[str]:
    """Reading files, printing, the environment or other processes in ``module``'s source, as ``line: what``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IO_CALLS:
            found.append(f"{node.lineno}: {node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr in IO_ATTRIBUTES:
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{node.lineno}: import {n}" for n in names if n.split(".")[0] in IO_MODULES]
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) in ("facts", "rules")))
def test_diagnoses_never_read_files_print_or_run_processes(module: str) -> None:
    """Diagnoses never print, plot or read files: judgements take loaded data and return results."""
    assert io_in(module) == [], f"{MODULES[module].relative_to(PKG.parent)}: {io_in(module)}"


def test_the_io_check_sees_a_print() -> None:
    assert io_in("kprof.cli") != []  # the interface prints; the check would see it in a rule
