"""The three classes of error the held-out blind gallery (data/validation/heldout) exposed, each on a workload of
its class built in code from the facts that define it, and on neighbouring workloads where the rule must not fire.

1. A memory level below its roof is not the bottleneck. "L2 bound at 63%, short of the 80% roof" names a unit with
   spare bandwidth: warps waiting on its results (long_scoreboard) mean too few requests in flight (Little's law),
   i.e. latency_bound, unless the unit's own queue is full (lg/mio/tex throttle). Compute pipes keep their name
   below the roof (their busy cycles are the work).
2. Integer work the algorithm needs is compute, not overhead. A 64-bit hash (IMAD/SHF/LOP3 on a loaded key) keeps
   the integer pipes busy with its own arithmetic: compute_bound, never instruction_bound ("most instructions are
   overhead"); integer math on the thread index (index math) still is instruction_bound.
3. A unit saturated by replays is a fix. Shared-memory atomics on random bins (a histogram) replay each ATOMS once
   per conflicting bank: L1 at its roof with two thirds of the shared wavefronts excess is shared_bank_conflicts,
   never ``l1_shared_bandwidth_bound healthy``; same-address (skewed) bins cost no replay and fire nothing.

The launches reuse tests/diagnose/test_kernel.py's H200-like base (132 SMs, neutral metrics).
"""

from __future__ import annotations

import pytest

from kprof import thresholds as th
from kprof.diagnose.kernel import DURATION, diagnose_launch, kernel_floor_ns, metric_value
from kprof.diagnose.sass import analyze_sass, dataflow
from kprof.kernel_model import KernelLaunch, SassLine
from kprof.model import Bottleneck, Diagnosis, Verdict
from tests.diagnose.test_kernel import (
    DRAM,
    L1,
    L2,
    LONG_SB,
    MEM,
    SLD_R,
    SLD_W,
    SOL,
    _check_contract,
    mk,
)

B = Bottleneck
HIT = "lts__t_sector_op_read_hit_rate.pct"
WAIT = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"
MIO = "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"
LG = "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"
MATH = "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio"
BARRIER = "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
ALU = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed"
FMAHEAVY = "sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_elapsed"
TENSOR_ELAPSED = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
SST_W, SST_R = (
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
)
SATOM_W = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
SATOM_R = "smsp__inst_executed_op_shared_atom.sum"
SATOM_C = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"
SHARED_WF, SHARED_WF_IDEAL = "memory_l1_wavefronts_shared", "memory_l1_wavefronts_shared_ideal"
L1_WF = "l1tex__data_pipe_lsu_wavefronts.sum"


def diag(k: KernelLaunch) -> Diagnosis:
    d = diagnose_launch(k)
    _check_contract(d)
    return d


def fired(d: Diagnosis) -> set[Bottleneck]:
    return ({d.bottleneck} if d.bottleneck else set()) | {f.bottleneck for f in d.findings}


# ----------------------------------------------------------------------------- 1. below the roof = latency
STREAM_BELOW_ROOF = {
    # a coalesced stream (4 sectors per 4-byte request) whose warps wait on their loads
    "dram": {DRAM: 75.0, L2: 70.0, MEM: 75.0, SOL: 30.0, L1: 20.0, HIT: 10.0, LONG_SB: 30.0},
    # L2 at 63% passing a DRAM stream (reads miss), DRAM at 52%: the gather_sorted / stencil shape
    "l2": {DRAM: 52.0, L2: 63.4, MEM: 63.4, SOL: 20.0, L1: 14.0, HIT: 5.0, LONG_SB: 30.0},
    # L1 at 72% (elapsed 71.3%) with the other levels low
    "l1": {DRAM: 20.0, L2: 25.0, MEM: 72.0, SOL: 40.0, L1: 72.0, LONG_SB: 30.0},
}
UNIT_METRIC = {
    "dram": DRAM,
    "l2": L2,
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
}


@pytest.mark.parametrize("unit", sorted(STREAM_BELOW_ROOF))
def test_a_memory_level_below_its_roof_with_warps_waiting_is_latency_bound(unit: str) -> None:
    k = mk(dict(STREAM_BELOW_ROOF[unit]))
    d = diag(k)
    assert d.bottleneck is B.LATENCY_BOUND and d.verdict is Verdict.FIX, d.headline
    assert "short of" not in d.headline and "below the 80% roof" in d.headline
    ev = d.evidence[0]
    assert ev.reference_value == 100 * th.HEALTHY_FRACTION_OF_PEAK
    # L1's SOL metric is read on active cycles and put on elapsed time (derived:l1_utilization)
    if unit != "l1":
        assert ev.metric == UNIT_METRIC[unit]
    assert any(e.name == "top warp stall: long_scoreboard" for e in d.evidence)
    # the expectation: the level whose bandwidth the stream draws rises to the roof, the duration falls in step,
    # never below the floor
    up = d.expect[0]
    assert up.target == 100 * th.HEALTHY_FRACTION_OF_PEAK and up.direction.value == "up"
    if unit == "l2":
        assert up.metric == DRAM and up.value_now == 52.0  # L2 only passes the DRAM stream through
    t = next(e for e in d.expect if e.metric == DURATION)
    floor = kernel_floor_ns(k)
    assert t.target is not None and t.target < 100_000.0 and (floor is None or t.target >= floor)
    assert t.target == pytest.approx(100_000.0 * (up.value_now or 0) / 80.0, rel=0.01)


