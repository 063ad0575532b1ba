"""``warp_divergence``: lanes masked off in the executed warp instructions."""

from __future__ import annotations

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, sm_throughput_pipe, threads_per_instruction
from kprof.facts.sass_traits import fp64_promotion
from kprof.model import Direction, Evidence, Expectation
from kprof.rules.kernel.common import B, Mechanism, pc, scale_to_limiter, with_duration


def divergence(f: KernelFacts) -> Mechanism | None:
    """Lanes masked off in executed warp instructions: the SM issues an instruction for fewer useful lanes.

    Physics: divergent paths run one after another, each in the warp's issue slots. That costs time when issue is
    what limits the kernel; with the schedulers issuing below LATENCY_BOUND_FRACTION of their slots (the SMs wait on
    memory), the masked lanes occupy slots that were free anyway.
    """
    r, r_metric = threads_per_instruction(f.k)
    if r is None or r >= th.DIVERGENCE_ACTIVE_THREADS:
        return None
    issue_util = f.util.get("issue")
    if issue_util is not None and issue_util < th.LATENCY_BOUND_FRACTION:
        return None
    if _inside_fp64_routines(f):
        return (
            None  # the branches of promoted FP64 library routines: kprof.rules.kernel.precision's consequence
        )
    tpb = f.k.threads_per_block
    partial = tpb is not None and tpb % th.WARP_SIZE != 0 and tpb < th.WARP_SIZE
    efficiency = r / th.WARP_SIZE
    issue = f.util.get("issue", 0.0)
    savings = (1.0 - efficiency) * scale_to_limiter(f, f.util.get("issue"))
    branch_hit = f.k.first_value(
        "smsp__sass_branch_targets_threads_divergent.sum", "smsp__branch_targets_threads_divergent"
    )
    ev = [
        Evidence(
            name="active threads per executed warp instruction",
            value=round(r, 1),
            unit="threads",
            reference=f"{th.WARP_SIZE} when every lane of a warp takes the same path",
            reference_value=th.WARP_SIZE,
            metric=r_metric,
        ),
    ]
    if issue_util is not None:
        ev.append(
            Evidence(
                name="SM throughput" if sm_throughput_pipe(f) else "SM instruction throughput",
                value=round(100 * issue, 1),
                unit="% of peak",
                reference=_sm_words(f),
                metric="sm__throughput.avg.pct_of_peak_sustained_elapsed",
            )
        )
    if branch_hit is not None:
        ev.append(
            Evidence(
                name="divergent branch targets",
                value=int(branch_hit[1]),
                unit="",
                reference="0 without divergence: the lanes of a warp took different paths at these branches",
                metric=branch_hit[0],
            )
        )
    lanes = Expectation(
        metric=r_metric,
        direction=Direction.UP,
        target=float(th.DIVERGENCE_TARGET_ACTIVE_THREADS),
        unit="threads",
        value_now=round(r, 1),
        label="active threads per warp instruction",
        basis=f"a warp-uniform branch: {th.DIVERGENCE_TARGET_ACTIVE_THREADS:g} of {th.WARP_SIZE} lanes, the loop "
        "tails and bounds guards of real kernels kept",
    )
    return Mechanism(
        bottleneck=B.WARP_DIVERGENCE,
        savings=savings,
        headline=(
            f"Warp divergence: {r:.1f} of {th.WARP_SIZE} threads are active per executed instruction "
            f"({100 * efficiency:.0f}% SIMT efficiency)."
        ),
        evidence=ev,
        mechanism=(
            "Lanes of one warp take different branches (a switch or condition on threadIdx or on data), so the warp "
            "runs each path one after another with the other lanes masked off."
            + (" Blocks smaller than a warp also leave lanes empty." if partial else "")
        ),
        fix=(
            "Make the branch condition uniform per warp: map work so that all 32 lanes of a warp take the same path "
            "(e.g. select by warp index, or sort/bin the elements by path first), or turn short paths into "
            "predicated arithmetic."
        ),
        expect=with_duration(f, [lanes], savings, why="the masked lanes cost"),
        confidence=th.CONFIDENCE_MEASURED_INFERRED,
        would_raise="SourceCounters (per-line divergence) to point at the branch"
        if "source" in f.missing
        else "",
        inflates=("issue", "fp32", "fp64", "tensor", "xu"),
        waste=1.0 - efficiency,
    )


def _inside_fp64_routines(f: KernelFacts) -> bool:
    """True when the kernel computes FP32 data in FP64 (:func:`~kprof.facts.sass_traits.fp64_promotion`) and most
    divergent branch executions sit on the source lines that run the FP64 math: the lanes split inside the FP64
    library routines' special-case paths, which the FP32 functions do not take. Without per-PC divergence counts or
    line info the branches cannot be placed, and divergence stands on its own."""
    p = fp64_promotion(f.k.sass)
    if p is None or not p.lines:
        return False
    fp64_lines = set(p.lines)
    total = inside = 0.0
    for s in f.k.sass:
        n = s.counters.get("smsp__branch_targets_threads_divergent") or 0.0
        if s.mnemonic != "BRA" or n <= 0:
            continue
        total += n
        if s.file and s.line and (s.file, s.line) in fp64_lines:
            inside += n
    return total > 0 and inside >= th.DIVERGENCE_INSIDE_FP64_SHARE * total


def _sm_words(f: KernelFacts) -> str:
    """What the SM throughput beside divergence means: the issue slots, or the pipe that sets it."""
    src = sm_throughput_pipe(f)
    if src is None:
        return "divergence costs time in proportion to how busy the SM's issue is"
    words, u, issue = src
    return (
        f"set by the {words} at {pc(u)}% (instruction issue {pc(issue)}%): the masked lanes' slots cost time on that "
        "pipe"
    )
