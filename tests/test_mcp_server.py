"""``kprof mcp``: the tools over the Model Context Protocol, driven by the SDK's own client.

In process (``mcp.Client(server)``, both the SDK's direct path and its JSON-RPC stream path) and
once through a real ``kprof mcp`` subprocess over stdio. What is checked: an agent's loop
(diagnose -> compare) returns exactly the JSON of ``kprof diagnose --json`` / ``kprof compare
--json``; a bad path and a report that crashes NVIDIA's ``ncu_report`` come back as tool errors
whose text is the command line's own one-line error, and the server serves the next call.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'kprof[mcp]')")

import anyio  # noqa: E402  (after the importorskip)
from mcp import Client, StdioServerParameters  # noqa: E402

from kprof.mcp_server import build_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "samples"
FAKES = REPO / "tests" / "fake_tools"
SYNC = SAMPLES / "timeline" / "sync_bound.sqlite"
BEFORE = SAMPLES / "timeline" / "pair_graph_before.sqlite"
AFTER = SAMPLES / "timeline" / "pair_graph_after.sqlite"
NCU_REP = SAMPLES / "ncu" / "uncoalesced_global_access.ncu-rep.gz"


def needs(*paths: Path) -> None:
    for p in paths:
        if not p.is_file():
            pytest.skip(f"sample {p.relative_to(REPO)} not in data/samples")


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``kprof ARGS`` as a user runs it (a fresh process)."""
    return subprocess.run(
        [sys.executable, "-m", "kprof", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        cwd=cwd,
        timeout=300,
    )


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("kprof: error:")]


def session(fn: Callable[[Client], Awaitable[Any]], mode: str = "auto", server: Any = None) -> Any:
    """Run ``fn(client)`` against a fresh in-process server; ``mode="legacy"`` goes through JSON-RPC streams."""

    async def main() -> Any:
        async with Client(server or build_server(), mode=mode) as client:
            return await fn(client)

    return anyio.run(main)


def text(result: Any) -> list[str]:
    return [c.text for c in result.content]


# ----------------------------------------------------------------------------- the tools
def test_the_server_lists_the_four_tools_with_their_arguments() -> None:
    tools = session(lambda c: c.list_tools()).tools
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"diagnose", "compare", "profile", "explain"}
    assert by_name["diagnose"].input_schema["required"] == ["paths"]
    assert by_name["compare"].input_schema["required"] == ["before", "after"]
    assert set(by_name["profile"].input_schema["properties"]["tool"]["enum"]) == {
        "nsys",
        "ncu",
        "auto",
        "sass",
    }
    assert by_name["explain"].input_schema["required"] == ["bottleneck"]
    assert by_name["diagnose"].annotations.read_only_hint is True
    assert by_name["profile"].annotations.read_only_hint is False


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_agent_diagnoses_then_compares_and_gets_the_cli_json(mode: str) -> None:
    needs(BEFORE, AFTER)

    async def loop(c: Client) -> tuple[Any, Any]:
        d = await c.call_tool("diagnose", {"paths": [str(BEFORE)]})
        cmp = await c.call_tool("compare", {"before": str(BEFORE), "after": str(AFTER)})
        return d, cmp

    d, cmp = session(loop, mode=mode)
    assert not d.is_error and not cmp.is_error
    want_d = json.loads(cli("diagnose", "--json", str(BEFORE)).stdout)
    want_c = json.loads(cli("compare", "--json", str(BEFORE), str(AFTER)).stdout)
    assert d.structured_content == want_d
    assert cmp.structured_content == want_c
    assert (
        json.loads(text(d)[0]) == want_d
    )  # the text block carries the same JSON for clients without structure
    # what the agent reads: the before capture is host_launch_bound, the CUDA-graph version is faster
    assert want_d["diagnoses"][0]["bottleneck"] == "host_launch_bound"
    (c0,) = want_c["comparisons"]
    assert c0["verdict"] == "improved" and c0["speedup"] > 1
    assert c0["expectations"], "the before diagnosis's expectations are checked"


def test_one_path_may_be_a_string_and_gets_the_same_json() -> None:
    """Issue 28: a single string for ``paths`` was refused with the SDK's raw validation text."""
    needs(SYNC)
    one = session(lambda c: c.call_tool("diagnose", {"paths": str(SYNC)}))
    assert not one.is_error, text(one)
    assert one.structured_content == json.loads(cli("diagnose", "--json", str(SYNC)).stdout)


def test_a_bad_path_is_a_tool_error_with_the_cli_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "no_such_capture.sqlite")
    r = session(lambda c: c.call_tool("diagnose", {"paths": [missing]}))
    assert r.is_error
    want = error_lines(cli("diagnose", "--json", missing).stderr)
    assert len(want) == 1 and missing in want[0]
    assert text(r) == want
    assert r.structured_content is None


def test_good_and_bad_paths_give_the_error_lines_and_the_diagnoses_that_worked(tmp_path: Path) -> None:
    needs(SYNC)
    bad = tmp_path / "garbage.sqlite"
    bad.write_bytes(b"not a database at all" * 50)
    r = session(lambda c: c.call_tool("diagnose", {"paths": [str(SYNC), str(bad)]}))
    assert r.is_error
    ran = cli("diagnose", "--json", str(SYNC), str(bad))
    assert ran.returncode == 2
    first, *rest = text(r)
    assert first.splitlines() == error_lines(ran.stderr) and str(bad) in first
    (partial,) = rest
    assert json.loads(partial) == json.loads(ran.stdout)  # the good file's diagnosis is not lost
    assert json.loads(partial)["diagnoses"][0]["bottleneck"] == "sync_bound"