@pytest.mark.parametrize("throttle", [MIO, LG])
def test_l1_below_its_roof_with_its_queue_full_keeps_its_name(throttle: str) -> None:
    """The LSU/MIO queue feeding L1 is full: the unit's instruction intake is the limit, not latency."""
    d = diag(mk({**STREAM_BELOW_ROOF["l1"], LONG_SB: 2.0, throttle: 20.0}))
    assert d.bottleneck is B.L1_SHARED_BANDWIDTH_BOUND and d.verdict is Verdict.FIX


def test_a_tensor_pipe_below_its_roof_keeps_its_name() -> None:
    """A GEMM with its tensor pipe at 77% (barrier and wait stalls) is tensor-core bound below its roof: a compute
    pipe's busy cycles are the work itself (the blind label of triton_matmul_bf16)."""
    m = {TENSOR_ELAPSED: 77.0, SOL: 77.0, MEM: 60.0, L1: 60.0, L2: 45.0, DRAM: 20.0, LONG_SB: 3.0, WAIT: 5.0}
    d = diag(
        mk({**m, BARRIER: 4.0}, block=(256, 1, 1), sass=("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24",))
    )
    assert d.bottleneck is B.TENSOR_CORE_BOUND and d.verdict is Verdict.FIX


def test_a_memory_level_at_its_roof_is_still_healthy() -> None:
    d = diag(mk({DRAM: 90.0, L2: 92.0, MEM: 90.0, HIT: 5.0, LONG_SB: 30.0}))
    assert d.bottleneck is B.DRAM_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY


def test_below_the_roof_without_stall_data_is_inconclusive_and_names_the_section() -> None:
    d = diag(mk({**STREAM_BELOW_ROOF["dram"], LONG_SB: None, WAIT: None}))
    assert d.bottleneck is B.LATENCY_BOUND and d.verdict is Verdict.INCONCLUSIVE
    assert "WarpStateStats" in d.next_step


# ----------------------------------------------------------------------------- 2. integer work is compute
def hash_rounds(on_loaded_key: bool) -> list[tuple[str, float]]:
    """A splitmix64-style loop: 64-bit add, xor-shift and multiply per round on a key, 4M rounds executed.

    ``on_loaded_key``: the rounds mix the key loaded by the LDG (a hash of the data); otherwise they mix a value
    derived from the thread index (index math) and the loaded key is only copied to the output."""
    key, hi = ("R2", "R3") if on_loaded_key else ("R10", "R11")
    return [
        ("S2R R10, SR_TID.X", 1e5),
        ("LDG.E.64 R2, desc[UR4][R4.64]", 1e5),
        (f"IADD3 {key}, P0, {key}, 0x7f4a7c15, RZ", 4e6),
        (f"SHF.R.U64 R6, {key}, 0x1e, {hi}", 4e6),
        (f"LOP3.LUT R6, R6, {key}, RZ, 0x3c, !PT", 4e6),
        ("IMAD.WIDE.U32 R8, R6, 0x1ce4e5b9, RZ", 4e6),
        (f"IMAD {key}, R6, -0x40a7b893, R9", 4e6),
        ("ISETP.NE.AND P1, PT, R12, RZ, PT", 1e6),
        ("@P1 BRA 0x20", 1e6),
        ("STG.E.64 desc[UR4][R14.64], R2", 1e5),
        ("EXIT", 1e5),
    ]


HASH_METRICS = {
    SOL: 77.2,
    MEM: 11.2,
    DRAM: 8.5,
    L2: 11.2,
    L1: 3.0,
    ALU: 77.2,
    FMAHEAVY: 55.6,
    LONG_SB: 0.8,
    WAIT: 2.6,
    MATH: 7.9,
}


def test_integer_ops_on_loaded_data_are_counted_as_the_datas_work() -> None:
    """The SASS data flow tells the hash's integer ops (fed by the loaded key, through the loop's back edge) from
    the loop counter and index math."""
    lines = [
        SassLine(pc=16 * i, text=t, counters={"inst_executed": c})
        for i, (t, c) in enumerate(hash_rounds(True))
    ]
    flow, s = dataflow(lines), analyze_sass(lines)
    assert flow.int_ops == pytest.approx(21e6)  # 5 x 4M rounds + 1M loop compares
    assert flow.int_data_ops == pytest.approx(20e6)  # the loop compare reads the counter, not the key
    index = [
        SassLine(pc=16 * i, text=t, counters={"inst_executed": c})
        for i, (t, c) in enumerate(hash_rounds(False))
    ]
    assert dataflow(index).int_data_ops == 0.0
    assert flow.int_data_share(s.instructions) == pytest.approx(20e6 / s.instructions)


