"""kprof's exceptions. Every problem with an input is a :class:`KprofInputError`
whose message is one line naming the file and what is wrong; the CLI prints it
and exits 2."""

from __future__ import annotations

import os


class KprofError(Exception):
    """Base class of every error kprof raises on purpose."""


class KprofInputError(KprofError):
    """An input file is missing, unreadable, of the wrong type, corrupt or incomplete.

    ``str(err)`` is ``"<path>: <reason>"`` on one line.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = " ".join(str(reason).split())  # one line, always
        super().__init__(f"{self.path}: {self.reason}")


class MissingToolError(KprofError):
    """A needed external tool or optional package is not installed; the message says how to get it."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))
