"""Kernel reports before and after: launches matched by (name, grid, block), durations from ncu or from
timelines of both runs, each launch's expectations checked."""

from __future__ import annotations

from typing import Any

import numpy as np

from kprof import thresholds as th
from kprof.comparison_model import Comparison
from kprof.diagnose.compare.matching import (
    Diagnoser,
    _check_devices,
    _dims,
    _launch_key,
    _median_launch,
    _pair,
    _replace_file,
    _timeline_kernel_durations,
)
from kprof.diagnose.compare.verdicts import (
    _dispersion_noise,
    _ncu_noise_text,
    _unless_damaged,
    _verdict,
    check_expectation,
    speedup_interval,
)
from kprof.errors import KprofInputError
from kprof.kernel_model import KernelLaunch, KernelProfile
from kprof.model import Diagnosis
from kprof.timeline_model import Timeline

UNDER_NCU = (
    "gpu__time_duration.sum measured under ncu: serialized and replayed, not the kernel's real duration "
    "(the ratio is what counts)"
)


def _kernel_diagnoses(
    profile: KernelProfile, path: str, tl: Timeline | None, diagnose: Diagnoser
) -> dict[int, Diagnosis]:
    """Every launch's diagnosis (as ``kprof diagnose`` gives it), by launch id."""
    return {
        d.subject.launch: (d if d.file else _replace_file(d, path))
        for d in diagnose(profile, tl)
        if d.subject.launch is not None
    }


def _diagnosis_of(diags: dict[int, Diagnosis], k: KernelLaunch, path: str) -> Diagnosis:
    if k.id not in diags:
        raise KprofInputError(path, f"kernel launch {k.id} ({k.name}) produced no diagnosis")
    return diags[k.id]


def _renamed_note(kb: KernelLaunch, ka: KernelLaunch) -> str:
    """The note of two differently named kernels compared as each report's only kernel."""
    config = (
        "same launch configuration"
        if (kb.grid, kb.block) == (ka.grid, ka.block)
        else f"grid {_dims(kb.grid)} -> {_dims(ka.grid)}, block {_dims(kb.block)} -> {_dims(ka.block)}"
    )
    return (
        f"the kernel names differ ({kb.name} before, {ka.name} after): each report holds one kernel, so the two are "
        f"compared as the same work rewritten ({config}); check that they compute the same result"
    )


def _compare_kernels(
    pb: KernelProfile,
    pa: KernelProfile,
    fb: str,
    fa: str,
    tl_b: Timeline | None,
    tl_a: Timeline | None,
    diagnose: Diagnoser,
) -> list[Comparison]:
    if not pb.launches or not pa.launches:
        empty = fb if not pb.launches else fa
        raise KprofInputError(empty, "holds no kernel launch to compare")
    _check_devices({k.device for k in pb if k.device}, {k.device for k in pa if k.device}, fb, fa)

    def groups(p: KernelProfile) -> dict[tuple[Any, ...], list[KernelLaunch]]:
        out: dict[tuple[Any, ...], list[KernelLaunch]] = {}
        for k in p.launches:
            out.setdefault(_launch_key(k), []).append(k)
        return out

    gb, ga = groups(pb), groups(pa)
    used: set[tuple[Any, ...]] = set()
    matches: list[tuple[list[KernelLaunch], list[KernelLaunch], str]] = []
    unmatched_b: list[tuple[Any, ...]] = []
    for key, lb in gb.items():
        if key in ga:
            used.add(key)
            matches.append((lb, ga[key], ""))
        else:
            unmatched_b.append(key)
    for key in list(unmatched_b):
        cands = [k2 for k2 in ga if k2 not in used and (k2[0] == key[0] or ga[k2][0].name == gb[key][0].name)]
        if cands:
            k2 = cands[0]
            used.add(k2)
            unmatched_b.remove(key)
            note = (
                f"matched by name only: the launch configuration changed (grid {_dims(key[1])} -> {_dims(k2[1])}, "
                f"block {_dims(key[2])} -> {_dims(k2[2])}); the speedup compares the kernel's whole duration"
            )
            matches.append((gb[key], ga[k2], note))
    if not matches and len(gb) == 1 and len(ga) == 1:
        # one kernel on each side under different names: a kernel rewritten and renamed (copy_v1 -> copy_v2).
        # The reports' only kernels are the pair to compare; the note says the names differ.
        (kb0,), (ka0,) = gb, ga
        matches.append((gb[kb0], ga[ka0], _renamed_note(gb[kb0][0], ga[ka0][0])))
        used.add(ka0)
        unmatched_b.clear()
    if not matches:
        nb = sorted({k.name for k in pb})
        na = sorted({k.name for k in pa})
        raise KprofInputError(
            _pair(fb, fa),
            f"no kernel in common (before: {', '.join(nb[:5])}{' ...' if len(nb) > 5 else ''}; after: "
            f"{', '.join(na[:5])}{' ...' if len(na) > 5 else ''}): nothing to compare, no speedup",
        )
    only_b = [gb[k][0].name for k in unmatched_b]
    only_a = [ga[k][0].name for k in ga if k not in used]
    common_notes = []
    if only_b:
        common_notes.append(f"only before (not compared): {', '.join(only_b)}")
    if only_a:
        common_notes.append(f"only after (not compared): {', '.join(only_a)}")

    out: list[Comparison] = []
    diags_b, diags_a = _kernel_diagnoses(pb, fb, tl_b, diagnose), _kernel_diagnoses(pa, fa, tl_a, diagnose)
    for lb, la, note in matches:
        c = _compare_kernel_group(lb, la, diags_b, diags_a, fb, fa, tl_b, tl_a, [note] if note else [])
        if lb[0].name != la[0].name and (lb[0].demangled_name or lb[0].name) != (
            la[0].demangled_name or la[0].name
        ):
            import dataclasses

            c = dataclasses.replace(
                c, subject=dataclasses.replace(c.subject, name=f"{lb[0].name} -> {la[0].name}")
            )
        out.append(c)
    out.sort(key=lambda c: -(c.duration_before_ns or 0.0))
    if common_notes and out:
        import dataclasses

        out[0] = dataclasses.replace(out[0], notes=(*out[0].notes, *common_notes))
    return out


