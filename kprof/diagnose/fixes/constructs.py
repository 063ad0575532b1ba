"""The construct on the responsible line, and the one change to it, from the SASS idioms (issue 24).

:func:`construct_text` is the step from *instruction* to *construct*: given a diagnosis whose bottleneck the counters
decided and the lines responsible (:mod:`kprof.diagnose.where`), it takes the source constructs the SASS shows
(:func:`kprof.facts.constructs.constructs`, the idioms of :mod:`kprof.knowledge.constructs`), keeps those that can
cause this bottleneck and sit on the responsible lines, and writes, for the largest one:

- a mechanism sentence that names the construct on its line (the line quoted, the instructions that give it away,
  where the deciding value comes from: "`DIVISOR` is `W`, the kernel's 2nd argument"), and
- the fix: one change to that construct in the kernel's language, with the source line rewritten (before and after)
  when the report embeds the file, the alternatives after it, and, where the SASS cannot tell two constructs apart,
  which two and what would tell them apart.

It returns None when no construct applies, and the per-bottleneck writers (:mod:`.compute`, :mod:`.memory`, ...)
word the fix as before. Names never decide anything here: the constructs come from the SASS and its data flow, and
the source is read only to quote and rewrite the line.
"""

from __future__ import annotations

import re

from kprof import thresholds as th
from kprof.diagnose.fixes import cpp
from kprof.diagnose.fixes.context import Context, L, Text, pct
from kprof.diagnose.fixes.source import clip, strip_comments
from kprof.facts.constructs import Construct, constructs
from kprof.knowledge import constructs as kc
from kprof.model import Verdict
from kprof.rules.kernel.local import register_cap

_ORDINAL = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


_TRITON_KINDS = frozenset(
    {kc.RUNTIME_DIVISION, kc.INDEX64, kc.HALF_ROUND_TRIP, kc.TRIG_SLOW_PATH, kc.PREDICATED_LOAD}
)
"""The idioms whose Triton form is a change to the program's own code; the others (barriers, per-thread arrays,
spills, branches, atomics) Triton's compiler decides, and the Triton writers of :mod:`kprof.diagnose.fixes` word
what the program can change."""


def construct_text(c: Context) -> Text | None:
    """(mechanism sentence, fix) naming the construct behind ``c.d``'s bottleneck on its line; None when the SASS
    shows no construct that explains it there."""
    if c.d.bottleneck is None or c.d.verdict is not Verdict.FIX or c.lang in (L.LIBRARY, L.PYTORCH):
        return None
    x = pick(c)
    if x is None or (not c.is_cuda and x.kind not in _TRITON_KINDS):
        return None
    writer = _WRITERS.get(x.kind)
    if writer is None:
        return None
    if not c.is_cuda:
        return _other_language(c, x)
    return writer(c, x)


def pick(c: Context) -> Construct | None:
    """The construct that explains ``c.d``'s bottleneck on the responsible lines (the largest such), or None.

    A construct qualifies when its idiom can cause the bottleneck (:attr:`Idiom.explains`), it is at least
    CONSTRUCT_MIN_SHARE of what its idiom measures, and, when the diagnosis names lines, one of them is the
    construct's (a construct elsewhere is not what the counters blame); the one on the line carrying the most waste
    wins."""
    assert c.d.bottleneck is not None
    bid = c.d.bottleneck.value
    found = [
        x
        for x in constructs(c.k)
        if bid in kc.IDIOMS[x.kind].explains and x.share >= th.CONSTRUCT_MIN_SHARE and x.kind in _WRITERS
    ]
    named = [(w.file, w.line) for w in c.where if w.file and w.line]
    if named:
        rank = {ln: i for i, ln in enumerate(named)}
        on = [x for x in found if any(ln in rank for ln in (*x.lines, *x.origin_lines))]
        return min(
            on,
            key=lambda x: (min(rank.get(ln, len(rank)) for ln in (*x.lines, *x.origin_lines)), -x.share),
            default=None,
        )
    return max(found, key=lambda x: x.share, default=None)


# ------------------------------------------------------------------------------------ shared wording
def _src(c: Context, x: Construct) -> str:
    f = (x.lines or x.origin_lines or (("", 0),))[0][0]
    return c.k.source_files.get(f) or c.source


def _text(c: Context, ln: tuple[str, int]) -> str:
    return c.k.source_line(ln[0], ln[1]).strip()


def _at(c: Context, x: Construct, ln: tuple[str, int] | None = None) -> str:
    """``Line 18 (`const int col = i % DIVISOR;`)``, or ``The SASS`` without line info."""
    ln = ln or (x.lines[0] if x.lines else None)
    if ln is None:
        return "The SASS"
    t = _text(c, ln)
    return f"Line {ln[1]}" + (f" (`{clip(t)}`)" if t else "")


def _lines_words(lines: tuple[tuple[str, int], ...]) -> str:
    """``line 18``, ``lines 16 and 17``, ``lines 13 to 17`` (consecutive), ``lines 9, 14, 20 and 2 more``."""
    nums = [ln[1] for ln in lines]
    if len(nums) == 1:
        return f"line {nums[0]}"
    if len(nums) > 3 and sorted(nums) == list(range(min(nums), max(nums) + 1)):
        return f"lines {min(nums)} to {max(nums)}"
    shown = [str(n) for n in nums[:3]]
    more = f" and {len(nums) - 3} more" if len(nums) > 3 else ""
    return "lines " + (", ".join(shown) + more if more else ", ".join(shown[:-1]) + f" and {shown[-1]}")


def _change(n: int, before: str, after: str, width: int = 120) -> str:
    """``line 8: `after` instead of `before` `` (an opening brace at the end of the line left out)."""

    def shown(t: str) -> str:
        return clip(t.rstrip().removesuffix("{").rstrip(), width)

    return f"line {n}: `{shown(after)}` instead of `{shown(before)}`"


def _kernel_name(c: Context) -> str:
    return (
        c.k.display_name.split("(")[0].split("<")[0].split("::")[-1].split()[-1] if c.k.display_name else ""
    )


