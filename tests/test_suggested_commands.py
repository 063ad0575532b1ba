"""Every command a diagnosis prints runs from the folder the user is in: the program it profiles is
found where its files are now (:mod:`kprof.io.program`), and what it writes goes beside the diagnosed
file, never over a file that is there (issue 28)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import kprof
from kprof import commands
from kprof.io.program import CWD_ENV, profiled_program, program_for

from .conftest import REPO, SAMPLES

_TOOLS = r"(?:ncu|nsys|kprof|py-spy|perf)"
_COMMAND = re.compile(rf"`({_TOOLS}\s(?:[^`']|'[^']*')*)`")
"""A command in backticks; a kernel name in it may hold a backtick inside the shell's single quotes."""
_BARE = re.compile(r"\b(?:ncu --|nsys profile|kprof (?:compare|diagnose|profile) |py-spy record|perf record)")
_PLACEHOLDERS = {
    commands.PROGRAM: "PLACEHOLDER",
    commands.OTHER_RANKS: "PLACEHOLDER",
    "<report>": "PLACEHOLDER",
}
_SUFFIX = re.compile(r"[^./]\.[A-Za-z0-9-]{1,10}$")


@contextlib.contextmanager
def _in(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


def _texts(x: object) -> Iterator[str]:
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _texts(v)
    elif isinstance(x, list):
        for v in x:
            yield from _texts(v)


def _path_like(a: str) -> bool:
    return not a.startswith("-") and a != "PLACEHOLDER" and ("/" in a or bool(_SUFFIX.search(a)))


def _check_program(argv: list[str], cmd: str) -> None:
    assert argv, f"no program in {cmd!r}"
    for a in argv:
        if _path_like(a):
            assert os.path.exists(a), f"{a!r} does not exist from {os.getcwd()}: {cmd!r}"


def _check_output(out: str, folder: str, cmd: str) -> None:
    assert os.path.normpath(os.path.dirname(out) or ".") == os.path.normpath(folder or "."), (
        f"{out!r} is not written beside the diagnosed file (in {folder!r}): {cmd!r}"
    )


def check_command(cmd: str, source: str) -> None:
    """What a suggested command must satisfy, run from the current folder, for the diagnosed ``source``."""
    folder = os.path.dirname(source)
    text = cmd
    for ph, word in _PLACEHOLDERS.items():
        text = text.replace(ph, word)
    argv = shlex.split(text)
    tool = argv[0]
    if tool in ("ncu", "nsys"):
        if "--import" in argv:  # ncu --import R --csv --page raw > OUT
            src = argv[argv.index("--import") + 1]
            assert src.startswith("PLACEHOLDER") or os.path.exists(src), cmd
            return
        assert "-o" in argv, f"an {tool} capture names its output: {cmd!r}"
        i = argv.index("-o")
        _check_output(argv[i + 1], folder, cmd)
        # without -f, ncu and nsys refuse to replace a report that is there (the shipped pair_*_after)
        assert "-f" not in argv and "--force-overwrite" not in argv, cmd
        if argv[i + 2 :] != ["PLACEHOLDER"]:
            _check_program(argv[i + 2 :], cmd)
    elif tool == "kprof":
        if argv[1] == "compare":
            assert argv[2] == source, f"compare names the diagnosed file first: {cmd!r}"
            _check_output(argv[3], folder, cmd)
        elif argv[1] == "diagnose":
            assert all(a == "PLACEHOLDER" or os.path.exists(a) for a in argv[2:]), cmd
        elif argv[1] == "profile":
            _check_program(argv[argv.index("--") + 1 :], cmd)
        else:
            raise AssertionError(f"unexpected kprof command {cmd!r}")
    else:  # py-spy record -o OUT -- PROG, perf record -g -o OUT -- PROG
        _check_output(argv[argv.index("-o") + 1], folder, cmd)
        prog = argv[argv.index("--") + 1 :]
        if prog != ["PLACEHOLDER"]:
            _check_program(prog, cmd)


def check_diagnoses(diags: list[kprof.Diagnosis], source: str) -> int:
    """Check every command of ``diags`` (diagnosed from ``source``); the number checked."""
    n = 0
    for d in diags:
        for text in _texts(d.to_dict()):
            bare = _COMMAND.sub("", text)
            assert not _BARE.search(bare), f"a command outside backticks: {text!r}"
            for cmd in _COMMAND.findall(text):
                check_command(cmd, source)
                n += 1
    return n


def _sample_files() -> list[str]:
    m = json.loads((SAMPLES / "manifest.json").read_text())
    files = [f"data/samples/{e['file']}" for e in m["files"]]
    files += sorted(f"data/samples/multirank/{p.name}" for p in (SAMPLES / "multirank").glob("*.sqlite"))
    if shutil.which("nsys") is None:  # a .nsys-rep is read through nsys export
        files = [f for f in files if not f.endswith(".nsys-rep")]
    return files


@pytest.mark.skipif(not (SAMPLES / "manifest.json").is_file(), reason="no sample gallery")
def test_every_command_printed_for_every_sample_runs_from_the_repository_root() -> None:
    seen = 0
    programs = 0
    with _in(REPO):
        for f in _sample_files():
            diags = kprof.diagnose(f)
            seen += check_diagnoses(diags, f)
            programs += any("data/samples/workloads/" in t for d in diags for t in _texts(d.to_dict()))
        job = sorted(
            f"data/samples/multirank/{p.name}" for p in (SAMPLES / "multirank").glob("ddp_straggler_*.sqlite")
        )
        seen += check_diagnoses(kprof.diagnose_job(job, progress=False, workers=1)[:1], job[0])
    assert seen > 60
    # the shipped programs are found for the nsys captures and, through the manifest, the ncu reports
    assert programs >= 20, programs


@pytest.mark.skipif(not (SAMPLES / "manifest.json").is_file(), reason="no sample gallery")
@pytest.mark.parametrize(
    "name",
    [
        "timeline/gpu_bound.sqlite",
        "timeline/host_compute_bound.sqlite.gz",
        "ncu/pair_transpose_before.ncu-rep.gz",
        "ncu/shared_bank_conflicts.details.csv",
    ],
)
@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_commands_run_from_another_folder(name: str, how: str, tmp_path: Path) -> None:
    here = tmp_path / "elsewhere"
    here.mkdir()
    with _in(here):
        src = str(SAMPLES / name) if how == "absolute" else os.path.relpath(SAMPLES / name, here)
        diags = kprof.diagnose(src)
        assert check_diagnoses(diags, src)
        text = " ".join(t for d in diags for t in _texts(d.to_dict()))
        script = SAMPLES / "workloads"
        want = str(script) if how == "absolute" else os.path.relpath(script, here)
        assert want + os.sep in text, "the program's script, named from this folder"


# ------------------------------------------------------------------ where the program is found


def _capture(folder: Path, *, wd: str, written: str, args: tuple[str, ...]) -> Path:
    """A copy of the gpu_bound sample whose capture says it ran ``args`` in ``wd``, exported to ``written``."""
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "cap.sqlite"
    shutil.copy(SAMPLES / "timeline" / "gpu_bound.sqlite", p)
    db = sqlite3.connect(p)
    db.execute("DELETE FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS_0:%'")
    rows = [("PROCESS_0:COMMAND", args[0]), ("PROCESS_0:WORKING_DIR", wd)]
    rows += [(f"PROCESS_0:ARGUMENT_{i}", a) for i, a in enumerate(args[1:])]
    db.executemany("INSERT INTO META_DATA_CAPTURE (name, value) VALUES (?, ?)", rows)
    db.execute(
        "UPDATE META_DATA_EXPORT SET value = ? WHERE name = 'EXPORT_PARAM_OUTPUT_PATH_ABS'", (written,)
    )
    db.commit()
    db.close()
    return p


def test_a_moved_capture_finds_its_script_at_the_same_place_relative_to_it(tmp_path: Path) -> None:
    # captured in /gone/run (which no longer exists) as `python3 src/train.py --lr 3 --cfg=conf/a.yaml`,
    # exported to /gone/run/out/cap.sqlite; the folder was then moved to tmp/proj
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "train.py").write_text("")
    (proj / "conf").mkdir()
    (proj / "conf" / "a.yaml").write_text("")
    p = _capture(
        proj / "out",
        wd="/gone/run",
        written="/gone/run/out/cap.sqlite",
        args=("python3", "src/train.py", "--lr", "3", "--cfg=conf/a.yaml"),
    )
    with _in(tmp_path):
        tl = kprof.load("proj/out/cap.sqlite")
        assert tl.program == "python3 proj/src/train.py --lr 3 --cfg=proj/conf/a.yaml"
        assert tl.command == "python3 src/train.py --lr 3 --cfg=conf/a.yaml"  # as recorded
        assert check_diagnoses(kprof.diagnose(tl), "proj/out/cap.sqlite")
    with _in(proj / "src"):
        assert kprof.load(str(p)).program == f"python3 {proj}/src/train.py --lr 3 --cfg={proj}/conf/a.yaml"


