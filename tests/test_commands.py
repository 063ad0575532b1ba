"""The one builder of the nsys/ncu commands that kprof runs and suggests."""

from __future__ import annotations

import os
import re
import shlex

import pytest

from kprof import capture, commands

from .conftest import SAMPLES


def test_ncu_commands_keep_kprofs_capture_flags_whatever_is_asked():
    for kw in (
        {},
        {"sections": ("SourceCounters", "MemoryWorkloadAnalysis")},
        {"replay_mode": "application"},
    ):
        argv = commands.ncu_argv(None, "o", kernel_filter="k", **kw)
        line = " ".join(argv)
        assert "--import-source yes" in line and "--clock-control none" in line
        assert argv.count("--set") == (0 if "sections" in kw else 1)


def test_capture_runs_what_the_builder_builds():
    # kprof profile and the suggestions share the builder: same flags, same order
    assert capture.ncu_argv is commands.ncu_argv and capture.nsys_profile_argv is commands.nsys_profile_argv


@pytest.mark.parametrize(
    "path, stem",
    [
        ("data/ncu/pair_x_before.ncu-rep", "data/ncu/pair_x_after"),
        ("data/ncu/k.ncu-rep", "data/ncu/k_after"),
        ("k.details.csv", "k_after"),
        ("r/k.raw.csv.gz", "r/k_after"),
        ("a.Before.ncu-rep", "a.after"),
        ("before.ncu-rep", "before_after"),  # no stem before "before": keep the name whole
    ],
)
def test_the_after_capture_goes_beside_the_diagnosed_file(path, stem):
    assert commands.after_stem(path) == stem


def test_suggestion_round_trips_through_the_shell():
    src = "my runs/k<4> before.ncu-rep"
    line = commands.kernel_after_change("k<float, 4>", src, cooperative=True)
    ncu = line.split("`")[1]
    argv = shlex.split(ncu.replace(commands.PROGRAM, "./app"))
    assert argv[argv.index("-k") + 1] == "regex:^k<float, 4>$"  # the name as a regex, quoted
    assert argv[argv.index("-o") + 1] == "my runs/k<4> before_after"
    assert argv[argv.index("--replay-mode") + 1] == "application"
    cmp = shlex.split(line.split("`")[3])
    assert cmp == ["kprof", "compare", src, "my runs/k<4> before_after.ncu-rep"]


def test_recorded_command_line_is_kept_as_the_shell_would_split_it():
    line = commands.nsys_command("run2", program="python3 train.py --lr '1e-3 x'", graph_nodes=True)
    assert shlex.split(line)[-4:] == ["python3", "train.py", "--lr", "1e-3 x"]
    assert "-t cuda,nvtx,osrt -s none --cpuctxsw=none" in line and "--cuda-graph-trace=node" in line
    assert commands.nsys_command().endswith(f"-o out {commands.PROGRAM}")


def test_suggestions_never_overwrite_a_report_the_user_has():
    line = commands.kernel_after_change("k", "runs/k_before.ncu-rep")
    assert " -f " not in line.split("`")[1]  # ncu refuses to replace runs/k_after.ncu-rep
    assert "-f" in commands.ncu_argv(["./app"], "o", kernel_filter="k")  # kprof profile's own outputs


def _commands(text: str, tool: str) -> list[str]:
    return [c for c in re.findall(r"`([^`]+)`", text) if c.startswith(f"{tool} ")]


def test_kernel_diagnoses_suggest_kprofs_capture_beside_the_real_file():
    reports = sorted((SAMPLES / "ncu").glob("*.ncu-rep.gz"))
    if not reports:
        pytest.skip("no ncu samples")
    import kprof

    seen = 0
    for p in reports:
        for d in kprof.diagnose(str(p)):
            if d.verdict.value == "fix":  # a fix is checked by the same capture after the change
                assert _commands(d.next_step, "ncu") and _commands(d.next_step, "kprof compare"), d.next_step
            for cmd in _commands(d.next_step, "ncu"):
                seen += 1
                argv = shlex.split(cmd.replace(commands.PROGRAM, "./app"))
                assert argv[argv.index("--import-source") + 1] == "yes", (p.name, cmd)
                assert argv[argv.index("--clock-control") + 1] == "none", (p.name, cmd)
                assert os.path.dirname(argv[argv.index("-o") + 1]) == os.path.dirname(str(p))
            for cmd in _commands(d.next_step, "kprof compare"):
                assert shlex.split(cmd)[2] == str(p)  # the diagnosed file, not a name made from the kernel's
    assert seen


def test_a_placeholder_for_the_program_stays_one_word():
    line = commands.ncu_command("k", "o", program="<your command>")
    assert line.endswith(" -o o <your command>")


def test_timeline_diagnoses_suggest_ncu_with_kprofs_capture_flags():
    captures = sorted((SAMPLES / "timeline").glob("*.sqlite"))
    if not captures:
        pytest.skip("no timeline samples")
    import kprof

    seen = 0
    for p in captures:
        for d in kprof.diagnose(str(p)):
            for cmd in re.findall(r"(?:^|[`:] ?)(ncu --[^`]*?)(?=`|$|\n)", d.next_step):
                seen += 1
                argv = shlex.split(cmd.replace("<your command>", "./app"))
                assert argv[argv.index("--import-source") + 1] == "yes", (p.name, cmd)
                assert argv[argv.index("--clock-control") + 1] == "none", (p.name, cmd)
                assert "-f" not in argv  # a suggestion never replaces a report the user has
    assert seen  # gpu_bound.sqlite names its top kernel's ncu command
