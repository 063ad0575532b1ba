"""``tensor_core_bound`` on a slower tensor data path than the GPU has for the same inputs (mma.sync on Hopper)."""

from __future__ import annotations

import re

from kprof import thresholds as th
from kprof.facts.kernel import KernelFacts, metric_value
from kprof.facts.units import MEMORY_UNITS
from kprof.model import Direction, Evidence, Expectation, _fmt
from kprof.rules.kernel.common import B, Mechanism, pc, with_duration


def _path_metric(path: str) -> str:
    """The ncu metric stem of a tensor data path."""
    return "sm__ops_path_tensor_" + ("" if path.startswith("src_") else "op_") + path


def slow_tensor_path(f: KernelFacts) -> Mechanism | None:
    """Tensor work at the ceiling of a slower data path than the GPU offers for the same input type.

    Physics: each tensor data path has its own ceiling (ncu's ``sm__ops_path_tensor_<path>`` peaks); on sm_90 the
    ``mma.sync`` path (HMMA) peaks at 2/3 of warpgroup MMA (HGMMA) for BF16/FP16. A kernel at >= the healthy
    fraction of its path's ceiling is at *that* roof, and the GPU's roof for its data is the fastest path's.
    """
    path, achieved, best = f.roof.tensor_path, f.roof.flops.get("tensor"), f.roof.peak_flops.get("tensor")
    used_peak = f.roof.tensor_path_peaks.get(path or "")
    if not path or not achieved or not best or not used_peak or best <= used_peak * th.COALESCING_TOLERANCE:
        return None
    used = achieved / used_peak
    others = max((f.util[u] for u in MEMORY_UNITS if u in f.util), default=0.0)
    if used < th.HEALTHY_FRACTION_OF_PEAK and (used < th.LATENCY_BOUND_FRACTION or used < others):
        # not at its own path's ceiling, and either not busy (the kernel waits: the gap is elsewhere) or not
        # its busiest unit; a path busy above the SOL rule's 60% and busier than every memory level limits the
        # kernel, and its ceiling sits below the GPU's roof for these inputs
        return None
    best_path = max(
        (p for p, v in f.roof.tensor_path_peaks.items() if v == best and _same_inputs(p, path)),
        key=len,
        default="the fastest path",
    )
    savings = max(0.0, 1.0 - achieved / (best * th.HEALTHY_FRACTION_OF_PEAK))
    tf = round(achieved / 1e12, 1)
    ops = "TOPS" if "_int" in path else "TFLOP/s"  # integer MMA counts operations, not floating-point ones
    ev = [
        Evidence(
            name=f"tensor {'operations' if ops == 'TOPS' else 'FLOP/s'} on the {path} path",
            value=tf,
            unit=ops,
            reference=f"{round(100 * used, 1):g}% of that path's ceiling ({used_peak / 1e12:.0f} {ops})",
            reference_value=round(used_peak / 1e12, 1),
            metric=f"{_path_metric(path)}.sum.per_second",
        ),
        Evidence(
            name="fastest tensor path for the same inputs",
            value=round(best / 1e12, 1),
            unit=ops,
            reference=f"{best_path}: the roof of this GPU for the kernel's data type",
            metric=f"{_path_metric(best_path)}.sum.peak_sustained_elapsed.per_second",
        ),
    ]
    tensor = Expectation(
        metric="derived:tensor_utilization",
        direction=Direction.UP,
        target=round(100 * th.HEALTHY_FRACTION_OF_PEAK, 1),
        unit="%",
        value_now=metric_value(f.k, "derived:tensor_utilization"),
        label=f"tensor {'operations' if ops == 'TOPS' else 'FLOP/s'} as % of the fastest path's peak",
        basis=f"the roof: {_fmt(th.HEALTHY_FRACTION_OF_PEAK, 'fraction')} of the fastest path's peak",
    )
    return Mechanism(
        bottleneck=B.TENSOR_CORE_BOUND,
        savings=savings,
        headline=(
            f"Tensor cores {'at the ceiling of' if used >= th.HEALTHY_FRACTION_OF_PEAK else 'busy on'} a slower "
            f"path: {tf:g} {ops} on {path} is {round(100 * used, 1):g}% of "
            f"that path's peak but {pc(achieved / best)}% of the {best / 1e12:.0f} {ops} that {best_path} reaches "
            "on this GPU."
        ),
        evidence=ev,
        mechanism=(
            f"The matrix instructions the kernel issues ({_family_words(path, 'e.g. mma.sync, SASS HMMA')}, on "
            "Hopper) have a lower peak than the GPU's fastest tensor path for the same inputs "
            f"({_family_words(best_path, 'warpgroup MMA, SASS HGMMA')}, fed by TMA)."
        ),
        fix=(
            "Use the fastest MMA the GPU has for this data type: on sm_90, warpgroup MMA (wgmma / HGMMA) with TMA "
            "loads, through CUTLASS 3.x, cuBLAS(Lt), or Triton's Hopper matmul, instead of mma.sync/WMMA."
        ),
        expect=with_duration(
            f, [tensor], savings, fix_unit="tensor", why="the same MMAs on the fastest path at its roof save"
        ),
        confidence=th.CONFIDENCE_CONSISTENT,
        would_raise="",
        inflates=("tensor",),
        waste=0.0,
        blocks_healthy=True,
        fix_unit="tensor",
    )


_SRC = re.compile(r"src_([a-z0-9]+)")


def _same_inputs(p: str, path: str) -> bool:
    """True when tensor path ``p`` takes the same input type as ``path``, dense or sparse alike."""
    a, b = _SRC.search(p), _SRC.search(path)
    return (
        a is not None
        and b is not None
        and a.group(1) == b.group(1)
        and ("sparsity_on" in p) == ("sparsity_on" in path)
    )


_FAMILY_WORDS = {
    "hmma": "mma.sync, SASS HMMA",
    "imma": "mma.sync, SASS IMMA",
    "dmma": "mma.sync, SASS DMMA",
    "hgmma": "warpgroup MMA, SASS HGMMA",
    "igmma": "warpgroup MMA, SASS IGMMA",
    "qgmma": "warpgroup MMA, SASS QGMMA",
}


def _family_words(path: str, default: str) -> str:
    """The instruction of a tensor path in words (``imma_src_int8...`` -> ``mma.sync, SASS IMMA``)."""
    return _FAMILY_WORDS.get(path.split("_", 1)[0], default)
