"""Running a job diagnosis: the per-rank reduction in a local process pool or on a Dask cluster, the CLI."""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys

import pytest

import kprof
import kprof.jobs as jobs
from kprof.cli import main
from kprof.diagnose.job import RankSummary
from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.model import Bottleneck, SubjectKind

from .conftest import SAMPLES

MULTI = SAMPLES / "multirank"
STRAGGLER_NSYS = [str(MULTI / f"ddp_straggler_rank{r}.sqlite") for r in (0, 1)]
STRAGGLER_KINETO = str(MULTI / "ddp_straggler_rank*.json.gz")
BALANCED_NSYS = [str(MULTI / f"ddp_rank{r}.sqlite") for r in (0, 1)]

pytestmark = pytest.mark.skipif(not (MULTI / "ddp_rank0.sqlite").exists(), reason="no multirank samples")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kprof", *args], capture_output=True, text=True, timeout=300)


# ------------------------------------------------------------------------------------------ local pool


@pytest.mark.parametrize("workers", [1, 2])
def test_local_pool_diagnoses_the_straggler(workers: int) -> None:
    ds = kprof.diagnose_job(STRAGGLER_NSYS, workers=workers)
    d = ds[0]
    assert d.subject.kind is SubjectKind.JOB and d.subject.ranks == 2 and d.subject.name == "ddp_straggler"
    assert d.bottleneck is Bottleneck.STRAGGLER and "rank 1" in d.headline
    # then each rank's own diagnoses, in rank order, with their files
    per_rank = [(x.subject.name.split(":")[0], x.file) for x in ds[1:]]
    assert per_rank[0] == ("rank 0", STRAGGLER_NSYS[0]) and ("rank 1", STRAGGLER_NSYS[1]) in per_rank
    assert [r for r, _ in per_rank] == sorted(r for r, _ in per_rank)


def test_glob_and_kineto() -> None:
    ds = jobs.diagnose_job(STRAGGLER_KINETO)
    assert ds[0].bottleneck is Bottleneck.STRAGGLER and ds[0].subject.ranks == 2


def test_balanced_job_is_not_a_straggler() -> None:
    d = jobs.diagnose_job(BALANCED_NSYS)[0]
    assert d.bottleneck is Bottleneck.GPU_BOUND and d.subject.name == "ddp"


def test_only_small_summaries_come_back() -> None:
    summaries = jobs.summarize_ranks(STRAGGLER_NSYS, workers=2)
    assert [s.rank for s in summaries] == [0, 1] and all(isinstance(s, RankSummary) for s in summaries)
    assert all(s.rank_source == "environment RANK" and s.world_size == 2 for s in summaries)
    for s in summaries:
        size = len(pickle.dumps(s))
        assert size < 64_000, size  # a few kB per rank, whatever the trace's size


def test_ranks_without_metadata_are_numbered_in_order(tmp_path) -> None:
    # timeline samples carry no rank: given explicitly, they are ranks 0 and 1 in the order given
    a = shutil.copy(SAMPLES / "timeline" / "gpu_bound.json.gz", tmp_path / "b_first.json.gz")
    b = shutil.copy(SAMPLES / "timeline" / "gpu_bound.json.gz", tmp_path / "a_second.json.gz")
    summaries = jobs.summarize_ranks([a, b])
    assert [(s.rank, s.rank_source, s.path) for s in summaries] == [
        (0, "order", str(a)),
        (1, "order", str(b)),
    ]
    d = jobs.diagnose_job([a, b])[0]
    assert d.subject.ranks == 2 and d.bottleneck not in (Bottleneck.STRAGGLER, Bottleneck.LOAD_IMBALANCE)


