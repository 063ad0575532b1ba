"""Profiles are untrusted input: their strings must not become markup, shell commands or terminal control.

- HTML (the rich reprs and the exported report) escapes every string that comes from a profile:
  kernel names, NVTX text, process names, file names.
- JSON carries them exactly; the suggested commands (``ncu -k 'regex:...'``) quote them for the shell.
- Notebook parameters carry paths with quotes, backslashes and newlines exactly.
- No ``shell=True``, ``os.system``, ``eval`` or ``exec`` in kprof; subprocesses get argument lists.
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import shlex
from pathlib import Path

import pytest

import kprof
from kprof.cli import main
from kprof.html import heading, kernel_profile_mimebundle, overview, timeline_mimebundle
from tests.reliability.crafted import ESCAPE, KERNEL, NVTX, PROCESS, XSS_KERNEL, hostile_nsys_export
from tests.reliability.inputs import NCU_DETAILS_CSV
from tests.reliability.runner import REPO

RAW = (XSS_KERNEL, "<img src=x", "<script>alert", PROCESS, NVTX)
"""What must never appear in HTML made from the crafted profiles (escaped forms are fine)."""


def assert_no_raw_markup(doc: str, where: str) -> None:
    for bad in RAW:
        assert bad not in doc, (
            f"{where}: raw {bad!r} at {doc.find(bad)}: ...{doc[max(0, doc.find(bad) - 120) : doc.find(bad) + 60]!r}"
        )


@pytest.fixture(scope="module")
def hostile_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_nsys_export(tmp_path_factory.mktemp("hostile-nsys") / "export.sqlite")


@pytest.fixture(scope="module")
def hostile_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The details CSV sample with the kernel renamed and a process name of markup."""
    import csv
    import io

    rows = list(csv.reader(io.StringIO(NCU_DETAILS_CSV.read_text(encoding="utf-8"))))
    col = {h: i for i, h in enumerate(rows[0])}
    for r in rows[1:]:
        if len(r) > col["Process Name"]:
            r[col["Kernel Name"]] = KERNEL
            r[col["Process Name"]] = PROCESS
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    p = tmp_path_factory.mktemp("hostile-csv") / "k <b>.csv"
    p.write_text(out.getvalue(), encoding="utf-8")
    return p


def _profiles(hostile_trace: Path, hostile_export: Path, hostile_csv: Path) -> list[Path]:
    return [hostile_trace, hostile_export, hostile_csv]


# ----------------------------------------------------------------------------- HTML


def test_rich_reprs_escape_profile_strings(
    hostile_trace: Path, hostile_export: Path, hostile_csv: Path
) -> None:
    seen_escaped = False
    for p in _profiles(hostile_trace, hostile_export, hostile_csv):
        obj = kprof.load(p)
        bundle = kernel_profile_mimebundle(obj) if hasattr(obj, "launches") else timeline_mimebundle(obj)  # type: ignore[arg-type]
        assert_no_raw_markup(bundle["text/html"], f"repr of {p.name}")
        diags = kprof.diagnose(obj)
        for d in diags:
            h = d.to_html()
            assert_no_raw_markup(h, f"diagnosis of {p.name}")
            assert_no_raw_markup(d._repr_mimebundle_()["text/html"], f"mimebundle of {p.name}")
            seen_escaped |= html.escape(XSS_KERNEL) in h
        assert_no_raw_markup(overview(diags, title=str(p)).html, f"overview of {p.name}")
        assert_no_raw_markup(heading(str(p), note=PROCESS).html, "heading")
    assert seen_escaped, "no diagnosis showed the kernel name at all: the escaping was not exercised"


def test_report_escapes_profile_strings(parallel_reports: dict) -> None:
    for key in ("same", "other"):
        doc = Path(parallel_reports[key]).read_text(encoding="utf-8")
        assert_no_raw_markup(doc, f"report {key}.html")
        assert html.escape(XSS_KERNEL) in doc or html.escape(XSS_KERNEL, quote=False) in doc, (
            "the kernel name is not in the report: the escaping was not exercised"
        )


def test_no_shell_ran_with_a_path_or_name(parallel_reports: dict, hostile_dir: Path) -> None:
    """The inputs' folder is named ``in $(touch PWNED) ...`` and the kernel ``...$(touch PWNED)...``:
    nothing may have created a PWNED file (in the repository, the inputs' folder or its parent)."""
    for d in (REPO, hostile_dir, hostile_dir.parent, Path.cwd()):
        assert not list(d.glob("PWNED*")), f"a shell ran a profile string in {d}"


# ----------------------------------------------------------------------------- JSON, text, commands


def _diagnose_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["diagnose", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_carries_profile_strings_exactly(
    capsys: pytest.CaptureFixture[str], hostile_trace: Path, hostile_export: Path
) -> None:
    rc, out, _ = _diagnose_cli(capsys, "--json", str(hostile_trace), str(hostile_export))
    assert rc == 0
    doc = json.loads(out)
    text = json.dumps(doc, ensure_ascii=False)
    assert XSS_KERNEL in text  # carried exactly (a JSON consumer must escape it itself)
    assert {d["file"] for d in doc["diagnoses"]} == {str(hostile_trace), str(hostile_export)}


def test_text_output_holds_no_terminal_control_characters(
    capsys: pytest.CaptureFixture[str], hostile_export: Path
) -> None:
    rc, out, err = _diagnose_cli(capsys, str(hostile_export))
    assert rc == 0
    bad = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out + err)
    assert not bad, f"control characters in the text output: {sorted(set(bad))}"


