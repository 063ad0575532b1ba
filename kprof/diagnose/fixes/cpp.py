"""Reading CUDA C++ source for fixes that rewrite a line: macros, the kernel's declaration and parameters, typedefs.

A fix names the construct on its line and shows the line rewritten; a source line often says ``i % DIVISOR`` or
``T(idx)`` where the construct is in a ``#define``, or uses ``index_t`` where the 64-bit type is in a ``typedef``.
These helpers read the embedded file the way the preprocessor and the compiler would for those few things: macro
definitions (object-like and function-like, with every definition kept, since ``#ifdef`` branches are not
evaluated: the caller picks the definition the SASS shows was compiled), the ``__global__`` declaration of a
kernel with its parameters and their byte offsets (the argument a constant-bank load reads), and typedefs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kprof.diagnose.fixes.source import strip_comments


@dataclass(frozen=True, slots=True)
class Macro:
    """One ``#define``."""

    name: str
    params: tuple[str, ...] | None
    """None for an object-like macro."""
    body: str
    line: int
    text: str
    """The ``#define`` line as written."""


_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)(\(([^)]*)\))?(?:[ \t]+(.*?))?\s*$")


def macros(source: str) -> dict[str, list[Macro]]:
    """Every ``#define`` of ``source``, by name, in source order (all branches of ``#if``/``#else`` kept).

    Examples
    --------
    >>> m = macros("#ifdef F\\n#define DAMP 0.999f\\n#else\\n#define DAMP 0.999\\n#endif\\n#define T(j) t[j]")
    >>> [d.body for d in m["DAMP"]], m["T"][0].params
    (['0.999f', '0.999'], ('j',))
    """
    out: dict[str, list[Macro]] = {}
    for n, raw in enumerate(source.splitlines(), 1):
        line = re.sub(r"//.*$", "", raw)
        m = _DEFINE.match(line)
        if not m:
            continue
        params = tuple(p.strip() for p in m.group(3).split(",") if p.strip()) if m.group(2) else None
        out.setdefault(m.group(1), []).append(
            Macro(name=m.group(1), params=params, body=(m.group(4) or "").strip(), line=n, text=raw.strip())
        )
    return out


def _args(text: str, start: int) -> tuple[list[str], int] | None:
    """The comma-separated arguments of the call whose ``(`` is at ``start``, and the index after its ``)``."""
    depth, cur, out = 0, "", []
    for j in range(start, len(text)):
        ch = text[j]
        if ch in "([{":
            depth += 1
            if depth == 1:
                continue
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                out.append(cur.strip())
                return out, j + 1
        elif ch == "," and depth == 1:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    return None


def call_args(text: str, name: str) -> tuple[int, int, list[str]] | None:
    """``(start, end, args)`` of the first call ``name(...)`` in ``text`` (brackets may nest), None without one.

    Examples
    --------
    >>> call_args("acc += sinf(v * (float)k);", "sinf")
    (7, 25, ['v * (float)k'])
    """
    m = re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", text)
    if m is None:
        return None
    got = _args(text, m.end() - 1)
    if got is None:
        return None
    args, end = got
    return m.start(), end, args


def expand(
    text: str, defs: dict[str, list[Macro]], pick: dict[str, Macro] | None = None, depth: int = 4
) -> str:
    """``text`` with its macros expanded (``pick`` chooses the definition of a macro defined more than once; the
    last one otherwise), ``depth`` levels deep.

    Examples
    --------
    >>> expand("const float tv = T(idx);", macros("#define T(j) t[j]"))
    'const float tv = t[idx];'
    """
    out = text
    for _ in range(depth):
        changed = False
        for name, ds in defs.items():
            d = (pick or {}).get(name) or ds[-1]
            if not re.search(rf"(?<![\w.]){re.escape(name)}\b", out):
                continue
            if d.params is None:
                new = re.sub(rf"(?<![\w.]){re.escape(name)}\b", d.body.replace("\\", "\\\\"), out)
            else:
                got = call_args(out, name)
                if got is None or len(got[2]) != len(d.params):
                    continue
                start, end, args = got
                body = d.body
                for p, a in zip(d.params, args, strict=True):
                    body = re.sub(rf"\b{re.escape(p)}\b", a.replace("\\", "\\\\"), body)
                new = out[:start] + body + out[end:]
            if new != out:
                out, changed = new, True
        if not changed:
            break
    return out


@dataclass(frozen=True, slots=True)
class Param:
    type: str
    name: str
    text: str
    """As written (``const float* __restrict__ x``)."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """A kernel's ``__global__`` declaration in the embedded source."""

    line: int
    """The line that holds the kernel's name."""
    text: str
    """That line as written."""
    head: str
    """The declaration from its first line through the closing ``)`` of the parameters, whitespace collapsed."""
    params: tuple[Param, ...]
    extern_c: bool


_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "unsigned", "signed", "struct"}