def test_bad_inputs_raise_one_line_errors(tmp_path) -> None:
    with pytest.raises(KprofInputError, match="no such file"):
        jobs.diagnose_job([STRAGGLER_NSYS[0], str(tmp_path / "missing.sqlite")])
    with pytest.raises(KprofInputError, match="claims rank 0"):
        jobs.diagnose_job([STRAGGLER_NSYS[0], str(MULTI / "ddp_rank0.json.gz")])
    with pytest.raises(KprofInputError, match="no file matches"):
        jobs.diagnose_job(str(tmp_path / "nothing*.sqlite"))
    ncu = next((SAMPLES / "ncu").glob("*.ncu-rep.gz"), None)
    if ncu is not None:
        with pytest.raises(KprofInputError, match="not a timeline"):
            jobs.diagnose_job([STRAGGLER_NSYS[0], str(ncu)])
    with pytest.raises(ValueError, match="engine"):
        jobs.diagnose_job(STRAGGLER_NSYS, engine="spark")


def test_progress_on_stderr_for_long_runs(monkeypatch, capsys) -> None:
    monkeypatch.setattr(jobs, "PROGRESS_AFTER_S", 0.0)
    jobs.summarize_ranks(STRAGGLER_NSYS, workers=1)
    err = capsys.readouterr().err
    assert "kprof: summarized 2/2 ranks" in err
    jobs.summarize_ranks(STRAGGLER_NSYS, workers=1, progress=False)
    assert capsys.readouterr().err == ""


def test_find_jobs_groups_ranks_by_job_and_format() -> None:
    files = sorted(str(p) for p in MULTI.iterdir() if p.suffix in (".sqlite", ".gz"))
    single = str(SAMPLES / "timeline" / "gpu_bound.sqlite")
    groups, rest = jobs.find_jobs([*files, single])
    assert rest == [single]
    assert sorted(jobs.job_name(g) + ":" + g[0].rsplit(".", 1)[-1] for g in groups) == [
        "ddp:gz", "ddp:sqlite", "ddp_straggler:gz", "ddp_straggler:sqlite",
    ]  # fmt: skip
    assert all(len(g) == 2 and "rank0" in g[0] and "rank1" in g[1] for g in groups)
    # the same rank twice is not a job
    assert jobs.find_jobs([files[0], files[0]])[0] == []


def test_job_name() -> None:
    assert jobs.job_name(STRAGGLER_NSYS) == "ddp_straggler"
    assert jobs.job_name(["/x/run/0.json.gz", "/x/run/1.json.gz"]) == "run"


# ------------------------------------------------------------------------------------------ dask


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as c:  # fmt: skip
        yield c


def test_dask_scheduler_address(cluster) -> None:
    ds = jobs.diagnose_job(STRAGGLER_NSYS, engine="dask", scheduler=cluster.scheduler_address)
    local = jobs.diagnose_job(STRAGGLER_NSYS)
    assert [d.to_dict() for d in ds] == [d.to_dict() for d in local]


def test_dask_client_in_session_and_errors(cluster, tmp_path) -> None:
    from distributed import Client

    with Client(cluster) as client:
        ds = jobs.diagnose_job(STRAGGLER_KINETO, engine="dask")
        assert ds[0].bottleneck is Bottleneck.STRAGGLER
        with pytest.raises(KprofInputError, match="no such file"):
            jobs.diagnose_job(
                [STRAGGLER_NSYS[0], str(tmp_path / "gone.sqlite")], engine="dask", scheduler=client
            )


def test_dask_without_cluster_says_what_to_give() -> None:
    pytest.importorskip("distributed")
    from distributed import default_client

    try:
        default_client()
        pytest.skip("a Dask client is active in this session")
    except ValueError:
        pass
    with pytest.raises(KprofError, match="scheduler address"):
        jobs.diagnose_job(STRAGGLER_NSYS, engine="dask")


def test_dask_missing_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingToolError, match=r'pip install "dask\[distributed\]"'):
        jobs.diagnose_job(STRAGGLER_NSYS, engine="dask", scheduler="tcp://127.0.0.1:1")


# ------------------------------------------------------------------------------------------ CLI


