"""Matrix products on the FP32 pipes: ``no_tensor_cores`` (the data flow of a matrix product, no MMA in the SASS),
and L1/L2 saturated by operand reloads (a thread tile too small to reuse its loads); without counters, an
FFMA-heavy listing without MMA (:func:`static_no_tensor_cores`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kprof import thresholds as th
from kprof.diagnose.roofline import TENSOR_PIPE_METRICS
from kprof.facts.kernel import KernelFacts, ffma_warp_instructions, metric_value, unit_metric
from kprof.facts.names import FADD_THREAD_RATE, FFMA_THREAD_RATE, INST_EXECUTED, SHARED_WAVEFRONT_PCT
from kprof.facts.static import StaticKernel
from kprof.facts.units import UNIT_WORDS
from kprof.knowledge.instructions import arch, sm_of
from kprof.model import Confidence, Diagnosis, Direction, Evidence, Expectation, Finding, Verdict, _fmt
from kprof.rules.kernel.common import B, Mechanism, cap, pace_savings, pc, unit_used, with_duration
from kprof.rules.kernel.resource import RESOURCE_OF_UNIT


@dataclass(frozen=True, slots=True)
class MatrixWork:
    """What makes FP32 work a matrix product (see :func:`matrix_structure`)."""

    ffma_share: float
    from_loads: float
    reuse: float | None
    global_bytes_per_fma: float | None
    load_bytes_per_fma: float | None
    intensity: float | None
    """FP32 FLOP per DRAM byte."""
    ridge: float | None
    because: str


def matrix_structure(f: KernelFacts) -> MatrixWork | None:
    """FP32 FMA work with the data flow of a matrix product, or None.

    Physics: a matrix product's k-loop multiplies two *loaded* operands per FMA (``A[i][k] * B[k][j]``) and
    reuses each loaded operand for many outputs: in registers (an outer product), through a shared-memory tile,
    or through the caches (FLOP per DRAM byte past the FP32 ridge). A Horner polynomial, a transcendental
    expansion or a dependent FMA chain multiplies computed values or constants (no loaded multiplicand pair);
    a dot product or mat-vec loads fresh operands for each FMA (no reuse). When the report has the roofline,
    the intensity must also be past the FP32 ridge: below it the kernel is memory-bound at its floor and faster
    math would not show.
    """
    s, flow = f.sass, f.flow
    if s.empty or s.has_mma or s.ffma <= 0 or flow.fma <= 0:
        return None
    if (
        s.share(s.ffma) < th.MATRIX_LIKE_FFMA_SHARE
        or s.share(s.special_function) > th.MATRIX_LIKE_MAX_SFU_SHARE
    ):
        return None
    if flow.fma_from_loads_share < th.MATRIX_LOADED_OPERAND_SHARE:
        return None
    fp32, dram_bps = f.roof.flops.get("fp32"), f.roof.bytes_per_s.get("dram")
    intensity = fp32 / dram_bps if fp32 is not None and dram_bps else None
    ridge = f.roof.ridge("fp32", "dram")
    reuse, gbpf = flow.operand_reuse, flow.per_fma(flow.global_load_bytes)
    if intensity is not None and intensity < (ridge or th.MATRIX_LIKE_MIN_INTENSITY):
        return None
    if reuse is not None and reuse >= th.MATRIX_REUSE_MIN:
        because = f"each loaded operand feeds {reuse:.2g} FMAs from registers"
    elif gbpf is not None and gbpf <= th.MATRIX_MAX_GLOBAL_BYTES_PER_FMA and flow.shared_load_bytes > 0:
        because = f"operands staged in shared memory ({gbpf:.2g} global bytes per FMA)"
    elif intensity is not None:
        because = f"{intensity:.3g} FP32 FLOP per DRAM byte, past the ridge: reuse through the caches"
    else:
        return None
    return MatrixWork(
        ffma_share=s.share(s.ffma),
        from_loads=flow.fma_from_loads_share,
        reuse=reuse,
        global_bytes_per_fma=gbpf,
        load_bytes_per_fma=flow.per_fma(flow.load_bytes),
        intensity=intensity,
        ridge=ridge,
        because=because,
    )


def fma_balance_bytes(f: KernelFacts) -> float:
    """Bytes per thread an FMA may load from L1/shared before L1 saturates ahead of the FMA pipe:
    L1 bytes per cycle per SM over thread FFMAs per cycle per SM (1 B on GA10x/Hopper, 2 B on A100/V100)."""
    peak = f.v("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
    sms = f.sm_count
    lanes = peak / sms if peak and sms else th.FP32_LANES_PER_SM
    return th.L1_BYTES_PER_CYCLE_PER_SM / lanes


def matrix_evidence(f: KernelFacts, mw: MatrixWork) -> list[Evidence]:
    """The data flow that makes the FP32 work a matrix product: loaded multiplicands, FFMA share, intensity."""
    s = f.sass
    ev = [
        Evidence(
            name="FMAs whose two multiplicands are loaded operands",
            value=round(100 * mw.from_loads, 1),
            unit="%",
            reference=f"k-loop of a matrix product; {mw.because}; no HMMA/HGMMA/IMMA in the SASS",
            metric="sass:fma_from_loads_share",
        ),
        Evidence(
            name="FFMA share of executed instructions" if s.weighted else "FFMA share of the SASS listing",
            value=round(100 * mw.ffma_share, 1),
            unit="%",
            reference=f">= {100 * th.MATRIX_LIKE_FFMA_SHARE:.0f}%: the FP32 pipes carry the work",
            metric="sass:ffma_share",
        ),
    ]
    if mw.intensity is not None:
        needed = mw.ridge or th.MATRIX_LIKE_MIN_INTENSITY
        ev.append(
            Evidence(
                name="arithmetic intensity (FP32 FLOP per DRAM byte)",
                value=round(mw.intensity, 1),
                unit="FLOP/byte",
                reference=f"past the FP32 ridge point ({needed:.3g} FLOP/byte)"
                if mw.ridge
                else f"above {needed:g} FLOP/byte",
                reference_value=round(needed, 1),
                metric="derived:fp32_flop_per_dram_byte",
            )
        )
    return ev


def register_tiling_advice(f: KernelFacts, mw: MatrixWork) -> str:
    """Register tiling, when each FMA loads more bytes than L1 serves per FMA lane; "" otherwise."""
    balance = fma_balance_bytes(f)
    now = mw.load_bytes_per_fma
    if now is None or now <= balance * th.COALESCING_TOLERANCE:
        return ""
    return (
        f"Compute a register tile per thread (e.g. 8x8 outputs from a 128x128x8 block tile, float4 shared loads): "
        f"today each FMA loads {now:.2g} bytes from shared/global memory, and the L1 keeps up with the FMA pipe "
        f"only below {balance:.2g} B per FMA ({th.L1_BYTES_PER_CYCLE_PER_SM:.0f} B/cycle/SM over the FMA lanes)."
    )


_TENSOR_WORDS = (
    "use the tensor cores: call cuBLAS/cuBLASLt or CUTLASS, or write the inner product with WMMA/mma.sync "
    "(wgmma on Hopper) in TF32 (FP32 inputs, 10-bit mantissa) or BF16/FP16 inputs with FP32 accumulation, "
    "if that precision is acceptable."
)


def _tensor_savings(f: KernelFacts) -> tuple[float, bool]:
    """(the share of the time the tensor path saves, whether the report's ceilings ground it).

    The same FLOPs at the tensor-pipe target (TENSOR_FIX_TARGET_FRACTION of the tensor peak, the value the
    tensor-pipe expectation names) and the same DRAM bytes at the DRAM roof: the longer of the two is the time. No
    tensor ceiling in the report: only the FP32 pipes' share of the time is known to move."""
    fp32, tensor_peak = f.roof.flops.get("fp32"), f.roof.peak_flops.get("tensor")
    if fp32 and tensor_peak:
        dram = f.util.get("dram", 0.0)
        tensor_time = fp32 / (tensor_peak * th.TENSOR_FIX_TARGET_FRACTION)
        return min(max(0.0, 1.0 - max(tensor_time, dram / th.HEALTHY_FRACTION_OF_PEAK)), 1.0), True
    return min(f.util.get("fp32", 0.0), 1.0), False


def _l1_reload_words(f: KernelFacts, mw: MatrixWork) -> str:
    """L1/shared ahead of the FP32 pipe is the reload story: the sentence that says it, only when the counters show
    it (L1 the busiest unit, above the FP32 pipe); "" otherwise."""
    l1, fp32_u = f.util.get("l1"), f.util.get("fp32", 0.0)
    if l1 is None or not (l1 > fp32_u and f.limiter()[0] == "l1"):
        return ""
    return (
        f" The L1/shared pipe saturates first ({pc(l1)}% of peak against the FP32 pipe's {pc(fp32_u)}%): "
        + (
            "each FMA reloads its operands from shared memory"
            if f.flow.shared_load_bytes > 0
            else "each FMA reloads its operands from global memory through L1"
        )
        + (
            f", {mw.load_bytes_per_fma:.2g} bytes per FMA against the {fma_balance_bytes(f):.2g} B the L1 "
            "delivers per FMA lane and cycle."
            if mw.load_bytes_per_fma is not None
            else "."
        )
    )


def no_tensor_cores(f: KernelFacts) -> Mechanism | None:
    """Matrix work (:func:`matrix_structure`) on the FP32 pipes of a GPU that has tensor cores.

    The saving is bounded by what the tensor path can reach: the FP32 FLOPs at the tensor peak (x the healthy
    fraction) and the DRAM bytes at the DRAM peak. When the FP32 pipe itself is at its roof the FLOPs are the
    ones the math needs in FP32: the kernel is healthy and this is advice (TF32/BF16 if the precision allows).
    """
    if f.tensor_cores is False:
        return None
    mw = matrix_structure(f)
    if mw is None or (mw.intensity is None and f.tensor_cores is None):
        return None
    savings, grounded = _tensor_savings(f)
    ev = matrix_evidence(f, mw)
    pipe_hit = f.k.first_value(*TENSOR_PIPE_METRICS)
    tensor_pipe = Expectation(
        metric=pipe_hit[0] if pipe_hit else "derived:tensor_utilization",
        direction=Direction.UP,
        target=round(100 * th.TENSOR_FIX_TARGET_FRACTION, 1),
        unit="%",
        value_now=round(pipe_hit[1], 1) if pipe_hit else metric_value(f.k, "derived:tensor_utilization"),
        label="tensor pipe utilisation",
        basis=f"a first tensor-core version: about {_fmt(th.TENSOR_FIX_TARGET_FRACTION, 'fraction')} of the tensor "
        "peak; an mma.sync loop measured 59.9% of the BF16 peak on the H200, cuBLAS 75-90%",
    )
    tiling = register_tiling_advice(f, mw)
    reload = _l1_reload_words(f, mw)
    l1 = f.util.get("l1")
    if reload and l1 is not None:
        # show L1 in the evidence in place of the instruction mix
        fp32_u = f.util.get("fp32", 0.0)
        ev[1] = unit_used(
            f,
            "l1",
            f"the busiest unit; the FP32 pipe is at {pc(fp32_u)}%: the FMAs wait on their operand loads",
            l1,
        )
    return Mechanism(
        bottleneck=B.NO_TENSOR_CORES,
        savings=savings,
        headline=(
            f"Matrix work on the FP32 pipes: {round(100 * mw.from_loads, 1):g}% of the FMAs multiply two loaded "
            f"operands ({mw.because}) and no instruction is a tensor-core MMA"
            + (f"; the L1/shared pipe, at {pc(l1)}% of peak, is the busiest unit." if reload and l1 else ".")
        ),
        evidence=ev,
        mechanism=(
            "The kernel multiplies tiles of matrices with scalar fused multiply-adds; the tensor cores, which do the "
            "same products many times faster, stay idle." + reload
        ),
        fix=(tiling + " Then " + _TENSOR_WORDS) if tiling else cap(_TENSOR_WORDS),
        expect=with_duration(
            f,
            [tensor_pipe],
            savings if grounded else 0.0,
            fix_unit="tensor",
            why=f"the same FLOPs at {_fmt(th.TENSOR_FIX_TARGET_FRACTION, 'fraction')} of the tensor-core peak save "
            f"(and the same DRAM bytes at {_fmt(th.HEALTHY_FRACTION_OF_PEAK, 'fraction')} of theirs)",
        ),
        confidence=(th.CONFIDENCE_MEASURED_INFERRED if f.sass.weighted else th.CONFIDENCE_LISTING)
        - (0 if grounded else th.CONFIDENCE_MISSING_PENALTY),
        would_raise=("" if f.sass.weighted else "SourceCounters (executed instruction mix)")
        or ("" if grounded else "the roofline sections (the tensor ceiling the fix would move to)"),
        inflates=("fp32", "l1", "issue"),
        waste=0.0,
        blocks_healthy=f.util.get("fp32", 0.0) < th.HEALTHY_FRACTION_OF_PEAK,
        fix_unit="tensor",
    )


def operand_reload(f: KernelFacts) -> Mechanism | None:
    """A matrix product whose FMAs reload their operands from L1/shared (or L2) faster than the unit can serve.

    Physics: the L1 serves L1_BYTES_PER_CYCLE_PER_SM; the FMA pipe consumes (FFMA lanes) per cycle. A thread
    tile of TM x TN outputs loads (TM + TN) operands per TM x TN FMAs; when the loaded bytes per FMA exceed
    L1 bytes/cycle over FMA lanes/cycle, L1/shared saturates before the math: the traffic at the saturated
    unit is reloads, not work the algorithm needs, so the unit being at its roof is a fix, never healthy.
    The cache must be the busiest unit (within UNIT_TIE_MARGIN). On a GPU with tensor cores
    :func:`no_tensor_cores` usually wins the ranking (the tensor path removes the reloads too); on one without,
    this is the lever.
    """
    mw = matrix_structure(f)
    if mw is None:
        return shared_operand_reload(f)
    if mw.load_bytes_per_fma is None:
        return None
    unit, util = max(
        ((u, f.util[u]) for u in ("l1", "l2") if u in f.util), key=lambda x: x[1], default=(None, 0.0)
    )
    if unit is None or util < th.LATENCY_BOUND_FRACTION or util < f.u_max - th.UNIT_TIE_MARGIN:
        return None
    balance = fma_balance_bytes(f)
    ratio = mw.load_bytes_per_fma
    if ratio <= balance * th.COALESCING_TOLERANCE:
        return None
    savings = pace_savings(f, unit, util * balance / ratio)
    ev = [
        Evidence(
            name="bytes loaded per FMA (shared + global, per thread)",
            value=round(ratio, 2),
            unit="B/FMA",
            reference=f"the L1 keeps up with the FMA pipe below {balance:.2g} B/FMA "
            f"({th.L1_BYTES_PER_CYCLE_PER_SM:.0f} B/cycle/SM over the FMA lanes)",
            reference_value=round(balance, 2),
            metric="sass:load_bytes_per_fma",
        ),
        unit_used(f, unit, "saturated by operand reloads, not by the work the product needs", util),
        *matrix_evidence(f, mw)[:1],
    ]
    used = Expectation(
        metric=unit_metric(f, unit),
        direction=Direction.DOWN,
        value_now=round(100 * util, 1),
        unit="%",
        label=f"{UNIT_WORDS[unit]} used",
    )
    no_tc = f.tensor_cores is False
    return Mechanism(
        bottleneck=RESOURCE_OF_UNIT[unit],
        savings=savings,
        headline=(
            f"{cap(UNIT_WORDS[unit])} saturated by operand reloads: a matrix product loads {round(ratio, 2):g} bytes "
            f"per FMA, above the {balance:.2g} B the L1 can serve per FMA."
        ),
        evidence=ev,
        mechanism=(
            "Each FMA of the matrix product fetches its operands from shared memory or L1/L2 again instead of reusing "
            "them from registers, so the memory pipe carries many times the bytes the product needs and saturates "
            "before the FP32 pipes."
        ),
        fix=register_tiling_advice(f, mw)
        + (" This GPU has no tensor cores: register tiling is the lever." if no_tc else ""),
        expect=with_duration(f, [used], savings, why="the operand reloads cost"),
        confidence=th.CONFIDENCE_CONSISTENT if f.sass.weighted else th.CONFIDENCE_PARTIAL,
        would_raise="" if f.sass.weighted else "SourceCounters (executed instruction mix)",
        inflates=(unit,),
        waste=max(0.0, 1.0 - balance / ratio),
        blocks_healthy=True,
    )


def wavefronts_per_ffma_balance(f: KernelFacts) -> float:
    """Shared-memory wavefronts per FFMA warp instruction the L1 serves while the FMA pipe runs at its rate: one
    wavefront (L1_BYTES_PER_CYCLE_PER_SM) per cycle per SM over the FFMA warp instructions the SM issues per cycle
    (FMA lanes / 32: 4 on GA10x/Hopper, 2 on A100/V100): 0.25 on the H200."""
    peak = f.v("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
    sms = f.sm_count
    lanes = peak / sms if peak and sms else th.FP32_LANES_PER_SM
    return th.WARP_SIZE / lanes


@dataclass(frozen=True, slots=True)
class SharedReload:
    """The counters of FFMA work that reloads its operands from shared memory (:func:`shared_reload`)."""

    loads_per_ffma: float
    wavefronts_per_ffma: float
    balance: float
    ffma_share: float
    shared_part: float
    """The share of the L1's elapsed-cycle peak that shared-memory wavefronts use (0..1)."""


def shared_reload(f: KernelFacts) -> SharedReload | None:
    """FFMA work whose operands come from shared memory faster than the L1 can serve them, from the counters of a
    report without SASS (a raw CSV export), or None.

    Physics: the L1 serves one shared wavefront per cycle per SM (:func:`wavefronts_per_ffma_balance`); above that
    many wavefronts per FFMA warp instruction the shared pipe saturates before the FMA pipe, so a roof reached there
    is reached by operand reloads, not by the product's work. Without the SASS data flow, the FFMA counts stand for
    it: FFMA is at least MATRIX_LIKE_FFMA_SHARE of the executed instructions, the tensor pipe carries less than the
    FP32 pipe, and the L1 is the busiest unit (within UNIT_TIE_MARGIN) at HEALTHY_FRACTION_OF_PEAK (the rule keeps a
    roof from being called healthy; below the roof the stall reasons decide).
    """
    if not f.sass.empty:
        return None  # the SASS data flow decides (matrix_structure)
    l1 = f.util.get("l1")
    if l1 is None or l1 < th.HEALTHY_FRACTION_OF_PEAK or l1 < f.u_max - th.UNIT_TIE_MARGIN:
        return None
    ffma, executed = ffma_warp_instructions(f.k), f.v(INST_EXECUTED)
    if not ffma or not executed or ffma / executed < th.MATRIX_LIKE_FFMA_SHARE:
        return None
    if f.util.get("tensor", 0.0) >= f.util.get("fp32", 0.0):
        return None  # the tensor pipe carries the math: the FFMAs are its epilogue
    loads = metric_value(f.k, "derived:shared_loads_per_ffma")
    wavefronts = metric_value(f.k, "derived:shared_load_wavefronts_per_ffma")
    balance = wavefronts_per_ffma_balance(f)
    if loads is None or wavefronts is None or wavefronts <= balance * th.COALESCING_TOLERANCE:
        return None
    shared = f.v(SHARED_WAVEFRONT_PCT)
    part = min(l1, shared / 100.0) if shared is not None else l1
    return SharedReload(
        loads_per_ffma=loads,
        wavefronts_per_ffma=wavefronts,
        balance=balance,
        ffma_share=ffma / executed,
        shared_part=part,
    )


def shared_operand_reload(f: KernelFacts) -> Mechanism | None:
    """:func:`shared_reload` as a mechanism: the L1/shared roof reached by operand reloads (``l1_shared_bandwidth_bound``
    as a fix, never healthy). The fix is the standard construction, register micro-tiles with float4 shared reads
    (REGISTER_TILE_SHARED_LOADS_PER_FFMA), which brings the shared traffic under what the L1 serves per FFMA."""
    sr = shared_reload(f)
    if sr is None:
        return None
    l1 = f.util["l1"]
    kept = sr.balance / sr.wavefronts_per_ffma
    after = l1 - sr.shared_part * (1.0 - kept)
    savings = pace_savings(f, "l1", after)
    tile = th.REGISTER_TILE_SHARED_LOADS_PER_FFMA
    fp32 = f.util.get("fp32", 0.0)
    ffma, executed = ffma_warp_instructions(f.k), f.v(INST_EXECUTED)
    # The register tile keeps the FFMAs (the product's math, at the same precision) and its own shared loads; the
    # reloads go, and with them the per-FFMA loop and address instructions of a one-output thread. What it keeps is
    # a floor of its duration at the SMs' peak issue rate (with_duration's issue_kept).
    kept_inst = ffma * (1.0 + tile) if ffma and executed and ffma * (1.0 + tile) < executed else None
    ev = [
        Evidence(
            name="shared-memory loads per FFMA",
            value=round(sr.loads_per_ffma, 3),
            unit="LDS/FFMA",
            reference=f"a register-tiled product (8x8 outputs per thread, float4 shared reads) needs {tile:g}; "
            f"{sr.wavefronts_per_ffma:.2f} shared wavefronts per FFMA against the {sr.balance:.2g} the L1 serves "
            "per FFMA at the FMA pipe's rate",
            reference_value=tile,
            metric="derived:shared_loads_per_ffma",
        ),
        unit_used(
            f, "l1", "saturated by operand reloads from shared memory, not by the work the product needs", l1
        ),
        unit_used(f, "fp32", "the pipe that does the math waits on its shared-memory operands", fp32),
    ]
    expect = [
        Expectation(
            metric="derived:shared_loads_per_ffma",
            direction=Direction.DOWN,
            target=tile,
            unit="LDS/FFMA",
            value_now=round(sr.loads_per_ffma, 3),
            label="shared-memory loads per FFMA",
            basis="an 8x8 register tile of a 128x128x8 block tile: 4 LDS.128 per 64 FFMA",
        ),
        Expectation(
            metric=unit_metric(f, "l1"),
            direction=Direction.DOWN,
            value_now=round(100 * l1, 1),
            unit="%",
            label=f"{UNIT_WORDS['l1']} used",
        ),
    ]
    if kept_inst is not None and ffma and executed:
        expect.append(
            Expectation(
                metric=INST_EXECUTED,
                direction=Direction.DOWN,
                target=round(kept_inst, 0),
                unit="inst",
                value_now=executed,
                label="warp instructions executed",
                basis=f"what the register tile keeps: the {_fmt(round(ffma))} FFMAs the product needs and "
                f"{tile:g} shared loads per FFMA; the reloads and the per-FFMA loop and address instructions go",
            )
        )
    return Mechanism(
        bottleneck=B.L1_SHARED_BANDWIDTH_BOUND,
        savings=savings,
        headline=(
            f"L1/shared-memory bandwidth at {pc(l1)}% of peak, reached by operand reloads: {sr.loads_per_ffma:.3g} "
            f"shared loads per FFMA where a register-tiled product needs {tile:g}, while the FP32 pipe runs at "
            f"{pc(fp32)}% of its peak."
        ),
        evidence=ev,
        mechanism=(
            f"FFMA is {pc(sr.ffma_share)}% of the executed instructions and each one reads its operands from shared "
            f"memory again ({sr.wavefronts_per_ffma:.2f} shared wavefronts per FFMA): one output per thread leaves "
            "nothing to reuse in registers. The L1 serves one shared wavefront per cycle per SM while the FMA pipe "
            f"retires {1 / sr.balance:.0f} FFMA warp instructions, so above {sr.balance:.2g} wavefronts per FFMA the "
            "shared pipe saturates first: the roof it is at is reached by reloads the product does not need. (The "
            "report has no SASS; that the FFMAs multiply shared-memory operands is read from their counts.)"
        ),
        fix=(
            "Register-tile the product: each thread computes a TM x TN micro-tile (e.g. 8x8 outputs of a 128x128x8 "
            "block tile), loads a column of the A tile and a row of the B tile from shared memory into registers as "
            f"float4 once per k, and reuses them for its TM x TN FFMAs: 4 LDS.128 per 64 FFMA ({tile:g} per FFMA, "
            f"against {sr.loads_per_ffma:.3g} now). Or call cuBLAS/CUTLASS, with TF32 tensor cores if the precision "
            "allows."
        ),
        expect=with_duration(
            f,
            expect,
            savings,
            issue_kept=kept_inst / executed if kept_inst is not None and executed else None,
        ),
        confidence=th.CONFIDENCE_PARTIAL,
        would_raise="SourceCounters (the SASS data flow that shows the FFMAs multiplying shared-memory operands)",
        inflates=("l1", "issue"),
        waste=sr.shared_part / l1 * (1.0 - kept),
        blocks_healthy=True,
    )


# ------------------------------------------------------------------------------------ TF32, the FP32 roof's lever
_FMUL_THREAD_RATE = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed"
_XU_PIPE = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed"
_LDGSTS = "smsp__inst_executed_op_ldgsts.sum"


def fp32_matrix_from_counters(f: KernelFacts) -> bool:
    """FP32 matrix work read from the counters of a report without SASS: FFMA is MATRIX_FFMA_OF_FP32 of the FP32
    thread instructions and FP_HEAVY_SHARE of the executed ones, the XU pipe below MATRIX_LIKE_MAX_SFU_SHARE, the
    operands staged through shared memory (shared loads or LDGSTS), the FP32 FLOP per DRAM byte past the ridge (reuse)
    and the tensor pipe idle next to the FP32 pipe. A Horner polynomial with coefficients in shared memory would
    pass too: without SASS the data flow cannot be told, so the words say "if this is a matrix product" unless the
    kernel's name says it is."""
    if not f.sass.empty:
        return False
    rates = [f.v(n) for n in (FFMA_THREAD_RATE, FADD_THREAD_RATE, _FMUL_THREAD_RATE)]
    ffma_rate = rates[0]
    total = sum(r or 0.0 for r in rates)
    if not ffma_rate or ffma_rate < th.MATRIX_FFMA_OF_FP32 * total:
        return False
    ffma, executed = ffma_warp_instructions(f.k), f.v(INST_EXECUTED)
    if not ffma or not executed or ffma / executed < th.FP_HEAVY_SHARE:
        return False
    xu = f.v(_XU_PIPE)
    if xu is not None and xu / 100.0 > th.MATRIX_LIKE_MAX_SFU_SHARE:
        return False
    if not (metric_value(f.k, "derived:shared_loads_per_ffma") or f.v(_LDGSTS)):
        return False
    intensity, ridge = metric_value(f.k, "derived:fp32_flop_per_dram_byte"), f.roof.ridge("fp32", "dram")
    if intensity is None or intensity < (ridge or th.MATRIX_LIKE_MIN_INTENSITY):
        return False
    return f.util.get("tensor", 0.0) < f.util.get("fp32", 0.0)


@dataclass(frozen=True, slots=True)
class Tf32Lever:
    """FP32 matrix work at the FP32 roof of a GPU whose tensor cores take TF32 (:func:`tf32_lever`)."""

    fp32_rate: float | None
    """Achieved FP32 FLOP/s."""
    fp32_peak: float | None
    tf32_peak: float | None
    """The report's TF32 tensor path ceiling (FLOP/s), when it names one."""
    path: str | None
    from_sass: bool


def tf32_lever(f: KernelFacts, matrix_in_sass: bool) -> Tf32Lever | None:
    """TF32 tensor cores as the lever of FP32 matrix work at the FP32 roof: the GPU's generation takes TF32 inputs
    (sm_80 and later: :mod:`kprof.knowledge.instructions`), and the work is a matrix product (``matrix_in_sass``:
    :func:`no_tensor_cores` found it in the SASS data flow; else :func:`fp32_matrix_from_counters`). The precision
    cost is TF32_ROUNDING_ERROR per input. None otherwise."""
    gen = arch(sm_of(f.k.compute_capability))
    if gen is None or "tf32" not in gen.tensor_dtypes or f.tensor_cores is False:
        return None
    if not (matrix_in_sass or fp32_matrix_from_counters(f)):
        return None
    peaks = f.roof.tensor_path_peaks
    path = next((p for p in peaks if "tf32" in p and "sparsity_on" not in p), None)
    return Tf32Lever(
        fp32_rate=f.roof.flops.get("fp32"),
        fp32_peak=f.roof.peak_flops.get("fp32"),
        tf32_peak=peaks.get(path) if path else None,
        path=path,
        from_sass=matrix_in_sass,
    )


def tf32_words(lever: Tf32Lever, named_gemm: bool) -> str:
    """The TF32 sentence: the switch in PyTorch and in cuBLAS, the precision it costs, the roof it moves to."""
    cond = "" if lever.from_sass or named_gemm else "If this is a matrix product: "
    roof = ""
    if lever.tf32_peak and lever.fp32_peak:
        roof = (
            f" The TF32 tensor path peaks at {lever.tf32_peak / 1e12:.0f} TFLOP/s on this GPU (the report's "
            f"{lever.path}) against {lever.fp32_peak / 1e12:.0f} TFLOP/s for FP32 FMA, "
            f"{lever.tf32_peak / lever.fp32_peak:.0f}x the roof."
        )
    return (
        f"{cond}the lever past the FP32 roof is TF32 on the tensor cores, if the precision allows: "
        'torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision("high")) from '
        "PyTorch, cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH) (or CUBLAS_COMPUTE_32F_FAST_TF32 in "
        "cublasGemmEx/cublasLt) from C++. TF32 rounds each input to 10 mantissa bits (relative error up to "
        f"{th.TF32_ROUNDING_ERROR:.1e} per operand, FP32 accumulation; FP32 keeps 23 bits)." + roof
    )


def tf32_finding(f: KernelFacts, lever: Tf32Lever, named_gemm: bool) -> Finding:
    """:func:`tf32_lever` as a secondary finding of a healthy FP32 kernel (advice: it changes the precision)."""
    ev: list[Evidence] = []
    pipe_hit = f.k.first_value(*TENSOR_PIPE_METRICS)
    if pipe_hit is not None:
        ev.append(
            Evidence(
                name="tensor pipe used",
                value=round(pipe_hit[1], 2),
                unit="% of peak",
                reference="idle: the products run on the FP32 FMA pipe",
                metric=pipe_hit[0],
            )
        )
    if lever.tf32_peak and lever.fp32_rate:
        ev.append(
            Evidence(
                name="achieved FP32 throughput",
                value=round(lever.fp32_rate / 1e12, 1),
                unit="TFLOP/s",
                reference=f"the TF32 tensor path peaks at {lever.tf32_peak / 1e12:.0f} TFLOP/s (from the report)",
                reference_value=round(lever.tf32_peak / 1e12, 1),
                metric="derived:fp32_tflops",
            )
        )
    cond = "" if lever.from_sass or named_gemm else " (if this is a matrix product)"
    return Finding(
        bottleneck=B.NO_TENSOR_CORES,
        headline=f"FP32 matrix work on the FMA pipe{cond}: TF32 tensor cores would raise the roof"
        + (f" {lever.tf32_peak / lever.fp32_peak:.0f}x" if lever.tf32_peak and lever.fp32_peak else "")
        + f", at a rounding error of up to {th.TF32_ROUNDING_ERROR:.1e} per input.",
        evidence=tuple(ev),
    )


# ------------------------------------------------------------------------------------ static SASS (no counters)
def static_matrix_suspect(sk: StaticKernel) -> bool:
    """No MMA instruction and FFMA at least STATIC_NO_TENSOR_CORES_FFMA_SHARE of the listing: matrix work may run on
    the FP32 pipes. A guess: without executed counts or the data flow of the hot loop, only the share is known."""
    return sk.sass.mma == 0 and sk.ffma_share >= th.STATIC_NO_TENSOR_CORES_FFMA_SHARE


def static_no_tensor_cores_finding(sk: StaticKernel) -> Finding | None:
    """:func:`static_matrix_suspect` as a secondary finding (beside local memory)."""
    if not static_matrix_suspect(sk):
        return None
    ev = sk.evidence()
    return Finding(
        bottleneck=B.NO_TENSOR_CORES,
        headline=f"No tensor-core instruction and FFMA is {100 * sk.ffma_share:.0f}% of the SASS: "
        "if this is matrix work, it runs on the FP32 pipes.",
        evidence=(ev[2], ev[4]),
    )


def static_no_tensor_cores(sk: StaticKernel) -> Diagnosis | None:
    """:func:`static_matrix_suspect` as the diagnosis: inconclusive at STATIC_NO_TENSOR_CORES_CONFIDENCE (only the
    kernel's author knows whether it multiplies matrices)."""
    if not static_matrix_suspect(sk):
        return None
    ev = sk.evidence()
    return Diagnosis(
        subject=sk.subject,
        bottleneck=B.NO_TENSOR_CORES,
        verdict=Verdict.INCONCLUSIVE,
        headline=f"No HMMA/HGMMA in the SASS{sk.in_binary} and FFMA is {100 * sk.ffma_share:.0f}% of it: "
        "if this kernel multiplies matrices, it runs on the FP32 pipes at a fraction of the "
        "tensor-core rate.",
        evidence=(ev[2], ev[4], ev[0]),
        mechanism="Matrix products written as scalar multiply-adds compile to FFMA; only mma/wgmma "
        "(WMMA, CUTLASS, cuBLAS, Triton tl.dot) emit tensor-core instructions.",
        fix="If it is a matrix product: call cuBLAS/cuBLASLt (torch.matmul), or write it with "
        "WMMA/CUTLASS/Triton tl.dot in bf16/fp16/tf32 so that HMMA/HGMMA is emitted.",
        confidence=Confidence(
            value=th.STATIC_NO_TENSOR_CORES_CONFIDENCE,
            would_raise="only the kernel's author knows if it is matrix work; an ncu capture "
            "would show whether the FP32 pipe is the saturated resource",
        ),
        next_step=sk.next_step,
    )
