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


def diagnosis_anchor(subject: str, bottleneck: str, verdict: str, headline: str) -> str:
    """The element id a diagnosis's full view carries, from what it says (``kp-d-<10 hex digits>``): a
    table of verdicts links each row to it (the report's header does) without knowing the counter id.

    Examples
    --------
    >>> diagnosis_anchor("x.sqlite", "sync_bound", "fix", "Sync-bound.") == diagnosis_anchor("x.sqlite", "sync_bound", "fix", "Sync-bound.")
    True
    """
    import hashlib

    text = "\0".join((subject, bottleneck, verdict, headline))
    return "kp-d-" + hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:10]


def first_sentence(text: str) -> str:
    """The first sentence of ``text``: up to the first ``.``, ``!`` or ``?`` followed by a space and a
    capital (or the end), outside parentheses and backticks, not an abbreviation (e.g., i.e., vs.).

    Examples
    --------
    >>> first_sentence("Use a graph (e.g. torch.compile(mode='max')). Then fuse, 1.5 ms less. More.")
    "Use a graph (e.g. torch.compile(mode='max'))."
    >>> first_sentence("Keep `x.item()` out. Rest.")
    'Keep `x.item()` out.'
    """
    depth, code = 0, False
    n = len(text)
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch in ".!?" and depth == 0:
            if i + 1 == n:
                return text
            if text[i + 1] == " " and i + 2 < n and (text[i + 2].isupper() or text[i + 2] in "`\"'("):
                if text[: i + 1].rsplit(" ", 1)[-1].lower() in _ABBREVIATIONS:
                    continue
                return text[: i + 1]
    return text


_ABBREVIATIONS = frozenset({"e.g.", "i.e.", "vs.", "cf.", "approx.", "(e.g.", "(i.e."})


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