def test_cli_routes_ranks_of_one_job_to_the_job_view() -> None:
    r = run_cli("diagnose", "--json", *STRAGGLER_NSYS)
    assert r.returncode == 0, r.stderr
    ds = json.loads(r.stdout)["diagnoses"]
    first = ds[0]
    assert first["subject"]["kind"] == "job" and first["subject"]["ranks"] == 2
    assert first["subject"]["name"] == "ddp_straggler" and first["bottleneck"] == "straggler"
    assert {d["file"] for d in ds[1:]} == set(STRAGGLER_NSYS)


def test_cli_ranks_glob_text_and_workers() -> None:
    r = run_cli("diagnose", "--ranks", STRAGGLER_KINETO, "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[fix] straggler: ddp_straggler (2 ranks)")


def test_cli_mixes_jobs_and_single_files_in_input_order() -> None:
    single = str(SAMPLES / "timeline" / "gpu_bound.sqlite")
    r = run_cli("diagnose", "--json", single, *BALANCED_NSYS)
    assert r.returncode == 0, r.stderr
    ds = json.loads(r.stdout)["diagnoses"]
    kinds = [d["subject"]["kind"] for d in ds]
    assert kinds[0] != "job" and ds[0]["file"] == single
    assert "job" in kinds and kinds.index("job") > 0


def test_cli_non_job_inputs_unchanged(capsys) -> None:
    paths = [str(SAMPLES / "timeline" / f) for f in ("gpu_bound.sqlite", "sync_bound.sqlite")]
    assert main(["diagnose", "--json", *paths]) == 0
    ds = json.loads(capsys.readouterr().out)["diagnoses"]
    direct = [d.to_dict() for p in paths for d in kprof.diagnose(p)]
    assert ds == direct


def test_cli_errors(tmp_path) -> None:
    r = run_cli("diagnose", "--ranks", str(tmp_path / "none*.sqlite"))
    assert r.returncode == 2 and "no file matches" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run_cli("diagnose", "--workers", "0", *STRAGGLER_NSYS)
    assert r.returncode == 2 and "at least 1" in r.stderr
    r = run_cli("diagnose", "--engine", "dask", *STRAGGLER_NSYS)
    assert r.returncode == 2 and "scheduler address" in r.stderr


def test_cli_dask_scheduler(cluster, capsys) -> None:
    assert main(["diagnose", "--json", "--scheduler", cluster.scheduler_address, *STRAGGLER_NSYS]) == 0
    ds = json.loads(capsys.readouterr().out)["diagnoses"]
    assert ds[0]["bottleneck"] == "straggler"


@pytest.fixture(scope="module")
def process_cluster():
    """Workers in their own processes, started in this directory: a later chdir of the test
    process leaves them where they were (as workers elsewhere would be)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:  # fmt: skip
        yield c


def test_dask_relative_paths_resolve_before_shipping(process_cluster, monkeypatch) -> None:
    monkeypatch.chdir(MULTI)  # the client's directory; the worker still runs in the original one
    rel = [f"ddp_straggler_rank{r}.sqlite" for r in (0, 1)]
    ds = jobs.diagnose_job(rel, engine="dask", scheduler=process_cluster.scheduler_address, progress=False)
    assert ds[0].bottleneck is Bottleneck.STRAGGLER
    assert {d.file for d in ds[1:]} == set(rel)  # reported under the paths as given


def test_dask_file_missing_on_workers_says_they_need_shared_storage(tmp_path) -> None:
    here = tmp_path / "rank0.sqlite"
    here.write_bytes(b"x")
    f = jobs._on_workers(jobs._Failure(str(here), "no such file"), str(here))
    assert "storage they share" in f.message and f.path == str(here)
    gone = str(tmp_path / "gone.sqlite")  # missing here too: the plain reason stays
    assert jobs._on_workers(jobs._Failure(gone, "no such file"), gone).message == "no such file"
