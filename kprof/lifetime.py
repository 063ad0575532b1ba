"""Processes and temporary files that do not outlive kprof.

Helper processes (the notebook workers of ``kprof report``, the ``.ncu-rep`` reader) call
:func:`die_with_parent` first thing: on Linux the kernel then kills them when the kprof process that
started them ends, however it ends (``SIGKILL`` included, where nothing in kprof runs to stop them).
The notebooks' Jupyter kernels watch their parent themselves (ipykernel's parent poller, once a
second).

Temporary folders and files are *owned*: their creator holds an exclusive ``flock`` on them (a lock
file inside a folder, the file itself otherwise) for as long as it lives, and the kernel releases the
lock when the process dies. :func:`remove_stale` removes the ones whose lock it can take (their
owner is gone) and that are older than the run that looks, so a run never touches what a live kprof
(in this or another process, container or pid namespace on the machine) is using. A folder without a
lock file (an older kprof's, or one killed between creating it and locking it) is removed once it is
older than :data:`STALE_UNLOCKED_S`, as the nsys export cache does with its temporary exports.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no flock, so nothing is ever taken for stale
    fcntl = None  # type: ignore[assignment]

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal this process gets when its parent ends (Linux)."""
OWNER_FILE = ".kprof-owner"
"""The lock file inside an owned temporary folder."""
STALE_UNLOCKED_S = 3600.0
"""A temporary folder with no lock file is stale after an hour (nsys's STALE_TMP_S: a run that
takes longer holds a lock file, so this only applies to folders of older kprof versions)."""
TEMP_PATTERNS = ("kprof-report-*", "kprof-ncu-*", "kprof-wal-*", "kprof-gunzip-*")
"""kprof's temporary folders in the system's temporary directory."""


def die_with_parent(parent: int | None = None) -> None:
    """Ask Linux to kill this process (SIGKILL) when its parent ends; exit now if it already has.

    ``parent`` is the pid the caller expects as its parent (passed down by it): if another process
    already adopted this one, the parent died before the request took effect. Elsewhere than
    Linux, nothing happens.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _try_lock(path: Path) -> bool | None:
    """True when an exclusive lock on ``path`` can be taken now (its owner is gone), False when a live
    process holds it, None when it cannot be told (no such file, no flock on this file system)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return False if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) else None
    finally:
        os.close(fd)
    return True


def hold(fd: int) -> None:
    """Mark the open file ``fd`` as owned by this process for as long as it is open (best effort)."""
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[Path]:
    """A new temporary folder (like :class:`tempfile.TemporaryDirectory`) that :func:`remove_stale`
    recognises as this process's while it runs, and as stale after it died without removing it."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        fd = os.open(d / OWNER_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            hold(fd)
            yield d
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def remove_stale(
    folder: str | os.PathLike[str], patterns: Iterable[str], before: float | None = None
) -> list[Path]:
    """Remove the entries of ``folder`` matching ``patterns`` whose owner is gone; return them.

    An entry is stale when it is older than ``before`` (a time.time() value; default: now) and no
    live process holds its lock (the lock file inside a folder, the file itself otherwise); a folder
    with no lock file must also be older than :data:`STALE_UNLOCKED_S`. Errors are ignored: this is
    tidying, never a reason to fail.
    """
    now = time.time()
    before = now if before is None else before
    removed: list[Path] = []
    base = Path(folder)
    for pattern in patterns:
        try:
            found = list(base.glob(pattern))
        except OSError:
            continue
        for p in found:
            try:
                st = p.lstat()
            except OSError:
                continue
            if st.st_mtime >= before or p.is_symlink():
                continue
            if p.is_dir():
                lock = p / OWNER_FILE
                free = _try_lock(lock)
                if free is None and not lock.exists():
                    free = now - st.st_mtime > STALE_UNLOCKED_S
                if free:
                    shutil.rmtree(p, ignore_errors=True)
                    removed.append(p)
            elif _try_lock(p):
                with contextlib.suppress(OSError):
                    p.unlink()
                    removed.append(p)
    return removed


def remove_stale_temporaries(before: float | None = None) -> list[Path]:
    """Remove kprof's stale temporary folders from the system's temporary directory (once per process)."""
    global _CLEANED
    if _CLEANED:
        return []
    _CLEANED = True
    return remove_stale(tempfile.gettempdir(), TEMP_PATTERNS, before)


_CLEANED = False


def sweep_after_interrupt(started: float, wait_s: float = 5.0) -> None:
    """After Ctrl-C or SIGTERM: remove the temporary folders this run's helper processes made.

    The notebook workers are stopped as the run unwinds, but their Jupyter kernels notice a second
    later (ipykernel's parent poller) and the ``.ncu-rep`` readers go with them; they exit without
    removing their ``kprof-ncu-*`` folders. This waits (at most ``wait_s``) until no kprof temporary
    made since ``started`` is still held by a live process, removing each one whose owner is gone, so
    the interrupted run leaves nothing behind. Folders that a live process still holds (another kprof
    running at the same time) are left alone. Tidying only: errors and a second signal end it quietly.
    """
    deadline = time.monotonic() + wait_s
    tmp = Path(tempfile.gettempdir())
    try:
        while True:
            remove_stale(tmp, TEMP_PATTERNS, time.time() + 1.0)
            young = []
            for pattern in TEMP_PATTERNS:
                for p in tmp.glob(pattern):
                    with contextlib.suppress(OSError):
                        if p.lstat().st_mtime >= started - 1.0:  # file times: 1 s granularity
                            young.append(p)
            if not young or time.monotonic() >= deadline:
                return
            time.sleep(0.1)
    except BaseException:  # a second Ctrl-C or SIGTERM while tidying: stop tidying
        return


__all__ = [
    "die_with_parent",
    "hold",
    "owned_tempdir",
    "remove_stale",
    "remove_stale_temporaries",
    "sweep_after_interrupt",
]
