"""``kprof profile``: argument lists, the workflow, and the failure messages.

The CLI tests run ``python -m kprof profile ...`` with stand-in ``nsys``, ``ncu`` and ``cuobjdump``
executables (tests/fake_tools/) first on PATH. The stand-ins print the real tools' output lines,
write their outputs by copying real samples from data/samples (synthetic ones when
``KPROF_FAKE_SYNTHETIC`` is set or the samples are missing), exit with the real exit codes, and
log every argv to a file, which the tests read back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kprof import capture
from kprof.capture import (
    KernelTarget,
    ncu_argv,
    nsys_export_argv,
    nsys_profile_argv,
    top_kernels,
    warmup_launches,
)
from kprof.capture_sass import (
    STATIC_CONFIDENCE_CAP,
    diagnose_sass,
    parse_cuobjdump,
    parse_nvdisasm,
)
from kprof.model import Bottleneck, Verdict
from kprof.timeline_model import KernelTable, Timeline

REPO = Path(__file__).resolve().parents[1]
FAKES = REPO / "tests" / "fake_tools"
SAMPLES = REPO / "data" / "samples"
GEMM = "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN"  # the synthetic gpu_bound timeline's kernel
REAL_GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"  # data/samples/timeline/gpu_bound.sqlite's
PERM_LINE = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on "
    "the target device 0. For instructions on enabling permissions and to get more information see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)


# ----------------------------------------------------------------------------- helpers
class Fakes:
    """Runs ``kprof profile`` with chosen stand-in tools on PATH, and reads back what they were given."""

    def __init__(self, tmp: Path, tools: tuple[str, ...] = ("nsys", "ncu", "cuobjdump")) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for t in tools:
            (self.bin / t).symlink_to(FAKES / t)
        self.log = tmp / "argv.jsonl"
        self.env = {
            "PATH": os.pathsep.join([str(self.bin), str(Path(sys.executable).parent)]),
            "PYTHONPATH": str(REPO),
            "KPROF_FAKE_LOG": str(self.log),
            "HOME": str(tmp),
            "KPROF_CACHE_DIR": str(tmp / "cache"),
        }

    def run(self, *args: str, report: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
        """``kprof profile ARGS``; without ``report=True``, ``--no-report`` (the HTML report takes seconds)."""
        if args and args[0] != "sass" and not report:
            args = (args[0], "--no-report", *args[1:])
        return subprocess.run(
            [sys.executable, "-m", "kprof", "profile", *args],
            capture_output=True,
            text=True,
            cwd=self.tmp,
            env={**self.env, **env},
            timeout=300,
        )

    def calls(self, tool: str | None = None) -> list[list[str]]:
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r["argv"] for r in rows if tool is None or r["tool"] == tool]


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    return Fakes(tmp_path)


PROGRAM = [sys.executable, "-c", "print('the profiled program ran')"]


def _fake_common():
    """The stand-ins' helper module (for its synthetic nsys export writer)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_fake_common", FAKES / "_fake_common.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def failing_program(code: int = 1) -> list[str]:
    return [sys.executable, "-c", f"import sys; print('boom'); sys.exit({code})"]


def needs_sample(*names: str) -> None:
    for n in names:
        if not (SAMPLES / n).is_file():
            pytest.skip(f"sample {n} not in data/samples")


def one_line_error(stderr: str) -> str:
    errs = [ln for ln in stderr.splitlines() if ln.startswith("kprof: error:")]
    assert len(errs) == 1, stderr
    assert "Traceback" not in stderr
    return errs[0]


# ----------------------------------------------------------------------------- argument lists
def test_nsys_argv_traces_cuda_nvtx_osrt_without_cpu_sampling():
    assert nsys_profile_argv(["python3", "app.py", "--x"], "out") == [
        "nsys", "profile", "-t", "cuda,nvtx,osrt", "-s", "none", "--cpuctxsw=none", "-f", "true",
        "-o", "out", "python3", "app.py", "--x",
    ]  # fmt: skip
    argv = nsys_profile_argv(["./app"], "o", cuda_profiler_range=True, graph_nodes=True)
    assert argv[argv.index("-f") + 2 : argv.index("-o")] == [
        "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--cuda-graph-trace=node",
    ]  # fmt: skip


