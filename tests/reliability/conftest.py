"""Fixtures of the reliability suite: input hashes around the whole suite, the crafted profiles,
and the parallel ``kprof report`` runs that test_atomic_outputs and test_security both read."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.crafted import hostile_kineto_trace
from tests.reliability.inputs import CORPUS, NSYS_SQLITE, SAMPLES
from tests.reliability.runner import REPO, child_env

REPORT_TIMEOUT_S = 300


def input_files() -> list[Path]:
    """Every file under data/samples and the third-party corpus."""
    roots = [SAMPLES] + ([CORPUS] if CORPUS.is_dir() else [])
    return sorted(p for r in roots for p in r.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def fingerprint(paths: list[Path]) -> dict[str, tuple[str, int, int]]:
    """``path -> (sha256, size, mtime_ns)``: a changed byte, length or modification time shows."""
    out = {}
    for p in paths:
        st = p.stat()
        out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns)
    return out


def listing(*dirs: Path) -> set[str]:
    return {str(p) for d in dirs if d.is_dir() for p in d.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="session", autouse=True)
def inputs_untouched_by_the_suite() -> Iterator[None]:
    """No test of this suite may change, add or remove a file among the inputs (checked at teardown)."""
    files = input_files()
    before = fingerprint(files)
    names = listing(SAMPLES, CORPUS)
    yield
    after = fingerprint([Path(p) for p in before if Path(p).exists()])
    changed = sorted(p for p in before if after.get(p) != before[p])
    added = sorted(listing(SAMPLES, CORPUS) - names)
    assert not changed and not added, f"inputs modified: {changed[:5]}, files added beside them: {added[:5]}"


@pytest.fixture(scope="session")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose name holds quotes, spaces and shell syntax, with the crafted profiles in it."""
    d = tmp_path_factory.mktemp("hostile") / "in $(touch PWNED) 'q' \"dq\" `x`; ls"
    d.mkdir()
    return d


@pytest.fixture(scope="session")
def hostile_trace(hostile_dir: Path) -> Path:
    return hostile_kineto_trace(hostile_dir / "trace <b>x<i>.json")


@pytest.fixture(scope="session")
def parallel_reports(hostile_trace: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Three ``kprof report`` runs at once on the same hostile trace: two to one output, one to another."""
    out = tmp_path_factory.mktemp("reports")
    same, other = out / "same.html", out / "other.html"
    env = child_env()
    env.pop("KPROF_NCU_ISOLATE", None)
    procs = []
    for target in (same, same, other):
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "kprof", "report", str(hostile_trace), "-o", str(target)],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        )
    t0 = time.monotonic()
    results = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1.0, REPORT_TIMEOUT_S - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            o, e = p.communicate()
        results.append((p.returncode, o.decode(errors="replace"), e.decode(errors="replace")))
    return {"same": same, "other": other, "dir": out, "runs": results, "input": hostile_trace}


# ----------------------------------------------------------------------------- a stand-in for nsys

_FAKE_NSYS = textwrap.dedent(
    """\
    #!{python}
    # Stand-in for `nsys export --type sqlite --force-overwrite true -o OUT REP` (tests only).
    import os, sys, time
    args = sys.argv[1:]
    out = args[args.index("-o") + 1]
    data = open({sample!r}, "rb").read()
    mode = os.environ.get("FAKE_NSYS_MODE", "ok")
    with open(out, "wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
        if mode == "fail":
            print("ERROR: Database export failed: disk I/O error", file=sys.stderr)
            sys.exit(1)
        if mode in ("hang", "slow"):
            open(out + ".started", "w").close()
            time.sleep(3600 if mode == "hang" else 2)
        f.write(data[len(data) // 2 :])
    """
)


@pytest.fixture()
def fake_nsys(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "nsys"
    exe.write_text(_FAKE_NSYS.format(python=sys.executable, sample=str(NSYS_SQLITE)))
    exe.chmod(0o755)
    cache = tmp_path / "cache"
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "KPROF_CACHE_DIR": str(cache)}
