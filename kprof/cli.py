"""The ``kprof`` command line: a thin wrapper over the library.

Exit codes: 0 success, 2 bad input (one line naming the file and what is wrong),
1 an internal error (one line; set ``KPROF_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from kprof import __version__
from kprof.errors import KprofError, KprofInputError

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2 like every other bad input."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _err(msg: str) -> None:
    print(f"kprof: error: {msg}", file=sys.stderr)


def _internal(where: str, exc: BaseException) -> int:
    if os.environ.get("KPROF_DEBUG"):
        raise exc
    msg = " ".join(str(exc).split()) or type(exc).__name__
    _err(f"{where}: internal error ({type(exc).__name__}: {msg}); rerun with KPROF_DEBUG=1 and report it")
    return EXIT_INTERNAL


def cmd_diagnose(args: argparse.Namespace) -> int:
    from kprof.api import diagnose

    out: list[dict[str, Any]] = []
    status = EXIT_OK
    first = True
    for path in args.paths:
        try:
            diags = diagnose(path)
        except KprofError as exc:
            _err(str(exc))
            status = EXIT_BAD_INPUT
            continue
        except Exception as exc:
            _internal(path, exc)
            if status == EXIT_OK:
                status = EXIT_INTERNAL
            continue
        if args.json:
            out.extend(d.to_dict() for d in diags)
        else:
            for d in diags:
                if not first:
                    print()
                first = False
                print(d.to_text())
    if args.json:
        json.dump({"diagnoses": out}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    return status


def _not_yet(name: str, issue: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        _err(f"`kprof {name}` is not available in this version yet ({issue})")
        return EXIT_INTERNAL

    return run


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="kprof",
        description="Tell why a GPU program or kernel is slow and what to change, from "
        "Nsight Systems, PyTorch profiler and Nsight Compute outputs.",
    )
    p.add_argument("--version", action="version", version=f"kprof {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    d = sub.add_parser(
        "diagnose",
        help="diagnose profiles, most important first",
        description="Diagnose timeline captures (.nsys-rep, nsys .sqlite, PyTorch profiler "
        ".json/.json.gz) and kernel reports (.ncu-rep, ncu --csv exports).",
    )
    d.add_argument("paths", nargs="+", metavar="PATH")
    d.add_argument("--json", action="store_true", help='print {"diagnoses": [...]} as JSON')
    d.set_defaults(func=cmd_diagnose)

    c = sub.add_parser("compare", help="check a fix: compare BEFORE and AFTER profiles")
    c.add_argument("before", metavar="BEFORE")
    c.add_argument("after", metavar="AFTER")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_compare)

    r = sub.add_parser("report", help="fill the template notebooks and export one HTML report")
    r.add_argument("paths", nargs="*", metavar="PATH", help="inputs (default: the shipped samples)")
    r.add_argument("-o", "--output", default="report.html")
    r.add_argument("--show-code", action="store_true", help="keep the notebooks' input cells")
    r.set_defaults(func=_report)

    pr = sub.add_parser(
        "profile",
        help="run nsys or ncu with the right flags, then diagnose",
        description="Capture and diagnose: `profile nsys -- CMD` (timeline), `profile ncu --kernel REGEX -- CMD` "
        "(one kernel), `profile auto -- CMD` (timeline, then ncu on the top kernels if the GPU is the limit), "
        "`profile sass BINARY` (static SASS, no counters needed).",
    )
    from kprof.capture import add_arguments as _profile_arguments

    _profile_arguments(pr)
    pr.set_defaults(func=_profile)
    return p


def _delegate(module: str, name: str, issue: str) -> Any:
    """Run ``module.cli(args)``; until that module exists, say which issue brings it."""

    def run(args: argparse.Namespace) -> int:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            return int(_not_yet(name, issue)(args))
        return int(mod.cli(args))

    return run


_compare = _delegate("kprof.diagnose.compare", "compare", "issue 7: verify a fix")
_report = _delegate("kprof.report", "report", "issue 5: presentation")
_profile = _delegate("kprof.capture", "profile", "issue 6: capture")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return int(args.func(args))
    except KprofInputError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except KprofError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
