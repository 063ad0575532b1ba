"""Bad inputs: each one is refused with exit 2 and one line naming the file (CLI) or a KprofError
(library), or, where the damage cannot be seen or the odd value is legal, diagnosed; never a
traceback, a crash of the Python process or a hang.

The inputs are built from the samples in a temporary folder (tests/reliability/inputs.py) and run in
a child process (tests/reliability/runner.py), so that a segfault or a hang fails its case only.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kprof
from kprof.errors import KprofError, KprofInputError, printable
from tests.reliability.checks import build_and_run, case_params, check_outcome
from tests.reliability.inputs import (
    KINETO_GZ,
    NCU_DETAILS_CSV,
    NCU_REP,
    NSYS_SQLITE,
    Case,
    bad_input_cases,
)
from tests.reliability.runner import REPO, child_env

CASES = bad_input_cases()

# Failures in files this suite does not own: strict xfails, each with what happens now.
XFAIL: dict[str, str] = {}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_and_run(CASES, tmp_path_factory.mktemp("bad-inputs"))


@pytest.mark.parametrize("case", case_params(CASES, XFAIL))
def test_bad_input(case: Case, outcomes: dict[str, Any]) -> None:
    path, r = outcomes[case.id]
    check_outcome(case, path, r)


# ----------------------------------------------------------------------------- the real command line


def _cli(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kprof", *args],
        cwd=REPO,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_one_line_per_bad_file_in_one_run(outcomes: dict[str, Any], tmp_path: Path) -> None:
    """``kprof diagnose BAD1 BAD2 ...`` in a real process: exit 2, one line per file, in order."""
    bad = [path for c in CASES if c.expect == "bad" for path in [outcomes[c.id][0]]]
    r = _cli("diagnose", *bad, KPROF_CACHE_DIR=str(tmp_path))
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.splitlines()
    assert "Traceback" not in r.stderr
    assert len(lines) == len(bad), "\n".join(lines)
    for path, line in zip(bad, lines, strict=True):
        assert line.startswith(f"kprof: error: {printable(path)}: "), line
    assert r.stdout == ""


def test_json_output_stays_valid_with_bad_files(outcomes: dict[str, Any], tmp_path: Path) -> None:
    good = str(NSYS_SQLITE)
    bad = [outcomes["empty.json"][0], outcomes["random-nvr.ncu-rep"][0], outcomes["dir.sqlite"][0]]
    r = _cli("diagnose", "--json", good, *bad, KPROF_CACHE_DIR=str(tmp_path))
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert [d["file"] for d in doc["diagnoses"]][:1] == [good]
    assert len(r.stderr.splitlines()) == 3 and "Traceback" not in r.stderr


def test_no_arguments_and_unknown_options_exit_2() -> None:
    for args in (["diagnose"], ["diagnose", "--no-such-option", "x"], ["no-such-command"]):
        r = _cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


# ----------------------------------------------------------------------------- read permission


def _copies(d: Path) -> list[Path]:
    out = []
    for src in (NSYS_SQLITE, KINETO_GZ, NCU_REP, NCU_DETAILS_CSV):
        dst = d / src.name
        shutil.copyfile(src, dst)
        out.append(dst)
    return out


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file; the simulated tests below cover it")
def test_unreadable_file_real(tmp_path: Path) -> None:
    paths = _copies(tmp_path)
    for p in paths:
        p.chmod(0)
    r = _cli("diagnose", *map(str, paths))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert len(lines) == len(paths) and all("permission denied" in ln for ln in lines), lines


def test_unreadable_file_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """os.access says no (as for a chmod 000 file of another user): a one-line KprofInputError."""
    paths = _copies(tmp_path)
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: False if Path(p).parent == tmp_path else real_access(p, mode)
    )
    for p in paths:
        with pytest.raises(KprofInputError, match="permission denied") as ei:
            kprof.diagnose(p)
        assert str(ei.value).startswith(str(p)) and "\n" not in str(ei.value)


def test_permission_lost_between_check_and_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file becomes unreadable after the checks (or access() lies, as on some network file
    systems): opening it raises PermissionError inside the loader, which must still be a KprofInputError."""
    monkeypatch.setenv("KPROF_NCU_ISOLATE", "0")  # the open() to fail is this process's
    paths = _copies(tmp_path)
    real_open = builtins.open
    state = {"armed": False}

    def guarded_open(file: Any, *args: Any, **kw: Any) -> Any:
        if (
            state["armed"]
            and isinstance(file, str | os.PathLike)
            and Path(os.fspath(file)).parent == tmp_path
        ):
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kw)

    real_check = kprof.io.files.check_readable_file

    def check_then_arm(path: Any) -> Path:
        p = real_check(path)
        if Path(p).parent == tmp_path:
            state["armed"] = True
        return p

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(kprof.io.files, "check_readable_file", check_then_arm)
    for p in paths:
        state["armed"] = False
        with pytest.raises(KprofError) as ei:
            kprof.load(p)
        assert isinstance(ei.value, KprofInputError), repr(ei.value)
        assert str(ei.value).startswith(str(p)) and "\n" not in str(ei.value)


# ----------------------------------------------------------------------------- rank metadata of bad files


RANK_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize("case", case_params([c for c in CASES if c.expect == "bad"], RANK_XFAIL))
def test_rank_metadata_of_a_bad_file_is_empty_not_an_exception(case: Case, tmp_path: Path) -> None:
    """``read_rank_info`` ("never raises for a file it cannot read") runs on every path given to
    ``kprof diagnose`` with two or more files, before any loader: it must not raise on a bad one."""
    from kprof.io.ranks import RankInfo, read_rank_info

    assert read_rank_info(case.build(tmp_path)) == RankInfo()


# ----------------------------------------------------------------------------- absurd values


ABSURD = [c for c in CASES if c.id.startswith(("kineto-", "nsys-")) and c.expect == "any"]
ABSURD_XFAIL: dict[str, str] = {}


@pytest.mark.parametrize("case", case_params(ABSURD, ABSURD_XFAIL))
def test_one_absurd_row_does_not_change_the_capture(case: Case, tmp_path: Path) -> None:
    """A row with an impossible time (2**63, -2**63, inf, an end before its start) is refused or set aside:
    the capture keeps the span and the verdict of the intact sample, never stretched to centuries."""
    pristine_src = KINETO_GZ if case.id.startswith("kineto-") else NSYS_SQLITE
    pristine = kprof.load(pristine_src)
    p = case.build(tmp_path)
    try:
        tl = kprof.load(p)
    except KprofError:
        return  # refused: fine
    s0, e0 = pristine.span_ns()  # type: ignore[union-attr,misc]
    span = tl.span_ns()  # type: ignore[union-attr]
    assert span is not None
    assert span[1] - span[0] <= 2 * (e0 - s0), (
        f"span {(span[1] - span[0]) / 1e9:.3g} s, intact {(e0 - s0) / 1e9:.3g} s"
    )
    want = kprof.diagnose(pristine)[0].bottleneck
    got = kprof.diagnose(tl)[0].bottleneck
    assert got == want, f"verdict {got} on the damaged copy, {want} on the intact sample"
