"""Invariants over every kernel diagnosis of every Nsight Compute file we have (issue 12).

Files: the shipped samples (data/samples/ncu), the blind validation gallery (data/validation/**, when it is
there) and the third-party corpus (../shared/corpus, when it is there). Each file is skipped with a reason
when absent. For every diagnosis (its primary part and every finding):

1. a predicted duration is never below the physical floor of the work (tests/diagnose/floors.py, computed from the
   raw metrics, the floor test_numbers_agree holds targets to as well: the bytes that must cross DRAM over the
   DRAM peak, less a repeated pass's avoidable reads, and the FLOPs over the fastest peak the report names);
2. every metric named in evidence and expectations exists in the file, or is a documented derived quantity
   (``kprof.diagnose.kernel.DERIVED``), a per-PC source counter of the file (``sass:<counter>``) or one of the
   file's ncu rules; a missing metric may be named only with a missing (None) value;
3. one quantity has one value: an expectation's ``value_now`` is the value of its metric in the file, evidence
   quotes the value of the metric it names (up to a power-of-ten unit change), evidence and expectations that
   name the same metric agree, and no text says "below N%" next to a value at or above N;
4. ``healthy`` implies a grid that fills the GPU (a block per SM, SMs busy >= 80% of the elapsed cycles when
   measured) and a limiting unit at or above the healthy fraction.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from kprof import thresholds as th
from kprof.diagnose.kernel import DERIVED, DURATION, metric_value
from kprof.diagnose.roofline import sm_active_fraction
from kprof.kernel_model import KernelLaunch, KernelProfile
from kprof.model import Diagnosis, Evidence, Verdict
from tests.conftest import CORPUS, REPO
from tests.diagnose.every_file import diagnosed
from tests.diagnose.floors import physical_floor_ns

NCU_SUFFIXES = (".ncu-rep", ".ncu-rep.gz", ".csv", ".csv.gz")
VALIDATION = REPO / "data" / "validation"


def _is_ncu(p: Path) -> bool:
    name = p.name
    return name.endswith(NCU_SUFFIXES) and "labels" not in name and "manifest" not in name


def _files() -> list[tuple[str, Path | None, str]]:
    """(id, path or None, reason when None) for every place kernel reports live."""
    out: list[tuple[str, Path | None, str]] = []
    samples = REPO / "data" / "samples" / "ncu"
    if samples.is_dir():
        out += [(f"samples/{p.name}", p, "") for p in sorted(samples.iterdir()) if _is_ncu(p)]
    else:
        out.append(("samples", None, f"no sample gallery at {samples}"))
    found = (
        sorted(p for p in VALIDATION.rglob("*") if p.is_file() and _is_ncu(p)) if VALIDATION.is_dir() else []
    )
    found = [p for p in found if "workloads" not in p.parts and "timeline" not in p.parts]
    if found:
        out += [(f"validation/{p.relative_to(VALIDATION)}", p, "") for p in found]
    else:
        out.append(("validation", None, f"no kernel reports under {VALIDATION} yet"))
    esmm = CORPUS / "ESMM-Research"
    if esmm.is_dir():
        out += [(f"corpus/{p.name}", p, "") for p in sorted(esmm.iterdir()) if _is_ncu(p)]
    else:
        out.append(("corpus", None, f"third-party corpus not present at {CORPUS}"))
    return out


FILES = _files()


def _diagnosed(path: Path) -> tuple[KernelProfile, tuple[Diagnosis, ...]]:
    """The report and its diagnoses, from the session's one diagnosis of each file (tests/diagnose/every_file.py)."""
    got = diagnosed(path)
    assert not isinstance(got, str), got
    prof, ds = got
    assert isinstance(prof, KernelProfile)
    return prof, ds


def _profile(path: Path | None, reason: str) -> tuple[KernelProfile, tuple[Diagnosis, ...]]:
    if path is None:
        pytest.skip(reason)
    if ".ncu-rep" in path.name:
        pytest.importorskip("ncu_report")
    return _diagnosed(path)


