"""The tool version of an ncu report is the Nsight Compute that captured it, not the reading module's."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from kprof.io.ncu import capture_version

from ..conftest import CORPUS, SAMPLES


def test_samples_name_the_ncu_that_captured_them(plain_ncu: Callable[[str], Path]):
    # the samples are stored gzip-compressed; capture_version reads a plain report (kprof.load decompresses first)
    names = sorted(p.name.removesuffix(".ncu-rep.gz") for p in (SAMPLES / "ncu").glob("*.ncu-rep.gz"))
    if not names:
        pytest.skip("no ncu samples")
    # data/samples/versions.txt: the `ncu --version` of the H200 session that captured them
    m = re.search(r"Version (\d+\.\d+\.\d+\.\d+ \(build \d+\))", (SAMPLES / "versions.txt").read_text())
    assert m
    for name in names:
        assert capture_version(plain_ncu(name)) == f"Nsight Compute {m.group(1)}", name


def test_loaded_profile_carries_the_capture_version(plain_ncu: Callable[[str], Path]):
    pytest.importorskip("ncu_report")
    import ncu_report

    import kprof

    p = kprof.load(SAMPLES / "ncu" / "small_grid.ncu-rep.gz")
    plain = plain_ncu("small_grid")
    assert p.tool_version == capture_version(plain) and p.tool_version
    module = str(ncu_report.load_report(str(plain)).get_version())
    assert module not in (p.tool_version or "")  # the reader's own version (2026.x) is not the capture's


def test_third_party_reports_of_older_ncu():
    reports = sorted(CORPUS.rglob("*.ncu-rep"))[:5] if CORPUS.is_dir() else []
    if not reports:
        pytest.skip("no ../shared/corpus")
    for r in reports:
        v = capture_version(r)
        assert v is None or re.fullmatch(r"Nsight Compute 20\d\d\.\d+\.\d+(\.\d+)?( \(build \d+\))?", v), v


def test_no_version_key_or_a_cut_value(tmp_path):
    f = tmp_path / "x.ncu-rep"
    f.write_bytes(b"NVR\x00" + b"\x00" * 64)
    assert capture_version(f) is None
    f.write_bytes(b"NVR\x00\x0a\x15Nsight Compute Target\x12\x2c2025.3")  # length says 44, file ends
    assert capture_version(f) == "Nsight Compute 2025.3"
    assert capture_version(tmp_path / "gone.ncu-rep") is None
