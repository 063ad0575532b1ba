"""Nothing outlives a killed kprof for long, and the next run tidies what it left (issue 17, point 5).

SIGKILL of ``kprof report`` (the parent alone, as the OOM killer or ``kill -9 PID`` does: the earlier
tests killed whole process groups, so they never saw this) left its notebook workers running for 5-15
s, and ``kprof-report-*`` folders, Jupyter connection files, ``kprof-ncu-*/result.pickle`` and
``.out.html.*.tmp`` files behind, which no later run removed.

- The workers die with their parent (Linux: PR_SET_PDEATHSIG; the notebooks' kernels poll their
  parent once a second).
- kprof's temporaries are owned (an flock held while their creator lives). The next run removes the
  ones whose owner is gone and that are older than the run; never one a live kprof holds.

Each test gives kprof a private TMPDIR and Jupyter runtime folder, so it sees only its own files and
touches nothing of the machine's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from tests.reliability.faults import alive, cmdline, descendants
from tests.reliability.inputs import NSYS_SQLITE, plain_ncu_rep
from tests.reliability.runner import REPO, child_env

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's"
)

WORKERS_GONE_S = 4.0
"""The kernels' parent poller runs once a second; PR_SET_PDEATHSIG acts at once. 4 s leaves room on a
loaded 2-core machine, and is shorter than the 5-15 s the workers outlived their parent before."""


@pytest.fixture()
def short_tmp(tmp_path: Path) -> Path:
    """The private TMPDIR and Jupyter runtime folder of a test, under a short path: the kernels' IPC
    sockets live in kprof's temporary folder, and old kprof failed with a long TMPDIR (see
    test_a_long_tmpdir_is_no_internal_error)."""
    d = Path(tempfile.mkdtemp(prefix="kpl", dir="/tmp" if os.path.isdir("/tmp") else None))
    (d / "tmp").mkdir()
    (d / "runtime").mkdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _env(tmp_root: Path, tmp_path: Path) -> dict[str, str]:
    return child_env(
        TMPDIR=str(tmp_root / "tmp"),
        JUPYTER_RUNTIME_DIR=str(tmp_root / "runtime"),
        KPROF_CACHE_DIR=str(tmp_path / "cache"),
    )


def _inputs(tmp_path: Path) -> list[str]:
    d = tmp_path / "in"
    d.mkdir()
    shutil.copyfile(NSYS_SQLITE, d / "capture.sqlite")
    plain_ncu_rep(d / "k.ncu-rep")
    return [str(d / "capture.sqlite"), str(d / "k.ncu-rep")]


def _kill_parent_during_the_notebooks(tmp_root: Path, tmp_path: Path) -> tuple[list[int], Path]:
    """Start `kprof report` on a timeline and a kernel report (2 kernels in 2 workers), wait until the
    notebooks' kernels run, SIGKILL the kprof process alone. Returns its descendants then, and the
    output folder."""
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kprof", "report", *_inputs(tmp_path), "-o", str(out)],
        cwd=REPO,
        env=_env(tmp_root, tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # for the cleanup below only: the test kills the parent alone
    )
    try:
        kernels: list[int] = []
        deadline = time.monotonic() + 180
        while len(kernels) < 2 and proc.poll() is None and time.monotonic() < deadline:
            kernels = [c for c in descendants(proc.pid) if "ipykernel" in cmdline(c)]
            time.sleep(0.05)
        assert len(kernels) >= 2, f"the notebooks' kernels did not start ({kernels}, exit {proc.poll()})"
        time.sleep(1.0)  # the kernels run the notebooks' cells (the kernel notebook starts the ncu reader)
        family = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        return family, out.parent
    except BaseException:
        for pid in [*descendants(proc.pid), proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        raise


def _reap(pids: list[int]) -> None:
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_workers_die_with_a_killed_report(short_tmp: Path, tmp_path: Path) -> None:
    family, _ = _kill_parent_during_the_notebooks(short_tmp, tmp_path)
    try:
        assert family, "kprof report started no process"
        deadline = time.monotonic() + WORKERS_GONE_S
        while time.monotonic() < deadline and any(alive(p) for p in family):
            time.sleep(0.1)
        left = {p: cmdline(p)[:120] for p in family if alive(p)}
        assert not left, (
            f"{len(left)} of {len(family)} processes outlived the killed report by {WORKERS_GONE_S} s: {left}"
        )
    finally:
        _reap(family)


_TIDY = textwrap.dedent(
    """
    import sys, nbformat
    import kprof.report as report
    from kprof import cli

    def fake_run(run, parameters, workdir, cwd=None):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("kprof")]
        return nb

    report.execute_run = fake_run
    sys.exit(cli.main(sys.argv[1:]))
    """
)


def _next_run(tmp_root: Path, tmp_path: Path, out: Path) -> None:
    """A later `kprof report` (its notebooks replaced by a ready-made one: the tidying is at its start)."""
    res = subprocess.run(
        [sys.executable, "-c", _TIDY, "report", str(NSYS_SQLITE), "-o", str(out)],
        cwd=REPO,
        env=_env(tmp_root, tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]


def _kprof_leftovers(tmp_root: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp_root)) for d in ("tmp", "runtime") for p in (tmp_root / d).iterdir())


def test_the_next_run_removes_what_a_killed_report_left(short_tmp: Path, tmp_path: Path) -> None:
    for attempt in range(3):  # a kill that lands after the run's folders are gone proves nothing: again
        run_path = tmp_path / f"attempt{attempt}"
        run_path.mkdir()
        family, outdir = _kill_parent_during_the_notebooks(short_tmp, run_path)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(alive(p) for p in family):
                time.sleep(0.1)
        finally:
            _reap(family)
        left = _kprof_leftovers(short_tmp)
        if left:
            break
    assert left, "the killed run left nothing to tidy three times: the test would prove nothing"
    time.sleep(
        1.1
    )  # the leftovers are older than the next run (file times have 1 s granularity on some systems)
    _next_run(short_tmp, tmp_path, outdir / "report.html")
    still = [p for p in _kprof_leftovers(short_tmp) if not p.endswith("jupyter_runtime_lock")]
    assert still == [], f"left by the killed run: {left}; still there after the next run: {still}"
    assert sorted(p.name for p in outdir.iterdir()) == ["report.html"]


def _locked(path: Path) -> int:
    """Hold an exclusive flock on ``path`` from this (living) process, as a running kprof does."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_the_next_run_leaves_a_live_run_alone(short_tmp: Path, tmp_path: Path) -> None:
    """Stale means: its owner is gone (no lock held) and it is older than the run that looks."""
    env_tmp = short_tmp / "tmp"
    out = tmp_path / "out" / "report.html"
    out.parent.mkdir()
    old = time.time() - 7200

    dead = env_tmp / "kprof-report-dead"  # a killed run's folder: lock file, nobody holds it
    dead.mkdir()
    (dead / ".kprof-owner").touch()
    (dead / "kernel-timeline.json").write_text("{}")
    live = env_tmp / "kprof-report-live"  # a running report's folder: its lock is held
    live.mkdir()
    fd_live = _locked(live / ".kprof-owner")
    legacy = env_tmp / "kprof-ncu-legacy"  # an older kprof's folder, no lock file, 2 h old
    legacy.mkdir()
    (legacy / "result.pickle").write_bytes(b"x")
    young = env_tmp / "kprof-ncu-young"  # no lock file, just made: may be a run that has not locked it yet
    young.mkdir()
    other = env_tmp / "someone-elses"  # not kprof's
    other.mkdir()
    stale_tmp = out.parent / ".report.html.dead.tmp"  # a killed write beside the report
    stale_tmp.write_bytes(b"")
    live_tmp = out.parent / ".report.html.live.tmp"  # a parallel run writing the same report now
    fd_tmp = _locked(live_tmp)
    other_tmp = out.parent / ".notes.html.x.tmp"  # another output's temporary: not this run's business
    other_tmp.write_bytes(b"")
    for p in (dead, dead / ".kprof-owner", live, legacy, other, stale_tmp, live_tmp, other_tmp):
        os.utime(p, (old, old))
    os.utime(young, None)
    try:
        _next_run(short_tmp, tmp_path, out)
        assert not dead.exists() and not legacy.exists() and not stale_tmp.exists()
        assert live.exists() and (live / ".kprof-owner").exists() and young.exists() and other.exists()
        assert live_tmp.exists() and other_tmp.exists()
    finally:
        os.close(fd_live)
        os.close(fd_tmp)


def test_a_long_tmpdir_is_no_internal_error(tmp_path: Path) -> None:
    """The notebooks' kernels talked over IPC sockets in kprof's temporary folder; under a TMPDIR of some
    70 characters the socket path passed the 107 a Unix socket allows, and `kprof report` failed with
    "internal error (ZMQError: File name too long)"."""
    tmp = tmp_path / ("long-temporary-folder-" * 3)
    tmp.mkdir()
    out = tmp_path / "report.html"
    res = subprocess.run(
        [sys.executable, "-m", "kprof", "report", str(NSYS_SQLITE), "-o", str(out)],
        cwd=REPO,
        env=child_env(TMPDIR=str(tmp), JUPYTER_RUNTIME_DIR=str(tmp)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert out.is_file()
    assert list(tmp.iterdir()) == []