def _pairs(path: Path | None, reason: str) -> list[tuple[KernelLaunch, Diagnosis]]:
    prof, diags = _profile(path, reason)
    by_id = {k.id: k for k in prof.launches}
    return [(by_id[d.subject.launch or 0], d) for d in diags]


def _parts(d: Diagnosis) -> list[tuple[str, tuple[Evidence, ...]]]:
    return [(d.headline, d.evidence)] + [(f.headline, f.evidence) for f in d.findings]


# ----------------------------------------------------------------------------- metric names
_SPLIT = re.compile(r"\s*(?:,|\s/\s|\s\+\s)\s*")
_METRIC_ATOM = re.compile(r"^(?:derived:|sass:)?[A-Za-z0-9_@.:\-]+$")


def metric_atoms(spec: str) -> list[str]:
    """The metric names in an evidence/expectation ``metric`` field (``a / b``, ``a + b``, ``a, b``)."""
    return [a for a in _SPLIT.split(spec.strip()) if a]


def _sass_counters(k: KernelLaunch) -> set[str]:
    return {c for line in k.sass for c in line.counters}


def _known(k: KernelLaunch, atom: str) -> bool:
    if atom in DERIVED:
        return True
    if atom.startswith("sass:"):
        return atom.removeprefix("sass:") in _sass_counters(k)
    if atom.startswith("rule:"):
        return k.rule(atom.removeprefix("rule:")) is not None
    return atom in k.metrics or k.rule(atom) is not None


@pytest.mark.parametrize(("path", "reason"), [(p, r) for _, p, r in FILES], ids=[i for i, _, _ in FILES])
def test_every_named_metric_exists_or_is_documented(path: Path | None, reason: str) -> None:
    for k, d in _pairs(path, reason):
        for _, evidence in _parts(d):
            for e in evidence:
                if e.metric is None:
                    assert "timeline" in e.name, f"{e.name}: evidence without a metric"
                    continue
                atoms = metric_atoms(e.metric)
                assert atoms, e
                for a in atoms:
                    assert _METRIC_ATOM.match(a), f"{e.name}: {a!r} is words, not a metric name"
                    assert _known(k, a) or e.value is None, (
                        f"{k.name}: evidence {e.name!r} names {a!r}, which is neither in the file nor documented"
                    )
        for x in d.expect:
            assert _METRIC_ATOM.match(x.metric), x.metric
            assert _known(k, x.metric) or x.value_now is None, f"{k.name}: expectation names {x.metric!r}"


# ----------------------------------------------------------------------------- one value
def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.011, abs_tol=0.051)


def _same_up_to_scale(v: float, m: float) -> bool:
    return any(_same(v, m * 10.0**p) for p in (0, 2, -3, -6, -9, -12))


