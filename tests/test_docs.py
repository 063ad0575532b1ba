"""The project's docs/ say what the code does (issue 16, point 4).

- docs/rules.md is generated from kprof's rule registry (:func:`kprof.explain.rules_markdown`): it is
  regenerated here and must be identical.
- docs/workflow.md: every ``console`` block's command is run and each quoted line must be what kprof
  prints; its Python block runs.
- docs/schema/*.json: every sample's ``kprof diagnose --json`` and every sample pair's ``kprof compare
  --json`` validate; the schemas list exactly the fields of the result classes; docs/json-schema.md
  describes each field.
- README.md, docs/ and kprof's docstrings point at no file a user does not have.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kprof.comparison_model import Comparison, ComparisonVerdict, ExpectationCheck
from kprof.explain import rules_markdown
from kprof.model import (
    Bottleneck,
    Confidence,
    Diagnosis,
    Evidence,
    Expectation,
    Finding,
    SourceLine,
    Subject,
    SubjectKind,
    Verdict,
)

from .conftest import CORPUS, REPO, SAMPLES

DOCS = REPO / "docs"


# ------------------------------------------------------------------------------------------ rules.md


def test_rules_md_is_what_the_registry_generates() -> None:
    on_disk = (DOCS / "rules.md").read_text(encoding="utf-8")
    assert on_disk == rules_markdown(), (
        "docs/rules.md is out of date with kprof/explain.py or kprof/thresholds.py: "
        "regenerate it with `kprof explain --markdown > docs/rules.md`"
    )


def test_constructs_md_is_what_the_idiom_table_generates() -> None:
    from kprof.knowledge.constructs import IDIOMS, constructs_markdown

    on_disk = (DOCS / "constructs.md").read_text(encoding="utf-8")
    assert on_disk == constructs_markdown() + "\n", (
        "docs/constructs.md is out of date with kprof/knowledge/constructs.py: regenerate it with "
        "`python -c 'from kprof.knowledge.constructs import constructs_markdown; print(constructs_markdown())' "
        "> docs/constructs.md`"
    )
    for idiom in IDIOMS:
        assert f"## {idiom}: " in on_disk


def test_rules_md_quotes_every_id_and_threshold_value() -> None:
    from kprof import thresholds as th
    from kprof.explain import explain

    text = (DOCS / "rules.md").read_text(encoding="utf-8")
    for b in Bottleneck:
        assert f"### {b.value}\n" in text
        for t in explain(b).thresholds:
            assert f"| `{t.name}` | `{getattr(th, t.name)!r}` |" in text


def test_cli_writes_the_page() -> None:
    r = _kprof("explain --markdown")
    assert r.returncode == 0, r.stderr
    assert r.stdout == rules_markdown()


# ------------------------------------------------------------------------------------------ workflow.md


def _kprof(args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "kprof", *shlex.split(args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )


def _blocks(kind: str) -> list[list[str]]:
    text = (DOCS / "workflow.md").read_text(encoding="utf-8")
    return [m.group(1).splitlines() for m in re.finditer(rf"```{kind}\n(.*?)```", text, re.S)]


def excerpt_matches(quoted: list[str], printed: list[str]) -> str | None:
    """None when ``quoted`` is an excerpt of ``printed``, else what does not match.

    The excerpt's runs of lines between ``...`` lines appear in ``printed`` in order, each run as
    consecutive lines, the first run at the first line; a quoted line ending in ``...`` is the start
    of the printed one.
    """
    runs: list[list[str]] = [[]]
    for line in quoted:
        if line.strip() == "...":
            runs.append([])
        else:
            runs[-1].append(line)

    def same(q: str, p: str) -> bool:
        return p.startswith(q[:-3]) if q.endswith("...") else p == q

    def at(s: int, run: list[str]) -> bool:
        return s + len(run) <= len(printed) and all(
            same(q, p) for q, p in zip(run, printed[s : s + len(run)], strict=True)
        )

    pos = 0
    for i, run in enumerate(runs):
        if not run:
            continue
        starts = [0] if i == 0 else range(pos, len(printed) - len(run) + 1)
        found = next((s for s in starts if at(s, run)), None)
        if found is None:
            return f"not printed{' first' if i == 0 else ' after the previous lines'}: {run[0]!r}"
        pos = found + len(run)
    return None


def test_the_excerpt_matcher() -> None:
    printed = ["[fix] a: b", "  file: x", "  headline", "  evidence:", "    - m: 1", "  fix: do it now"]
    assert excerpt_matches(["[fix] a: b", "  file: x", "...", "  fix: do ..."], printed) is None
    assert excerpt_matches(["  file: x"], printed) is not None  # the first run starts the output
    assert excerpt_matches(["[fix] a: b", "  headline"], printed) is not None  # a gap needs "..."
    assert excerpt_matches(["[fix] a: b", "...", "  fix: do it", "...", "  headline"], printed) is not None


CONSOLE = _blocks("console")


@pytest.mark.slow
@pytest.mark.parametrize("block", CONSOLE, ids=[b[0][:70] for b in CONSOLE])
def test_workflow_command_prints_what_the_page_quotes(block: list[str]) -> None:
    if not (SAMPLES / "manifest.json").exists():
        pytest.skip("no sample gallery")
    if ".ncu-rep" in block[0]:
        pytest.importorskip("ncu_report")
    command = block[0]
    assert command.startswith("$ kprof "), command
    r = _kprof(command.removeprefix("$ kprof "))
    assert r.returncode == 0, r.stderr
    problem = excerpt_matches(block[1:], r.stdout.splitlines())
    assert problem is None, f"docs/workflow.md, `{command}`: {problem}"


def test_workflow_has_each_step() -> None:
    commands = [b[0] for b in CONSOLE]
    assert any(".sqlite" in c and "diagnose" in c for c in commands)  # step 1
    assert any(".ncu-rep" in c and "diagnose" in c for c in commands)  # steps 2 and 3
    assert sum("compare" in c for c in commands) >= 2  # check the fix, kernel and timeline


@pytest.mark.slow
def test_workflow_python_runs() -> None:
    pytest.importorskip("ncu_report")
    (code,) = _blocks("python")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [sys.executable, "-c", "\n".join(code)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "sectors per request" in r.stdout


# ------------------------------------------------------------------------------------------ JSON schema


def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    d = json.loads((DOCS / "schema" / "diagnosis.schema.json").read_text())
    c = json.loads((DOCS / "schema" / "comparison.schema.json").read_text())
    return d, c


def _validator(schema: dict[str, Any]) -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    referencing = pytest.importorskip("referencing")
    d, c = _schemas()
    registry = referencing.Registry().with_resources(
        (s["$id"], referencing.Resource.from_contents(s)) for s in (d, c)
    )
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _errors(validator: Any, doc: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(doc)]


def _cli_json(*args: str) -> tuple[int, Any]:
    from kprof.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(list(args))
    return rc, json.loads(out.getvalue())


def _profiles(folder: Path) -> list[Path]:
    suffixes = (".ncu-rep", ".ncu-rep.gz", ".sqlite", ".sqlite.gz", ".json.gz", ".csv")
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(suffixes))


@pytest.mark.slow
def test_every_sample_and_corpus_diagnosis_validates() -> None:
    pytest.importorskip("ncu_report")
    if not (SAMPLES / "manifest.json").exists():
        pytest.skip("no sample gallery")
    v = _validator(_schemas()[0])
    paths = _profiles(SAMPLES) + (_profiles(CORPUS) if CORPUS.is_dir() else [])
    checked = 0
    verdicts: set[str] = set()
    for p in paths:
        with contextlib.redirect_stderr(io.StringIO()):
            rc, doc = _cli_json("diagnose", "--json", str(p))
        if rc == 2 and not doc["diagnoses"]:
            continue  # a file kprof refuses (it says why on stderr): nothing to validate
        assert rc == 0, p
        assert _errors(v, doc) == [], p
        checked += len(doc["diagnoses"])
        verdicts |= {d["verdict"] for d in doc["diagnoses"]}
    assert checked >= 50
    # each branch of the schema met real data; the shipped samples are all fix or healthy, the
    # corpus's partial and damaged reports bring the inconclusive branch (absent on a fresh clone)
    assert verdicts == {"fix", "healthy"} | ({"inconclusive"} if CORPUS.is_dir() else set())


def _pairs() -> list[tuple[Path, Path]]:
    if not (SAMPLES / "manifest.json").exists():
        return []
    files = json.loads((SAMPLES / "manifest.json").read_text())["files"]
    by: dict[tuple[str, str], dict[str, Path]] = {}
    for f in files:
        if f.get("pair"):
            key = (f["pair"]["name"], f["kind"])
            by.setdefault(key, {})[f["pair"]["role"]] = SAMPLES / f["file"]
    return [(v["before"], v["after"]) for v in by.values() if {"before", "after"} <= set(v)]


@pytest.mark.slow
def test_every_sample_pair_comparison_validates() -> None:
    pytest.importorskip("ncu_report")
    pairs = [(b, a) for b, a in _pairs() if not b.name.endswith(".nsys-rep")]  # .nsys-rep needs nsys
    if not pairs:
        pytest.skip("no sample pairs")
    v = _validator(_schemas()[1])
    verdicts = set()
    for b, a in pairs:
        rc, doc = _cli_json("compare", "--json", str(b), str(a))
        assert rc == 0, (b, a)
        assert _errors(v, doc) == [], (b, a)
        verdicts |= {c["verdict"] for c in doc["comparisons"]}
    assert "improved" in verdicts


def test_the_schemas_reject_what_kprof_never_prints() -> None:
    d, _ = _schemas()
    v = _validator(d)
    good = {
        "diagnoses": [
            Diagnosis(
                subject=Subject(kind=SubjectKind.CAPTURE, name="x.sqlite"),
                bottleneck=Bottleneck.GPU_BOUND,
                verdict=Verdict.HEALTHY,
                headline="h",
            ).to_dict()
        ]
    }
    assert _errors(v, good) == []
    no_id = json.loads(json.dumps(good))
    no_id["diagnoses"][0]["bottleneck"] = None  # only an inconclusive diagnosis may lack an id
    assert _errors(v, no_id)
    extra = json.loads(json.dumps(good))
    extra["diagnoses"][0]["surprise"] = 1
    assert _errors(v, extra)
    vague = json.loads(json.dumps(good))
    vague["diagnoses"][0].update(verdict="inconclusive", next_step="")  # must say what would settle it
    assert _errors(v, vague)


SCHEMA_CLASSES = {
    ("diagnosis", "diagnosis"): Diagnosis,
    ("diagnosis", "subject"): Subject,
    ("diagnosis", "evidence"): Evidence,
    ("diagnosis", "expectation"): Expectation,
    ("diagnosis", "confidence"): Confidence,
    ("diagnosis", "finding"): Finding,
    ("diagnosis", "source_line"): SourceLine,
    ("comparison", "comparison"): Comparison,
    ("comparison", "expectation_check"): ExpectationCheck,
}


@pytest.mark.parametrize(("schema", "name"), list(SCHEMA_CLASSES))
def test_the_schemas_have_the_fields_of_the_classes(schema: str, name: str) -> None:
    d, c = _schemas()
    props = ({"diagnosis": d, "comparison": c}[schema])["$defs"][name]["properties"]
    fields = [f.name for f in dataclasses.fields(SCHEMA_CLASSES[(schema, name)])]
    assert set(props) == set(fields), f"docs/schema/{schema}.schema.json, {name}: update it to the class"


def test_the_schemas_enums_are_the_vocabulary() -> None:
    d, c = _schemas()
    diag = d["$defs"]["diagnosis"]["properties"]
    assert diag["bottleneck"]["enum"] == [b.value for b in Bottleneck] + [None]
    assert d["$defs"]["finding"]["properties"]["bottleneck"]["enum"] == [b.value for b in Bottleneck]
    assert diag["verdict"]["enum"] == [v.value for v in Verdict]
    assert d["$defs"]["subject"]["properties"]["kind"]["enum"] == [k.value for k in SubjectKind]
    assert c["$defs"]["comparison"]["properties"]["verdict"]["enum"] == [v.value for v in ComparisonVerdict]


def test_json_schema_md_describes_every_field() -> None:
    text = (DOCS / "json-schema.md").read_text(encoding="utf-8")
    d, c = _schemas()
    for schema in (d, c):
        for name, sub in schema["$defs"].items():
            heading = "### " + name.replace("_", " ")
            assert heading in text, f"docs/json-schema.md has no section {heading!r}"
            section = text.split(heading, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
            for prop in sub["properties"]:
                assert f"| `{prop}` |" in section, f"docs/json-schema.md, {name}: describe `{prop}`"


# ------------------------------------------------------------------------------------------ pointers


FORBIDDEN = (
    (re.compile(r"DESIGN\.md"), "DESIGN.md is not in the project: point at docs/"),
    (re.compile(r"\.\./shared"), "../shared is not in the project: point at docs/ or data/samples/"),
    (re.compile(r"steering repo"), "users have no steering repo: point at docs/"),
)


def _user_facing() -> list[Path]:
    return [
        REPO / "README.md",
        SAMPLES / "README.md",
        *sorted(p for p in DOCS.rglob("*.md") if "review" not in p.parts),  # docs/review: a dated review
        *sorted((REPO / "kprof").rglob("*.py")),
        *sorted((REPO / "kprof" / "templates").glob("*.ipynb")),
    ]


def test_nothing_points_at_files_users_do_not_have() -> None:
    bad = []
    for p in _user_facing():
        if not p.exists():
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            for pattern, why in FORBIDDEN:
                if pattern.search(line):
                    bad.append(f"{p.relative_to(REPO)}:{n}: {why}")
    assert not bad, "\n".join(bad)


def test_docs_links_resolve() -> None:
    for p in [REPO / "README.md", *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", p.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (p.parent / target).exists(), f"{p.relative_to(REPO)}: link to {target} does not resolve"
