"""Kineto (PyTorch profiler) loader: synthetic traces in both schemas, streaming, bad inputs, corpus."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kprof.io.kineto as kineto
from kprof.errors import KprofInputError
from kprof.io import load
from kprof.io.kineto import load_kineto


def current_trace(ts_float: bool = True, flows: bool = True) -> dict:
    def ts(us: int, frac: str = "123") -> str | int:
        # float text with nanosecond digits, written verbatim by write() (json.dumps would round it)
        return f"__{us}.{frac}__" if ts_float else us

    base = 1712195495519689
    ev = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#7",
            "pid": 1,
            "tid": 1,
            "ts": ts(base, "000"),
            "dur": 100,
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": ts(base + 1), "dur": 8},
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": ts(base + 2),
            "dur": 5,
            "args": {"correlation": 42, "External id": 3},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "void at::native::k<float>(float*)",
            "pid": 0,
            "tid": 7,
            "ts": ts(base + 10, "047"),
            "dur": "__2.5__",
            "args": {"device": 0, "stream": 7, "correlation": 42, "grid": [4, 1, 1], "block": [128, 1, 1]},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy DtoH (Device -> Pinned)",
            "pid": 0,
            "tid": 7,
            "ts": ts(base + 20),
            "dur": 1,
            "args": {"device": 0, "stream": 7, "correlation": 43, "bytes": 4},
        },
        {
            "ph": "X",
            "cat": "cuda_sync",
            "name": "Stream Sync",
            "pid": 0,
            "tid": 7,
            "ts": ts(base + 21),
            "dur": 3,
            "args": {"device": 0, "stream": 7, "correlation": 44, "cuda_sync_kind": "Stream Sync"},
        },
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "python"}},
    ]
    if flows:
        ev.append(
            {"ph": "s", "id": 42, "pid": 1, "tid": 1, "ts": ts(base + 2), "cat": "ac2g", "name": "ac2g"}
        )
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": 0, "name": "NVIDIA H200", "numSms": 132, "computeMajor": 9, "computeMinor": 0}
        ],
        "traceEvents": ev,
        "traceName": "x",
    }


def write(path: Path, obj: object, gz: bool = False, indent: int | None = 2) -> Path:
    text = re.sub(r'"__(\d+\.\d+)__"', r"\1", json.dumps(obj, indent=indent))
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def test_current_schema_float_timestamps_exact_ns(tmp_path: Path) -> None:
    tl = load_kineto(write(tmp_path / "t.json", current_trace()))
    base_ns = 1712195495519689 * 1000
    # nanosecond digits survive (a float64 of epoch microseconds would round them to 0.25 us)
    assert tl.kernels.start_ns.tolist() == [base_ns + 10_047]
    assert tl.kernels.end_ns.tolist() == [base_ns + 10_047 + 2_500]
    assert tl.kernels.short_names == ("k",)
    assert tl.kernels.grid is not None and tl.kernels.grid.tolist() == [[4, 1, 1]]
    assert tl.api.correlation.tolist() == [42] and tl.kernels.correlation.tolist() == [42]
    assert tl.copies.direction.tolist() == [2] and tl.copies.dst_kind.tolist() == [1]
    assert tl.syncs.kind.tolist() == [3]
    assert tl.steps.number.tolist() == [7]
    assert len(tl.host_ops) == 1 and tl.gpus[0].sm_count == 132
    assert tl.threads[0].startswith("python")


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("indent", [None, 2])
def test_int_timestamps_no_flows_gz_and_compact(tmp_path: Path, gz: bool, indent: int | None) -> None:
    p = write(
        tmp_path / ("t.json.gz" if gz else "t.json"), current_trace(ts_float=False, flows=False), gz, indent
    )
    tl = load(p)
    assert tl.kernels.start_ns.tolist() == [(1712195495519689 + 10) * 1000]
    assert tl.kernels.end_ns.tolist() == [(1712195495519689 + 10) * 1000 + 2500]


def test_2021_schema(tmp_path: Path) -> None:
    ev = [
        {
            "ph": "X",
            "cat": "Operator",
            "name": "ProfilerStep#5",
            "pid": 9,
            "tid": "1890023232",
            "ts": 100,
            "dur": 50,
        },
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 9,
            "tid": "1890023232",
            "ts": 110,
            "dur": 4,
            "args": {"correlation": 7, "external id": 2},
        },
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "void k(int)",
            "pid": 0,
            "tid": "stream 7",
            "ts": 120,
            "dur": 3,
            "args": {"device": 0, "stream": 7, "correlation": 7, "external id": 2},
        },
        {
            "ph": "X",
            "cat": "Memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": "stream 7",
            "ts": 130,
            "dur": 9,
            "args": {"device": 0, "stream": 7, "correlation": 8, "bytes": 1024},
        },
    ]
    tl = load_kineto(write(tmp_path / "old.json", {"schemaVersion": 1, "traceEvents": ev}))
    assert tl.kernel_count == 1 and tl.kernels.stream.tolist() == [7]
    assert tl.copies.host_kind().tolist() == [0]
    assert tl.steps.number.tolist() == [5]
    assert tl.kernels.grid is None  # not recorded in this schema


def test_streaming_matches_json_load_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(1)
    ev = []
    for i in range(400):
        ts = f"{1700000000000000 + i * 10}.{int(rng.integers(0, 1000)):03d}"
        ev.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"void k{i % 7}<int>(int)",
                "pid": 0,
                "tid": 7,
                "ts": float(ts),
                "dur": int(rng.integers(1, 9)),
                "args": {"correlation": i, "stream": 7},
            }
        )
    p = write(tmp_path / "big.json", {"schemaVersion": 1, "traceEvents": ev})
    monkeypatch.setattr(kineto, "READ_CHUNK", 97)  # force values to straddle chunk boundaries
    tl = load_kineto(p)
    ref = json.loads(p.read_text(), parse_float=str)["traceEvents"]
    want = [int(e["ts"].split(".")[0]) * 1000 + int(e["ts"].split(".")[1].ljust(3, "0")[:3]) for e in ref]
    assert tl.kernels.start_ns.tolist() == want
    assert tl.kernels.correlation.tolist() == list(range(400))


def test_bare_array_form(tmp_path: Path) -> None:
    ev = current_trace()["traceEvents"]
    tl = load_kineto(write(tmp_path / "arr.json", ev))
    assert tl.kernel_count == 1


def test_empty_trace_is_not_an_error(tmp_path: Path) -> None:
    tl = load_kineto(write(tmp_path / "e.json", {"schemaVersion": 1, "traceEvents": []}))
    assert tl.gpu_op_count == 0


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"a": 1, "b": [1, 2]}', "not a PyTorch profiler trace"),
        ("[1, 2, 3]", "not a PyTorch profiler trace"),
        ('{"traceEvents": [{"a": 1}]}', "not a PyTorch profiler trace"),
        ('{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur"', "not valid JSON"),
        ("this is not json", "not a PyTorch profiler trace"),
    ],
)
def test_bad_json(tmp_path: Path, content: str, reason: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(KprofInputError) as ei:
        load(p)
    assert reason in str(ei.value) and "\n" not in str(ei.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    p = write(tmp_path / "t.json.gz", current_trace(), gz=True)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(KprofInputError, match=r"truncated|corrupt"):
        load(p)


# ----------------------------------------------------------------------------- robustness (property tests)

NASTY_NAMES = [
    "void k<(anonymous namespace)::X, 4>(float const*)",
    'say "hi" } and ] and {',
    "a]b[c{d}e,f:g",
    'back\\slash \\" still a string',
    "tab\tnew\nline",
    "üñíçødé €  😀 名前",
    '{"ph": "X", "cat": "kernel"}',
    "",
]
names = st.one_of(st.sampled_from(NASTY_NAMES), st.text(max_size=20))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    names,
    st.floats(allow_nan=False, allow_infinity=False, width=64),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(names, inner, max_size=4)),
    max_leaves=12,
)
timestamps = st.one_of(st.integers(0, 2**52), st.floats(0, 2e15, allow_nan=False, allow_infinity=False))
events = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "X", "X", "M", "i", "s", "f"]),
        "cat": st.sampled_from(
            [
                "kernel",
                "Kernel",
                "cuda_runtime",
                "cpu_op",
                "gpu_memcpy",
                "user_annotation",
                "cuda_sync",
                "ac2g",
                "something else",
            ]
        ),
        "name": names,
        "pid": st.one_of(st.integers(0, 9), st.sampled_from(["0", "python3 123"])),
        "tid": st.one_of(st.integers(0, 9), st.sampled_from(["stream 7", "1890023232"])),
        "ts": timestamps,
        "dur": st.one_of(st.integers(0, 10**6), st.floats(0, 1e6, allow_nan=False, allow_infinity=False)),
    },
    optional={
        "args": st.dictionaries(
            st.sampled_from(
                ["correlation", "device", "stream", "grid", "block", "bytes", "External id", "nested"]
            ),
            json_values,
            max_size=6,
        ),
        "id": st.integers(0, 100),
    },
)


@st.composite
def traces(draw: st.DrawFn) -> tuple[str, dict]:
    """A Chrome trace as text (random key order, indent, escaping) and what json.loads reads from it."""
    evs = draw(st.lists(events, max_size=25))
    others = draw(
        st.dictionaries(
            st.sampled_from(
                ["schemaVersion", "traceName", "deviceProperties", "distributedInfo", "displayTimeUnit"]
            ),
            json_values,
            max_size=4,
        )
    )
    items = [*others.items(), ("traceEvents", evs)]
    items = draw(st.permutations(items))  # traceEvents is not always first (or last)
    text = json.dumps(
        dict(items), indent=draw(st.sampled_from([None, 0, 1, 2])), ensure_ascii=draw(st.booleans())
    )
    return text, json.loads(text, parse_float=str)


def _expected_kernels(ref: dict) -> list[tuple[str, int]]:
    out = []
    for e in ref["traceEvents"]:
        if e.get("ph") == "X" and isinstance(e.get("cat"), str) and e["cat"].lower() == "kernel":
            out.append((str(e.get("name", "")), kineto._ns(e["ts"])))
    return out


@given(traces(), st.integers(1, 64), st.booleans())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_streaming_parser_agrees_with_json_load(
    tmp_path: Path, trace: tuple[str, dict], chunk: int, gz: bool
) -> None:
    text, ref = trace
    p = tmp_path / ("t.json.gz" if gz else "t.json")
    if gz:
        with gzip.open(p, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        p.write_text(text, encoding="utf-8")
    old = kineto.READ_CHUNK
    kineto.READ_CHUNK = chunk  # values, escapes and multi-byte characters straddle chunk boundaries
    try:
        top: dict = {}
        got = list(kineto._iter_trace(p, top))
        tl = kineto.read_kineto(p)  # every event as written (random times are often impossible together)
    finally:
        kineto.READ_CHUNK = old
    assert got == ref["traceEvents"]
    assert {k: v for k, v in top.items() if k != "traceEvents"} == {
        k: v for k, v in ref.items() if k != "traceEvents"
    }
    kernels = [
        (tl.kernels.names[i], int(s)) for i, s in zip(tl.kernels.name_id, tl.kernels.start_ns, strict=True)
    ]
    assert kernels == _expected_kernels(ref)


@given(traces(), st.data())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_truncated_file_is_a_one_line_error(
    tmp_path: Path, trace: tuple[str, dict], data: st.DataObject
) -> None:
    text = trace[0].rstrip()
    cut = data.draw(st.integers(0, len(text) - 1))  # anything short of the closing brace
    p = tmp_path / "cut.json"
    p.write_text(text[:cut], encoding="utf-8")
    with pytest.raises(KprofInputError) as ei:
        load_kineto(p)
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize(
    "content",
    [
        '{"schemaVersion": 1}',
        '{"traceEvents": 5}',
        '{"traceEvents": [1, 2]}',
        '"a string"',
        "42",
        "null",
        '{"traceEvents": []} {"traceEvents": []}',
        '{"traceEvents": [{"name": "no ph"}]}',
        "\x00\x01 binary",
    ],
)
def test_json_that_is_not_a_trace(tmp_path: Path, content: str) -> None:
    p = tmp_path / "x.json"
    p.write_text(content)
    with pytest.raises(KprofInputError) as ei:
        load_kineto(p)
    assert "\n" not in str(ei.value)


def test_invalid_value_fails_at_once_not_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a bad event early in a big file is reported without reading (and buffering) the rest of it
    good = json.dumps({"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1, "dur": 1})
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [' + good + ", {bad}, " + ", ".join([good] * 20000) + "]}")
    monkeypatch.setattr(kineto, "READ_CHUNK", 4096)
    reads = []
    real = kineto._Reader._fill

    def counting(self: kineto._Reader) -> bool:
        reads.append(1)
        return real(self)

    monkeypatch.setattr(kineto._Reader, "_fill", counting)
    with pytest.raises(KprofInputError, match="not valid JSON"):
        load_kineto(p)
    assert len(reads) <= 2


def test_byte_order_mark_unhashable_pid_and_odd_fields(tmp_path: Path) -> None:
    ev = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": [0],
            "tid": {"a": 1},
            "ts": 10,
            "dur": 2,
            "args": ["not", "an", "object"],
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 8,
            "dur": 1,
            "args": {"correlation": 2**70, "External id": "3.0"},
        },
        {"ph": "X", "cat": "cpu_op", "name": "inf", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "huge", "pid": 1, "tid": 1, "ts": 10**30, "dur": 1},
    ]
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"traceEvents": ev}).encode())
    tl = load_kineto(p)
    assert tl.kernel_count == 1 and tl.api.correlation.tolist() == [-1]
    assert tl.counts.get("events without a valid ts/dur") == 2


# ----------------------------------------------------------------------------- corpus


def test_corpus_2021_resnet(corpus_dir: Path) -> None:
    tl = load(corpus_dir / "kineto" / "resnet50_num_workers_0.worker0.pt.trace.json.gz")
    assert tl.kernel_count == 9564 and len(tl.api) == 10920 and len(tl.memsets) == 439
    assert tl.steps.number.tolist() == [5, 6, 7, 8, 9, 10]


def test_corpus_ns_resolution_float_ts(corpus_dir: Path) -> None:
    tl = load(
        corpus_dir
        / "HolisticTraceAnalysis"
        / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    )
    assert tl.kernel_count == 4350 and len(tl.copies) == 1600
    assert (tl.kernels.start_ns % 1000 != 0).any()  # sub-microsecond digits kept


def test_corpus_range_profiler_trace_has_no_kernels(corpus_dir: Path) -> None:
    tl = load(
        corpus_dir
        / "HolisticTraceAnalysis"
        / "cupti_profiler__benchmark_result_924719_1679055439_trace.json.gz"
    )
    assert tl.gpu_op_count == 0 and tl.counts.get("cuda_profiler_range") == 77
    assert any("range-profiler" in n for n in tl.notes)
