"""The construct on the responsible line and the one change to it (kprof.diagnose.fixes.constructs), on launches built
in code: the SASS of each construct with its per-PC counters and an embedded CUDA C++ file, diagnosed end to end. Each
class is checked where it applies and on its look-alike, where the other change must come out: a compile-time
division is not told about run-time division, a data-derived branch gets binning and a thread-index branch the warp
mapping, a spill without a cap is not told to loosen __launch_bounds__, a half kernel without round trips stays
healthy."""

from __future__ import annotations

from collections.abc import Sequence

from kprof.diagnose.kernel import diagnose_launch
from kprof.kernel_model import KernelLaunch, Metric, SassLine
from kprof.model import Bottleneck, Diagnosis, Verdict
from tests.diagnose.test_kernel import (
    DRAM,
    DURATION,
    ISSUE,
    L1,
    L2,
    MEM,
    SOL,
    THREADS,
    _check_contract,
    base_metrics,
)

B = Bottleneck
H200 = {
    "multiprocessor_count": 132,
    "max_warps_per_multiprocessor": 64,
    "max_registers_per_block": 65536,
    "max_registers_per_thread": 255,
    "display_name": "NVIDIA H200",
}
FILE = "k.cu"


def source(lines: dict[int, str], n: int = 40) -> str:
    return "\n".join(lines.get(i, "") for i in range(1, n + 1))


def kernel(
    metrics: dict[str, float | None],
    rows: Sequence[tuple],
    src: dict[int, str],
    *,
    regs: int = 32,
    block: int = 256,
    name: str = "k",
) -> KernelLaunch:
    m = base_metrics()
    for key, v in metrics.items():
        if v is None:
            m.pop(key, None)
        else:
            m[key] = v
    sass = []
    for i, row in enumerate(rows):
        text, line, n = row[0], row[1], row[2]
        extra = row[3] if len(row) > 3 else {}
        counters = {"inst_executed": float(n), "thread_inst_executed": 32.0 * n, **extra}
        sass.append(SassLine(pc=0x1000 + 16 * i, text=text, file=FILE, line=line, counters=counters))
    return KernelLaunch(
        id=0,
        name=name,
        demangled_name=name,
        grid=(16 * 132 * 8, 1, 1),
        block=(block, 1, 1),
        registers_per_thread=regs,
        device="NVIDIA H200",
        compute_capability="9.0",
        device_attributes=H200,
        metrics={k: Metric(v, "ns" if k == DURATION else "") for k, v in m.items()},
        sass=tuple(sass),
        source_files={FILE: source(src)},
    )


def diag(k: KernelLaunch) -> Diagnosis:
    d = diagnose_launch(k)
    _check_contract(d)
    return d


def bra(row: int) -> str:
    return f"BRA 0x{0x1000 + 16 * row:x}"


ISSUE_BOUND = {SOL: 88.0, ISSUE: 88.0, MEM: 2.0, DRAM: 1.0, L2: 2.0, L1: 3.0}

# ----------------------------------------------------------------------------- division
DIV_SRC = {
    11: 'extern "C" __global__ void k(unsigned* __restrict__ out, int W, int per_thread) {',
    15: "    for (int k = 0; k < per_thread; ++k) {",
    16: "        const int i = tid + k * stride;",
    17: "        const int row = i / W;",
    18: "        const int col = i % W;",
    19: "        acc += (unsigned)(row ^ col);",
}
RUNTIME_DIV = [
    ("LDC R12, c[0x0][0x218]", 18, 1e4),
    ("IABS R10, R12", 18, 1e4),
    ("I2F.RP R8, R10", 18, 1e4),
    ("MUFU.RCP R8, R8", 18, 1e4),
    ("F2I.FTZ.U32.TRUNC.NTZ R3, R8", 18, 1e4),
    ("IMAD.HI.U32 R2, R3, R13, R2", 18, 1e4),
    ("IMAD.HI.U32 R16, R2, R25, RZ", 18, 1e6),  # 6: the loop
    ("IMAD R25, R10, R16, R25", 18, 1e6),
    ("ISETP.GT.U32.AND P4, PT, R10, R25, PT", 18, 1e6),
    ("@!P4 IMAD.IADD R25, R25, 0x1, -R10", 18, 1e6),
    ("@!P4 IADD3 R16, R16, 0x1, RZ", 18, 1e6),
    ("ISETP.GE.U32.AND P3, PT, R25, R10, PT", 18, 1e6),
    ("@P3 VIADD R16, R16, 0x1", 18, 1e6),
    ("LOP3.LUT R9, R25, R16, RZ, 0x3c, !PT", 19, 1e6),
    ("IADD3 R9, R9, R19, RZ", 19, 1e6),
    ("ISETP.NE.AND P1, PT, R25, RZ, PT", 15, 1e6),
    ("@P1 " + bra(6), 15, 1e6),
]


