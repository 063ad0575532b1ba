"""kprof's version (read by the build backend and by ``kprof --version``)."""

__version__ = "0.1.0"
