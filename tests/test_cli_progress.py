"""The progress bar of `kprof diagnose` on a long report: on stderr when it is a terminal and the read
takes over PROGRESS_AFTER_S, never with --json or when stderr is not a terminal, and never in stdout."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import termios
from pathlib import Path

import pytest

from kprof import cli
from tests.conftest import ncu_copies, ncu_sample_bytes

pytest.importorskip("ncu_report")
pytest.importorskip("tqdm")

BAR = re.compile(r"\d+/6 \[")  # tqdm's "n/total [elapsed<left, rate]"


@pytest.fixture(scope="module")
def long_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = ncu_sample_bytes("small_grid")
    if not data:
        pytest.skip("sample missing")
    p = tmp_path_factory.mktemp("progress") / "small_grid.x6.ncu-rep"
    p.write_bytes(ncu_copies(data, 6))
    return p


def _run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], tty: bool
) -> tuple[str, str]:
    """``kprof ARGS`` here with stderr a terminal (a pty) or not; what stdout and stderr received."""
    if not tty:
        err = io.StringIO()
        monkeypatch.setattr("sys.stderr", err)
        assert cli.main(args) == 0
        return capsys.readouterr().out, err.getvalue()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a terminal's size
    os.set_blocking(master, False)
    chunks: list[bytes] = []
    with open(slave, "w", buffering=1) as term:
        monkeypatch.setattr("sys.stderr", term)
        assert cli.main(args) == 0
        term.flush()
        try:  # what the terminal received, read before its other end closes
            while True:
                chunks.append(os.read(master, 1 << 16))
        except (BlockingIOError, OSError):
            pass
    os.close(master)
    return capsys.readouterr().out, b"".join(chunks).decode("utf-8", "replace")


def test_bar_on_a_terminal_when_slow(monkeypatch, capsys, long_report: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)  # every run is "slow"
    out, err = _run(monkeypatch, capsys, ["diagnose", str(long_report)], tty=True)
    assert BAR.search(err), err
    assert not BAR.search(out) and out.count("[") >= 6  # the diagnoses, on stdout, without the bar


def test_no_bar_when_quick(monkeypatch, capsys, long_report: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 1e6)
    _, err = _run(monkeypatch, capsys, ["diagnose", str(long_report)], tty=True)
    assert not BAR.search(err), err


def test_no_bar_with_json(monkeypatch, capsys, long_report: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    out, err = _run(monkeypatch, capsys, ["diagnose", "--json", str(long_report)], tty=True)
    assert not BAR.search(err), err
    assert out.startswith('{\n  "diagnoses": [')


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch, capsys, long_report: Path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cli, "PROGRESS_AFTER_S", 0.0)
    _, err = _run(monkeypatch, capsys, ["diagnose", str(long_report)], tty=False)
    assert not BAR.search(err), err
