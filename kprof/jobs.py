"""Many ranks of one job: reduce each rank's capture where it is read, gather only the summaries.

:func:`diagnose_job` is the entry point. Each rank's file is loaded and reduced to a
:class:`~kprof.diagnose.job.RankSummary` (a few kB: per-step compute, NCCL and exposed
communication time, the rank's own diagnoses) by :func:`summarize_rank`, in a worker; the
gathering process receives only the summaries, never a trace, and judges the job with
:func:`kprof.diagnose.job.diagnose_summaries`.

Engines:

- ``"local"`` (default): a :class:`concurrent.futures.ProcessPoolExecutor` on this machine.
- ``"dask"``: the same function mapped over an existing Dask cluster
  (``dask.distributed.Client(scheduler)``), e.g. one whose workers sit next to the files.
  Without ``scheduler`` it uses the Dask client already made in this session (e.g. around a
  ``LocalCluster``). Needs ``pip install "dask[distributed]"``.

Progress goes to stderr for long runs (a line every few seconds once a run takes longer than
:data:`PROGRESS_AFTER_S`).
"""

from __future__ import annotations

import dataclasses
import glob
import multiprocessing
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kprof.diagnose.job import RankSummary, diagnose_summaries
from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.io.ranks import RankInfo, natural_key, read_rank_info
from kprof.model import Diagnosis

PathLike = str | os.PathLike[str]

ENGINES = ("local", "dask")
PROGRESS_AFTER_S = 5.0
"""Runs shorter than this print no progress."""
TIMELINE_FORMATS = ("nsys-rep", "nsys-sqlite", "kineto")

__all__ = [
    "ENGINES",
    "RankSummary",
    "diagnose_job",
    "expand_paths",
    "find_jobs",
    "job_name",
    "sample_job_paths",
    "summarize_rank",
    "summarize_ranks",
]


# ============================================================================ inputs


_GLOB_CHARS = re.compile(r"[*?\[]")


def expand_paths(paths: PathLike | Iterable[PathLike]) -> list[str]:
    """Paths as given; a glob pattern (``"traces/rank*.json.gz"``) expands to its matches in natural order.

    Raises
    ------
    KprofInputError
        A pattern that matches no file.

    Examples
    --------
    >>> expand_paths(["a.sqlite", "b.sqlite"])
    ['a.sqlite', 'b.sqlite']
    """
    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    out: list[str] = []
    for p in items:
        s = os.fspath(p)
        if _GLOB_CHARS.search(s) and not os.path.exists(s):
            hits = sorted((h for h in glob.glob(s, recursive=True) if os.path.isfile(h)), key=natural_key)
            if not hits:
                raise KprofInputError(s, "no file matches this pattern")
            out.extend(hits)
        else:
            out.append(s)
    return out


def _stem(path: str) -> str:
    name = Path(path).name
    for suffix in (
        ".nsys-rep",
        ".qdrep",
        ".sqlite",
        ".pt.trace.json.gz",
        ".pt.trace.json",
        ".json.gz",
        ".json",
    ):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def job_name(paths: Sequence[str]) -> str:
    """A name for the job from its files: what their names share once rank numbers are taken out.

    Examples
    --------
    >>> job_name(["x/ddp_straggler_rank0.sqlite", "x/ddp_straggler_rank1.sqlite"])
    'ddp_straggler'
    >>> job_name(["run7/0.json.gz", "run7/1.json.gz"])
    'run7'
    """
    stems = [_stem(p) for p in paths]
    prefix = stems[0] if stems else ""
    for st in stems[1:]:
        n = next(
            (i for i, (a, b) in enumerate(zip(prefix, st, strict=False)) if a != b), min(len(prefix), len(st))
        )
        prefix = prefix[:n]
    name = re.sub(r"(?i)[\W_]*(rank|r)?[\W_]*\d*$", "", prefix).strip("_-. ")
    if not name:
        parents = {Path(p).resolve().parent.name for p in paths}
        name = parents.pop() if len(parents) == 1 else ""
    return name or "job"


def _group_key(path: str, fmt: str, info: RankInfo) -> tuple[str, ...]:
    family = "nsys" if fmt.startswith("nsys") else fmt
    norm = re.sub(r"\d+", "#", _stem(path))
    return (str(Path(path).resolve().parent), family, norm, str(info.world_size), info.job_id or "")


