"""Truncated and damaged copies of every sample type.

Every cut of a timeline, CSV or report is refused with one line naming the file. The ``.ncu-rep``
is cut at every place a copy can stop (inside the signature, at and around every block boundary,
inside headers and payloads); each cut, random bytes behind an ``NVR`` signature, and flipped or
smashed bytes are run in a child process, so that a crash of NVIDIA's native ``ncu_report`` fails
the case instead of killing pytest. A flipped byte inside a payload can be invisible (a metric
value that changes): for those, loading or refusing are both right; crashing is not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.reliability.checks import build_and_run, case_params, check_outcome
from tests.reliability.inputs import NCU_REP, Case, ncu_rep_bytes, plain_ncu_rep, truncation_cases
from tests.reliability.nvr import cut_points, flip_offsets, smash_cubin_section
from tests.reliability.runner import KPROF_ERRORS, child_env, run_cases

CASES = truncation_cases()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build_and_run(CASES, tmp_path_factory.mktemp("cuts"))


@pytest.mark.parametrize("case", case_params(CASES, {}))
def test_cut_copy_is_refused(case: Case, outcomes: dict[str, Any]) -> None:
    path, r = outcomes[case.id]
    check_outcome(case, path, r)


# ----------------------------------------------------------------------------- .ncu-rep

DATA = ncu_rep_bytes()  # the plain report (the sample is stored gzip-compressed)
CUTS = cut_points(DATA) if DATA else []
FLIPS = flip_offsets(DATA) if DATA else []
RANDOM_SIZES = (0, 1, 4, 5, 100, 10_000)


def _write(d: Path, name: str, data: bytes) -> str:
    p = d / name
    p.write_bytes(data)
    return str(p)


def _ncu_jobs(d: Path, *, flips: bool) -> list[dict[str, Any]]:
    import random

    jobs = [{"id": "intact", "action": "load", "args": [_write(d, "intact.ncu-rep", DATA)]}]
    for n in CUTS:
        jobs.append({"id": f"cut@{n}", "action": "load", "args": [_write(d, f"cut{n}.ncu-rep", DATA[:n])]})
    for n in RANDOM_SIZES:
        body = b"NVR\0" + random.Random(n).randbytes(n)
        jobs.append({"id": f"random{n}", "action": "load", "args": [_write(d, f"random{n}.ncu-rep", body)]})
    if flips:
        for off in FLIPS:
            data = bytearray(DATA)
            data[off] ^= 0x40
            jobs.append(
                {
                    "id": f"flip@{off}",
                    "action": "load",
                    "args": [_write(d, f"flip{off}.ncu-rep", bytes(data))],
                }
            )
        smashed = smash_cubin_section(DATA)
        jobs.append({"id": "smash-cubin", "action": "load", "args": [_write(d, "smash.ncu-rep", smashed)]})
    return jobs


@pytest.fixture(scope="module")
def ncu_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Default mode: structure check in this process, ncu_report in its reader process."""
    pytest.importorskip("ncu_report")
    if not DATA:
        pytest.skip(f"{NCU_REP} missing")
    d = tmp_path_factory.mktemp("ncu-damage")
    return run_cases(_ncu_jobs(d, flips=True), env=child_env(KPROF_NCU_ISOLATE="1"))


@pytest.fixture(scope="module")
def ncu_outcomes_in_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """KPROF_NCU_ISOLATE=0: only the structure check stands between a cut file and the native module."""
    pytest.importorskip("ncu_report")
    if not DATA:
        pytest.skip(f"{NCU_REP} missing")
    d = tmp_path_factory.mktemp("ncu-cuts")
    return run_cases(_ncu_jobs(d, flips=False), env=child_env(KPROF_NCU_ISOLATE="0"))


def _survived(r: dict[str, Any]) -> None:
    assert r["status"] == "done", (
        f"the process {r['status']}ed (exit {r.get('rc')}): {r.get('stderr_tail', '')[-1200:]}"
    )
    assert r["lib"] == "ok" or r["lib"] in KPROF_ERRORS, (
        f"{r['lib']}: {r.get('lib_msg')}\n{r.get('lib_tb', '')}"
    )
    assert "\n" not in r.get("lib_msg", ""), r["lib_msg"]
    assert r["lib_stderr"] == "", f"printed on stderr while loading: {r['lib_stderr'][:500]}"


