"""The ncu CSV loader (--page raw and --page details), no native module needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from kprof.errors import KprofInputError
from kprof.io import load
from kprof.io.ncu_csv import _function_name, _normalize, load_ncu_csv

FIXED = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"'


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (75.904, "us", (75_904.0, "ns")),
        (1.5, "msecond", (1_500_000.0, "ns")),
        (10_776_576, "nsecond", (10_776_576, "ns")),
        (3.2, "Ghz", (3.2e9, "hz")),
        (1.98, "GHz", (1.98e9, "hz")),
        (3.76, "Tbyte/s", (3.76e12, "byte/s")),
        (1.504, "Kbyte/cycle", (1504.0, "byte/cycle")),
        (1.024, "Kbyte/block", (1024.0, "byte/block")),
        (2.0, "sector/ns", (2.0e9, "sector/s")),
        (32.77, "Kbyte", (32_770.0, "byte")),
        (5.0, "%", (5.0, "%")),
        (16.0, "register/thread", (16.0, "register/thread")),
    ],
)
def test_units_are_scaled_to_ncu_base_units(value: float, unit: str, expected: tuple[float, str]) -> None:
    got = _normalize(value, unit)
    assert got[1] == expected[1]
    assert got[0] == pytest.approx(expected[0])


@pytest.mark.parametrize(
    ("demangled", "name"),
    [
        ("basic(int, int, int, const float *, const float *, float *)", "basic"),
        (
            "void gmem_coalesce<(int)32>(int, int, int, const float *, const float *, float *)",
            "gmem_coalesce",
        ),
        ("void ns::inner::k<float, (cute::Foo)1>(Params<float>)", "k"),
        ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
        # ncu's CSV writes <unnamed> (an anonymous namespace) as "unnamed>": the stray '>' closes nothing
        (
            "void unnamed>::vectorized_layer_norm_kernel<BFloat16, float, 0>(int, T2, const T1 *, T2 *)",
            "vectorized_layer_norm_kernel",
        ),
    ],
)
def test_function_name(demangled: str, name: str) -> None:
    assert _function_name(demangled) == name


def _raw(tmp_path: Path, metrics: dict[str, tuple[str, str]], *, prelude: str = "") -> Path:
    names = ",".join(f'"{n}"' for n in metrics)
    units = ",".join('""' for _ in range(11)) + "," + ",".join(f'"{u}"' for u, _ in metrics.values())
    vals = ",".join(f'"{v}"' for _, v in metrics.values())
    row = '"0","123","python3","host","void k<4>(float *)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0",'
    p = tmp_path / "k.csv"
    p.write_text(f"{prelude}{FIXED},{names}\n{units}\n{row}{vals}\n")
    return p


def test_raw_page_with_prof_lines_units_row_separators_and_na(tmp_path: Path) -> None:
    p = _raw(
        tmp_path,
        {
            "gpu__time_duration.sum": ("us", "1,234.5"),
            "dram__bytes.sum": ("Mbyte", "2.5"),
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("%", "n/a"),
            "launch__registers_per_thread": ("register/thread", "32"),
            "device__attribute_display_name": ("", "NVIDIA H200"),
            "device__attribute_multiprocessor_count": ("", "132"),
        },
        prelude="==PROF== Connected to process 123 (/usr/bin/python3)\n==PROF== Disconnected from process 123\n",
    )
    prof = load_ncu_csv(p)
    assert prof.format == "ncu-csv-raw" and len(prof) == 1
    k = prof[0]
    assert k.name == "k" and k.demangled_name == "void k<4>(float *)"
    assert k.grid == (1024, 1, 1) and k.block == (256, 1, 1) and k.compute_capability == "9.0"
    assert k.value("gpu__time_duration.sum") == pytest.approx(1_234_500.0)
    assert k.metric("gpu__time_duration.sum").unit == "ns"
    assert k.value("dram__bytes.sum") == pytest.approx(2.5e6)
    assert k.value("sm__throughput.avg.pct_of_peak_sustained_elapsed") is None  # n/a is missing, not 0
    assert k.registers_per_thread == 32
    assert k.device == "NVIDIA H200" and k.device_attributes["multiprocessor_count"] == 132
    assert not k.sass and not k.rules


def test_dispatcher_routes_csv(tmp_path: Path) -> None:
    p = _raw(tmp_path, {"gpu__time_duration.sum": ("ns", "100")})
    assert load(p).format == "ncu-csv-raw"


def test_details_page_labels_and_rules(tmp_path: Path) -> None:
    head = FIXED + ',"Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type",'
    head += '"Rule Description","Estimated Speedup Type","Estimated Speedup"'
    fixed = '"0","1","p","h","k(int)","1","7","(128, 1, 1)","(8, 1, 1)","0","9.0"'
    rows = [
        f'{fixed},"GPU Speed Of Light Throughput","Duration","us","12.50",',
        f'{fixed},"GPU Speed Of Light Throughput","Memory Throughput","%","2.83",',
        f'{fixed},"Memory Workload Analysis","Memory Throughput","Gbyte/s","136.10",',
        f'{fixed},"Launch Statistics","Waves Per SM","","0.00",',
        f'{fixed},"Launch Statistics","# SMs","SM","132",',
        f'{fixed},"Occupancy","Achieved Occupancy","%","6.23",',
        f'{fixed},"Launch Statistics","Uses Green Context","","0",',
        f'{fixed},"LaunchStats","","","","LaunchConfiguration","OPT","The grid is too small.","global","93.94"',
    ]
    p = tmp_path / "d.csv"
    p.write_text(head + "\n" + "\n".join(rows) + "\n")
    prof = load_ncu_csv(p)
    assert prof.format == "ncu-csv-details"
    k = prof[0]
    assert k.value("gpu__time_duration.sum") == pytest.approx(12_500.0)
    # the same label in two sections means two metrics
    assert k.value("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") == pytest.approx(2.83)
    assert k.value("dram__bytes.sum.per_second") == pytest.approx(1.361e11)
    assert k.value("sm__warps_active.avg.pct_of_peak_sustained_active") == pytest.approx(6.23)
    assert k.device_attributes["multiprocessor_count"] == 132
    assert "label:Launch Statistics:Uses Green Context" in k.metrics
    (rule,) = k.rules
    assert rule.name == "LaunchConfiguration" and rule.speedup_estimate == pytest.approx(93.94)
    assert rule.speedup_type == "global" and rule.message == "The grid is too small."


def test_no_header_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("==PROF== Connected\nhello,world\n1,2\n")
    with pytest.raises(KprofInputError, match="no header row"):
        load_ncu_csv(p)


def test_header_without_rows_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text(FIXED + ',"gpu__time_duration.sum"\n')
    with pytest.raises(KprofInputError, match="no kernel rows"):
        load_ncu_csv(p)


def test_bad_id_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text(
        FIXED
        + ',"gpu__time_duration.sum"\n"zero","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","5"\n'
    )
    with pytest.raises(KprofInputError, match="bad launch ID"):
        load_ncu_csv(p)


# ----------------------------------------------------------------------------- corpus and samples
def test_corpus_details_page_with_thousands_separators(corpus_dir: Path) -> None:
    p = corpus_dir / "ESMM-Research" / "metrics.csv"
    if not p.exists():
        pytest.skip(f"{p} missing")
    prof = load_ncu_csv(p)
    assert prof.format == "ncu-csv-details" and len(prof) == 9
    k = prof[0]
    assert k.name == "basic" and k.grid == (32, 32, 1)
    assert k.value("dram__bytes.sum") == 32_746_880
    assert k.value("gpu__time_duration.sum") == 10_776_576 and k.metric("gpu__time_duration.sum").unit == "ns"
    assert k.value("sm__sass_thread_inst_executed_op_ffma_pred_on.sum") == 1_073_741_824
    assert k.value("sm__sass_thread_inst_executed_op_fadd_pred_on.sum") == 0  # a real zero
    assert prof[7].name == "ampere_sgemm_128x64_nn" and prof[7].grid == (8, 16, 5)


def _sample(samples_dir: Path, name: str) -> Path:
    p = samples_dir / "ncu" / name
    if not p.exists():
        pytest.skip(f"{p} not in the sample gallery")
    return p


def test_raw_export_matches_the_report(samples_dir: Path) -> None:
    pytest.importorskip("ncu_report")
    rep = load(_sample(samples_dir, "uncoalesced_global_access.ncu-rep.gz"))[0]
    csv_k = load_ncu_csv(_sample(samples_dir, "uncoalesced_global_access.raw.csv"))[0]
    checked = 0
    for name in (
        "gpu__time_duration.sum",
        "dram__bytes.sum.per_second",
        "dram__bytes.sum.peak_sustained",
        "dram__cycles_elapsed.avg.per_second",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "launch__shared_mem_per_block_driver",
    ):
        a, b = rep.value(name), csv_k.value(name)
        assert a is not None and b is not None, name
        assert b == pytest.approx(a, rel=1e-3), name
        assert rep.metric(name).unit == csv_k.metric(name).unit, name
        checked += 1
    assert checked == 7
    assert csv_k.device == rep.device == "NVIDIA H200"


def test_details_export_keeps_ncu_rules(samples_dir: Path) -> None:
    k = load_ncu_csv(_sample(samples_dir, "shared_bank_conflicts.details.csv"))[0]
    assert k.name == "batched_matvec_smem"
    assert k.value("l1tex__throughput.avg.pct_of_peak_sustained_active") == pytest.approx(99.49, abs=0.01)
    r = k.rule("SharedMemoryConflicts")
    assert r is not None and r.speedup_estimate == pytest.approx(93.47, abs=0.01)