def find_jobs(paths: Sequence[PathLike]) -> tuple[list[list[str]], list[str]]:
    """Split inputs into jobs (>= 2 timeline captures that are distinct ranks of one job) and the rest.

    Files belong to one job when their metadata gives each a rank (Kineto ``distributedInfo``,
    the launcher's ``RANK`` in an nsys capture) with the same world size of at least 2 and the
    same job identity where recorded, and their names differ only in numbers, in one folder
    and one format. A rank given twice makes the group not a job.

    Examples
    --------
    >>> find_jobs(["data/samples/timeline/gpu_bound.sqlite"])  # doctest: +SKIP
    ([], ['data/samples/timeline/gpu_bound.sqlite'])
    """
    from kprof.io import detect_format

    groups: dict[tuple[str, ...], list[tuple[str, RankInfo]]] = {}
    rest: list[str] = []
    for p in (os.fspath(x) for x in paths):
        try:
            fmt = detect_format(p)
        except KprofError:
            rest.append(p)
            continue
        info = read_rank_info(p) if fmt in TIMELINE_FORMATS else RankInfo()
        if info.rank is None or not info.world_size or info.world_size < 2:
            rest.append(p)
            continue
        groups.setdefault(_group_key(p, fmt, info), []).append((p, info))
    jobs: list[list[str]] = []
    for members in groups.values():
        ranks = [i.rank for _, i in members]
        if len(members) >= 2 and len(set(ranks)) == len(ranks):
            jobs.append([p for p, _ in sorted(members, key=lambda m: m[1].rank or 0)])
        else:
            rest.extend(p for p, _ in members)
    order = {os.fspath(p): i for i, p in enumerate(paths)}
    jobs.sort(key=lambda j: min(order.get(p, 0) for p in j))
    rest.sort(key=lambda p: order.get(p, 0))
    return jobs, rest


def sample_job_paths(job: str = "ddp_straggler", kind: str = "nsys-sqlite") -> list[str]:
    """The rank files of a sample job listed under ``"jobs"`` in ``data/samples/manifest.json``.

    Parameters
    ----------
    job
        The job's name in the manifest (``"ddp"``, ``"ddp_straggler"``).
    kind
        ``"nsys-sqlite"`` or ``"kineto"``.

    Raises
    ------
    KprofError
        No sample gallery beside the package or in the current directory, or no such job.

    Examples
    --------
    >>> sample_job_paths("ddp_straggler")  # doctest: +SKIP
    ['.../data/samples/multirank/ddp_straggler_rank0.sqlite', '.../data/samples/multirank/ddp_straggler_rank1.sqlite']
    """
    import json

    for d in (Path(__file__).resolve().parents[1] / "data" / "samples", Path.cwd() / "data" / "samples"):
        m = d / "manifest.json"
        if not m.is_file():
            continue
        data = json.loads(m.read_text(encoding="utf-8"))
        for entry in data.get("jobs", []) if isinstance(data, dict) else []:
            if entry.get("job") == job:
                files = [f for f in entry.get("files", []) if f.get("kind") == kind]
                files.sort(key=lambda f: int(f.get("rank", 0)))
                return [str(d / f["file"]) for f in files]
        raise KprofError(f"no sample job {job!r} of kind {kind!r} in {m}")
    raise KprofError("no sample gallery found (data/samples/manifest.json beside the package or here)")


# ============================================================================ the reduction


def summarize_rank(path: PathLike, order: int | None = None) -> RankSummary:
    """Load one rank's capture and reduce it to a :class:`RankSummary` (runs in a worker).

    Parameters
    ----------
    path
        The rank's timeline capture (nsys ``.sqlite``/``.nsys-rep``, PyTorch profiler ``.json[.gz]``).
    order
        The rank to use when the file's metadata holds none (its position among the job's files).

    Raises
    ------
    KprofInputError
        Not a readable timeline capture, or no rank in its metadata and no ``order``.

    Examples
    --------
    >>> summarize_rank("data/samples/multirank/ddp_rank1.sqlite").rank  # doctest: +SKIP
    1
    """
    from kprof.api import diagnose
    from kprof.diagnose.job import summarize_timeline
    from kprof.io import load
    from kprof.timeline_model import Timeline

    p = os.fspath(path)
    info = read_rank_info(p)
    if info.rank is not None:
        rank, source = info.rank, info.source
    elif order is not None:
        rank, source = int(order), "order"
    else:
        raise KprofInputError(p, "its metadata names no rank; give the job's files in rank order (--ranks)")
    tl = load(p)
    if not isinstance(tl, Timeline):
        raise KprofInputError(
            p, "is a kernel report, not a timeline capture: a job needs one timeline per rank"
        )
    diags = diagnose(tl) if tl.gpu_op_count else []
    diags = [dataclasses.replace(d, file=p) for d in diags]
    return summarize_timeline(
        tl, rank=rank, world_size=info.world_size, rank_source=source, job_id=info.job_id, diagnoses=diags
    )