def _ops(x: Construct, n: int = 4) -> str:
    return ", ".join(x.sass[:n])


def _other_language(c: Context, x: Construct) -> Text:
    """Triton (and Inductor): the construct and its change in Triton terms, from the table."""
    i = kc.IDIOMS[x.kind]
    mech = f"{_at(c, x)} is {i.construct} ({i.triton}); its SASS: {_ops(x)}."
    fix = i.triton_change[0].upper() + i.triton_change[1:] + "."
    text = strip_comments(_text(c, x.lines[0])) if x.lines else ""
    names = list(
        dict.fromkeys(m.group(1) for m in re.finditer(r"(?://|%)\s*([A-Za-z_]\w*)\b(?!\s*\()", text))
    )
    if x.kind == kc.RUNTIME_DIVISION and names:
        listed = " and ".join(f"`{n}: tl.constexpr`" for n in names)
        fix = (
            f"Declare {listed} in the kernel's signature (one compilation per value), so line {x.lines[0][1]} "
            "compiles to a multiply-high and a shift (a shift and a mask for a power of two) instead of the "
            "reciprocal sequence."
        )
    if i.confusable:
        fix += f" {i.confusable}"
    return mech, fix


# ------------------------------------------------------------------------------------ division
_DIVIDE = re.compile(r"(?<![/*])([/%])\s*\(?\s*([A-Za-z_]\w*)\b(?!\s*[(\[.])")


def _is_literal(body: str) -> bool:
    return re.fullmatch(r"\(?\s*[-+]?(0x[0-9a-fA-F]+|\d+)[uUlL]*\s*\)?", body.strip()) is not None


def _runtime_pick(defs: dict[str, list[cpp.Macro]]) -> dict[str, cpp.Macro]:
    """For macros defined more than once (``#ifdef`` branches), the definition that is not a numeric literal: the
    SASS shows a division by a run-time value, so that branch was compiled."""
    out: dict[str, cpp.Macro] = {}
    for name, ds in defs.items():
        runtime = [d for d in ds if not _is_literal(d.body)]
        if runtime:
            out[name] = runtime[-1]
    return out


def _argument(c: Context, x: Construct, src: str) -> cpp.Param | None:
    """The kernel parameter at the construct's argument offset (the constant-bank load its value comes from)."""
    if x.argument_offset is None:
        return None
    decl = cpp.kernel_declaration(src, _kernel_name(c))
    if decl is None:
        return None
    types = {n: t for n, (t, _, _) in cpp.typedefs(src).items()}
    offs = cpp.param_offsets(decl.params, types)
    return next((p for off, p in offs or [] if off == x.argument_offset), None)


def _divisors(
    c: Context, ln: tuple[str, int], defs: dict[str, list[cpp.Macro]], pick_defs: dict[str, cpp.Macro]
) -> list[str]:
    """The variables line ``ln`` divides by (its macros expanded), in order."""
    expanded = cpp.expand(strip_comments(_text(c, ln)), defs, pick_defs)
    return list(dict.fromkeys(m.group(2) for m in _DIVIDE.finditer(expanded)))


def _division(c: Context, x: Construct) -> Text | None:
    src = _src(c, x)
    defs = cpp.macros(src)
    pick_defs = _runtime_pick(defs)
    ln = x.lines[0] if x.lines else None
    text = _text(c, ln) if ln else ""
    divisors = _divisors(c, ln, defs, pick_defs) if ln else []
    param = _argument(c, x, src)
    name = param.name if param is not None and param.name in divisors else (divisors[0] if divisors else "")
    if not name and param is not None:
        name = param.name
    spelled = [m.group(2) for m in _DIVIDE.finditer(strip_comments(text))]
    macro = next((s for s in spelled if s in defs and s != name), None)
    # every run-time division of the kernel that is worth naming, and the divisors they use
    others = [
        y
        for y in constructs(c.k)
        if y.kind == kc.RUNTIME_DIVISION
        and y.share >= th.CONSTRUCT_MIN_SHARE
        and y.lines
        and y.origin == x.origin
    ]
    lines = tuple(sorted({y.lines[0] for y in others} | ({ln} if ln else set()), key=lambda t: t[1]))
    names = list(dict.fromkeys(n for y in lines for n in _divisors(c, y, defs, pick_defs)))
    share = sum(y.share for y in others) if len(lines) > 1 else x.share
    decl = cpp.kernel_declaration(src, _kernel_name(c))
    position = next((i for i, q in enumerate(decl.params) if q.name == name), None) if decl else None
    where_from = {
        "argument": (
            f"the kernel's {_ORDINAL[position]} argument, known only at run time"
            if position is not None and position < len(_ORDINAL)
            else "a kernel argument, known only at run time"
        ),
        "launch": f"{x.launch_dim or 'the launch dimensions'}, known only at run time",
        "data": "a value loaded from memory"
        + (f" ({_lines_words(x.origin_lines)})" if x.origin_lines else ""),
        "lane": "a value computed from the thread index",
        "block": "a value computed from the block index",
    }.get(x.origin, "a value computed in the kernel")
    sass = f"Its SASS is the divisor's reciprocal ({_ops(x, 3)}) and, per quotient, a multiply-high with a compare-and-correct"
    if len(names) > 1 and x.origin == "argument":
        listed = ", ".join(f"`{n}`" for n in names[:-1]) + f" and `{names[-1]}`"
        mech = (
            f"{_lines_words(lines).capitalize()} (`{clip(text, 60)}`, ...) divide by {listed}, kernel arguments known "
            f"only at run time: {kc.IDIOMS[x.kind].construct}, {len(names)} of them per element. {sass}: "
            f"{pct(share)} of the executed instructions."
        )
        fix = (
            f"Precompute, on the host, a multiply-shift pair for each of {listed} (division by invariant integers, "
            "as CUTLASS's FastDivmod does) and pass those instead, so each `/` and `%` on "
            f"{_lines_words(lines)} becomes one IMAD.HI and a shift; merging dimensions that are contiguous removes "
            "their divisions altogether, and sizes fixed at compile time (template parameters) become shifts and "
            "masks when they are powers of two."
        )
        return mech, fix
    what = (
        f"`{macro}` (`{name}`, {where_from})"
        if macro and name
        else f"`{name}`, {where_from}"
        if name
        else where_from
    )
    mech = (
        f"{_at(c, x)} divides by {what}: {kc.IDIOMS[x.kind].construct}. {sass}: {pct(x.share)} of the executed "
        "instructions."
    )
    pow2 = _pow2_rewrite(src, defs, pick_defs, name, ln)
    if x.origin == "argument" and name:
        fix = _template_fix(c, src, name, ln, pow2)
    elif x.origin == "launch":
        dim = x.launch_dim or "blockDim.x"
        fix = (
            f"Make the {'block size' if dim.startswith('blockDim') else 'grid size'} a compile-time constant: a "
            f"template parameter (`template <int BLOCK> __global__ void {_kernel_name(c)}(...)`, launched "
            f"`<<<grid, BLOCK>>>`) used in place of `{dim}` on {_lines_words(x.lines) if x.lines else 'the line'}, "
            "so the quotient is one IMAD.HI and a shift (a power-of-two block size: a shift)."
        )
    elif x.origin == "data":
        fix = (
            f"The divisor is loaded per element, so it cannot be a constant: precompute each divisor's multiply-shift "
            "pair where the divisors are produced (division by invariant integers, as CUTLASS's FastDivmod does) and "
            f"load that pair instead on {_lines_words(x.lines) if x.lines else 'this line'}, so each quotient is one "
            "IMAD.HI and a shift."
        )
    else:
        fix = kc.IDIOMS[x.kind].cuda_change[0].upper() + kc.IDIOMS[x.kind].cuda_change[1:] + "."
    return mech, fix