def kernel_declaration(source: str, name: str) -> Declaration | None:
    """The ``__global__`` declaration of kernel ``name`` in ``source`` (None when it is not there)."""
    if not source or not name:
        return None
    clean = strip_comments(source)
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", clean):
        before = clean[max(0, m.start() - 300) : m.start()]
        if "__global__" not in before.rsplit(";", 1)[-1].rsplit("}", 1)[-1]:
            continue
        got = _args(clean, m.end() - 1)
        if got is None:
            continue
        args, end = got
        params = tuple(p for a in args if a and a != "void" and (p := _param(a)) is not None)
        line = clean[: m.start()].count("\n") + 1
        start = clean.rfind("\n", 0, max(0, m.start() - len(before))) + 1
        decl_start = clean.rfind("__global__", 0, m.start())
        head_start = clean.rfind("\n", 0, decl_start) + 1 if decl_start >= 0 else start
        head = " ".join(clean[head_start:end].split())
        text = source.splitlines()[line - 1].strip() if line <= len(source.splitlines()) else head
        return Declaration(line=line, text=text, head=head, params=params, extern_c='extern "C"' in head)
    return None


def _param(text: str) -> Param | None:
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*$", text.strip())
    if m is None or not m.group(1).strip():
        return None
    return Param(type=" ".join(m.group(1).split()), name=m.group(2), text=" ".join(text.split()))


_SIZES = {
    "char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1, "short": 2, "int16_t": 2, "uint16_t": 2, "half": 2,
    "__half": 2, "__nv_bfloat16": 2, "int": 4, "unsigned": 4, "float": 4, "int32_t": 4, "uint32_t": 4,
    "__half2": 4, "__nv_bfloat162": 4, "long": 8, "double": 8, "size_t": 8, "int64_t": 8, "uint64_t": 8,
    "ptrdiff_t": 8, "long long": 8, "float2": 8, "int2": 8, "float4": 16, "int4": 16, "double2": 16,
}  # fmt: skip
"""Bytes (= alignment) of the argument types a kernel is commonly declared with (LP64: ``long`` is 8 bytes)."""


def base_type(type_text: str, types: dict[str, str] | None = None) -> str:
    """``const unsigned long long`` -> ``long long``; a typedef resolved through ``types``; ``""`` when unknown."""
    t = type_text.replace("*", " * ")
    words = [w for w in t.split() if w not in _QUALIFIERS and w != "*"]
    core = " ".join(words)
    core = re.sub(r"\blong\s+long\s+int\b|\blong\s+long\b", "long long", core)
    core = re.sub(r"\blong\s+int\b", "long", core)
    if types and core in types:
        return base_type(types[core])
    return core or ("int" if "unsigned" in t.split() else "")


def param_offsets(
    params: tuple[Param, ...], types: dict[str, str] | None = None
) -> list[tuple[int, Param]] | None:
    """Each parameter's byte offset in the argument buffer (pointers 8 bytes, each aligned to its size), or None
    when a type's size is unknown.

    Examples
    --------
    >>> d = kernel_declaration('extern "C" __global__ void k(unsigned* out, int W, int n) {}', "k")
    >>> [(o, p.name) for o, p in param_offsets(d.params)]
    [(0, 'out'), (8, 'W'), (12, 'n')]
    """
    out: list[tuple[int, Param]] = []
    off = 0
    for p in params:
        size = 8 if "*" in p.type or "&" in p.type else _SIZES.get(base_type(p.type, types))
        if size is None:
            return None
        off = -(-off // size) * size
        out.append((off, p))
        off += size
    return out


def typedefs(source: str) -> dict[str, tuple[str, int, str]]:
    """``typedef T name;`` and ``using name = T;`` of ``source``: name -> (T, line, line text), the last one of
    each name (all ``#if`` branches read)."""
    out: dict[str, tuple[str, int, str]] = {}
    for n, raw in enumerate(source.splitlines(), 1):
        line = re.sub(r"//.*$", "", raw)
        m = re.match(r"^\s*typedef\s+(.+?)\s+([A-Za-z_]\w*)\s*;", line) or re.match(
            r"^\s*using\s+([A-Za-z_]\w*)\s*=\s*(.+?)\s*;", line
        )
        if not m:
            continue
        t, name = (
            (m.group(1), m.group(2)) if line.lstrip().startswith("typedef") else (m.group(2), m.group(1))
        )
        out[name] = (t, n, raw.strip())
    return out


def all_typedefs(source: str) -> dict[str, list[tuple[str, int, str]]]:
    """Every typedef/using of each name, in source order (``#if`` branches are not evaluated)."""
    out: dict[str, list[tuple[str, int, str]]] = {}
    for n, raw in enumerate(source.splitlines(), 1):
        line = re.sub(r"//.*$", "", raw)
        m = re.match(r"^\s*typedef\s+(.+?)\s+([A-Za-z_]\w*)\s*;", line)
        u = re.match(r"^\s*using\s+([A-Za-z_]\w*)\s*=\s*(.+?)\s*;", line)
        if m:
            out.setdefault(m.group(2), []).append((m.group(1), n, raw.strip()))
        elif u:
            out.setdefault(u.group(1), []).append((u.group(2), n, raw.strip()))
    return out


__all__ = [
    "Declaration",
    "Macro",
    "Param",
    "all_typedefs",
    "base_type",
    "call_args",
    "expand",
    "kernel_declaration",
    "macros",
    "param_offsets",
    "typedefs",
]
