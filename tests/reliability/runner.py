"""Run kprof on many inputs in a child process, so that a crash or a hang fails one case, not pytest.

:func:`run_cases` starts ``python -m tests.reliability.runner`` on a list of jobs. The child runs
them one after another and logs a ``start`` and a ``done`` line per job; when it dies (a segfault
in a native module) or a job outlives its timeout, the parent records that job as ``crash`` or
``hang`` and starts a new child for the jobs left. One interpreter start-up serves many jobs.

Per job the child records what the library does (``kprof.diagnose`` or ``kprof.io.load``: ``ok`` or
the exception's type and message) and what the command line does (``kprof.cli.main``, with the
file descriptors 1 and 2 captured, so native libraries' output is seen too): exit status, stdout,
stderr, and any exception that escaped ``main`` (a traceback for a user).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CASE_TIMEOUT_S = 60.0
KPROF_ERRORS = ("KprofError", "KprofInputError", "MissingToolError")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child kprof: no debug tracebacks, a private export cache, no display."""
    env = {k: v for k, v in os.environ.items() if k != "KPROF_DEBUG"}
    env["MPLBACKEND"] = "Agg"
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def run_cases(
    jobs: list[dict[str, Any]], *, timeout_s: float = CASE_TIMEOUT_S, env: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Run ``jobs`` (``{"id", "action": "diagnose"|"load", "args": [path, ...]}``) in child processes.

    Returns ``id -> outcome``; ``outcome["status"]`` is ``done``, ``crash`` (the child died in the
    job: ``rc`` is its exit status, negative for a signal) or ``hang`` (killed after ``timeout_s``).
    """
    results: dict[str, dict[str, Any]] = {}
    pending = list(jobs)
    with tempfile.TemporaryDirectory(prefix="kprof-runner-") as tmp:
        attempt = 0
        while pending:
            attempt += 1
            spec = Path(tmp) / f"jobs{attempt}.json"
            spec.write_text(json.dumps(pending))
            log = Path(tmp) / f"log{attempt}.jsonl"
            log.write_text("")
            err = Path(tmp) / f"stderr{attempt}.txt"
            with open(err, "wb") as ef:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "tests.reliability.runner", str(spec), str(log)],
                    cwd=REPO,
                    env=env or child_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=ef,
                    stderr=ef,
                    start_new_session=True,  # a hang is killed with its children (ncu_report's reader)
                )
                current: tuple[str, float] | None = None
                hung: str | None = None
                seen = 0
                while True:
                    events = _events(log)
                    for ev in events[seen:]:
                        current = (ev["id"], time.monotonic()) if ev["event"] == "start" else None
                    seen = len(events)
                    if proc.poll() is not None:
                        break
                    if current is not None and time.monotonic() - current[1] > timeout_s:
                        hung = current[0]
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                        break
                    time.sleep(0.02)
            # a job that started and did not finish crashed the child (or hung)
            events = _events(log)
            done = {ev["id"] for ev in events if ev["event"] == "done"}
            for ev in events:
                if ev["event"] == "done":
                    results[ev["id"]] = {"status": "done", **ev}
            tail = err.read_text(errors="replace")[-3000:]
            for ev in events:
                i = ev["id"]
                if ev["event"] != "start" or i in done:
                    continue
                if i == hung:
                    results[i] = {"status": "hang", "id": i, "timeout_s": timeout_s, "stderr_tail": tail}
                else:
                    results[i] = {"status": "crash", "id": i, "rc": proc.returncode, "stderr_tail": tail}
            before = len(pending)
            pending = [j for j in pending if j["id"] not in results]
            if len(pending) == before:  # the child died before its first job: do not loop forever
                for j in pending:
                    results[j["id"]] = {
                        "status": "crash",
                        "id": j["id"],
                        "rc": proc.returncode,
                        "stderr_tail": tail,
                    }
                pending = []
    return results


def _events(log: Path) -> list[dict[str, Any]]:
    """The complete lines of the child's log (a line being written is left for the next read)."""
    text = log.read_text(encoding="utf-8")
    return [json.loads(x) for x in text.split("\n")[:-1] if x]


# ----------------------------------------------------------------------------- the child


@contextlib.contextmanager
def captured_fds() -> Iterator[dict[str, str]]:
    """Capture file descriptors 1 and 2 (Python's and native code's output alike)."""
    box: dict[str, str] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        os.dup2(o.fileno(), 1)
        os.dup2(e.fileno(), 2)
        try:
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            o.seek(0)
            e.seek(0)
            box["stdout"] = o.read().decode("utf-8", "replace")
            box["stderr"] = e.read().decode("utf-8", "replace")


def digest(obj: Any) -> str:
    """A fingerprint of what was loaded (or diagnosed), to compare a damaged copy with the intact file."""
    import hashlib

    from kprof.kernel_model import KernelProfile

    if isinstance(obj, KernelProfile):
        parts = [
            (
                k.name,
                sorted((n, repr(m)) for n, m in k.metrics.items()),
                [repr(r) for r in k.rules],
                len(k.sass),
            )
            for k in obj.launches
        ]
    elif isinstance(obj, list):  # diagnoses
        parts = [d.to_dict() | {"file": ""} for d in obj]
    else:
        parts = [obj.kernel_count if hasattr(obj, "kernel_count") else repr(obj)]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _library(action: str, path: str) -> dict[str, Any]:
    import kprof
    from kprof.io import load

    t0 = time.perf_counter()
    try:
        with captured_fds() as out:
            obj = load(path) if action == "load" else kprof.diagnose(path)
    except Exception as exc:  # recording what escaped is the point
        res: dict[str, Any] = {"lib": type(exc).__name__, "lib_msg": str(exc)}
        if type(exc).__name__ not in KPROF_ERRORS:
            res["lib_tb"] = traceback.format_exc()
    else:
        res = {"lib": "ok", "digest": digest(obj)}
    res["lib_stderr"] = out.get("stderr", "")
    res["lib_s"] = round(time.perf_counter() - t0, 3)
    return res


def _cli(argv: list[str]) -> dict[str, Any]:
    from kprof import cli

    res: dict[str, Any] = {}
    t0 = time.perf_counter()
    with captured_fds() as out:
        try:
            res["rc"] = int(cli.main(argv))
        except SystemExit as exc:
            res["rc"] = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # an exception out of main is a traceback for a user
            res["rc"] = 1
            res["escaped"] = f"{type(exc).__name__}: {exc}"
            res["traceback"] = traceback.format_exc()
    res["stdout"] = out["stdout"]
    res["stderr"] = out["stderr"]
    res["cli_s"] = round(time.perf_counter() - t0, 3)
    return res


def _run_job(job: dict[str, Any]) -> dict[str, Any]:
    action = job.get("action", "diagnose")
    args = [str(a) for a in job["args"]]
    res: dict[str, Any] = {}
    if action in ("diagnose", "load"):
        res.update(_library(action, args[0]))
    if action in ("diagnose", "cli"):
        res.update(_cli(["diagnose", *args] if action == "diagnose" else args))
    return res


def main(spec: str, log: str) -> int:
    jobs = json.loads(Path(spec).read_text())
    import kprof  # noqa: F401 - import once, before the first job's clock starts

    with open(log, "a", encoding="utf-8") as out:
        for job in jobs:
            out.write(json.dumps({"id": job["id"], "event": "start"}) + "\n")
            out.flush()
            res = _run_job(job)
            out.write(json.dumps({"id": job["id"], "event": "done", **res}) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
