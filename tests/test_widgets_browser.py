"""The templates' live widgets, proven in a browser: JupyterLab (with the ipywidgets manager) in headless
Debian Chromium, driven by Playwright.

A copy of the kernel template (``kprof notebook kernel``) is filled with two sample reports and run
in JupyterLab; the kernel picker's dropdown must render with one option per launch, show the first
launch's diagnosis, and show the second launch's diagnosis and SpeedOfLight chart once the second
option is picked. Nothing else can check this: the widget view exists only between a live kernel and
the JupyterLab widget manager in the page.

Skips without Chromium or Playwright, unless ``KPROF_REQUIRE_CHROMIUM=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from . import browser
from .conftest import SAMPLES

pytestmark = pytest.mark.slow

REPORTS = [SAMPLES / "ncu" / "small_grid.ncu-rep.gz", SAMPLES / "ncu" / "shared_bank_conflicts.ncu-rep.gz"]
TOKEN = "kprof-browser-test"
# Playwright adds its own headless switch; the page may reach this machine's JupyterLab and nothing else
FLAGS = [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" if f.startswith("--host-resolver-rules") else f
    for f in browser.FLAGS
    if f != "--headless"
]


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("KPROF_REQUIRE_CHROMIUM"):
            pytest.fail("playwright is required (KPROF_REQUIRE_CHROMIUM is set): pip install -e '.[dev]'")
        pytest.skip("playwright not installed (pip install -e '.[dev]')")
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path: Path):
    """A JupyterLab server on a free local port, its state kept in ``tmp_path``; yields (url, folder)."""
    port = _free_port()
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
    )
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "lab.log"
    argv = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={work}",
        "--expose-app-in-browser", "--LabApp.extension_manager=readonly",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # CI runs as root
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert proc.poll() is None, f"jupyter lab exited: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"jupyter lab did not answer: {log.read_text()[-3000:]}"
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", work
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _filled_kernel_notebook(folder: Path) -> Path:
    r = subprocess.run(
        [sys.executable, "-m", "kprof", "notebook", "kernel", "-o", str(folder)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    path = folder / "02_kernel.ipynb"
    nb = nbformat.read(path, as_version=4)
    (params,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    params.source += (
        f"\nkernel_paths = {[str(p) for p in REPORTS]!r}\ninteractive = True\n"  # as a user fills it
    )
    nbformat.write(nb, path)
    return path


def test_kernel_picker_dropdown_renders_and_changes_the_view(lab, tmp_path):
    if not all(p.exists() for p in REPORTS):
        pytest.skip("no ncu samples")
    exe = browser.chromium()
    sync_playwright = _playwright()
    import kprof

    expected = [d for p in REPORTS for d in kprof.diagnose(str(p))]
    expected.sort(
        key=lambda d: {"fix": 0, "inconclusive": 1, "healthy": 2}[d.verdict.value]
    )  # as the template
    url, work = lab
    nb = _filled_kernel_notebook(work)
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=exe, headless=True, args=FLAGS
        )
        try:
            page = ctx.new_page()
            page.set_default_timeout(180_000)
            page.goto(f"{url}/lab/tree/{nb.name}?token={TOKEN}")
            page.wait_for_function(
                "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
                " return w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel; }"
            )
            page.evaluate(
                "async () => { await window.jupyterapp.shell.currentWidget.sessionContext.ready;"
                " await window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
            )
            select = page.locator(".widget-dropdown select")
            select.wait_for()
            options = [" ".join(t.split()) for t in select.locator("option").all_inner_texts()]
            assert len(options) == len(expected)
            for text, d in zip(options, expected, strict=True):
                assert text.startswith(f"[{d.verdict.value}] {d.bottleneck.value if d.bottleneck else ''}")

            headline = ".widget-output .kp-headline"
            chart = ".widget-output img, .widget-output .jp-RenderedImage img"
            page.wait_for_function(
                f"() => document.querySelector('{headline}') && document.querySelector('{chart}')"
            )
            first = page.locator(headline).first.inner_text()
            first_chart = page.locator(chart).first.get_attribute("src")
            assert " ".join(first.split()) == " ".join(expected[0].headline.split())

            select.select_option(index=1)  # the user picks the second launch
            page.wait_for_function(
                f"(h) => {{ const e = document.querySelector('{headline}'); return e && e.innerText !== h"
                f" && document.querySelector('{chart}'); }}",
                arg=first,
            )
            second = page.locator(headline).first.inner_text()
            assert " ".join(second.split()) == " ".join(expected[1].headline.split())
            assert page.locator(headline).count() == 1  # the view was replaced, not appended to
            assert page.locator(chart).first.get_attribute("src") != first_chart  # its chart too
        finally:
            ctx.close()
