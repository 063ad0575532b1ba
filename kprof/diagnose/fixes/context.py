"""What a fix is written from (:class:`Context`), and the sentences every writer shares."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kprof.diagnose.fixes.source import clip
from kprof.diagnose.language import Language, Origin
from kprof.kernel_model import KernelLaunch
from kprof.model import Bottleneck, Diagnosis, SourceLine

B = Bottleneck


L = Language


@dataclass(frozen=True, slots=True)
class Context:
    """What a fix is written from."""

    k: KernelLaunch
    d: Diagnosis
    origin: Origin
    where: tuple[SourceLine, ...]
    sm: int | None

    @property
    def top(self) -> SourceLine | None:
        return self.where[0] if self.where else None

    @property
    def lang(self) -> Language:
        return self.origin.language

    @property
    def is_cuda(self) -> bool:
        return self.lang in (L.CUDA, L.UNKNOWN)

    def line_ref(self, w: SourceLine | None = None, *, text: bool = True) -> str:
        """``line 22 (`pe = pos_t[...]`)``, or ``""`` without line info."""
        w = w if w is not None else self.top
        if w is None or w.line is None:
            return ""
        t = clip(w.text) if text else ""
        return f"line {w.line}" + (f" (`{t}`)" if t else "")

    @property
    def source(self) -> str:
        """The text of the top line's file, when embedded."""
        w = self.top
        if w and w.file:
            return self.k.source_files.get(w.file) or ""
        # no line carries the waste (no per-PC counters): the user's own file, when the report embeds one
        return next(
            (self.k.source_files.get(f) or "" for f in self.origin.files if self.k.source_files.get(f)), ""
        )

    def evidence_value(self, metric: str) -> float | None:
        for e in self.d.evidence:
            if e.metric == metric and isinstance(e.value, int | float):
                return float(e.value)
        return None

    def evidence_reference(self, metric: str) -> float | None:
        for e in self.d.evidence:
            if e.metric == metric and e.reference_value is not None:
                return float(e.reference_value)
        return None


def pct(share: float | None) -> str:
    """A share as a percentage for a sentence (``42%``, ``3.1%``); "" when unknown."""
    if share is None:
        return ""
    v = 100 * share
    return f"{v:.0f}%" if v >= 10 else f"{v:.2g}%"


_GROUP = re.compile(r"^(?P<n>\d+) instructions, (?P<span>\+0x[0-9a-f]+ to \+0x[0-9a-f]+)")
"""The detail of a where-entry that stands for several instructions of one opcode (no line info)."""


def where_sentence(c: Context, what: str) -> str:
    """``Line 22 (`...`) carries 100% of the excess L2 sectors: its LDG.E.CONSTANT moves 32 sectors ...``."""
    w = c.top
    if w is None:
        return ""
    group = _GROUP.match(w.detail) if w.line is None else None
    loc = (
        c.line_ref()
        if w.line is not None
        else f"the {group['n']} {w.instruction or 'such'} instructions (SASS {group['span']})"
        if group is not None
        else f"the instruction at SASS offset {w.pc:#x}"
        if w.pc is not None
        else ""
    )
    if not loc:
        return ""
    verb = "carry" if group is not None else "carries"
    s = f"{loc[0].upper()}{loc[1:]} {verb} {pct(w.share)} of the {w.quantity or what}"
    if group is not None:
        rest = w.detail[group.end() :].lstrip("; ")
        s += f" ({rest})" if rest else ""
    elif w.instruction:
        s += f" ({w.instruction}" + (f", {w.detail}" if w.detail else "") + ")"
    others = [x for x in c.where[1:] if x.line is not None or x.pc is not None]
    if others:
        s += "; then " + ", ".join(
            (f"line {x.line}" if x.line is not None else f"SASS {x.pc:#x}") + f" ({pct(x.share)})"
            for x in others
        )
    return s + "."


# ------------------------------------------------------------------------------------ per bottleneck
Text = tuple[str, str | None]
"""(sentence for the mechanism, new fix or None to keep the fix kernel.py wrote)."""


def keep_with_line(c: Context) -> str | None:
    """The fix kernel.py wrote (CUDA C++), anchored on the responsible line."""
    ref = c.line_ref()
    if not ref or not c.d.fix:
        return None
    return f"On {ref}: {c.d.fix[0].lower()}{c.d.fix[1:]}"


def sass_index(c: Context, w: SourceLine | None) -> int | None:
    """The index in the SASS listing of a responsible line's instruction."""
    if w is None or w.pc is None or not c.k.sass:
        return None
    entry = min(s.pc for s in c.k.sass)
    return next((i for i, s in enumerate(c.k.sass) if s.pc - entry == w.pc), None)
