"""The SASS data flow is traced once per function and weighed per launch (issue 16, point 5).

:func:`kprof.diagnose.sass.dataflow` had re-traced the registers of the same listing for every launch
and twice per launch (13 s of a 156-launch report). The trace depends on the text alone; these tests
check that launches with the same text but their own executed counts still get their own numbers.
"""

from __future__ import annotations

from kprof.diagnose import sass
from kprof.diagnose.sass import analyze_sass, dataflow
from kprof.kernel_model import SassLine

TEXT = (
    "LDS.128 R8, [R2]",
    "LDS.128 R12, [R3]",
    "FFMA R20, R8, R12, R20",
    "FFMA R21, R8, R13, R21",
    "IADD3 R2, R2, 0x10, RZ",
    "LDG.E R30, [R4.64]",
    "IMAD R31, R30, 0x9e3779b1, RZ",
    "BRA 0x0",
)


def _launch(executed: list[float] | None) -> tuple[SassLine, ...]:
    return tuple(
        SassLine(
            pc=16 * i,
            text=t,
            counters={} if executed is None else {"inst_executed": executed[i]},
        )
        for i, t in enumerate(TEXT)
    )


def test_same_text_other_counts_gets_its_own_numbers() -> None:
    sass._flow_plan.cache_clear()
    once = dataflow(_launch([1.0] * len(TEXT)))
    tenfold = dataflow(_launch([10.0] * len(TEXT)))
    static = dataflow(_launch(None))
    assert sass._flow_plan.cache_info().misses == 1  # one trace for the three launches
    assert sass._flow_plan.cache_info().hits == 2
    assert (once.fma, tenfold.fma, static.fma) == (2.0, 20.0, 2.0)
    assert (once.fma_from_loads, tenfold.fma_from_loads) == (2.0, 20.0)
    assert (once.load_bytes, tenfold.load_bytes) == (36.0, 360.0)  # two LDS.128 and an LDG.E per pass
    assert (once.int_data_ops, tenfold.int_data_ops) == (1.0, 10.0)  # the IMAD hashes a loaded value
    assert once.int_data_pcs == tenfold.int_data_pcs == frozenset({16 * 6})
    assert once.operand_reuse == tenfold.operand_reuse == 4 / 3


def test_unexecuted_lines_weigh_nothing_once_any_line_has_a_count() -> None:
    counts = [5.0, 5.0, 5.0, 0.0, 5.0, 5.0, 5.0, 5.0]
    lines = tuple(
        SassLine(pc=16 * i, text=t, counters={"inst_executed": c} if i != 3 else {})
        for i, (t, c) in enumerate(zip(TEXT, counts, strict=True))
    )
    f = dataflow(lines)
    assert f.fma == 5.0 and f.fma_from_loads == 5.0  # the FFMA without a count weighs 0


def test_a_listing_asked_twice_is_answered_once_and_a_new_one_afresh() -> None:
    lines = _launch([2.0] * len(TEXT))
    assert dataflow(lines) is dataflow(lines)
    assert analyze_sass(lines) is analyze_sass(lines)
    other = _launch([3.0] * len(TEXT))  # equal text, other counts: never the cached answer
    assert dataflow(other).fma == 6.0 and analyze_sass(other).ffma == 6.0
    as_list = list(lines)  # a list could change: not cached by identity, still right
    assert dataflow(as_list) == dataflow(lines) and dataflow(as_list) is not dataflow(as_list)
