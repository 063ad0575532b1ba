"""Which rank of a distributed job a timeline capture belongs to, read cheaply from the file's metadata.

Nothing here loads the timeline: the job view (:mod:`kprof.jobs`) reads this for every
input before it decides whether the inputs are ranks of one job, so it must stay cheap
for thousands of files.

Where the rank comes from, per format:

- **PyTorch profiler** (``.json``/``.json.gz``): Kineto writes ``distributedInfo``
  (``{"backend", "rank", "world_size", ...}``) at the top of the trace, before
  ``traceEvents``. The first :data:`HEAD_BYTES` of the (decompressed) text are searched,
  and for an uncompressed file its last :data:`TAIL_BYTES` too.
- **Nsight Systems** (``.sqlite`` export, or the cached export of an ``.nsys-rep``): the
  profiled process's environment, which nsys records in ``META_DATA_CAPTURE``
  (``PROCESS_0:ENVIRONMENT_VARIABLE`` rows, ``RANK="1"``), else the environment of the
  ``nsys`` command itself (``TARGET_INFO_SYSTEM_ENV`` ``DeviceEnvironment``). The launcher
  variables of torchrun (``RANK``/``WORLD_SIZE``), Open MPI, PMI/PMIx and Slurm are read, in
  that order.

A file without any of these gets ``rank=None``; the caller then numbers the files in the
order given (``kprof diagnose --ranks GLOB``).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sqlite3
import urllib.parse
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kprof.errors import KprofError

HEAD_BYTES = 4 << 20
"""How much of a Kineto trace's text is searched for ``distributedInfo`` (it is written first)."""
HEAD_CHUNK = 64 << 10
"""...read this much at a time, stopping as soon as it is found (it sits in the first kilobytes)."""
TAIL_BYTES = 1 << 20
"""...and how much of the end of an uncompressed trace (where other writers put metadata)."""

