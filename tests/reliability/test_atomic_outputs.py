"""Outputs are written atomically: an interrupted run leaves no half-written file, parallel runs do not
clobber each other.

- ``kprof report``: three runs at once on the same input (two to one output, one to another) all
  succeed with complete HTML; a run killed while it writes, or whose export fails, leaves the old
  report (or none); Ctrl-C during the notebooks leaves nothing behind.
- The ``.nsys-rep`` export cache: a failed, killed or concurrent ``nsys export`` never leaves a
  partial database where the cache would reuse it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kprof.errors import KprofInputError
from tests.reliability.inputs import NSYS_REP, NSYS_SQLITE
from tests.reliability.runner import REPO, child_env


def assert_complete_html(path: Path) -> None:
    doc = path.read_text(encoding="utf-8")
    assert doc.lstrip().lower().startswith("<!doctype html"), doc[:100]
    assert doc.rstrip().endswith("</html>"), doc[-200:]
    parser = HTMLParser()
    parser.feed(doc)
    parser.close()
    assert "kprof report" in doc


def leftovers(d: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name not in keep)


# ----------------------------------------------------------------------------- kprof report


def test_parallel_reports_are_all_complete(parallel_reports: dict) -> None:
    for rc, _out, err in parallel_reports["runs"]:
        assert rc == 0, err[-2000:]
        assert "Traceback" not in err
    assert_complete_html(parallel_reports["same"])
    assert_complete_html(parallel_reports["other"])
    assert leftovers(parallel_reports["dir"], {"same.html", "other.html"}) == []


_KILLED_WHILE_WRITING = textwrap.dedent(
    """
    import os, sys, time
    import nbformat
    import kprof.report as report

    def fake_run(run, parameters, workdir, cwd=None):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("x" * 100000)]
        return nb

    real_fsync = os.fsync
    def slow_fsync(fd):
        print("WRITING", flush=True)  # the temporary file is written, not yet renamed
        time.sleep(60)
        real_fsync(fd)

    report.execute_run = fake_run
    os.fsync = slow_fsync
    report.build_report([sys.argv[1]], sys.argv[2], log=None)
    """
)


@pytest.mark.parametrize("old_report", [False, True], ids=["no-old-report", "old-report"])
def test_report_killed_while_writing_leaves_no_partial_file(tmp_path: Path, old_report: bool) -> None:
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    if old_report:
        out.write_text("<!DOCTYPE html><html>old</html>\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WHILE_WRITING, str(NSYS_SQLITE), str(out)],
        cwd=REPO,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == b"WRITING", (line, proc.stderr.read() if proc.stderr else b"")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if old_report:
        assert out.read_text() == "<!DOCTYPE html><html>old</html>\n"
    else:
        assert not out.exists()
    # what SIGKILL leaves is a hidden temporary file, never something named like the report
    assert all(
        n.startswith(".report.html.") and n.endswith(".tmp") for n in leftovers(out.parent, {"report.html"})
    )


def test_report_whose_export_fails_keeps_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat

    import kprof.report as report

    def fake_run(run: tuple, parameters: dict, workdir: Path, cwd: object = None) -> object:
        return nbformat.v4.new_notebook()

    out = tmp_path / "report.html"
    out.write_text("<!DOCTYPE html><html>old</html>")
    monkeypatch.setattr(report, "execute_run", fake_run)
    real_replace = os.replace

    def no_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_replace)
    with pytest.raises(KprofInputError, match="disk full"):
        report.build_report([str(NSYS_SQLITE)], out, log=None)
    monkeypatch.setattr(os, "replace", real_replace)
    assert out.read_text() == "<!DOCTYPE html><html>old</html>"
    assert leftovers(tmp_path, {"report.html"}) == []


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the notebook's kernel through /proc")
def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_report_interrupted_during_the_notebooks_leaves_nothing(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while the notebook's kernel runs:
    exit 130 with one line, no report, no temporary file, no kernel process left running."""
    out = tmp_path / "report.html"
    for _attempt in range(3):  # under load the one-notebook report can finish before the signal
        proc = subprocess.Popen(
            [sys.executable, "-m", "kprof", "report", str(NSYS_SQLITE), "-o", str(out)],
            cwd=REPO,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_default_sigint,  # as from a terminal, whatever the test process ignores
        )
        kernels: list[int] = []
        deadline = time.monotonic() + 120
        while not kernels and proc.poll() is None and time.monotonic() < deadline:
            kernels = [c for c in _descendants(proc.pid) if b"ipykernel" in _cmdline(c)]
            time.sleep(0.05)
        assert kernels, "no notebook kernel started"
        time.sleep(1.0)  # the kernel is up and running the notebook's cells
        if proc.poll() is None:  # still running: the signal lands in the notebooks
            break
        proc.communicate()
        out.unlink(missing_ok=True)  # finished first: this attempt tells nothing, run again
    else:
        pytest.fail("the report finished before Ctrl-C three times: the test never interrupted it")
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("kprof report did not stop within 60 s of Ctrl-C")
    text = err.decode(errors="replace")
    assert proc.returncode == 130, text[-2000:]
    assert text.splitlines()[-1] == "kprof: error: interrupted" and "Traceback" not in text, text[-2000:]
    assert not out.exists()
    assert leftovers(tmp_path, set()) == []
    time.sleep(0.5)
    assert not [k for k in kernels if _cmdline(k)], "the notebook's kernel outlived the interrupted report"


