"""Synthetic Nsight Systems exports and PyTorch profiler traces for the timeline benchmark.

``make_nsys(path, n_kernels)`` writes an SQLite database in the *current* nsys export schema
(2025.3, export schema 3.20.3: the table definitions below are copied from a real export of
that version, comments stripped). The rows are generated inside SQLite with a recursive CTE,
so ten million kernels take about a minute and no Python object per row.

The workload it describes: one host thread launches kernels on one stream, 6 us apart
(launch call 4 us), each kernel 2-6 us; every ``per_step`` kernels an NVTX range closes and
the host calls cudaStreamSynchronize, then pauses 30 us. So the capture is host-launch-bound,
with a sync per step.

``make_kineto(path, target_mb)`` writes an uncompressed Chrome trace in the current Kineto
layout (one field group per line, as torch.profiler writes it) of about ``target_mb`` MB:
per launch a cpu_op, a cudaLaunchKernel, the kernel and its ac2g flow pair.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

DDL = """
CREATE TABLE StringIds (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    value                       TEXT      NOT NULL
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    correlationId               INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL,
    callchainId                 INTEGER
);
CREATE TABLE NVTX_EVENTS (
    start                       INTEGER   NOT NULL,
    end                         INTEGER,
    eventType                   INTEGER   NOT NULL,
    rangeId                     INTEGER,
    category                    INTEGER,
    color                       INTEGER,
    text                        TEXT,
    globalTid                   INTEGER,
    endGlobalTid                INTEGER,
    textId                      INTEGER,
    domainId                    INTEGER,
    uint64Value                 INTEGER,
    int64Value                  INTEGER,
    doubleValue                 REAL,
    uint32Value                 INTEGER,
    int32Value                  INTEGER,
    floatValue                  REAL,
    jsonTextId                  INTEGER,
    jsonText                    TEXT,
    binaryData                  TEXT
);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    demangledName               INTEGER   NOT NULL,
    shortName                   INTEGER   NOT NULL,
    mangledName                 INTEGER,
    launchType                  INTEGER,
    cacheConfig                 INTEGER,
    registersPerThread          INTEGER   NOT NULL,
    gridX                       INTEGER   NOT NULL,
    gridY                       INTEGER   NOT NULL,
    gridZ                       INTEGER   NOT NULL,
    blockX                      INTEGER   NOT NULL,
    blockY                      INTEGER   NOT NULL,
    blockZ                      INTEGER   NOT NULL,
    staticSharedMemory          INTEGER   NOT NULL,
    dynamicSharedMemory         INTEGER   NOT NULL,
    localMemoryPerThread        INTEGER   NOT NULL,
    localMemoryTotal            INTEGER   NOT NULL,
    gridId                      INTEGER   NOT NULL,
    sharedMemoryExecuted        INTEGER,
    graphNodeId                 INTEGER,
    sharedMemoryLimitConfig     INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    deprecatedSyncType          INTEGER,
    syncType                    INTEGER   NOT NULL,
    eventId                     INTEGER   NOT NULL,
    eventSyncId                 INTEGER
);
CREATE TABLE ThreadNames (
    nameId                      INTEGER   NOT NULL,
    priority                    INTEGER,
    globalTid                   INTEGER
);
CREATE TABLE TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,
    id                          INTEGER   NOT NULL,
    name                        TEXT,
    busLocation                 TEXT,
    isDiscrete                  INTEGER,
    l2CacheSize                 INTEGER,
    totalMemory                 INTEGER,
    memoryBandwidth             INTEGER,
    clockRate                   INTEGER,
    smCount                     INTEGER,
    pwGpuId                     INTEGER,
    uuid                        TEXT,
    luid                        INTEGER,
    chipName                    TEXT,
    cuDevice                    INTEGER,
    ctxswDevPath                TEXT,
    ctrlDevPath                 TEXT,
    revision                    INTEGER,
    nodeMask                    INTEGER,
    constantMemory              INTEGER,
    maxIPC                      INTEGER,
    maxRegistersPerBlock        INTEGER,
    maxShmemPerBlock            INTEGER,
    maxShmemPerBlockOptin       INTEGER,
    maxShmemPerSm               INTEGER,
    maxRegistersPerSm           INTEGER,
    threadsPerWarp              INTEGER,
    asyncEngines                INTEGER,
    maxWarpsPerSm               INTEGER,
    maxBlocksPerSm              INTEGER,
    maxThreadsPerBlock          INTEGER,
    maxBlockDimX                INTEGER,
    maxBlockDimY                INTEGER,
    maxBlockDimZ                INTEGER,
    maxGridDimX                 INTEGER,
    maxGridDimY                 INTEGER,
    maxGridDimZ                 INTEGER,
    computeMajor                INTEGER,
    computeMinor                INTEGER,
    smMajor                     INTEGER,
    smMinor                     INTEGER
);
CREATE TABLE META_DATA_EXPORT (
    name                        TEXT      NOT NULL,
    value                       TEXT
);
"""

N_NAMES = 50
META = [
    ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
    ("EXPORT_PRODUCT_VERSION", "2025.3.2.0"),
    ("EXPORT_SCHEMA_VERSION", "3.20.3"),
    ("EXPORT_SCHEMA_VERSION_MAJOR", "3"),
    ("EXPORT_SCHEMA_VERSION_MINOR", "20"),
    ("EXPORT_SCHEMA_VERSION_MICRO", "3"),
]
GTID = 281511181944942  # a globalTid as nsys encodes it (pid/tid in the low bits)
GPID = 281511181942784
T0 = 1_000_000_000


def make_nsys(path: str | os.PathLike[str], n_kernels: int, per_step: int = 1000) -> Path:
    """Write a synthetic nsys 2025.3 export with ``n_kernels`` kernels; returns the path."""
    p = Path(path)
    tmp = p.with_suffix(".tmp")
    if tmp.exists():
        tmp.unlink()
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.executescript(DDL)
    con.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", META)
    strings = [(1, "cudaLaunchKernel_v7000"), (2, "cudaStreamSynchronize_v3020"), (3, "python3"), (4, "step")]
    for k in range(N_NAMES):
        strings.append((100 + k, f"void ns::kernel_{k}<float, {k % 4}>(float*, int)"))
        strings.append((200 + k, f"kernel_{k}"))
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", strings)
    con.execute("INSERT INTO ThreadNames VALUES (3, 0, ?)", (GTID,))
    con.execute(
        "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, totalMemory, memoryBandwidth, clockRate, cuDevice, "
        "computeMajor, computeMinor) VALUES (0, 0, 'NVIDIA H200', 132, 150109880320, 4814304000000, 1980000000, 0, 9, 0)"
    )
    n = int(n_kernels)
    # per kernel i: launch at T0 + i*6000 + step*30000 (4 us call), kernel 1 us after the call ends
    launch = f"({T0} + i * 6000 + (i / {per_step}) * 30000)"
    dur = "(2000 + (i * 7919) % 4000)"
    cte = f"WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n - 1})"
    con.execute(
        f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL {cte} SELECT {launch} + 5000, {launch} + 5000 + {dur}, 0, 1, NULL, 7, "
        f"i + 1, {GPID}, 100 + (i * 7) % {N_NAMES}, 200 + (i * 7) % {N_NAMES}, NULL, 1, 0, 32, 128 + i % 64, 1, 1, "
        "256, 1, 1, 0, 0, 0, 0, i + 1, 0, NULL, 0 FROM c"
    )
    con.execute(
        f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME {cte} SELECT {launch}, {launch} + 4000, 1, {GTID}, i + 1, 1, 0, NULL "
        "FROM c"
    )
    n_steps = (n + per_step - 1) // per_step
    last = f"(MIN((j + 1) * {per_step}, {n}) - 1)"
    launch_last = f"({T0} + {last} * 6000 + ({last} / {per_step}) * 30000)"
    kend_last = f"({launch_last} + 5000 + 2000 + ({last} * 7919) % 4000)"
    cte_s = f"WITH RECURSIVE s(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM s WHERE j < {n_steps - 1})"
    con.execute(
        f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME {cte_s} SELECT {launch_last} + 4000, {kend_last} + 1000, 1, {GTID}, "
        f"{n} + j + 1, 2, 0, NULL FROM s"
    )
    con.execute(
        f"INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION {cte_s} SELECT {launch_last} + 4000, {kend_last} + 1000, 0, 1, "
        f"NULL, 7, {n} + j + 1, {GPID}, NULL, 3, 0, NULL FROM s"
    )
    con.execute(
        f"INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) {cte_s} SELECT "
        f"{T0} + j * {per_step} * 6000 + j * 30000, {kend_last} + 1000, 59, 'step ' || j, {GTID}, 0 FROM s"
    )
    con.commit()
    con.close()
    os.replace(tmp, p)
    return p


_EVENT = """  {{
    "ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 4242, "tid": 4242,
    "ts": {ts_op}.{frac}, "dur": 9.250,
    "args": {{
      "External id": {ext},"Record function id": 0, "Concrete Inputs": ["", "", ""], "Input type": ["float", "float", "Scalar"], "Input Strides": [[1], [1], []], "Input Dims": [[4096], [4096], []], "Ev Idx": {ext}
    }}
  }},
  {{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
    "ts": {ts_l}.{frac}, "dur": 4.125,
    "args": {{
      "External id": {ext},      "cbid": 211, "correlation": {corr}
    }}
  }},
  {{
    "ph": "s", "id": {corr}, "pid": 4242, "tid": 4242, "ts": {ts_l}.{frac},
    "cat": "ac2g", "name": "ac2g"
  }},
  {{
    "ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", "pid": 0, "tid": 7,
    "ts": {ts_k}.{frac}, "dur": {kdur},
    "args": {{
      "External id": {ext},      "queued": 0, "device": 0, "context": 1,      "stream": 7, "correlation": {corr},      "registers per thread": 16,      "shared memory": 0,      "blocks per SM": 0.242424,      "warps per SM": 1.939394,      "grid": [32, 1, 1],      "block": [128, 1, 1],      "est. achieved occupancy %": 3
    }}
  }},
  {{
    "ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {ts_k}.{frac},
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }}"""


def make_kineto(path: str | os.PathLike[str], target_mb: float, per_step: int = 1000) -> Path:
    """Write an uncompressed Kineto-style trace of about ``target_mb`` MB; returns the path."""
    p = Path(path)
    tmp = p.with_suffix(".tmp")
    target = int(target_mb * 1e6)
    header = {
        "schemaVersion": 1,
        "deviceProperties": [
            {
                "id": 0,
                "name": "NVIDIA H200",
                "totalGlobalMem": 150109880320,
                "computeMajor": 9,
                "computeMinor": 0,
                "numSms": 132,
            }
        ],
        "distributedInfo": {"rank": 0, "world_size": 1, "backend": "nccl"},
        "record_shapes": 1,
    }
    t0 = 1_712_195_495_000_000
    with open(tmp, "w") as f:
        f.write("{\n")
        for k, v in header.items():
            f.write(f'  "{k}": {json.dumps(v)},\n')
        f.write('  "traceEvents": [\n')
        written = 0
        i = 0
        buf: list[str] = []
        while written < target:
            step, within = divmod(i, per_step)
            if within == 0:
                s_ts = t0 + i * 12 + step * 40
                buf.append(
                    f'  {{\n    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 4242, '
                    f'"tid": 4242,\n    "ts": {s_ts}.000, "dur": {per_step * 12}.000,\n    "args": {{\n      '
                    f'"External id": {i}, "Ev Idx": {i}\n    }}\n  }},'
                )
            base = t0 + i * 12 + step * 40
            frac = f"{(i * 37) % 1000:03d}"
            buf.append(
                _EVENT.format(
                    ts_op=base,
                    ts_l=base + 4,
                    ts_k=base + 9,
                    frac=frac,
                    ext=i + 1,
                    corr=i + 1,
                    kdur=f"{2 + (i % 3)}.{(i * 13) % 1000:03d}",
                )
                + ","
            )
            i += 1
            if len(buf) >= 2000:
                chunk = "\n".join(buf) + "\n"
                f.write(chunk)
                written += len(chunk)
                buf = []
        if buf:
            f.write("\n".join(buf) + "\n")
        f.write(
            '  {\n    "name": "process_name", "ph": "M", "ts": %d.000, "pid": 4242, "tid": 0,\n'
            '    "args": {\n      "name": "python3"\n    }\n  }\n' % t0  # noqa: UP031
        )
        f.write(
            '],\n  "traceName": "synthetic.pt.trace.json",\n  "displayTimeUnit": "ms",\n'
            '  "baseTimeNanoseconds": 1700000000000000000\n}\n'
        )
    os.replace(tmp, p)
    return p