@pytest.mark.parametrize("n", CUTS)
@pytest.mark.parametrize("mode", ["isolated", "in-process"])
def test_cut_report_is_an_input_error(n: int, mode: str, request: pytest.FixtureRequest) -> None:
    out = request.getfixturevalue("ncu_outcomes" if mode == "isolated" else "ncu_outcomes_in_process")
    r = out[f"cut@{n}"]
    _survived(r)
    if r["lib"] == "ok":
        # a cut exactly between two blocks after the last result drops only blocks kprof does not read
        # (measured: the same launches, metrics, rules and SASS): loading is right, partial data is not
        assert r["digest"] == out["intact"]["digest"], (
            f"a report cut at byte {n} of {len(DATA)} loaded partial data"
        )
        return
    assert r["lib"] == "KprofInputError", r
    assert "truncated" in r["lib_msg"] or "no profiled ranges" in r["lib_msg"], r["lib_msg"]


@pytest.mark.parametrize("n", RANDOM_SIZES)
@pytest.mark.parametrize("mode", ["isolated", "in-process"])
def test_random_bytes_behind_the_signature(n: int, mode: str, request: pytest.FixtureRequest) -> None:
    out = request.getfixturevalue("ncu_outcomes" if mode == "isolated" else "ncu_outcomes_in_process")
    r = out[f"random{n}"]
    _survived(r)
    assert r["lib"] == "KprofInputError"


@pytest.mark.parametrize("off", FLIPS)
def test_flipped_byte_never_crashes(off: int, ncu_outcomes: dict[str, dict[str, Any]]) -> None:
    _survived(ncu_outcomes[f"flip@{off}"])


def test_intact_report_loads_in_both_modes(
    ncu_outcomes: dict[str, dict[str, Any]], ncu_outcomes_in_process: dict[str, dict[str, Any]]
) -> None:
    assert ncu_outcomes["intact"]["lib"] == "ok" and ncu_outcomes_in_process["intact"]["lib"] == "ok"
    assert ncu_outcomes["intact"]["digest"] == ncu_outcomes_in_process["intact"]["digest"]


def test_smashed_cubin_crash_is_an_input_error(ncu_outcomes: dict[str, dict[str, Any]]) -> None:
    """64 bytes smashed in the embedded cubin crashed ncu_report (SIGSEGV in sass_by_pc): in its reader
    process, so this process reports it in one line and carries on."""
    r = ncu_outcomes["smash-cubin"]
    _survived(r)
    assert r["lib"] == "KprofInputError", r
    assert "ncu_report" in r["lib_msg"], r["lib_msg"]


# ----------------------------------------------------------------------------- the reader process


@pytest.fixture()
def fresh_reader(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    pytest.importorskip("ncu_report")
    from kprof.io import ncu

    monkeypatch.setenv("KPROF_NCU_ISOLATE", "1")
    monkeypatch.setattr(ncu, "_READER", None)
    yield ncu
    if ncu._READER is not None:
        ncu._READER.stop()


def test_reader_survives_a_crash_and_serves_the_next_load(fresh_reader, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """In this very process: the crash happens in the reader, which is replaced for the next load."""
    from kprof.errors import KprofInputError

    bad = tmp_path / "smashed.ncu-rep"
    bad.write_bytes(smash_cubin_section(DATA))
    with pytest.raises(KprofInputError, match=r"crashed \(SIGSEGV\) in NVIDIA's ncu_report module") as ei:
        fresh_reader.load_ncu_report(bad)
    assert "\n" not in str(ei.value) and f"kprof diagnose {tmp_path / 'smashed.csv'}" in str(ei.value)
    prof = fresh_reader.load_ncu_report(plain_ncu_rep(tmp_path / "k.ncu-rep"))
    assert prof[0].name and len(prof[0].metrics) > 1000


def test_reader_that_left_idle_is_restarted(
    fresh_reader, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import time

    rep = plain_ncu_rep(tmp_path / "k.ncu-rep")
    monkeypatch.setattr(fresh_reader, "WORKER_IDLE_S", 0.5)
    first = fresh_reader.load_ncu_report(rep)
    proc = fresh_reader._READER.proc
    time.sleep(1.5)
    assert proc.poll() == 0  # it left on its own
    again = fresh_reader.load_ncu_report(rep)
    assert again[0].metrics == first[0].metrics


def test_reader_results_equal_in_process_results(
    fresh_reader, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    rep = plain_ncu_rep(tmp_path / "k.ncu-rep")
    isolated = fresh_reader.load_ncu_report(rep)
    monkeypatch.setenv("KPROF_NCU_ISOLATE", "0")
    local = fresh_reader.load_ncu_report(rep)
    assert isolated == local
    assert type(isolated[0].metrics) is type(local[0].metrics)  # read-only mappings stay read-only
