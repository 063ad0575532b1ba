"""The names of the ncu metrics the kernel rules read, and of the quantities kprof derives from them.

A rule quotes a quantity under the name of the metric it came from (STYLE.md habit 12): either a metric the
report holds, one of :data:`DERIVED` (computed by :func:`kprof.facts.kernel.metric_value`, so ``kprof compare``
reads the same quantity from an after report), an ncu rule, or a per-PC source counter summed over the SASS
(``sass:<counter>``). Names only: no judgement lives here.
"""

from __future__ import annotations

DURATION = "gpu__time_duration.sum"
GLD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
GLD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
GST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
GST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
SLD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
SLD_REQUESTS = ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_ld.sum")
LDSM_REQUESTS = ("smsp__inst_executed_op_ldsm.sum", "smsp__sass_inst_executed_op_ldsm.sum")
"""ldmatrix (LDSM) instructions: their wavefronts are counted in the shared *load* wavefronts
(``..._mem_shared_op_ld``), but not in the shared-load instruction counts, so a load's wavefronts per request divide
by both (like by like)."""
SST_REQUESTS = ("smsp__sass_inst_executed_op_shared_st.sum", "smsp__inst_executed_op_shared_st.sum")
SLD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
SATOM_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"
SATOM_REQUESTS = ("smsp__sass_inst_executed_op_shared_atom.sum", "smsp__inst_executed_op_shared_atom.sum")
SATOM_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum"
L1_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts.sum"
L1_WAVEFRONT_PCT = "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed"
LSU_REQUEST_PCT = "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed"
L2_THEORETICAL_SECTORS = "memory_l2_theoretical_sectors_global"
L2_THEORETICAL_SECTORS_IDEAL = "memory_l2_theoretical_sectors_global_ideal"
SHARED_WAVEFRONTS = "memory_l1_wavefronts_shared"
SHARED_WAVEFRONTS_IDEAL = "memory_l1_wavefronts_shared_ideal"
LLD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
LST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
L1_SECTORS = "l1tex__t_sectors.sum"
GATOM_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",)
GRED_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",)
L2_ATOMIC_REQUESTS = (
    "lts__t_requests_srcunit_tex_op_red.sum",
    "lts__t_requests_srcunit_tex_op_atom_dot_alu.sum",
    "lts__t_requests_srcunit_tex_op_atom_dot_cas.sum",
)
"""Atomic and reduction operations the L2 slices apply (one per active lane's address at a warp's RED/ATOM: the L1
forwards a warp's same-address updates one by one). A warp that reduces first sends one."""
L2_ATOMIC_SECTORS = (
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_atom_dot_alu.sum",
    "lts__t_sectors_srcunit_tex_op_atom_dot_cas.sum",
)
"""Sectors those L2 atomic/reduction requests touch: one per request when each request carries one address (the
same address for every lane, sent lane by lane); more when the lanes of one request update different sectors."""
L2_ATOMIC_MISSES = (
    "lts__t_sectors_srcunit_tex_op_red_lookup_miss.sum",
    "lts__t_sectors_srcunit_tex_op_atom_lookup_miss.sum",
)
"""L2 misses of the atomic/reduction sectors: with the caches flushed before each replay pass, one per distinct sector
the atomics touch (their target's footprint), while it stays resident."""
L2_READ_HIT_RATE = "lts__t_sector_op_read_hit_rate.pct"
ATOMIC_SLICE_MAX = "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed"
ATOMIC_SLICE_AVG = "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
THREADS_PER_INST_PRED_ON = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"
WAVES = "launch__waves_per_multiprocessor"
SM_ACTIVE = "sm__cycles_active.avg"
SM_ELAPSED = ("sm__cycles_elapsed.avg", "gpc__cycles_elapsed.max")
ACHIEVED_OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"
ISSUE_ACTIVE = (
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
)
ELIGIBLE_WARPS = "smsp__warps_eligible.avg.per_cycle_active"
OCC_LIMITS = {
    "registers": "launch__occupancy_limit_registers",
    "shared memory": "launch__occupancy_limit_shared_mem",
    "block size (warps)": "launch__occupancy_limit_warps",
    "blocks per SM": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
ISSUE_ELAPSED = "sm__inst_executed.avg.pct_of_peak_sustained_elapsed"
L2_READ_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
L2_WRITE_SECTORS = "lts__t_sectors_srcunit_tex_op_write.sum"
L2_SECTORS = "lts__t_sectors.sum"
LLD_MISS_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld_lookup_miss.sum"
"""Local-load sectors that missed L1 and were read from L2."""
"""Every L2 sector access (reads, writes, atomics, from every source)."""
L2_CACHE_BYTES = "device__attribute_l2_cache_size"
DRAM_READ_SECTORS = "dram__sectors_read.sum"
DRAM_READ_BYTES = "dram__bytes_read.sum"
DRAM_WRITE_BYTES = "dram__bytes_write.sum"
GLD_INSTRUCTIONS = ("smsp__sass_inst_executed_op_global_ld.sum", GLD_REQUESTS)
"""Global load warp instructions: ncu's executed count, else the L1's load requests (one per warp instruction)."""
FFMA_THREAD_INST = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FFMA_THREAD_RATE = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"
FADD_THREAD_RATE = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed"
SMSP_ELAPSED = "smsp__cycles_elapsed.avg"
INST_EXECUTED = "smsp__inst_executed.sum"
SHARED_WAVEFRONT_PCT = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed"
SOURCE_THREAD_INST = ("thread_inst_executed", "inst_executed")
"""SourceCounters' kernel-wide sums (a ``--section SourceCounters`` report): thread instructions and warp
instructions executed, whose ratio is the active threads per warp instruction when the InstructionStats section
(:data:`THREADS_PER_INST`) was not collected."""

# Quantities kprof quotes that are not one ncu metric. Evidence and expectations name either a metric the report
# holds, or one of these (computed by metric_value(), so `kprof compare` reads the same quantity from an after
# report). Evidence may also name an ncu rule (``rule:<identifier>``) or a per-PC source counter summed over
# the SASS (``sass:<counter>``). tests/diagnose/test_invariants.py checks every diagnosis against this list.
DERIVED: dict[str, str] = {
    "derived:global_load_sectors_per_request": f"{GLD_SECTORS} / {GLD_REQUESTS}",
    "derived:global_store_sectors_per_request": f"{GST_SECTORS} / {GST_REQUESTS}",
    "derived:global_sectors_per_request": "(global load + store sectors) / (load + store requests)",
    "derived:global_excess_sector_share": (
        f"1 - {L2_THEORETICAL_SECTORS_IDEAL} / {L2_THEORETICAL_SECTORS} (ncu's own ideal for each executed "
        "instruction's width and active lanes)"
    ),
    "derived:shared_wavefronts_per_request": "(shared ld + st wavefronts) / (shared ld + st instructions)",
    "derived:shared_load_wavefronts_per_request": f"{SLD_WAVEFRONTS} / shared load instructions (LDS and LDSM: "
    "the wavefronts count both)",
    "derived:shared_store_wavefronts_per_request": f"{SST_WAVEFRONTS} / shared store instructions",
    "derived:l1_wavefronts_per_lsu_request": (
        "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed / "
        "l1tex__lsuin_requests.avg.pct_of_peak_sustained_elapsed (both peaks are 1 per cycle per SM)"
    ),
    "derived:local_memory_sectors": f"{LLD_SECTORS} + {LST_SECTORS}",
    "derived:local_sector_share": "local sectors / (global + local sectors at L1)",
    "derived:global_atomic_requests": "global atom + red requests at L1",
    "derived:l2_atomic_requests": "L2 atomic + reduction requests from the SMs: "
    + " + ".join(L2_ATOMIC_REQUESTS),
    "derived:sm_active_fraction": f"{SM_ACTIVE} / elapsed SM cycles",
    "derived:sm_active_pct": f"100 x {SM_ACTIVE} / elapsed SM cycles (% of the time the SMs are busy)",
    "derived:tail_wave_efficiency": f"{WAVES} / ceil({WAVES})",
    "derived:dram_bytes": "dram__bytes.sum, or dram__bytes_read.sum + dram__bytes_write.sum (H200 reports)",
    "derived:fp32_tflops": "FP32 FLOP/s: (fadd + fmul + 2 x ffma) thread instructions per second / 1e12",
    "derived:fp32_utilization": "% of peak: achieved FP32 FLOP/s / peak (roofline), or the FMA pipe's elapsed-cycle use",
    "derived:fp32_flop_per_dram_byte": "FP32 FLOP/s / DRAM bytes/s (fadd + fmul + 2 x ffma)",
    "derived:tensor_tflops": "tensor-core FLOP/s / 1e12 (the roofline's tensor FLOP count over the duration)",
    "derived:tensor_utilization": "% of peak: tensor pipe's elapsed-cycle use, or tensor FLOP/s / peak",
    "derived:fp64_utilization": "% of peak: FP64 pipe's elapsed-cycle use, or FP64 FLOP/s / peak",
    "derived:xu_utilization": "% of peak: the XU pipe's elapsed-cycle use, counted as work only when the SASS shows "
    "special functions (MUFU), not conversions, fill it",
    "derived:l1_utilization": "% of peak: l1tex__throughput elapsed, or its active-cycle form x the SMs' busy fraction",
    "derived:int_utilization": "% of peak: the busier of the integer pipes over elapsed cycles (sm__pipe_alu_cycles_active "
    "and sm__pipe_fmaheavy_cycles_active, which runs IMAD), counted as work only when most executed integer "
    "instructions operate on loaded data (sass:int_data_share)",
    "derived:work_inst_share": "arithmetic on the data among executed warp instructions: derived:fp_inst_share plus "
    "sass:int_data_share",
    "sass:int_data_share": "integer instructions (IMAD, IADD3, LOP3, SHF, ...) with an operand computed from loaded "
    "data, among executed SASS instructions (SASS data flow)",
    "derived:shared_atomic_wavefronts_per_request": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum / shared "
    "atomic instructions (smsp__sass_inst_executed_op_shared_atom.sum or smsp__inst_executed_op_shared_atom.sum)",
    "sass:ffma_share": "FFMA among executed SASS instructions (per-PC inst_executed; listed when not collected)",
    "sass:fp_arith_share": "FP32/FP16/FP64 arithmetic and MMA among executed SASS instructions",
    "derived:fp_inst_share": "FP arithmetic among executed warp instructions: the SASS mix, else the FP thread "
    "instruction counters x smsp__cycles_elapsed.avg / 32 / smsp__inst_executed.sum",
    "sass:fma_from_loads_share": "FMAs whose two multiplicands were both loaded from memory (SASS data flow)",
    "sass:load_bytes_per_fma": "bytes per thread loaded by LDS/LDSM/LDG/LD per executed FMA (SASS)",
    "sass:operand_reuse": "FMA multiplicand uses per loaded value (SASS data flow)",
    "sass:dependent_load_share": "global loads whose address is computed from loaded data (SASS data flow)",
    "sass:local_instructions": "executed (or listed) LDL + STL instructions",
    "sass:local_instruction_share": "LDL + STL among executed SASS instructions",
    "sass:global_atomics": "executed RED/ATOM instructions on global memory",
    "sass:async_copies": "executed asynchronous global -> shared copies (LDGSTS, UTMALDG, UBLKCP)",
    "sass:fp64_widening_conversions": "executed F2F.F64.F32 (FP32 -> FP64) in a kernel whose global accesses are all "
    "32-bit and that narrows its results back (F2F.F32.F64): FP32 data computed in FP64 (kprof.facts.sass_traits)",
    "derived:threads_per_inst_executed": f"{THREADS_PER_INST}, else thread_inst_executed / inst_executed "
    "(SourceCounters' kernel-wide sums)",
    "derived:ffma_warp_instructions": f"FFMA warp instructions: {FFMA_THREAD_INST} (or {FFMA_THREAD_RATE} x "
    f"{SMSP_ELAPSED}) / 32",
    "derived:shared_loads_per_ffma": "shared-memory load instructions (LDS, LDSM) per FFMA warp instruction: "
    "smsp__sass_inst_executed_op_shared_ld.sum / derived:ffma_warp_instructions",
    "derived:shared_load_wavefronts_per_ffma": f"{SLD_WAVEFRONTS} / derived:ffma_warp_instructions",
    "derived:shared_instructions_per_global_load": "(shared load + store instructions) / global load instructions "
    "(smsp__sass_inst_executed_op_global_ld.sum, else l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum)",
    "derived:repeated_pass_bytes": "bytes a second loop reads again from the addresses an earlier loop of the same "
    "block read (SASS: the same parameter, block and thread address at both loops' first iteration; per-PC "
    "inst_executed x width x active threads)",
    "derived:single_pass_dram_read_bytes": "dram__bytes_read.sum less the repeated pass's bytes that DRAM served "
    "(the reads of a kernel that reads each row once)",
    "sass:fp64_inst_share": "% of executed SASS instructions that are FP64 (DFMA/DADD/DMUL/DSETP/DMNMX, MUFU.*64H, "
    "conversions to or from F64), in such a kernel",
    "sass:half_conversions": "executed FP16/BF16 <-> FP32 conversions (HADD2.F32, F2F, F2FP.PACK_AB) inside loops in "
    "which a value rounded to 16 bits is widened again (kprof.facts.constructs, half_round_trip)",
    "sass:half_conversion_share": "% of executed SASS instructions that are those conversions",
}

# ncu sections each check needs, for the exact command that collects what is missing.
SECTION_OF = {
    "sol": "SpeedOfLight",
    "memory": "MemoryWorkloadAnalysis_Tables",
    "launch": "LaunchStats",
    "occupancy": "Occupancy",
    "stalls": "WarpStateStats",
    "instructions": "InstructionStats",
    "scheduler": "SchedulerStats",
    "roofline": "SpeedOfLight_RooflineChart",
    "source": "SourceCounters",
}
