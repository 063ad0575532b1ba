"""What the renderers share: element ids, the jinja2 environment, the packaged stylesheet."""

from __future__ import annotations

import functools
import itertools
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2

_ids = itertools.count(1)


def reset_ids() -> None:
    """Restart element ids at 1 (for snapshot tests)."""
    global _ids
    _ids = itertools.count(1)


def next_id(prefix: str = "kp") -> str:
    """A fresh element id, stable across runs once :func:`reset_ids` was called."""
    return f"{prefix}-{next(_ids)}"


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    import jinja2  # on first use: plain text and JSON never need it

    return jinja2.Environment(
        loader=jinja2.PackageLoader("kprof.html", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


@functools.lru_cache(maxsize=1)
def css() -> str:
    """The packaged stylesheet (read once)."""
    return resources.files("kprof.html").joinpath("templates/style.css").read_text(encoding="utf-8")