def test_a_runtime_division_names_the_argument_and_makes_it_a_constant() -> None:
    d = diag(kernel(ISSUE_BOUND, RUNTIME_DIV, DIV_SRC))
    assert d.bottleneck is B.INSTRUCTION_BOUND and d.verdict is Verdict.FIX
    assert "Line 18 (`const int col = i % W;`) divides by `W`, the kernel's second argument" in d.mechanism
    assert "I2F.RP, MUFU.RCP, F2I.FTZ.U32.TRUNC.NTZ" in d.mechanism
    assert "template <int W> __global__ void k(unsigned* __restrict__ out, int per_thread)" in d.fix
    assert "`const int col = i & (W - 1);`" in d.fix and "`const int row = i >> log2_W;`" in d.fix
    assert "vector loads" not in d.fix  # one change, not the instruction-overhead menu


def test_a_compile_time_division_is_not_told_about_runtime_division() -> None:
    src = {**DIV_SRC, 17: "        const int row = i / 1000;", 18: "        const int col = i % 1000;"}
    rows = [
        ("IMAD.HI.U32 R2, R3, 0x10624dd3, RZ", 17, 1e6),  # 0
        ("SHF.R.U32.HI R2, RZ, 0x6, R2", 17, 1e6),
        ("IMAD R4, R2, -0x3e8, R3", 18, 1e6),
        ("LOP3.LUT R9, R4, R2, RZ, 0x3c, !PT", 19, 1e6),
        ("IADD3 R9, R9, R19, RZ", 19, 1e6),
        ("IADD3 R25, R25, 0x1, RZ", 15, 1e6),
        ("ISETP.NE.AND P1, PT, R25, RZ, PT", 15, 1e6),
        ("@P1 " + bra(0), 15, 1e6),
    ]
    d = diag(kernel(ISSUE_BOUND, rows, src))
    assert d.bottleneck is B.INSTRUCTION_BOUND
    assert "run time" not in d.mechanism and "run time" not in d.fix
    assert "template" not in d.fix and "MUFU.RCP" not in d.mechanism


# ----------------------------------------------------------------------------- branches
BRANCH_SRC = {
    21: 'extern "C" __global__ void k(const float* __restrict__ x, const unsigned char* __restrict__ flag, float* y) {',
    27: "    const int i = blockIdx.x * blockDim.x + threadIdx.x;",
    28: "    const bool odd = threadIdx.x & 1;",
    25: "    if (flag[i]) v = path_a(v);",
    31: "    if (odd) v = path_a(v);",
    32: "    else     v = path_b(v);",
}
DIVERGED = {THREADS: 16.0, "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio": 16.0, SOL: 95.0,
            ISSUE: 95.0, MEM: 1.0, DRAM: 0.5, L2: 1.0, L1: 1.0}  # fmt: skip


def branch_rows(condition: list[tuple], line: int) -> list[tuple]:
    n = len(condition)
    return [
        *condition,
        ("BSSY B0, 0x%x" % (0x1000 + 16 * (n + 7)), line, 1e5),
        ("@P0 " + bra(n + 4), line, 1e5, {"smsp__branch_targets_threads_divergent": 1e5,
                                          "thread_inst_executed_true": 16e5}),
        ("FFMA.FTZ R5, R5, R2, 0.125", line, 1e7, {"thread_inst_executed": 16e7}),
        (bra(n + 6), line, 1e5, {"thread_inst_executed": 16e5}),
        ("FFMA.FTZ R5, R5, R5, -0.375", 32, 1e7, {"thread_inst_executed": 16e7}),
        ("FFMA.FTZ R5, R5, R5, -0.375", 32, 1e7, {"thread_inst_executed": 16e7}),
        ("BSYNC B0", 32, 2e5),
        ("STG.E desc[UR4][R2.64], R5", 33, 1e5),
    ]  # fmt: skip


