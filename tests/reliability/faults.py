"""Faults the reliability tests inject from outside kprof: permissions that hold for root too, and
process trees to watch after a kill.

As root, ``chmod`` does not restrict: root's CAP_DAC_OVERRIDE writes into a 0555 folder and over a
0444 file. :func:`unprivileged` runs a command without that capability (``setpriv``), so a read-only
folder is read-only for the command whoever runs the tests.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

_CAPS = "-dac_override,-dac_read_search"


def unprivileged(argv: list[str]) -> list[str]:
    """``argv`` prefixed so that it runs without the capabilities that bypass file permissions.

    A non-root user has none of them: ``argv`` is returned as it is. As root without ``setpriv``
    the test is skipped (it could not see the fault it is about).
    """
    if os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made read-only for root")
    return [setpriv, f"--inh-caps={_CAPS}", f"--bounding-set={_CAPS}", "--", *argv]


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (children, their children...), from /proc."""
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


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