def test_nsys_export_argv():
    assert nsys_export_argv("x.nsys-rep", "x.sqlite") == [
        "nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "-o", "x.sqlite", "x.nsys-rep",
    ]  # fmt: skip


def test_ncu_argv_source_import_no_clock_control_one_launch():
    assert ncu_argv(["./app", "1"], "k", kernel_filter="gemm", launch_skip=8) == [
        "ncu", "--set", "full", "--import-source", "yes", "--clock-control", "none", "-k", "gemm",
        "--launch-skip", "8", "--launch-count", "1", "-f", "-o", "k", "./app", "1",
    ]  # fmt: skip
    argv = ncu_argv(
        ["./app"], "k", kernel_filter="regex:g", replay_mode="application", profile_from_start=False
    )
    assert argv[argv.index("1") + 1 : argv.index("-f")] == [
        "--replay-mode", "application", "--profile-from-start", "off",
    ]  # fmt: skip
    assert "--replay-mode" not in ncu_argv(["./app"], "k", kernel_filter="g", replay_mode="kernel")


@pytest.mark.parametrize("n, skip", [(1, 0), (2, 1), (9, 1), (10, 1), (80, 8), (200, 20), (5000, 20)])
def test_warmup_launches(n, skip):
    assert warmup_launches(n) == skip


def test_default_output_names_the_script():
    assert capture.default_output(["python3", "-u", "x/train.py"]) == "kprof_train"
    assert capture.default_output(["python3", "-m", "pkg.bench"]) == "kprof_bench"
    assert capture.default_output(["/opt/app bin/solver", "-n", "3"]) == "kprof_solver"


# ----------------------------------------------------------------------------- which kernels
def _timeline(names, seq, durations, launch_type=None, shorts=()):
    n = len(seq)
    start = np.cumsum([0, *durations[:-1]]).astype(np.int64) + 1000
    return Timeline(
        source="t.sqlite", format="nsys",
        kernels=KernelTable(
            start_ns=start, end_ns=start + np.asarray(durations, np.int64), device=np.zeros(n, np.int16),
            stream=np.zeros(n, np.int32), correlation=np.arange(1, n + 1), name_id=np.asarray(seq, np.int32),
            names=tuple(names), short_names=tuple(shorts),
            launch_type=None if launch_type is None else np.asarray(launch_type, np.int8),
        ),
    )  # fmt: skip


def test_top_kernels_ranks_by_gpu_time_and_skips_warmup():
    # 30 launches of a long gemm interleaved with 30 short adds, plus a rare tiny kernel
    seq = [0, 1] * 30 + [2]
    tl = _timeline(
        ["void gemm<1>(float*)", "void add(float*)", "void tiny()"],
        seq,
        [100 if s == 0 else 10 for s in seq] + [],
    )
    targets = top_kernels(tl)
    assert [t.short_name for t in targets] == ["gemm"]  # add holds 9% < TOP_KERNEL_MIN_SHARE
    t = targets[0]
    assert (t.launches, t.launch_skip, t.cooperative, t.replay_mode) == (30, 3, False, "kernel")
    assert t.share == pytest.approx(3000 / 3310)
    assert "first 3 of 30 launches as warm-up" in t.skip_reason


def test_launch_skip_counts_other_instantiations_of_the_same_function_name():
    # ncu -k matches "vectorized_elementwise_kernel" for both instantiations, in launch order
    names = ["void vectorized_elementwise_kernel<Mul>(int)", "void vectorized_elementwise_kernel<Add>(int)"]
    seq = [0, 0, 1] * 20
    tl = _timeline(names, seq, [5] * len(seq))
    mul, add = top_kernels(tl)
    assert (mul.short_name, mul.launches, mul.launch_skip) == ("vectorized_elementwise_kernel", 40, 6)
    # the 3rd launch of Add (index 2 after skipping 2 of 20) is launch 8 among all matching launches
    assert (add.launches, add.launch_skip) == (20, 8)
    assert "which 40 launches of other instantiations share" in add.skip_reason


