"""The export cache names itself when it is the problem, and heals itself (issue 17, point 6); the
small ones: no papermill noise from the templates, an empty path said as such (point 7).

- A ``KPROF_CACHE_DIR`` that cannot be written (a read-only folder, a file where the folder should
  be) is named in the one-line error, instead of blaming the readable ``.nsys-rep``.
- A cached export that no longer opens is discarded and exported again, instead of failing every
  later run with "not an SQLite database"; without nsys the message names the cached file.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kprof.errors import KprofInputError
from tests.reliability.faults import unprivileged
from tests.reliability.inputs import NSYS_REP, NSYS_SQLITE
from tests.reliability.runner import REPO, child_env


def _rep(tmp_path: Path) -> Path:
    rep = tmp_path / "in" / "capture.nsys-rep"
    rep.parent.mkdir()
    rep.write_bytes(NSYS_REP.read_bytes())
    return rep


def _diagnose(rep: Path, env: dict[str, str], wrap: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kprof", "diagnose", str(rep)]
    return subprocess.run(
        unprivileged(argv) if wrap else argv,
        cwd=REPO,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("kprof: error: "), lines
    return lines[0]


# ----------------------------------------------------------------------------- the cache names itself


def test_a_cache_folder_that_is_a_file_is_named(tmp_path: Path, fake_nsys: dict[str, str]) -> None:
    """A path that nobody can use as a folder (root included): a file sits where the folder should be."""
    rep = _rep(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    cache = blocker / "cache"
    line = _one_error_line(_diagnose(rep, {**fake_nsys, "KPROF_CACHE_DIR": str(cache)}))
    assert str(rep) in line
    assert f"export cache folder {cache}" in line and "KPROF_CACHE_DIR" in line, line
    assert "cannot read" not in line, line


def test_a_read_only_cache_folder_is_named(tmp_path: Path, fake_nsys: dict[str, str]) -> None:
    rep = _rep(tmp_path)
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        res = _diagnose(rep, {**fake_nsys, "KPROF_CACHE_DIR": str(cache)}, wrap=True)
    finally:
        cache.chmod(0o755)
    line = _one_error_line(res)
    assert f"export cache folder {cache} (Permission denied)" in line, line
    assert "cannot read" not in line, line
    assert list(cache.iterdir()) == []


# ----------------------------------------------------------------------------- a damaged cache entry heals


def _cached_file(cache: Path) -> Path:
    (db,) = [p for p in cache.iterdir() if p.suffix == ".sqlite" and not p.name.endswith(".tmp.sqlite")]
    return db


def test_a_corrupt_cached_export_is_exported_again(tmp_path: Path, fake_nsys: dict[str, str]) -> None:
    rep = _rep(tmp_path)
    first = _diagnose(rep, fake_nsys)
    assert first.returncode == 0, first.stderr[-2000:]
    db = _cached_file(Path(fake_nsys["KPROF_CACHE_DIR"]))
    db.write_bytes(os.urandom(4096))  # a damaged disk block, or a file replaced by hand
    again = _diagnose(rep, fake_nsys)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout == first.stdout
    assert db.read_bytes() == NSYS_SQLITE.read_bytes()  # exported again, in place


def test_a_corrupt_cached_export_without_nsys_is_named_and_removed(
    tmp_path: Path, fake_nsys: dict[str, str]
) -> None:
    rep = _rep(tmp_path)
    assert _diagnose(rep, fake_nsys).returncode == 0
    cache = Path(fake_nsys["KPROF_CACHE_DIR"])
    db = _cached_file(cache)
    db.write_bytes(b"not a database" * 100)
    no_nsys = {"KPROF_CACHE_DIR": str(cache), "PATH": os.path.dirname(sys.executable)}
    line = _one_error_line(_diagnose(rep, no_nsys))
    assert str(rep) in line and f"cached SQLite export {db}" in line and "was removed" in line, line
    assert "nsys export --type sqlite" in line, line
    assert not db.exists()
    # with nsys back on PATH, the next run works
    assert _diagnose(rep, fake_nsys).returncode == 0


def test_the_library_raises_an_input_error_naming_the_cache(
    tmp_path: Path, fake_nsys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kprof.io.nsys import load_nsys_rep

    rep = _rep(tmp_path)
    blocker = tmp_path / "f"
    blocker.write_text("")
    monkeypatch.setenv("PATH", fake_nsys["PATH"])
    monkeypatch.setenv("KPROF_CACHE_DIR", str(blocker / "c"))
    with pytest.raises(KprofInputError, match="export cache folder"):
        load_nsys_rep(rep)


# ----------------------------------------------------------------------------- small ones


def test_template_parameters_parse_without_papermill_warnings(caplog: pytest.LogCaptureFixture) -> None:
    """papermill reads each template's parameters cell; a line it cannot parse prints
    "Unable to parse line N" on stderr in every report."""
    from papermill.translators import PythonTranslator

    templates = sorted((REPO / "kprof" / "templates").glob("*.ipynb"))
    assert templates
    for t in templates:
        nb = json.loads(t.read_text(encoding="utf-8"))
        cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(cells) == 1, t.name
        src = "".join(cells[0]["source"])
        assigned = [
            ln.split("=")[0].strip() for ln in src.splitlines() if "=" in ln and not ln.startswith("#")
        ]
        with caplog.at_level(logging.WARNING, logger="papermill"):
            caplog.clear()
            names = [p.name for p in PythonTranslator.inspect({"source": src})]
        assert not caplog.records, f"{t.name}: {[r.getMessage() for r in caplog.records]}"
        assert names == assigned, t.name


@pytest.mark.parametrize("command", [["diagnose", ""], ["compare", "", "x"], ["report", "", "-o", "r.html"]])
def test_an_empty_path_is_called_empty(command: list[str], tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "kprof", *command],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = _one_error_line(res)
    assert line == "kprof: error: '': the path is empty; give the path of a profile file", line


def test_the_library_says_an_empty_path_is_empty() -> None:
    import kprof

    with pytest.raises(KprofInputError, match=r"^'': the path is empty"):
        kprof.diagnose("")
