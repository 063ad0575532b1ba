"""Numbers that agree (issue 29): invariants over every diagnosis of every file we have.

Each diagnosis of every profile (tests/diagnose/every_file.py: the samples, the validation galleries, the corpus;
each file diagnosed once per session) is held to four classes of consistency, every one of them a check a reader
makes at once:

1. **Shares are recomputable.** A percentage quoted beside the numbers it comes from agrees with them: "38.4 s of
   43.4 s (88.4%)", "idle 45.8% of the steady state (10.2 ms busy of 18.9 ms)", "32 sectors per request against
   an ideal 4, so 87.5% ...", "2,081 GB/s, 43.3% of the 4,810 GB/s peak"; a share of a named base ("20.8 ms, 89.2%
   of the idle time") is that value over that base; a "% of it" after "idle N% of the steady state" is a share of
   the idle time, after "busy N% of ..." a share of the busy time; a memory unit's byte rate quoted against its
   peak is the unit's throughput percentage quoted beside it (DRAM, L2 and L1 alike).
2. **Units come from one table.** Every evidence's and expectation's unit is the unit
   :data:`kprof.facts.quantities.QUANTITIES` gives the metric it names.
3. **Targets are reachable and move.** An expectation's target differs from the value now (and from the value
   the evidence quotes for the same metric), lies on the side its direction says, never past the physical floor
   (a kernel: the shortest kernel a GPU runs, the compulsory bytes at the DRAM peak, the FLOPs at the fastest
   peak, the warp instructions the fix keeps at the SMs' peak issue rate (which it keeps is the mechanism's: a fix
   that removes instructions predicts the warp instructions down, to the count it keeps or, when it rewrites
   them, with none), the ideal the evidence names; a timeline: the GPU work the fix keeps), a percentage within 0..100; a memory unit's throughput moves with the
   duration when its traffic stays (the same bytes in less time are a higher share of the peak, by the same
   factor); and the expectation says where its target comes from (``Expectation.basis``).
4. **No fix its own mechanism rules out.** A CUDA graph is never prescribed for a loop that blocks on the GPU in
   every iteration, copies through pageable memory, or whose idle time is the host blocked in syncs or copies
   (none of them can be captured), unless the fix first takes them out; wider (128-bit) loads never for a kernel
   whose DRAM is already at its roof (read in the prescription, not in the source line it quotes).

Numbers are read as kprof prints them (:func:`kprof.model._fmt`: 3 significant digits, thousands separators,
``ns``/``µs``/``ms``/``s``, ``B``..``TB``); a printed number stands for the interval its last digit rounds, and two
quantities agree when their intervals do. Each check is a function of one diagnosis returning what it found, and
the ``test_<class>_catch_*`` tests plant a wrong number (in a diagnosis built here, or in a real file's) to show
that it does.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from kprof import thresholds as th
from kprof.diagnose.kernel import metric_value
from kprof.facts.quantities import STALL_PER_ISSUE, units_for
from kprof.kernel_model import KernelLaunch, KernelProfile, Metric
from kprof.model import (
    TIME_UNITS,
    Bottleneck,
    Diagnosis,
    Direction,
    Evidence,
    Expectation,
    Subject,
    SubjectKind,
    Verdict,
    _fmt,
)
from tests.diagnose.every_file import PROFILES, diagnosed_or_skip
from tests.diagnose.floors import physical_floor_ns

# ============================================================================ reading kprof's numbers
NUM = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_TIME = r"ns|µs|us|ms|s"
_BYTES = r"B|kB|KB|MB|GB|TB"
UNIT = rf"(?:{_TIME}|{_BYTES})(?![\w/])"
Q = rf"(?:{NUM}) ?{UNIT}"
_SCALE = {**TIME_UNITS, "B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_DIM = {**{u: "time" for u in TIME_UNITS}, **{u: "bytes" for u in ("B", "kB", "KB", "MB", "GB", "TB")}}


@dataclasses.dataclass(frozen=True, slots=True)
class Num:
    """A printed number as the interval its rounding allows, in the base unit of its dimension."""

    lo: float
    hi: float
    dim: str = ""

    @property
    def mid(self) -> float:
        return (self.lo + self.hi) / 2


def num(text: str, unit: str = "") -> Num:
    """``"1,234"`` -> [1233.5, 1234.5]; ``"3.15", "ms"`` -> [3.145e6, 3.155e6] ns."""
    t = text.replace(",", "")
    half = 0.5 * 10.0 ** (-len(t.split(".")[1])) if "." in t else 0.5
    v, f = float(t), _SCALE.get(unit, 1.0)
    return Num((v - half) * f, (v + half) * f, _DIM.get(unit, ""))


def quantity(text: str) -> Num:
    """``"20.8 ms"`` or ``"51 µs"`` as a :class:`Num`."""
    m = re.fullmatch(rf"({NUM}) ?({UNIT})", text.strip())
    assert m, text
    return num(m.group(1), m.group(2))


def ratio(a: Num, b: Num) -> tuple[float, float]:
    """The interval of ``a / b`` in percent."""
    return 100 * a.lo / b.hi, 100 * a.hi / max(b.lo, 1e-300)


def agrees(p: Num, lo: float, hi: float) -> bool:
    """The printed percentage ``p`` overlaps [lo, hi] (with 0.05 points of slack for a share computed from
    unrounded values and printed after rounding twice)."""
    return p.lo <= hi + 0.05 and p.hi >= lo - 0.05


# ============================================================================ texts of a diagnosis
def _evidence_text(e: Evidence) -> str:
    value = _fmt(e.value, e.unit) if isinstance(e.value, int | float) else ""
    return f"{e.name}: {value} ({e.reference})" if e.reference else f"{e.name}: {value}"


def texts(d: Diagnosis) -> list[str]:
    """Every sentence-bearing text of a diagnosis: headline, evidence (value and reference), mechanism, fix, and
    each finding's headline and evidence."""
    out = [d.headline, d.mechanism, d.fix or ""]
    out += [_evidence_text(e) for e in d.evidence]
    for f in d.findings:
        out.append(f.headline)
        out += [_evidence_text(e) for e in f.evidence]
    return [t for t in out if t]


def _sentences(text: str) -> list[str]:
    """Split at a full stop that ends a sentence (not a decimal point)."""
    return [s for s in re.split(r"(?<!\d)\.(?=\s|$)|\.\s(?=[A-Z])", text) if s.strip()]


