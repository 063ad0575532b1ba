"""``kprof profile nsys | ncu | auto | sass``: the steps of each, what they produced (:class:`Session`)
and the options they read (:class:`ProfileOptions`)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from kprof import commands
from kprof.capture.captures import _strip_ext, capture_ncu, capture_nsys, default_output
from kprof.capture.diagnosis import diagnose_kernel_report, diagnose_timeline, load_timeline, why_no_ncu
from kprof.capture.targets import (
    TOP_KERNELS_MAX,
    KernelTarget,
    matching_launches,
    top_kernels,
    warmup_launches,
)
from kprof.capture.tools import CaptureError, CounterPermissionError, _has_magic, _say, regex_filter
from kprof.commands import NCU_DEFAULT_SET
from kprof.errors import KprofError, KprofInputError, MissingToolError
from kprof.model import Bottleneck, Diagnosis

if TYPE_CHECKING:
    from kprof.timeline_model import Timeline


EXIT_OK = 0


@dataclass(kw_only=True)
class Session:
    """What one ``kprof profile`` run produced.

    With ``stream`` set (text output), each diagnosis is printed as soon as it exists, so the
    timeline's verdict is on screen while ncu still runs and survives a later failure.
    """

    diagnoses: list[Diagnosis] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    report: str | None = None
    report_command: str | None = None
    status: int = EXIT_OK
    stream: IO[str] | None = None
    printed: int = 0

    def add(self, diags: Iterable[Diagnosis]) -> None:
        self.diagnoses.extend(diags)
        if self.stream is None:
            return
        for d in self.diagnoses[self.printed :]:
            self.stream.write(("\n" if self.printed else "") + d.to_text().rstrip() + "\n")
            self.printed += 1
        self.stream.flush()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileOptions:
    """The ``kprof profile`` options (see :func:`add_arguments`)."""

    tool: str
    cmd: tuple[str, ...]
    output: str | None = None
    kernel: str | None = None
    launch_skip: int | None = None
    launch_count: int = 1
    section_set: str = NCU_DEFAULT_SET
    replay_mode: str | None = None
    timeline: str | None = None
    top: int = TOP_KERNELS_MAX
    cuda_profiler_range: bool = False
    graph_nodes: bool = False
    no_counters: bool = False
    binary: str | None = None
    report: bool = True
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ProfileOptions:
        cmd = list(getattr(args, "cmd", None) or [])
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        return cls(
            tool=args.tool,
            cmd=tuple(cmd),
            output=getattr(args, "output", None),
            kernel=getattr(args, "kernel", None),
            launch_skip=getattr(args, "launch_skip", None),
            launch_count=getattr(args, "launch_count", 1) or 1,
            section_set=getattr(args, "section_set", None) or NCU_DEFAULT_SET,
            replay_mode=getattr(args, "replay_mode", None),
            timeline=getattr(args, "timeline", None),
            top=getattr(args, "top", None) or TOP_KERNELS_MAX,
            cuda_profiler_range=bool(getattr(args, "cuda_profiler_range", False)),
            graph_nodes=bool(getattr(args, "graph_nodes", False)),
            no_counters=bool(getattr(args, "no_counters", False)),
            binary=getattr(args, "binary", None),
            report=not getattr(args, "no_report", False),
            json=bool(getattr(args, "json", False)),
        )

    @property
    def base(self) -> str:
        return _strip_ext(self.output) if self.output else default_output(self.cmd)


def _check_cmd(opts: ProfileOptions) -> None:
    if not opts.cmd:
        what = "BINARY" if opts.tool == "sass" else "-- CMD ..."
        raise CaptureError(
            f"`kprof profile {opts.tool}` needs {what}: e.g. `kprof profile {opts.tool} "
            f"{'./app' if opts.tool == 'sass' else '-- python3 train.py'}`"
        )
    if opts.tool == "sass":
        return
    prog = opts.cmd[0]
    if os.sep not in prog and shutil.which(prog) is None:
        raise CaptureError(
            f"the command to profile, `{prog}`, is not on PATH (nor a path to a program); "
            "check the spelling, or give its path (./app)"
        )
    if os.sep in prog and not os.path.exists(prog):
        raise CaptureError(f"the command to profile, `{prog}`, does not exist")


def _elf_program(cmd: Sequence[str]) -> str | None:
    """``cmd[0]`` when it is an ELF executable (which holds its kernels), else None."""
    if not cmd:
        return None
    prog = cmd[0] if os.sep in cmd[0] else shutil.which(cmd[0])
    if not prog or not os.path.isfile(prog):
        return None
    if re.match(r"^(python|pypy|bash|sh|env)", Path(prog).name):
        return None
    return prog if _has_magic(prog, b"\x7fELF") else None


def _static(opts: ProfileOptions, session: Session, *, kernel_regex: str | None, why: str) -> None:
    """The static SASS reading of ``--binary`` (or of the profiled program when it is an executable)."""
    import dataclasses

    from kprof.capture_sass import diagnose_sass, disassemble

    binary = opts.binary or _elf_program(opts.cmd)
    if binary is None:
        raise CaptureError(
            f"{why}: the static SASS reading needs the binary that holds the kernels. Pass --binary PATH (the "
            "executable, a shared library, or a .cubin; CuPy keeps compiled kernels in ~/.cupy/kernel_cache/*.cubin)."
        )
    _say(f"no counters ({why}): reading the SASS of {binary} statically")
    functions, argv = disassemble(binary)
    session.commands.append(shlex.join(argv))
    diags = diagnose_sass(functions, kernel_regex=kernel_regex, binary=binary, cmd=opts.cmd)
    if not diags and kernel_regex and not opts.kernel:  # the timeline's kernels live elsewhere (a library)
        session.notes.append(
            f"The timeline's top kernels ({kernel_regex.replace(chr(92), '')}) are not in {binary}; "
            "all of its kernels were read instead."
        )
        diags = diagnose_sass(functions, binary=binary, cmd=opts.cmd)
    if not diags:
        names = ", ".join(f.name for f in functions[:8]) + (" ..." if len(functions) > 8 else "")
        raise KprofInputError(
            binary, f"no kernel matches --kernel {kernel_regex!r} (its kernels: {names or 'none'})"
        )
    session.add(d if d.file else dataclasses.replace(d, file=binary) for d in diags)
    session.notes.append(
        "The kernel findings above come from static SASS (what the compiler emitted, not what ran): their "
        "confidence is capped, and each names the ncu capture that would settle it."
    )


def _targets_regex(targets: Sequence[KernelTarget]) -> str:
    return "|".join(re.escape(t.short_name) for t in targets)


def run_nsys_stage(opts: ProfileOptions, session: Session) -> tuple[Timeline, list[Diagnosis]]:
    rep, sqlite = capture_nsys(
        opts.cmd,
        opts.base,
        cuda_profiler_range=opts.cuda_profiler_range,
        graph_nodes=opts.graph_nodes,
        log=session.commands,
    )
    session.files += [rep, sqlite]
    _say(f"timeline: diagnosing {sqlite}")
    tl = load_timeline(sqlite)
    diags = diagnose_timeline(tl)
    session.add(diags)
    return tl, diags


def run_ncu_targets(
    opts: ProfileOptions, session: Session, tl: Timeline, targets: Sequence[KernelTarget]
) -> None:
    names = [t.short_name for t in top_kernels(tl, max_kernels=8, min_share=0.0)]
    for i, t in enumerate(targets, 1):
        replay = opts.replay_mode or t.replay_mode
        coop = (
            " Its launches are cooperative (grid-wide sync): kernel replay would deadlock or corrupt them, so "
            "ncu replays the whole application instead (--replay-mode application; slower: one run per pass)."
            if t.cooperative and replay == "application"
            else ""
        )
        _say(
            f"ncu [{i}/{len(targets)}]: `{t.short_name}` holds {100 * t.share:.1f}% of the GPU time "
            f"({t.launches} launches); profiling one launch: --launch-skip {t.launch_skip} {t.skip_reason}.{coop}"
        )
        base = commands.kernel_report_stem(opts.base, i, t.short_name)
        rep = capture_ncu(
            opts.cmd,
            base,
            kernel_filter=t.kernel_filter,
            launch_skip=t.launch_skip,
            launch_count=opts.launch_count,
            section_set=opts.section_set,
            replay_mode=replay,
            profile_from_start=not opts.cuda_profiler_range,
            timeline_names=names,
            log=session.commands,
        )
        session.files.append(rep)
        _diagnose_report(rep, tl.source, session)


def _diagnose_report(rep: str, timeline: str | None, session: Session) -> None:
    _say(f"kernel: diagnosing {rep}" + (" (durations from the timeline, not from ncu)" if timeline else ""))
    try:
        session.add(diagnose_kernel_report(rep, timeline))
    except (MissingToolError, CaptureError) as exc:
        _say(f"warning: {exc}")
        session.notes.append(f"{rep} was captured but not diagnosed here: {exc}")
        session.status = 2


def _report(opts: ProfileOptions, session: Session) -> None:
    inputs = [f for f in session.files if f.endswith((".sqlite", ".ncu-rep"))]
    if not inputs:
        return
    out = opts.base + ".html"
    command = shlex.join(["kprof", "report", *inputs, "-o", out])
    session.report_command = command
    if not opts.report:
        return
    import importlib.util

    missing = [m for m in ("papermill", "nbconvert", "nbformat") if importlib.util.find_spec(m) is None]
    if missing:
        session.notes.append(
            f"The HTML report needs {', '.join(missing)}, not installed here (`pip install kprof` brings them); "
            "build it where they are, with the command below."
        )
        return
    if importlib.util.find_spec("kprof.report") is None:
        session.notes.append(
            "The HTML report is not available in this version of kprof; the command below builds it where it is."
        )
        return
    from kprof.report import build_report

    _say(f"report: {command}")
    try:
        build_report(inputs, out, show_code=False)  # what `kprof report INPUTS -o OUT` runs
        rc = 0
    except (KprofError, ImportError) as exc:
        session.notes.append(
            f"The HTML report could not be built here ({exc}); the command below builds it elsewhere."
        )
        return
    if rc == 0 and os.path.isfile(out):
        session.report = out
        session.files.append(out)
    else:
        session.notes.append(f"The HTML report failed (exit status {rc}); the command below retries it.")


def profile_nsys(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile nsys``: capture, export, diagnose the timeline (plus static SASS with --no-counters)."""
    _check_cmd(opts)
    tl, diags = run_nsys_stage(opts, session)
    if opts.no_counters and diags and diags[0].bottleneck is Bottleneck.GPU_BOUND:
        targets = top_kernels(tl, max_kernels=opts.top)
        regex = opts.kernel or (_targets_regex(targets) if targets else None)
        _static(opts, session, kernel_regex=regex, why="--no-counters")
    elif opts.no_counters and opts.binary:
        _static(opts, session, kernel_regex=opts.kernel, why="--no-counters")
    _report(opts, session)
    return session


