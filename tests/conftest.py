"""Shared fixtures: the shipped samples and the third-party corpus."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

# The tests read reports with ncu_report, not from the cache of earlier reads (kprof/io/ncu_cache.py):
# the reader's behaviour on each file is what they check. tests/io/test_ncu_cache.py turns it on.
# Set here, at collection, so that every kprof process a test starts inherits it.
os.environ["KPROF_CACHE"] = "0"

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "samples"
# ../shared/corpus beside the checkout (CI lays shared/ beside the clone).
CORPUS = (REPO.parent / "shared" / "corpus").resolve()


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not (SAMPLES / "manifest.json").exists():
        pytest.skip(f"no sample gallery at {SAMPLES} (data/samples/manifest.json missing)")
    return SAMPLES


def ncu_sample_bytes(name: str) -> bytes:
    """The bytes of the sample report ``NAME`` as ncu wrote it. The samples are stored gzip-compressed
    (``data/samples/ncu/NAME.ncu-rep.gz``, to keep the working tree small); tests of what happens to a
    plain ``.ncu-rep`` (the reader, cuts, flips, copies) start from these bytes. b"" when it is missing."""
    gz = SAMPLES / "ncu" / f"{name}.ncu-rep.gz"
    return gzip.decompress(gz.read_bytes()) if gz.is_file() else b""


def ncu_copies(data: bytes, copies: int) -> bytes:
    """A report whose every launch (result block) is repeated ``copies`` times, as a long profiling session
    of the same kernel writes it (what ``benchmarks/bench_cli.py --many`` builds; the framing is that of
    :func:`kprof.io.ncu_structure.check_report_structure`)."""
    import struct

    from kprof.io.ncu_structure import _protobuf_ints

    (n,) = struct.unpack("<I", data[4:8])
    pos = 8 + n
    out = [data[:pos]]
    while pos < len(data):
        (n,) = struct.unpack("<I", data[pos : pos + 4])
        fields = _protobuf_ints(data[pos + 4 : pos + 4 + n])
        end = pos + 4 + n + fields.get(5, 0)
        out.append(data[pos:end] * (copies if fields.get(2, 0) else 1))
        pos = end
    return b"".join(out)


@pytest.fixture(scope="session")
def plain_ncu(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``plain_ncu(NAME)``: the sample report ``NAME`` as a plain ``NAME.ncu-rep``, decompressed once per
    session into a temporary folder (never beside the samples); skips when the sample is missing."""
    folder = tmp_path_factory.mktemp("plain-ncu")

    def get(name: str) -> Path:
        dst = folder / f"{name}.ncu-rep"
        if not dst.exists():
            data = ncu_sample_bytes(name)
            if not data:
                pytest.skip(f"{SAMPLES / 'ncu' / name}.ncu-rep.gz not in the sample gallery")
            dst.write_bytes(data)
        return dst

    return get


@pytest.fixture(scope="session")
def manifest(samples_dir: Path) -> dict:
    return json.loads((samples_dir / "manifest.json").read_text())


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"third-party corpus not present at {CORPUS} (it lives in ../shared/corpus)")
    return CORPUS


def manifest_entries(kind_prefix: str) -> list[dict]:
    """Manifest entries whose kind starts with ``kind_prefix`` (for parametrize at collection time)."""
    m = SAMPLES / "manifest.json"
    if not m.exists():
        return []
    data = json.loads(m.read_text())
    entries = data["files"] if isinstance(data, dict) and "files" in data else data
    return [e for e in entries if str(e.get("kind", "")).startswith(kind_prefix)]


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """Each test leaves SIGINT and SIGTERM as it found them: a handler left at SIG_IGN by code run
    in-process would be inherited by the kprof processes later tests start (Python installs its
    KeyboardInterrupt handler only when SIGINT is not ignored at start-up), and their Ctrl-C tests
    would then see a report that never stops."""
    import signal

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, h in saved.items():
        if signal.getsignal(s) is not h and h is not None:
            signal.signal(s, h)