def test_error_lines_hold_no_terminal_control_characters(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    p = tmp_path / f"x{ESCAPE}\nname.json"
    p.write_bytes(b"")
    rc, _out, err = _diagnose_cli(capsys, str(p))
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert not re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", err), repr(err)


def test_suggested_ncu_command_quotes_the_kernel_name(hostile_export: Path) -> None:
    d = kprof.diagnose(hostile_export)[0]
    m = re.search(r"`(ncu\s(?:[^`']|'[^']*')*)`", d.next_step or "")  # in backticks, quotes kept whole
    assert m, d.next_step
    argv = shlex.split(m.group(1))
    k = argv[argv.index("-k") + 1]
    assert k.startswith("regex:") and "touch PWNED" in k, k  # one word: the name did not break out
    assert "touch" not in argv and "PWNED)'" not in argv, argv
    o = argv[argv.index("-o") + 1]
    assert os.path.dirname(o) == os.path.dirname(str(hostile_export)), o  # beside the diagnosed capture
    assert argv[argv.index("-o") + 2 :] == [PROCESS], argv  # the recorded program: one word, quoted
    assert re.fullmatch(r"[\w.\-]+", os.path.basename(o)), (
        f"output name {o!r} holds characters a shell or file system would misread"
    )


# ----------------------------------------------------------------------------- notebook parameters

NASTY_PATHS = [
    '/tmp/a b/it\'s "q".sqlite',
    '/tmp/"""; import os; os.system("touch PWNED"); """.json',
    "/tmp/back\\slash\\n.json",
    "/tmp/new\nline.json",
    "/tmp/$(touch PWNED)`x`.json",
    "/tmp/üñí €.json",
]


def test_notebook_parameters_carry_paths_exactly() -> None:
    from papermill.translators import translate_parameters

    from kprof.report import Inputs, stage_parameters

    inputs = Inputs(tuple(NASTY_PATHS[:3]), tuple(NASTY_PATHS[3:]), ((NASTY_PATHS[3], NASTY_PATHS[4]),))
    for stage in ("timeline", "kernel", "mechanism"):
        params = stage_parameters(stage, inputs)
        code = translate_parameters("python3", "python", params, "Parameters")
        ns: dict = {}
        exec(compile(code, "<injected-parameters>", "exec"), {"__builtins__": {}}, ns)  # no builtins: no os
        assert {k: ns[k] for k in params} == params, code


# ----------------------------------------------------------------------------- the source

_SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
}
_PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}
ALLOWED = {
    (
        "kprof/io/ncu_reader.py",
        "pickle.load",
    ): "reads the result its own reader process wrote, never a user file",
    (
        "kprof/io/ncu_cache.py",
        "pickle.load",
    ): "reads an entry of the read-report cache only when this user owns it and its folder and nobody else can write either",
}


def _violations(path: Path, tree: ast.AST) -> list[str]:
    rel = str(path.relative_to(REPO))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = (
            f"{f.value.id}.{f.attr}"
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            else (f.id if isinstance(f, ast.Name) else "")
        )
        where = f"{rel}:{node.lineno}"
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                out.append(f"{where}: {name or 'a call'}(..., shell=...)")
        if name in ("eval", "exec"):
            out.append(f"{where}: {name}()")
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and (f.value.id, f.attr) in _SHELL_CALLS
        ):
            out.append(f"{where}: {name}() runs a shell")
        if (
            name in ("pickle.load", "pickle.loads", "marshal.loads", "yaml.load")
            and (rel, name) not in ALLOWED
        ):
            out.append(f"{where}: {name}() of data that may come from a user")
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "subprocess"
            and f.attr in _PROCESS_CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr | ast.BinOp)
        ):
            out.append(f"{where}: subprocess.{f.attr} with a command string, not an argument list")
    return out


def test_no_shell_eval_or_command_strings_in_kprof() -> None:
    found = []
    for path in sorted((REPO / "kprof").rglob("*.py")):
        found += _violations(path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    assert not found, "\n".join(found)


def test_template_notebooks_run_no_shell() -> None:
    found = []
    for nb_path in sorted((REPO / "kprof" / "templates").glob("*.ipynb")):
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb.get("cells", [])):
            if cell.get("cell_type") != "code":
                continue
            src = "".join(cell.get("source", []))
            for line in src.splitlines():
                if line.lstrip().startswith(("!", "%%bash", "%%sh", "%system", "%sx")):
                    found.append(f"{nb_path.name} cell {i}: {line.strip()}")
            code = "\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("%", "!")))
            found += [
                f"{nb_path.name} cell {i}: {v.split(': ', 1)[1]}"
                for v in _violations(nb_path, ast.parse(code))
            ]
    assert not found, "\n".join(found)