def profile_ncu(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile ncu --kernel REGEX``: one ncu capture, then its diagnosis."""
    _check_cmd(opts)
    if not opts.kernel:
        raise CaptureError(
            "`kprof profile ncu` needs --kernel REGEX (the kernel's function name, or a pattern "
            "in it); `kprof profile auto -- CMD` finds the kernels that matter from a timeline"
        )
    if opts.no_counters:
        _static(opts, session, kernel_regex=opts.kernel, why="--no-counters")
        return session
    tl = None
    skip = opts.launch_skip
    replay = opts.replay_mode
    if opts.timeline:
        tl = _load_any(opts.timeline)
        n, coop = matching_launches(tl, opts.kernel)
        if n == 0:
            _say(f"warning: no kernel in {opts.timeline} matches {opts.kernel!r}")
        if coop and replay is None:
            replay = "application"
            _say(
                "the timeline shows cooperative launches of this kernel: using --replay-mode application "
                "(kernel replay breaks grid-wide synchronization)"
            )
        if skip is None and n:
            skip = warmup_launches(n)
            _say(
                f"--launch-skip {skip}: skipping the first {skip} of the {n} matching launches in the timeline (warm-up)"
            )
    if skip is None:
        skip = 0
        _say(
            "profiling the first matching launch (warm-up included); pass --launch-skip N or --timeline X.sqlite "
            "to skip past warm-up"
        )
    rep = capture_ncu(
        opts.cmd,
        opts.base,
        kernel_filter=regex_filter(opts.kernel),
        launch_skip=skip,
        launch_count=opts.launch_count,
        section_set=opts.section_set,
        replay_mode=replay,
        profile_from_start=not opts.cuda_profiler_range,
        log=session.commands,
    )
    session.files.append(rep)
    _diagnose_report(rep, opts.timeline if tl is not None else None, session)
    _report(opts, session)
    return session


def _load_any(path: str) -> Timeline:
    from kprof.io import load
    from kprof.timeline_model import Timeline

    tl = load(path)
    if not isinstance(tl, Timeline):
        raise CaptureError(
            f"--timeline {path} is not a timeline (an nsys .sqlite/.nsys-rep or a PyTorch trace)"
        )
    return tl


def profile_auto(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile auto``: nsys, the timeline verdict, ncu on the top kernels if gpu_bound, the report."""
    _check_cmd(opts)
    _say("[1/3] timeline (nsys)")
    tl, diags = run_nsys_stage(opts, session)
    first = diags[0] if diags else None
    if first is None or first.bottleneck is not Bottleneck.GPU_BOUND:
        why = why_no_ncu(first) if first is not None else "ncu not run: the timeline gave no verdict."
        _say(why)
        session.notes.append(why)
        _report(opts, session)
        return session
    targets = top_kernels(tl, max_kernels=opts.top)
    if opts.kernel:
        pat = re.compile(opts.kernel)
        targets = [t for t in top_kernels(tl, max_kernels=64, min_share=0.0) if pat.search(t.short_name)][
            : opts.top
        ]
    if not targets:
        msg = (
            "ncu not run: the timeline verdict is gpu_bound but it holds no individual kernel (the GPU time is "
            "in CUDA graphs traced whole): rerun with --graph-nodes to trace the kernels inside them."
        )
        if opts.kernel:
            msg = f"ncu not run: no kernel in the timeline matches --kernel {opts.kernel!r}."
        _say(msg)
        session.notes.append(msg)
        _report(opts, session)
        return session
    shown = ", ".join(f"`{t.short_name}` {100 * t.share:.0f}%" for t in targets)
    _say(f"[2/3] the time is in kernels: profiling {len(targets)} with ncu ({shown})")
    if opts.no_counters:
        _static(opts, session, kernel_regex=_targets_regex(targets), why="--no-counters")
    else:
        try:
            run_ncu_targets(opts, session, tl, targets)
        except CounterPermissionError as exc:
            if not (opts.binary or _elf_program(opts.cmd)):
                raise
            _say(f"warning: {exc}")
            session.notes.append(str(exc))
            _static(opts, session, kernel_regex=_targets_regex(targets), why="ncu has no counter access")
    _say("[3/3] report")
    _report(opts, session)
    return session


def profile_sass(opts: ProfileOptions, session: Session) -> Session:
    """``kprof profile sass BINARY...``: static SASS reading only."""
    from kprof.capture_sass import static_analysis

    _check_cmd(opts)
    for binary in opts.cmd:
        diags, argv = static_analysis(binary, kernel_regex=opts.kernel)
        session.commands.append(shlex.join(argv))
        session.add(diags)
    return session


RUNNERS: dict[str, Callable[[ProfileOptions, Session], Session]] = {
    "nsys": profile_nsys,
    "ncu": profile_ncu,
    "auto": profile_auto,
    "sass": profile_sass,
}