def test_cooperative_launch_means_application_replay():
    # nsys: launchType 1 regular, 2 cooperative single device (ENUM_CUDA_KERNEL_LAUNCH_TYPE), unlike CUPTI's 0/1
    tl = _timeline(
        ["void grid_sync_reduce()", "void add()"], [0, 1, 0, 1], [50, 5, 50, 5], launch_type=[2, 1, 2, 1]
    )
    coop = top_kernels(tl)[0]
    assert coop.cooperative and coop.replay_mode == "application"
    tl = _timeline(["void k()"], [0, 0], [5, 5], launch_type=[1, 1])
    assert not top_kernels(tl)[0].cooperative


def test_top_kernels_of_an_empty_timeline():
    assert top_kernels(Timeline(source="x", format="nsys")) == []


def test_top_kernels_on_the_real_gpu_bound_sample():
    needs_sample("timeline/gpu_bound.sqlite")
    from kprof.io import load

    tl = load(SAMPLES / "timeline" / "gpu_bound.sqlite")
    (t,) = top_kernels(tl)
    assert t.short_name == REAL_GEMM
    assert t.share > 0.95 and t.launches == 80 and t.launch_skip == 8 and not t.cooperative


# ----------------------------------------------------------------------------- static SASS
CUOBJDUMP_OUT = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

\tcode for sm_90
 Resource usage:
  Common:
   GLOBAL:0
  Function _Z5spillPf:
   REG:255 STACK:64 SHARED:0 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0
  Function _Z4gemmPK6__halfPf:
   REG:168 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:552 TEXTURE:0 SURFACE:0 SAMPLER:0

\tcode for sm_90
\t\tFunction : _Z5spillPf
\t.headerflags\t@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                /* 0x00000a00ff017b82 */
                                                                         /* 0x000fe40000000800 */
        /*0010*/                   STL [R1+0x10], R20 &wr=0x0 ?trans1;    /* 0x0000101401007387 */
                                                                         /* 0x000fe80000100800 */
        /*0020*/              @!P0 LDL R20, [R1+0x10] ;                  /* 0x0000100001148983 */
        /*0030*/                   FFMA R2, R20, R3, R2 ;                /* 0x0000000314027223 */
        /*0040*/                   EXIT ;                                /* 0x000000000000794d */
        /*0050*/                   BRA 0x50;                             /* 0xfffffffc00fc7947 */
\t\t..........

\t\tFunction : _Z4gemmPK6__halfPf
        /*0000*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64] ;
        /*0010*/                   HMMA.16816.F32 R8, R12, R16, R8 ;
        /*0020*/                   EXIT ;
\t\t..........
"""


def test_parse_cuobjdump_with_resources_predicates_and_scheduling_notes():
    spill, gemm = parse_cuobjdump(CUOBJDUMP_OUT)
    assert (spill.name, spill.arch, spill.registers, spill.stack_bytes) == ("_Z5spillPf", "sm_90", 255, 64)
    assert [s.text for s in spill.lines] == [
        "LDC R1, c[0x0][0x28]", "STL [R1+0x10], R20", "@!P0 LDL R20, [R1+0x10]", "FFMA R2, R20, R3, R2",
        "EXIT", "BRA 0x50",
    ]  # fmt: skip
    assert [s.pc for s in spill.lines][:3] == [0, 16, 32]
    assert [s.mnemonic for s in gemm.lines] == ["LDGSTS", "HMMA", "EXIT"]


def test_parse_nvdisasm():
    text = """
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
//--------------------- .text._Z1aPf             --------------------------
\t.section\t.text._Z1aPf,"ax",@progbits
_Z1aPf:
        /*0000*/                   LDL R0, [R1+0x4] ;
        /*0010*/                   EXIT ;
