"""FP32 data computed in FP64 (accidental promotion): ``instruction_bound`` or ``compute_bound`` by the FP64 math."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.roofline import COMPUTE_SOL
from kprof.facts.kernel import KernelFacts, kernel_floor_ns, sm_busy_words, sm_throughput_pipe, unit_metric
from kprof.facts.names import DURATION, THREADS_PER_INST
from kprof.facts.sass_traits import Fp64Promotion, fp64_promotion
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, with_duration

FIX_UNIT = "fp32"
"""The fix moves the FP64 arithmetic to the FP32 pipe (:func:`~kprof.facts.kernel.kernel_floor_ns`)."""


def promoted_fp64(f: KernelFacts) -> Mechanism | None:
    """FP32 data whose arithmetic runs in FP64 (:func:`~kprof.facts.sass_traits.fp64_promotion`), in a kernel that
    issue or the FP64 pipe limits (either above LATENCY_BOUND_FRACTION).

    Physics: the FP64 pipe of most GPUs runs at a fraction of the FP32 rate (1/2 on H100/H200, 1/64 on consumer
    parts: the ratio of the report's own FP64 and FP32 peaks), and the FP64 library routines (exp, log, tanh,
    division) execute several times the instructions of their FP32 versions: their polynomials are longer, their
    64-bit constants take moves, their special cases branch. Keeping the arithmetic in FP32 removes those
    instructions. The saving is bounded by the instructions that stay (the non-FP64 share of the issue) and by the
    kernel's floor with the math on the FP32 pipe; the lanes masked inside the routines' branches go with them.
    """
    p = fp64_promotion(f.k.sass)
    if p is None:
        return None
    issue, fp64 = f.util.get("issue"), f.util.get("fp64")
    busy = max(issue or 0.0, fp64 or 0.0)
    if busy < th.LATENCY_BOUND_FRACTION:
        return None  # neither issue nor the FP64 pipe limits: the kernel waits on something else
    unit = "issue" if (issue or 0.0) >= (fp64 or 0.0) else "fp64"
    d = f.v(DURATION)
    floor = kernel_floor_ns(f.k, FIX_UNIT, th.HEALTHY_FRACTION_OF_PEAK) if d else None
    stays = (1.0 - p.fp64_share) * busy
    savings = max(0.0, 1.0 - max(stays, (floor / d) if d and floor else 0.0))
    ratio = _fp64_rate_ratio(f)
    r = f.v(THREADS_PER_INST)
    ev = _evidence(f, p, unit, busy)
    expect = [
        Expectation(
            metric="sass:fp64_widening_conversions",
            direction=Direction.DOWN,
            target=0.0,
            unit="inst",
            value_now=float(int(p.widen)),
            label="FP32 -> FP64 conversions executed",
            basis="none: FP32 data computed in FP32 is never widened",
        )
    ]
    lanes = (
        f" The {r:.1f} of {th.WARP_SIZE} active lanes per instruction come from those routines' branches and go "
        "with them."
        if r is not None and r < th.DIVERGENCE_ACTIVE_THREADS
        else ""
    )
    return Mechanism(
        bottleneck=B.INSTRUCTION_BOUND if unit == "issue" else B.COMPUTE_BOUND,
        savings=savings,
        headline=(
            f"FP64 math on FP32 data: the kernel loads and stores 32-bit floats but widens them to FP64 "
            f"({int(p.widen):,} F2F.F64.F32 executed), and {pc(p.fp64_share)}% of its instructions are FP64; "
            + (
                f"{sm_busy_words(f, busy)}."
                if unit == "issue"
                else f"the FP64 pipe is at {pc(busy)}% of its peak."
            )
        ),
        evidence=ev,
        mechanism=(
            "A double constant, variable or double-precision function promotes an FP32 expression: each element is "
            "converted to FP64 (F2F.F64.F32), computed in FP64 (the executed FP64 instructions: "
            + _executed_ops(p)
            + "), and converted back (F2F.F32.F64)"
            + (f"; this GPU's FP64 peak is {ratio} of its FP32 peak" if ratio else "")
            + "."
            + _conversion_pipe(f, p)
            + lanes
        ),
        fix=(
            "Keep the arithmetic in FP32: float constants and variables (`1.0f`, `float beta`), the FP32 functions "
            "(`expf`, `log1pf`, `tanhf`; or `__expf` and `-use_fast_math` where the accuracy allows); in Triton or "
            "PyTorch, compute in the tensors' float32 dtype. Keep FP64 only where it is deliberate (a long running sum's "
            "accumulator)."
        ),
        expect=with_duration(f, expect, savings, FIX_UNIT, why="the FP64 work costs over its FP32 form"),
        confidence=th.CONFIDENCE_CONSISTENT,
        would_raise="",
        inflates=("issue", "fp64", "xu"),
        waste=p.fp64_share,
        blocks_healthy=True,
        fix_unit=FIX_UNIT,
    )


def _evidence(f: KernelFacts, p: Fp64Promotion, unit: str, busy: float) -> list[Evidence]:
    """The conversions, the FP64 share and the unit the FP64 math keeps busy."""
    return [
        Evidence(
            name="FP32 values widened to FP64 (F2F.F64.F32, executed)",
            value=int(p.widen),
            unit="inst",
            reference=f"{int(p.narrow):,} F2F.F32.F64 narrow the results back; every global load and store moves "
            "32-bit values: the data is FP32, the arithmetic FP64",
            metric="sass:fp64_widening_conversions",
        ),
        Evidence(
            name="FP64 instructions among executed instructions",
            value=round(100 * p.fp64_share, 1),
            unit="%",
            reference=_executed_ops(p)
            + " (executed); the FP64 routines' other instructions (64-bit constant "
            "moves, branches) come on top",
            metric="sass:fp64_inst_share",
        ),
        Evidence(
            name=("SM throughput" if sm_throughput_pipe(f) else "SM instruction throughput")
            if unit == "issue"
            else "FP64 pipe throughput",
            value=round(100 * busy, 1),
            unit="% of peak",
            reference=_sm_reference(f) if unit == "issue" else "the unit the FP64 math keeps busy",
            metric=COMPUTE_SOL if unit == "issue" else unit_metric(f, "fp64"),
        ),
    ]


def _sm_reference(f: KernelFacts) -> str:
    """What the SM throughput the evidence quotes is: a pipe (:func:`sm_throughput_pipe`), or the issue slots."""
    src = sm_throughput_pipe(f)
    if src is None:
        return "the SMs' instruction issue, which the FP64 work fills"
    words, u, issue = src
    return f"ncu's SM throughput, set by the {words} at {pc(u)}%; instruction issue is at {pc(issue)}%"


def _executed_ops(p: Fp64Promotion) -> str:
    """The FP64 instructions that executed, most first, with their share of the FP64 ones: ``F2F.F64.F32 49%,
    DADD 49%, F2F.F32.F64 1%``."""
    total = sum(n for _, n in p.ops) or 1.0
    return ", ".join(f"{op} {pc(n / total)}%" for op, n in p.ops[:5])


def _conversion_pipe(f: KernelFacts, p: Fp64Promotion) -> str:
    """When the conversions (which run on the XU pipe) are at least half the FP64 work and XU is the busiest pipe:
    the sentence that says the conversions, not the FP64 arithmetic, set the pace."""
    xu, fp64 = f.roof.utilization.get("xu_pipe"), f.roof.utilization.get("fp64_pipe")
    conv = sum(n for op, n in p.ops if op.startswith("F2F"))
    if xu is None or conv < p.fp64_ops - conv or (fp64 is not None and fp64 >= xu):
        return ""
    return (
        f" The conversions run on the XU pipe, at {pc(xu)}% of its peak"
        + (f" against the FP64 pipe's {pc(fp64)}%" if fp64 is not None else "")
        + ": one F2F per element is what sets the pace."
    )


def _fp64_rate_ratio(f: KernelFacts) -> str:
    """``1/2``, ``1/64``: the report's FP64 peak over its FP32 peak; "" when either is missing."""
    p64, p32 = f.roof.peak_flops.get("fp64"), f.roof.peak_flops.get("fp32")
    if not p64 or not p32 or p64 >= p32:
        return ""
    return f"1/{round(p32 / p64):d}"