def _index(c: Context, src: str, p: cpp.Param | None) -> int | None:
    if p is None:
        return None
    decl = cpp.kernel_declaration(src, _kernel_name(c))
    if decl is None:
        return None
    i = next((n for n, q in enumerate(decl.params) if q.name == p.name), None)
    return i if i is not None and i < len(_ORDINAL) else None


def _template_fix(c: Context, src: str, name: str, ln: tuple[str, int] | None, pow2: str) -> str:
    decl = cpp.kernel_declaration(src, _kernel_name(c))
    at = f"line {ln[1]}" if ln else "the division"
    if decl is None or not any(p.name == name for p in decl.params):
        return (
            f"Make `{name}` a compile-time constant (a template parameter or `constexpr`), so {at} compiles to one "
            f"IMAD.HI by a magic number and a shift." + (f" {pow2}" if pow2 else "")
        )
    p = next(p for p in decl.params if p.name == name)
    head = decl.head.split("{")[0].strip()
    kept = ", ".join(q.text for q in decl.params if q.name != name)
    kname = _kernel_name(c)
    m = re.search(rf"\b{re.escape(kname)}\s*\(", head)
    prefix = head[: m.start()] if m else head
    prefix = re.sub(r'\bextern\s+"C"\s*', "", prefix).strip()
    ctype = cpp.base_type(p.type) or "int"
    after = f"template <{ctype} {name}> {prefix} {kname}({kept})"
    fix = (
        f"Make `{name}` a compile-time constant: declare the kernel `{clip(after, 140)}` instead of "
        f"`{clip(head, 140)}`"
        + (' (a template needs C++ linkage, so `extern "C"` goes; launch' if decl.extern_c else " (launch")
        + f" `{kname}<...>` with the value as the template argument, one instantiation per value used), so {at} compiles to one IMAD.HI by a magic "
        "number and a shift instead of the reciprocal sequence."
    )
    return fix + (f" {pow2}" if pow2 else "")


def _pow2_rewrite(
    src: str,
    defs: dict[str, list[cpp.Macro]],
    pick_defs: dict[str, cpp.Macro],
    name: str,
    ln: tuple[str, int] | None,
) -> str:
    """The power-of-two alternative, with the lines that divide by ``name`` rewritten as a shift and a mask."""
    if not name or ln is None:
        return ""
    lines = src.splitlines()
    changes = []
    for n in range(max(1, ln[1] - 3), min(len(lines), ln[1] + 3) + 1):
        raw = strip_comments(lines[n - 1]).strip()
        e = cpp.expand(raw, defs, pick_defs)
        new = re.sub(rf"/=\s*{re.escape(name)}\b", f">>= log2_{name}", e)
        new = re.sub(rf"%=\s*{re.escape(name)}\b", f"&= {name} - 1", new)
        new = re.sub(rf"/\s*{re.escape(name)}\b", f">> log2_{name}", new)
        new = re.sub(rf"%\s*{re.escape(name)}\b", f"& ({name} - 1)", new)
        if new != e:
            changes.append(f"`{clip(new, 90)}`")
    if not changes:
        return ""
    return (
        f"If `{name}` can be a power of two, pass its log2 as well and write "
        + " and ".join(changes)
        + " (a shift and a mask)."
    )


# ------------------------------------------------------------------------------------ 64-bit indices
_LONG = re.compile(
    r"\b(unsigned\s+long\s+long|long\s+long(?:\s+int)?|unsigned\s+long|long|u?int64_t|size_t|ptrdiff_t|"
    r"intptr_t|uintptr_t)\b"
)


def _is64(type_text: str) -> bool:
    return _LONG.search(type_text) is not None