# ----------------------------------------------------------------------------- the nsys export cache


def _rep_copy(tmp_path: Path) -> Path:
    rep = tmp_path / "in" / "capture.nsys-rep"
    rep.parent.mkdir()
    rep.write_bytes(NSYS_REP.read_bytes())
    return rep


def _load_rep(rep: Path, env: dict[str, str], mode: str, **popen: object) -> subprocess.Popen[bytes]:
    code = "import sys; from kprof.io import load; tl = load(sys.argv[1]); print(tl.kernel_count)"
    return subprocess.Popen(
        [sys.executable, "-c", code, str(rep)],
        cwd=REPO,
        env=child_env(FAKE_NSYS_MODE=mode, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,  # type: ignore[arg-type]
    )


def _cache_files(env: dict[str, str]) -> list[str]:
    d = Path(env["KPROF_CACHE_DIR"])
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_failed_export_is_not_cached(
    tmp_path: Path, fake_nsys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kprof.io.nsys import load_nsys_rep

    rep = _rep_copy(tmp_path)
    for k, v in fake_nsys.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("FAKE_NSYS_MODE", "fail")
    with pytest.raises(KprofInputError, match="disk I/O error"):
        load_nsys_rep(rep)
    assert _cache_files(fake_nsys) == []
    assert sorted(p.name for p in rep.parent.iterdir()) == ["capture.nsys-rep"]  # nothing beside the input


def test_export_killed_midway_is_not_reused(tmp_path: Path, fake_nsys: dict[str, str]) -> None:
    rep = _rep_copy(tmp_path)
    proc = _load_rep(rep, fake_nsys, "hang", start_new_session=True)
    cache = Path(fake_nsys["KPROF_CACHE_DIR"])
    deadline = time.monotonic() + 60
    while not list(cache.glob("*.started")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(cache.glob("*.started")), proc.communicate(timeout=5)
    os.killpg(proc.pid, signal.SIGKILL)  # the loader and nsys die with half a database written
    proc.wait()
    # the next load exports again instead of reading half a database
    again = _load_rep(rep, fake_nsys, "ok")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()[-2000:]
    assert int(out) > 0
    from kprof.io.nsys import cached_export_path

    os.environ["KPROF_CACHE_DIR"], saved = fake_nsys["KPROF_CACHE_DIR"], os.environ.get("KPROF_CACHE_DIR")
    try:
        target = cached_export_path(rep)
    finally:
        if saved is None:
            del os.environ["KPROF_CACHE_DIR"]
        else:
            os.environ["KPROF_CACHE_DIR"] = saved
    assert target.read_bytes() == NSYS_SQLITE.read_bytes()


def test_parallel_loads_share_one_complete_export(tmp_path: Path, fake_nsys: dict[str, str]) -> None:
    rep = _rep_copy(tmp_path)
    procs = [_load_rep(rep, fake_nsys, "slow") for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
        assert int(out) > 0
    dbs = [n for n in _cache_files(fake_nsys) if n.endswith(".sqlite") and not n.endswith(".tmp.sqlite")]
    assert len(dbs) == 1, _cache_files(fake_nsys)
    db = Path(fake_nsys["KPROF_CACHE_DIR"]) / dbs[0]
    assert db.read_bytes() == NSYS_SQLITE.read_bytes()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