# ============================================================================ 1. shares
_OF_SHARE = re.compile(
    rf"(?P<a>{Q})(?: busy| idle| in (?:it|them))? of (?:the )?(?P<b>{Q})(?: capture| wall)?,? \(?(?P<p>{NUM})%"
)
"""``A of B (P%)``, ``A of the B capture (P%)``: P is A over B."""
_WINDOW_SHARE = re.compile(
    rf"(?P<kind>busy|idle) (?P<p>{NUM})% of (?:the |its )?[\w' -]+? \((?P<a>{Q})(?: busy)? of (?P<b>{Q})"
)
"""``busy P% of the steady state (A of B)`` (P = A/B), ``idle P% of ... (A busy of B)`` (P = 1 - A/B)."""
_IDEAL_SHARE = re.compile(
    rf"(?P<n>{NUM}) [\w -]+? per [\w -]+? against an ideal (?P<m>{NUM})(?:[^.;%]*?)(?:,| ?;) (?:so )?(?P<p>{NUM})%"
    r" of (?P<what>[^.;]+)"
)
"""``N sectors per request against an ideal M, so P% of the traffic ...``: P is 1 - M/N."""
_PEAK_SHARE = re.compile(
    rf"(?P<a>{NUM}) (?P<u>GB/s|TB/s|TFLOP/s|TOPS)(?:[^.;%]{{0,60}}?)(?P<p>{NUM})% of (?:a |the |its )?"
    rf"(?:peak |ceiling )?(?:of )?(?P<b>{NUM}) (?P=u)"
)
"""``A GB/s ... P% of the B GB/s peak``: P is A over B."""
_BASES = {
    "steady state": "wall",
    "range": "wall",
    "wall": "wall",
    "wall time": "wall",
    "idle time": "idle",
    "GPU's idle time": "idle",
    "GPU time": "busy",
    "GPU-busy time": "busy",
}
_BASE_WORDS = "|".join(sorted((re.escape(b) for b in _BASES), key=len, reverse=True))
_VALUE_THEN_SHARE = re.compile(
    rf"(?P<v>{Q})(?: [\w-]+){{0,4}}?,? \(?(?P<p>{NUM})% of (?:the |its )?(?P<base>{_BASE_WORDS})\b"
)
"""``V, P% of the idle time`` or ``V (P% of the steady state``: P is V over the named base."""
_SHARE_THEN_VALUE = re.compile(rf"(?P<p>{NUM})% of (?:the |its )?(?P<base>{_BASE_WORDS}) \((?P<v>{Q})[,)]")
"""``P% of the steady state (V, ...)``."""
_MORE_SHARES = re.compile(rf",\s*(?P<p>{NUM})% of (?:the |its )?(?P<base>{_BASE_WORDS})\b")
"""A further share of the same value: ``V (P% of the steady state, Q% of the idle time``."""


def _named_shares(text: str) -> Iterator[tuple[str, str, str]]:
    """(value, percentage, base) for every share of a named base quoted beside its value."""
    for m in _VALUE_THEN_SHARE.finditer(text):
        yield m["v"], m["p"], m["base"]
        pos = m.end()
        while (more := _MORE_SHARES.match(text, pos)) is not None:
            yield m["v"], more["p"], more["base"]
            pos = more.end()
    for m in _SHARE_THEN_VALUE.finditer(text):
        yield m["v"], m["p"], m["base"]


_BUSY_OF = re.compile(rf"(?P<b>{Q}) busy of (?P<w>{Q})(?: wall)?")
_OF_IT = re.compile(rf"(?P<p>{NUM})% of it\b")
_ANTECEDENT = re.compile(rf"\b(?P<kind>busy|idle) {NUM}% of (?:the |its )")


def bases(d: Diagnosis) -> dict[str, Num]:
    """The bases a timeline diagnosis names, from its GPU-busy evidence ("10.2 ms busy of 18.9 ms wall"): the
    window's wall time, its GPU-busy time and its idle time (their difference)."""
    for e in d.evidence:
        m = _BUSY_OF.search(e.reference) if e.metric == "gpu_busy_fraction" else None
        if m:
            b, w = quantity(m.group("b")), quantity(m.group("w"))
            return {"wall": w, "busy": b, "idle": Num(w.lo - b.hi, w.hi - b.lo, "time")}
    return {}


def _times_quoted(d: Diagnosis) -> list[Num]:
    out = []
    for t in texts(d):
        out += [quantity(m.group(0)) for m in re.finditer(Q, t)]
    for e in [*d.evidence, *(e for f in d.findings for e in f.evidence)]:
        if isinstance(e.value, int | float) and e.unit in TIME_UNITS:
            v = float(e.value) * TIME_UNITS[e.unit]
            out.append(Num(v * 0.995, v * 1.005, "time"))
    return [q for q in out if q.dim == "time"]


def _level_of_rate(metric: str) -> str | None:
    """The memory level (dram, l2, l1) whose bytes a ``<counter>.sum.per_second`` (or ``<counter>.sum / duration``)
    metric counts, from the byte counters the roofline reads (kprof.diagnose.roofline._BYTE_COUNTERS: which counter
    is which level is a definition, not a judgement; ``l1tex__m_xbar2l1tex_read_bytes`` is L2 traffic)."""
    from kprof.diagnose.roofline import _BYTE_COUNTERS

    if metric.startswith("dram__bytes"):  # read, write or both: DRAM's
        return "dram"
    for level, counters in _BYTE_COUNTERS.items():
        if any(metric.startswith(f"{c}.sum") for c, _ in counters):
            return level
    return None


def _is_throughput_of(metric: str, level: str) -> bool:
    """``metric`` is the level's throughput in % of its peak (SpeedOfLight, or kprof's derived utilisation)."""
    from kprof.diagnose.roofline import SOL_LEVEL_ACTIVE_METRICS, SOL_LEVEL_METRICS

    names = (*SOL_LEVEL_METRICS.get(level, ()), *SOL_LEVEL_ACTIVE_METRICS.get(level, ()))
    return metric in names or metric == f"derived:{level}_utilization"


def _rate_problems(d: Diagnosis) -> list[str]:
    """A rate quoted against its peak (evidence in GB/s whose reference value is the peak) and the same memory unit's
    throughput in % of peak quoted beside it are one quantity: the rate over the peak is the percentage, to 1 point
    (both printed to 0.1, from counters of different replay passes). A byte counter that counts part of the unit's
    work (the L1's global and local loads, not its shared-memory wavefronts) quoted against the whole peak does not
    say how busy the unit is, and a reader who divides the two numbers is told a second, wrong utilisation."""
    out = []
    evidence = list(_parts(d))
    for e in evidence:
        if not (
            isinstance(e.value, int | float) and e.reference_value and e.metric and "peak" in e.reference
        ):
            continue
        level = _level_of_rate(e.metric)
        if level is None:
            continue
        implied = 100 * float(e.value) / float(e.reference_value)
        for p in evidence:
            matches = p.metric and _is_throughput_of(p.metric, level) and isinstance(p.value, int | float)
            if matches and abs(float(p.value) - implied) > 1.0:  # type: ignore[arg-type]
                out.append(
                    f"{e.name} {_fmt(e.value, e.unit)} of a {_fmt(e.reference_value, e.unit)} peak is "
                    f"{implied:.1f}%, but {p.name} is {_fmt(p.value, p.unit)}"
                )
    return out