def _index64(c: Context, x: Construct) -> Text | None:
    src = _src(c, x)
    all_types = cpp.all_typedefs(src)
    changes: list[tuple[int, str, str]] = []
    used_names: list[str] = []
    for ln in x.lines[:3]:
        t = strip_comments(_text(c, ln))
        for name, ds in all_types.items():
            if re.search(rf"\b{re.escape(name)}\b", t):
                wide = [d for d in ds if _is64(d[0])]
                if wide:
                    typ, n, raw = wide[-1]
                    new = raw.replace(typ, "unsigned" if typ.strip().startswith("unsigned") else "int", 1)
                    if all(ch[0] != n for ch in changes):
                        changes.append((n, raw, new))
                        used_names.append(name)
        if _LONG.search(t):
            new = _LONG.sub(lambda m: "unsigned" if m.group(1).startswith("unsigned") else "int", t)
            if all(ch[0] != ln[1] for ch in changes):
                changes.append((ln[1], t, new))
    what = (
        f"the 64-bit carry pairs, .EX compares and wide multiplies ({_ops(x, 5)}) beyond the one address pair each "
        f"global access needs are {pct(x.share)} of the executed instructions"
    )
    mech = (
        f"{_lines_words(x.lines).capitalize() if x.lines else 'The SASS'} do {kc.IDIOMS[x.kind].construct}: {what}"
        + (
            f"; `{used_names[0]}` is declared `{clip(changes[0][1])}` (line {changes[0][0]})"
            if used_names
            else ""
        )
        + "."
    )
    if changes:
        edits = "; ".join(_change(n, old, new) for n, old, new in changes[:2])
        fix = (
            f"Use 32-bit index arithmetic: {edits}, valid while every index and product on these lines stays below "
            "2^31 (check the largest offset the launch can form); each add is then one IADD3, each multiply one "
            "IMAD, and only the address is widened (one IMAD.WIDE per access)."
        )
    else:
        fix = (
            "Use 32-bit index arithmetic (`int` indices, widening only the final address) where the extents fit in "
            f"31 bits. {kc.IDIOMS[x.kind].confusable}"
        )
    return mech, fix


# ------------------------------------------------------------------------------------ FP64 promotion
_DOUBLE_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])")


def _fp64(c: Context, x: Construct) -> Text | None:
    """A promotion whose double comes through a macro (`#define DAMP 0.999`): the definition rewritten. Promotions
    spelled on the line itself are worded by :func:`kprof.diagnose.fixes.compute.fp64_promotion`."""
    from kprof.diagnose.fixes.compute import _as_float

    src = _src(c, x)
    defs = cpp.macros(src)
    for ln in x.lines[:2]:
        t = strip_comments(_text(c, ln))
        for name, ds in defs.items():
            if not re.search(rf"(?<![\w.]){re.escape(name)}\b", t):
                continue
            double = [d for d in ds if _DOUBLE_LITERAL.search(d.body) or re.search(r"\bdouble\b", d.body)]
            if not double:
                continue
            d = double[-1]
            new = _as_float(d.text)
            if new == d.text:
                continue
            mech = (
                f"{_at(c, x, ln)} is {kc.IDIOMS[x.kind].construct} by a double literal: `{name}` is `{d.body}` "
                f"(line {d.line}), so the float expression is converted to FP64 (F2F.F64.F32), computed in FP64 "
                f"({', '.join(s for s in x.sass if s.startswith('D')) or 'DMUL'}) and rounded back (F2F.F32.F64): "
                f"{pct(x.share)} of the executed instructions are FP64."
            )
            fix = (
                f"Make it a float literal: {_change(d.line, d.text, new)}. Line {ln[1]} then runs in FP32 "
                "(FFMA/FMUL) with no conversion; keep a double only where FP64 is deliberate."
            )
            return mech, fix
    return None


# ------------------------------------------------------------------------------------ half round trip
_HALF_FMA = re.compile(
    r"(?P<v>\w+)\s*=\s*(?P<toh>[\w:]+)\s*\(\s*fmaf\s*\(\s*(?P<a>[\w.]+)\s*,\s*(?P<tof>[\w:]+)\s*\(\s*(?P=v)\s*\)\s*,"
    r"\s*(?P<b>[\w.]+)\s*\)\s*\)\s*;"
)


def _half(c: Context, x: Construct) -> Text | None:
    dt = "bf16" if x.origin == "bf16" else "fp16"
    pair, scalar, fma = (
        ("__nv_bfloat162", "__nv_bfloat16", "__hfma2") if dt == "bf16" else ("__half2", "__half", "__hfma2")
    )
    widen, narrow, fp32 = (
        x.numbers.get("widen", 0.0),
        x.numbers.get("narrow", 0.0),
        x.numbers.get("fp32_ops", 0.0),
    )
    mech = (
        f"{_lines_words(x.lines).capitalize() if x.lines else 'The SASS'} "
        + (f"(`{clip(_text(c, x.lines[0]), 70)}`) " if x.lines else "")
        + f"{'do' if len(x.lines) > 1 else 'does'} {kc.IDIOMS[x.kind].construct}: inside the loop each "
        f"{'BF16' if dt == 'bf16' else 'FP16'} value is widened ({', '.join(s for s in x.sass if 'F32' in s and not s.startswith('F2FP')) or 'HADD2.F32'}), "
        f"computed in FP32 and rounded back ({', '.join(s for s in x.sass if s.startswith(('F2FP', 'F2F.F16', 'F2F.BF16'))) or 'F2FP'}), "
        f"and the next step widens it again: {widen + narrow:,.0f} conversions for {fp32:,.0f} FP32 operations, "
        f"{pct(x.share)} of the executed instructions."
    )
    rows = [(ln, strip_comments(_text(c, ln))) for ln in sorted(x.lines)]
    matches = [(ln, m) for ln, t in rows if (m := _HALF_FMA.search(t))]
    if matches:
        (ln0, m0) = matches[0]
        a, b = m0.group("a"), m0.group("b")
        vs = [m.group("v") for _, m in matches]
        before = " ".join(f"`{clip(t, 80)}`" for ln, t in rows if any(ln == q for q, _ in matches))
        packed = "v2"
        after = f"{packed} = {fma}({a}2, {packed}, {b}2);"
        fix = (
            f"Do the update in packed {'bf16' if dt == 'bf16' else 'half'}: "
            f"{'lines ' + ' and '.join(str(q[1]) for q, _ in matches) if len(matches) > 1 else 'line ' + str(ln0[1])} "
            f"({before}) become `{after}`, with `{packed}` the {pair} holding ({', '.join(vs)}) and "
            f"`{a}2`, `{b}2` the {pair} of `{a}`, `{b}` made once before the loop: one HFMA2 per step for "
            f"{'both elements' if len(vs) > 1 else 'two elements'}, the same rounding to {scalar} at every step. "
            "If that rounding is not required, keep the running value in float through the loop and convert once "
            "after it instead (more accurate; the SASS cannot tell which the code needs)."
        )
    else:
        fix = (
            f"Do the arithmetic in the packed 16-bit type ({fma} on {pair}: one HFMA2 per step for two elements, the "
            "same per-step rounding), or keep the running value in float through the loop and convert once after it. "
            f"{kc.IDIOMS[x.kind].confusable}"
        )
    return mech, fix


