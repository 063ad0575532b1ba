"""The command-line contract: JSON shape, exit codes, one-line errors."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

import kprof.api
from kprof.cli import main

from .test_model import make


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kprof", *args], capture_output=True, text=True, timeout=120)


def test_json_contract(monkeypatch, capsys, tmp_path):
    f = tmp_path / "x.ncu-rep"
    f.write_bytes(b"whatever")
    monkeypatch.setattr(kprof.api, "diagnose", lambda p: [make(file=str(p)), make(file=str(p))])
    assert main(["diagnose", "--json", str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["diagnoses"]
    assert len(out["diagnoses"]) == 2
    d = out["diagnoses"][0]
    assert set(d) == {
        "file", "subject", "bottleneck", "verdict", "headline", "evidence", "mechanism",
        "fix", "expect", "confidence", "next_step", "findings", "where", "where_note",
    }  # fmt: skip
    assert d["file"] == str(f)
    assert d["subject"]["name"] == "void k<float, 4>(int*)"
    assert d["confidence"]["value"] == 0.8


def test_text_output_has_headline(monkeypatch, capsys, tmp_path):
    f = tmp_path / "x.ncu-rep"
    f.write_bytes(b"whatever")
    monkeypatch.setattr(kprof.api, "diagnose", lambda p: [make()])
    assert main(["diagnose", str(f)]) == 0
    out = capsys.readouterr().out
    assert "Global loads use 32 sectors per request" in out
    assert out.startswith("[fix] uncoalesced_global_access: void k<float, 4>(int*)")


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "setup, reason",
    [
        (lambda d: d / "missing.sqlite", "no such file"),
        (lambda d: d, "is a folder that holds no profile kprof reads"),
        (lambda d: _write(d / "empty.sqlite", b""), "file is empty"),
        (lambda d: _write(d / "notes.txt", b"hello"), "unrecognised file type"),
        (lambda d: _write(d / "fake.sqlite", b"not a db" * 10), "not an SQLite database"),
        (lambda d: _write(d / "fake.json.gz", b"{}"), "not gzip-compressed"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, setup, reason):
    path = setup(tmp_path)
    r = run_cli("diagnose", str(path))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert str(path) in lines[0] and reason in lines[0]
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_a_folder_is_diagnosed_as_the_profiles_in_it_as_report_reads_them(tmp_path, capsys):
    """Issue 28: `kprof diagnose FOLDER` refused a folder that `kprof report` accepts."""
    import shutil

    from .conftest import SAMPLES

    tl = SAMPLES / "timeline"
    if not (tl / "sync_bound.sqlite").is_file():
        pytest.skip("no sample gallery")
    (tmp_path / "deep").mkdir()
    for name in ("sync_bound.sqlite", "sync_bound.json.gz"):  # one capture: its .sqlite is read
        shutil.copy(tl / name, tmp_path / name)
    shutil.copy(SAMPLES / "ncu" / "uncoalesced_global_access.raw.csv", tmp_path / "deep" / "k.raw.csv")
    (tmp_path / "notes.txt").write_text("not a profile")
    assert main(["diagnose", "--json", str(tmp_path)]) == 0
    files = [d["file"] for d in json.loads(capsys.readouterr().out)["diagnoses"]]
    assert set(files) == {str(tmp_path / "sync_bound.sqlite"), str(tmp_path / "deep" / "k.raw.csv")}
    assert (
        main(
            ["diagnose", "--json", str(tmp_path / "sync_bound.sqlite"), str(tmp_path / "deep" / "k.raw.csv")]
        )
        == 0
    )
    assert [d["file"] for d in json.loads(capsys.readouterr().out)["diagnoses"]] == files
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        main(["diagnose", str(empty), str(tmp_path / "deep")]) == 2
    )  # the empty folder: one line, the rest runs
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "holds no profile" in err and "k.raw.csv" in out


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(tmp_path):
    f = tmp_path / "locked.sqlite"
    f.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    f.chmod(0)
    r = run_cli("diagnose", str(f))
    assert r.returncode == 2 and "permission denied" in r.stderr


def test_path_with_spaces_and_quotes(tmp_path):
    d = tmp_path / "a b 'c' \"d\""
    d.mkdir()
    f = d / "x y.sqlite"
    f.write_text("garbage")
    r = run_cli("diagnose", "--json", str(f))
    assert r.returncode == 2
    assert str(f) in r.stderr


def test_usage_errors_exit_2():
    r = run_cli("diagnose")
    assert r.returncode == 2 and "error" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("nonsense")
    assert r.returncode == 2


def test_gzip_with_garbage_inside_is_rejected_cleanly(tmp_path):
    f = tmp_path / "trace"
    f.write_bytes(gzip.compress(b"\x00\x01binary"))
    r = run_cli("diagnose", str(f))
    assert r.returncode == 2 and "unrecognised file type" in r.stderr


def test_subcommands_registered():
    r = run_cli("--help")
    for name in ("diagnose", "compare", "report", "profile"):
        assert name in r.stdout


CONTRACT_KEYS = {
    "file", "subject", "bottleneck", "verdict", "headline", "evidence", "mechanism",
    "fix", "expect", "confidence", "next_step", "findings", "where", "where_note",
}  # fmt: skip


def _sample_files() -> list[str]:
    from .conftest import SAMPLES, manifest_entries

    files = [e["file"] for e in manifest_entries("") if e["kind"] != "nsys-rep"]
    m = SAMPLES / "manifest.json"
    if m.exists():
        for job in json.loads(m.read_text()).get("jobs", []):
            files += [f["file"] for f in job["files"]]
    return files


@pytest.mark.parametrize("rel", _sample_files() or ["<no samples>"])
def test_diagnose_json_on_every_sample(rel, samples_dir, capsys):
    """Issue 2's bar: valid JSON with every contract field, on every shipped sample."""
    if rel.endswith((".ncu-rep", ".ncu-rep.gz")):
        pytest.importorskip("ncu_report")
    path = samples_dir / rel
    assert main(["diagnose", "--json", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["diagnoses"], rel
    for d in out["diagnoses"]:
        assert set(d) == CONTRACT_KEYS
        assert d["file"] == str(path)
        assert d["headline"].strip()
        assert d["verdict"] in ("fix", "healthy", "inconclusive")
        if d["bottleneck"] is None:
            assert d["verdict"] == "inconclusive"
        assert 0.0 <= d["confidence"]["value"] <= 1.0
        for e in d["evidence"]:
            assert {"name", "value", "unit", "reference"} <= set(e)
        if d["verdict"] != "healthy":
            assert d["next_step"].strip() or d["fix"].strip()


@pytest.mark.slow
def test_sigterm_during_report_leaves_nothing_behind(tmp_path):
    """SIGTERM unwinds like Ctrl-C: exit 143, one line, no report, no temporary files."""
    import signal
    import time

    pytest.importorskip("papermill")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "out" / "report.html"
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    p = subprocess.Popen(
        [sys.executable, "-m", "kprof", "report", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    time.sleep(6)  # the notebooks are running by now
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert err.strip().splitlines()[-1] == "kprof: error: terminated"
    assert "Traceback" not in err
    assert not out.exists()
    if out.parent.exists():
        assert not list(out.parent.glob(".*.tmp"))
    assert list(tmpdir.iterdir()) == []