def test_a_path_that_looks_like_an_option_is_a_path(tmp_path: Path) -> None:
    r = session(lambda c: c.call_tool("diagnose", {"paths": ["--help"]}))
    assert r.is_error
    (line,) = text(r)
    assert line.startswith("kprof: error: --help: ")  # read as a file name, not as the help flag


def test_a_report_that_crashes_ncu_report_is_a_tool_error_and_the_server_goes_on(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report", reason="NVIDIA's ncu_report module is not installed")
    needs(NCU_REP)
    from tests.reliability.nvr import smash_cubin_section

    bad = tmp_path / "smashed.ncu-rep"
    bad.write_bytes(smash_cubin_section(gzip.decompress(NCU_REP.read_bytes())))  # the sample is gzipped

    async def calls(c: Client) -> tuple[Any, Any]:
        crashed = await c.call_tool("diagnose", {"paths": [str(bad)]})
        after = await c.call_tool("diagnose", {"paths": [str(NCU_REP)]})
        return crashed, after

    crashed, after = session(calls)
    assert crashed.is_error
    (line,) = text(crashed)
    assert line.startswith(f"kprof: error: {bad}: ") and "crashed (SIGSEGV)" in line and "\n" not in line
    assert line in error_lines(cli("diagnose", str(bad)).stderr)  # the command line's own line
    assert not after.is_error  # the server (and its isolated reader) survived
    assert after.structured_content["diagnoses"][0]["bottleneck"] == "uncoalesced_global_access"


def test_explain_gives_the_rule_and_its_thresholds_with_sources() -> None:
    from kprof import thresholds as th

    r = session(lambda c: c.call_tool("explain", {"bottleneck": "sync_bound"}))
    assert not r.is_error
    (e,) = r.structured_content["explanations"]
    assert e["bottleneck"] == "sync_bound" and e["level"] == "timeline"
    by_name = {t["name"]: t for t in e["thresholds"]}
    assert by_name["GPU_BOUND_BUSY_FRACTION"]["value"] == th.GPU_BOUND_BUSY_FRACTION
    assert "Amdahl" in by_name["GPU_BOUND_BUSY_FRACTION"]["source"]


def test_explain_of_an_unknown_id_is_the_cli_error() -> None:
    r = session(lambda c: c.call_tool("explain", {"bottleneck": "slow_kernel"}))
    assert r.is_error
    assert text(r) == error_lines(cli("explain", "slow_kernel").stderr)
    assert "unknown bottleneck id 'slow_kernel'" in text(r)[0]


# ----------------------------------------------------------------------------- profile
def _fake_path(tmp: Path, tools: tuple[str, ...]) -> str:
    b = tmp / "bin"
    b.mkdir()
    for t in tools:
        (b / t).symlink_to(FAKES / t)
    return os.pathsep.join([str(b), str(Path(sys.executable).parent)])


def test_profile_runs_nsys_where_it_exists_and_returns_the_session_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _fake_path(tmp_path, ("nsys",)))
    monkeypatch.setenv("KPROF_FAKE_SYNTHETIC", "1")
    monkeypatch.setenv("KPROF_FAKE_LOG", str(tmp_path / "argv.jsonl"))
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    base = str(tmp_path / "cap")
    program = [sys.executable, "-c", "print('the profiled program ran')"]
    r = session(lambda c: c.call_tool("profile", {"tool": "nsys", "command": program, "output": base}))
    assert not r.is_error, text(r)
    out = r.structured_content
    assert out["diagnoses"][0]["bottleneck"] == "gpu_bound"
    assert out["files"] == [f"{base}.nsys-rep", f"{base}.sqlite"]
    assert out["report"] is None  # no HTML report unless asked
    calls = [json.loads(line)["argv"] for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    assert calls[0][:3] == ["profile", "-t", "cuda,nvtx,osrt"] and calls[0][-len(program) :] == program


def test_profile_without_the_tool_installed_is_the_cli_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _fake_path(tmp_path, ())
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/nsys or such found by the tool search
    program = [sys.executable, "-c", "pass"]
    r = session(lambda c: c.call_tool("profile", {"tool": "ncu", "command": program, "kernel": "gemm"}))
    assert r.is_error
    ran = cli(
        "profile",
        "ncu",
        "--kernel",
        "gemm",
        "--no-report",
        "--json",
        "--",
        *program,
        env={"PATH": path, "HOME": str(tmp_path)},
    )
    assert text(r)[0].splitlines() == error_lines(ran.stderr)
    assert "ncu" in text(r)[0]


# ----------------------------------------------------------------------------- over stdio
def test_kprof_mcp_over_stdio_serves_the_same_json(tmp_path: Path) -> None:
    """A real ``kprof mcp`` process: nothing kprof prints corrupts the protocol stream."""
    needs(SYNC)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kprof", "mcp"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(tmp_path),
    )

    async def main() -> tuple[Any, Any]:
        async with Client(params) as c:
            ok = await c.call_tool("diagnose", {"paths": [str(SYNC)]})
            bad = await c.call_tool("diagnose", {"paths": ["relative/missing.json.gz"]})
            return ok, bad

    ok, bad = anyio.run(main)
    assert not ok.is_error
    assert ok.structured_content == json.loads(cli("diagnose", "--json", str(SYNC)).stdout)
    assert bad.is_error
    assert text(bad) == error_lines(cli("diagnose", "relative/missing.json.gz", cwd=tmp_path).stderr)
