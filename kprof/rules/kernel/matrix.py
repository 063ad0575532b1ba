"""Matrix products on the FP32 pipes: ``no_tensor_cores`` (the data flow of a matrix product, no MMA in the SASS),
and L1/L2 saturated by operand reloads (a thread tile too small to reuse its loads); without counters, an
FFMA-heavy listing without MMA (:func:`static_no_tensor_cores`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kprof import thresholds as th
from kprof.diagnose.roofline import TENSOR_PIPE_METRICS
from kprof.facts.kernel import KernelFacts, metric_value, unit_metric
from kprof.facts.static import StaticKernel
from kprof.facts.units import UNIT_WORDS
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
    if mw is None or mw.load_bytes_per_fma is None:
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
