"""The files kprof writes for the user (the HTML report): checked before any work, written so that
nothing of the user's is lost.

What a report's output path may be (:func:`check_output`, run before the notebooks start):

- never one of the inputs, whatever the path says (the same file through a symbolic or hard link);
- never a profile: an existing file that is an nsys/ncu/PyTorch profile by its content or its name,
  nor a new file named like one (``-o capture.sqlite`` is almost always a slip of the keyboard);
- never a folder, a device or a pipe; never an existing file that is not an HTML document (kprof
  replaces only an earlier report); never a write-protected file (mode without any ``w`` bit: the
  protection is the user's statement, and root's ability to ignore it is not kprof's permission);
- in a folder that kprof can write: it is created if missing, and a probe file is created and
  removed in it, so a read-only folder or a full disk is found before minutes of notebook work.

Each refusal is a :class:`~kprof.errors.KprofInputError` naming the path: exit 2 on the command line.
An existing report keeps its permission bits (and owner, where allowed) when it is replaced; a new
one gets the usual ``0666 & ~umask``. A full disk while writing is said as such
(:func:`output_errors`), and leaves the earlier report in place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from kprof.errors import KprofError, KprofInputError

PROFILE_SUFFIXES = (
    ".nsys-rep",
    ".qdrep",
    ".ncu-rep",
    ".sqlite",
    ".sqlite3",
    ".db",
    ".json",
    ".json.gz",
    ".gz",
    ".csv",
)
"""Names kprof reads as profiles (:func:`kprof.io.detect_format`): never the name of a report it writes."""

_PROFILE_MAGIC = {
    b"SQLite format 3\x00": "an SQLite database (nsys export)",
    b"NVR\x00": "an Nsight Compute report",
    b"\x1f\x8b": "gzip-compressed data (a PyTorch profiler trace?)",
    b"QDSTRM": "an Nsight Systems report",
}
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def _what_profile(head: bytes, name: str) -> str | None:
    """What kind of profile the file is, by its first bytes or its name; None if neither says so."""
    for magic, what in _PROFILE_MAGIC.items():
        if head.startswith(magic):
            return what
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith((b"{", b"[")):
        return "JSON (a PyTorch profiler trace?)"
    if text.startswith((b'"ID",', b"ID,", b"==PROF==")):
        return "an ncu CSV export"
    low = name.lower()
    for suffix in PROFILE_SUFFIXES:
        if low.endswith(suffix):
            return f"named like a profile ({suffix})"
    return None


def _is_html(head: bytes) -> bool:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return text.startswith((b"<!doctype html", b"<html"))


def _is_kprof_trace(head: bytes) -> bool:
    """True for a trace ``kprof export-trace`` wrote (gzip-compressed or not): it begins with kprof's
    own ``otherData``."""
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            return False
    return head.startswith(b'{"otherData": {"kprof"')


_KINDS = {
    "report": ("report", _is_html, PROFILE_SUFFIXES, "the report is HTML: name it .html"),
    "trace": (
        "trace",
        _is_kprof_trace,
        tuple(s for s in PROFILE_SUFFIXES if s not in (".json", ".json.gz", ".gz")),
        "the trace is Chrome JSON: name it .json.gz",
    ),
}
"""What kprof writes: (noun, is an earlier output of its own, names it refuses, advice on the name)."""


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_output(
    output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = (), *, kind: str = "report"
) -> Path:
    """Check an output path before any work; return it resolved (links followed).

    ``kind`` is what is written: ``"report"`` (HTML, ``kprof report``) or ``"trace"`` (the Chrome trace
    of ``kprof export-trace``); an existing file is replaced only when it is an earlier one of those.

    Raises
    ------
    KprofInputError
        The path is one of ``inputs``, a profile, a folder or special file, an existing file that is
        an earlier output of this kind, write-protected, or in a folder that cannot be written (the message says
        which, and names the path).

    Examples
    --------
    >>> check_output("/tmp/kprof-doc-report.html").name
    'kprof-doc-report.html'
    """
    noun, is_earlier, refused_names, name_advice = _KINDS[kind]
    raw = os.fspath(output)
    if not raw:
        raise KprofInputError("''", "the output path is empty; give the report's file name with -o")
    given = Path(raw)  # what the messages name: the path as the user wrote it
    out = given.resolve()  # a link to an earlier report: write the report it points to
    try:
        st: os.stat_result | None = out.stat()
    except (FileNotFoundError, NotADirectoryError):  # a new file (its folder is checked below)
        st = None
    except OSError as exc:
        raise KprofInputError(given, f"cannot look up the output path ({exc.strerror or exc})") from exc
    if st is not None:
        for p in inputs:
            try:
                same = _same_file(st, os.stat(p))
            except OSError:  # a missing input is reported when it is read
                continue
            if same:
                which = "the capture itself" if kind == "trace" else f"one of the inputs ({os.fspath(p)})"
                raise KprofInputError(
                    given, f"is {which}; kprof never writes over a profile: choose another -o"
                )
        if stat.S_ISDIR(st.st_mode):
            raise KprofInputError(given, "is a directory; give the report's file name with -o")
        if not stat.S_ISREG(st.st_mode):
            raise KprofInputError(
                given, "is not a regular file (a device, pipe or socket); choose another -o"
            )
        try:
            with open(out, "rb") as f:
                head = f.read(4096)
        except OSError as exc:
            raise KprofInputError(
                given, f"cannot read the existing file to check it ({exc.strerror or exc})"
            ) from exc
        if head and not is_earlier(head):
            what = _what_profile(head, out.name)
            if what is not None:
                raise KprofInputError(
                    given, f"is {what}; kprof never writes over a profile: choose another -o"
                )
            raise KprofInputError(
                given,
                f"exists and is not an earlier kprof {noun}; kprof replaces only those: remove it or choose another -o",
            )
        if not st.st_mode & 0o222:
            raise KprofInputError(
                given,
                f"is write-protected (mode {stat.S_IMODE(st.st_mode):04o}); kprof does not replace a protected "
                f"{noun}: make it writable (chmod u+w) or choose another -o",
            )
    else:
        low = out.name.lower()
        suffix = next((s for s in refused_names if low.endswith(s)), None)
        if suffix is not None:
            raise KprofInputError(given, f"is named like a profile ({suffix}) but {name_advice}")
    _probe_folder(given, out)
    return out


def _probe_folder(given: Path, out: Path) -> None:
    """Create the output's folder if needed and prove that a file can be written in it."""
    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".probe", dir=folder)
        try:
            os.write(fd, b"kprof")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise _write_error(given, exc, f"cannot write into the folder {folder}") from exc


