"""Long reports read launch by launch (kprof/io/ncu_reader.py): forked children, each reading a chunk of
launches, hand them over as they are read; what arrives equals a read in one process, and the diagnoses
streamed (kprof.api.kernel_diagnoses) equal those of the whole report."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import ncu_copies, ncu_sample_bytes

pytest.importorskip("ncu_report")


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from kprof.io import ncu, ncu_reader

    monkeypatch.setenv("KPROF_NCU_ISOLATE", "1")
    monkeypatch.setattr(ncu, "_READER", None)
    monkeypatch.setattr(ncu_reader, "LAUNCHES_PER_CHILD", 2)  # 5 launches: three children, two at a time
    yield ncu
    if ncu._READER is not None:
        ncu._READER.stop()


def _copies(tmp_path: Path, name: str, n: int) -> Path:
    data = ncu_sample_bytes(name)
    if not data:
        pytest.skip(f"sample {name} missing")
    p = tmp_path / f"{name}.x{n}.ncu-rep"
    p.write_bytes(ncu_copies(data, n))
    return p


def test_chunks_read_in_children_equal_one_process(
    fresh, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    rep = _copies(tmp_path, "atomic_contention", 5)
    stream = fresh.stream_ncu_report(rep)
    assert stream.total == 5
    arrived = [k.id for k in stream]
    assert sorted(arrived) == [0, 1, 2, 3, 4]
    isolated = fresh.load_ncu_report(rep)
    monkeypatch.setenv("KPROF_NCU_ISOLATE", "0")
    local = fresh.load_ncu_report(rep)
    assert isolated == local  # SASS with per-PC counters, source files, notes, units: all of it
    assert len(local) == 5 and all(k.sass for k in local)


def test_one_launch_split_between_two_processes_equals_one_process(
    fresh, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The first read of a one-launch report: its SASS listing in one reader, its metrics in a child of
    the other, joined here (ncu_action.join_sass)."""
    data = ncu_sample_bytes("triton_fp32_ieee_dot")  # 1,400 instructions with source lines
    if not data:
        pytest.skip("sample missing")
    rep = tmp_path / "k.ncu-rep"
    rep.write_bytes(data)
    split = fresh.load_ncu_report(rep)
    assert fresh._READER.warm.warm  # its disassembler has started: it reads the next small report alone
    monkeypatch.setenv("KPROF_NCU_ISOLATE", "0")
    local = fresh.load_ncu_report(rep)
    assert split == local
    assert split[0].source_files and sum(bool(s.counters) for s in split[0].sass) > 100


def test_streamed_diagnoses_equal_the_whole_reports(fresh, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import kprof
    from kprof.api import kernel_diagnoses
    from kprof.diagnose.kernel import diagnose_kernels

    rep = _copies(tmp_path, "atomic_contention", 5)
    with kernel_diagnoses(rep) as (total, scored):
        streamed = sorted(scored, key=lambda t: (-t[0], t[1]))
    assert total == 5
    whole = diagnose_kernels(kprof.load(rep))  # the file is set by kprof.diagnose, not by the judgement
    assert [d.to_dict() for _, _, d in streamed] == [
        dataclasses.replace(d, file=str(rep)).to_dict() for d in whole
    ]
    assert [d.to_dict() for d in kprof.diagnose(rep)] == [d.to_dict() for _, _, d in streamed]