def _compare_kernel_group(
    lb: list[KernelLaunch],
    la: list[KernelLaunch],
    diags_b: dict[int, Diagnosis],
    diags_a: dict[int, Diagnosis],
    fb: str,
    fa: str,
    tl_b: Timeline | None,
    tl_a: Timeline | None,
    notes: list[str],
) -> Comparison:
    from kprof.diagnose.kernel import metric_value

    kb, ka = _median_launch(lb), _median_launch(la)
    if kb.device and ka.device and kb.device != ka.device:
        _check_devices({kb.device}, {ka.device}, fb, fa)
    d_before = _diagnosis_of(diags_b, kb, fb)
    d_after = _diagnosis_of(diags_a, ka, fa)
    if len(lb) > 1 or len(la) > 1:
        notes.append(
            f"{len(lb)} launch(es) before and {len(la)} after: median durations; diagnoses and metrics of the "
            "median launch"
        )

    tb, ta = _timeline_kernel_durations(tl_b, kb), _timeline_kernel_durations(tl_a, ka)
    durs_b: np.ndarray
    durs_a: np.ndarray
    if len(tb) and len(ta):
        durs_b, durs_a = tb, ta
        source = (
            f"timeline: median duration of the kernel's {len(tb)} / {len(ta)} executions in the timelines"
        )
        floor_why = "the measured launch-to-launch spread under ncu (data/samples/ncu_noise.csv)"
        thr, noise = _dispersion_noise(tb, ta, th.NCU_DURATION_NOISE, floor_why, "kernel durations")
    else:
        if tl_b is not None or tl_a is not None:
            notes.append("the kernel is not in both timelines: durations measured under ncu")
        vb = [v for k in lb if (v := k.value("gpu__time_duration.sum")) is not None]
        va = [v for k in la if (v := k.value("gpu__time_duration.sum")) is not None]
        durs_b, durs_a = np.asarray(vb, np.float64), np.asarray(va, np.float64)
        source = UNDER_NCU
        thr, noise = th.NCU_DURATION_NOISE, _ncu_noise_text()
    dur_b = float(np.median(durs_b)) if len(durs_b) else None
    dur_a = float(np.median(durs_a)) if len(durs_a) else None
    # never a speedup from a missing or impossible (zero or negative) duration
    speedup = dur_b / dur_a if dur_b is not None and dur_a is not None and dur_b > 0 and dur_a > 0 else None
    if speedup is None:
        missing, dur = (fb, dur_b) if not (dur_b and dur_b > 0) else (fa, dur_a)
        notes.append(
            f"no duration in {missing} (gpu__time_duration.sum missing): no speedup; collect it with "
            "`ncu --section SpeedOfLight`"
            if dur is None
            else f"the duration in {missing} is {dur:g} ns, which no kernel takes: no speedup"
        )
    speedup = _unless_damaged(speedup, ((fb, d_before), (fa, d_after)), notes)

    checks = tuple(
        check_expectation(
            e,
            metric_value(kb, e.metric),
            metric_value(ka, e.metric),
            th.NCU_DURATION_NOISE,  # every expectation of a kernel is an ncu metric, measured under ncu
            missing_after=f"{e.metric} is not in the after report (collect the section that holds it)",
        )
        for e in d_before.expect
    )
    return Comparison(
        subject=d_before.subject,
        verdict=_verdict(speedup, thr),
        speedup=speedup,
        before=d_before,
        after=d_after,
        expectations=checks,
        noise_threshold=thr,
        speedup_interval=speedup_interval(speedup, thr),
        noise=noise,
        duration_source=source,
        duration_before_ns=dur_b,
        duration_after_ns=dur_a,
        file_before=fb,
        file_after=fa,
        kind="kernel",
        notes=tuple(notes),
    )