@dataclass(frozen=True, slots=True)
class _Failure:
    """A worker's KprofError, carried back as data (the exception class does not survive pickling)."""

    path: str
    message: str
    missing_tool: bool = False


def _summarize_safe(path: str, order: int | None) -> RankSummary | _Failure:
    try:
        return summarize_rank(path, order)
    except KprofInputError as exc:
        return _Failure(exc.path, exc.reason)
    except MissingToolError as exc:
        return _Failure(path, str(exc), missing_tool=True)
    except KprofError as exc:
        return _Failure(path, str(exc))


def _on_workers(f: _Failure, given: str) -> _Failure:
    """A Dask worker's failure, named by the path as given; a file that this machine sees but a
    worker does not gets a message that says so."""
    if not f.missing_tool and f.message.startswith("no such file") and os.path.isfile(given):
        return _Failure(
            given,
            f"no such file on the Dask workers (it exists here, at {os.path.abspath(given)}): the workers read "
            "each rank's file themselves, so put the files on storage they share, at the same path",
        )
    return dataclasses.replace(f, path=given)


def _as_given(s: RankSummary, given: str) -> RankSummary:
    """``s`` with its path (and its diagnoses' file) as the caller gave it."""
    if s.path == given:
        return s
    return dataclasses.replace(
        s, path=given, diagnoses=tuple(dataclasses.replace(d, file=given) for d in s.diagnoses)
    )


def _raise(f: _Failure) -> None:
    if f.missing_tool:
        raise MissingToolError(f.message)
    raise KprofInputError(f.path, f.message)


