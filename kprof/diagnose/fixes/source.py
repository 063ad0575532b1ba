"""Reading CUDA C++ source and the kernel's loop structure, for fixes written at the line responsible."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kprof.kernel_model import KernelLaunch


def clip(text: str, n: int = 90) -> str:
    """One line of source for a sentence: whitespace collapsed, a trailing comment dropped, at most ``n`` chars."""
    t = " ".join(text.split())
    t = re.sub(r"\s*(//|#).*$", "", t) or t  # drop a trailing comment
    return t if len(t) <= n else t[: n - 3] + "..."


# ------------------------------------------------------------------------------------ CUDA C++ source reading
_ASSIGN = re.compile(
    r"(?:^|[;{(,\s])(?:const\s+)?(?:[A-Za-z_][\w:<>]*\s+)?([A-Za-z_]\w*)\s*=\s*([^;{},=][^;{},]*)[;,)]"
)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def strip_comments(source: str) -> str:
    """C/C++ source without its comments (they mention variables in prose)."""
    return _COMMENT.sub(" ", source)


_THREAD_X = re.compile(r"threadIdx\.x|laneid|lane_id|\blane\b|\btid\b")


_WARP_UNIFORM = re.compile(r"threadIdx\.x\s*(>>\s*5|/\s*(32|warpSize))")


def _uses(expr: str, var: str) -> bool:
    """``var`` appears in ``expr`` as a variable (not as a member, as in ``blockIdx.x``)."""
    return re.search(rf"(?<![.\w]){re.escape(var)}\b", expr) is not None


def thread_varying(source: str) -> set[str]:
    """Variables whose value changes from one lane of a warp to the next (derived from ``threadIdx.x``).

    Examples
    --------
    >>> sorted(thread_varying("int row = blockIdx.y; int col = blockIdx.x * blockDim.x + threadIdx.x; long i = col + 1;"))
    ['col', 'i']
    """
    out: set[str] = set()
    assigns = [(m.group(1), m.group(2)) for m in _ASSIGN.finditer(strip_comments(source))]
    for _ in range(6):  # a few rounds of propagation through assignments
        grew = False
        for name, rhs in assigns:
            if name in out:
                continue
            if _WARP_UNIFORM.search(rhs) and not _THREAD_X.search(_WARP_UNIFORM.sub(" ", rhs)):
                continue  # threadIdx.x / 32: the same for all lanes of a warp
            if _THREAD_X.search(rhs) or any(_uses(rhs, v) for v in out):
                out.add(name)
                grew = True
        if not grew:
            break
    return out


def _top_level_terms(expr: str) -> list[str]:
    terms, depth, cur = [], 0, ""
    for ch in expr:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch in "+-" and depth == 0 and cur.strip():
            terms.append(cur)
            cur = ""
            continue
        cur += ch
    if cur.strip():
        terms.append(cur)
    return [t.strip() for t in terms]


_CAST = re.compile(r"\(\s*(?:long|int|unsigned|size_t|int64_t|uint64_t|long long|unsigned long)\s*\)")


@dataclass(frozen=True, slots=True)
class StridedAccess:
    """``array[... var * stride ...]``: the lane-varying ``var`` is multiplied by ``stride``."""

    array: str
    var: str
    stride: str
    others: str
    """The rest of the index (what would become the slow part once the roles swap)."""


def strided_access(line: str, varying: set[str]) -> StridedAccess | None:
    """The first subscript on ``line`` whose lane-varying variable carries a non-unit stride.

    Examples
    --------
    >>> a = strided_access("const float pe = pos_t[(long)col * rows + row];", {"col"})
    >>> a.array, a.var, a.stride, a.others
    ('pos_t', 'col', 'rows', 'row')
    >>> strided_access("const float xv = x[idx];", {"idx"}) is None
    True
    """
    for m in re.finditer(r"([A-Za-z_]\w*)\s*\[([^\[\]]+)\](\s*\[([^\[\]]+)\])?", line):
        array, first, second = m.group(1), m.group(2), m.group(4)
        if second is not None:  # array[a][b]: a lane-varying a strides by a whole row
            if any(_uses(first, v) for v in varying) and not any(_uses(second, v) for v in varying):
                var = next(v for v in varying if _uses(first, v))
                return StridedAccess(array, var, "the row length", second.strip())
            continue
        terms = _top_level_terms(_CAST.sub("", first))
        for i, t in enumerate(terms):
            factors = [f.strip().strip("()") for f in re.split(r"\*", t)]
            lane = [f for f in factors if f in varying or f == "threadIdx.x"]
            if not lane:
                continue
            rest = [f for f in factors if f not in lane]
            if rest and not all(re.fullmatch(r"1|1L|1l", f) for f in rest):
                others = " + ".join(x for j, x in enumerate(terms) if j != i) or "0"
                return StridedAccess(array, lane[0], " * ".join(rest), _CAST.sub("", others).strip())
    return None


SHARED_DECL = re.compile(r"__shared__\s+([\w:]+)\s+(\w+)((?:\s*\[[^\]]+\])+)\s*;")


def shared_declaration(source: str, line: str) -> tuple[str, str, list[str]] | None:
    """``(type, name, dims)`` of the ``__shared__`` array that ``line`` indexes, when it is 2-D or more."""
    decls = {
        m.group(2): (m.group(1), m.group(2), re.findall(r"\[([^\]]+)\]", m.group(3)))
        for m in SHARED_DECL.finditer(source)
    }
    for name in re.findall(r"([A-Za-z_]\w*)\s*\[", line):
        if name in decls and len(decls[name][2]) >= 2:
            return decls[name]
    return None


def padded(dim: str) -> str:
    """A ``__shared__`` dimension one word longer."""
    d = dim.strip()
    return str(int(d) + 1) if d.isdigit() else f"{d} + 1"


_BRA_TARGET = re.compile(r"\bBRA\b[^0-9]*0x([0-9a-fA-F]+)")


_FOR_BOUND = re.compile(r"\bfor\s*\([^;]*;\s*\w+\s*<=?\s*([A-Za-z_][\w.>-]*)\s*;")


def has_loop(k: KernelLaunch) -> bool:
    """True when the SASS holds a backward branch (a ``BRA`` to a lower address that executed, when counted): the
    kernel has a loop, so pipelining across iterations (num_stages, cp.async stages) can apply."""
    for s in k.sass:
        hit = _BRA_TARGET.search(s.text) if s.mnemonic == "BRA" else None
        if hit is not None and int(hit.group(1), 16) < s.pc and s.counters.get("inst_executed", 1.0) > 0:
            return True
    return False


def hot_loop(k: KernelLaunch) -> tuple[int, str, str] | None:
    """The most executed loop of the kernel whose trip count is a run-time bound: (line, text, bound) of the
    ``for`` line that the hottest backward branch (a ``BRA`` to a lower address) maps to, when its bound is not the
    thread or block index (a loop each thread runs serially, whose iterations more blocks could share); None
    without per-PC counters, line info or such a loop."""
    best: tuple[float, int, str] | None = None
    for s in k.sass:
        if s.mnemonic != "BRA" or not s.line or not s.file:
            continue
        hit = _BRA_TARGET.search(s.text)
        n = s.counters.get("inst_executed") or 0.0
        if hit is None or int(hit.group(1), 16) >= s.pc or n <= 0:
            continue
        text = k.source_line(s.file, s.line).strip()
        if best is None or n > best[0]:
            best = (float(n), s.line, text)
    if best is None:
        return None
    m = _FOR_BOUND.search(best[2])
    if m is None or re.search(r"threadIdx|blockIdx|blockDim|gridDim", m.group(1)):
        return None
    return best[1], best[2], m.group(1)
