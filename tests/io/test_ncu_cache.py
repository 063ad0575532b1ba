"""The cache of read ``.ncu-rep`` reports (kprof/io/ncu_cache.py): a cached read equals a fresh one, and
the cache never hands back something it should not (another report's read, another reader's, a damaged
or foreign entry)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

pytest.importorskip("ncu_report")

from kprof.io import ncu, ncu_cache

# Every sample report (stored gzip-compressed, NAME.ncu-rep.gz); the tests below use one as a plain .ncu-rep.
REPORTS = sorted((SAMPLES / "ncu").glob("*.ncu-rep")) + sorted((SAMPLES / "ncu").glob("*.ncu-rep.gz"))


@pytest.fixture()
def small(plain_ncu: Callable[[str], Path]) -> Path:
    """A plain .ncu-rep (the atomic_contention sample, decompressed)."""
    return plain_ncu("atomic_contention")


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("KPROF_CACHE", "1")
    monkeypatch.setenv("KPROF_CACHE_DIR", str(d))
    return d / "ncu"


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reports that reached ncu_report (the reader), in order."""
    seen: list[str] = []
    real = ncu._load_in_child

    def counting(p: str, printed: list[str] | None = None):  # type: ignore[no-untyped-def]
        seen.append(p)
        return real(p, printed)

    monkeypatch.setattr(ncu, "_load_in_child", counting)
    monkeypatch.setenv("KPROF_NCU_ISOLATE", "1")
    return seen


def _entries(d: Path) -> list[Path]:
    return sorted(d.glob("*.pickle")) if d.is_dir() else []


@pytest.mark.skipif(not REPORTS, reason=f"no .ncu-rep samples in {SAMPLES / 'ncu'}")
def test_every_sample_report_reads_back_equal_and_diagnoses_the_same(cache: Path, reads: list[str]) -> None:
    import kprof

    for rep in REPORTS:
        fresh = kprof.load(rep)
        n = len(reads)
        again = kprof.load(rep)
        assert len(reads) == n, f"{rep.name}: the second load went to ncu_report again"
        assert again == fresh, rep.name
        assert again.source == fresh.source == str(rep)
        assert [d.to_dict() for d in kprof.diagnose(again)] == [d.to_dict() for d in kprof.diagnose(fresh)]
    assert len(_entries(cache)) == len(REPORTS)  # one entry per report (.gz: its decompressed bytes)


def test_the_key_is_the_bytes_not_the_name(
    cache: Path, reads: list[str], tmp_path: Path, small: Path
) -> None:
    import kprof

    first = kprof.load(small)
    copy = tmp_path / "renamed.ncu-rep"
    shutil.copyfile(small, copy)
    n = len(reads)
    second = kprof.load(copy)
    assert len(reads) == n and second.source == str(copy) and second.launches == first.launches
    changed = bytearray(small.read_bytes())
    changed[-1] ^= 0xFF
    other = tmp_path / "changed.ncu-rep"
    other.write_bytes(bytes(changed))
    assert ncu_cache.entry_path(other) != ncu_cache.entry_path(small)


def test_another_reader_never_reuses_the_entry(
    cache: Path, monkeypatch: pytest.MonkeyPatch, small: Path
) -> None:
    before = ncu_cache.entry_path(small)
    monkeypatch.setattr(ncu_cache, "_READER_DIGEST", None)
    monkeypatch.setattr(ncu_cache, "FORMAT", ncu_cache.FORMAT + 1)
    assert ncu_cache.entry_path(small) != before
    monkeypatch.setattr(ncu_cache, "_READER_DIGEST", "a reader whose code changed")
    assert ncu_cache.entry_path(small) != before


def test_a_damaged_entry_is_removed_and_the_report_read_again(
    cache: Path, reads: list[str], small: Path
) -> None:
    import kprof

    good = kprof.load(small)
    (entry,) = _entries(cache)
    entry.write_bytes(entry.read_bytes()[:1000])  # cut short, as a full disk leaves it
    n = len(reads)
    assert kprof.load(small) == good
    assert len(reads) == n + 1
    assert ncu_cache.get(entry, str(small)) == good  # written again, whole


