"""kprof: why is a GPU program slow, and what specifically should change?

>>> import kprof
>>> diags = kprof.diagnose("data/samples/timeline/host_launch_bound.sqlite")  # doctest: +SKIP
>>> diags[0]  # doctest: +SKIP

Importing kprof loads only what ``kprof.diagnose`` of one file needs; the loaders of each format,
the judgements, numpy, the job engine and the renderers are imported when first used.
"""

from __future__ import annotations

import sys as _sys


def _command_line_args() -> list[str] | None:
    """The arguments of ``kprof ...`` / ``python -m kprof ...`` while this package is imported for it,
    else None (an ``import kprof`` in a program)."""
    argv, orig = _sys.argv, getattr(_sys, "orig_argv", [])
    if (
        argv
        and argv[0] == "-m"
        and "-m" in orig
        and orig[orig.index("-m") + 1 : orig.index("-m") + 2] == ["kprof"]
    ):
        return argv[1:]
    main = _sys.modules.get("__main__")
    if (
        argv
        and argv[0].removesuffix(".exe").endswith(("/kprof", "\\kprof"))
        and getattr(main, "__file__", None) == argv[0]
    ):
        return argv[1:]
    return None


if (_args := _command_line_args()) and _args[0] == "diagnose":
    # Start reading the first .ncu-rep now, while the command line imports the rest of kprof.
    from kprof.io.ncu import prestart as _prestart

    _prestart(_args)

from typing import TYPE_CHECKING, Any  # noqa: E402

from kprof import renderers as _renderers  # noqa: E402
from kprof._version import __version__  # noqa: E402


def _presentation() -> Any:
    import kprof.html

    return kprof.html


# The model shows itself through the presentation layer without importing it (see kprof.renderers).
_renderers.install(_presentation)

# Import the subpackage kprof.diagnose before binding the function of the same name: the import
# system sets the package attribute only on a subpackage's first import, so the function stays
# kprof.diagnose after kprof.diagnose.timeline & co. are imported later.
import kprof.diagnose as _diagnose_pkg  # noqa: E402, F401  (see above)
from kprof.api import compare, diagnose, diagnose_many  # noqa: E402
from kprof.errors import KprofError, KprofInputError, MissingToolError  # noqa: E402
from kprof.io import load  # noqa: E402
from kprof.model import (  # noqa: E402
    Bottleneck,
    Confidence,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Finding,
    SourceLine,
    Subject,
    SubjectKind,
    Verdict,
)

if TYPE_CHECKING:
    from kprof.jobs import diagnose_job


def __getattr__(name: str) -> Any:
    # The job engine (multiprocessing, optional Dask) is imported on first use.
    if name == "diagnose_job":
        from kprof.jobs import diagnose_job

        return diagnose_job
    raise AttributeError(f"module 'kprof' has no attribute {name!r}")


__all__ = [
    "Bottleneck",
    "Confidence",
    "Diagnosis",
    "Direction",
    "Evidence",
    "Expectation",
    "Finding",
    "KprofError",
    "KprofInputError",
    "MissingToolError",
    "SourceLine",
    "Subject",
    "SubjectKind",
    "Verdict",
    "__version__",
    "compare",
    "diagnose",
    "diagnose_job",
    "diagnose_many",
    "load",
]
