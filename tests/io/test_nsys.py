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
    con.executemany(
        f"INSERT INTO {meta_table} VALUES (?, ?)",
        [("EXPORT_PRODUCT_VERSION", "2025.3.2.0"), ("EXPORT_SCHEMA_VERSION", "3.20.3")],
    )
    con.executemany(
        "INSERT INTO StringIds VALUES (?, ?)",
        [
            (10, "void foo<float>(float*)"),
            (11, "foo"),
            (12, "bar(int)"),
            (13, "bar"),
            (20, "cudaLaunchKernel_v7000"),
            (21, "cudaMemcpy_v3020"),
            (22, "cudaStreamSynchronize_v3020"),
            (30, "iter"),
        ],
    )
    g = 281511181944942
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (1_000, 3_000, 0, 7, 1, 10, 11, 132, 1, 1, 256, 1, 1, 1),
            (5_000, 6_000, 0, 7, 2, 12, 13, 4, 2, 1, 32, 1, 1, 2),
            (8_000, 9_500, 0, 7, 3, 10, 11, 132, 1, 1, 256, 1, 1, 1),
        ],
    )
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (10000, 20000, 0, 7, 4, 1048576, 1, 0, 2)")
    con.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,?,?,0)",
        [
            (500, 900, g, 1, 20),
            (4_000, 4_900, g, 2, 20),
            (7_000, 7_900, g, 3, 20),
            (9_800, 20_500, g, 4, 21),
            (20_600, 21_000, g, 5, 22),
        ],
    )
    con.execute("INSERT INTO NVTX_EVENTS VALUES (400, 21000, 59, 'step 0', ?, NULL)", (g,))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (450, 9000, 59, NULL, ?, 30)", (g,))
    con.execute("INSERT INTO NVTX_EVENTS VALUES (450, NULL, 34, 'a mark', ?, NULL)", (g,))
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200', 132, 0)")
    if with_graph:
        con.execute(
            "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL, "
            "deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, graphId INTEGER)"
        )
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (30000, 40000, 0, 7, 9, 1)")
    con.commit()
    con.close()
    return path


def test_loads_columns_names_and_codes(tmp_path: Path) -> None:
    tl = load_nsys_sqlite(make_export(tmp_path / "x.sqlite"))
    k = tl.kernels
    assert k.start_ns.tolist() == [1_000, 5_000, 8_000]
    assert k.end_ns.tolist() == [3_000, 6_000, 9_500]
    assert [k.names[i] for i in k.name_id] == [
        "void foo<float>(float*)",
        "bar(int)",
        "void foo<float>(float*)",
    ]
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
        (
            lambda p: sqlite3.connect(p).executescript(
                "CREATE TABLE users (id INTEGER); INSERT INTO users VALUES (1);"
            ),
            "not an Nsight Systems export",
        ),
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
    con.executescript(
        "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT); CREATE TABLE StringIds (id INTEGER, "
        "value TEXT); CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER);"
    )
    con.close()
    with pytest.raises(KprofInputError, match="lacks column"):
        load_nsys_sqlite(p)


def test_export_without_cuda_tables_is_empty_not_an_error(tmp_path: Path) -> None:
    p = tmp_path / "nocuda.sqlite"
    con = sqlite3.connect(p)
    con.executescript(
        "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT); CREATE TABLE StringIds (id INTEGER, "
        "value TEXT);"
    )
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


# ----------------------------------------------------------------------------- values that cannot be real