def test_a_branch_on_the_thread_index_gets_the_warp_mapping() -> None:
    rows = branch_rows(
        [("S2R R7, SR_TID.X", 27, 1e5), ("LOP3.LUT R4, R7, 0x1, RZ, 0xc0, !PT", 28, 1e5),
         ("ISETP.NE.U32.AND P0, PT, R4, 0x1, PT", 28, 1e5)], 31
    )  # fmt: skip
    d = diag(kernel(DIVERGED, rows, BRANCH_SRC))
    assert d.bottleneck is B.WARP_DIVERGENCE
    assert "computed from the thread index on line 28 (`const bool odd = threadIdx.x & 1;`)" in d.mechanism
    assert (
        "line 28: `const bool odd = (threadIdx.x / 32) & 1;` instead of `const bool odd = threadIdx.x & 1;`"
        in d.fix
    )
    assert "partition" not in d.fix and "sort" not in d.fix


def test_a_branch_on_loaded_data_gets_binning() -> None:
    rows = branch_rows(
        [("LDG.E.U8.CONSTANT R6, desc[UR4][R6.64]", 25, 1e5), ("ISETP.NE.AND P0, PT, R6, RZ, PT", 25, 1e5)],
        25,
    )
    d = diag(kernel(DIVERGED, rows, BRANCH_SRC))
    assert d.bottleneck is B.WARP_DIVERGENCE
    assert "the condition comes from loaded data" in d.mechanism
    assert "stable partition" in d.fix and "threadIdx.x / 32" not in d.fix


# ----------------------------------------------------------------------------- spills
SPILLED = {"l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum": 6.7e7, "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum": 1e8,
           L2: 93.0, MEM: 90.0}  # fmt: skip
SPILL_ROWS = [
    ("STL [R1+0x10], R5", 19, 1e6, {"memory_l2_theoretical_sectors_local": 1e8}),
    ("FFMA R6, R2, R3, R6", 19, 1e6),
    ("LDL R5, [R1+0x10]", 19, 1e6, {"memory_l2_theoretical_sectors_local": 6.7e7}),
    ("ISETP.NE.AND P1, PT, R25, RZ, PT", 16, 1e6),
    ("@P1 " + bra(0), 16, 1e6),
]
SPILL_SRC = {
    10: 'extern "C" __global__ void k(const float* __restrict__ x, float* __restrict__ y, int n, int K) {',
    16: "    for (int k = 0; k < K; ++k) {",
    19: "        for (int j = 0; j < 32; ++j) acc[j] = fmaf(acc[j], v, wr[j]);",
}


def test_a_spill_at_255_registers_is_told_to_keep_fewer_values_live() -> None:
    d = diag(kernel(SPILLED, SPILL_ROWS, SPILL_SRC, regs=255))
    assert d.bottleneck is B.LOCAL_MEMORY_SPILL
    assert "fewer values live" in d.fix and "__launch_bounds__" not in d.fix and "maxrregcount" not in d.fix


def test_a_spill_under_a_cap_without_launch_bounds_is_the_builds_maxrregcount() -> None:
    d = diag(kernel(SPILLED, SPILL_ROWS, SPILL_SRC, regs=40))
    assert d.bottleneck is B.LOCAL_MEMORY_SPILL
    assert "no `__launch_bounds__`" in d.mechanism and "-maxrregcount=40" in d.fix


def test_a_spill_under_launch_bounds_loosens_the_bound() -> None:
    src = {**SPILL_SRC, 10: 'extern "C" __global__ void __launch_bounds__(256, 4)',
           11: "k(const float* __restrict__ x, float* __restrict__ y, int n, int K) {"}  # fmt: skip
    d = diag(kernel(SPILLED, SPILL_ROWS, src, regs=64))
    assert "Loosen the bound on line 10" in d.fix and "`__launch_bounds__(256)`" in d.fix


# ----------------------------------------------------------------------------- half round trips
HALF_SRC = {
    22: 'extern "C" __global__ void k(const unsigned* __restrict__ x, unsigned* __restrict__ y, unsigned a2, int n) {',
    31: "    for (int k = 0; k < steps; ++k) {",
    32: "        lo = __float2half_rn(fmaf(a, __half2float(lo), b));",
    33: "        hi = __float2half_rn(fmaf(a, __half2float(hi), b));",
}
FP32_ROOF = {SOL: 84.0, ISSUE: 84.0, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 84.0,
             "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active": 84.0, MEM: 1.0, DRAM: 0.5, L2: 1.0,
             L1: 1.0}  # fmt: skip


