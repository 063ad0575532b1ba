"""README's quickstart: the two commands do all the set-up, and what they write stays out of git."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README's Quickstart has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def steps(command: str) -> list[list[str]]:
    return [shlex.split(part) for part in command.split("&&")]


def test_quickstart_is_two_commands_that_start_in_a_virtual_environment() -> None:
    cmds = quickstart_commands()
    assert len(cmds) == 2
    first, second = (steps(c) for c in cmds)
    # Debian's and Ubuntu's system Python refuse `pip install` (externally-managed-environment):
    # the first command makes and activates a venv before pip runs, the second activates it again
    assert first[0][:3] == ["python3", "-m", "venv"]
    venv = first[0][3]
    for cmd in (first, second):
        pip_at = next(i for i, s in enumerate(cmd) if s[0] == "pip")
        act = [i for i, s in enumerate(cmd) if s[0] in (".", "source") and s[1] == f"{venv}/bin/activate"]
        assert act and act[0] < pip_at, f"no `. {venv}/bin/activate` before pip in {cmd}"
    assert first[-1][:2] == ["kprof", "report"] and second[-1] == ["pytest"]


def test_what_the_quickstart_writes_is_git_ignored() -> None:
    first = steps(quickstart_commands()[0])
    report = first[-1][first[-1].index("-o") + 1]
    venv = first[0][3]
    if shutil.which("git") is None or not (REPO / ".git").exists():
        ignored = (REPO / ".gitignore").read_text().split()
        assert f"/{report}" in ignored or report in ignored
        return
    for path in (report, f"{venv}/bin/python"):
        r = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO, capture_output=True)
        assert r.returncode == 0, f"{path} is not git-ignored"
    # ... but only at the top: a report.html elsewhere (a template's example output) is not hidden
    r = subprocess.run(["git", "check-ignore", "-q", f"notebooks/{report}"], cwd=REPO)
    assert r.returncode == 1


@pytest.mark.parametrize("cmd", [0, 1])
def test_quickstart_extras_exist(cmd: int) -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    for step in steps(quickstart_commands()[cmd]):
        for arg in step:
            m = re.fullmatch(r"\.\[(\w+)\]", arg)
            if m:
                assert re.search(rf"^{m.group(1)} = \[", pyproject, re.M), f"no extra {m.group(1)!r}"
