"""The kernel rules, one module per bottleneck family.

Each mechanism rule is a function ``KernelFacts -> Mechanism | None`` whose docstring states the physics it relies
on and which reads its thresholds by name from :mod:`kprof.thresholds`. :data:`MECHANISMS` lists them in the order
they run; :func:`kprof.rules.kernel.verdict.verdict` ranks what they found against the roofline, and
:mod:`kprof.diagnose.kernel` is the orchestration (facts -> rules -> verdict -> the kernel's own language).

==================  ==================================================================================
module              gives
==================  ==================================================================================
memory              uncoalesced_global_access (sectors per request, L1 wavefronts), l2_bandwidth_bound
                    from L2 re-reads and from stores re-writing the same lines
shared              shared_bank_conflicts (loads, stores, shared atomics)
local               local_memory_spill (spills, run-time indexed arrays)
atomics             atomic_contention
divergence          warp_divergence
launch              small_grid, tail_effect
occupancy           occupancy_limited
matrix              no_tensor_cores, and L1/L2 saturated by a matrix product's operand reloads (from the SASS data
                    flow, or from the FFMA and shared-load counters of a report without SASS)
reduction           l1_shared_bandwidth_bound of a reduction's shared-memory tree (warp shuffles are the fix)
passes              dram_bandwidth_bound of a second loop that reads again what an earlier loop read (one pass is
                    the fix)
tensor              tensor_core_bound on a slower tensor path than the GPU offers
pipelining          latency_bound of an MMA k-loop whose operand loads are synchronous (no cp.async/TMA)
precision           instruction_bound / compute_bound of FP32 data computed in FP64
conversions         instruction_bound of 16-bit data widened to FP32 and rounded back every step
instructions        instruction_bound
ncu_rules           ncu's own rule results: the measured waste a details-page CSV quotes, and hints
resource            the resource ids and latency_bound when no mechanism explains the gap
healthy             the healthy verdict (at the roof, useful work, a grid that fills the GPU)
verdict             facts + mechanisms -> one ranked Diagnosis
common              Mechanism, and the shared ways to build evidence, expectations and next steps
==================  ==================================================================================
"""

from __future__ import annotations

from collections.abc import Callable

from kprof.facts.kernel import KernelFacts
from kprof.rules.kernel.atomics import atomics
from kprof.rules.kernel.common import Mechanism
from kprof.rules.kernel.conversions import half_round_trips
from kprof.rules.kernel.divergence import divergence
from kprof.rules.kernel.instructions import instruction_bound
from kprof.rules.kernel.launch import grid
from kprof.rules.kernel.local import local_memory
from kprof.rules.kernel.matrix import no_tensor_cores, operand_reload
from kprof.rules.kernel.memory import l2_rereads, l2_rewrites, uncoalesced
from kprof.rules.kernel.occupancy import occupancy
from kprof.rules.kernel.passes import repeated_dram_pass
from kprof.rules.kernel.pipelining import synchronous_mma_loads
from kprof.rules.kernel.precision import promoted_fp64
from kprof.rules.kernel.reduction import shared_tree_reduction
from kprof.rules.kernel.shared import bank_conflicts
from kprof.rules.kernel.tensor import slow_tensor_path

MECHANISMS: tuple[Callable[[KernelFacts], Mechanism | None], ...] = (
    operand_reload,
    shared_tree_reduction,
    repeated_dram_pass,
    l2_rereads,
    l2_rewrites,
    uncoalesced,
    bank_conflicts,
    local_memory,
    atomics,
    divergence,
    grid,
    occupancy,
    no_tensor_cores,
    slow_tensor_path,
    synchronous_mma_loads,
    promoted_fp64,
    half_round_trips,
    instruction_bound,
)