@pytest.mark.parametrize(("path", "reason"), [(p, r) for _, p, r in FILES], ids=[i for i, _, _ in FILES])
def test_one_quantity_has_one_value(path: Path | None, reason: str) -> None:
    for k, d in _pairs(path, reason):
        quoted: dict[str, float] = {}
        for _, evidence in _parts(d):
            for e in evidence:
                if e.metric is None or not isinstance(e.value, int | float):
                    continue
                atoms = metric_atoms(e.metric)
                if len(atoms) == 1:
                    m = metric_value(k, atoms[0])
                    if m is not None and atoms[0] != DURATION:
                        assert _same_up_to_scale(float(e.value), m), (
                            f"{k.name}: {e.name} = {e.value} but {atoms[0]} = {m}"
                        )
                    prev = quoted.setdefault(e.metric, float(e.value))
                    assert _same(prev, float(e.value)), f"{k.name}: {e.metric} quoted as {prev} and {e.value}"
        for x in d.expect:
            if x.value_now is None:
                continue
            m = metric_value(k, x.metric)
            assert m is not None and _same(float(x.value_now), m), (
                f"{k.name}: expectation {x.metric} value_now {x.value_now}, file says {m}"
            )
            if x.metric in quoted:
                assert _same_up_to_scale(quoted[x.metric], float(x.value_now)), (
                    f"{k.name}: {x.metric} is {quoted[x.metric]} in evidence, {x.value_now} in expect"
                )
        # The same ratio quoted twice (evidence and expectation in the same unit) is one quantity: "16.5
        # wavefronts per shared load" in evidence and "down from 15.4" in expect are two quantities under one name.
        ratios = {
            e.unit: float(e.value) for e in d.evidence if "/" in e.unit and isinstance(e.value, int | float)
        }
        for x in d.expect:
            if x.unit in ratios and x.value_now is not None:
                assert _same(ratios[x.unit], float(x.value_now)), (
                    f"{k.name}: {ratios[x.unit]} {x.unit} in evidence, {x.value_now} in expect"
                )
        for text, evidence in _parts(d):
            for e in evidence:
                for m in re.finditer(r"below (?:the )?(\d+(?:\.\d+)?)%", e.reference):
                    if isinstance(e.value, int | float) and e.unit.startswith("%"):
                        assert e.value < float(m.group(1)), f"{k.name}: '{e.reference}' for {e.value}"
            for m in re.finditer(r"(\d+(?:\.\d+)?)% of (?:its )?peak, short of the (\d+)%", text):
                assert float(m.group(1)) < float(m.group(2)), text


# ----------------------------------------------------------------------------- floors
def _independent_floor_ns(k: KernelLaunch) -> float:
    """The one physical floor both invariant modules use (tests/diagnose/floors.py): compulsory DRAM bytes at the
    DRAM peak (the repeated pass's avoidable reads left out, as kprof's own floor leaves them out), all FLOPs at the
    fastest peak, the shortest kernel measured."""
    return physical_floor_ns(k)


@pytest.mark.parametrize(("path", "reason"), [(p, r) for _, p, r in FILES], ids=[i for i, _, _ in FILES])
def test_predicted_duration_is_never_below_the_floor(path: Path | None, reason: str) -> None:
    for k, d in _pairs(path, reason):
        for x in d.expect:
            if x.metric != DURATION or x.target is None:
                continue
            now = k.value(DURATION)
            assert now is not None and x.target <= now + 1, (
                f"{k.name}: a duration 'down' to {x.target} from {now}"
            )
            floor = _independent_floor_ns(k)
            assert x.target >= floor * 0.999, f"{k.name}: target {x.target} ns below the floor {floor:.0f} ns"


# Fixes that change the matrix instruction (or move FP32 work onto the tensor cores): their targets may pass the
# rate of the pipe the kernel uses today. Every other fix keeps the instruction, and its work stays on its pipe.
_CHANGES_THE_INSTRUCTION = {"no_tensor_cores", "tensor_core_bound"}
_PIPE_ELAPSED = (
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
)


_FP64_PIPE = "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed"


def _same_instruction_floor_ns(k: KernelLaunch, keeps_fp64: bool = True) -> float | None:
    """A fix that keeps the MMA (or FP64) instruction needs at least the pipe's busy time at 100%: the duration x
    the pipe's elapsed utilisation (an mma.sync kernel never reaches the HGMMA peak by launching more blocks).
    ``keeps_fp64`` False: the fix takes the FP64 instructions out (FP32 data computed in FP64, whose expectation
    is zero FP32 -> FP64 conversions), so the FP64 pipe's busy time is no floor."""
    d = k.value(DURATION)
    pipes = [v for n in _PIPE_ELAPSED if (keeps_fp64 or n != _FP64_PIPE) and (v := k.value(n)) is not None]
    return d * max(pipes) / 100.0 if d and pipes else None


def _removes_fp64(expect: Any) -> bool:
    """The expectations predict the FP64 conversions gone (kprof.rules.kernel.precision)."""
    return any(x.metric == "sass:fp64_widening_conversions" and x.target == 0 for x in expect)


