"""What ``kprof diagnose`` prints: every diagnosis names its file, units read alike, the order is the one
the help states."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from kprof.model import _fmt

from .conftest import SAMPLES

NCU = SAMPLES / "ncu"
TIMELINE = SAMPLES / "timeline"
PAIR = [
    str(NCU / "pair_smem_column_sum_before.ncu-rep.gz"),
    str(NCU / "pair_smem_column_sum_after.ncu-rep.gz"),
]

needs_samples = pytest.mark.skipif(
    not (NCU / "pair_smem_column_sum_before.ncu-rep.gz").exists(), reason="no samples"
)


def kprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kprof", *args], capture_output=True, text=True, timeout=300)


def blocks(text: str) -> list[str]:
    return [b for b in text.strip().split("\n\n") if b.strip()]


@needs_samples
def test_two_reports_of_one_kernel_are_told_apart_by_their_file():
    r = kprof("diagnose", *PAIR)
    assert r.returncode == 0, r.stderr
    bs = blocks(r.stdout)
    assert len(bs) == 2
    files = [re.search(r"^  file: (.*)$", b, re.M) for b in bs]
    assert all(files) and {m.group(1) for m in files if m} == set(PAIR)  # as given, one each
    assert bs[0].splitlines()[1].startswith("  file: ")  # right under the verdict line


@needs_samples
def test_every_diagnosis_in_text_names_its_file():
    paths = [str(TIMELINE / "sync_bound.sqlite"), str(NCU / "small_grid.ncu-rep.gz"), *PAIR]
    text = kprof("diagnose", *paths)
    js = kprof("diagnose", "--json", *paths)
    ds = json.loads(js.stdout)["diagnoses"]
    bs = blocks(text.stdout)
    assert len(bs) == len(ds)
    for b, d in zip(bs, ds, strict=True):
        assert f"  file: {d['file']}" in b and d["file"] in paths


@needs_samples
def test_order_across_files_is_the_one_the_help_states():
    help_text = kprof("diagnose", "--help").stdout
    assert "timeline captures and jobs first" in " ".join(help_text.split())
    healthy_first = [str(NCU / "tensor_core_bound.ncu-rep.gz"), str(TIMELINE / "gpu_bound.sqlite"), *PAIR]
    ds = json.loads(kprof("diagnose", "--json", *healthy_first).stdout)["diagnoses"]
    kinds = [d["subject"]["kind"] for d in ds]
    assert kinds[0] == "capture" and set(kinds[1:]) == {
        "kernel"
    }  # the timeline leads, whatever the order given
    rank = {"fix": 0, "inconclusive": 1, "healthy": 2}
    verdicts = [rank[d["verdict"]] for d in ds[1:]]
    assert verdicts == sorted(verdicts) and verdicts[0] == 0 and verdicts[-1] == 2  # fixes before healthy


@needs_samples
def test_no_raw_nanoseconds_bytes_or_exponents_in_the_text():
    paths = sorted(str(p) for p in TIMELINE.glob("*.sqlite")) + sorted(
        str(p) for p in NCU.glob("*.ncu-rep.gz")
    )
    out = kprof("diagnose", *paths).stdout
    assert not re.search(r"\d,\d{3},\d{3} ns\b", out)  # 49,962,769 ns is 50 ms
    assert not re.search(r"\d,\d{3},\d{3} B\b", out)  # 335,544,320 B is 336 MB
    assert not re.search(r"\d\.\d+e[-+]\d", out)  # no 4.00e-03 waves
    assert "50 ms" in out and "336 MB" in out


@pytest.mark.parametrize(
    "value, unit, text",
    [
        (49_962_769, "ns", "50 ms"),
        (454_464, "ns", "454 µs"),
        (999.7, "ns", "1 µs"),  # rounds up into the next unit, never "1,000 ns"
        (0.928, "us", "928 ns"),
        (1381.0, "µs", "1.38 ms"),
        (2.5, "s", "2.5 s"),
        (335_544_320, "B", "336 MB"),
        (512, "B", "512 B"),
        (0.0632, "fraction", "6.32%"),
        (0.0038, "waves", "0.0038 waves"),
        (0.004, "waves", "0.004 waves"),
        (77.6, "% of peak", "77.6% of peak"),
        (80.0, "%", "80%"),
        (65_871_420, "", "65,871,420"),
        (32.4, "wavefronts/request", "32.4 wavefronts/request"),
        (None, "ns", "missing"),
    ],
)
def test_one_formatter_for_units(value, unit, text):
    assert _fmt(value, unit) == text


def test_fraction_expectations_print_as_percentages_like_their_evidence():
    from kprof.model import Direction, Expectation

    x = Expectation(metric="gpu_busy_fraction", direction=Direction.UP, value_now=0.0632, target=0.98)
    assert x.describe() == "gpu_busy_fraction up from 6.32% to about 98%"
