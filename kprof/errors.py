"""kprof's exceptions. Every problem with an input is a :class:`KprofInputError`
whose message is one line naming the file and what is wrong; the CLI prints it
and exits 2.

Messages are printed on terminals, and paths and reasons can carry text from the
input (a file name, a kernel name): control characters in them (a newline, the
escape sequences that retitle or clear a terminal) are shown escaped, ``\\n``,
``\\x1b``, so a message stays one printable line.
"""

from __future__ import annotations

import os
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str, keep: str = "") -> str:
    """``text`` with control characters escaped as Python would write them (``\\n``, ``\\x1b``),
    except those in ``keep`` (the text reprs keep ``"\\t\\n"``).

    Examples
    --------
    >>> printable("a\\nb\\x1b[2J")
    'a\\\\nb\\\\x1b[2J'
    """
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else repr(m.group())[1:-1], text)


class KprofError(Exception):
    """Base class of every error kprof raises on purpose."""


class KprofInputError(KprofError):
    """An input file is missing, unreadable, of the wrong type, corrupt or incomplete.

    ``str(err)`` is ``"<path>: <reason>"`` on one line.
    """

    def __init__(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes], reason: str) -> None:
        self.path = os.fsdecode(path)
        self.reason = printable(" ".join(str(reason).split()))  # one line, always
        super().__init__(f"{printable(self.path)}: {self.reason}")

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        # picklable, so that it can cross a process boundary (process pools, the ncu reader)
        return (type(self), (self.path, self.reason))


class MissingToolError(KprofError):
    """A needed external tool or optional package is not installed; the message says how to get it."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(" ".join(message.split())))

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (str(self),))
