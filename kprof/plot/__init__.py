"""Plots of timelines and kernel reports (matplotlib).

Every function takes ``ax=None`` (a new figure when None), returns the Axes it drew on
and never calls ``show()``; figures it creates are already closed in pyplot, so a
notebook displays ``ax.figure`` once and nothing leaks. Plots never compute verdicts:
the numbers come from the models and :mod:`kprof.diagnose`.

Examples
--------
>>> import kprof, kprof.plot
>>> ax = kprof.plot.plot_roofline(kprof.load("report.ncu-rep"))  # doctest: +SKIP
>>> ax.figure.savefig("roofline.png")  # doctest: +SKIP
"""

from __future__ import annotations

from kprof.plot.roofline import plot_roofline, roofline_points
from kprof.plot.stalls import plot_sol, plot_warp_stalls, sol_values, warp_stalls
from kprof.plot.timeline import Gaps, default_window, idle_gaps, plot_timeline

__all__ = [
    "Gaps",
    "default_window",
    "idle_gaps",
    "plot_roofline",
    "plot_sol",
    "plot_timeline",
    "plot_warp_stalls",
    "roofline_points",
    "sol_values",
    "warp_stalls",
]