def test_a_hash_busy_on_the_integer_pipes_is_compute_bound_not_overhead() -> None:
    k = mk(dict(HASH_METRICS), sass=hash_rounds(True))
    d = diag(k)
    assert d.bottleneck is B.COMPUTE_BOUND and d.verdict is Verdict.FIX, d.headline
    assert B.INSTRUCTION_BOUND not in fired(d)
    assert "overhead" not in d.headline and "integer" in d.headline.lower()
    assert d.evidence[0].metric == "derived:int_utilization" and d.evidence[0].value == 77.2
    assert metric_value(k, "derived:int_utilization") == pytest.approx(77.2)
    assert "math_pipe_throttle" in d.mechanism


def test_a_hash_at_the_integer_roof_is_healthy() -> None:
    d = diag(mk({**HASH_METRICS, SOL: 88.0, ALU: 88.0}, sass=hash_rounds(True)))
    assert d.bottleneck is B.COMPUTE_BOUND and d.verdict is Verdict.HEALTHY


def test_the_same_integer_ops_on_the_thread_index_are_still_overhead() -> None:
    """Same mix and pipes, but the rounds mix a value derived from the thread index: instruction_bound, and the
    integer pipe is not counted as useful work."""
    k = mk(dict(HASH_METRICS), sass=hash_rounds(False))
    d = diag(k)
    assert d.bottleneck is B.INSTRUCTION_BOUND
    assert metric_value(k, "derived:int_utilization") is None
    share = next(e for e in d.evidence if e.metric == "derived:work_inst_share")
    assert share.value is not None and share.value < 100 * th.FP_HEAVY_SHARE


# ----------------------------------------------------------------------------- 3. replays at the roof = fix
def shared_histogram(atom_wavefronts: float, ideal_total: float, l1_active: float) -> KernelLaunch:
    """A 256-bin shared-memory histogram: 8.39M ATOMS (4 per loaded word), a few shared loads/stores for the
    zeroing and the merge; ``atom_wavefronts`` for those ATOMS, ``ideal_total`` ncu's ideal shared wavefronts."""
    m = {
        L1: l1_active,
        MEM: l1_active,
        SOL: 36.0,
        DRAM: 43.0,
        L2: 53.5,
        HIT: 10.0,
        LONG_SB: 30.0,
        MIO: 1.0,
        SATOM_W: atom_wavefronts,
        SATOM_R: 8_388_608.0,
        SLD_W: 8_511.0,
        SLD_R: 8_448.0,
        SST_W: 8_448.0,
        SST_R: 8_448.0,
        SHARED_WF: atom_wavefronts + 16_959.0,
        SHARED_WF_IDEAL: ideal_total,
        L1_WF: atom_wavefronts + 2_200_000.0,
        SATOM_C: max(0.0, atom_wavefronts - 8_388_608.0),
    }
    return mk(m)


def test_shared_atomics_replayed_on_bank_conflicts_at_the_l1_roof_are_a_fix() -> None:
    """The uniform histogram: 3.27 wavefronts per ATOMS, 68% of the shared wavefronts excess, L1 at 87.7%."""
    k = shared_histogram(27_470_786.0, 8_405_504.0, 88.6)
    d = diag(k)
    assert d.bottleneck is B.SHARED_BANK_CONFLICTS and d.verdict is Verdict.FIX, d.headline
    assert "per shared atomic" in d.headline
    ev = d.evidence[0]
    assert ev.metric == "derived:shared_atomic_wavefronts_per_request"
    assert ev.value == pytest.approx(3.27, abs=0.01) == round(metric_value(k, ev.metric) or 0, 2)
    exp = d.expect[0]
    assert exp.metric == ev.metric and exp.value_now == ev.value and exp.target == 1.0
    assert "h[bin * 32 + lane]" in d.fix  # privatised bins, not "pad the rows of a tile"


def test_same_address_shared_atomics_fire_no_bank_conflict() -> None:
    """The skewed histogram: 1.27 wavefronts per ATOMS, ncu's ideal leaves 15.5% excess (within tolerance), L1 at
    42%, warps waiting on the global load: latency, and no bank-conflict finding."""
    d = diag(shared_histogram(10_669_868.0, 9_033_816.0, 42.7))
    assert B.SHARED_BANK_CONFLICTS not in fired(d)
    assert d.bottleneck is B.LATENCY_BOUND


def test_conflict_free_shared_atomics_at_the_l1_roof_stay_healthy() -> None:
    d = diag(shared_histogram(8_388_608.0, 8_405_504.0, 88.6))
    assert B.SHARED_BANK_CONFLICTS not in fired(d)
    assert d.bottleneck is B.L1_SHARED_BANDWIDTH_BOUND and d.verdict is Verdict.HEALTHY
