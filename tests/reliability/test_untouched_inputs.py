"""Input files are never modified: every input is hashed (content, size, modification time) before and
after kprof reads it, and the folders that hold them are listed before and after (no journal, no
``-shm``, no export written beside an input).

The whole reliability suite is also wrapped in such a check (conftest.py: every file under
data/samples and the corpus, at the end of the session).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

from tests.reliability.conftest import fingerprint, listing
from tests.reliability.inputs import (
    CORPUS,
    KINETO_GZ,
    NCU_DETAILS_CSV,
    NCU_RAW_CSV,
    NCU_REP,
    NSYS_REP,
    NSYS_SQLITE,
    plain_ncu_rep,
)
from tests.reliability.runner import KPROF_ERRORS, REPO, child_env, run_cases

FAKE_TOOLS = REPO / "tests" / "fake_tools"
CORPUS_PICKS = [
    "pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite",  # nsys 2022 schema
    "ESMM-Research/profile_2025-03-31.ncu-rep",  # ncu 2023.1
    "ESMM-Research/metrics.csv",
    "HolisticTraceAnalysis/critical_path__cuda_event_sync__event_sync_trace.json.gz",
    "kineto/resnet50_num_workers_0.worker0.pt.trace.json.gz",  # 2021 schema
]


def every_format(tmp: Path) -> list[Path]:
    """The samples of every format, and the ncu sample as a plain .ncu-rep in ``tmp`` (it is stored
    gzip-compressed: a plain report is the file ncu_report itself opens)."""
    (tmp / "plain").mkdir()
    plain = plain_ncu_rep(tmp / "plain" / "k.ncu-rep") if NCU_REP.is_file() else NCU_REP
    files = [NSYS_SQLITE, NSYS_REP, KINETO_GZ, NCU_REP, plain, NCU_RAW_CSV, NCU_DETAILS_CSV]
    files += [CORPUS / c for c in CORPUS_PICKS if (CORPUS / c).is_file()]
    return [f for f in files if f.is_file()]


def _read_all(files: list[Path], cache: Path) -> dict[str, dict]:
    env = child_env(
        KPROF_CACHE_DIR=str(cache),
        PATH=f"{FAKE_TOOLS}{os.pathsep}{os.environ.get('PATH', '')}",  # a stand-in nsys exports the .nsys-rep
    )
    jobs = [{"id": str(p), "action": "load", "args": [str(p)]} for p in files]
    return run_cases(jobs, env=env)


def _check(files: list[Path], res: dict[str, dict]) -> None:
    for p in files:
        r = res[str(p)]
        assert r["status"] == "done", r
        assert r["lib"] == "ok" or r["lib"] in KPROF_ERRORS, (p, r.get("lib_msg"))


def test_reading_every_format_changes_nothing(tmp_path: Path) -> None:
    files = every_format(tmp_path)
    folders = sorted({p.parent for p in files})
    before, names = fingerprint(files), listing(*folders)
    res = _read_all(files, tmp_path / "cache")
    _check(files, res)
    assert fingerprint(files) == before
    assert listing(*folders) == names, (
        f"files appeared beside the inputs: {sorted(listing(*folders) - names)}"
    )
    assert any(p.suffix == ".sqlite" for p in (tmp_path / "cache").iterdir()), (
        "the .nsys-rep export went elsewhere"
    )


def test_read_only_copies_load_and_stay_unchanged(tmp_path: Path) -> None:
    """Inputs in a read-only folder (a shared data set, a mounted archive) load, and stay as they were."""
    d = tmp_path / "ro"
    d.mkdir()
    files = []
    for src in every_format(tmp_path):
        dst = d / f"{len(files)}-{src.name}"
        shutil.copyfile(src, dst)
        dst.chmod(0o444)
        files.append(dst)
    d.chmod(0o555)
    try:
        before, names = fingerprint(files), listing(d)
        res = _read_all(files, tmp_path / "cache")
        _check(files, res)
        assert all(res[str(p)]["lib"] == "ok" for p in files), {
            str(p): res[str(p)].get("lib_msg") for p in files
        }
        assert fingerprint(files) == before
        assert listing(d) == names
    finally:
        d.chmod(0o755)


def test_wal_mode_export_gets_nothing_written_beside_it(tmp_path: Path) -> None:
    src = tmp_path / "src"
    d = tmp_path / "in"
    src.mkdir()
    d.mkdir()
    shutil.copyfile(NSYS_SQLITE, src / "x.sqlite")
    con = sqlite3.connect(src / "x.sqlite")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("CREATE TABLE extra (a)")
    con.execute("INSERT INTO extra VALUES (1)")
    con.commit()
    for name in ("x.sqlite", "x.sqlite-wal"):  # as copied from a machine where a writer still had it open
        shutil.copyfile(src / name, d / name)
    con.close()
    files = [d / "x.sqlite", d / "x.sqlite-wal"]
    before, names = fingerprint(files), listing(d)
    res = _read_all([d / "x.sqlite"], tmp_path / "cache")
    _check([d / "x.sqlite"], res)
    assert res[str(d / "x.sqlite")]["lib"] == "ok"
    assert fingerprint(files) == before
    assert listing(d) == names, f"written beside the input: {sorted(listing(d) - names)}"


def test_input_modes_are_kept(tmp_path: Path) -> None:
    """Reading does not chmod or touch: permission bits and times stay."""
    p = tmp_path / "t.sqlite"
    shutil.copyfile(NSYS_SQLITE, p)
    p.chmod(0o440)
    st0 = p.stat()
    res = _read_all([p], tmp_path / "cache")
    _check([p], res)
    st1 = p.stat()
    assert stat.S_IMODE(st1.st_mode) == 0o440
    assert (st1.st_mtime_ns, st1.st_size) == (st0.st_mtime_ns, st0.st_size)
