"""Shared plotting helpers: figure creation, colours, number formatting.

Figures are created through pyplot (so that Jupyter's inline formatter is registered
and a returned figure displays once) and closed at once (so that nothing is shown
twice, nothing leaks, and ``plt.show()`` is never needed). Save with ``fig.savefig``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# Colour-blind-safe palette (Okabe-Ito), readable on the white figure background in
# light and dark notebook themes alike.
COLORS: dict[str, str] = {
    "kernel": "#0072B2",
    "graph": "#56B4E9",
    "copy_htod": "#E69F00",
    "copy_dtoh": "#CC79A7",
    "copy_dtod": "#44AA99",
    "copy_other": "#F0E442",
    "memset": "#999999",
    "sync": "#D55E00",
    "api_launch": "#009E73",
    "api_sync": "#D55E00",
    "api_copy": "#E69F00",
    "api_startup": "#882255",
    "api_other": "#8C8C8C",
    "gap": "#BBBBBB",
    "before": "#999999",
    "after": "#0072B2",
}

SERIES = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442",
    "#8c564b", "#7f7f7f", "#9467bd", "#17becf", "#bcbd22", "#e377c2", "#2ca02c", "#d62728",
)  # fmt: skip
"""Colours for the n-th kernel / series: Okabe-Ito first, then the distinct rest of tab10/tab20."""


def new_axes(figsize: tuple[float, float]) -> Axes:
    """A fresh Axes on a fresh figure, already closed in pyplot (no implicit display)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    plt.close(fig)
    return ax


def si(value: float, unit: str = "") -> str:
    """Format with an SI prefix: ``si(2.5e12, "FLOP/s") == "2.5 TFLOP/s"``."""
    if value == 0:
        return f"0 {unit}".strip()
    prefixes = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
    for scale, p in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {p}{unit}".strip()
    return f"{value:.3g} {unit}".strip()


def fmt_ns(ns: float) -> str:
    """A duration for reading: ``fmt_ns(1.5e6) == "1.5 ms"``."""
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def literal(text: str) -> str:
    """Text that matplotlib draws as written: ``$`` would start mathtext in names and paths."""
    return text.replace("$", r"\$")


def shorten(name: str, width: int = 40) -> str:
    """Cut a long (template-laden) kernel name to ``width`` characters with an ellipsis, as literal text."""
    name = " ".join(name.split())
    return literal(name if len(name) <= width else name[: width - 1] + "…")


def as_launches(obj: Any) -> list[Any]:
    """A KernelProfile, one KernelLaunch or an iterable of launches -> a list of launches."""
    from kprof.kernel_model import KernelLaunch, KernelProfile

    if isinstance(obj, KernelLaunch):
        return [obj]
    if isinstance(obj, KernelProfile):
        return list(obj.launches)
    out: list[Any] = []
    for x in obj:
        if isinstance(x, KernelProfile):
            out.extend(x.launches)
        elif isinstance(x, KernelLaunch):
            out.append(x)
        else:
            raise TypeError(f"expected KernelProfile or KernelLaunch, got {type(x).__name__}")
    return out


def launch_label(k: Any, width: int = 32) -> str:
    """``"#3 transpose"``: the launch id and its short name."""
    from kprof.timeline_model import short_kernel_name

    return f"#{k.id} {shorten(short_kernel_name(k.display_name) or k.name, width)}"