@pytest.mark.parametrize(("path", "reason"), [(p, r) for _, p, r in FILES], ids=[i for i, _, _ in FILES])
def test_targets_move_and_respect_the_instruction_rate(path: Path | None, reason: str) -> None:
    """No expectation predicts its current value (a target equal to the value now says nothing), and a duration
    target of a fix that keeps the instruction is never below the busiest MMA/FP64 pipe at 100% of its rate."""
    for k, d in _pairs(path, reason):
        for part, (bottleneck, expect) in enumerate(
            [(d.bottleneck, d.expect)] + [(f.bottleneck, getattr(f, "expect", ())) for f in d.findings]
        ):
            for x in expect:
                if x.target is not None and x.value_now is not None and isinstance(x.value_now, int | float):
                    assert not _same(float(x.target), float(x.value_now)), (
                        f"{k.name} part {part}: {x.label} target {x.target} equals the value now"
                    )
                if x.metric == DURATION and x.target is not None and bottleneck is not None:
                    if bottleneck.value in _CHANGES_THE_INSTRUCTION:
                        continue
                    floor = _same_instruction_floor_ns(k, keeps_fp64=not _removes_fp64(expect))
                    if floor is not None:
                        assert x.target >= floor * 0.999, (
                            f"{k.name}: {bottleneck.value} target {x.target} ns below the pipe's "
                            f"{floor:.0f} ns at 100%"
                        )


# ----------------------------------------------------------------------------- healthy
@pytest.mark.parametrize(("path", "reason"), [(p, r) for _, p, r in FILES], ids=[i for i, _, _ in FILES])
def test_healthy_means_a_full_grid_at_the_roof(path: Path | None, reason: str) -> None:
    for k, d in _pairs(path, reason):
        if d.verdict is not Verdict.HEALTHY:
            continue
        sms = k.device_attributes.get("multiprocessor_count")
        if k.blocks is not None and isinstance(sms, int | float):
            assert k.blocks >= sms, f"{k.name}: healthy with {k.blocks} blocks on {sms} SMs"
        busy = sm_active_fraction(k)
        if busy is not None:
            assert busy >= th.SMALL_GRID_ACTIVE_SM_FRACTION, f"{k.name}: healthy with SMs busy {busy:.0%}"
        top = d.evidence[0]
        assert isinstance(top.value, int | float) and top.value >= 100 * th.HEALTHY_FRACTION_OF_PEAK, top


def test_metric_atoms_split_expressions() -> None:
    assert metric_atoms("a__b.sum / c__d.sum") == ["a__b.sum", "c__d.sum"]
    assert metric_atoms("x.sum, y.sum") == ["x.sum", "y.sum"]
    assert metric_atoms("derived:dram_bytes") == ["derived:dram_bytes"]


def test_the_checks_catch_what_they_check() -> None:
    """The helpers flag a made-up metric and a quoted value that is not the metric's."""
    from kprof.kernel_model import Metric

    busy_mma = KernelLaunch(
        id=0,
        name="k",
        metrics={
            DURATION: Metric(60000.0),
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed": Metric(5.0),
        },
    )
    floor = _same_instruction_floor_ns(busy_mma)
    assert floor is not None and abs(floor - 3000.0) < 1e-6  # 3.24 µs would pass, 2.9 µs would not

    k = KernelLaunch(id=0, name="k", metrics={"dram__bytes_read.sum": Metric(10.0)})
    assert _known(k, "dram__bytes_read.sum") and _known(k, "derived:dram_bytes")
    assert not _known(k, "dram__bytes.sum") and not _known(k, "sass:inst_executed")
    assert _same_up_to_scale(1.0, 1000.0) and not _same_up_to_scale(15.4, 16.5)


# ============================================================================= timelines
# Invariants over every timeline diagnosis of every capture we have (samples, the validation galleries, the
# corpus): the rubric review's classes (docs/review/rubric_review.md) as checks on all files, not only the one
# that showed each.
TIMELINE_FOLDERS = (
    REPO / "data" / "samples" / "timeline",
    VALIDATION / "timeline" / "profiles",
    VALIDATION / "heldout",
    VALIDATION / "blind9",
    CORPUS / "pipit",
    CORPUS / "HolisticTraceAnalysis",
    CORPUS / "kineto",
)
_TRACE_SUFFIXES = (".sqlite", ".sqlite.gz", ".json.gz")