RANK_VARIABLES = (
    "RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
    "MV2_COMM_WORLD_RANK",
)
"""Launcher environment variables holding the global rank, in order of preference."""
WORLD_VARIABLES = (
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "MV2_COMM_WORLD_SIZE",
)
"""...and the number of ranks."""
JOB_VARIABLES = ("TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID")
"""Variables naming the job itself; without them ``MASTER_ADDR:MASTER_PORT`` identifies a torch job."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RankInfo:
    """A capture's place in a distributed job, as far as its metadata says.

    Examples
    --------
    >>> RankInfo(rank=1, world_size=2, source="Kineto distributedInfo").describe()
    'rank 1 of 2 (Kineto distributedInfo)'
    """

    rank: int | None = None
    world_size: int | None = None
    source: str = ""
    """Where the rank came from, in words (``"Kineto distributedInfo"``, ``"environment RANK"``)."""
    job_id: str | None = None
    """What identifies the job when the metadata holds it (a job id, or ``MASTER_ADDR:MASTER_PORT``)."""
    backend: str | None = None
    """The communication backend when recorded (``"nccl"``)."""

    def describe(self) -> str:
        if self.rank is None:
            return "rank unknown"
        of = f" of {self.world_size}" if self.world_size else ""
        return f"rank {self.rank}{of} ({self.source})" if self.source else f"rank {self.rank}{of}"


MAX_RANK = 2**31 - 1
"""Ranks and world sizes are C ``int`` in MPI and in torch.distributed: a larger value is not a rank."""


def _int(v: object) -> int | None:
    try:
        i = int(str(v).strip().strip('"'))
    except (TypeError, ValueError):
        return None
    return i if 0 <= i <= MAX_RANK else None


# ----------------------------------------------------------------------------- Kineto

_DIST_KEY = b'"distributedInfo"'


def _decode_dist(buf: bytes) -> dict[str, object] | None:
    i = buf.find(_DIST_KEY)
    if i < 0:
        return None
    j = buf.find(b":", i + len(_DIST_KEY))
    if j < 0:
        return None
    text = buf[j + 1 :].decode("utf-8", errors="replace").lstrip()
    try:
        obj, _ = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _read_head(f: IO[bytes] | gzip.GzipFile) -> bytes:
    """Up to HEAD_BYTES from ``f``, read in small pieces until ``distributedInfo`` and its object are in."""
    buf = b""
    while len(buf) < HEAD_BYTES:
        piece = f.read(HEAD_CHUNK)
        if not piece:
            break
        buf += piece
        i = buf.find(_DIST_KEY)
        if i >= 0 and buf.find(b"}", i) >= 0 and _decode_dist(buf) is not None:
            break
    return buf


def _kineto_info(p: Path) -> RankInfo:
    gz = p.name.lower().endswith(".gz")
    try:
        if gz:
            with gzip.open(p, "rb") as f:
                head = _read_head(f)
            tail = b""
        else:
            with open(p, "rb") as f:
                head = _read_head(f)
                size = os.fstat(f.fileno()).st_size
                tail = b""
                if _DIST_KEY not in head and size > len(head):
                    f.seek(max(len(head), size - TAIL_BYTES))
                    tail = f.read()
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error):  # corrupt deflate data raises zlib.error
        return RankInfo()
    dist = _decode_dist(head) or (_decode_dist(tail) if tail else None)
    if not dist:
        return RankInfo()
    rank = _int(dist.get("rank"))
    if rank is None:
        return RankInfo()
    backend = dist.get("backend")
    return RankInfo(
        rank=rank,
        world_size=_int(dist.get("world_size")),
        source="Kineto distributedInfo",
        backend=str(backend) if backend else None,
    )


# ----------------------------------------------------------------------------- nsys


def _env_from_nsys(p: Path) -> dict[str, str]:
    """The profiled process's environment (META_DATA_CAPTURE), else the nsys command's (TARGET_INFO_SYSTEM_ENV)."""
    uri = "file:" + urllib.parse.quote(str(p.resolve())) + "?immutable=1"
    env: dict[str, str] = {}
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return env
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "META_DATA_CAPTURE" in tables:
            rows = conn.execute(
                "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:ENVIRONMENT_VARIABLE'"
            ).fetchall()
            for (v,) in rows:
                k, sep, val = str(v).partition("=")
                if sep:
                    env[k.strip()] = val.strip().strip('"')
        if not any(k in env for k in RANK_VARIABLES) and "TARGET_INFO_SYSTEM_ENV" in tables:
            cols = {str(r[1]) for r in conn.execute('PRAGMA table_info("TARGET_INFO_SYSTEM_ENV")')}
            if {"name", "value"} <= cols:
                rows = conn.execute(
                    "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'DeviceEnvironment'"
                ).fetchall()
                for (v,) in rows:
                    for item in str(v).split(";"):
                        k, sep, val = item.partition("=")
                        if sep:
                            env.setdefault(k.strip(), val.strip())
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    return env


def rank_from_environment(env: dict[str, str]) -> RankInfo:
    """The rank, world size and job identity in a process environment.

    Examples
    --------
    >>> rank_from_environment({"RANK": "3", "WORLD_SIZE": "8", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"})
    RankInfo(rank=3, world_size=8, source='environment RANK', job_id='n1:29500', backend=None)
    >>> rank_from_environment({"PATH": "/bin"}).rank is None
    True
    """
    for var in RANK_VARIABLES:
        rank = _int(env.get(var))
        if rank is not None:
            break
    else:
        return RankInfo()
    world = next((w for w in (_int(env.get(v)) for v in WORLD_VARIABLES) if w), None)
    job = next((f"{v}={env[v]}" for v in JOB_VARIABLES if env.get(v)), None)
    if job is None and env.get("MASTER_ADDR") and env.get("MASTER_PORT"):
        job = f"{env['MASTER_ADDR']}:{env['MASTER_PORT']}"
    return RankInfo(rank=rank, world_size=world, source=f"environment {var}", job_id=job)


# ----------------------------------------------------------------------------- public


def read_rank_info(path: str | os.PathLike[str]) -> RankInfo:
    """The rank of a timeline capture from its metadata; ``RankInfo()`` (rank None) when it has none.

    Never raises for a file it cannot read: a bad file is reported when it is loaded.

    Examples
    --------
    >>> read_rank_info("data/samples/multirank/ddp_rank1.json.gz").rank  # doctest: +SKIP
    1
    """
    from kprof.io.files import detect_format

    p = Path(path)
    try:
        fmt = detect_format(p)
    except KprofError:
        return RankInfo()
    if fmt == "kineto":
        return _kineto_info(p)
    if fmt == "nsys-rep":
        from kprof.io.nsys import cached_export_path

        try:
            cached = cached_export_path(p)
        except OSError:
            return RankInfo()
        if not cached.is_file():
            return RankInfo()
        p = cached
        fmt = "nsys-sqlite"
    if fmt == "nsys-sqlite":
        from kprof.io.files import decompressed, is_gzipped_name

        if is_gzipped_name(p):
            try:
                with decompressed(p) as inner:
                    return rank_from_environment(_env_from_nsys(inner))
            except KprofError:
                return RankInfo()
        return rank_from_environment(_env_from_nsys(p))
    return RankInfo()


_DIGITS = re.compile(r"\d+")


def natural_key(path: str) -> tuple[object, ...]:
    """Sort key that orders ``rank2`` before ``rank10``.

    Examples
    --------
    >>> sorted(["r10.json", "r2.json", "r1.json"], key=natural_key)
    ['r1.json', 'r2.json', 'r10.json']
    """
    parts = _DIGITS.split(path)
    nums = _DIGITS.findall(path)
    key: list[object] = []
    for i, part in enumerate(parts):
        key.append((0, part))
        if i < len(nums):
            key.append((1, int(nums[i])))
    return tuple(key)


__all__ = ["RankInfo", "natural_key", "rank_from_environment", "read_rank_info"]
