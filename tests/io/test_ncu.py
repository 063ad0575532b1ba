"""The .ncu-rep loader: corpus reports (A10G, ncu 2023.1), H200 samples (ncu 2025.3), broken files."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kprof.errors import KprofInputError, MissingToolError
from kprof.io.ncu import NCU_REP_MAGIC, load_ncu_report
from kprof.kernel_model import KernelProfile

ESMM = "ESMM-Research"


def _corpus(corpus_dir: Path, name: str) -> Path:
    p = corpus_dir / ESMM / name
    if not p.exists():
        pytest.skip(f"{p} missing from the corpus")
    return p


@pytest.fixture(scope="module")
def nr():
    return pytest.importorskip("ncu_report")


# ----------------------------------------------------------------------------- errors before the native module
def test_wrong_magic_is_refused_before_ncu_report(tmp_path: Path) -> None:
    p = tmp_path / "fake.ncu-rep"
    p.write_bytes(b"PK\x03\x04 this is a zip, not a report")
    with pytest.raises(KprofInputError, match="NVR"):
        load_ncu_report(p)


def test_missing_module_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "r.ncu-rep"
    p.write_bytes(NCU_REP_MAGIC + b"\x02\x00\x00\x00")
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # import now raises ImportError
    with pytest.raises(MissingToolError, match="pip install ncu-report"):
        load_ncu_report(p)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(KprofInputError, match="no such file"):
        load_ncu_report(tmp_path / "nope.ncu-rep")
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    with pytest.raises(KprofInputError, match="empty"):
        load_ncu_report(empty)


def test_error_message_is_one_line_naming_the_file(tmp_path: Path) -> None:
    p = tmp_path / "x.ncu-rep"
    p.write_bytes(b"garbage\n\nmore")
    with pytest.raises(KprofInputError) as ei:
        load_ncu_report(p)
    assert "\n" not in str(ei.value) and str(ei.value).startswith(str(p))


# ----------------------------------------------------------------------------- truncated reports
def test_header_only_report_has_no_ranges(nr, tmp_path: Path, corpus_dir: Path) -> None:
    src = _corpus(corpus_dir, "profile_output_2025-03-10.ncu-rep").read_bytes()
    p = tmp_path / "cut.ncu-rep"
    p.write_bytes(src[:1000])
    with pytest.raises(KprofInputError, match="no profiled ranges"):
        load_ncu_report(p)


def test_report_cut_mid_launch_is_incomplete_not_short(nr, tmp_path: Path, corpus_dir: Path) -> None:
    # Cut at 250 kB of 301 kB: ncu_report loads two launches and a third whose name is None.
    src = _corpus(corpus_dir, "profile_output_2025-03-10.ncu-rep").read_bytes()
    p = tmp_path / "cut.ncu-rep"
    p.write_bytes(src[:250_000])
    with pytest.raises(KprofInputError, match="truncated"):
        load_ncu_report(p)


# ----------------------------------------------------------------------------- corpus
def test_basic_set_report(nr, corpus_dir: Path) -> None:
    prof = load_ncu_report(_corpus(corpus_dir, "profile_2025-03-31.ncu-rep"))
    assert isinstance(prof, KernelProfile) and prof.format == "ncu-rep"
    assert [k.name for k in prof] == [
        "basic",
        "gmem_coalesce",
        "smem_blocking",
        "one_blocktiling",
        "two_blocktiling",
        "one_d_vec",
    ]
    k = prof[0]
    assert k.device == "NVIDIA A10G" and k.compute_capability == "8.6"
    assert k.grid == (32, 32, 1) and k.block == (32, 32, 1)
    assert k.registers_per_thread == 36
    assert k.device_attributes["multiprocessor_count"] == 80
    m = k.metric("gpu__time_duration.sum")
    assert m is not None and m.unit == "ns" and m.value == pytest.approx(10_783_168)
    assert k.value("l1tex__throughput.avg.pct_of_peak_sustained_active") == pytest.approx(99.05, abs=0.01)
    # basic set: no memory tables -> missing, never 0
    assert k.value("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") is None
    assert set(k.sections) == {"LaunchStats", "Occupancy", "SpeedOfLight"}
    assert k.rule("SOLBottleneck") is not None and k.rule("SOLBottleneck").title == "High Throughput"
    assert k.mangled_name == "_Z5basiciiiPKfS0_Pf"
    assert k.sass and k.sass[0].text == "MOV R1, c[0x0][0x28]" and len(k.sass) == 96


def test_launch_whose_profiling_failed_is_kept_with_nothing_invented(nr, corpus_dir: Path) -> None:
    prof = load_ncu_report(_corpus(corpus_dir, "profile_2025-03-31.ncu-rep"))
    k = prof[5]
    assert k.name == "one_d_vec"
    # ncu stored NaN for every SpeedOfLight value and no launch statistics: missing, not zero
    assert k.value("sm__throughput.avg.pct_of_peak_sustained_elapsed") is None
    assert k.grid is None and k.block is None
    assert any("one_d_vec" in n and "failed" in n for n in prof.notes)
    assert all(r.kind == "error" or "error" in r.message for r in k.rules)


def test_custom_metrics_report_and_its_bogus_metric(nr, corpus_dir: Path) -> None:
    prof = load_ncu_report(_corpus(corpus_dir, "profile_2025-09-02.ncu-rep"))
    assert len(prof) == 12
    assert [k.name for k in prof][-2:] == ["ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"]
    k = prof[0]
    assert not k.rules
    assert k.value("sm__throughput.avg.pct_of_peak_sustained_elapsed") is None
    assert k.value("smsp__inst_executed_op_global_ld_pred_off_all.sum") == 0.0  # a real zero stays zero
    assert not any(name.startswith("regex:") for name in k.metrics)
    assert any("regex:" in n for n in prof.notes)
    assert prof[10].grid == (8, 16, 5)


def test_roofline_report_rules_and_peaks(nr, corpus_dir: Path) -> None:
    prof = load_ncu_report(_corpus(corpus_dir, "profile_output_2025-03-10.ncu-rep"))
    k = prof[3]
    assert k.name == "warptiling" and k.registers_per_thread == 228
    sol = k.rule("SOLBottleneck")
    assert sol is not None and sol.title == "Small Grid" and "0.4 full waves" in sol.message
    assert sol.kind == "optimization"
    assert "launch__waves_per_multiprocessor" in sol.focus_metrics
    assert k.value("dram__bytes.sum.peak_sustained") == 96.0


# ----------------------------------------------------------------------------- H200 samples
def test_h200_sample_full_set(nr, plain_ncu: Callable[[str], Path]) -> None:
    prof = load_ncu_report(plain_ncu("uncoalesced_global_access"))
    assert len(prof) == 1
    k = prof[0]
    assert k.name == "strided_gather" and k.device == "NVIDIA H200" and k.compute_capability == "9.0"
    assert {"SpeedOfLight", "MemoryWorkloadAnalysis_Tables", "SourceCounters", "WarpStateStats"} <= set(
        k.sections
    )
    assert k.value("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") == 4_194_304
    assert k.value("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum") == 131_072
    rule = k.rule("UncoalescedGlobalAccess")
    assert rule is not None and rule.speedup_estimate == pytest.approx(74.69, abs=0.01)
    assert rule.speedup_type == "global"
    # SASS with source lines and per-PC counters (compiled with -lineinfo, --import-source yes)
    ldg = [s for s in k.sass if s.mnemonic == "LDG"]
    assert len(ldg) == 1
    assert ldg[0].file and ldg[0].file.endswith("uncoalesced_global_access.cu") and ldg[0].line == 7
    assert ldg[0].counters["inst_executed"] == 131_072
    assert ldg[0].counters["memory_l2_theoretical_sectors_global"] == 4_194_304


def test_cublas_sample_registers_and_occupancy(nr, plain_ncu: Callable[[str], Path]) -> None:
    k = load_ncu_report(plain_ncu("tensor_core_bound"))[0]
    assert k.name.startswith("nvjet")
    assert k.registers_per_thread == 168
    assert k.value("sm__maximum_warps_per_active_cycle_pct") == pytest.approx(18.75)


def test_repr_is_short_and_dataframe_is_on_request(nr, plain_ncu: Callable[[str], Path]) -> None:
    prof = load_ncu_report(plain_ncu("small_grid"))
    k = prof[0]
    r = repr(k)
    assert "few_blocks_reduce" in r and "grid 8x1x1" in r and len(r) < 200
    assert len(repr(prof)) < 200
    df = k.to_dataframe()
    assert list(df.columns) == ["metric", "value", "unit"] and len(df) == len(k.metrics)
    long = prof.to_dataframe()
    assert set(long["launch"]) == {0}
    sass = k.sass_dataframe()
    assert {"pc", "opcode", "file", "line", "inst_executed"} <= set(sass.columns)


@pytest.mark.parametrize("fraction", [0.3, 0.56, 0.999])
def test_cut_h200_report_is_an_input_error(
    nr, fraction: float, plain_ncu: Callable[[str], Path], tmp_path: Path
) -> None:
    src = plain_ncu("shared_bank_conflicts").read_bytes()
    p = tmp_path / "cut.ncu-rep"
    p.write_bytes(src[: int(len(src) * fraction)])
    with pytest.raises(KprofInputError, match="truncated"):
        load_ncu_report(p)