@pytest.mark.parametrize(
    ("sql", "column", "row"),
    [
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 2",
            "start",
            "(rowid 2: 'soon')",
        ),
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 0.5 WHERE rowid = 3",
            "deviceId",
            "(rowid 3: '0.5')",
        ),
        (
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = x'00ff' WHERE rowid = 1",
            "end",
            "(rowid 1: a 2-byte blob)",
        ),
    ],
)
def test_a_non_integer_in_an_integer_column_is_refused_naming_the_column(
    tmp_path: Path, sql: str, column: str, row: str
) -> None:
    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute(sql)
    con.commit()
    con.close()
    with pytest.raises(KprofInputError) as ei:
        load_nsys_sqlite(p)
    msg = str(ei.value)
    table = sql.split()[1]
    assert msg.startswith(
        f"{p}: table {table}: column {column} holds a value that is not an integer {row}"
    ), msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("start", "end"),
    [(2**63 - 1, 2**63 - 1), (-(2**63), -5), (-1, 2_000), (6_000, 5_000), (5_000, 2**62)],
)
def test_a_kernel_with_an_impossible_time_is_set_aside_with_a_note(
    tmp_path: Path, start: int, end: int
) -> None:
    clean = load_nsys_sqlite(make_export(tmp_path / "clean.sqlite"))
    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?, "end" = ? WHERE rowid = 2', (start, end))
    con.commit()
    con.close()
    tl = load_nsys_sqlite(p)
    k = tl.kernels
    assert k.start_ns.tolist() == [1_000, 8_000] and k.end_ns.tolist() == [3_000, 9_500]
    # every column lost the same row
    assert k.correlation.tolist() == [1, 3] and k.grid is not None and k.grid.tolist() == [[132, 1, 1]] * 2
    assert [k.names[i] for i in k.name_id] == ["void foo<float>(float*)"] * 2
    assert tl.span_ns() == clean.span_ns()
    (note,) = tl.notes
    assert note.startswith("table CUPTI_ACTIVITY_KIND_KERNEL: 1 of 3 rows set aside with an impossible time")
    assert f"rowid 2: start {start}, end {end}" in note
    assert tl.counts == {"CUPTI_ACTIVITY_KIND_KERNEL rows with an impossible time": 1}
    assert not clean.notes and not clean.counts


def test_the_first_dropped_nvtx_range_is_named_by_its_own_rowid(tmp_path: Path) -> None:
    """NVTX_EVENTS is read through a filter (marks are not ranges): the note's rowid is the table's own."""
    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute(
        "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, 'step 1', 281511181944942, NULL)", (2**62, 2**62 + 5)
    )
    con.commit()
    con.close()
    tl = load_nsys_sqlite(p)
    assert len(tl.ranges) == 2 and tl.span_ns() == (400, 21_000)
    (note,) = tl.notes
    assert note.startswith("table NVTX_EVENTS: 1 of 3 rows set aside") and f"rowid 4: start {2**62}" in note


def test_a_measured_table_with_no_possible_row_is_refused(tmp_path: Path) -> None:
    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -start")
    con.commit()
    con.close()
    with pytest.raises(KprofInputError) as ei:
        load_nsys_sqlite(p)
    msg = str(ei.value)
    assert "table CUPTI_ACTIVITY_KIND_KERNEL: every one of its 3 rows has an impossible time" in msg
    assert "rowid 1: start -1000, end 3000" in msg and "\n" not in msg


def test_annotations_with_no_possible_row_are_dropped_not_refused(tmp_path: Path) -> None:
    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute("UPDATE NVTX_EVENTS SET start = -1")
    con.commit()
    con.close()
    tl = load_nsys_sqlite(p)
    assert len(tl.ranges) == 0 and tl.kernel_count == 3
    assert tl.counts == {"NVTX_EVENTS rows with an impossible time": 2}


def _sql_count(p: Path, table: str, where: str = "") -> int:
    con = sqlite3.connect(f"file:{p}?immutable=1", uri=True)
    try:
        return int(con.execute(f'SELECT count(*) FROM "{table}" {where}').fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # 2024+ exports omit empty tables
    finally:
        con.close()


def _real_exports() -> list[Path]:
    from tests.conftest import CORPUS, SAMPLES

    return sorted((CORPUS / "pipit").glob("*.sqlite")) + sorted(SAMPLES.glob("*/*.sqlite"))


@pytest.mark.parametrize("path", _real_exports(), ids=lambda p: p.name)
def test_real_exports_lose_no_row(path: Path) -> None:
    """The samples and the corpus have no impossible row: every table loads with all its rows."""
    from kprof.io.nsys import NVTX_WHERE

    tl = load_nsys_sqlite(path)
    assert not tl.counts and not any("impossible" in n for n in tl.notes)
    for table, got in [
        ("CUPTI_ACTIVITY_KIND_KERNEL", tl.kernels),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", tl.copies),
        ("CUPTI_ACTIVITY_KIND_MEMSET", tl.memsets),
        ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", tl.graphs),
        ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", tl.syncs),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", tl.api),
    ]:
        assert len(got) == _sql_count(path, table), table
    assert len(tl.ranges) == _sql_count(path, "NVTX_EVENTS", f"WHERE {NVTX_WHERE}")


# ----------------------------------------------------------------------------- WAL-mode databases


