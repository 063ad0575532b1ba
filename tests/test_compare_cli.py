"""`kprof compare BEFORE AFTER [--json]`: exit codes, JSON shape, one-line errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, SAMPLES

NCU = SAMPLES / "ncu"
TL = SAMPLES / "timeline"

COMPARISON_KEYS = ["subject", "verdict", "speedup", "before", "after", "expectations"]
DIAGNOSIS_KEYS = {
    "file", "subject", "bottleneck", "verdict", "headline", "evidence", "mechanism",
    "fix", "expect", "confidence", "next_step", "findings", "where", "where_note",
}  # fmt: skip
EXPECTATION_KEYS = ["metric", "direction", "target", "before", "after", "met"]


def run_cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kprof", "compare", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_kernel_pair_text(samples_dir):
    r = run_cli(NCU / "pair_transpose_before.ncu-rep.gz", NCU / "pair_transpose_after.ncu-rep.gz")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(
        "[improved] 6.75x faster (interval 6.62-6.89x, ±2%): transpose [grid 256x256x1, block 32x8x1]"
    )
    assert "measured under ncu" in r.stdout
    assert "noise: ±2%" in r.stdout
    assert "expectations of the before diagnosis (2 of 2 met)" in r.stdout
    assert r.stderr == ""


def test_kernel_pair_json_shape(samples_dir):
    r = run_cli(
        NCU / "pair_smem_column_sum_before.ncu-rep.gz",
        NCU / "pair_smem_column_sum_after.ncu-rep.gz",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert list(out) == ["comparisons"]
    (c,) = out["comparisons"]
    assert list(c)[: len(COMPARISON_KEYS)] == COMPARISON_KEYS
    assert c["verdict"] == "improved"
    assert c["speedup"] == pytest.approx(1.688, abs=0.001)
    assert c["subject"]["name"] == "smem_column_sum" and c["subject"]["kind"] == "kernel"
    assert set(c["before"]) == DIAGNOSIS_KEYS and set(c["after"]) == DIAGNOSIS_KEYS
    assert c["before"]["bottleneck"] == "shared_bank_conflicts"
    assert c["noise_threshold"] == 0.02 and "ncu_noise.csv" in c["noise"]
    assert "measured under ncu" in c["duration_source"]
    assert len(c["expectations"]) == 2
    for x in c["expectations"]:
        assert list(x)[: len(EXPECTATION_KEYS)] == EXPECTATION_KEYS
        assert x["met"] is True
        assert x["direction"] == "down"


def test_timeline_pair_json(samples_dir):
    r = run_cli(TL / "pair_graph_before.sqlite", TL / "pair_graph_after.sqlite", "--json")
    assert r.returncode == 0, r.stderr
    (c,) = json.loads(r.stdout)["comparisons"]
    assert c["verdict"] == "improved" and c["speedup"] > 10
    assert c["duration_source"].startswith("timeline steps")
    assert {x["metric"]: x["met"] for x in c["expectations"]} == {
        "gpu_busy_fraction": True,
        "launch_count": True,
        "wall_ns": True,
    }


def two_kernel_csv(tmp_path: Path) -> Path:
    """blind9's copy_strided_v1 raw CSV with a second launch under another name: two kernels in one report."""
    src = REPO / "data" / "validation" / "blind9" / "k1_copy_strided_v1.raw.csv.gz"
    if not src.exists():
        pytest.skip("blind9 gallery not in this checkout")
    lines = gzip.decompress(src.read_bytes()).decode().splitlines()
    head, units, row = lines[0], lines[1], lines[2]
    second = row.replace('"0",', '"1",', 1).replace('"copy_strided_v1"', '"copy_strided_tail"', 1)
    out = tmp_path / "two_kernels.raw.csv"
    out.write_text("\n".join([head, units, row, second]) + "\n")
    return out


def test_mismatched_pair_exits_2_with_one_line_naming_both_files(samples_dir, tmp_path):
    b, a = two_kernel_csv(tmp_path), NCU / "pair_smem_column_sum_after.ncu-rep.gz"
    r = run_cli(b, a, "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("kprof: error: ")
    assert str(b) in lines[0] and str(a) in lines[0] and "no kernel in common" in lines[0]
    assert "copy_strided_tail, copy_strided_v1" in lines[0]


def test_one_kernel_renamed_is_compared(samples_dir):
    """blind9's K1: the copy rewritten under a new name, one launch in each report (plain 8.85x)."""
    d = REPO / "data" / "validation" / "blind9"
    if not d.exists():
        pytest.skip("blind9 gallery not in this checkout")
    r = run_cli(d / "k1_copy_strided_v1.raw.csv.gz", d / "k1_copy_coalesced_v2.raw.csv.gz")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(
        "[improved] 9.23x faster (interval 9.05-9.42x, ±2%): copy_strided_v1 -> copy_coalesced_v2"
    )
    assert "the kernel names differ (copy_strided_v1 before, copy_coalesced_v2 after)" in r.stdout
    assert "same launch configuration" in r.stdout


def test_kernel_against_timeline_exits_2(samples_dir):
    r = run_cli(NCU / "pair_transpose_before.ncu-rep.gz", TL / "pair_graph_after.sqlite")
    assert r.returncode == 2
    assert "compare two timelines or two kernel reports" in r.stderr


def test_missing_file_exits_2(tmp_path, samples_dir):
    r = run_cli(tmp_path / "nope.ncu-rep", NCU / "pair_transpose_after.ncu-rep.gz")
    assert r.returncode == 2
    assert r.stderr.strip() == f"kprof: error: {tmp_path / 'nope.ncu-rep'}: no such file"


def test_usage_error_exits_2():
    r = run_cli(NCU / "pair_transpose_before.ncu-rep.gz")
    assert r.returncode == 2
    assert "AFTER" in r.stderr


def test_in_process_cli_matches_subprocess(capsys, samples_dir):
    from kprof.cli import main

    assert (
        main(
            [
                "compare",
                str(NCU / "pair_transpose_before.ncu-rep.gz"),
                str(NCU / "pair_transpose_after.ncu-rep.gz"),
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("[improved] 6.75x faster")
