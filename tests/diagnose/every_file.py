"""Every profile we have, each loaded and diagnosed once per test session.

The files are those ``benchmarks/snapshot.py`` snapshots: the shipped samples (data/samples), the validation
galleries (data/validation, its workloads left out) and the third-party corpus (../shared/corpus, when it is
there). :func:`diagnosed` loads a file and diagnoses it as ``kprof diagnose`` does (``kprof.api.diagnose`` of
the loaded object: kernel reports through the kernel rules, timelines through the timeline rules and the
critical-path notes); it is cached, so the invariant modules (test_invariants, test_numbers_agree) share one
diagnosis of each file per session.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kprof.errors import KprofInputError
from kprof.model import Diagnosis
from tests.conftest import CORPUS, REPO

SUFFIXES = (".ncu-rep", ".ncu-rep.gz", ".sqlite", ".sqlite.gz", ".json.gz", ".csv", ".csv.gz", ".json")
SKIP_NAMES = {"labels.json", "manifest.json", "versions.json", "package.json"}
ROOTS = (REPO / "data" / "samples", REPO / "data" / "validation", CORPUS)


def _profiles() -> list[Path]:
    out: list[Path] = []
    for root in ROOTS:
        if root.is_dir():
            out += [
                p
                for p in sorted(root.rglob("*"))
                if p.is_file()
                and p.name not in SKIP_NAMES
                and "workloads" not in p.parts
                and p.name.endswith(SUFFIXES)
            ]
    return out


def _id(p: Path) -> str:
    try:
        return str(p.relative_to(REPO / "data"))
    except ValueError:
        return "corpus/" + str(p.relative_to(CORPUS))


PROFILES: list[tuple[str, Path]] = [(_id(p), p) for p in _profiles()]
"""(test id, path) of every profile; empty when neither the samples nor the corpus are there."""


@cache
def diagnosed(path: Path) -> tuple[object, tuple[Diagnosis, ...]] | str:
    """(the loaded profile, its diagnoses), or the one-line reason a bad input is refused."""
    from kprof.api import diagnose
    from kprof.io import load

    try:
        obj = load(path)
    except KprofInputError as exc:
        return str(exc)
    return obj, tuple(diagnose(obj))


def diagnosed_or_skip(path: Path) -> tuple[object, tuple[Diagnosis, ...]]:
    """:func:`diagnosed`, skipping the test for a file kprof refuses as bad input (those are the validity checks'
    to judge) or whose reader is not installed."""
    if ".ncu-rep" in path.name:
        pytest.importorskip("ncu_report")
    got = diagnosed(path)
    if isinstance(got, str):
        pytest.skip(f"refused as bad input: {got}")
    return got
