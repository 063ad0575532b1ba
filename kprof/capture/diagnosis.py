"""The diagnoses of what was captured: the timeline in this process, each kernel report in a child
process (a crash of NVIDIA's native module is a message, not the end of the run), and why ncu is not
run when the timeline says the time is not in kernels."""

from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.capture.tools import CaptureError
from kprof.errors import KprofError, MissingToolError
from kprof.model import Bottleneck, Diagnosis

if TYPE_CHECKING:
    from kprof.timeline_model import Timeline


def _ensure_ncu_report() -> None:
    """Make NVIDIA's ``ncu_report`` importable from the Nsight Compute install when pip has not installed it.

    Nsight Compute ships the module in ``<nsight-compute>/extras/python``; the device machine has
    ncu but not the ``ncu-report`` wheel.
    """
    try:
        import ncu_report  # noqa: F401
    except ImportError:
        pass
    else:
        return
    roots: list[str] = []
    ncu = shutil.which("ncu")
    if ncu:
        real = Path(ncu).resolve()
        roots += [str(real.parent / "extras" / "python"), str(real.parent.parent / "extras" / "python")]
    roots += sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)
    roots += sorted(glob.glob("/usr/local/cuda*/nsight-compute-*/extras/python"), reverse=True)
    for r in roots:
        if os.path.isfile(os.path.join(r, "ncu_report.py")) and r not in sys.path:
            sys.path.append(r)
            return


def load_timeline(sqlite: str) -> Timeline:
    from kprof.io import load
    from kprof.timeline_model import Timeline

    tl = load(sqlite)
    if not isinstance(tl, Timeline):  # pragma: no cover - the loader picks by extension
        raise CaptureError(f"{sqlite} did not load as a timeline")
    return tl


def diagnose_timeline(tl: Timeline) -> list[Diagnosis]:
    from kprof.api import diagnose

    return diagnose(tl)


_CHILD = (
    "import sys; from kprof.capture.diagnosis import _diagnose_child; sys.exit(_diagnose_child(sys.argv[1:]))"
)

_NCU_REPORT_FROM = "kprof-ncu-report-module: "


def _diagnose_child(argv: Sequence[str]) -> int:
    """In the child process: diagnose ``argv[0]`` (an .ncu-rep) with the timeline ``argv[1]``; JSON on stdout."""
    from kprof.api import diagnose

    rep, tl = argv[0], (argv[1] if len(argv) > 1 and argv[1] else None)
    # ncu_report first: the copy in Nsight Compute 2025.3's extras/python segfaults (in get_version) when
    # it is loaded after pandas/pyarrow, which loading the timeline imports (measured on the H200 machine).
    try:
        _ensure_ncu_report()
        import ncu_report

        print(_NCU_REPORT_FROM + str(getattr(ncu_report, "__file__", "?")), file=sys.stderr, flush=True)
    except ImportError:
        pass
    try:
        diags = diagnose(rep, timeline=tl)
    except MissingToolError as exc:
        print(str(exc), file=sys.stderr)
        return 4
    except KprofError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    json.dump({"diagnoses": [d.to_dict() for d in diags]}, sys.stdout)
    return 0


