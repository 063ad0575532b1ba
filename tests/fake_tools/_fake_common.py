"""Shared helpers of the stand-in ``nsys``, ``ncu`` and ``cuobjdump`` executables (tests only).

The stand-ins print the real tools' output lines, write their output files by copying real
samples from ``data/samples`` (or from ``../shared/corpus``), or tiny synthetic ones when
those are missing, and exit with the real tools' exit codes. Environment variables choose the
scenario:

- ``KPROF_FAKE_LOG``: a file to which every invocation appends one JSON line
  ``{"tool": ..., "argv": [...]}`` (what the tests assert on).
- ``KPROF_FAKE_NSYS``: ``ok`` (default), ``no_report`` (nsys exits 0, writes nothing),
  ``qdstrm`` (only the raw .qdstrm, as when the importer's libraries are missing),
  ``export_fail``.
- ``KPROF_FAKE_TIMELINE``: which timeline the export writes: ``gpu_bound`` (default),
  ``host_launch_bound``, ``cooperative``; a real ``data/samples/timeline/<name>.sqlite`` is
  copied when it exists and ``KPROF_FAKE_SYNTHETIC`` is not set.
- ``KPROF_FAKE_NCU``: ``ok`` (default), ``perm`` (ERR_NVGPUCTRPERM), ``driver_error``.
- ``KPROF_FAKE_KERNELS``: comma-separated function names the program "launches" (ncu's
  ``-k`` is matched against them; no match prints "No kernels were profiled").
- ``KPROF_FAKE_LAUNCHES``: launches of each kernel (default 1000); a ``--launch-skip`` at or
  past it profiles nothing.
- ``KPROF_FAKE_NCU_SAMPLE``: the .ncu-rep (or .ncu-rep.gz, written decompressed) to copy (default: the
  first real one found).
- ``KPROF_FAKE_SASS``: which canned listing cuobjdump prints for a file whose first line is
  ``FAKE-CUBIN`` (default: all of tests/fake_tools/sass/*.sass).

The profiled command is really run (the stand-ins do not need a GPU); its exit status
becomes the tool's, as with the real nsys and ncu.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SAMPLES = REPO / "data" / "samples"
CORPUS = REPO.parent / "shared" / "corpus"

DEFAULT_KERNELS = "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN,vectorized_elementwise_kernel,persistent_reduce"


def log(tool: str, argv: list[str]) -> None:
    path = os.environ.get("KPROF_FAKE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"tool": tool, "argv": argv, "cwd": os.getcwd()}) + "\n")


def say(*lines: str) -> None:
    for line in lines:
        print(line, flush=True)


def run_program(cmd: list[str]) -> int:
    """Run the profiled command (its output goes where the tool's goes); its exit status."""
    if not cmd:
        return 0
    try:
        return subprocess.call(cmd)
    except FileNotFoundError:
        print(f"fake: {cmd[0]}: No such file or directory", file=sys.stderr)
        return 127


def real_sample(kind: str, name: str) -> Path | None:
    if os.environ.get("KPROF_FAKE_SYNTHETIC"):
        return None
    p = SAMPLES / kind / name
    return p if p.is_file() else None


def first_ncu_report() -> Path | None:
    want = os.environ.get("KPROF_FAKE_NCU_SAMPLE")
    if want:
        p = Path(want)
        return p if p.is_file() else None
    for d in (SAMPLES / "ncu", CORPUS / "ESMM-Research"):
        if d.is_dir():
            reps = sorted(d.glob("*.ncu-rep")) + sorted(d.glob("*.ncu-rep.gz"))  # the samples are gzipped
            if reps:
                return reps[0]
    return None


def copy_or_write(src: Path | None, dst: str, placeholder: bytes) -> None:
    """Copy ``src`` to ``dst`` as the tool would have written it (a ``.gz`` source decompressed, unless
    ``dst`` is a ``.gz`` too), or write ``placeholder`` when there is no source."""
    if src is not None and src.name.endswith(".gz") and not dst.endswith(".gz"):
        Path(dst).write_bytes(gzip.decompress(src.read_bytes()))
    elif src is not None:
        shutil.copyfile(src, dst)
    else:
        Path(dst).write_bytes(placeholder)


# ----------------------------------------------------------------------------- synthetic nsys export
_LAUNCH_TYPES = [
    (0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"),
    (1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"),
    (2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"),
    (3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device"),
]
GEMM = "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN"
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)
MUL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
    "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, "
    "std::array<char*, 3ul>)"
)
COOP = "void persistent_reduce<float>(float const*, float*, int)"


def _kernels(recipe: str) -> list[tuple[str, str, int, int, int, int]]:
    """(demangled, short, api_start, kernel_start, kernel_duration, launch_type), in launch order."""
    t0 = 1_000_000_000
    out = []
    if recipe in ("gpu_bound", "cooperative"):
        big, short, lt = (GEMM, GEMM, 1) if recipe == "gpu_bound" else (COOP, "persistent_reduce", 2)
        gpu = t0 + 50_000
        for i in range(80):
            api = t0 + i * 20_000
            out.append((big, short, api, max(gpu, api + 5_000), 200_000, lt))
            gpu = max(gpu, api + 5_000) + 200_000
            if i % 10 == 9:  # a small elementwise kernel now and then
                out.append((ADD, "vectorized_elementwise_kernel", api + 10_000, gpu, 3_000, 1))
                gpu += 3_000
    elif recipe == "host_launch_bound":
        for i in range(300):
            api = t0 + i * 20_000
            name = MUL if i % 3 != 2 else ADD
            out.append((name, "vectorized_elementwise_kernel", api, api + 6_000, 2_000, 1))
    else:
        raise SystemExit(f"fake: unknown timeline recipe {recipe!r}")
    return out


def write_synthetic_sqlite(path: str, recipe: str) -> None:
    """A tiny nsys 2025.3-style export (schema 3.20 tables, only the columns kprof reads and their neighbours)."""
    if os.path.exists(path):
        os.unlink(path)
    db = sqlite3.connect(path)
    c = db.cursor()
    c.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
    c.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    c.executemany(
        "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
        [
            ("EXPORT_SCHEMA_VERSION", "3.20.0"),
            ("EXPORT_SCHEMA_VERSION_MAJOR", "3"),
            ("EXPORT_PRODUCT_VERSION", "2025.3.1.90-253135822126v0"),
        ],
    )
    c.execute(
        "CREATE TABLE ENUM_CUDA_KERNEL_LAUNCH_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT)"
    )
    c.executemany("INSERT INTO ENUM_CUDA_KERNEL_LAUNCH_TYPE VALUES (?, ?, ?)", _LAUNCH_TYPES)
    c.execute(
        "CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, totalMemory INTEGER, "
        "memoryBandwidth INTEGER, clockRate INTEGER, computeMajor INTEGER, computeMinor INTEGER, cuDevice INTEGER)"
    )
    c.execute(
        "INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200', 132, 150109208576, 4800000000000, "
        "1980000000, 9, 0, 0)"
    )
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
        mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
        gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
        blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
        dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
        localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
        graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER)""")
    c.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
        eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
        returnValue INTEGER NOT NULL, callchainId INTEGER)""")
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
            c.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    gtid = (4242 << 24) | 4242
    pid = 4242 << 24
    for i, (name, short, api, start, dur, lt) in enumerate(_kernels(recipe), 1):
        api_name = "cuLaunchKernelEx_v11060" if short.startswith("nvjet") else "cudaLaunchKernel_v7000"
        c.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)",
            (api, api + 4_000, gtid, i, sid(api_name)),
        )
        c.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, NULL, 7, ?, ?, ?, ?, NULL, ?, 0, 32, "
            "132, 1, 1, 256, 1, 1, 0, 0, 0, 0, ?, 0, NULL, NULL)",
            (start, start + dur, i, pid, sid(name), sid(short), lt, i),
        )
    db.commit()
    db.close()
