"""``kprof explain``: every bottleneck id is explained, with thresholds that exist and that its rule reads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kprof import thresholds as th
from kprof.errors import KprofError
from kprof.explain import explain, known_ids
from kprof.model import Bottleneck

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("bid", [b.value for b in Bottleneck])
def test_every_id_is_explained_by_the_rule_that_gives_it(bid: str) -> None:
    e = explain(bid)
    assert e.meaning and e.when and e.fix, f"kprof/explain.py: fill in {bid}"
    rule = "".join((REPO / p).read_text() for p in (e.rule, *e.also))
    assert f"Bottleneck.{bid.upper()}" in rule or f"B.{bid.upper()}" in rule, f"{e.rule} does not give {bid}"
    for t in e.thresholds:
        assert t.value == getattr(th, t.name)
        assert t.source, f"kprof/thresholds.py: {t.name} has no docstring saying where its value comes from"
        assert f"th.{t.name}" in rule, (
            f"kprof/explain.py lists {t.name} for {bid}, but {e.rule} does not read it"
        )
    # every threshold the text names is one of the listed (quoted with its value and source)
    named = {w for w in re.findall(r"\b[A-Z][A-Z0-9_]{3,}\b", e.when) if hasattr(th, w)}
    assert named <= {t.name for t in e.thresholds}, named - {t.name for t in e.thresholds}


def test_a_threshold_without_its_own_docstring_shares_the_next_one() -> None:
    src = {t.name: t.source for t in explain("shared_bank_conflicts").thresholds}
    assert src["SHARED_BANKS"] == src["SHARED_BANK_BYTES"] and "32 banks" in src["SHARED_BANKS"]


def test_an_unknown_id_lists_the_known_ones() -> None:
    with pytest.raises(KprofError, match=r"unknown bottleneck id 'slow'.*sync_bound"):
        explain("slow")
    assert known_ids()[0] == Bottleneck.HOST_LAUNCH_BOUND.value


def test_cli_json_and_exit_codes() -> None:
    env = {"PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-m", "kprof", "explain", "--json", "gpu_bound", "tail_effect"],
                       capture_output=True, text=True, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["explanations"]
    assert [e["bottleneck"] for e in got] == ["gpu_bound", "tail_effect"]
    assert got[0]["thresholds"][0] == {
        "name": "GPU_BOUND_BUSY_FRACTION",
        "value": th.GPU_BOUND_BUSY_FRACTION,
        "source": explain("gpu_bound").thresholds[0].source,
    }
    bad = subprocess.run(
        [sys.executable, "-m", "kprof", "explain", "nope"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert (
        bad.stderr.startswith("kprof: error: explain: unknown bottleneck id 'nope'")
        and bad.stderr.count("\n") == 1
    )