def diagnose_kernel_report(rep: str, timeline: str | None) -> list[Diagnosis]:
    """The kernel diagnosis of ``rep``, with durations from the ``timeline`` file, run in a child process.

    NVIDIA's ``ncu_report`` is a native module: a crash inside it must not take the capture's other
    results with it. On the H200 machine the copy in Nsight Compute 2025.3's extras/python segfaulted
    when imported after the timeline was loaded in the same process (pandas/pyarrow already loaded); the
    child imports it first, and a crash that remains is reported, not fatal.
    """
    import signal

    pkg_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONFAULTHANDLER"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, rep, timeline or ""],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode == 0:
        return [Diagnosis.from_dict(d) for d in json.loads(proc.stdout)["diagnoses"]]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    module = next((ln[len(_NCU_REPORT_FROM) :] for ln in lines if ln.startswith(_NCU_REPORT_FROM)), None)
    lines = [ln for ln in lines if not ln.startswith(_NCU_REPORT_FROM)]
    if proc.returncode == 4:
        raise MissingToolError(lines[-1] if lines else "the ncu_report module is missing")
    if proc.returncode == 3:
        raise CaptureError(lines[-1] if lines else f"{rep} could not be diagnosed")
    if proc.returncode < 0:
        try:
            why = signal.Signals(-proc.returncode).name
        except ValueError:
            why = f"signal {-proc.returncode}"
        where = f"NVIDIA's ncu_report module ({module})" if module else "the kernel diagnosis"
        where_frames = [ln.strip() for ln in lines if ln.strip().startswith("File ")][:2]
        frames = f" (innermost: {' / '.join(where_frames)})" if where_frames else ""
        raise CaptureError(
            f"the kernel diagnosis of {rep} crashed ({why}) in {where}{frames}. The report itself is kept; "
            "diagnose it where `pip install ncu-report` works: `kprof diagnose " + shlex.quote(rep) + "`."
        )
    raise CaptureError(
        f"the kernel diagnosis of {rep} failed (exit status {proc.returncode}): "
        f"{' | '.join(lines[-3:]) or 'no output'}; rerun with KPROF_DEBUG=1 and report it"
    )


WHY_NO_NCU: dict[Bottleneck | None, str] = {
    Bottleneck.HOST_LAUNCH_BOUND: "the GPU sits idle between many short launches: the time goes to launching "
    "them (Python and framework dispatch), not to running them. ncu times each kernel alone and would show "
    "healthy kernels; cut the launch count first (fusion, foreach ops, CUDA graphs, torch.compile).",
    Bottleneck.HOST_COMPUTE_BOUND: "the GPU waits while the host computes something else (data loading, "
    "preprocessing, Python logic) with no CUDA call in the gaps. ncu would profile kernels that are not the "
    "problem; move that host work off the critical path first (DataLoader workers, preprocessing on the GPU).",
    Bottleneck.SYNC_BOUND: "the host keeps blocking on the GPU (.item(), synchronize, device-to-host copies in "
    "the loop), and the GPU idles while the host catches up. ncu replays kernels one at a time and cannot see "
    "those waits; remove the syncs first.",
    Bottleneck.TRANSFER_BOUND: "copies, not kernels, take the time (or stall because they are pageable or not "
    "overlapped). ncu profiles kernels, not copies; fix the transfers first (pinned memory, fewer and larger "
    "copies, overlap on a side stream).",
    Bottleneck.STARTUP_BOUND: "one-time start-up (module loading, library handles, allocator growth) dominates "
    "this capture, so its kernels are not the steady state. Capture the steady state: bracket the loop with "
    "cudaProfilerStart/Stop (torch.cuda.profiler.start()/stop()) and pass --cuda-profiler-range, or run more "
    "iterations.",
    Bottleneck.COMMUNICATION_BOUND: "exposed communication, not computation, takes the time; ncu would profile "
    "the compute kernels that are not the problem.",
    Bottleneck.STRAGGLER: "one rank is slower than the others; find out why on that rank before profiling kernels.",
    Bottleneck.LOAD_IMBALANCE: "the ranks do unequal work; balance it before profiling kernels.",
}


def why_no_ncu(d: Diagnosis) -> str:
    """Why a kernel profiler would not help, for a timeline verdict other than ``gpu_bound``."""
    if d.bottleneck in WHY_NO_NCU:
        return f"ncu not run: {WHY_NO_NCU[d.bottleneck]}"
    step = f" Next step: {d.next_step}" if d.next_step else ""
    return (
        f"ncu not run: the timeline verdict is {d.bottleneck.value if d.bottleneck else 'undetermined'} "
        f"({d.verdict.value}), not gpu_bound, so the time is not known to be in kernels and profiling one "
        f"would not say what limits the program.{step}"
    )
