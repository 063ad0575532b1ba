"""``kprof report -o PATH`` never destroys a file and finds output problems before the work (issue 17,
points 1 and 4).

- The output is never one of the inputs (also through a symbolic or a hard link), never a profile
  (by content or by name), a folder, a device, an existing non-HTML file or a write-protected file:
  exit 2 with one line naming it, before any notebook runs, and the file is unchanged.
- A folder that cannot be written (read-only for this user, a file in place of the folder, a full
  disk) is found before the work: exit 2, one line.
- A disk that fills up while the report is written: exit 2 saying "disk full", the earlier report kept.
- An earlier report that is replaced keeps its permission bits; a new one follows the umask.

Most runs use the real command line. Where a report must actually be built, a driver replaces the
notebook execution with a ready-made notebook (the notebooks are not what these tests are about) and
calls ``kprof.cli.main``, so each case takes a second, not half a minute.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.reliability.faults import unprivileged
from tests.reliability.inputs import NSYS_SQLITE, SAMPLES, plain_ncu_rep
from tests.reliability.runner import REPO, child_env

_FAST_REPORT = textwrap.dedent(
    """
    import os, sys
    import nbformat
    import kprof.report as report
    from kprof import cli

    def fake_run(run, parameters, workdir, cwd=None):
        print("NOTEBOOK RAN", file=sys.stderr, flush=True)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("kprof " + "x" * int(os.environ.get("FAKE_SIZE", "1000")))]
        return nb

    report.execute_run = fake_run
    if "UMASK" in os.environ:
        os.umask(int(os.environ["UMASK"], 8))
    sys.exit(cli.main(sys.argv[1:]))
    """
)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _report(
    args: list[str], *, fast: bool = True, wrap: bool = False, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", _FAST_REPORT] if fast else [sys.executable, "-m", "kprof"]
    argv = [*argv, "report", *args]
    return subprocess.run(
        unprivileged(argv) if wrap else argv,
        cwd=cwd or REPO,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _refused(res: subprocess.CompletedProcess[str], path: Path, *words: str) -> str:
    """Exit 2, one line naming ``path``, said before any notebook ran."""
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "NOTEBOOK RAN" not in res.stderr, "the output was refused only after the work"
    assert len(lines) == 1 and lines[0].startswith("kprof: error: "), lines
    assert str(path) in lines[0], lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    assert res.stdout == ""
    return lines[0]


@pytest.fixture()
def inputs(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "in"
    d.mkdir()
    sqlite = d / "capture.sqlite"
    shutil.copyfile(NSYS_SQLITE, sqlite)
    ncu = d / "k.ncu-rep"
    plain_ncu_rep(ncu)
    return {"sqlite": sqlite, "ncu": ncu}


# ----------------------------------------------------------------------------- point 1: never an input or a profile


def test_the_output_is_never_the_input(inputs: dict[str, Path]) -> None:
    """`kprof report in.sqlite -o in.sqlite` turned the capture into HTML (exit 0)."""
    src = inputs["sqlite"]
    before = _sha(src)
    _refused(_report([str(src), "-o", str(src)], fast=False), src, "is one of the inputs")
    assert _sha(src) == before


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_the_output_is_never_the_input_through_a_link(
    inputs: dict[str, Path], tmp_path: Path, link: str
) -> None:
    src = inputs["sqlite"]
    before = _sha(src)
    out = tmp_path / "out" / "report.html"  # an innocent name: only the file behind it says what it is
    out.parent.mkdir()
    if link == "symbolic":
        out.symlink_to(src)
    else:
        os.link(src, out)
    line = _refused(_report([str(src), "-o", str(out)]), out)
    assert "is one of the inputs" in line
    assert _sha(src) == before


def test_an_existing_profile_is_never_overwritten(inputs: dict[str, Path]) -> None:
    """`-o k.ncu-rep`: another profile, not among the inputs, became HTML."""
    ncu = inputs["ncu"]
    before = _sha(ncu)
    _refused(_report([str(inputs["sqlite"]), "-o", str(ncu)]), ncu, "never writes over a profile")
    assert _sha(ncu) == before


def test_a_profile_under_an_html_name_is_never_overwritten(inputs: dict[str, Path], tmp_path: Path) -> None:
    disguised = tmp_path / "old.html"
    shutil.copyfile(NSYS_SQLITE, disguised)
    before = _sha(disguised)
    _refused(_report([str(inputs["ncu"]), "-o", str(disguised)]), disguised, "SQLite")
    assert _sha(disguised) == before


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("new.sqlite", None, ("named like a profile",)),
        ("notes.txt", b"my notes\n", ("not an earlier kprof report",)),
        ("folder", "dir", ("is a directory",)),
    ],
)
def test_other_outputs_that_would_destroy_or_confuse(
    inputs: dict[str, Path], tmp_path: Path, name: str, content: object, words: tuple[str, ...]
) -> None:
    out = tmp_path / name
    if content == "dir":
        out.mkdir()
    elif isinstance(content, bytes):
        out.write_bytes(content)
    _refused(_report([str(inputs["sqlite"]), "-o", str(out)]), out, *words)
    if isinstance(content, bytes):
        assert out.read_bytes() == content
    elif content is None:
        assert not out.exists()


def test_a_special_file_is_never_replaced(inputs: dict[str, Path], tmp_path: Path) -> None:
    """`-o /dev/null` as root made os.replace put a regular file in place of the device (seen once when
    this test ran against the old code on /dev/null itself: hence a FIFO in a private folder here)."""
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    _refused(_report([str(inputs["sqlite"]), "-o", str(fifo)]), fifo, "not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


# ----------------------------------------------------------------------------- point 4: faults around the output


def test_a_read_only_output_folder_is_found_before_the_work(inputs: dict[str, Path], tmp_path: Path) -> None:
    """Found after all the notebook work (exit 1, PermissionError) before."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    out = folder / "report.html"
    try:
        t0 = time.monotonic()
        res = _report([str(inputs["sqlite"]), "-o", str(out)], fast=False, wrap=True)
        took = time.monotonic() - t0
    finally:
        folder.chmod(0o755)
    _refused(res, out, f"cannot write into the folder {folder}", "Permission denied")
    assert took < 20, f"refused after {took:.0f} s"
    assert list(folder.iterdir()) == []