def share_problems(d: Diagnosis) -> list[str]:
    """Percentages that the numbers quoted beside them do not give (see the module docstring, class 1)."""
    out: list[str] = _rate_problems(d)
    base = bases(d)
    quoted = _times_quoted(d)
    for text in texts(d):
        for m in _OF_SHARE.finditer(text):
            a, b, p = quantity(m["a"]), quantity(m["b"]), num(m["p"])
            if a.dim == b.dim and not agrees(p, *ratio(a, b)):
                out.append(f"{m[0]!r}: {m['a']} of {m['b']} is {100 * a.mid / b.mid:.1f}%, not {m['p']}%")
        for m in _WINDOW_SHARE.finditer(text):
            a, b, p = quantity(m["a"]), quantity(m["b"]), num(m["p"])
            lo, hi = ratio(a, b)
            if m["kind"] == "idle":
                lo, hi = 100 - hi, 100 - lo
            if not agrees(p, lo, hi):
                out.append(f"{m[0]!r}: {m['kind']} {m['p']}% but the numbers give {(lo + hi) / 2:.1f}%")
        for m in _IDEAL_SHARE.finditer(text):
            n, ideal, p = num(m["n"]), num(m["m"]), num(m["p"])
            lo, hi = 100 * (1 - ideal.hi / n.lo), 100 * (1 - ideal.lo / n.hi)
            if not agrees(p, lo, hi):
                out.append(
                    f"{m[0][:120]!r}: {m['n']} against an ideal {m['m']} leaves {(lo + hi) / 2:.1f}% "
                    f"excess, not {m['p']}% (or name the other base)"
                )
        for m in _PEAK_SHARE.finditer(text):
            a, b, p = num(m["a"]), num(m["b"]), num(m["p"])
            if not agrees(p, *ratio(a, b)):
                out.append(
                    f"{m[0]!r}: {m['a']} of {m['b']} {m['u']} is {100 * a.mid / b.mid:.1f}%, not {m['p']}%"
                )
        for v_text, p_text, base_words in _named_shares(text):
            key = _BASES[base_words]
            if key not in base:
                continue
            v, p = quantity(v_text), num(p_text)
            if v.dim == "time" and not agrees(p, *ratio(v, base[key])):
                out.append(
                    f"{v_text} is {100 * v.mid / base[key].mid:.1f}% of the {base_words}, not {p_text}%"
                )
        for sentence in _sentences(text):
            for m in _OF_IT.finditer(sentence):
                before = list(_ANTECEDENT.finditer(sentence[: m.start()]))
                if not before or not base:
                    continue
                key = before[-1]["kind"]
                p = num(m["p"])
                lo, hi = p.lo / 100 * base[key].lo, p.hi / 100 * base[key].hi
                if not any(q.lo <= hi * 1.01 and q.hi >= lo * 0.99 for q in quoted):
                    out.append(
                        f"{sentence.strip()[:160]!r}: 'it' is the {key} time, and no time quoted in the diagnosis "
                        f"is {m['p']}% of it"
                    )
    return out


# ============================================================================ 2. units
def _parts(d: Diagnosis) -> Iterator[Evidence]:
    yield from d.evidence
    for f in d.findings:
        yield from f.evidence


def unit_problems(d: Diagnosis) -> list[str]:
    """Evidence and expectations whose unit is not the one the table of quantities gives their metric."""
    out = []
    for e in _parts(d):
        allowed = units_for(e.metric, e.name)
        if allowed is None:
            out.append(f"evidence {e.name!r}: metric {e.metric!r} is in no row of kprof.facts.quantities")
        elif e.unit not in allowed:
            out.append(f"evidence {e.name!r} ({e.metric}): unit {e.unit!r}, the table says {sorted(allowed)}")
    for x in d.expect:
        allowed = units_for(x.metric, x.label, expectation=True)
        if allowed is None:
            out.append(f"expectation {x.label!r}: metric {x.metric!r} is in no row of kprof.facts.quantities")
        elif x.unit not in allowed:
            out.append(
                f"expectation {x.label!r} ({x.metric}): unit {x.unit!r}, the table says {sorted(allowed)}"
            )
    return out


# ============================================================================ 3. targets
DURATION = "gpu__time_duration.sum"
_TRAFFIC_DOWN = re.compile(r"bytes|sectors|wavefronts|requests|local|inst", re.I)
_MEMORY_THROUGHPUT = re.compile(
    r"^(gpu__dram_throughput|lts__throughput|l1tex__throughput)\.|^derived:(l1|l2|dram)_utilization$"
)


def _same_number(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.005, abs_tol=1e-9)


def target_problems(
    d: Diagnosis, k: KernelLaunch | None = None, floors: dict[str, float] | None = None
) -> list[str]:
    """Expectations whose target does not move, moves the wrong way, passes a physical floor or has no basis.

    ``k``: the kernel launch a kernel diagnosis is of (for its floor); ``floors``: lower bounds (the metric's own
    unit) that the caller measured on the file, e.g. ``{"wall_ns": GPU work the fix keeps}``."""
    out = []
    floors = floors or {}
    evidence = [e for e in _parts(d) if e.metric and isinstance(e.value, int | float)]
    now_quoted = {e.metric: float(e.value) for e in evidence if isinstance(e.value, int | float)}
    ideals = {
        e.metric: float(e.reference_value)
        for e in evidence
        if e.reference_value is not None and re.search(r"\bideal\b", e.reference)
    }
    duration_down = any(x.metric in (DURATION, "wall_ns") and x.direction is Direction.DOWN for x in d.expect)
    traffic_down = any(
        x.direction is Direction.DOWN and _TRAFFIC_DOWN.search(f"{x.metric} {x.label}") for x in d.expect
    )
    for x in d.expect:
        name = x.label or x.metric
        if x.target is None:
            continue
        t = float(x.target)
        if isinstance(x.value_now, int | float):
            now = float(x.value_now)
            if _same_number(t, now):
                out.append(f"{name}: target {x.target} is the value now")
            elif (t > now) != (x.direction is Direction.UP):
                out.append(f"{name}: {x.direction.value} from {now:g} to {t:g}")
        quoted_now = x.metric in now_quoted and x.metric != DURATION
        if quoted_now and any(_same_number(t, now_quoted[x.metric] * sc) for sc in (1.0, 100.0, 0.01)):
            out.append(f"{name}: target {x.target} is the value the evidence quotes for {x.metric} now")
        if x.direction is Direction.DOWN and x.metric in ideals and t < ideals[x.metric] * 0.99:
            out.append(f"{name}: target {x.target} below the ideal {ideals[x.metric]:g} the evidence names")
        share = x.unit.startswith("%") or (x.metric.endswith("_fraction") and not x.unit)
        if share and not 0 <= t <= (100 if x.unit.startswith("%") else 1):
            out.append(f"{name}: target {x.target} is not a share")
        if x.metric == DURATION and t < th.MIN_KERNEL_DURATION_NS:
            out.append(
                f"{name}: a kernel of {t:g} ns, shorter than any kernel runs ({th.MIN_KERNEL_DURATION_NS} ns)"
            )
        if x.metric in floors and t < floors[x.metric] * 0.999:
            out.append(f"{name}: target {t:g} below the floor {floors[x.metric]:g} of the work the fix keeps")
        if (
            _MEMORY_THROUGHPUT.search(x.metric)
            and x.direction is Direction.DOWN
            and duration_down
            and not traffic_down
        ):
            out.append(
                f"{name}: down while the duration falls and no traffic expectation does (the same bytes in less "
                "time are a larger share of the peak)"
            )
        if not x.basis.strip():
            out.append(f"{name}: target {x.target} {x.unit} with no stated basis")
    out += _same_work_problems(d)
    out += instruction_problems(d, k)
    if k is not None:
        floor = kernel_floor(k)
        issue = issue_floor(k, d)
        for x in d.expect:
            if x.metric == DURATION and x.target is not None and x.target < floor * 0.999:
                out.append(f"kernel duration target {x.target:g} ns below the floor {floor:.0f} ns")
            if (
                x.metric == DURATION
                and x.target is not None
                and issue is not None
                and x.target < issue * 0.999
            ):
                out.append(
                    f"kernel duration target {x.target:g} ns below the {issue:.0f} ns its kept instructions need at "
                    "the SMs' peak issue rate"
                )
    return out


