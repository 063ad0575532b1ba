"""How numbers and names are written: one unit formatter for times (:func:`kprof.model._fmt`), the
program's language told from the capture (it chooses the words of advice, never a verdict), kernel names."""

from __future__ import annotations

import re

from kprof.model import (
    _fmt,
)
from kprof.timeline_model import (
    Timeline,
)


def _ms(ns: float) -> str:
    """A time in ns as the one formatter of kprof prints it (ns, µs, ms or s, 3 significant digits)."""
    return _fmt(float(ns), "ns")


def _pct(x: float) -> str:
    return _fmt(float(x), "fraction")


def _bytes(b: float) -> str:
    return _fmt(float(b), "B")


PYTORCH, PYTHON, NATIVE = "pytorch", "python", "native"


_TORCH_NAME = re.compile(r"\bat::|\bc10::|^aten::|\btorch\b")


def _language(tl: Timeline) -> str:
    """What the profiled program is written in, told from the capture, for the *wording* of advice only
    (never a verdict): :data:`PYTORCH` for a PyTorch profiler trace, ATen kernels (``at::native::...``),
    ``aten::`` ranges or PyTorch's own threads (``pt_autograd_0``); :data:`PYTHON` for another Python
    process (its command is a Python interpreter: PyTorch without those signs, CuPy, Numba, JAX);
    :data:`NATIVE` for a compiled CUDA program (C, C++, Fortran)."""
    if tl.format == "kineto":
        return PYTORCH
    if any(_TORCH_NAME.search(n) for n in tl.kernels.names) or any(
        n.startswith("aten::") for n in tl.ranges.names
    ):
        return PYTORCH
    if any(t.startswith("pt_") for t in tl.threads):
        return PYTORCH
    exe = tl.command.strip().split(" ", 1)[0].rsplit("/", 1)[-1] if tl.command.strip() else ""
    if re.match(r"^(python|pypy|ipython|jupyter|torchrun|accelerate|deepspeed)", exe):
        return PYTHON
    return NATIVE


def _app(tl: Timeline) -> str | None:
    """The profiled command line for a suggested command, when the capture records it (an nsys export does;
    a PyTorch profiler trace holds only the process's name), else None (a placeholder is printed): as it
    runs from the current folder when its files were found (``tl.program``), else as recorded."""
    if tl.program:
        return tl.program
    cmd = tl.command.strip()
    if " " not in cmd and "/" not in cmd:  # a process's name ("python3": a PyTorch trace, an old nsys export)
        return None
    return cmd


def _rx(s: str) -> str:
    """A regex matching ``s`` literally, readable in a shell (spaces left unescaped)."""
    return re.escape(s).replace("\\ ", " ")


def _clip_name(name: str, n: int = 90) -> str:
    return name if len(name) <= n else name[: n - 3] + "..."


def _unique_prefix(name: str, others: list[str]) -> str:
    """The shortest prefix of ``name`` (in steps of 10 characters) that no other name starts with."""
    for cut in range(20, len(name) + 10, 10):
        pre = name[:cut]
        if not any(o.startswith(pre) for o in others):
            return pre
    return name


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n:,} times"