def test_an_output_folder_root_cannot_create_is_found_before_the_work(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = blocker / "sub" / "report.html"
    _refused(_report([str(inputs["sqlite"]), "-o", str(out)]), out, "cannot write into the folder")


@pytest.fixture()
def tiny_disk(tmp_path: Path) -> object:
    """A 256 KiB tmpfs (root only): a real full disk, not a mocked write."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_disk_that_fills_while_writing_says_disk_full(inputs: dict[str, Path], tiny_disk: Path) -> None:
    """The report (1 MB here) does not fit: 'internal error ... report it' (exit 1) before."""
    out = tiny_disk / "report.html"
    out.write_text("<!DOCTYPE html><html>earlier report</html>\n")
    res = _report([str(inputs["sqlite"]), "-o", str(out)], FAKE_SIZE=str(1 << 20))
    lines = [ln for ln in res.stderr.splitlines() if ln.strip() and ln != "NOTEBOOK RAN"]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert lines[-1].startswith("kprof: error: ") and str(out) in lines[-1], lines
    assert "disk full" in lines[-1] and "internal error" not in lines[-1], lines[-1]
    assert out.read_text() == "<!DOCTYPE html><html>earlier report</html>\n"
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["report.html"]  # no temporary file left


def test_a_full_disk_is_found_before_the_work(inputs: dict[str, Path], tiny_disk: Path) -> None:
    with open(tiny_disk / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        except OSError:
            pass
    out = tiny_disk / "report.html"
    _refused(_report([str(inputs["sqlite"]), "-o", str(out)]), out, "disk full")


def test_a_write_protected_report_is_not_replaced(inputs: dict[str, Path], tmp_path: Path) -> None:
    """It was silently replaced by a 0644 file (root ignores the protection; kprof must not)."""
    out = tmp_path / "report.html"
    out.write_text("<!DOCTYPE html><html>kept</html>\n")
    out.chmod(0o444)
    _refused(_report([str(inputs["sqlite"]), "-o", str(out)]), out, "write-protected (mode 0444)")
    assert out.read_text() == "<!DOCTYPE html><html>kept</html>\n"
    assert out.stat().st_mode & 0o777 == 0o444


def test_a_replaced_report_keeps_its_mode(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("<!DOCTYPE html><html>EARLIER REPORT</html>\n")
    out.chmod(0o640)
    res = _report([str(inputs["sqlite"]), "-o", str(out)])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "EARLIER REPORT" not in out.read_text() and "kprof" in out.read_text()
    assert out.stat().st_mode & 0o777 == 0o640


def test_a_new_report_follows_the_umask(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "new.html"
    res = _report([str(inputs["sqlite"]), "-o", str(out)], UMASK="077")
    assert res.returncode == 0, res.stderr[-2000:]
    assert out.stat().st_mode & 0o777 == 0o600


# ----------------------------------------------------------------------------- kprof export-trace


def _export(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kprof", "export-trace", *args],
        cwd=cwd,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("target", ["ncu-rep", "pytorch-trace", "fifo", "protected-trace"])
def test_export_trace_never_destroys_a_file(inputs: dict[str, Path], tmp_path: Path, target: str) -> None:
    """`kprof export-trace` wrote over another profile (-o k.ncu-rep), a PyTorch trace of the user's, a
    device or pipe (os.replace swaps the node for a file), and a write-protected earlier trace."""
    if target == "ncu-rep":
        out, words = inputs["ncu"], ("never writes over a profile",)
    elif target == "pytorch-trace":
        out, words = tmp_path / "theirs.json.gz", ("never writes over a profile",)
        shutil.copyfile(SAMPLES / "timeline" / "gpu_bound.json.gz", out)
    elif target == "fifo":
        out, words = tmp_path / "pipe.json.gz", ("not a regular file",)
        os.mkfifo(out)
    else:
        out, words = tmp_path / "old.json.gz", ("write-protected",)
        first = _export(str(inputs["sqlite"]), "-o", str(out), cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        out.chmod(0o444)
    before = None if target == "fifo" else _sha(out)
    res = _export(str(inputs["sqlite"]), "-o", str(out), cwd=tmp_path)
    _refused(res, out, *words)
    if before is not None:
        assert _sha(out) == before
    else:
        assert stat.S_ISFIFO(out.lstat().st_mode)


def test_export_trace_replaces_its_own_earlier_trace(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "t.json.gz"
    for _ in range(2):
        res = _export(str(inputs["sqlite"]), "-o", str(out), cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "t.json.gz"]
