"""The profiled program's command line as it runs from the folder the user is in.

A capture records the command it profiled as it was typed (``python3 workloads/train.py``): its file
arguments are relative to the folder the capture ran in, which is seldom the folder the profile is
diagnosed from. The commands kprof suggests (:mod:`kprof.commands`) profile that program again, so they
need its files where they are now. :func:`program_for` rewrites each relative file argument of the
recorded command into a path that exists from the current folder, looking for the capture's folder in
this order, and keeps the first folder that holds one of its files:

1. where the capture's working directory lies relative to the file now: nsys records the working
   directory (``PROCESS_0:WORKING_DIR``) and where the export was written
   (``EXPORT_PARAM_OUTPUT_PATH_ABS``); a folder moved as a whole keeps that offset;
2. the recorded working directory itself (a profile diagnosed on the machine that took it);
3. the folder of a ``manifest.json`` that lists the file (``data/samples`` does): its ``capture_command``
   is relative to that folder, and for a report whose capture records no command line (an ncu report,
   whose Python interface does not expose one) it gives the program that ncu or nsys ran;
4. the diagnosed file's own folder, then the current folder.

A file is never invented: an argument is rewritten only where the file exists, and a command none of
whose files is found anywhere is not rewritten (the caller prints it as recorded, or a placeholder).
Paths are written as the user named the profile: absolute for an absolute path, otherwise relative to
the current folder (``KPROF_CWD`` when set: ``kprof report`` runs its notebooks in a private folder and
passes the folder it was started in).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Sequence

CWD_ENV = "KPROF_CWD"
"""The folder suggested commands are written for, when it is not the current one (``kprof report``)."""

_MANIFEST = "manifest.json"
_MANIFEST_LEVELS = 3
"""Folders above the profile searched for a manifest: data/samples/ncu/x.ncu-rep is one level below."""
_OUTPUT_FLAGS = ("-o", "--output", "--export")
"""ncu's and nsys's output flags: kprof's builders and the samples' generate.sh put them last, before
the program."""
_SUFFIX = re.compile(r"[^./]\.[A-Za-z0-9]{1,8}$")


def user_cwd() -> str:
    """The folder the suggested commands run from (:data:`CWD_ENV`, else the current folder)."""
    return os.environ.get(CWD_ENV) or os.getcwd()


def _split(command: str) -> list[str] | None:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes in a recorded command line
        return None


def profiled_program(capture_command: str) -> list[str] | None:
    """The program an ``ncu``/``nsys profile`` command line runs (what follows its output flag), or None.

    Only the first command of a list counts (``ncu ... -o x python3 app.py && gzip x.ncu-rep``); leading
    environment assignments are skipped. A command that is not a profiler run gives None (a PyTorch
    program writing its own trace is not the program of another capture).

    Examples
    --------
    >>> profiled_program("ncu --set full -k 'regex:^t$' -f -o ncu/t python3 w/t.py --after && gzip ncu/t.ncu-rep")
    ['python3', 'w/t.py', '--after']
    >>> profiled_program("RANK=0 nsys profile -t cuda -o r0 python3 ddp.py"), profiled_program("python3 x.py")
    (['python3', 'ddp.py'], None)
    """
    first = capture_command
    for sep in ("&&", "||", ";", "|", ">"):
        first = first.split(sep, 1)[0]
    argv = _split(first)
    if not argv:
        return None
    while argv and "=" in argv[0] and not argv[0].startswith("-"):  # VAR=value before the command
        argv = argv[1:]
    if not argv or os.path.basename(argv[0]) not in ("ncu", "nsys"):
        return None
    outs = [i for i, a in enumerate(argv[:-1]) if a in _OUTPUT_FLAGS]
    return (argv[outs[-1] + 2 :] or None) if outs else None


def _manifest_entry(real: str) -> tuple[str, dict[str, object]] | None:
    """(the manifest's folder, its entry) for the manifest above ``real`` that lists it, or None."""
    folder = os.path.dirname(real)
    for _ in range(_MANIFEST_LEVELS + 1):
        m = os.path.join(folder, _MANIFEST)
        if os.path.isfile(m):
            try:
                with open(m, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, ValueError):
                return None
            entries = data.get("files") if isinstance(data, dict) else data
            for e in entries if isinstance(entries, list) else []:
                named = e.get("file") if isinstance(e, dict) else None
                if isinstance(named, str) and os.path.realpath(os.path.join(folder, named)) == real:
                    return folder, e
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def _manifest_program(real: str) -> tuple[str, list[str]] | None:
    """(the folder the capture ran in, the program it profiled) from a manifest that lists ``real``.

    An ncu CSV export (``ncu --import R --csv ...``) takes the program of the report R it came from."""
    found = _manifest_entry(real)
    if found is None:
        return None
    folder, entry = found
    cmd = entry.get("capture_command")
    if not isinstance(cmd, str):
        return None
    program = profiled_program(cmd)
    if program is None:
        argv = _split(cmd.split("&&", 1)[0].split(">", 1)[0]) or []
        if "--import" in argv[:-1]:
            report = os.path.join(folder, argv[argv.index("--import") + 1])
            for cand in (report, report + ".gz"):
                if os.path.isfile(cand):
                    inner = _manifest_entry(os.path.realpath(cand))
                    c = inner[1].get("capture_command") if inner else None
                    program = profiled_program(c) if isinstance(c, str) else None
                    break
    return (folder, program) if program else None


def _file_args(argv: Sequence[str]) -> list[tuple[int, str, str]]:
    """(index, prefix, path) of each argument that may name a file: the command itself, or a relative
    word with a folder or a suffix (``w/x.py``, ``x.py``), or such a value of ``--flag=value``; flags,
    plain words (``--mode nsys``), placeholders and absolute paths are left as they are."""
    out = []
    for i, a in enumerate(argv):
        prefix, value = "", a
        if a.startswith("--") and "=" in a:
            prefix, value = a.split("=", 1)[0] + "=", a.split("=", 1)[1]
        elif a.startswith("-"):
            continue
        if not value or os.path.isabs(value) or value.startswith(("<", "~", "$")):
            continue
        if i and os.sep not in value and not _SUFFIX.search(value):
            continue
        out.append((i, prefix, value))
    return out


def _written_as(path: str, absolute: bool, frame: str, executable: bool) -> str:
    if absolute:
        return path
    rel = os.path.relpath(path, frame)
    if executable and os.sep not in rel:
        rel = "." + os.sep + rel  # an executable in the current folder runs as ./app, not app
    return rel


def program_for(
    source: str,
    command: str | Sequence[str] | None,
    *,
    working_dir: str = "",
    written_at: str = "",
) -> str:
    """The recorded ``command`` with its relative file arguments rewritten to paths that exist from the
    folder the user is in (see the module's docstring for where the files are looked for), or "" when
    no file of it is found (nothing to rewrite, or nowhere to find it).

    ``source`` is the diagnosed profile as the user named it; ``working_dir`` and ``written_at`` are the
    capture's working directory and the absolute path its file was written to, as the capture records
    them ("" when it does not). Without a ``command``, a manifest that lists the file gives the program.
    """
    if not source or not os.path.exists(source):
        return ""
    real = os.path.realpath(source)
    here = os.path.dirname(real)
    if isinstance(command, str):
        argv = _split(command) if command.strip() else None
    else:
        argv = list(command) if command else None
    candidates: list[str] = []
    if working_dir and os.path.isabs(working_dir) and written_at and os.path.isabs(written_at):
        offset = os.path.relpath(working_dir, os.path.dirname(written_at))
        candidates.append(os.path.normpath(os.path.join(here, offset)))
    if working_dir and os.path.isabs(working_dir):
        candidates.append(working_dir)
    manifest = _manifest_program(real)
    if manifest is not None:
        candidates.append(manifest[0])
        if argv is None:
            argv = manifest[1]
    if not argv:
        return ""
    candidates += [here, user_cwd()]
    args = _file_args(argv)
    frame = user_cwd()
    absolute = os.path.isabs(source)
    for folder in candidates:
        found = {
            i: (prefix, os.path.normpath(os.path.join(folder, value)))
            for i, prefix, value in args
            if os.path.isfile(os.path.join(folder, value))
        }
        if not found:
            continue
        if any(os.path.realpath(p) == real for _, p in found.values()):
            return ""  # the program would write over the diagnosed file: no such suggestion
        out = list(argv)
        for i, (prefix, p) in found.items():
            out[i] = prefix + _written_as(p, absolute, frame, executable=i == 0 and not prefix)
        return shlex.join(out)
    return ""


__all__ = ["CWD_ENV", "profiled_program", "program_for", "user_cwd"]
