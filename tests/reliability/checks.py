"""Helpers shared by the bad-input and truncation tests: build cases, run them in the child runner,
and check one outcome against the contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kprof.errors import printable
from tests.reliability.inputs import Case
from tests.reliability.runner import KPROF_ERRORS, child_env, run_cases


def case_params(cases: list[Case], xfail: dict[str, str]) -> list[Any]:
    return [
        pytest.param(
            c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=xfail[c.id])] if c.id in xfail else []
        )
        for c in cases
    ]


def build_and_run(cases: list[Case], root: Path, action: str = "diagnose", **env: str) -> dict[str, Any]:
    """Build every case under ``root`` and run it in the child runner: ``id -> (path, outcome)``."""
    jobs, paths = [], {}
    for i, c in enumerate(cases):
        d = root / f"c{i:03d}"
        d.mkdir(parents=True)
        p = c.build(d)
        paths[c.id] = str(p)
        jobs.append({"id": c.id, "action": action, "args": [str(p)]})
    res = run_cases(jobs, env=child_env(KPROF_CACHE_DIR=str(root / "cache"), **env))
    return {cid: (paths[cid], res[cid]) for cid in paths}


def check_outcome(case: Case, path: str, r: dict[str, Any]) -> None:
    """The contract, for one input: see the module docstring."""
    assert r["status"] == "done", (
        f"{case.what}: the Python process {r['status']}ed (exit status {r.get('rc')})\n{r.get('stderr_tail', '')[-1500:]}"
    )
    assert "escaped" not in r, f"{case.what}: an exception escaped kprof.cli.main:\n{r.get('traceback')}"
    lib, rc = r["lib"], r["rc"]
    assert lib == "ok" or lib in KPROF_ERRORS, (
        f"{case.what}: the library raised {lib}: {r.get('lib_msg')}\n{r.get('lib_tb', '')}"
    )
    assert "Traceback" not in r["stderr"] + r["lib_stderr"], r["stderr"]
    err = [ln for ln in r["stderr"].splitlines() if ln.strip()]
    if case.expect == "ok":
        assert rc == 0 and lib == "ok", f"{case.what}: exit {rc}: {err}"
    elif case.expect == "bad":
        assert rc == 2 and lib != "ok", f"{case.what}: exit {rc} ({lib}): {r['stdout'][:300]} {err}"
    else:
        assert rc in (0, 2), f"{case.what}: exit {rc}: {err}"
    if rc == 2:
        assert len(err) == 1, f"{case.what}: {len(err)} lines on stderr: {err}"
        assert err[0].startswith("kprof: error: "), err[0]
        assert printable(path) in err[0], f"the message does not name the file: {err[0]}"
        assert r["stdout"] == ""
    else:
        assert r["stdout"].strip(), "exit 0 with nothing printed"
    assert (lib == "ok") == (rc == 0), f"library ({lib}) and command line (exit {rc}) disagree"