def _write_error(out: Path, exc: OSError, doing: str) -> KprofInputError:
    why = exc.strerror or str(exc)
    if exc.errno in DISK_FULL:
        return KprofInputError(out, f"disk full: {doing} ({why}); free some space or choose another -o")
    return KprofInputError(out, f"{doing} ({why}); choose another -o")


@contextlib.contextmanager
def writing_output(out: Path) -> Iterator[None]:
    """An OS error while writing the report ``out`` becomes a one-line :class:`KprofInputError` naming
    it (a full disk said as such); the earlier report, if any, is left as it was."""
    try:
        yield
    except OSError as exc:
        raise _write_error(out, exc, "the report could not be written") from exc


@contextlib.contextmanager
def disk_full_is_bad_input() -> Iterator[None]:
    """A full disk anywhere in the work (kprof's temporary files, the notebooks' outputs) is the
    machine's state, not a bug in kprof: a one-line :class:`KprofError` that says so (exit 2)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in DISK_FULL:
            raise
        where = f" ({exc.filename})" if isinstance(exc.filename, str) else ""
        raise KprofError(
            f"disk full: kprof could not write its temporary files{where}: {exc.strerror}; free some space, "
            f"or point TMPDIR at a folder with room (now {tempfile.gettempdir()})"
        ) from exc


def give_permissions(tmp: str | os.PathLike[str], replacing: Path) -> None:
    """Give the file about to replace ``replacing`` its permission bits (and owner and group, where
    this process may), or ``0666 & ~umask`` when there is nothing to replace."""
    try:
        st = os.stat(replacing)
    except OSError:
        os.chmod(tmp, 0o666 & ~_umask())
        return
    with contextlib.suppress(OSError):  # only root may give a file away; others keep their own
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(tmp, st.st_uid, st.st_gid)
    os.chmod(tmp, stat.S_IMODE(st.st_mode))


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc/self/status)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = ["PROFILE_SUFFIXES", "check_output", "disk_full_is_bad_input", "give_permissions", "writing_output"]
