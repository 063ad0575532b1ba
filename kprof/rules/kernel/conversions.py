"""``instruction_bound`` of 16-bit data widened to FP32 and rounded back every step (a round trip through half)."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.roofline import COMPUTE_SOL
from kprof.facts.constructs import constructs, of_kind
from kprof.facts.kernel import KernelFacts, sm_busy_words
from kprof.knowledge import constructs as kc
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, with_duration


def half_round_trips(f: KernelFacts) -> Mechanism | None:
    """FP16/BF16 values widened to FP32, updated, and rounded back inside a loop, in a kernel that issue limits.

    Physics: a conversion is an instruction like the FMA it serves: ``x = __float2half(fmaf(a, __half2float(x),
    b))`` issues three conversions (two HADD2.F32 widenings and one F2FP pack) for two FFMAs per step of a half2
    pair, where packed half math (``__hfma2``) issues one HFMA2. While issue is the limit (above
    LATENCY_BOUND_FRACTION), the conversions' share of the executed instructions is time the kernel spends on
    neither data movement nor the math, and the FP32 pipe's busy time is partly conversion work: its roof is the
    wrong one (the healthy verdict is blocked). The SASS signature is
    :func:`kprof.facts.constructs.constructs`' ``half_round_trip``: a narrowing whose result is widened again.
    """
    issue = f.util.get("issue")
    if (
        issue is None
        or issue < th.LATENCY_BOUND_FRACTION
        or not any(
            s.mnemonic == "F2FP" or (s.mnemonic == "F2F" and (".F16" in s.opcode or ".BF16" in s.opcode))
            for s in f.k.sass
        )
    ):
        return None  # no narrowing to 16 bits in the listing: nothing to round-trip
    x = next(iter(of_kind(constructs(f.k), kc.HALF_ROUND_TRIP)), None)
    if x is None:
        return None
    share = min(1.0, x.share)
    conversions = int(x.executed)
    ops = ", ".join(x.sass[:3])
    dtype = "BF16" if x.origin == "bf16" else "FP16"
    executed = f.v("smsp__inst_executed.sum")
    expect = [
        Expectation(
            metric="sass:half_conversions",
            direction=Direction.DOWN,
            target=0.0,
            unit="inst",
            value_now=float(conversions),
            label="16-bit <-> FP32 conversions executed in the loop",
            basis="a loop that computes in the 16-bit type (packed HFMA2), or in FP32 throughout, converts nothing",
        ),
        Expectation(
            metric="smsp__inst_executed.sum",
            direction=Direction.DOWN,
            target=round(executed * (1 - share), 0) if executed else None,
            unit="inst",
            value_now=executed,
            label="warp instructions executed",
            basis=f"the {pc(share)}% of them that are the conversions removed",
        ),
    ]
    return Mechanism(
        bottleneck=B.INSTRUCTION_BOUND,
        savings=share,
        headline=(
            f"{dtype} data converted to FP32 and back every step: {conversions:,} conversions ({ops}) are "
            f"{pc(share)}% of the executed instructions, and {sm_busy_words(f, issue)}."
        ),
        evidence=[
            Evidence(
                name=f"{dtype} <-> FP32 conversions executed in the loop",
                value=conversions,
                unit="inst",
                reference=f"0 when the loop computes in the 16-bit type ({x.numbers.get('fp32_ops', 0):,.0f} FP32 "
                "operations are the math they serve)",
                metric="sass:half_conversions",
            ),
            Evidence(
                name="conversions among executed instructions",
                value=round(100 * share, 1),
                unit="%",
                reference="issue slots spent on neither the data movement nor the math",
                metric="sass:half_conversion_share",
            ),
            Evidence(
                name="SM instruction throughput",
                value=round(100 * issue, 1),
                unit="% of peak",
                reference="the unit the conversions keep busy",
                metric=COMPUTE_SOL,
            ),
        ],
        mechanism=(
            f"The loop keeps its values as {dtype} but computes each step in FP32: every step widens each value to "
            "FP32, runs the FFMA and rounds the result back to 16 bits, and the next step widens it again. The "
            "conversions take issue slots the math could use, and the FP32 pipe's busy time is partly theirs, so "
            "its roof is not the work's."
        ),
        fix=(
            "Do the arithmetic in the packed 16-bit type (`__hfma2` on `__half2`/`__nv_bfloat162`: one HFMA2 per "
            "step for two elements), or carry the value in FP32 through the loop and convert once after it; in "
            "Triton carry it in tl.float32, in PyTorch torch.compile the chain of 16-bit ops."
        ),
        expect=with_duration(f, expect, share, why="the conversions cost", issue_kept=1.0 - share),
        confidence=th.CONFIDENCE_CONSISTENT,
        would_raise="",
        inflates=("issue", "fp32", "fp16"),
        waste=share,
        blocks_healthy=True,
    )
