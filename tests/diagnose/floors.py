"""The one physical floor of a kernel's duration that the invariant modules hold every predicted duration to
(tests/diagnose/test_invariants.py and tests/diagnose/test_numbers_agree.py), computed here from the raw metrics.

The most permissive floor the work allows: no kernel shorter than the shortest one measured
(``MIN_KERNEL_DURATION_NS``); the bytes that must cross DRAM at the DRAM peak; all FLOPs at the fastest peak the
report names. The bytes that must cross DRAM are the fewer of the bytes DRAM moved and the bytes the executed global
instructions asked for (ncu's ideal sectors x 32 B), less the bytes a kernel that reads its data once does not move:
the DRAM reads of a second loop over addresses an earlier loop of the same block read.

That last quantity is the one taken from kprof's analysis, and it is the one kprof's own floor subtracts
(:func:`kprof.facts.kernel.kernel_floor_parts` takes off :func:`kprof.facts.kernel.repeated_dram_bytes`): the
instructions asked for those bytes, but the algorithm needs them once (blind7 cuda_rmsnorm_2pass: its one-pass twin
runs in 260 µs under ncu, below the 330 µs every byte it requests would take at the DRAM peak). It is read through
the documented derived quantity ``derived:single_pass_dram_read_bytes`` (the DRAM reads less the repeated ones), so
a floor that did not know the repeated pass is avoidable would call the one-pass twin impossible.
"""

from __future__ import annotations

from kprof import thresholds as th
from kprof.diagnose.kernel import DURATION, metric_value
from kprof.diagnose.roofline import roofline
from kprof.kernel_model import KernelLaunch


def avoidable_dram_bytes(k: KernelLaunch) -> float:
    """DRAM reads a single pass over the data would not make: ``dram__bytes_read.sum`` less
    ``derived:single_pass_dram_read_bytes``; 0 without a repeated pass."""
    read, once = k.value("dram__bytes_read.sum"), metric_value(k, "derived:single_pass_dram_read_bytes")
    return max(0.0, read - once) if read is not None and once is not None else 0.0


def compulsory_dram_bytes(k: KernelLaunch) -> float | None:
    """The bytes that must cross DRAM: the fewer of those moved and those requested, less the avoidable reads."""
    moved = metric_value(k, "derived:dram_bytes")
    if moved is None:
        return None
    ideal = k.value("memory_l2_theoretical_sectors_global_ideal")
    if ideal is not None:
        moved = min(moved, 32.0 * ideal)
    return moved - avoidable_dram_bytes(k)


def physical_floor_ns(k: KernelLaunch) -> float:
    """The shortest duration (ns) the kernel's work allows (the module docstring)."""
    r = roofline(k)
    d = k.value(DURATION)
    floors = [float(th.MIN_KERNEL_DURATION_NS)]
    moved = compulsory_dram_bytes(k)
    if moved is not None and r.peak_bytes_per_s.get("dram"):
        floors.append(moved / r.peak_bytes_per_s["dram"] * 1e9)
    if d and r.flops and r.peak_flops:
        floors.append(sum(r.flops.values()) * d * 1e-9 / max(r.peak_flops.values()) * 1e9)
    return max(floors)