# ------------------------------------------------------------------------------------ sinf slow path
_TRIG = ("sinf", "cosf", "tanf", "sincosf", "__sinf", "__cosf")


def _trig(c: Context, x: Construct) -> Text | None:
    ln = x.lines[0] if x.lines else None
    src = _src(c, x)
    defs = cpp.macros(src)
    text = strip_comments(_text(c, ln)) if ln else ""
    trig_pick = {
        n: next((d for d in ds if d.body.strip() in _TRIG and not d.body.startswith("__")), ds[-1])
        for n, ds in defs.items()
    }
    expanded = cpp.expand(text, defs, trig_pick)
    fn = next((f for f in ("sincosf", "sinf", "cosf", "tanf") if cpp.call_args(expanded, f)), "")
    lanes = x.numbers.get("lanes_slow", -1.0)
    per_call = x.numbers.get("line_per_call", 0.0)
    via = ""
    if fn:
        spelled = next((n for n in defs if re.search(rf"\b{n}\s*\(", text) and trig_pick[n].body == fn), "")
        via = f" (`{spelled}` is `{fn}`)" if spelled else ""
    mech = (
        f"{_at(c, x)} calls `{fn or 'sinf'}`{via} on arguments above 105615: "
        + (f"{100 * lanes:.1f}% of the lanes take " if lanes >= 0 else "the calls take ")
        + "its slow Payne-Hanek range reduction (the |x| >= 105615 test, then a loop over the 2/pi bits table with "
        f"64-bit integer products: {_ops(x, 4)}), "
        + (f"{per_call:.0f} warp instructions per call, " if per_call else "")
        + f"{pct(x.share)} of the executed instructions, where the fast path is a 3-FFMA reduction."
    )
    got = cpp.call_args(expanded, fn) if fn in ("sinf", "cosf") else None
    if got is not None:
        start, end, args = got
        arg = args[0]
        pi_fn = "sinpif" if fn == "sinf" else "cospif"
        new_stmt = expanded[:start] + f"{pi_fn}(2.0f * (float)(t - rint(t)))" + expanded[end:]
        new_stmt = _body_of(new_stmt)
        old_stmt = _body_of(text)
        fix = (
            f"Keep the argument small: compute the phase in turns, in double while it is large, and take the sine of "
            f"its fractional part: in the loop body of line {ln[1] if ln else ''}, "
            f"`const double t = (double)({arg}) * 0.15915494309189535;  // 1 / (2 pi)` then `{clip(new_stmt, 100)}` "
            f"instead of `{clip(old_stmt, 100)}`. {pi_fn} reduces exactly (no table), so every lane takes "
            f"the short path; better still, build the phase small where it grows (add the step's phase modulo 1 "
            f"turn). `__{fn}` is one MUFU but its error grows with |x|: not at these arguments."
        )
    else:
        fix = kc.IDIOMS[x.kind].cuda_change[0].upper() + kc.IDIOMS[x.kind].cuda_change[1:] + "."
    return mech, fix


def _body_of(statement: str) -> str:
    """A one-line loop's body: ``for (...) acc += f(x);`` -> ``acc += f(x);``."""
    s = statement.strip()
    m = re.match(r"^for\s*\(", s)
    if m is None:
        return s
    got = cpp.call_args(s, "for")
    return s[got[1] :].strip().lstrip("{").strip() if got is not None else s


# ------------------------------------------------------------------------------------ local memory
_LOCAL_ARRAY = re.compile(r"^\s*([\w:]+)\s+(\w+)\s*\[\s*(\w+)\s*\]\s*;")


def _local_array(c: Context, x: Construct) -> Text | None:
    src = _src(c, x)
    defs = cpp.macros(src)
    ln = x.lines[0] if x.lines else None
    if ln is None:
        return None
    text = strip_comments(_text(c, ln))
    expanded = cpp.expand(text, defs)
    arrays: dict[str, tuple[str, str, int, str]] = {}
    for n, raw in enumerate(src.splitlines(), 1):
        m = _LOCAL_ARRAY.match(strip_comments(raw))
        if m and "__shared__" not in raw and m.group(1) not in ("return", "else", "goto"):
            arrays[m.group(2)] = (m.group(1), m.group(3), n, raw.strip())
    hit = next(
        ((a, m) for a in arrays if (m := re.search(rf"\b{re.escape(a)}\s*\[([^\]]+)\]", expanded))), None
    )
    if hit is None:
        return None
    name, m = hit
    idx = m.group(1).strip()
    typ, size, decl_line, decl_text = arrays[name]
    tpb = c.k.threads_per_block or 0
    macro = next(
        (d for ds in defs.values() for d in ds if d.params and re.search(rf"\b{name}\s*\[", d.body)), None
    )
    via = f", i.e. `{clip(m.group(0))}` through `{macro.name}`," if macro and macro.name in text else ""
    spr = x.numbers.get("sectors_per_request", 0.0)
    origin = (
        "computed from loaded data" + (f" ({_lines_words(x.origin_lines)})" if x.origin_lines else "")
        if x.origin == "data"
        else "computed at run time"
    )
    mech = (
        f"{_at(c, x)}{via} indexes the per-thread array `{clip(decl_text)}` (line {decl_line}) with `{idx}`, "
        f"{origin}: registers cannot be indexed at run time, so `{name}` lives in local memory and every access is "
        "a local load or store (LDL/STL)"
        + (f" ({spr:.1f} sectors per request: the lanes read different entries)" if spr > 1.5 else "")
        + "."
    )
    new_decl = f"__shared__ {typ} {name}_s[{size}][BLOCK];"
    access = f"{name}_s[{idx}][threadIdx.x]"
    if macro is not None and macro.params:
        p0 = macro.params[0]
        new_macro = f"#define {macro.name}({p0}) {name}_s[{p0}][threadIdx.x]"
        how = f"and {_change(macro.line, macro.text, new_macro)}, so every access through `{macro.name}` uses it"
    else:
        how = f"and read `{access}` on line {ln[1]} (and write it the same way where the array is filled)"
    nbytes = (
        int(size) * (tpb or 0) * (8 if typ in ("double", "long", "size_t") else 4) if size.isdigit() else 0
    )
    fix = (
        f"Keep the table in shared memory with one column per thread: {_change(decl_line, decl_text, new_decl)}, "
        f"{how}. Each lane then reads its own bank, conflict-free whatever `{idx}` is"
        + (
            f"; with BLOCK = blockDim.x ({tpb} in this launch) that is {nbytes // 1024} KB per block"
            if nbytes
            else ""
        )
        + (
            " (above 48 KB: allocate it dynamically with cudaFuncAttributeMaxDynamicSharedMemorySize)."
            if nbytes > 48 * 1024
            else "."
        )
    )
    return mech, fix


