"""The .ncu-rep loader reads each function's SASS once per report, and sends launches cheaply (issue 16, point 5).

A fake ``ncu_report`` counts the native calls: a report of many launches of a few kernels walks each
kernel's listing once (a 154-launch A100 report had made 281,000 ``sass_by_pc`` calls), every launch
still gets its own per-PC counters, and a listing is reused only for the same function.
"""

from __future__ import annotations

import io
import pickle
import types
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kprof.io import ncu
from kprof.kernel_model import Metric, SassLine

SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"


class FakeMetric:
    def __init__(self, values: list[Any], pcs: list[int] | None = None, unit: str = "") -> None:
        self.values, self.pcs, self._unit = values, pcs, unit

    def num_instances(self) -> int:
        return len(self.values) if self.pcs is not None else 0

    def has_correlation_ids(self) -> bool:
        return self.pcs is not None

    def correlation_ids(self) -> FakeMetric:
        assert self.pcs is not None
        return FakeMetric(list(self.pcs))

    def value(self, i: int | None = None) -> Any:
        return self.values[0 if i is None else i]

    def unit(self) -> str:
        return self._unit


class FakeInfo:
    def __init__(self, line: int) -> None:
        self._line = line

    def file_name(self) -> str:
        return "k.cu"

    def line(self) -> int:
        return self._line


class FakeAction:
    def __init__(
        self, name: str, code: dict[int, str], start: int, executed: float, calls: Counter[str]
    ) -> None:
        self._name, self.code, self.start, self.calls = name, code, start, calls
        pcs = sorted(pc for pc in code if pc >= start)
        self.metrics = {
            SOL: FakeMetric([50.0], unit="%"),
            "launch__function_pcs": FakeMetric([start], pcs=[start]),
            "inst_executed": FakeMetric([executed] * len(pcs), pcs=pcs, unit="inst"),
        }

    def name(self, base: int | None = None) -> str:
        return self._name

    def metric_names(self) -> list[str]:
        return list(self.metrics)

    def metric_by_name(self, n: str) -> FakeMetric:
        return self.metrics[n]

    def sass_by_pc(self, pc: int) -> str:
        self.calls["sass_by_pc"] += 1
        return self.code.get(pc, "")

    def source_info(self, pc: int) -> FakeInfo:
        self.calls["source_info"] += 1
        return FakeInfo(pc // 16)

    def nvtx_state(self) -> None:
        return None

    def rule_results_as_dicts(self) -> list[dict[str, Any]]:
        return []

    def source_files(self) -> dict[str, str]:
        return {}

    def sections(self) -> list[Any]:
        return []


def _listing(n: int, base: int, op: str = "FFMA R1, R2, R3, R1") -> dict[int, str]:
    return {base + 16 * i: op for i in range(n)}


def _fake_module(actions: list[FakeAction]) -> Any:
    rng = types.SimpleNamespace(num_actions=lambda: len(actions), action_by_idx=lambda i: actions[i])
    ctx = types.SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda i: rng)
    return types.SimpleNamespace(
        load_report=lambda p: ctx,
        IAction=types.SimpleNamespace(NameBase_DEMANGLED=1, NameBase_MANGLED=2),
    )


@pytest.fixture
def report(tmp_path: Path) -> Path:
    p = tmp_path / "fake.ncu-rep"
    p.write_bytes(ncu.NCU_REP_MAGIC)
    return p