def _timeline_files() -> list[tuple[str, Path | None, str]]:
    out: list[tuple[str, Path | None, str]] = []
    for folder in TIMELINE_FOLDERS:
        if not folder.is_dir():
            out.append((folder.name, None, f"no timelines at {folder}"))
            continue
        out += [
            (f"{folder.name}/{p.name}", p, "")
            for p in sorted(folder.iterdir())
            if p.name.endswith(_TRACE_SUFFIXES)
        ]
    return out


TIMELINES = _timeline_files()


def _sqlite_span(path: Path) -> tuple[int, int] | None:
    """First to last event of any kind in an nsys export, read with sqlite3 alone (as the gallery's measure.py
    defines it): CUDA calls, GPU activity, synchronizations, NVTX ranges, library calls from start to end, OS
    runtime calls by their start (a poll() begun inside the capture may end long after it). Nsight's own
    PROFILER_OVERHEAD rows are not the program's."""
    import gzip
    import shutil
    import sqlite3
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "x.sqlite"
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as src, open(db, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            shutil.copyfile(path, db)
        con = sqlite3.connect(db)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            lo: list[int] = []
            hi: list[int] = []
            for t in sorted(tables):
                timed = t.startswith("CUPTI_ACTIVITY_KIND_") or t in (
                    "NVTX_EVENTS", "OSRT_API", "CUDNN_EVENTS", "CUBLAS_EVENTS", "MPI_P2P_EVENTS",
                    "MPI_COLLECTIVES_EVENTS",
                )  # fmt: skip
                cols = {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')}
                if not timed or not {"start", "end"} <= cols:
                    continue
                end = "start" if t == "OSRT_API" else '"end"'
                row = con.execute(
                    f'SELECT min(start), max({end}) FROM "{t}" WHERE start >= 0 AND "end" IS NOT NULL '
                    f'AND "end" >= start AND "end" < {2**62}'
                ).fetchone()
                if row and row[0] is not None:
                    lo.append(int(row[0]))
                    hi.append(int(row[1]))
        finally:
            con.close()
    return (min(lo), max(hi)) if lo else None


def _kineto_span(path: Path) -> tuple[int, int] | None:
    """First to last complete event (ph X) of a PyTorch profiler trace, the profiler's own span (cat Trace,
    which may begin before anything happens) left out; in ns."""
    import gzip
    import json

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        evs = json.load(f).get("traceEvents", [])
    xs = [
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
        for e in evs
        if e.get("ph") == "X" and "ts" in e and str(e.get("cat", "")).lower() != "trace"
    ]
    return (round(min(a for a, _ in xs) * 1e3), round(max(b for _, b in xs) * 1e3)) if xs else None


_UNIT_NS = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}
_CAPTURE_QUOTE = re.compile(r"of (?:the )?([\d.,]+) (ns|µs|ms|s) capture")


def _timeline_diagnosed(path: Path) -> tuple[object, tuple[Diagnosis, ...]]:
    """The capture and its diagnoses (as ``kprof diagnose`` gives them), from the session's one diagnosis of each
    file (tests/diagnose/every_file.py)."""
    got = diagnosed(path)
    assert not isinstance(got, str), got
    return got


def _timeline(path: Path | None, reason: str) -> tuple[object, tuple[Diagnosis, ...]]:
    if path is None:
        pytest.skip(reason)
    return _timeline_diagnosed(path)


def _texts(d: Diagnosis) -> list[str]:
    return [d.headline, d.mechanism, d.fix or "", d.next_step or "", *(e.reference for e in d.evidence)] + [
        f.headline for f in d.findings
    ]


@pytest.mark.parametrize(
    ("path", "reason"), [(p, r) for _, p, r in TIMELINES], ids=[i for i, _, _ in TIMELINES]
)
def test_the_capture_quoted_is_the_span_of_all_events(path: Path | None, reason: str) -> None:
    """ "the X capture" is the first to last event of any kind (rubric review: 148 ms quoted for a 567 ms capture,
    6.57 s for 11.57 s), computed here from the file without kprof."""
    _, ds = _timeline(path, reason)
    assert path is not None
    span = _kineto_span(path) if ".json" in path.name else _sqlite_span(path)
    quotes = [
        (float(v.replace(",", "")) * _UNIT_NS[u])
        for d in ds
        for t in _texts(d)
        for v, u in _CAPTURE_QUOTE.findall(t)
    ]
    if span is None:
        assert not quotes
        return
    wall = span[1] - span[0]
    for q in quotes:  # 3 significant digits
        assert abs(q - wall) <= 0.006 * wall, (
            f"{path.name}: quoted a {q / 1e6:.4g} ms capture of {wall / 1e6:.4g} ms"
        )


_BUSY_WORDS = re.compile(r"rarely idle|never drains|rarely drains")
_TORCH_WORDS = re.compile(r"torch|TORCHINDUCTOR|Triton|DataLoader|py-spy|non_blocking")


@pytest.mark.parametrize(
    ("path", "reason"), [(p, r) for _, p, r in TIMELINES], ids=[i for i, _, _ in TIMELINES]
)
def test_timeline_text_agrees_with_its_numbers(path: Path | None, reason: str) -> None:
    """No expectation predicts its current value; "rarely idle" only at >= 80% GPU-busy; a launch-bound target
    keeps the kernels' own time plus the GPU's gap between them (never a gapless GPU); times print in one unit
    style (no "us"); every suggested nsys command comes from the command builder (kprof's capture flags); a
    compiled CUDA program gets no PyTorch advice."""
    from kprof.diagnose.timeline import timeline_metrics

    tl, ds = _timeline(path, reason)
    m = timeline_metrics(tl)  # type: ignore[arg-type]
    command = getattr(tl, "command", "")
    native = (
        getattr(tl, "format", "") == "nsys"
        and not re.match(r"^\S*python", command.split(" ", 1)[0].rsplit("/", 1)[-1] if command else "")
        and not any("at::" in n for n in tl.kernels.names)  # type: ignore[attr-defined]
    )
    for i, d in enumerate(ds):
        text = " ".join(_texts(d)) + " " + " ".join(x.describe() for x in d.expect)
        for x in d.expect:
            if x.target is not None and isinstance(x.value_now, int | float):
                assert not _same(float(x.target), float(x.value_now)), f"{path}: {x.describe()}"
        busy = next((e.value for e in d.evidence if e.metric == "gpu_busy_fraction"), None)
        if _BUSY_WORDS.search(text):
            assert isinstance(busy, int | float) and busy >= 100 * th.GPU_BOUND_BUSY_FRACTION, d.headline
        if i == 0 and d.bottleneck is not None and d.bottleneck.value == "host_launch_bound" and m:
            floor = m["gpu_busy_ns"] + m["kernel_count"] * th.GRAPH_KERNEL_GAP_NS
            for x in d.expect:
                if x.metric == "wall_ns" and x.target is not None:
                    assert x.target >= min(floor, m["wall_ns"]) * 0.999, x.describe()
                if x.metric == "gpu_busy_fraction" and x.target is not None:
                    assert x.target <= m["gpu_busy_ns"] / min(floor, m["wall_ns"]) + 1e-3, x.describe()
        assert not re.search(r"\d us\b", text), f"{path}: hand-built 'us' in {d.headline}"
        for cmd in re.findall(r"nsys profile[^`]*", text):
            assert "--cpuctxsw=" in cmd and " -t cuda,nvtx,osrt" in cmd, f"{path}: hand-written {cmd!r}"
        if native:
            advice = " ".join([d.fix or "", d.next_step or "", *(f.headline for f in d.findings)])
            assert not _TORCH_WORDS.search(advice), f"{path}: PyTorch advice for {command!r}: {advice[:300]}"
