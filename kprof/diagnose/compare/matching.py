"""What both kinds of comparison share: how they get diagnoses, the refusal of different GPUs, and how
kernel launches are matched and timed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kprof.errors import KprofInputError
from kprof.kernel_model import KernelLaunch, KernelProfile
from kprof.model import Diagnosis
from kprof.timeline_model import Timeline

Diagnoser = Callable[[Timeline | KernelProfile, Timeline | None], list[Diagnosis]]
"""How a comparison gets the diagnoses of its two sides: ``(profile, timeline or None) -> diagnoses``,
as ``kprof.diagnose(profile, timeline=timeline)`` gives them (:func:`kprof.api.compare` passes it)."""


def _pair(b: str, a: str) -> str:
    return f"{b} vs {a}"


def _check_devices(devs_b: set[str], devs_a: set[str], fb: str, fa: str) -> None:
    if devs_b and devs_a and not (devs_b & devs_a):
        raise KprofInputError(
            _pair(fb, fa),
            f"captured on different GPUs ({', '.join(sorted(devs_b))} before, {', '.join(sorted(devs_a))} after): "
            "a speedup across GPUs measures the GPUs, not the change; profile both on one GPU",
        )


def _launch_key(k: KernelLaunch) -> tuple[str, tuple[int, ...] | None, tuple[int, ...] | None]:
    return (k.demangled_name or k.name, k.grid, k.block)


def _dims(v: Sequence[int] | None) -> str:
    return "?" if v is None else "x".join(str(int(x)) for x in v)


def _median_launch(group: list[KernelLaunch]) -> KernelLaunch:
    """The launch whose ncu duration is the (lower) median of the group, the first one if none has one."""
    timed = [(k.value("gpu__time_duration.sum"), i, k) for i, k in enumerate(group)]
    timed = [t for t in timed if t[0] is not None]
    if not timed:
        return group[0]
    timed.sort(key=lambda t: (t[0], t[1]))
    return timed[(len(timed) - 1) // 2][2]


def _timeline_kernel_durations(tl: Timeline | None, k: KernelLaunch) -> np.ndarray:
    if tl is None:
        return np.zeros(0)
    from kprof.diagnose.kernel import _timeline_matches  # the same name matching as diagnose(timeline=)

    durs, _coop = _timeline_matches(tl, k)
    return np.asarray(durs, np.float64)


def _replace_file(d: Diagnosis, path: str) -> Diagnosis:
    import dataclasses

    return dataclasses.replace(d, file=path)