def _same_work_problems(d: Diagnosis) -> list[str]:
    """A memory unit's throughput and the duration are one prediction when the traffic stays: the same bytes in
    ``t`` instead of ``d`` raise the share of peak by ``d / t``."""
    if any(x.direction is Direction.DOWN and _TRAFFIC_DOWN.search(f"{x.metric} {x.label}") for x in d.expect):
        return []
    dur = next((x for x in d.expect if x.metric == DURATION and x.target and x.value_now), None)
    out = []
    for x in d.expect:
        if dur is None or not _MEMORY_THROUGHPUT.search(x.metric) or not x.target or not x.value_now:
            continue
        implied = float(x.value_now) * float(dur.value_now) / float(dur.target)  # type: ignore[arg-type]
        if not math.isclose(float(x.target), implied, rel_tol=0.03, abs_tol=0.1):
            out.append(
                f"{x.label}: {x.value_now:g}% -> {x.target:g}% while the duration goes {dur.value_now:g} -> "
                f"{dur.target:g} ns with the same traffic ({implied:.1f}% it would be)"
            )
    return out


_KEEPS_INSTRUCTIONS = {
    "latency_bound",
    "dram_bandwidth_bound",
    "l2_bandwidth_bound",
    "l1_shared_bandwidth_bound",
    "occupancy_limited",
    "small_grid",
    "tail_effect",
    "shared_bank_conflicts",
}
"""Bottlenecks whose fix keeps the warp instructions unless the diagnosis says otherwise (it overlaps them better,
spreads them over more SMs or warps, or removes replayed wavefronts, which are not issued instructions). A divergence
fix keeps the thread instructions: the warp instructions fall to threads / 32."""
INST = "smsp__inst_executed.sum"
_INSTRUCTION_UNIT = re.compile(r"^(?:inst|LDS|LDG|STS|SHFL)\b")
"""Units of an instruction count or an instructions-per-something ratio (``inst``, ``inst/load``, ``LDS/FFMA``)."""


def kept_instructions(d: Diagnosis, inst: float | None = None) -> float | None:
    """The share of today's warp instructions the fix keeps, decided from the mechanism as the diagnosis states it.

    A fix that removes instructions says so by predicting the warp instructions (``smsp__inst_executed.sum``) down:
    with a target, it keeps that many (the target over ``inst``, today's count); with none, it rewrites the
    instruction stream (the shared-memory tree of a reduction replaced by registers and shuffles) and keeps no count
    that bounds its duration (None: the DRAM and FLOP floors still do). A fix that does not say so keeps what its
    class keeps: every instruction for the bottlenecks of ``_KEEPS_INSTRUCTIONS``, the thread instructions (threads
    / 32 of the warp instructions) for a divergence fix; None for the others, which change the instructions."""
    if d.bottleneck is None:
        return None
    stated = next((x for x in d.expect if x.metric == INST and x.direction is Direction.DOWN), None)
    if stated is not None:
        return float(stated.target) / inst if stated.target is not None and inst else None
    return 1.0 if d.bottleneck.value in _KEEPS_INSTRUCTIONS else None


def issue_floor(k: KernelLaunch, d: Diagnosis) -> float | None:
    """The instructions a fix keeps (:func:`kept_instructions`), at the SMs' peak issue rate (one warp instruction
    per scheduler per cycle), in ns, computed from the raw counters: ``inst x kept / (SMs x 4 x clock)``; None when
    the fix changes them."""
    inst = k.value("smsp__inst_executed.sum")
    sms = k.device_attributes.get("multiprocessor_count")
    clock = k.value("smsp__cycles_elapsed.avg.per_second")
    if not inst or not isinstance(sms, int | float) or not sms or not clock or d.bottleneck is None:
        return None
    kept = kept_instructions(d, inst)
    threads = k.value("smsp__thread_inst_executed_per_inst_executed.ratio")
    if d.bottleneck.value == "warp_divergence" and threads:
        kept = threads / th.WARP_SIZE
    return inst * kept / (sms * 4 * clock) * 1e9 if kept is not None else None


def instruction_problems(d: Diagnosis, k: KernelLaunch | None = None) -> list[str]:
    """A fix of a class that keeps its instructions (``_KEEPS_INSTRUCTIONS``) that predicts fewer instructions of a
    kind without saying which warp instructions it keeps (its duration is then held to all of today's), and a kept
    count below the FFMAs a fix that keeps the FP32 math (no tensor cores) must still issue."""
    out = []
    if d.bottleneck is None:
        return out
    stated = next((x for x in d.expect if x.metric == INST and x.direction is Direction.DOWN), None)
    fewer = [
        x
        for x in d.expect
        if x.metric != INST and x.direction is Direction.DOWN and _INSTRUCTION_UNIT.match(x.unit or "")
    ]
    if d.bottleneck.value in _KEEPS_INSTRUCTIONS and fewer and stated is None:
        out.append(
            f"{fewer[0].label or fewer[0].metric} down, but no expectation of {INST} says which warp instructions "
            "the fix keeps"
        )
    ffma = metric_value(k, "derived:ffma_warp_instructions") if k is not None else None
    changes = d.bottleneck.value in ("no_tensor_cores", "tensor_core_bound")
    if (
        stated is not None
        and stated.target is not None
        and ffma
        and not changes
        and stated.target < ffma * 0.999
    ):
        out.append(
            f"{stated.label or INST}: {stated.target:g} kept, fewer than the {ffma:.0f} FFMAs the FP32 math still needs"
        )
    return out


def kernel_floor(k: KernelLaunch) -> float:
    """The one physical floor of a kernel's duration (tests/diagnose/floors.py, which test_invariants uses too): the
    compulsory DRAM bytes at the DRAM peak (a repeated pass's avoidable reads left out, as kprof's own
    kernel_floor_parts leaves them out), all FLOPs at the fastest peak, no kernel shorter than the shortest one
    measured."""
    return physical_floor_ns(k)


# ============================================================================ 4. fixes ruled out
_GRAPH_FIX = re.compile(r"CUDA graph|CUDAGraph|reduce-overhead", re.I)
_WIDE_LOADS = re.compile(
    r"128-bit|16-byte (?:vector )?(?:loads?|vectors?|accesses)|float4|wider (?:vector )?loads|vectori[sz]ed loads",
    re.I,
)
_CODE_SPAN = re.compile(r"`[^`]*`")
"""A span in backquotes: the kernel's own source line as the fix quotes it (``On line 13 (`const float4 v =
xr[i];`)``), or a type name inside a prescription, never the prescription's own words."""
_DRAM_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
_BLOCKER_WORDS = re.compile(r"\.item\(\)|synchroni[sz]e|blocking|pageable|cudaMemcpy\b", re.I)


