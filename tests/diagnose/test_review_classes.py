"""Classes of error an independent senior-CUDA review found in kprof's kernel diagnoses (docs/review/rubric_review.md),
each fixed as a class: a test on the real file that showed it, and a synthetic case where the text must not appear.

1. Stock mechanism text that is wrong for the code: a byte distance printed from ideal sectors/request; "each FMA
   reloads its operands from shared memory" when L1 is not the busiest unit; "too few warps to hide memory latency"
   for a loop without memory traffic; "no unit is above X%" beside a busier unit; ULDC named as the overhead.
2. Expectations past a limit or on a metric that would not move.
3. Advice that cannot apply to the code in hand.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

import kprof
from kprof.diagnose.kernel import diagnose_launch
from kprof.kernel_model import KernelLaunch
from kprof.model import Diagnosis

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "ncu"
VALIDATION = REPO / "data" / "validation"


@cache
def _launch(rel: str) -> KernelLaunch:
    p = REPO / "data" / rel
    if not p.exists():
        pytest.skip(f"{p} is not in this checkout")
    return kprof.load(str(p))[-1]


@cache
def _diag(rel: str) -> Diagnosis:
    return diagnose_launch(_launch(rel))


# ----------------------------------------------------------------------------- 1a. coalescing: no invented distance
def _with_global_counters(k: KernelLaunch, line: int, sectors_per_request: float | None) -> KernelLaunch:
    """``k`` with the global loads of source line ``line`` moving ``sectors_per_request`` (None: per-PC counters
    dropped from every instruction)."""
    out = []
    for s in k.sass:
        if sectors_per_request is None:
            out.append(replace(s, counters={}))
        elif s.line == line and s.mnemonic == "LDG":
            n = s.counters["inst_executed"]
            c = dict(s.counters)
            c["memory_l2_theoretical_sectors_global"] = n * sectors_per_request
            c["derived__memory_l2_theoretical_sectors_global_excessive"] = n * (sectors_per_request - 4)
            out.append(replace(s, counters=c))
        else:
            out.append(s)
    return replace(k, sass=tuple(out))


def test_uncoalesced_mechanism_never_prints_ideal_sectors_as_bytes() -> None:
    """long_kernel_one_line: line 22 moves 32 sectors per 4-byte request (one sector per lane); the text said the
    lanes were "more than 3 bytes apart" (the aggregate ideal 3.5 sectors/request read as bytes). It must say each
    lane has its own sector (32 bytes or more apart)."""
    d = _diag("samples/ncu/long_kernel_one_line.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.UNCOALESCED_GLOBAL_ACCESS
    assert not re.search(r"more than \d+ bytes apart", d.mechanism), d.mechanism
    assert "32 bytes or more apart" in d.mechanism, d.mechanism
    d = _diag("samples/ncu/torch_permute_copy.ncu-rep.gz")
    assert not re.search(r"more than \d+ bytes apart", d.mechanism), d.mechanism


def test_uncoalesced_distance_follows_the_measured_sectors() -> None:
    """The same kernel with line 22 at 16 sectors per request: a uniform stride of 16 bytes gives that; without
    per-instruction counters no distance is stated."""
    k = _launch("samples/ncu/long_kernel_one_line.ncu-rep.gz")
    d = diagnose_launch(_with_global_counters(k, 22, 16.0))
    assert "about 16 bytes apart instead of 4" in d.mechanism, d.mechanism
    bare = diagnose_launch(_with_global_counters(k, 22, None))
    if bare.bottleneck is kprof.Bottleneck.UNCOALESCED_GLOBAL_ACCESS:
        assert not re.search(r"\d+ bytes (or more )?apart", bare.mechanism), bare.mechanism


# ----------------------------------------------------------------------------- 1b. small grid: what the busy SMs do
def test_small_grid_of_a_register_only_mma_loop_is_not_a_memory_latency_story() -> None:
    """mma_small_grid: 8 blocks of a loop of register-operand mma.sync (no memory traffic), the HMMA pipe at 93.9%
    of the busy SMs' active cycles. The text said the busy SMs "have too few warps to hide memory latency"."""
    d = _diag("validation/cuda/mma_small_grid.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.SMALL_GRID
    assert "memory latency" not in d.mechanism, d.mechanism
    assert re.search(r"tensor \(MMA\) pipe is busy 9\d(\.\d)?% of the SM's active cycles", d.mechanism), (
        d.mechanism
    )


def test_small_grid_of_a_memory_loop_keeps_the_latency_words() -> None:
    """The not-fire side: few_blocks_reduce (8 blocks streaming memory, long_scoreboard 97% of the stalls) is told
    its busy SMs wait on memory."""
    d = _diag("samples/ncu/small_grid.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.SMALL_GRID
    assert "wait on global memory" in d.mechanism and "MMA" not in d.mechanism, d.mechanism


def _duration_target(d: Diagnosis) -> float | None:
    return next((e.target for e in d.expect if e.metric == "gpu__time_duration.sum"), None)


def test_small_grid_target_keeps_the_instruction_rate_and_agrees_with_sm_busy() -> None:
    """mma_small_grid predicted 59.8 -> 3.24 µs, i.e. the HMMA work faster than the pipe runs it at 100% (the
    mma.sync rate, not the HGMMA peak, bounds a fix that only adds blocks) and below its own "SM busy 90%". The
    target must be >= duration x tensor-pipe elapsed utilisation, and equal the busy time spread at 90%."""
    k = _launch("validation/cuda/mma_small_grid.ncu-rep.gz")
    d = _diag("validation/cuda/mma_small_grid.ncu-rep.gz")
    dur = k.value("gpu__time_duration.sum")
    pipe = k.value("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed") or k.value(
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
    )
    target = _duration_target(d)
    assert dur and pipe and target
    assert target >= dur * pipe / 100.0, (target, dur * pipe / 100)
    busy = next(e.value for e in d.evidence if e.metric == "derived:sm_active_pct")
    sm_target = next(e.target for e in d.expect if e.metric == "derived:sm_active_pct")
    assert abs(target - dur * busy / sm_target) <= 0.02 * target, (target, dur * busy / sm_target)


def test_small_grid_fix_splits_the_hot_loop_of_the_source() -> None:
    """The fix names the loop whose iterations more blocks can share (line 24, `iters`), not a menu."""
    d = _diag("validation/cuda/mma_small_grid.ncu-rep.gz")
    assert "line 24" in d.fix and "iters / 66" in d.fix, d.fix
    # a grid-stride loop already spreads over any grid: only the launch changes
    d = _diag("samples/ncu/small_grid.ncu-rep.gz")
    assert "already strides by the grid" in d.fix and "iters" not in d.fix, d.fix


def test_small_grid_softmax_is_never_told_to_reshape_its_rows() -> None:
    """torch_softmax_few_rows: 16 rows of 2^20 elements, one block per row. Reshaping changes softmax's result; the
    lever is a kernel that splits a row across blocks."""
    d = _diag("validation/lib/torch_softmax_few_rows.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.SMALL_GRID
    assert "reshape" not in d.fix.lower() and "splits it across blocks" in d.fix, d.fix


# ----------------------------------------------------------------------------- 1c. matrix work: L1 only when it leads
def test_no_tensor_cores_says_l1_saturates_only_when_the_counters_show_it() -> None:
    """triton_fp32_ieee_dot: FMA pipe 62.5%, L1 47.9%, each operand feeds 6.4 FMAs from registers: the text said
    "each FMA reloads its operands from shared memory, so the L1/shared pipe saturates first". sgemm_smem (L1 at
    84.4%, the FP32 pipe far below) is the case where it is true: there the headline and the evidence show L1."""
    d = _diag("samples/ncu/triton_fp32_ieee_dot.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.NO_TENSOR_CORES
    assert "saturates first" not in d.mechanism and "reloads" not in d.mechanism, d.mechanism
    d = _diag("validation/cuda/sgemm_smem.ncu-rep.gz")
    assert "saturates first (84.4% of peak" in d.mechanism, d.mechanism
    assert "busiest unit" in d.headline, d.headline
    l1 = [e for e in d.evidence if e.metric and "l1tex__throughput" in e.metric]
    assert l1 and l1[0].value == 84.4, d.evidence


def test_no_tensor_cores_duration_agrees_with_its_tensor_pipe_target() -> None:
    """sgemm_smem said "tensor pipe to about 50%" beside "250 µs to about 5.94 µs" (73% of the TF32 peak). The
    duration target is the FP32 FLOPs at the tensor-pipe target fraction of the TF32 peak."""
    from kprof.diagnose.roofline import roofline

    for rel in ("validation/cuda/sgemm_smem.ncu-rep.gz", "samples/ncu/triton_fp32_ieee_dot.ncu-rep.gz"):
        k, d = _launch(rel), _diag(rel)
        pipe = next(e.target for e in d.expect if "tensor" in e.label)
        target = _duration_target(d)
        roof = roofline(k)
        dur = k.value("gpu__time_duration.sum")
        flop_time = roof.flops["fp32"] * dur / (roof.peak_flops["tensor"] * pipe / 100.0)
        assert target is not None and abs(target - flop_time) <= 0.02 * flop_time, (rel, target, flop_time)


# ----------------------------------------------------------------------------- 2a. atomics: the metric that falls
def test_atomic_expectation_names_the_l2_updates_that_fall() -> None:
    """sum_atomic_each: 16,384 REDG requests are already one per warp; a lane-0-per-warp atomic keeps them. What
    falls is the updates the L2 applies, 524,288 (one per lane) -> 16,384 (one per warp). The headline said "no
    unit is above 0.9%" beside "busiest L2 slice's atomic unit: 33.3% of peak"."""
    k, d = (
        _launch("validation/cuda/sum_atomic_each.ncu-rep.gz"),
        _diag("validation/cuda/sum_atomic_each.ncu-rep.gz"),
    )
    assert d.bottleneck is kprof.Bottleneck.ATOMIC_CONTENTION
    assert not any(e.metric == "derived:global_atomic_requests" for e in d.expect), d.expect
    l2 = next(e for e in d.expect if e.metric == "derived:l2_atomic_requests")
    assert l2.value_now == k.value("lts__t_requests_srcunit_tex_op_red.sum") == 524288
    assert l2.target == k.value("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum") == 16384
    assert "no unit is above" not in d.headline and "33.3% of peak" in d.headline, d.headline


def test_atomics_on_several_addresses_per_warp_predict_no_count() -> None:
    """The not-fire side: global_sum_4bins updates 4 bins per warp (8 L2 updates per request, not 32): how many
    updates a warp reduction leaves depends on the bins, which the counters do not give, so no count is predicted."""
    d = _diag("samples/ncu/atomic_contention.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.ATOMIC_CONTENTION
    assert not any("atomic" in e.metric for e in d.expect), d.expect


# ----------------------------------------------------------------------------- 1d. latency: one busiest unit
def test_latency_headline_names_the_busiest_of_every_unit_pipes_included() -> None:
    """sdpa_flash_bf16 said "no unit is above 53.3%" (L1) with the tensor pipe at 54.75% of its elapsed cycles;
    triton_add_tiny_block said "no unit is above 13.1%" (DRAM) with L2 at 16.9%. The number quoted is the largest of
    every unit the report measures."""
    for rel, pipe in (
        (
            "validation/lib/sdpa_flash_bf16.ncu-rep.gz",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        ),
        (
            "validation/lib/triton_add_tiny_block.ncu-rep.gz",
            "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        ),
    ):
        k, d = _launch(rel), _diag(rel)
        assert d.bottleneck is kprof.Bottleneck.LATENCY_BOUND
        top = round(k.value(pipe), 1)
        assert f"no unit is above {top:g}%" in d.headline, (rel, d.headline)
        assert d.evidence[0].metric == pipe and d.evidence[0].value == top, d.evidence[0]


def test_latency_expectation_is_the_work_unit_toward_its_roof_not_issue_doubled() -> None:
    """ "issue-active up from 45.4% to about 90.8%" was the current value doubled. The target is the unit that carries
    the work at the healthy roof (DRAM for a stream that misses L2, the tensor pipe for attention), with the duration
    in proportion."""
    for rel, metric in (
        (
            "validation/lib/triton_add_tiny_block.ncu-rep.gz",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        ),
        (
            "validation/lib/sdpa_flash_bf16.ncu-rep.gz",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        ),
    ):
        d = _diag(rel)
        assert not any("issue_active" in e.metric for e in d.expect), d.expect
        e = next(e for e in d.expect if e.metric == metric)
        assert e.target == 80.0 and e.value_now is not None and e.value_now < 80.0
        target = _duration_target(d)
        k = _launch(rel)
        assert (
            target is not None
            and abs(target - k.value("gpu__time_duration.sum") * e.value_now / 80.0) <= 0.02 * target
        )


def test_latency_mechanism_follows_the_stalls_and_occupancy() -> None:
    """triton_add_tiny_block: 1-warp programs, 9.9% achieved occupancy against 50% theoretical, long_scoreboard:
    the mechanism says so, instead of "each warp waits on the result of its previous instruction"."""
    d = _diag("validation/lib/triton_add_tiny_block.ncu-rep.gz")
    assert "previous instruction" not in d.mechanism
    assert "long_scoreboard" in d.mechanism and "9.9% against a theoretical 50%" in d.mechanism, d.mechanism
    assert "1 warp of 32 threads" in d.mechanism, d.mechanism


def test_advice_for_loops_only_where_there_is_a_loop() -> None:
    """triton_add_tiny_block has no loop (no backward branch in its SASS): no num_stages advice. sdpa_flash_bf16's
    head_dim is 128 (a multiple of 64) and its grid has 2048 CTAs: neither is advised."""
    from kprof.diagnose.fixes import has_loop

    k = _launch("validation/lib/triton_add_tiny_block.ncu-rep.gz")
    assert not has_loop(k)
    assert "num_stages" not in _diag("validation/lib/triton_add_tiny_block.ncu-rep.gz").fix
    assert has_loop(_launch("validation/cuda/mma_small_grid.ncu-rep.gz"))
    fix = _diag("validation/lib/sdpa_flash_bf16.ncu-rep.gz").fix
    assert "head_dim" not in fix and "batch more heads" not in fix, fix
    assert "CUDNN_ATTENTION" in fix


# ----------------------------------------------------------------------------- 1e. overhead: the costly instruction
def test_instruction_bound_names_the_xu_chain_not_uniform_loads() -> None:
    """strided_copy_6d: lines 13/15/17 divide by run-time strides; the line's instruction was shown as ULDC (a
    uniform constant load, executed once per warp on the uniform datapath). The cost is I2F/MUFU.RCP/F2I on the XU
    pipe: those are named."""
    d = _diag("validation/cuda/strided_copy_6d.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.INSTRUCTION_BOUND
    assert d.where, d
    for w in d.where:
        assert not (w.instruction or "").startswith("U"), w
        assert (w.instruction or "").startswith(("I2F", "F2I", "MUFU")), w
        assert "MUFU.RCP" in w.detail and "XU pipe" in w.detail, w
    assert "ULDC" not in d.mechanism, d.mechanism


def test_instruction_bound_without_xu_work_keeps_the_top_instruction() -> None:
    """The not-fire side: in a synthetic SASS with no XU instruction, the line's most executed non-uniform
    instruction is named and no XU chain is claimed."""
    from kprof.diagnose.where import attribute
    from kprof.kernel_model import SassLine

    k = KernelLaunch(
        id=0,
        name="k",
        sass=(
            SassLine(
                pc=0, text="ULDC.64 UR4, c[0x0][0x118]", file="k.cu", line=5, counters={"inst_executed": 900}
            ),
            SassLine(pc=16, text="IMAD R2, R3, R4, R5", file="k.cu", line=5, counters={"inst_executed": 500}),
            SassLine(pc=32, text="LDG.E R6, [R2.64]", file="k.cu", line=6, counters={"inst_executed": 100}),
        ),
    )
    a = attribute(k, kprof.Bottleneck.INSTRUCTION_BOUND)
    assert a.lines[0].instruction == "IMAD" and "XU" not in a.lines[0].detail, a.lines[0]


# ----------------------------------------------------------------------------- 2b. like by like; 3. advice that applies
def test_shared_load_wavefronts_divide_ldmatrix_by_ldmatrix() -> None:
    """triton_matmul_bf16_tiny_tile reported "1028.95 wavefronts per shared load": the shared-load wavefronts
    (LDSM's included) over the LDS count alone. Divided like by like, and judged against ncu's per-instruction
    ideal, its shared loads are conflict-free: no bank-conflict finding. smem_transpose_conflict keeps its 32-way
    conflict (the not-fire side of the change)."""
    d = _diag("validation/lib/triton_matmul_bf16_tiny_tile.ncu-rep.gz")
    assert kprof.Bottleneck.SHARED_BANK_CONFLICTS not in {f.bottleneck for f in d.findings}, d.findings
    from kprof.diagnose.kernel import metric_value

    wpr = metric_value(
        _launch("validation/lib/triton_matmul_bf16_tiny_tile.ncu-rep.gz"),
        "derived:shared_load_wavefronts_per_request",
    )
    assert wpr is not None and wpr <= 32, wpr  # no shared access takes more than 32 wavefronts
    d = _diag("validation/cuda/smem_transpose_conflict.ncu-rep.gz")
    assert d.bottleneck is kprof.Bottleneck.SHARED_BANK_CONFLICTS and "32.27 wavefronts" in d.headline


def test_group_m_is_advised_only_when_the_source_lacks_it() -> None:
    """The tiny-tile Triton GEMM already groups programs along M (GROUP_M=8): the fix must not advise it again."""
    d = _diag("validation/lib/triton_matmul_bf16_tiny_tile.ncu-rep.gz")
    assert "group programs along M (GROUP_M)" not in d.fix and "already grouped" in d.fix, d.fix


def test_healthy_library_gemm_is_not_told_to_batch_and_shows_its_rate() -> None:
    """tensor_core_bound: one 8192^3 cuBLAS GEMM on a full persistent grid. "batched calls" cannot speed it up; the
    evidence gives the achieved rate against the peak, and the mechanism names the instruction and its feed."""
    d = _diag("samples/ncu/tensor_core_bound.ncu-rep.gz")
    assert d.verdict is kprof.Verdict.HEALTHY
    assert "batch" not in d.fix.lower(), d.fix
    rate = next(e for e in d.evidence if e.metric == "derived:tensor_tflops")
    assert rate.unit == "TFLOP/s" and rate.reference_value and rate.value <= rate.reference_value
    assert "HGMMA" in d.mechanism and "UTMALDG" in d.mechanism, d.mechanism


def test_memory_targets_stop_at_the_healthy_roof() -> None:
    """torch_permute_copy predicted 461 -> 108 µs: its DRAM bytes at 100% of the DRAM peak. A target sits at the
    healthy roof (80% of the peak) at best."""
    from kprof import thresholds as th
    from kprof.diagnose.kernel import dram_bytes
    from kprof.diagnose.roofline import roofline

    k, d = (
        _launch("samples/ncu/torch_permute_copy.ncu-rep.gz"),
        _diag("samples/ncu/torch_permute_copy.ncu-rep.gz"),
    )
    moved, peak = dram_bytes(k), roofline(k).peak_bytes_per_s["dram"]
    ideal = k.value("smsp__sass_sectors_mem_global_ideal.sum") or k.value(
        "memory_l2_theoretical_sectors_global_ideal"
    )
    need = min(moved, ideal * 32) if ideal else moved
    target = _duration_target(d)
    assert target is not None and target >= need / (peak * th.HEALTHY_FRACTION_OF_PEAK) * 1e9 * 0.99, target
