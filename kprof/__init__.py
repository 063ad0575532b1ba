"""kprof: why is a GPU program slow, and what specifically should change?

>>> import kprof
>>> diags = kprof.diagnose("data/samples/host_launch_bound.sqlite")  # doctest: +SKIP
>>> diags[0]  # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

# Import the subpackage kprof.diagnose before binding the function of the same name: the import
# system sets the package attribute only on a subpackage's first import, so the function stays
# kprof.diagnose after kprof.diagnose.timeline & co. are imported later.
import kprof.diagnose as _diagnose_pkg  # noqa: F401  (see above)
from kprof.api import diagnose, diagnose_many
from kprof.diagnose.compare import compare
from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.io import load
from kprof.jobs import diagnose_job
from kprof.model import (
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
