"""``import kprof`` and ``kprof diagnose REPORT.ncu-rep`` load only what they need (issue 16, point 5).

numpy had arrived through ``kprof/__init__`` -> ``diagnose.compare``, multiprocessing through
``jobs``, jinja2 through the text repr; a kernel report's diagnosis needs none of them. Each check
runs in a fresh interpreter, so what an earlier test imported does not count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, SAMPLES

HEAVY = (
    "numpy",
    "pandas",
    "matplotlib",
    "jinja2",
    "multiprocessing",
    "sqlite3",
    "concurrent.futures",
    "dask",
)


def _imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=REPO, timeout=300
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _heavy(mods: list[str]) -> list[str]:
    return [h for h in HEAVY if h in mods]


def test_import_kprof_loads_no_heavy_dependency() -> None:
    mods = _imported_after("import kprof, kprof.cli")
    assert _heavy(mods) == []
    assert "kprof.jobs" not in mods and "kprof.html" not in mods and "kprof.diagnose.compare" not in mods


def test_the_lazy_names_still_resolve() -> None:
    mods = _imported_after("import kprof\nassert callable(kprof.diagnose_job) and callable(kprof.compare)")
    assert "kprof.jobs" in mods  # loaded on first use


def test_a_kernel_report_is_diagnosed_and_printed_without_numpy_or_jinja2() -> None:
    pytest.importorskip("ncu_report")
    report = SAMPLES / "ncu" / "small_grid.ncu-rep.gz"
    if not report.exists():
        pytest.skip(f"{report} missing")
    code = (
        "import contextlib, io\n"
        "from kprof.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert main(['diagnose', {str(report)!r}]) == 0\n"
        "assert '[' in out.getvalue() and 'small_grid' in out.getvalue()\n"
    )
    mods = _imported_after(code)
    assert _heavy(mods) == []
    assert "kprof.diagnose.kernel" in mods and "kprof.timeline_model" not in mods


def test_text_of_a_diagnosis_needs_no_jinja2_but_html_does() -> None:
    code = (
        "from kprof.model import Diagnosis, Subject, Verdict, Confidence\n"
        "d = Diagnosis(subject=Subject(kind='kernel', name='k'), bottleneck=None, verdict=Verdict.INCONCLUSIVE,\n"
        "              headline='h', confidence=Confidence(value=0.5), next_step='capture again')\n"
        "assert 'h' in d.to_text()\n"
        "import sys; assert 'jinja2' not in sys.modules\n"
        "assert '<' in d.to_html()\n"
    )
    assert "jinja2" in _imported_after(code)


def test_the_version_has_one_home() -> None:
    import kprof
    from kprof import _version

    assert kprof.__version__ == _version.__version__
    assert 'path = "kprof/_version.py"' in Path(REPO, "pyproject.toml").read_text()