def test_half_widened_and_rounded_back_every_step_is_a_fix_not_healthy() -> None:
    rows = [
        ("HADD2.F32 R6, -RZ, R6.H0_H0", 32, 1e7),  # 0
        ("HADD2.F32 R8, -RZ, R6.H1_H1", 33, 1e7),
        ("FFMA.FTZ R6, R6, R4, R5", 32, 1e7),
        ("FFMA.FTZ R9, R8, R4, R5", 33, 1e7),
        ("F2FP.F16.F32.PACK_AB R6, R9, R6", 33, 1e7),
        ("ISETP.NE.AND P1, PT, R7, RZ, PT", 31, 1e7),
        ("@P1 " + bra(0), 31, 1e7),
    ]
    d = diag(kernel(FP32_ROOF, rows, HALF_SRC))
    assert d.bottleneck is B.INSTRUCTION_BOUND and d.verdict is Verdict.FIX
    assert "converted to FP32 and back every step" in d.headline
    assert "`v2 = __hfma2(a2, v2, b2);`" in d.fix and "the same rounding to __half at every step" in d.fix
    assert "the SASS cannot tell which the code needs" in d.fix


def test_half_inputs_widened_once_keep_the_fp32_roof_verdict() -> None:
    """half data loaded and accumulated in float (no value rounded back in the loop): the conversions serve the
    math, and the kernel at its FP32 roof stays whatever the FP32 rules say, not a round-trip fix."""
    rows = [
        ("LDG.E.U16.CONSTANT R6, desc[UR4][R2.64]", 32, 1e6),  # 0
        ("HADD2.F32 R6, -RZ, R6.H0_H0", 32, 1e6),
        *(("FFMA.FTZ R8, R6, R8, R6", 33, 1e6) for _ in range(8)),
        ("ISETP.NE.AND P1, PT, R7, RZ, PT", 31, 1e6),
        ("@P1 " + bra(0), 31, 1e6),
    ]
    d = diag(kernel(FP32_ROOF, rows, HALF_SRC))
    assert "converted to FP32 and back" not in d.headline and "__hfma2" not in d.fix


def test_the_expectation_removes_no_more_than_the_construct() -> None:
    """The overhead rule's own estimate (everything but the busiest useful unit's share) would have the division fix
    remove 97% of the instructions; the fix changes the division, which leaves the loop's other instructions and a
    multiply-high, a shift and an IMAD per quotient (kprof.knowledge.constructs.CONSTANT_QUOTIENT_INSTRUCTIONS)."""
    from kprof.facts.constructs import removable_share

    executed = sum(r[2] for r in RUNTIME_DIV)
    k = kernel({**ISSUE_BOUND, "smsp__inst_executed.sum": executed}, RUNTIME_DIV, DIV_SRC)
    d = diag(k)
    fewer = next(e for e in d.expect if e.metric == "smsp__inst_executed.sum")
    share = removable_share(k)
    assert share is not None and 0.3 < share < 0.4  # 7.06M on the division's line, 1.01M quotients kept x 3
    assert fewer.target == round(executed * (1 - share), 0)


def test_a_triton_program_gets_the_construct_in_triton_terms() -> None:
    """The same division in a @triton.jit program: `n` as tl.constexpr, not a C++ template."""
    src = {1: "import triton", 2: "import triton.language as tl", 3: "@triton.jit",
           4: "def k(out_ptr, n, BLOCK: tl.constexpr):", 18: "    col = offs % n"}  # fmt: skip
    k = kernel(ISSUE_BOUND, RUNTIME_DIV, src)
    py = KernelLaunch(**{**{f: getattr(k, f) for f in k.__dataclass_fields__}, "source_files": {"k.py": source(src)},
                         "sass": tuple(SassLine(pc=s.pc, text=s.text, file="k.py", line=s.line, counters=s.counters)
                                       for s in k.sass)})  # fmt: skip
    d = diag(py)
    assert d.subject.language == "triton"
    assert (
        "Line 18 (`col = offs % n`) is an integer division or modulo by a value known only at run time"
        in d.mechanism
    )
    assert "`n: tl.constexpr`" in d.fix and "template" not in d.fix