def test_a_capture_diagnosed_where_it_was_taken_uses_the_recorded_folder(tmp_path: Path) -> None:
    wd = tmp_path / "run"
    wd.mkdir()
    (wd / "app").write_text("")
    p = _capture(
        tmp_path / "elsewhere",
        wd=str(wd),
        written=str(tmp_path / "x" / "cap.sqlite"),
        args=("./app", "-n", "4"),
    )
    with _in(wd):
        assert (
            program_for(
                os.path.relpath(p),
                "./app -n 4",
                working_dir=str(wd),
                written_at=str(tmp_path / "x" / "cap.sqlite"),
            )
            == "./app -n 4"
        )
    with _in(tmp_path):
        assert kprof.load(os.path.relpath(p)).program == "run/app -n 4"


def test_a_program_whose_files_are_nowhere_is_not_rewritten(tmp_path: Path) -> None:
    _capture(tmp_path / "c", wd="/gone", written="/gone/cap.sqlite", args=("python3", "train.py"))
    with _in(tmp_path):
        tl = kprof.load("c/cap.sqlite")
        assert tl.program == ""  # no train.py anywhere: nothing invented
        d = kprof.diagnose(tl)[0]
        assert "python3 train.py" in d.next_step  # printed as recorded


def test_the_program_never_writes_over_the_diagnosed_file(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text("")
    trace = tmp_path / "t.sqlite"
    shutil.copy(SAMPLES / "timeline" / "gpu_bound.sqlite", trace)
    with _in(tmp_path):
        assert program_for("t.sqlite", "python3 w.py --out t.sqlite", working_dir=str(tmp_path)) == ""
        assert (
            program_for("t.sqlite", "python3 w.py --out u.sqlite", working_dir=str(tmp_path))
            == "python3 w.py --out u.sqlite"
        )


def test_the_report_names_the_users_files_from_the_folder_it_was_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kprof report runs its notebooks in a private folder and passes where it was started (KPROF_CWD)
    monkeypatch.setenv(CWD_ENV, str(REPO))
    with _in(tmp_path):
        src = os.path.relpath(SAMPLES / "timeline" / "gpu_bound.sqlite")
        tl = kprof.load(src)
        assert tl.program == "python3 data/samples/workloads/timeline/gpu_bound.py --mode nsys"


def test_the_manifest_gives_an_ncu_reports_program() -> None:
    with _in(REPO):
        p = kprof.load("data/samples/ncu/pair_transpose_after.ncu-rep.gz")
        assert p.program == "python3 data/samples/workloads/kernels/pair_transpose.py --after"
        csv = kprof.load(
            "data/samples/ncu/uncoalesced_global_access.raw.csv"
        )  # through the report it came from
        assert csv.program == "python3 data/samples/workloads/kernels/uncoalesced_global_access.py"
        # a PyTorch trace's capture_command is the program writing its own trace: not taken
        assert kprof.load("data/samples/timeline/gpu_bound.json.gz").program == ""


def test_profiled_program_takes_what_follows_the_output_flag() -> None:
    assert profiled_program("nsys profile -t cuda -o x ./app -n 3 > log") == ["./app", "-n", "3"]
    assert profiled_program("ncu --import a.ncu-rep --csv --page raw > a.csv") is None
    assert profiled_program("python3 t.py --trace t.json") is None