def _wal_export(tmp_path: Path, then: str = "") -> Path:
    """An export switched to WAL mode with one more kernel still in its -wal, copied (db and -wal) to a new folder,
    as from a machine where a writer still had it open."""
    src = tmp_path / "src"
    src.mkdir()
    p = make_export(src / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (12000, 13000, 0, 7, 6, 12, 13, 1, 1, 1, 32, 1, 1, 1)"
    )
    if then:
        con.execute(then)
    con.commit()
    d = tmp_path / "in"
    d.mkdir()
    for name in ("x.sqlite", "x.sqlite-wal"):
        shutil.copyfile(src / name, d / name)
    con.close()
    assert (d / "x.sqlite-wal").stat().st_size > 0
    return d / "x.sqlite"


def test_a_wal_export_is_read_from_a_private_copy_and_nothing_is_written_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    p = _wal_export(tmp_path)
    made: list[Path] = []
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(*args, **kw):  # type: ignore[no-untyped-def]
        made.append(Path(real_mkdtemp(*args, **kw)))
        return str(made[-1])

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    before = {n: hashlib.sha256((p.parent / n).read_bytes()).hexdigest() for n in os.listdir(p.parent)}
    os.chmod(p.parent, stat.S_IRUSR | stat.S_IXUSR)  # a read-only folder: an -shm could not be created there
    try:
        tl = load_nsys_sqlite(p)
    finally:
        os.chmod(p.parent, stat.S_IRWXU)
    assert tl.kernel_count == 4 and int(tl.kernels.start_ns[-1]) == 12_000  # the row in the -wal is seen
    after = {n: hashlib.sha256((p.parent / n).read_bytes()).hexdigest() for n in os.listdir(p.parent)}
    assert after == before  # no -shm, no checkpoint into the user's files
    assert len(made) == 1 and not made[0].exists()  # the private copy is gone after loading
    assert tl.source == str(p)


def test_a_wal_copy_is_removed_when_loading_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    p = _wal_export(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 4")
    made: list[Path] = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(
        tempfile, "mkdtemp", lambda *a, **k: made.append(Path(real_mkdtemp(*a, **k))) or str(made[-1])
    )
    with pytest.raises(
        KprofInputError, match=r"^.*x\.sqlite: table CUPTI_ACTIVITY_KIND_KERNEL: column start"
    ):
        load_nsys_sqlite(p)
    assert len(made) == 1 and not made[0].exists()


def test_an_empty_wal_beside_a_wal_export_needs_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    p = make_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(p)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()  # the last connection checkpoints and deletes the -wal
    Path(str(p) + "-wal").write_bytes(b"")
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: pytest.fail("copied"))
    assert load_nsys_sqlite(p).kernel_count == 3
    assert sorted(os.listdir(tmp_path)) == ["x.sqlite", "x.sqlite-wal"]


# ----------------------------------------------------------------------------- display


def test_a_loaded_timeline_displays_as_text_and_html(tmp_path: Path) -> None:
    from kprof.html import reset_ids, timeline_mimebundle

    tl = load_nsys_sqlite(make_export(tmp_path / "x.sqlite"))
    reset_ids()
    b = tl._repr_mimebundle_()
    assert set(b) == {"text/plain", "text/html"}
    assert "3 kernels" in b["text/plain"] and b["text/plain"].startswith("Timeline (nsys): ")
    assert '<div class="kp-timeline kp-rich"' in b["text/html"] and "x.sqlite" in b["text/html"]
    reset_ids()
    assert b == timeline_mimebundle(tl)
    assert tl._repr_mimebundle_(include={"text/html"}, exclude=set()).keys() == b.keys()


def test_stale_temporary_exports_are_removed_fresh_ones_kept(tmp_path) -> None:
    """A killed `nsys export` leaves X.<random>.tmp.sqlite in the cache; the next conversion removes
    those older than STALE_TMP_S and leaves a concurrent run's fresh one alone."""
    import os as _os
    import time as _time

    from kprof.io import nsys as nsys_io

    stale = tmp_path / "a.abc.tmp.sqlite"
    fresh = tmp_path / "b.def.tmp.sqlite"
    export = tmp_path / "c.sqlite"
    for f in (stale, fresh, export):
        f.write_bytes(b"x")
    old = _time.time() - nsys_io.STALE_TMP_S - 60
    _os.utime(stale, (old, old))
    _os.utime(export, (old, old))
    with nsys_io._tmp_name(tmp_path / "d.sqlite") as tmp:
        assert not tmp.exists()
    assert not stale.exists()
    assert fresh.exists() and export.exists()  # only stale temporaries go, never a finished export