\t.section\t.text._Z1bPf,"ax",@progbits
_Z1bPf:
        /*0000*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;
"""
    a, b = parse_nvdisasm(text)
    assert (a.name, [s.mnemonic for s in a.lines]) == ("_Z1aPf", ["LDL", "EXIT"])
    assert (b.name, [s.mnemonic for s in b.lines]) == ("_Z1bPf", ["HGMMA"])


def test_static_diagnoses_are_inconclusive_with_capped_confidence():
    diags = diagnose_sass(parse_cuobjdump(CUOBJDUMP_OUT), cmd=["./app"])
    spill, gemm = diags
    assert spill.bottleneck is Bottleneck.LOCAL_MEMORY_SPILL and spill.verdict is Verdict.INCONCLUSIVE
    assert "register spills" in spill.headline and "LDL 1, STL 1" in spill.headline
    assert gemm.bottleneck is None and "tensor cores used, async copies used" in gemm.headline
    for d in diags:
        assert d.verdict is Verdict.INCONCLUSIVE
        assert d.confidence.value <= STATIC_CONFIDENCE_CAP
        assert "kprof profile ncu --kernel" in d.next_step and "./app" in d.next_step
    assert [d.subject.name for d in diagnose_sass(parse_cuobjdump(CUOBJDUMP_OUT), kernel_regex="gemm")] == [
        "_Z4gemmPK6__halfPf"
    ]


# ----------------------------------------------------------------------------- CLI: success paths
def test_profile_nsys_runs_capture_then_export_then_diagnosis(fakes):
    r = fakes.run("nsys", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_SYNTHETIC="1")
    assert r.returncode == 0, r.stderr
    assert fakes.calls() == [
        [
            "profile",
            "-t",
            "cuda,nvtx,osrt",
            "-s",
            "none",
            "--cpuctxsw=none",
            "-f",
            "true",
            "-o",
            "cap",
            *PROGRAM,
        ],
        ["export", "--type", "sqlite", "--force-overwrite", "true", "-o", "cap.sqlite", "cap.nsys-rep"],
    ]
    assert "the profiled program ran" in r.stderr  # the program's output streams on stderr
    assert "kprof: nsys: capturing the timeline: " in r.stderr
    assert r.stdout.startswith("[")  # the diagnosis, on stdout
    assert "gpu_bound" in r.stdout.splitlines()[0]
    assert "Files: cap.nsys-rep, cap.sqlite" in r.stdout


def test_auto_stops_after_nsys_when_the_host_is_the_limit(fakes):
    r = fakes.run("auto", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_TIMELINE="host_launch_bound", report=True)
    assert r.returncode == 0, r.stderr
    assert fakes.calls("ncu") == []
    assert r.stdout.splitlines()[0].startswith("[fix] host_launch_bound")
    assert "ncu not run: the GPU sits idle between many short launches" in r.stdout
    # it ends with the report: built when `kprof report` works here, else its exact command
    assert "Report: cap.html" in r.stdout or "kprof report cap.sqlite -o cap.html" in r.stdout


@pytest.mark.parametrize("synthetic", [True, False], ids=["synthetic", "real-sample"])
def test_auto_profiles_the_top_kernel_past_warmup_when_gpu_bound(fakes, synthetic):
    env = {"KPROF_FAKE_SYNTHETIC": "1"} if synthetic else {}
    if not synthetic:
        needs_sample("timeline/gpu_bound.sqlite")
    kernel = GEMM if synthetic else REAL_GEMM
    rep = SAMPLES / "ncu" / "tensor_core_bound.ncu-rep.gz"
    if rep.is_file():
        env["KPROF_FAKE_NCU_SAMPLE"] = str(rep)
    r = fakes.run("auto", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_KERNELS=kernel, **env)
    assert r.returncode == 0, r.stderr
    (ncu,) = fakes.calls("ncu")
    assert ncu == [
        "--set", "full", "--import-source", "yes", "--clock-control", "none", "-k", kernel,
        "--launch-skip", "8", "--launch-count", "1", "-f", "-o", f"cap.k1.{kernel}", *PROGRAM,
    ]  # fmt: skip
    assert "skips its first 8 of 80 launches as warm-up" in r.stderr
    assert f"==PROF== Report: {fakes.tmp / f'cap.k1.{kernel}.ncu-rep'}" in r.stderr
    out = r.stdout
    assert "gpu_bound" in out.splitlines()[0]
    if rep.is_file():  # the kernel diagnosis follows the timeline's, durations from the timeline
        assert out.count("\n[") >= 1 and "nvjet" in out.split("\n\n", 1)[1]
    assert f"cap.k1.{kernel}.ncu-rep" in out


def test_auto_with_cuda_profiler_range_tells_ncu_to_start_at_cudaProfilerStart(fakes):
    r = fakes.run("auto", "--cuda-profiler-range", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_SYNTHETIC="1",
                  KPROF_FAKE_KERNELS=GEMM)  # fmt: skip
    assert r.returncode == 0, r.stderr
    nsys = fakes.calls("nsys")[0]
    assert "--capture-range=cudaProfilerApi" in nsys and "--capture-range-end=stop" in nsys
    (ncu,) = fakes.calls("ncu")
    assert ncu[ncu.index("--profile-from-start") + 1] == "off"


def test_auto_uses_application_replay_for_a_cooperative_kernel(fakes):
    r = fakes.run("auto", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_TIMELINE="cooperative",
                  KPROF_FAKE_KERNELS="persistent_reduce")  # fmt: skip
    assert r.returncode == 0, r.stderr
    (ncu,) = fakes.calls("ncu")
    assert ncu[ncu.index("-k") + 1] == "persistent_reduce"
    assert ncu[ncu.index("--replay-mode") + 1] == "application"
    assert "cooperative (grid-wide sync)" in r.stderr


def test_profile_ncu_with_a_timeline_detects_cooperative_launches_and_skips_warmup(fakes):
    fc = _fake_common()
    tl = fakes.tmp / "coop.sqlite"
    fc.write_synthetic_sqlite(str(tl), "cooperative")
    r = fakes.run("ncu", "--kernel", "persistent", "--timeline", str(tl), "-o", "k", "--", *PROGRAM,
                  KPROF_FAKE_KERNELS="persistent_reduce")  # fmt: skip
    assert r.returncode == 0, r.stderr
    (ncu,) = fakes.calls("ncu")
    assert ncu[: ncu.index("-f")] == [
        "--set", "full", "--import-source", "yes", "--clock-control", "none", "-k", "regex:persistent",
        "--launch-skip", "8", "--launch-count", "1", "--replay-mode", "application",
    ]  # fmt: skip


def test_profile_ncu_without_timeline_profiles_the_first_launch_and_says_so(fakes):
    r = fakes.run("ncu", "--kernel", "^vectorized", "--set", "detailed", "-o", "k", "--", *PROGRAM)
    assert r.returncode == 0, r.stderr
    (ncu,) = fakes.calls("ncu")
    assert ncu[:12] == [
        "--set", "detailed", "--import-source", "yes", "--clock-control", "none", "-k", "regex:^vectorized",
        "--launch-skip", "0", "--launch-count", "1",
    ]  # fmt: skip
    assert "warm-up included" in r.stderr


def test_profile_json_output(fakes):
    r = fakes.run("nsys", "--json", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_TIMELINE="host_launch_bound")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"diagnoses", "files", "commands", "notes", "report", "report_command"}
    assert out["diagnoses"][0]["bottleneck"] == "host_launch_bound"
    assert out["files"] == ["cap.nsys-rep", "cap.sqlite"]
    assert out["commands"][0].split()[1:3] == ["profile", "-t"]


# ----------------------------------------------------------------------------- CLI: failures
def test_err_nvgpuctrperm_is_explained_with_the_fix(fakes):
    r = fakes.run("ncu", "--kernel", "gemm", "--", *PROGRAM, KPROF_FAKE_NCU="perm")
    assert r.returncode == 2
    assert PERM_LINE in r.stderr  # ncu's own line is streamed through
    assert "the profiled program ran" in r.stderr  # the program kept running without being profiled
    err = one_line_error(r.stderr)
    assert "ERR_NVGPUCTRPERM" in err
    assert "--cap-add SYS_ADMIN" in err and "NVreg_RestrictProfilingToAdminUsers=0" in err
    assert "`ncu --version` succeeding proves nothing" in err
    assert r.stdout == ""


def test_err_nvgpuctrperm_in_auto_falls_back_to_static_sass_when_a_binary_is_known(fakes):
    cubin = fakes.tmp / "kernels.cubin"
    cubin.write_text("FAKE-CUBIN\n")
    r = fakes.run("auto", "--binary", str(cubin), "-o", "cap", "--", *PROGRAM, KPROF_FAKE_NCU="perm",
                  KPROF_FAKE_SYNTHETIC="1", KPROF_FAKE_KERNELS=GEMM, KPROF_FAKE_SASS="tensor_core_gemm")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert fakes.calls("cuobjdump") == [["--dump-sass", "--dump-resource-usage", str(cubin)]]
    assert "ERR_NVGPUCTRPERM" in r.stdout  # the explanation is part of the result
    # the timeline's top kernel (a library GEMM) is not in the cubin: all of its kernels are read instead
    assert f"The timeline's top kernels ({GEMM}) are not in {cubin}" in r.stdout
    assert "[inconclusive] undetermined: _Z14gemm_wgmma_tma" in r.stdout


def test_err_nvgpuctrperm_in_auto_without_binary_prints_the_timeline_then_fails(fakes):
    r = fakes.run("auto", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_NCU="perm", KPROF_FAKE_SYNTHETIC="1",
                  KPROF_FAKE_KERNELS=GEMM)  # fmt: skip
    assert r.returncode == 2
    assert "gpu_bound" in r.stdout.splitlines()[0]  # what was diagnosed before the failure
    assert "NVreg_RestrictProfilingToAdminUsers=0" in one_line_error(r.stderr)


def test_no_kernel_matching_the_regex(fakes):
    r = fakes.run("ncu", "--kernel", "no_such_kernel", "--", *PROGRAM)
    assert r.returncode == 2
    assert "==WARNING== No kernels were profiled." in r.stderr
    assert "Available Kernels:" in r.stderr
    err = one_line_error(r.stderr)
    assert "no kernel launch matched `-k regex:no_such_kernel`" in err
    assert "function name without namespace, template arguments or parameters" in err
    assert f"The program launched: `{GEMM}`, `vectorized_elementwise_kernel`, `persistent_reduce`." in err


def test_no_kernel_matching_because_launch_skip_is_too_large(fakes):
    r = fakes.run("ncu", "--kernel", "vectorized", "--launch-skip", "5000", "--", *PROGRAM)
    assert r.returncode == 2
    assert "after skipping 5000 matching launches" in one_line_error(r.stderr)


@pytest.mark.parametrize("tool", ["nsys", "ncu"])
def test_profiled_command_exiting_nonzero(fakes, tool):
    args = ["--kernel", "vectorized"] if tool == "ncu" else []
    r = fakes.run(tool, *args, "-o", "cap", "--", *failing_program(3))
    assert r.returncode == 2
    err = one_line_error(r.stderr)
    assert f"the profiled command exited with status 3 under {tool}" in err
    assert "boom" in err  # the program's last line
    assert "fix it first" in err
    if tool == "ncu":  # ncu 2025.3's own line; it exits with the program's status
        assert "==ERROR== The application returned an error code (3)." in r.stderr
    if tool == "nsys":
        assert fakes.calls("nsys") == [fakes.calls("nsys")[0]]  # no export of a failed run
        assert "What was recorded is kept: cap.nsys-rep" in err


def test_a_crash_in_ncu_report_does_not_lose_the_other_results(fakes):
    # NVIDIA's ncu_report is native code; the copy in Nsight Compute's extras/python crashed (SIGSEGV)
    # under Python 3.12 on the H200 machine. The kernel diagnosis runs in a child process.
    crash = fakes.tmp / "crash"
    crash.mkdir()
    (crash / "ncu_report.py").write_text(
        "import os, signal\n\ndef load_report(path):\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    r = fakes.run("auto", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_SYNTHETIC="1", KPROF_FAKE_KERNELS=GEMM,
                  PYTHONPATH=f"{crash}{os.pathsep}{REPO}")  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "gpu_bound" in r.stdout.splitlines()[0]  # the timeline's verdict is printed
    assert f"cap.k1.{GEMM}.ncu-rep was captured but not diagnosed here" in r.stdout
    assert f"crashed (SIGSEGV) in NVIDIA's ncu_report module ({crash / 'ncu_report.py'})" in r.stdout
    assert "kprof diagnose cap.k1." in r.stdout
    assert "Traceback" not in r.stderr


def test_ncu_driver_error_is_reported(fakes):
    r = fakes.run("ncu", "--kernel", "vectorized", "--", *PROGRAM, KPROF_FAKE_NCU="driver_error")
    assert r.returncode == 2
    assert "ncu failed (exit status 1): ==ERROR== An error was reported by the driver" in one_line_error(
        r.stderr
    )


@pytest.mark.parametrize(
    "tools, tool, args, expect",
    [
        (("ncu",), "nsys", (), "nsys (Nsight Systems) is not on PATH"),
        (("nsys",), "ncu", ("--kernel", "k"), "ncu (Nsight Compute) is not on PATH"),
        (("nsys",), "auto", (), "ncu (Nsight Compute) is not on PATH"),
    ],
)
def test_tool_missing_from_path(tmp_path, tools, tool, args, expect):
    f = Fakes(tmp_path, tools)
    r = f.run(tool, *args, "-o", "cap", "--", *PROGRAM, KPROF_FAKE_SYNTHETIC="1", KPROF_FAKE_KERNELS=GEMM)
    assert r.returncode == 2
    err = one_line_error(r.stderr)
    assert expect in err and "add" in err and "PATH" in err
    if tool == "auto":  # nsys ran and its verdict is printed before the failure
        assert "gpu_bound" in r.stdout.splitlines()[0]


def test_nsys_importer_failure_leaves_a_qdstrm(fakes):
    r = fakes.run("nsys", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_NSYS="qdstrm")
    assert r.returncode == 2
    err = one_line_error(r.stderr)
    assert "cap.qdstrm" in err and "importer failed" in err and "source .gpu/env.sh" in err


def test_cuda_profiler_range_never_started(fakes):
    r = fakes.run("nsys", "--cuda-profiler-range", "--", *PROGRAM, KPROF_FAKE_NSYS="no_range")
    assert r.returncode == 2
    err = one_line_error(r.stderr)
    assert "never called cudaProfilerStart()" in err and "torch.cuda.profiler.start()" in err


def test_export_failure_keeps_the_report(fakes):
    r = fakes.run("nsys", "-o", "cap", "--", *PROGRAM, KPROF_FAKE_NSYS="export_fail")
    assert r.returncode == 2
    err = one_line_error(r.stderr)
    assert "`nsys export` failed (exit status 1" in err and "cap.nsys-rep is kept" in err


@pytest.mark.parametrize(
    "args, expect",
    [
        (("ncu", "--", *PROGRAM), "needs --kernel REGEX"),
        (("nsys",), "needs -- CMD ..."),
        (("nsys", "--", "no-such-program-xyz"), "`no-such-program-xyz`, is not on PATH"),
        (("sass",), "needs BINARY"),
    ],
)
def test_usage_errors_exit_2_with_one_line(fakes, args, expect):
    r = fakes.run(*args)
    assert r.returncode == 2
    assert expect in one_line_error(r.stderr)
    assert fakes.calls() == []


# ----------------------------------------------------------------------------- CLI: no-counters mode
def test_profile_sass_reads_the_binary_statically(fakes):
    cubin = fakes.tmp / "k.cubin"
    cubin.write_text("FAKE-CUBIN\n")
    r = fakes.run("sass", "--json", str(cubin))
    assert r.returncode == 0, r.stderr
    assert fakes.calls("cuobjdump") == [["--dump-sass", "--dump-resource-usage", str(cubin)]]
    diags = json.loads(r.stdout)["diagnoses"]
    assert [d["bottleneck"] for d in diags] == ["local_memory_spill", "no_tensor_cores", None]
    assert all(d["verdict"] == "inconclusive" for d in diags)
    assert all(d["confidence"]["value"] <= STATIC_CONFIDENCE_CAP for d in diags)
    assert "dynamically indexed array" in diags[0]["headline"]
    assert all(d["file"] == str(cubin) for d in diags)


def test_nsys_no_counters_adds_static_sass_of_the_top_kernels(fakes):
    cubin = fakes.tmp / "k.cubin"
    cubin.write_text("FAKE-CUBIN\n")
    r = fakes.run("nsys", "--no-counters", "--binary", str(cubin), "--kernel", "per_thread", "--", *PROGRAM,
                  KPROF_FAKE_SYNTHETIC="1")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert fakes.calls("ncu") == []
    assert "[inconclusive] local_memory_spill: per_thread_table" in r.stdout
    assert "static SASS (what the compiler emitted, not what ran)" in r.stdout


def test_sass_of_a_file_without_device_code(fakes):
    f = fakes.tmp / "plain.bin"
    f.write_bytes(b"\x7fELF not cuda")
    r = fakes.run("sass", str(f))
    assert r.returncode == 2
    assert "found no SASS in it" in one_line_error(r.stderr)


def test_sass_without_cuobjdump(tmp_path):
    f = Fakes(tmp_path, ("nsys", "ncu"))
    cubin = tmp_path / "k.cubin"
    cubin.write_text("FAKE-CUBIN\n")
    r = f.run("sass", str(cubin))
    assert r.returncode == 2
    assert "neither cuobjdump nor nvdisasm is on PATH" in one_line_error(r.stderr)


# ----------------------------------------------------------------------------- in-process pieces
def test_why_no_ncu_covers_every_timeline_verdict():
    from kprof.model import Confidence, Diagnosis, Subject, SubjectKind

    for b in (Bottleneck.HOST_LAUNCH_BOUND, Bottleneck.SYNC_BOUND, Bottleneck.TRANSFER_BOUND,
              Bottleneck.STARTUP_BOUND):  # fmt: skip
        d = Diagnosis(subject=Subject(kind=SubjectKind.CAPTURE, name="c"), bottleneck=b, verdict=Verdict.FIX,
                      headline="h", confidence=Confidence(value=0.9))  # fmt: skip
        assert capture.why_no_ncu(d).startswith("ncu not run: ")
    d = Diagnosis(subject=Subject(kind=SubjectKind.CAPTURE, name="c"), bottleneck=None,
                  verdict=Verdict.INCONCLUSIVE, headline="h", next_step="capture longer")  # fmt: skip
    assert "undetermined" in capture.why_no_ncu(d) and "capture longer" in capture.why_no_ncu(d)


def test_run_tool_drops_redrawn_progress_bars_from_a_log_and_keeps_error_lines():
    import io

    code = (
        "import sys\n"
        "for i in range(50): sys.stdout.write(f'Processing 9233 events: [{i}%]\\r')\n"
        "print('\\nGenerated:')\n"
        "print('==ERROR== something', file=sys.stderr)\n"
        "sys.exit(5)\n"
    )
    log = io.StringIO()
    run = capture.run_tool([sys.executable, "-c", code], echo=log)
    assert run.returncode == 5
    assert log.getvalue().count("Processing") == 1  # the bar's last state, not fifty redraws
    assert run.has("Generated:") and run.lines_with("==ERROR==") == ["==ERROR== something"]


def test_kernel_target_filter_is_the_exact_function_name():
    t = KernelTarget(name="void k<1>()", short_name="k", gpu_time_ns=1, share=1.0, launches=1, launch_skip=0,
                     skip_reason="")  # fmt: skip
    assert t.kernel_filter == "k" and t.replay_mode == "kernel"


def test_fake_tools_are_executable():
    for t in ("nsys", "ncu", "cuobjdump"):
        assert os.access(FAKES / t, os.X_OK), t
        assert shutil.which(t, path=str(FAKES)) is not None