def fix_problems(
    d: Diagnosis, loop: dict[str, float] | None = None, dram_pct: float | None = None
) -> list[str]:
    """A fix that the diagnosis's own measurements exclude.

    ``loop``: the timeline's steady state (``sync_per_iteration``, ``pageable_copy_bytes``, and its GPU idle time
    per cause ``idle_<cause>`` as :func:`kprof.diagnose.timeline.gap_causes` attributes it); ``dram_pct``: a
    kernel's DRAM throughput in % of peak.

    A CUDA graph replays GPU work only: a blocking call (``.item()``, a synchronize) and a copy through pageable
    memory cannot be captured. When the loop blocks in every iteration, copies through pageable memory, or its
    idle time is the host blocked in syncs and copies more than issuing work, a graph is advice the loop rules out
    unless the fix first takes them out (names the blocking call or the copy before the graph). Wider loads move
    the same bytes in fewer instructions: at the DRAM roof they cannot make the kernel faster. The prescription is
    read without its backquoted spans: a fix that quotes the kernel's own line (`const float4 v = xr[i];`) is not
    prescribing float4 loads; the words that prescribe them (128-bit, 16-byte or wider loads) stay outside."""
    out = []
    fix = d.fix or ""
    if loop and _GRAPH_FIX.search(fix):
        why = []
        if loop.get("sync_per_iteration", 0) >= 1:
            why.append(f"{loop['sync_per_iteration']:.3g} blocking syncs per iteration")
        if loop.get("pageable_copy_bytes", 0) > 0:
            why.append(f"{loop['pageable_copy_bytes']:.3g} bytes copied through pageable memory")
        blocked = loop.get("idle_sync", 0) + loop.get("idle_copy", 0)
        if blocked > 0 and blocked >= loop.get("idle_host", 0):
            why.append(
                f"{blocked / 1e6:.3g} ms of idle time after syncs and copies, more than the host's issuing"
            )
        sentences = _sentences(fix)
        prescribes = next(
            (i for i, t in enumerate(sentences) if _GRAPH_FIX.search(t) and not re.search(r"cannot", t)), None
        )
        names = next((i for i, t in enumerate(sentences) if _BLOCKER_WORDS.search(t)), None)
        if why and prescribes is not None and (names is None or names >= prescribes):
            out.append(
                "a CUDA graph for a loop with " + ", ".join(why) + ": neither can be captured, and the fix "
                "does not take them out first"
            )
    advice = _CODE_SPAN.sub("", fix)
    if dram_pct is not None and dram_pct >= 100 * th.HEALTHY_FRACTION_OF_PEAK and _WIDE_LOADS.search(advice):
        out.append(f"wider loads for a kernel whose DRAM is at its roof ({dram_pct:.1f}% of peak)")
    return out


# ============================================================================ over every file
def _kernel_of(obj: object, d: Diagnosis) -> KernelLaunch | None:
    if not isinstance(obj, KernelProfile):
        return None
    return next((k for k in obj.launches if k.id == (d.subject.launch or 0)), None)


def _timeline_facts(obj: object) -> tuple[dict[str, float], dict[str, float]]:
    """(floors, loop facts) of a timeline's steady state: its wall time keeps the GPU's compute (kernels: a fix of
    the host side removes idle time and copies, not kernel time); the loop's syncs per iteration, pageable bytes and
    idle time per cause (for :func:`fix_problems`)."""
    from kprof.diagnose.timeline import gap_causes, timeline_metrics
    from kprof.diagnose.timeline.context import _context
    from kprof.timeline_model import Timeline

    if not isinstance(obj, Timeline):
        return {}, {}
    m = timeline_metrics(obj)
    if not m:
        return {}, {}
    compute = max(0.0, m["gpu_busy_ns"] - m["copy_ns"])
    ctx = _context(obj)
    n_iter = len(ctx.iterations[0])
    steady = n_iter - ctx.its.warmup if n_iter >= th.MIN_ITERATIONS_FOR_WARMUP_DROP else n_iter
    loop = {f"idle_{k}": float(v) for k, v in gap_causes(obj).idle_by_cause().items()}
    loop["sync_per_iteration"] = m["sync_count"] / steady if steady else 0.0
    loop["pageable_copy_bytes"] = m["pageable_copy_bytes"]
    return {"wall_ns": compute, "gpu_busy_ns": compute}, loop


def problems(obj: object, ds: tuple[Diagnosis, ...]) -> dict[str, list[str]]:
    """Every check over every diagnosis of one file: {class: ["#i subject: what", ...]}."""
    found: dict[str, list[str]] = {"shares": [], "units": [], "targets": [], "fixes": []}
    floors, loop = _timeline_facts(obj)
    for i, d in enumerate(ds):
        k = _kernel_of(obj, d)
        tag = f"#{i} {d.subject.name[:40]}"
        found["shares"] += [f"{tag}: {p}" for p in share_problems(d)]
        found["units"] += [f"{tag}: {p}" for p in unit_problems(d)]
        # the file's steady state is the first diagnosis's; a range's numbers are its own windows'
        found["targets"] += [f"{tag}: {p}" for p in target_problems(d, k, floors if i == 0 else None)]
        dram = k.value(_DRAM_PCT) if k is not None else None
        found["fixes"] += [f"{tag}: {p}" for p in fix_problems(d, loop if i == 0 else None, dram)]
    return found


@cache
def _found(path: Path) -> dict[str, list[str]]:
    obj, ds = diagnosed_or_skip(path)
    return problems(obj, ds)


@pytest.mark.parametrize("kind", ["shares", "units", "targets", "fixes"])
@pytest.mark.parametrize("path", [p for _, p in PROFILES], ids=[i for i, _ in PROFILES])
def test_numbers_agree(path: Path, kind: str) -> None:
    """Every diagnosis of every file passes each class of checks (the module docstring)."""
    found = _found(path)[kind]
    assert not found, f"{path.name}: " + "\n  ".join(found)


def test_every_place_is_covered() -> None:
    """The invariants run over the samples, the validation galleries and the corpus, whichever are present."""
    if not PROFILES:
        pytest.skip("no samples, validation gallery or corpus beside the checkout")
    roots = {i.split("/", 1)[0] for i, _ in PROFILES}
    assert "samples" in roots or "validation" in roots or "corpus" in roots, roots


# ============================================================================ each check catches a planted number
def _kernel_diagnosis(**kw: object) -> Diagnosis:
    base: dict[str, object] = {
        "subject": Subject(kind=SubjectKind.KERNEL, name="k"),
        "bottleneck": Bottleneck.UNCOALESCED_GLOBAL_ACCESS,
        "verdict": Verdict.FIX,
        "headline": "h",
    }
    base.update(kw)
    return Diagnosis(**base)  # type: ignore[arg-type]


def _timeline_diagnosis(headline: str, evidence: tuple[Evidence, ...] = (), **kw: object) -> Diagnosis:
    busy = Evidence(
        name="GPU-busy fraction",
        value=59.38,
        unit="%",
        reference="34.1 ms busy of 57.4 ms wall; >= 80% means the time is in GPU work",
        metric="gpu_busy_fraction",
    )
    return Diagnosis(
        subject=Subject(kind=SubjectKind.CAPTURE, name="t.sqlite"),
        bottleneck=Bottleneck.HOST_COMPUTE_BOUND,
        verdict=Verdict.FIX,
        headline=headline,
        evidence=(busy, *evidence),
        **kw,  # type: ignore[arg-type]
    )


