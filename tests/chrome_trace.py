"""Reading a Chrome trace the way its viewers do, without the viewers (tests only).

Perfetto's ``TraceProcessor`` (PyPI ``perfetto``) downloads a ``trace_processor_shell`` binary on
first use; CI and this project's machines reach package registries only, and no registry package
ships that binary (checked: PyPI ``perfetto`` 0.59.1 holds only its download manifest;
``perfetto-extras``, ``perfetto-cli``, ``perfetto-mcp`` hold none; no ``perfetto`` on npm or in
Debian). So the tests check the file offline with what the trace processor would do with it:

1. :data:`SCHEMA`: the Trace Event Format's JSON Object Format (the ``traceEvents`` array; per phase
   the fields the format requires: ``X`` needs ``ts`` and ``dur``, ``M`` needs the metadata name and
   ``args``, flow events need ``id``), validated with ``jsonschema``.
2. :func:`slices`: the slice table Perfetto's JSON importer builds: timestamps converted as its
   ``CoerceToTs`` does (``llround(us * 1000)``), complete events of one (pid, tid) nested by a stack;
   an event that starts inside another and ends after it is an error (Perfetto would truncate or drop
   it), as is any ``displayTimeUnit`` (Perfetto then reads every ``ts`` in that unit).

:func:`trace_processor_shell` finds a real binary when one is installed (``KPROF_TRACE_PROCESSOR_SHELL``,
the perfetto package's cache, or PATH); the tests then also load the file in ``TraceProcessor``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

_NUM = {"type": "number"}
_ID = {"type": ["string", "integer"]}
_PID = {"type": "integer"}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Chrome Trace Event Format, JSON Object Format (the phases kprof writes)",
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "traceEvents": {"type": "array", "items": {"$ref": "#/$defs/event"}},
        "otherData": {"type": "object"},
        "displayTimeUnit": {"enum": ["ms", "ns"]},
    },
    "$defs": {
        "event": {
            "type": "object",
            "required": ["name", "ph", "pid", "tid"],
            "properties": {
                "name": {"type": "string"},
                "cat": {"type": "string"},
                "ph": {"enum": ["X", "B", "E", "i", "I", "C", "M", "s", "t", "f"]},
                "ts": {**_NUM, "minimum": 0},
                "dur": {**_NUM, "minimum": 0},
                "pid": _PID,
                "tid": _PID,
                "args": {"type": "object"},
                "cname": {"type": "string"},
                "id": _ID,
                "bp": {"enum": ["e"]},
                "s": {"enum": ["g", "p", "t"]},
            },
            "allOf": [
                {"if": {"properties": {"ph": {"const": "X"}}}, "then": {"required": ["ts", "dur"]}},
                {
                    "if": {"properties": {"ph": {"enum": ["B", "E", "i", "I", "C", "s", "t", "f"]}}},
                    "then": {"required": ["ts"]},
                },
                {"if": {"properties": {"ph": {"enum": ["s", "t", "f"]}}}, "then": {"required": ["id"]}},
                {
                    "if": {"properties": {"ph": {"const": "M"}}},
                    "then": {
                        "required": ["args"],
                        "properties": {
                            "name": {
                                "enum": [
                                    "process_name",
                                    "process_labels",
                                    "process_sort_index",
                                    "thread_name",
                                    "thread_sort_index",
                                ]
                            }
                        },
                    },
                },
            ],
        }
    },
}

CNAMES = frozenset(
    {
        "thread_state_uninterruptible", "thread_state_iowait", "thread_state_running", "thread_state_runnable",
        "thread_state_sleeping", "thread_state_unknown", "background_memory_dump", "light_memory_dump",
        "detailed_memory_dump", "vsync_highlight_color", "generic_work", "good", "bad", "terrible", "black",
        "grey", "white", "yellow", "olive", "rail_response", "rail_animation", "rail_idle", "rail_load",
        "startup", "heap_dump_stack_frame", "heap_dump_object_type", "heap_dump_child_node_arrow",
        "cq_build_running", "cq_build_passed", "cq_build_failed", "cq_build_abandoned", "cq_build_attempt_runnig",
        "cq_build_attempt_passed", "cq_build_attempt_failed",
    }
)  # fmt: skip
"""chrome://tracing's reserved colour names (catapult's ColorScheme); any other cname is ignored."""


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    assert isinstance(doc, dict)
    return doc


def validate(doc: dict[str, Any]) -> None:
    """Raise unless ``doc`` is a Chrome trace the viewers read as meant."""
    jsonschema.validate(doc, SCHEMA)
    assert "displayTimeUnit" not in doc, "Perfetto reads every ts in the displayTimeUnit: leave it out"
    for e in doc["traceEvents"]:
        if "cname" in e:
            assert e["cname"] in CNAMES, e
        for k in ("ts", "dur"):
            if k in e:
                assert math.isfinite(e[k]), e


def coerce_ts(us: float | int) -> int:
    """Perfetto's ``CoerceToTs`` for a JSON number in microseconds: ``llround(us * 1000)`` (ints exactly)."""
    if isinstance(us, int):
        return us * 1000
    return math.floor(us * 1000.0 + 0.5) if us >= 0 else -math.floor(-us * 1000.0 + 0.5)


@dataclass(frozen=True, slots=True)
class Slice:
    pid: int
    tid: int
    name: str
    cat: str
    ts: int
    """Nanoseconds, as the trace processor stores them."""
    dur: int
    depth: int
    args: dict[str, Any]


def slices(doc: dict[str, Any]) -> list[Slice]:
    """The slices a viewer builds from the complete (``X``) events, each with its nesting depth.

    Raises AssertionError for an event that overlaps another on its track without nesting in it.
    """
    by_track: dict[tuple[int, int], list[tuple[int, int, int, dict[str, Any]]]] = {}
    for n, e in enumerate(doc["traceEvents"]):
        if e["ph"] != "X":
            continue
        ts, dur = coerce_ts(e["ts"]), coerce_ts(e["dur"])
        by_track.setdefault((e["pid"], e["tid"]), []).append((ts, -dur, n, e))
    out: list[Slice] = []
    for (pid, tid), evs in by_track.items():
        evs.sort(key=lambda x: (x[0], x[1], x[2]))
        stack: list[int] = []  # end times
        for ts, neg, _, e in evs:
            end = ts - neg
            while stack and stack[-1] <= ts:
                stack.pop()
            assert not stack or end <= stack[-1], (
                f"track {pid}/{tid}: {e['name']!r} [{ts}, {end}] crosses the end of its enclosing slice at {stack[-1]}"
            )
            out.append(Slice(pid, tid, e["name"], e.get("cat", ""), ts, -neg, len(stack), e.get("args", {})))
            stack.append(end)
    return out


def names(doc: dict[str, Any]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """Process names by pid and thread (track) names by (pid, tid), from the metadata events."""
    procs: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    return procs, threads


def trace_processor_shell() -> str | None:
    """A ``trace_processor_shell`` binary that runs here, or None."""
    cands = [os.environ.get("KPROF_TRACE_PROCESSOR_SHELL", "")]
    cands += [shutil.which("trace_processor_shell") or "", shutil.which("trace_processor") or ""]
    cache = Path.home() / ".local" / "share" / "perfetto" / "prebuilts"
    if cache.is_dir():
        cands += [str(p) for p in sorted(cache.glob("trace_processor_shell*")) if not p.name.endswith(".tmp")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None
