"""Headless Chromium for the tests (Debian's ``chromium`` package; no Python dependency).

Tests skip when it is absent, unless ``KPROF_REQUIRE_CHROMIUM=1`` (set by CI) makes that a failure.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: nothing can be fetched
)  # fmt: skip


def chromium() -> str:
    """The browser's executable, or skip (fail under ``KPROF_REQUIRE_CHROMIUM``)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    if os.environ.get("KPROF_REQUIRE_CHROMIUM"):
        pytest.fail("chromium is required (KPROF_REQUIRE_CHROMIUM is set) but not on PATH")
    pytest.skip("chromium not installed (apt-get install chromium); the browser tests need it")


def run(exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a fresh profile in ``tmp``."""
    cmd = [exe, *FLAGS, f"--user-data-dir={tmp / 'chromium-profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def probe(
    exe: str, tmp: Path, page: str, script: str, name: str = "probe.html", window: str | None = None
) -> dict:
    """Open ``page`` (HTML text) with ``script`` appended; the script must store a JSON-able
    result with ``kpProbe(result)`` (it runs a second after load, images decoded). ``window``
    (``"1280,1000"``) sets the viewport, as a screenshot of that size sees the page."""
    runner = (
        "<script>function kpProbe(r) { const p = document.createElement('pre'); p.id = 'kp-probe';"
        " p.textContent = JSON.stringify(r); document.body.appendChild(p); }\n"
        f"setTimeout(() => {{ {script} }}, 1000);</script>"
    )
    f = tmp / name
    f.write_text(page.replace("</body>", runner + "</body>") if "</body>" in page else page + runner, "utf-8")
    size = [f"--window-size={window}"] if window else []
    r = run(exe, tmp, *size, "--virtual-time-budget=20000", "--dump-dom", f.as_uri())
    m = re.search(r'<pre id="kp-probe">(.*?)</pre>', r.stdout, re.S)
    assert m, f"chromium printed no probe result (rc={r.returncode}): {r.stderr[-2000:]}"
    return json.loads(htmllib.unescape(m.group(1)))