def test_shares_catch_a_share_its_numbers_do_not_give() -> None:
    """The review's cases, each with its wrong and its right number."""
    wrong = "32 sectors per request against an ideal 4, so 77.8% of the load sectors carry no requested data."
    right = "32 sectors per request against an ideal 4, so 87.5% of the load sectors carry no requested data."
    assert share_problems(_kernel_diagnosis(headline=wrong)) and not share_problems(
        _kernel_diagnosis(headline=right)
    )
    # another base is fine when it is named, after the share the two numbers give
    named = right[:-1] + " (77.8% of all global sectors, stores included)."
    assert not share_problems(_kernel_diagnosis(headline=named))
    assert share_problems(_kernel_diagnosis(headline="It moves 2,081 GB/s, 93.9% of the 33,446 GB/s peak."))
    assert not share_problems(
        _kernel_diagnosis(headline="It moves 2,081 GB/s, 43.3% of the 4,810 GB/s peak.")
    )
    assert share_problems(
        _kernel_diagnosis(headline="Start-up: 468 ms of the 488 ms capture (90%) is one-time.")
    )
    assert not share_problems(
        _kernel_diagnosis(headline="Start-up: 468 ms of the 488 ms capture (96%) is one-time.")
    )
    assert share_problems(
        _timeline_diagnosis("The GPU is idle 50% of the steady state (34.1 ms busy of 57.4 ms).")
    )
    assert not share_problems(
        _timeline_diagnosis("The GPU is idle 40.6% of the steady state (34.1 ms busy of 57.4 ms).")
    )


def test_shares_catch_a_share_of_it_whose_base_is_the_wall() -> None:
    """tl_d2h_pageable before issue 29: "idle 40.6% of the steady state ...; 13 gaps ... hold 36.2% of it", where
    36.2% is 20.8 ms of the 57.4 ms wall, not of the 23.3 ms of idle time "it" names (89.2%)."""
    gap = Evidence(
        name="GPU idle while the host made no CUDA call",
        value=20.777,
        unit="ms",
        reference="36.2% of the steady state, 89.2% of the idle time",
        metric="host_compute_idle_ns",
    )
    head = "Host-compute-bound: the GPU is idle 40.6% of the steady state (34.1 ms busy of 57.4 ms); 13 gaps hold {}."
    assert share_problems(_timeline_diagnosis(head.format("36.2% of it"), (gap,)))
    assert not share_problems(_timeline_diagnosis(head.format("89.2% of it (20.8 ms)"), (gap,)))
    # a named base is recomputed too
    bad_ref = dataclasses.replace(gap, reference="36.2% of the steady state, 36.2% of the idle time")
    assert share_problems(_timeline_diagnosis(head.format("89.2% of it (20.8 ms)"), (bad_ref,)))