class _Progress:
    def __init__(self, total: int, enabled: bool, what: str = "ranks") -> None:
        self.total, self.enabled, self.what = total, enabled, what
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.done = 0
        self.printed = False

    def step(self) -> None:
        self.done += 1
        now = time.perf_counter()
        if not self.enabled or now - self.t0 < PROGRESS_AFTER_S:
            return
        if now - self.last >= PROGRESS_AFTER_S or self.done == self.total:
            self.last = now
            self.printed = True
            print(
                f"kprof: summarized {self.done}/{self.total} {self.what} in {now - self.t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )


def _mp_context() -> Any:
    # fork: the workers inherit the imported modules and never re-run the caller's __main__
    # (spawn and forkserver import it again, which re-runs an unguarded script or `python -m kprof`).
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _run_local(
    paths: Sequence[str], orders: Sequence[int], workers: int | None, progress: _Progress
) -> list[RankSummary | _Failure]:
    n = max(1, min(workers or os.cpu_count() or 1, len(paths)))
    results: list[RankSummary | _Failure | None] = [None] * len(paths)
    with ProcessPoolExecutor(max_workers=n, mp_context=_mp_context()) as ex:
        futures: dict[Future[RankSummary | _Failure], int] = {
            ex.submit(_summarize_safe, p, o): i for i, (p, o) in enumerate(zip(paths, orders, strict=True))
        }
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    r = f.result()
                    if isinstance(r, _Failure):
                        _raise(r)
                    results[futures[f]] = r
                    progress.step()
        except BaseException:
            ex.shutdown(wait=True, cancel_futures=True)
            raise
    return [r for r in results if r is not None]


def _run_dask(
    paths: Sequence[str], orders: Sequence[int], scheduler: Any, progress: _Progress
) -> list[RankSummary | _Failure]:
    try:
        from distributed import Client, as_completed, get_client
    except ImportError as exc:
        raise MissingToolError(
            'engine="dask" needs dask.distributed, which is not installed: pip install "dask[distributed]" '
            '(or use the default engine="local")'
        ) from exc
    own: list[Any] = []
    try:
        if isinstance(scheduler, Client):
            client = scheduler
        elif scheduler:
            try:
                client = Client(scheduler, timeout="30s")
            except OSError as exc:
                raise KprofError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
            own.append(client)
        else:
            try:
                client = get_client()
            except ValueError:
                raise KprofError(
                    'engine="dask" runs on an existing Dask cluster: give its scheduler address (--scheduler '
                    "tcp://host:8786) or make a dask.distributed Client in this session first; for a run on this "
                    'machine use engine="local"'
                ) from None
        # The workers may run in another directory (or on another machine): ship absolute paths,
        # and hand results back under the paths as given.
        shipped = [os.path.abspath(p) for p in paths]
        given = dict(zip(shipped, paths, strict=True))
        futures = client.map(_summarize_safe, shipped, list(orders), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[RankSummary | _Failure | None] = [None] * len(paths)
        for fut in as_completed(futures):
            r = fut.result()
            if isinstance(r, _Failure):
                client.cancel(futures)
                _raise(_on_workers(r, given.get(r.path, r.path)))
            results[index[fut.key]] = _as_given(r, given.get(r.path, r.path))
            progress.step()
        return [r for r in results if r is not None]
    finally:
        for obj in own:
            obj.close()


def summarize_ranks(
    paths: PathLike | Iterable[PathLike],
    *,
    engine: str = "local",
    workers: int | None = None,
    scheduler: Any = None,
    progress: bool = True,
) -> list[RankSummary]:
    """Summarize every rank's capture in parallel; returns the summaries sorted by rank.

    Ranks come from each file's metadata; when some file has none, all files are numbered
    in the order given (a glob expands in natural order: ``rank2`` before ``rank10``).

    Parameters
    ----------
    paths
        The ranks' captures, or a glob pattern.
    engine
        ``"local"`` (a process pool here) or ``"dask"`` (a Dask cluster).
    workers
        Worker processes for ``"local"`` (default: the CPU count); the cluster sets it for ``"dask"``.
    scheduler
        For ``"dask"``: the scheduler's address (``"tcp://host:8786"``) or a ``distributed.Client``.
    progress
        Print progress to stderr when the run takes more than a few seconds.

    Raises
    ------
    KprofInputError
        A file is not a readable timeline, or two files claim the same rank.
    MissingToolError
        ``engine="dask"`` without dask.distributed installed.
    KprofError
        ``engine="dask"`` with no scheduler address and no Dask client in the session, or a
        scheduler that cannot be reached.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    files = expand_paths(paths)
    if not files:
        raise KprofError("no rank files given")
    orders = list(range(len(files)))
    prog = _Progress(len(files), progress)
    if engine == "local":
        results = _run_local(files, orders, workers, prog)
    else:
        results = _run_dask(files, orders, scheduler, prog)
    summaries = [r for r in results if isinstance(r, RankSummary)]
    from_meta = [s for s in summaries if s.rank_source != "order"]
    if len(from_meta) == len(summaries):
        seen: dict[int, str] = {}
        for s in summaries:
            if s.rank in seen:
                raise KprofInputError(
                    s.path,
                    f"claims rank {s.rank} ({s.rank_source}) like {seen[s.rank]}: give one capture per rank of one job",
                )
            seen[s.rank] = s.path
    elif from_meta:
        # some files name their rank, some do not: number them all in the order given
        pos = {p: i for i, p in enumerate(files)}
        summaries = [dataclasses.replace(s, rank=pos[s.path], rank_source="order") for s in summaries]
    return sorted(summaries, key=lambda s: s.rank)


def diagnose_job(
    paths: PathLike | Iterable[PathLike],
    *,
    engine: str = "local",
    workers: int | None = None,
    scheduler: Any = None,
    job: str | None = None,
    progress: bool = True,
) -> list[Diagnosis]:
    """Diagnose a multi-rank job from one timeline capture per rank: the job's verdict first, then each rank's.

    Parameters
    ----------
    paths
        One capture per rank (nsys ``.sqlite``/``.nsys-rep``, PyTorch profiler ``.json[.gz]``),
        or a glob pattern matching them.
    engine, workers, scheduler, progress
        Where the per-rank reduction runs; see :func:`summarize_ranks`.
    job
        The job's name (default: what the file names share).

    Returns
    -------
    list of Diagnosis
        First the job's: ``subject.kind == "job"``, ``subject.ranks`` the number of ranks,
        bottleneck ``straggler``, ``communication_bound``, ``load_imbalance`` or the one all
        ranks share. Then each rank's own diagnoses, in rank order.

    Examples
    --------
    >>> import kprof
    >>> d = kprof.diagnose_job("data/samples/multirank/ddp_straggler_rank*.sqlite")[0]  # doctest: +SKIP
    >>> d.bottleneck.value, d.subject.ranks  # doctest: +SKIP
    ('straggler', 2)
    """
    files = expand_paths(paths)
    summaries = summarize_ranks(files, engine=engine, workers=workers, scheduler=scheduler, progress=progress)
    return diagnose_summaries(summaries, job=job or job_name(files))
