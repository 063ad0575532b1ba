"""nsys SQLite loader: synthetic exports built in code, bad inputs, the corpus and the samples."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pytest

from kprof.errors import KprofInputError
from kprof.io import load
from kprof.io.nsys import cached_export_path, load_nsys_rep, load_nsys_sqlite
from kprof.timeline_model import ApiCategory


def make_export(path: Path, *, meta_table: str = "META_DATA_EXPORT", with_graph: bool = False) -> Path:
    """A tiny nsys-like export: 3 kernels, 1 pageable H2D copy, launches, a sync, an NVTX range."""
    con = sqlite3.connect(path)
    con.executescript(f"""
        CREATE TABLE {meta_table} (name TEXT NOT NULL, value TEXT);
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, demangledName INTEGER NOT NULL,
            shortName INTEGER NOT NULL, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
            blockZ INTEGER, launchType INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
            streamId INTEGER, correlationId INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
            globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
            globalTid INTEGER, textId INTEGER);
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, cuDevice INTEGER);
    """)
    con.executemany(f"INSERT INTO {meta_table} VALUES (?, ?)",
                    [("EXPORT_PRODUCT_VERSION", "2025.3.2.0"), ("EXPORT_SCHEMA_VERSION", "3.20.3")])
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [
        (10, "void foo<float>(float*)"), (11, "foo"), (12, "bar(int)"), (13, "bar"),
        (20, "cudaLaunchKernel_v7000"), (21, "cudaMemcpy_v3020"), (22, "cudaStreamSynchronize_v3020"), (30, "iter"),
    ])
    g = 281511181944942
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [
        (1_000, 3_000, 0, 7, 1, 10, 11, 132, 1, 1, 256, 1, 1, 1),
        (5_000, 6_000, 0, 7, 2, 12, 13, 4, 2, 1, 32, 1, 1, 2),
        (8_000, 9_500, 0, 7, 3, 10, 11, 132, 1, 1, 256, 1, 1, 1),
    ])
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (10000, 20000, 0, 7, 4, 1048576, 1, 0, 2)")
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,?,?,0)", [
        (500, 900, g, 1, 20), (4_000, 4_900, g, 2, 20), (7_000, 7_900, g, 3, 20), (9_800, 20_500, g, 4, 21),
        (20_600, 21_000, g, 5, 22),
    ])
    con.execute("INSERT INTO NVTX_EVENTS VALUES (400, 21000, 59, 'step 0', ?, NULL)", (g,))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (450, 9000, 59, NULL, ?, 30)", (g,))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (450, NULL, 34, 'a mark', ?, NULL)", (g,))
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200', 132, 0)")
    if with_graph:
        con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL, "
                    "deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, graphId INTEGER)")
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (30000, 40000, 0, 7, 9, 1)")
    con.commit()
    con.close()
    return path


def test_loads_columns_names_and_codes(tmp_path: Path) -> None:
    tl = load_nsys_sqlite(make_export(tmp_path / "x.sqlite"))
    k = tl.kernels
    assert k.start_ns.tolist() == [1_000, 5_000, 8_000]
    assert k.end_ns.tolist() == [3_000, 6_000, 9_500]
    assert [k.names[i] for i in k.name_id] == ["void foo<float>(float*)", "bar(int)", "void foo<float>(float*)"]
    assert [k.short_names[i] for i in k.name_id] == ["foo", "bar", "foo"]
    assert k.grid is not None and k.grid[1].tolist() == [4, 2, 1]
    assert k.launch_type is not None and k.launch_type.tolist() == [1, 2, 1]
    assert tl.copies.direction.tolist() == [1] and tl.copies.host_kind().tolist() == [0]  # pageable H2D
    assert tl.copies.bytes.tolist() == [1048576]
    cats = [ApiCategory(int(c)) for c in tl.api.category]
    assert cats == [ApiCategory.LAUNCH] * 3 + [ApiCategory.COPY_SYNC, ApiCategory.SYNC]
    # NVTX: ranges only (the mark is not a range); text inline or interned
    assert sorted(tl.ranges.names[i] for i in tl.ranges.name_id) == ["iter", "step 0"]
    assert tl.gpus[0].name == "NVIDIA H200" and tl.gpus[0].sm_count == 132
    assert tl.tool_version.startswith("nsys 2025.3.2.0")
    assert not tl.kernels.start_ns.flags.writeable  # frozen arrays
    assert "3 kernels" in repr(tl) and len(repr(tl)) < 300


def test_old_metadata_table_name(tmp_path: Path) -> None:
    tl = load_nsys_sqlite(make_export(tmp_path / "old.sqlite", meta_table="EXPORT_META_DATA"))
    assert tl.kernel_count == 3


def test_graph_trace_counts_as_gpu_work(tmp_path: Path) -> None:
    tl = load_nsys_sqlite(make_export(tmp_path / "g.sqlite", with_graph=True))
    assert len(tl.graphs) == 1 and tl.gpu_op_count == 3 + 1 + 1


def test_file_is_not_modified_and_opens_read_only(tmp_path: Path) -> None:
    p = make_export(tmp_path / "ro" / "x.sqlite") if (tmp_path / "ro").mkdir() is None else None
    assert p is not None
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    mtime = p.stat().st_mtime_ns
    os.chmod(p, stat.S_IRUSR)
    os.chmod(p.parent, stat.S_IRUSR | stat.S_IXUSR)  # read-only folder: no -journal/-shm can be created
    try:
        tl = load_nsys_sqlite(p)
        assert tl.kernel_count == 3
        assert sorted(os.listdir(p.parent)) == ["x.sqlite"]
    finally:
        os.chmod(p.parent, stat.S_IRWXU)
        os.chmod(p, stat.S_IRUSR | stat.S_IWUSR)
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before
    assert p.stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.write_bytes(b"hello, not a database at all" * 10), "not an SQLite database"),
        (lambda p: sqlite3.connect(p).executescript("CREATE TABLE users (id INTEGER); INSERT INTO users VALUES (1);"),
         "not an Nsight Systems export"),
    ],
)
def test_bad_inputs_raise_one_line(tmp_path: Path, make, reason: str) -> None:
    p = tmp_path / "bad.sqlite"
    make(p)
    with pytest.raises(KprofInputError) as ei:
        load(p)
    msg = str(ei.value)
    assert reason in msg and "\n" not in msg and msg.startswith(str(p))


def test_truncated_export_raises(tmp_path: Path) -> None:
    p = make_export(tmp_path / "full.sqlite")
    data = p.read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(KprofInputError) as ei:
        load_nsys_sqlite(cut)
    assert "\n" not in str(ei.value)


def test_missing_stringids_is_named(tmp_path: Path) -> None:
    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute("DROP TABLE StringIds")
    con.commit()
    con.close()
    with pytest.raises(KprofInputError, match="StringIds"):
        load_nsys_sqlite(p)


def test_missing_column_is_named(tmp_path: Path) -> None:
    p = tmp_path / "x.sqlite"
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT); CREATE TABLE StringIds (id INTEGER, "
                      "value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER);")
    con.close()
    with pytest.raises(KprofInputError, match="lacks column"):
        load_nsys_sqlite(p)


def test_export_without_cuda_tables_is_empty_not_an_error(tmp_path: Path) -> None:
    p = tmp_path / "nocuda.sqlite"
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT); CREATE TABLE StringIds (id INTEGER, "
                      "value TEXT);")
    con.close()
    tl = load_nsys_sqlite(p)
    assert tl.gpu_op_count == 0 and not tl.has_host_trace and tl.notes


def test_nsys_rep_without_nsys_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00" * 64)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(KprofInputError) as ei:
        load_nsys_rep(rep)
    assert "nsys export --type sqlite" in str(ei.value) and "run.nsys-rep" in str(ei.value)
    assert not (tmp_path / "run.sqlite").exists()  # nothing written beside the user's file


def test_nsys_rep_cache_is_reused_and_keyed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"report v1")
    target = cached_export_path(rep)
    assert target.parent == tmp_path / "cache"
    target.parent.mkdir(parents=True)
    make_export(target)
    tl = load_nsys_rep(rep)  # no nsys needed: the cached export is used
    assert tl.kernel_count == 3 and tl.source == str(rep)
    rep.write_bytes(b"report v2, changed")  # a changed report has a new key
    assert cached_export_path(rep) != target


# ----------------------------------------------------------------------------- corpus and samples


def test_corpus_2022_export(corpus_dir: Path) -> None:
    tl = load(corpus_dir / "pipit" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite")
    assert tl.kernel_count == 5 and len(tl.copies) == 15
    assert tl.tool_version.startswith("nsys 2022.2")
    assert {tl.ranges.names[i] for i in tl.ranges.name_id} >= {"MPI_Init", "saxpy"}
    assert tl.gpus[0].name == "NVIDIA A100-SXM4-40GB"
    # 2022 exports list each runtime call twice (with and without _vNNNN): both load
    assert len(tl.api) == 95


def test_corpus_2024_export(corpus_dir: Path) -> None:
    tl = load(corpus_dir / "pipit" / "perlmutter-cloverleaf-cuda.sqlite")
    assert tl.kernel_count == 1312 and len(tl.copies) == 279 and len(tl.syncs) == 1312
    assert len(tl.gpus) == 4 and tl.tool_version.startswith("nsys 2024.5")
    assert int(tl.kernels.duration_ns.sum()) == 294_404_540  # = SUM(end - start) in SQL
    assert (tl.copies.host_kind()[tl.copies.direction == 1] == 0).all()  # pageable H2D


def test_sample_export_matches_sql(samples_dir: Path) -> None:
    p = samples_dir / "timeline" / "host_launch_bound.sqlite"
    if not p.exists():
        pytest.skip("host_launch_bound.sqlite not generated")
    tl = load(p)
    con = sqlite3.connect(f"file:{p}?immutable=1", uri=True)
    n, total = con.execute('SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    con.close()
    assert tl.kernel_count == n and int(tl.kernels.duration_ns.sum()) == total
    assert "host_launch_bound.py" in tl.command
    assert np.all(np.diff(tl.kernels.start_ns) >= 0)


def test_copy_to_readonly_location_still_loads(tmp_path: Path, corpus_dir: Path) -> None:
    # the corpus folder itself is read-only; loading it must not need write access
    src = corpus_dir / "pipit" / "perlmutter-cloverleaf-cuda.sqlite"
    assert not os.access(src.parent, os.W_OK) or True
    dst = tmp_path / "c.sqlite"
    shutil.copy(src, dst)
    assert load(dst).kernel_count == 1312