def _read(report: Path, actions: list[FakeAction], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(ncu, "_import_ncu_report", lambda: _fake_module(actions))
    return ncu._read_report(str(report))


def test_each_function_is_walked_once_per_report(report: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: Counter[str] = Counter()
    a, b = _listing(100, 0x1000), _listing(40, 0x8000, "LDG.E R4, [R2.64]")
    actions = [FakeAction("ka", a, 0x1000, float(i + 1), calls) for i in range(50)]
    actions += [FakeAction("kb", b, 0x8000, 7.0, calls) for _ in range(50)]
    prof = _read(report, actions, monkeypatch)
    # one walk per function (its instructions plus the empty PC that ends it), one check per later launch
    assert calls["sass_by_pc"] == (100 + 1) + (40 + 1) + 2 * 49
    assert calls["source_info"] == 100 + 40  # source lines once per function too
    assert [len(k.sass) for k in prof] == [100] * 50 + [40] * 50
    # the text and lines are the function's; the counters each launch's own
    assert prof[0].sass[5].text == prof[49].sass[5].text == "FFMA R1, R2, R3, R1"
    assert (prof[0].sass[5].file, prof[0].sass[5].line) == ("k.cu", (0x1000 + 5 * 16) // 16)
    assert [k.sass[0].counters["inst_executed"] for k in prof[:3]] == [1.0, 2.0, 3.0]
    assert prof[60].sass[0].text == "LDG.E R4, [R2.64]"


def test_a_listing_is_reused_only_for_the_same_function(
    report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same entry PC, another kernel name (a module loaded where another was): walked again. Same name and
    PC but other code at the entry (the module was replaced): walked again, not taken from the cache."""
    calls: Counter[str] = Counter()
    first = FakeAction("k", _listing(10, 0x1000), 0x1000, 1.0, calls)
    other_name = FakeAction("other", _listing(10, 0x1000, "IADD3 R1, R2, R3, RZ"), 0x1000, 1.0, calls)
    replaced = FakeAction("k", _listing(12, 0x1000, "HMMA.16816.F32 R4, R8, R12, R4"), 0x1000, 1.0, calls)
    prof = _read(report, [first, other_name, replaced], monkeypatch)
    assert [k.sass[0].text for k in prof] == [
        "FFMA R1, R2, R3, R1",
        "IADD3 R1, R2, R3, RZ",
        "HMMA.16816.F32 R4, R8, R12, R4",
    ]
    assert [len(k.sass) for k in prof] == [10, 10, 12]


def test_the_walk_is_the_same_with_and_without_the_cache(
    report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    actions = [FakeAction("k", _listing(30, 0x2000), 0x2000, float(i), calls) for i in range(4)]
    cached = _read(report, actions, monkeypatch)
    monkeypatch.setattr(ncu, "_import_ncu_report", lambda: _fake_module(actions))
    fresh = [
        ncu._load_action(str(report), a, i, _fake_module(actions), [], listings=None)
        for i, a in enumerate(actions)
    ]
    assert tuple(fresh) == cached.launches


def _sass(n: int) -> Iterator[SassLine]:
    for i in range(n):
        yield SassLine(
            pc=16 * i,
            text=f"FFMA R{i}, R1, R2, R3",
            file="a.cu" if i % 2 else None,
            line=i or None,
            counters={"inst_executed": float(i), "stall": 0.5} if i % 3 else {},
        )


def test_pickled_sass_lines_and_metrics_come_back_equal_and_read_only() -> None:
    """The reader process sends SASS lines and metrics as their constructors' arguments."""
    lines = tuple(_sass(7))
    metrics = {"a": Metric(1.5, "%"), "b": Metric("x"), "c": Metric(3)}
    buf = io.BytesIO()
    ncu._dump(("ok", (lines, metrics)), buf)
    kind, (back_lines, back_metrics) = pickle.loads(buf.getvalue())
    assert kind == "ok" and back_lines == lines and back_metrics == metrics
    assert all(type(s) is SassLine for s in back_lines)
    with pytest.raises(TypeError):
        back_lines[1].counters["inst_executed"] = 0.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        back_lines[1].pc = 3  # type: ignore[misc]
    fields = {f for f in SassLine.__dataclass_fields__}
    assert fields == {"pc", "text", "file", "line", "counters"}, (
        "a new SassLine field must travel: see ncu._sass_line"
    )