def _spill(c: Context, x: Construct) -> Text | None:
    """Register spills: the cap that forces them (launch bounds, the build's -maxrregcount), or, without a cap, the
    live values. Spills under ``__launch_bounds__`` are worded by :func:`kprof.diagnose.fixes.memory.local_memory`."""
    from kprof.diagnose.fixes.memory import launch_bounds

    regs = c.k.registers_per_thread
    if not regs:
        return None
    bound = launch_bounds(c)
    if bound is not None and bound[2]:
        return None  # the cap is the kernel's __launch_bounds__: memory._register_cap writes that change
    per_thread = c.k.device_attributes.get("max_registers_per_thread") or 255
    block_cap = register_cap(c.k)
    at = _at(c, x)
    if isinstance(per_thread, int | float) and regs >= per_thread:
        mech = (
            f"{at} holds spill stores and reloads (STL/LDL at the stack pointer) at {regs} registers per thread, the "
            "most a thread can have: the code keeps more values live than any register cap allows."
        )
        fix = (
            f"Keep fewer values live on {_lines_words(x.lines) if x.lines else 'the spilling lines'}: a smaller "
            "per-thread tile or accumulator array, less unrolling of the loop that holds them, or values "
            "recomputed instead of kept; raising a cap cannot help at 255 registers."
        )
        return mech, fix
    if block_cap is not None and regs >= block_cap:
        return None  # the block size caps it: rules.kernel.local words that change
    has_source = bool(_src(c, x))
    mech = (
        f"{at} holds spill stores and reloads (STL/LDL at the stack pointer) at {regs} registers per thread, below "
        f"both the per-thread maximum ({per_thread}) and what a {c.k.threads_per_block}-thread block allows "
        f"({block_cap}): something capped the registers at {regs}"
        + (
            ", and the kernel's declaration in the embedded source has no `__launch_bounds__`, so the cap is the "
            "build's `-maxrregcount`."
            if has_source
            else "."
        )
    )
    if has_source:
        fix = (
            f"Raise or drop the build's register cap: compile without `-maxrregcount={regs}` (or with a larger value, "
            "in nvcc's flags or NVRTC's `--maxrregcount`); check with -Xptxas -v that the spill stores fall to 0 "
            "bytes."
        )
    else:
        fix = (
            f"Let the compiler use more than {regs} registers: raise the cap that set them. "
            f"{kc.IDIOMS[x.kind].confusable}"
        )
    return mech, fix


# ------------------------------------------------------------------------------------ predicated loads
def _predicated(c: Context, x: Construct) -> Text | None:
    ln = x.lines[0] if x.lines else None
    text = strip_comments(_text(c, ln)) if ln else ""
    active, spr = x.numbers.get("active_lanes", 0.0), x.numbers.get("sectors_per_request", 0.0)
    cond_m = re.search(r"\bif\s*\((.*)\)\s*(.*)$", text)
    cond = cond_m.group(1).strip() if cond_m else ""
    if x.origin != "lane":
        return None  # a load under a data condition: the coalescing writer's words apply
    own = x.numbers.get("own_sector", 0.0) > 0
    mech = (
        f"{_at(c, x)} loads under a condition on the index"
        + (f" (`{clip(cond, 60)}`)" if cond else "")
        + f": the load is predicated ({x.sass[0] if x.sass else 'LDG'} under `@P`), {active:.3g} of 32 lanes load, "
        + (
            f"and each active lane's element lies in a sector of its own ({spr:.3g} sectors per request), so the "
            "memory system moves a whole 32-byte sector for each loaded element."
            if own
            else f"{spr:.3g} sectors per request."
        )
    )
    stride = _stride(cond)
    if own:
        packed = f"`x_used[j] = x[{stride} * j]`" if stride else "the elements that pass the condition"
        fix = (
            "The sectors, not the idle lanes, are the cost: mapping the threads to the used elements only "
            + (f"(`x[{stride} * j]`) " if stride else "")
            + "reads the same sectors. Store the elements the loop uses contiguously where the data is produced "
            f"({packed}, or a structure-of-arrays layout if they are one field of a record), and read them densely"
            + (f" (`acc += x_used[j];` over j < n / {stride})" if stride else "")
            + f" instead of line {ln[1] if ln else ''}: about {spr:.3g}x fewer sectors. "
            + kc.IDIOMS[x.kind].confusable
        )
    else:
        fix = (
            "Map the threads to the used elements only, so every lane of a warp loads"
            + (f" (`x[{stride} * j]` over j)" if stride else "")
            + f", instead of predicating {32 - active:.3g} of 32 lanes off on line {ln[1] if ln else ''}."
        )
    return mech, fix


def _stride(cond: str) -> str:
    m = re.search(r"\(?\s*\w+\s*&\s*(\d+)\s*\)?\s*==\s*0", cond)
    if m and (int(m.group(1)) + 1) & int(m.group(1)) == 0:
        return str(int(m.group(1)) + 1)
    m = re.search(r"\w+\s*%\s*(\d+)\s*==\s*0", cond)
    return m.group(1) if m else ""