def test_an_entry_others_could_write_is_not_trusted(cache: Path, reads: list[str], small: Path) -> None:
    import kprof

    kprof.load(small)
    (entry,) = _entries(cache)
    entry.chmod(0o666)
    n = len(reads)
    kprof.load(small)
    assert len(reads) == n + 1
    cache.chmod(0o777)  # a shared folder: not used at all
    entry.unlink()
    kprof.load(small)
    assert len(reads) == n + 2 and not _entries(cache)


def test_a_folder_that_cannot_be_used_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: list[str], small: Path
) -> None:
    import kprof

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("KPROF_CACHE", "1")
    monkeypatch.setenv("KPROF_CACHE_DIR", str(blocker))
    assert kprof.load(small)[0].metrics
    assert kprof.load(small)[0].metrics
    assert len(reads) == 2 and blocker.read_text().startswith("a file")


def test_off_means_nothing_is_read_or_written(
    cache: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch, small: Path
) -> None:
    import kprof

    monkeypatch.setenv("KPROF_CACHE", "0")
    kprof.load(small)
    kprof.load(small)
    assert len(reads) == 2 and not cache.exists()


def test_a_read_on_which_ncu_report_spoke_is_not_kept(
    cache: Path, monkeypatch: pytest.MonkeyPatch, small: Path
) -> None:
    import kprof

    real = ncu._load_in_child

    def speaking(p: str, printed: list[str] | None = None):  # type: ignore[no-untyped-def]
        prof = real(p, printed)
        if printed is not None:
            printed.append("==WARNING== something a later read would not repeat")
        return prof

    monkeypatch.setattr(ncu, "_load_in_child", speaking)
    monkeypatch.setenv("KPROF_NCU_ISOLATE", "1")
    kprof.load(small)
    assert not _entries(cache)


def test_the_folder_is_kept_under_its_size_cap_least_recently_used_first(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.mkdir(parents=True, mode=0o700)
    now = time.time()
    for i, age in enumerate((300, 200, 100)):  # 1 MiB each, the first the least recently used
        p = cache / f"{i:040d}.pickle"
        p.write_bytes(b"\0" * 2**20)
        os.utime(p, (now - age, now - age))
    stale_tmp = cache / ".tmp-killed-writer"
    stale_tmp.write_bytes(b"half")
    os.utime(stale_tmp, (now - 7200, now - 7200))
    monkeypatch.setenv("KPROF_CACHE_MAX_MB", "2.5")
    ncu_cache._trim(cache)
    assert [int(p.stem) for p in _entries(cache)] == [1, 2]  # 3 MiB over a 2.5 MiB cap: the oldest went
    assert not stale_tmp.exists()


def test_the_command_line_says_the_same_from_the_cache(tmp_path: Path, small: Path) -> None:
    env = dict(os.environ, KPROF_CACHE="1", KPROF_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])

    def diagnose() -> dict:
        r = subprocess.run(
            [sys.executable, "-m", "kprof", "diagnose", "--json", str(small)],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    cold = diagnose()
    assert len(_entries(tmp_path / "cache" / "ncu")) == 1
    assert diagnose() == cold


def test_no_home_folder_falls_back_to_a_private_temporary_cache(
    monkeypatch: pytest.MonkeyPatch, reads: list[str], small: Path, tmp_path: Path
) -> None:
    """HOME unset in a bare container: Path.home() raises; the cache goes to a per-user folder in the temporary
    directory instead of failing the run."""
    import tempfile

    import kprof

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("KPROF_CACHE", "1")
    monkeypatch.delenv("KPROF_CACHE_DIR", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert kprof.load(small)[0].metrics and len(reads) == 1
    assert len(list(tmp_path.glob("kprof-cache-*/ncu/*.pickle"))) == 1
