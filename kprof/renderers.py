"""How the model reaches its renderers without importing them.

The results (:class:`~kprof.model.Diagnosis`, :class:`~kprof.comparison_model.Comparison`,
:class:`~kprof.timeline_model.Timeline`, :class:`~kprof.kernel_model.KernelProfile`) show
themselves as text and HTML (``to_text()``, ``_repr_mimebundle_``), but the renderers belong to the
presentation layer (:mod:`kprof.html`), which imports the model: the model importing them back
would make the layers loop. So the model asks this module for "the presentation", and the package
(``kprof/__init__.py``, always imported before any of its modules) installs :mod:`kprof.html`
here, imported on first use only (a ``kprof diagnose --json`` never loads jinja2).

Examples
--------
>>> import kprof
>>> from kprof import renderers
>>> renderers.presenter().__name__
'kprof.html'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_loader: Callable[[], Any] | None = None


def install(loader: Callable[[], Any]) -> None:
    """Set the function that returns the presentation module (called once, by ``kprof/__init__.py``).

    The module must provide ``diagnosis_summary``, ``render_text``, ``render_html``,
    ``timeline_mimebundle``, ``kernel_profile_mimebundle``, ``comparison_summary``,
    ``render_comparison_text`` and ``render_comparison_html``.
    """
    global _loader
    _loader = loader


def presenter() -> Any:
    """The presentation module installed by :func:`install`."""
    if _loader is None:  # only when kprof/__init__.py failed half-way
        raise RuntimeError("kprof's renderers are not installed (import kprof first)")
    return _loader()


__all__ = ["install", "presenter"]
