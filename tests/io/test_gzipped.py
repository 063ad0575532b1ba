"""gzip-compressed profiles (.ncu-rep.gz, .sqlite.gz, .csv.gz) load like the plain files."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

import kprof
from kprof.errors import KprofInputError
from kprof.io import detect_format, load

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def _gz(src: Path, dst: Path) -> Path:
    dst.write_bytes(gzip.compress(src.read_bytes()))
    return dst


@pytest.mark.parametrize(
    ("sample", "fmt"),
    [
        ("timeline/sync_bound.sqlite", "nsys-sqlite"),
        ("ncu/uncoalesced_global_access.raw.csv", "ncu-csv"),
    ],
)
def test_gzipped_file_diagnoses_like_the_plain_one(tmp_path: Path, sample: str, fmt: str) -> None:
    # both copied out of the gallery: the program a suggested command runs is found from where the file
    # is (kprof.io.program), so a plain file and its .gz must sit alike to diagnose alike
    (tmp_path / "plain").mkdir()
    plain = tmp_path / "plain" / Path(sample).name
    plain.write_bytes((SAMPLES / sample).read_bytes())
    gz = _gz(plain, tmp_path / (plain.name + ".gz"))
    assert detect_format(gz) == fmt
    a = [d.to_dict() for d in kprof.diagnose(plain)]
    b = [d.to_dict() for d in kprof.diagnose(gz)]
    assert [x.pop("file") for x in b] == [str(gz)] * len(b)
    for x in a:
        x.pop("file")
    # Only the file's own path or name may differ (the subject of a capture is its file name), and its
    # folder, where the suggested commands write the next capture.
    assert json.dumps(a).replace(str(plain), "P").replace(plain.name, "N").replace(
        str(plain.parent), "D"
    ) == json.dumps(b).replace(str(gz), "P").replace(gz.name, "N").replace(str(gz.parent), "D")
    assert load(gz).source == str(gz)


def test_gzipped_ncu_report_loads_with_its_own_name(plain_ncu: Callable[[str], Path], tmp_path: Path) -> None:
    pytest.importorskip("ncu_report")
    plain = plain_ncu("small_grid")  # decompressed from the shipped small_grid.ncu-rep.gz
    gz = tmp_path / "small_grid.ncu-rep.gz"  # out of the gallery too: no manifest for either
    gz.write_bytes((SAMPLES / "ncu" / "small_grid.ncu-rep.gz").read_bytes())
    prof = load(gz)
    assert prof.source == str(gz)
    a = [d.to_dict() for d in kprof.diagnose(plain)]
    b = [d.to_dict() for d in kprof.diagnose(gz)]
    assert a and [x["file"] for x in b] == [str(gz)] * len(b)
    # the whole diagnosis is the same but for the file's own path, name and folder
    assert json.dumps(a).replace(str(plain), "P").replace(plain.name, "N").replace(
        str(plain.parent), "D"
    ) == json.dumps(b).replace(str(gz), "P").replace(gz.name, "N").replace(str(gz.parent), "D")


def test_no_temporary_copy_is_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    gz = _gz(SAMPLES / "timeline" / "gpu_bound.sqlite", tmp_path / "g.sqlite.gz")
    before = gz.read_bytes()
    load(gz)
    assert list(scratch.iterdir()) == []
    assert gz.read_bytes() == before  # never written


def test_a_copy_left_by_a_killed_process_is_removed_by_the_next_sweep(tmp_path: Path) -> None:
    """A process killed while it holds a decompressed copy (a notebook worker of an interrupted `kprof
    report`: every shipped kernel report is a .ncu-rep.gz) leaves its folder behind; the folder is kprof's
    own while that process lives, and stale, so removed, once it is gone."""
    import subprocess
    import sys
    import time

    from kprof.lifetime import TEMP_PATTERNS, remove_stale

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    gz = _gz(SAMPLES / "timeline" / "gpu_bound.sqlite", tmp_path / "g.sqlite.gz")
    holder = (
        "import sys, tempfile; tempfile.tempdir = sys.argv[1]\n"
        "from kprof.io.files import decompressed\n"
        "with decompressed(sys.argv[2]):\n"
        "    print('holding', flush=True); sys.stdin.read()\n"
    )
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(SAMPLES.parents[1]), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder, str(scratch), str(gz)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        (left,) = scratch.iterdir()
        assert left.name.startswith("kprof-gunzip-")
        assert remove_stale(scratch, TEMP_PATTERNS, time.time() + 1) == []  # its owner lives: untouched
    finally:
        proc.kill()
        proc.wait()
    assert left.exists()  # SIGKILL: nothing ran in the process to remove it
    assert remove_stale(scratch, TEMP_PATTERNS, time.time() + 1) == [left] and not left.exists()


def test_truncated_gzip_names_the_file(tmp_path: Path) -> None:
    data = gzip.compress((SAMPLES / "timeline" / "gpu_bound.sqlite").read_bytes())
    bad = tmp_path / "cut.sqlite.gz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(KprofInputError) as exc:
        load(bad)
    assert str(exc.value).startswith(str(bad))
    assert "gzip" in str(exc.value)


def test_gz_name_without_gzip_content(tmp_path: Path) -> None:
    bad = tmp_path / "x.ncu-rep.gz"
    bad.write_bytes(b"NVR\x00 not gzip at all")
    with pytest.raises(KprofInputError, match="not gzip-compressed"):
        detect_format(bad)


def test_gzipped_garbage_is_an_input_error_for_the_gz_path(tmp_path: Path) -> None:
    bad = tmp_path / "x.sqlite.gz"
    bad.write_bytes(gzip.compress(b"this is not sqlite" * 10))
    with pytest.raises(KprofInputError) as exc:
        load(bad)
    assert os.fspath(bad) in str(exc.value)