# ------------------------------------------------------------------------------------ atomics
def _atomic(c: Context, x: Construct) -> Text | None:
    if x.origin not in ("uniform", "lane"):
        return None  # data-chosen targets: privatisation (kprof.diagnose.fixes.memory)
    ln = x.lines[0] if x.lines else None
    text = strip_comments(_text(c, ln)) if ln else ""
    call = next((got for f in ("atomicAdd", "atomicAdd_block") if (got := cpp.call_args(text, f))), None)
    per = x.numbers.get("per_iteration", 0.0)
    uniform = x.origin == "uniform"
    mech = (
        f"{_at(c, x)} is {kc.IDIOMS[x.kind].construct}: the {x.sass[0] if x.sass else 'RED'} sits inside the loop "
        + (
            "and its address is "
            + ("read from a kernel argument before the loop, " if x.numbers.get("from_argument") else "")
            + "the same for every lane and every iteration, so all the grid's updates queue on one address."
            if uniform
            else "and each thread updates its own element every iteration."
        )
        + (f" ({per:.3g} per warp per iteration)." if per and per != 1 else "")
    )
    if call is not None and ln is not None:
        start, end, args = call
        if len(args) == 2:
            addr, val = args
            new_loop = (text[:start] + f"acc += {val}" + text[end:]).strip()
            tail = (
                "`for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);` and "
                f"`if ((threadIdx.x & 31) == 0) atomicAdd({addr}, acc);`"
                if uniform
                else f"`atomicAdd({addr}, acc);`"
            )
            now = x.numbers.get("thread_atomics", 0.0)
            tpb, blocks = c.k.threads_per_block or 0, c.k.blocks or 0
            after = blocks * -(-tpb // 32) if uniform else blocks * tpb
            count = (
                f": {now:,.0f} atomics become {after:,.0f} (one per {'warp' if uniform else 'thread'})"
                if now and after and after < now
                else ""
            )
            fix = (
                f"Accumulate in a register and issue the atomic after the loop: `float acc = 0.0f;` before it, "
                f"{_change(ln[1], text, new_loop)}, then {tail}{count}. The sum is then added in another order "
                "(a float sum changes in its last bits)."
            )
            return mech, fix
    return mech, kc.IDIOMS[x.kind].cuda_change[0].upper() + kc.IDIOMS[x.kind].cuda_change[1:] + "."


# ------------------------------------------------------------------------------------ barriers
def _sync(c: Context, x: Construct) -> Text | None:
    values = x.numbers.get("values_per_barrier", -1.0)
    per_bar = x.numbers.get("instructions_per_barrier", 0.0)
    fp = x.numbers.get("fp_per_barrier", 0.0)
    tpb = int(x.numbers.get("threads_per_block", 0.0))
    bars = [ln for ln in x.lines if ln not in x.origin_lines]
    loop = x.origin_lines[0] if x.origin_lines else None
    bar_words = _lines_words(tuple(bars)) if bars else "the loop"
    mech = (
        f"{'The `__syncthreads()` on ' + bar_words if bars else 'The barriers'}"
        + (f", inside the loop of line {loop[1]} (`{clip(_text(c, loop), 60)}`)," if loop else "")
        + f" {'are barriers' if len(bars) > 1 else 'is a barrier'} with little work between them: each is paid "
        f"for {per_bar:.3g} instructions per warp ({fp:.3g} FP operation{'s' if fp != 1 else ''})"
        + (f", and a pair of barriers stages {2 * values:.3g} value{'s' if 2 * values != 1 else ''} into shared memory "
           f"for the whole {tpb}-thread block" if values >= 0 and tpb else "")
        + (f"; {pct(x.share)} of the warp stall samples wait at a barrier." if x.share else ".")
    )  # fmt: skip
    src = _src(c, x)
    defs = cpp.macros(src)
    step = None
    if loop is not None:
        lt = strip_comments(_text(c, loop))
        m = re.search(r"\+=\s*([A-Za-z_]\w*|\d+)\s*\)", lt)
        step = m.group(1) if m else None
    if (
        step
        and step in defs
        and tpb
        and _is_literal(defs[step][-1].body)
        and int(defs[step][-1].body.strip("() "), 0) < tpb
    ):
        d = next(d for d in reversed(defs[step]) if _is_literal(d.body))
        new = re.sub(rf"(#\s*define\s+{step}\s+)\S+", rf"\g<1>{tpb}", d.text)
        fix = (
            f"Stage a whole tile per pair of barriers: {_change(d.line, d.text, new)} (= blockDim.x), so every thread "
            f"stages one value and the loop between the barriers runs over {tpb} values: {tpb // max(1, int(2 * values) or 1)}x "
            "fewer barriers for the same work. The loop only reads the staged values between the barriers (no shared "
            "store of a shared load's result, as a reduction or scan would have), so a larger tile keeps it correct."
        )
    else:
        fix = (
            f"Stage a whole tile per pair of barriers (every thread of the block stores one value, {tpb or 'blockDim.x'} "
            "values per pair), so the loop between the barriers runs over the tile instead of a few values. The loop "
            "only reads the staged values between the barriers (no shared store of a shared load's result, as a "
            "reduction or scan would have), so a larger tile keeps it correct."
        )
    return mech, fix


# ------------------------------------------------------------------------------------ branches
def _lane_branch(c: Context, x: Construct) -> Text | None:
    ln = x.lines[0] if x.lines else None
    cond = next((o for o in x.origin_lines if o != ln), x.origin_lines[0] if x.origin_lines else None)
    ctext = strip_comments(_text(c, cond)) if cond else ""
    taking = x.numbers.get("lanes_taking", -1.0)
    mech = (
        f"{_at(c, x)} is where the warps split: the branch's condition is computed from the thread index"
        + (f" on line {cond[1]} (`{clip(ctext, 70)}`)" if cond and cond != ln else "")
        + f" ({' -> '.join(o for o in x.sass[:4] if not o.startswith('BRA'))} -> the BRA's predicate), so "
        "neighbouring lanes take different paths"
        + (f" ({taking:.3g} of 32 take it)" if taking >= 0 else "")
        + " and every warp runs both."
    )
    if cond and "threadIdx.x" in ctext:
        new = re.sub(r"\bthreadIdx\.x\b", "(threadIdx.x / 32)", ctext)
        fix = (
            f"Decide per warp: {_change(cond[1], ctext, new)}, and index the data so that each warp takes 32 elements "
            "of one kind: all lanes of a warp then take the same path and no lane slot idles."
        )
    else:
        fix = (
            "Decide per warp: compute the condition from the warp index (`threadIdx.x / 32`) instead of the lane, and "
            "index the data so that each warp takes 32 elements of one kind."
        )
    return mech, fix


def _data_branch(c: Context, x: Construct) -> Text | None:
    ln = x.lines[0] if x.lines else None
    taking = x.numbers.get("lanes_taking", -1.0)
    loaded = next((o for o in x.origin_lines if o != ln), None)
    mech = (
        f"{_at(c, x)} is where the warps split: the condition comes from loaded data "
        f"({' -> '.join(o for o in x.sass[:3] if not o.startswith('BRA'))} -> the BRA's predicate)"
        + (f", loaded on line {loaded[1]}" if loaded else "")
        + ", and neighbouring elements disagree"
        + (f" ({taking:.3g} of 32 lanes take it)" if taking >= 0 else "")
        + ", so every warp runs both paths."
    )
    text = strip_comments(_text(c, ln)) if ln else ""
    cond = cpp.call_args(text, "if") or cpp.call_args(text, "while")
    by = f" `{clip(', '.join(cond[2]), 50)}`" if cond else ""
    loops = x.numbers.get("paths_loop", 0.0) > 0
    fix = (
        f"Bin the elements by the condition{by} before the kernel: a stable partition of the data by it "
        "(`thrust::stable_partition`, or `cub::DevicePartition::If` with that predicate), run the kernel on the "
        "partitioned data and scatter the results back"
        + (f"; line {ln[1]} stays as it is and becomes warp-uniform" if ln else "")
        + ". It pays when each element's path work exceeds the partition's cost"
        + (" (each path here is a loop)" if loops else "")
        + ", or when the binning is reused; "
        + ("a short path is better made branch-free (compute both, select)." if not loops else
           "make a path branch-free (compute both, select) only if it is short.")
    )  # fmt: skip
    return mech, fix


# ------------------------------------------------------------------------------------ aliasing
def _alias(c: Context, x: Construct) -> Text | None:
    ln = x.lines[0] if x.lines else None
    src = _src(c, x)
    decl = cpp.kernel_declaration(src, _kernel_name(c))
    text = strip_comments(_text(c, ln)) if ln else ""
    loop_var = re.search(r"\bfor\s*\(\s*(?:int|unsigned|long|size_t)?\s*(\w+)\s*=", text)
    names = []
    if loop_var:
        for m in re.finditer(r"([A-Za-z_]\w*)\s*\[([^\]]+)\]", text):
            if not re.search(rf"\b{re.escape(loop_var.group(1))}\b", m.group(2)) and m.group(0) not in names:
                names.append(m.group(0))
    inv = x.numbers.get("invariant_per_trip", 0.0)
    loads = x.numbers.get("loads_per_trip", 0.0)
    mech = (
        f"{_at(c, x)} reloads "
        + (" and ".join(f"`{n}`" for n in names[:3]) if names else "values")
        + " in every iteration although the loop does not change their address: "
        + f"{inv:.3g} of its {loads:.3g} global loads per trip are such reloads ({_ops(x, 2)}, after a store), "
        "because the pointers are not `__restrict__` and a store may have changed them; for the same reason the "
        "next iteration's loads cannot move above the store, so fewer loads are in flight per thread."
    )
    if decl is not None:
        defs = cpp.macros(src)
        empty = {n: d for n, ds in defs.items() for d in ds if not d.body}
        head = decl.head.split("{")[0].strip()
        slot = [q for q in empty if any(re.search(rf"\*\s*{re.escape(q)}\b", p.text) for p in decl.params)]
        if slot:
            d = empty[slot[0]]
            new = f"{d.text.rstrip()} __restrict__"
            how = (
                f"{_change(d.line, d.text, new)}: `{d.name}` stands where the pointers' qualifier goes on line "
                f"{decl.line} and is defined empty"
            )
        else:
            new_params = []
            for p in decl.params:
                t = p.text
                if "*" in t and "__restrict__" not in t:
                    t = re.sub(r"\*\s*", "* __restrict__ ", t, count=1)
                new_params.append(t)
            k = re.search(rf"\b{re.escape(_kernel_name(c))}\s*\(", head)
            after = (head[: k.end()] + ", ".join(new_params) + ")") if k else head
            how = _change(decl.line, head, after, 260)
        fix = (
            f"Promise the compiler no aliasing: declare the pointers `__restrict__`, {how}. The invariant loads are "
            "then hoisted out of the loop and the loads of later iterations issue ahead of the stores. "
            + kc.IDIOMS[x.kind].confusable
        )
    else:
        fix = kc.IDIOMS[x.kind].cuda_change[0].upper() + kc.IDIOMS[x.kind].cuda_change[1:] + "."
    return mech, fix


_WRITERS = {
    kc.RUNTIME_DIVISION: _division,
    kc.INDEX64: _index64,
    kc.FP64_PROMOTION: _fp64,
    kc.HALF_ROUND_TRIP: _half,
    kc.TRIG_SLOW_PATH: _trig,
    kc.LOCAL_INDEXED_ARRAY: _local_array,
    kc.REGISTER_SPILL: _spill,
    kc.PREDICATED_LOAD: _predicated,
    kc.ATOMIC_IN_LOOP: _atomic,
    kc.SYNC_IN_LOOP: _sync,
    kc.BRANCH_ON_LANE: _lane_branch,
    kc.BRANCH_ON_DATA: _data_branch,
    kc.ALIAS_RELOAD: _alias,
}


__all__ = ["construct_text", "pick"]