def test_shares_catch_a_rate_that_is_not_its_share_of_the_peak() -> None:
    rate = Evidence(
        name="achieved DRAM bandwidth",
        value=2081.0,
        unit="GB/s",
        reference="peak 33446 GB/s (from the report)",
        reference_value=33446.0,
        metric="dram__bytes.sum.per_second",
    )
    pct = Evidence(
        name="DRAM bandwidth used",
        value=93.9,
        unit="% of peak",
        metric="gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    )
    assert share_problems(_kernel_diagnosis(evidence=(rate, pct)))
    fixed = dataclasses.replace(
        rate, value=4517.0, reference="peak 4810 GB/s (from the report)", reference_value=4810.0
    )
    assert not share_problems(_kernel_diagnosis(evidence=(fixed, pct)))


def test_shares_catch_the_planted_number_in_a_real_diagnosis() -> None:
    """The coalescing sample's own headline, with its share replaced by the all-traffic one it quoted before."""
    path = next((p for i, p in PROFILES if i == "samples/ncu/uncoalesced_global_access.ncu-rep.gz"), None)
    if path is None:
        pytest.skip("the uncoalesced_global_access sample is not in the gallery")
    _, ds = diagnosed_or_skip(path)
    d = ds[0]
    assert not share_problems(d), d.headline
    m = re.search(r"so (\d+(?:\.\d+)?)% of the", d.headline)
    assert m, d.headline
    planted = d.headline.replace(f"so {m.group(1)}%", f"so {float(m.group(1)) - 9.7:g}%")
    assert share_problems(dataclasses.replace(d, headline=planted))


def test_units_come_from_the_table() -> None:
    stall = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
    good = Evidence(name="top warp stall: long_scoreboard", value=26.5, unit=STALL_PER_ISSUE, metric=stall)
    assert not unit_problems(_kernel_diagnosis(evidence=(good,)))
    for wrong in (
        dataclasses.replace(good, unit="cycles"),
        Evidence(name="blocks in the grid", value=64, unit="threads", metric="launch__grid_size"),
        Evidence(name="duration", value=1.0, unit="%", metric=DURATION),
        Evidence(name="a made-up quantity", value=1.0, unit="x", metric="derived:not_in_the_table"),
    ):
        assert unit_problems(_kernel_diagnosis(evidence=(wrong,))), wrong
    x = Expectation(
        metric="derived:global_sectors_per_request",
        direction=Direction.DOWN,
        label="global sectors per request",
    )
    assert unit_problems(_kernel_diagnosis(expect=(x,)))
    assert not unit_problems(_kernel_diagnosis(expect=(dataclasses.replace(x, unit="sectors/request"),)))
    # kprof's own stall unit is the table's
    from kprof.facts.stalls import stall_metric

    k = KernelLaunch(id=0, name="k", metrics={stall: Metric(3.0)})
    metric, unit = stall_metric(k, "long_scoreboard")
    assert unit in (units_for(metric) or ())


def _x(**kw: object) -> Expectation:
    base: dict[str, object] = {
        "metric": "derived:l2_atomic_requests",
        "direction": Direction.DOWN,
        "target": 16384.0,
        "unit": "requests",
        "value_now": 524288,
        "label": "atomic updates applied by L2",
        "basis": "one per warp after a warp reduction",
    }
    base.update(kw)
    return Expectation(**base)  # type: ignore[arg-type]


def test_targets_catch_a_target_that_does_not_move_or_passes_a_floor() -> None:
    assert not target_problems(_kernel_diagnosis(expect=(_x(),)))
    planted = {
        "the value now": _x(target=524288.0),
        "the wrong way": _x(target=600000.0),
        "no basis": _x(basis=""),
        "not a share": _x(
            metric="derived:sm_active_pct", unit="%", direction=Direction.UP, value_now=40.0, target=120.0
        ),
        "shorter than any kernel": _x(metric=DURATION, unit="ns", value_now=10_000.0, target=22.0),
    }
    for what, x in planted.items():
        assert target_problems(_kernel_diagnosis(expect=(x,))), what
    # the evidence's value now of the same metric
    ev = Evidence(name="L2 atomic updates", value=16384, unit="requests", metric="derived:l2_atomic_requests")
    assert target_problems(_kernel_diagnosis(evidence=(ev,), expect=(_x(value_now=None),)))
    # below the ideal the evidence names
    spr = Evidence(
        name="global loads: sectors per request",
        value=32.0,
        unit="sectors/request",
        reference="ideal 4: 4 B x 32 lanes",
        reference_value=4.0,
        metric="derived:global_load_sectors_per_request",
    )
    x = _x(metric=spr.metric, unit="sectors/request", value_now=32.0, target=2.0)
    assert target_problems(_kernel_diagnosis(evidence=(spr,), expect=(x,)))
    assert not target_problems(
        _kernel_diagnosis(evidence=(spr,), expect=(dataclasses.replace(x, target=4.0),))
    )
    # a timeline target below the GPU work the fix keeps
    wall = _x(metric="wall_ns", unit="ns", value_now=57_367_558, target=1_000_000)
    assert target_problems(_kernel_diagnosis(expect=(wall,)), floors={"wall_ns": 34_100_000.0})
    assert not target_problems(
        _kernel_diagnosis(expect=(dataclasses.replace(wall, target=36_590_926),)),
        floors={"wall_ns": 34_100_000.0},
    )


def test_targets_catch_a_duration_below_the_dram_floor() -> None:
    """1 GB read at a 2 TB/s peak cannot take less than 500 µs."""
    k = KernelLaunch(
        id=0,
        name="k",
        metrics={
            DURATION: Metric(2_000_000.0),
            "dram__bytes_read.sum": Metric(1.0e9),
            "dram__bytes.sum.peak_sustained": Metric(1000.0),
            "dram__cycles_elapsed.avg.per_second": Metric(2.0e9),
        },
    )
    assert kernel_floor(k) == pytest.approx(500_000.0)
    x = _x(metric=DURATION, unit="ns", value_now=2_000_000.0, target=400_000.0, basis="less the waste")
    assert target_problems(_kernel_diagnosis(expect=(x,)), k)
    assert not target_problems(_kernel_diagnosis(expect=(dataclasses.replace(x, target=625_000.0),)), k)


def test_targets_catch_dram_share_down_for_the_same_bytes_faster() -> None:
    """A fix that moves the same bytes in less time raises the DRAM share of peak: "DRAM % down" is the wrong
    direction unless the traffic is predicted to fall too."""
    dram = _x(
        metric="gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        unit="%",
        value_now=60.0,
        target=40.0,
        label="DRAM bandwidth used",
        basis="b",
    )
    faster = _x(
        metric=DURATION, unit="ns", value_now=100_000.0, target=70_000.0, label="kernel duration", basis="b"
    )
    assert target_problems(_kernel_diagnosis(expect=(dram, faster)))
    fewer = _x(
        metric="derived:dram_bytes",
        unit="byte",
        value_now=1e9,
        target=5e8,
        label="DRAM bytes moved",
        basis="b",
    )
    assert not target_problems(_kernel_diagnosis(expect=(dram, faster, fewer)))


_GRAPH_ONLY = (
    "Capture the loop body as a CUDA graph (torch.compile(mode='reduce-overhead'), or torch.cuda.CUDAGraph with "
    "static input tensors) so one launch replays all its kernels."
)


def test_fixes_catch_a_graph_for_a_loop_that_blocks() -> None:
    """A loop with an .item() every iteration (item_pagerank) cannot be one CUDA graph until the sync leaves it."""
    d = _kernel_diagnosis(bottleneck=Bottleneck.HOST_LAUNCH_BOUND, fix=_GRAPH_ONLY)
    loop = {"sync_per_iteration": 1.0, "pageable_copy_bytes": 0.0, "idle_host": 13.6e6}
    assert fix_problems(d, loop)
    assert fix_problems(d, {"sync_per_iteration": 0.0, "pageable_copy_bytes": 4096.0})
    assert fix_problems(d, {"sync_per_iteration": 0.0, "idle_sync": 5e6, "idle_copy": 2e6, "idle_host": 1e6})
    first = (
        "A CUDA graph cannot capture a call that blocks the host on the GPU. First keep the value on the GPU and "
        "call .item() once every N steps. Then " + _GRAPH_ONLY[0].lower() + _GRAPH_ONLY[1:]
    )
    assert not fix_problems(dataclasses.replace(d, fix=first), loop)
    assert not fix_problems(d, {"sync_per_iteration": 0.0, "pageable_copy_bytes": 0.0, "idle_host": 13.6e6})


def test_fixes_catch_wider_loads_at_the_dram_roof() -> None:
    d = _kernel_diagnosis(fix="Use 128-bit loads (float4) so each thread moves more bytes per instruction.")
    assert fix_problems(d, dram_pct=91.0)
    assert not fix_problems(d, dram_pct=40.0)


def test_fixes_catch_the_planted_fix_in_a_real_diagnosis() -> None:
    """item_pagerank (an .item() every iteration) with the graph-only fix it had before issue 29."""
    path = next((p for i, p in PROFILES if i == "validation/heldout/item_pagerank.json.gz"), None)
    if path is None:
        pytest.skip("the item_pagerank capture is not in the validation gallery")
    obj, ds = diagnosed_or_skip(path)
    _, loop = _timeline_facts(obj)
    assert loop["sync_per_iteration"] >= 1
    assert not fix_problems(ds[0], loop), ds[0].fix
    assert fix_problems(dataclasses.replace(ds[0], fix=_GRAPH_ONLY), loop)


def test_targets_catch_a_duration_below_the_kept_instructions_at_peak_issue() -> None:
    """stencil5_smem before issue 29: a latency-bound kernel expected to run in 65.3 µs, while the 87 million warp
    instructions it keeps need 85.4 µs at one per scheduler per cycle on 132 SMs at 1.98 GHz."""
    k = KernelLaunch(
        id=0,
        name="stencil",
        metrics={
            DURATION: Metric(139_000.0),
            "smsp__inst_executed.sum": Metric(87_031_808.0),
            "smsp__cycles_elapsed.avg.per_second": Metric(1.98e9),
        },
        device_attributes={"multiprocessor_count": 132},
    )
    d = _kernel_diagnosis(bottleneck=Bottleneck.LATENCY_BOUND)
    floor = issue_floor(k, d)
    assert floor == pytest.approx(87_031_808 / (132 * 4 * 1.98e9) * 1e9)
    x = _x(
        metric=DURATION, unit="ns", value_now=139_000.0, target=65_340.0, label="kernel duration", basis="b"
    )
    assert target_problems(dataclasses.replace(d, expect=(x,)), k)
    assert not target_problems(dataclasses.replace(d, expect=(dataclasses.replace(x, target=85_400.0),)), k)
    # a fix that changes the instructions (tensor cores for FFMA work) is not held to today's count
    assert issue_floor(k, dataclasses.replace(d, bottleneck=Bottleneck.NO_TENSOR_CORES)) is None


def test_targets_catch_a_throughput_that_does_not_follow_the_duration() -> None:
    """The same bytes in 85.4 µs instead of 139 µs: DRAM at 37.6% of peak rises to 61.2%, not to the 80% roof."""
    dur = _x(
        metric=DURATION, unit="ns", value_now=139_000.0, target=85_400.0, label="kernel duration", basis="b"
    )
    dram = _x(
        metric="gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        direction=Direction.UP,
        unit="%",
        value_now=37.6,
        target=80.0,
        label="DRAM bandwidth used",
        basis="b",
    )
    assert target_problems(_kernel_diagnosis(expect=(dram, dur)))
    assert not target_problems(_kernel_diagnosis(expect=(dataclasses.replace(dram, target=61.2), dur)))


def _blind7(name: str) -> tuple[KernelLaunch, Diagnosis]:
    path = next((p for i, p in PROFILES if i == f"validation/blind7/{name}"), None)
    if path is None:
        pytest.skip(f"blind7 {name} is not in the validation gallery")
    obj, ds = diagnosed_or_skip(path)
    k = _kernel_of(obj, ds[0])
    assert k is not None
    return k, ds[0]


def test_shares_catch_a_bandwidth_whose_share_of_its_peak_is_not_the_units_percentage() -> None:
    """blind7 cuda_sgemm_tiled16 with the L1 evidence a healthy L1 diagnosis quoted before: "achieved L1 bandwidth
    2,101 GB/s (peak 33450 GB/s)" beside "L1/shared-memory bandwidth used: 95.2% of peak". The byte counter
    (derived__l1tex__lsu_writeback_bytes_mem_lgds) counts global and local loads only: 6.3% of the peak, not 95.2%.
    kprof's own evidence for the same unit names what the counter counts and quotes no share of the peak."""
    from kprof.facts.kernel import build_facts
    from kprof.rules.kernel.common import unit_used
    from kprof.rules.kernel.healthy import _achieved

    k, _ = _blind7("cuda_sgemm_tiled16.raw.csv.gz")
    f = build_facts(k, k.value(DURATION), "k", source_format="ncu-csv-raw")
    used = unit_used(f, "l1", "at its roof")
    planted = Evidence(
        name="achieved L1 bandwidth",
        value=2101.0,
        unit="GB/s",
        reference="peak 33450 GB/s (from the report)",
        reference_value=33450.0,
        metric="derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second",
    )
    assert used.value == pytest.approx(95.2)
    assert share_problems(_kernel_diagnosis(evidence=(used, planted)))
    own = _achieved(f, "l1")
    assert own and own[0].reference_value is None and "global and local loads" in own[0].reference
    assert own[0].value == pytest.approx(2101.0, abs=1.0)
    assert not share_problems(_kernel_diagnosis(evidence=(used, *own)))
    # the same check over L2: the L2-to-SM bytes (19.3% of the L2 peak) are not the L2's 34.6%
    l2 = dataclasses.replace(
        planted,
        name="achieved L2 bandwidth",
        value=1983.0,
        reference="peak 10285 GB/s (from the report)",
        reference_value=10285.0,
        metric="derived__lts__lts2xbar_bytes.sum.per_second",
    )
    assert share_problems(_kernel_diagnosis(evidence=(unit_used(f, "l2", "r"), l2)))
    # and over DRAM, where the byte counter is the percentage's own: the shuffle reduction's 4,556 of 4,811 GB/s
    # is its 94.7%, and kprof quotes it against the peak
    _, d2 = _blind7("cuda_reduce_shfl.raw.csv.gz")
    rate = next(e for e in d2.evidence if e.metric == "dram__bytes.sum.per_second")
    assert rate.reference_value is not None and not share_problems(d2)
    wrong = dataclasses.replace(rate, value=float(rate.value) * 0.9)  # type: ignore[arg-type]
    assert share_problems(dataclasses.replace(d2, evidence=(d2.evidence[0], wrong)))


def test_targets_catch_a_fix_that_removes_instructions_but_is_held_to_none() -> None:
    """blind7's two shared-memory fixes remove instructions, and say which they keep: the register tile keeps the
    FFMAs and 0.0625 shared loads per FFMA (a count, its floor at the SMs' peak issue rate); the shuffle reduction
    replaces the tree (no count: the DRAM floor binds). Without the warp-instruction expectation the reduction is
    held to all 585 million of today's instructions (560 µs at peak issue, above the 281 µs DRAM floor the twin
    beats at 236 µs), and says fewer shared instructions without saying which stay."""
    k, d = _blind7("cuda_reduce_tree.raw.csv.gz")
    assert kept_instructions(d, k.value(INST)) is None and issue_floor(k, d) is None
    assert not target_problems(d, k)
    dur = next(x for x in d.expect if x.metric == DURATION)
    assert dur.target is not None and dur.target == pytest.approx(
        kernel_floor(k) / th.HEALTHY_FRACTION_OF_PEAK, 0.01
    )
    silent = dataclasses.replace(d, expect=tuple(x for x in d.expect if x.metric != INST))
    found = target_problems(silent, k)
    assert any("says which warp instructions" in p for p in found), found
    assert any("its kept instructions need" in p for p in found), found

    k, d = _blind7("cuda_sgemm_tiled16.raw.csv.gz")
    stated = next(x for x in d.expect if x.metric == INST)
    ffma = metric_value(k, "derived:ffma_warp_instructions")
    assert ffma and stated.target is not None and stated.target >= ffma
    assert issue_floor(k, d) == pytest.approx(
        float(stated.target) / (132 * 4 * float(k.value("smsp__cycles_elapsed.avg.per_second") or 0)) * 1e9
    )
    assert not target_problems(d, k)
    below = dataclasses.replace(stated, target=ffma / 2)
    assert any(
        "FFMAs the FP32 math still needs" in p
        for p in target_problems(
            dataclasses.replace(d, expect=tuple(below if x is stated else x for x in d.expect)), k
        )
    )


def test_one_floor_knows_the_avoidable_bytes() -> None:
    """Both invariant modules hold durations to one floor (tests/diagnose/floors.py), and it leaves out the reads
    of a repeated pass, as kprof's own floor does: blind7's one-pass RMSNorm ran in 260 µs under ncu, below the
    330 µs that every byte the two-pass kernel requests would take at the DRAM peak."""
    from tests.diagnose import test_invariants

    k, d = _blind7("cuda_rmsnorm_2pass.ncu-rep.gz")
    floor = kernel_floor(k)
    assert floor == test_invariants._independent_floor_ns(k)
    assert floor < 260_000.0
    requested = physical_floor_ns(dataclasses.replace(k, sass=()))  # no SASS: no repeated pass found
    assert requested > 320_000.0
    assert not target_problems(d, k)


def test_fixes_read_the_prescription_not_the_quoted_source() -> None:
    """A fix at the DRAM roof that quotes the kernel's own line (`const float4 v = xr[i];`) prescribes no wider
    loads; one that says float4 or 16-byte loads outside the quote does."""
    quoted = (
        "On line 13 (`const float4 v = xr[i];`): read the data once and keep it in registers between passes."
    )
    assert not fix_problems(_kernel_diagnosis(fix=quoted), dram_pct=86.2)
    for wider in (
        quoted + " Load 16-byte vectors.",
        "Let each thread load 4 elements with one 16-byte load (a `uint4`/`float4`).",
        "Use float4 loads.",
    ):
        assert fix_problems(_kernel_diagnosis(fix=wider), dram_pct=86.2), wider
