"""Every threshold kprof judges with, in one place, each with where its value comes from.

Sections: timeline (kprof/diagnose/timeline/), data validity (kprof/diagnose/validity.py), kernel
(kprof/facts/, kprof/rules/kernel/ and kprof/diagnose/sass.py), job (kprof/diagnose/job/, many ranks) and compare
(kprof/diagnose/compare/).
Change a value here and the rules follow; tests import these names rather than
repeating the numbers.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------- timeline
# (owned by kprof/diagnose/timeline/)

GPU_BOUND_BUSY_FRACTION = 0.80
"""At >= 80% GPU-busy time, removing *all* idle time would speed the program up by at most
1 / 0.8 = 1.25x (Amdahl), while the kernels hold four times as much time as the gaps: the
time is in the kernels and the kernel profiler is the next tool. Same 1.25x line as
HEALTHY_FRACTION_OF_PEAK below."""

DOMINANT_SHARE = 0.50
"""A cause "dominates" when it explains more than half of the time in question (idle time,
busy time, or the capture): a definition, not a tuned value."""

STARTUP_SHARE = 0.50
"""Start-up is the capture's bottleneck when one-time work (module loading, context and handle
creation, the first iteration) takes more than half of the captured wall time (DOMINANT_SHARE)."""

MIN_ITERATIONS_FOR_WARMUP_DROP = 3
"""With at least 3 iterations (profiler steps or repeated NVTX ranges) the first is treated as
warm-up and left out of the steady state: a measured pitfall (docs/inputs.md: lazy kernel loading,
20-48 ms of cuLibraryLoadData, handle creation in the first iterations). With fewer, dropping
one would leave too little to measure."""

WARMUP_STEP_RATIO = 3.0
"""After the first iteration (always warm-up), the next ones are warm-up too while each runs more than 3x
the median iteration (or still holds start-up work). Measured on every capture with iterations in the
samples, the validation gallery and the corpus: after the first three, iterations ran at most 2.2x the
median (teardown_after_loop 2.18x, cuda_graph_replay 1.81x); the second iteration of whole-process
captures ran 2.3-715x (lazy loading, handle creation, the optimizer's first step; the Kineto traces'
ProfilerStep#1 of whole runs 44-715x)."""

CLOCK_ALIGNMENT_SLACK_NS = 1_000
"""Tolerance when matching a host API call's end against a GPU timestamp: CUPTI converts GPU
timestamps to the host clock, and a blocking call returns a few hundred ns to ~1 us after the
GPU work it waited for ends (measured on the H200 samples; see tests/diagnose/test_timeline.py).
Far below the launch overhead, so it cannot turn a launch gap into a sync."""

BLOCKING_COPY_SHARE = 0.50
"""A blocking copy call whose own GPU copy takes at least half of the call's duration is a
transfer wait; otherwise the host mostly waited for earlier GPU work, i.e. a sync (e.g.
``.item()``: a 4-byte copy behind a queue of kernels). DOMINANT_SHARE applied to one call."""

TYPICAL_LAUNCH_OVERHEAD_NS = (2_000, 10_000)
"""Reference range for the host cost of one kernel launch (cudaLaunchKernel / cuLaunchKernelEx
call plus framework dispatch): 2-10 us (CUDA launch latency ~2-5 us, PyTorch eager dispatch adds
a few us). Shown as the yardstick in evidence; the rules use the launch cost measured in the
capture itself."""

SHORT_LAUNCH_NS = 10 * TYPICAL_LAUNCH_OVERHEAD_NS[1]
"""A kernel shorter than 100 us (10x the upper launch overhead) does little enough work per launch that its fixed
costs (the launch, the grid's fill and drain) weigh a tenth or more: batching or fusing calls is the fix a
PyTorch user can make for it. Longer kernels are not short of work; the kernel itself keeps too few loads in
flight. It chooses the wording of a fix, not a verdict."""

MAX_DISPATCH_PER_LAUNCH_NS = 1_000_000
"""Host-caused idle time per launch above 1 ms is not launch or dispatch overhead: PyTorch eager
dispatch measured 10-14 us per kernel in the H200 samples and 54-145 us per kernel in the corpus's
busiest Python traces (ResNet-50, the 128-rank sampled job); 1 ms is ~7x the slowest of those. Above
it the host is doing other work (CPU compute, compilation, I/O) and the diagnosis says so
(inconclusive, with the host-sampling capture to run)."""

REPEATED_WORK_SHARE = 0.75
"""The work after start-up is a loop (a steady state) when at least 75% of its launches are of kernels
(CUDA graphs, copy directions) that occur in each third of the launch sequence (see
:func:`kprof.diagnose.phases.repeats`). A loop of >= 3 identical iterations scores 1.0 by construction
(each third holds a whole iteration). Measured on the samples and the corpus: every loop of >= 3
iterations scored 0.92-1.0 (the H200 samples 1.0, ResNet-50 1.0, CloverLeaf 0.99, the DDP ranks 1.0,
HTA's ns-resolution DDP trace 0.92-1.0; the validation gallery's loops without step markers 0.92-1.0, the
lowest a batch-1 decode loop); one or two passes scored 0.18-0.53 (the AlexNet benchmark's warm-up +
measured forward 0.53, its measured forward alone 0.18, HTA's two-step sampled ranks 0.33-0.35). 0.75 lies
between the two groups."""

CONTEXT_CREATION_RATIO = 10.0
"""The first CUDA call of a capture created the context (start-up, not the loop's) when it took over 10x
the median of the other calls of the same name (beyond its own GPU work). Measured in the corpus: the
context-creating cudaMalloc took 234 ms against 0.2 ms for the next ones (CloverLeaf, A100: 1000x), the
cudaHostRegister 305 ms against 1.4 ms (saxpy, A100: 200x); an ordinary first call of a capture that
starts mid-program sits at ~1x. 10x keeps a wide margin on both sides."""

HOST_COMPUTE_MIN_STRETCH_NS = 1_000_000
"""An idle gap is host computation, not dispatch, when most of it lies in stretches of at least 1 ms in
which the launching threads made no CUDA call. Dispatching one operator issues its launch within
10-145 us (MAX_DISPATCH_PER_LAUNCH_NS: 10-14 us on the H200 samples, 54-145 us in the corpus's busiest
Python traces); 1 ms without any CUDA call is ~7x the slowest of those, so the host was doing something
other than issuing GPU work (data loading, preprocessing, Python logic, communication)."""

QUEUED_WAIT_MIN_NS = 1_000_000
"""An idle gap is the GPU waiting on a device-side dependency (an event of another stream, another GPU or
process), not on the host, when the work that ends it was launched early in the gap and then sat in the
queue of the idle GPU for most of the gap and at least 1 ms. From a launch call's return to its kernel's
start takes 2-10 us of launch latency (LAUNCH_LATENCY_PERCENTILE: 6-8 us at the 1st percentile on the H200
samples): 1 ms queued is over 100x that. Seen in the corpus's sampled 128-rank job (HTA
timeline_analysis rank 0): a kernel launched 0.4 ms into a 56.6 ms gap started only at its end."""

GPU_SHARE_OVER_CAUSE = 2.0
"""Below GPU_BOUND_BUSY_FRACTION, the kernels still lead (``gpu_bound``) when they hold more than half of
the steady state (DOMINANT_SHARE) and at least twice the time of the largest idle cause: shares decide.
Calibrated on judgements, not fitted: the gallery's ``sync_bound`` sample (kernels 60% of the wall, idle
after syncs 40%: ratio 1.5, built to be sync-bound), issue 13's ResNet-50 example (kernels 73% of the span,
host-only gaps 23%: ratio 3.2, gpu_bound) and the blind-labelled validation capture ``busy73_host_gaps``
(kernels 71%, host-only gaps 28.5%: ratio 2.5, labelled gpu_bound). 2 lies between them; the removable
idle time is then at most half the kernel time (Amdahl: the cause's fix wins at most 1 / (1 - share))."""

THREAD_HANDOFF_MIN_NS = MAX_DISPATCH_PER_LAUNCH_NS
"""A host thread that records nothing (no operator, range or CUDA call) for more than 1 ms while another
thread is busy was waiting for that thread (PyTorch's autograd thread waits for the forward pass on the
main thread): the critical path follows the hand-off (kprof/diagnose/critical_path.py). Shorter silences
are Python between operators, 10-145 us per kernel as measured for MAX_DISPATCH_PER_LAUNCH_NS."""

LAUNCH_LATENCY_PERCENTILE = 1.0
"""The launch latency of a capture (a launch call's start to its kernel's start) is read from the kernels
launched onto an idle stream, at this percentile: the fastest launches show the floor that every launch
pays, and the 1st percentile ignores a stray clock pair. Measured on the H200 samples: 5.97-7.9 us at the
1st percentile, 7.1-10.4 us median (host_launch_bound, pair_graph_before, sync_bound, Kineto and nsys);
a queued kernel follows the previous one on its stream after 1.0-2.5 us (gpu_bound, 1st-99th percentile).
A kernel whose launch started less than this latency before it could run was held by its launch, not by
the kernel before it (kprof/diagnose/critical_path.py)."""

LAUNCH_LATENCY_MIN_SAMPLES = 20
"""At least 20 launches onto an idle stream to read the launch latency at LAUNCH_LATENCY_PERCENTILE
(below that one stray pair sets it); with fewer the latency is taken as 0, the launch call's start, as
Holistic Trace Analysis does."""

GRAPH_KERNEL_GAP_NS = 130
"""What a kernel costs beyond its own duration once the host is out of the way (a CUDA graph, or kernels
queued ahead of the GPU): the GPU's own gap between one kernel's end and the next one's start. Measured on
the H200 (data/samples/timeline/pair_graph_after.json.gz, 2,280 kernels replayed from CUDA graphs, 2,250
gaps inside the graphs): median 65 ns, mean 79 ns, largest 129 ns. A launch-bound fix's target keeps the
kernels' own time plus this gap per kernel: no launch path runs kernels gaplessly."""

SHARE_BASE_TOLERANCE = 0.005
"""Two times that differ by less than 0.5% print alike (3 significant digits): a share of one is quoted as a share
of the other. Kernels on overlapping streams whose summed time exceeds the GPU-busy time (their union) by more than
this have their shares quoted of the summed kernel time, named with its value, not of "it", the busy time."""

MIN_KERNEL_DURATION_NS = 640
"""No kernel runs shorter than this: the shortest kernel execution in the H200 captures (data/samples/timeline and
data/validation, nsys and PyTorch profiler: 640 ns, single-block elementwise kernels of ``host_compute_bound``,
``launch_small_ops`` and ``periodic_log_sync``; 1st percentile 672-800 ns). A predicted kernel duration below it
is below the GPU's own cost of running any kernel, whatever the work."""

MIN_REPEATS_FOR_BATCHING = 4
"""A launch-bound iteration whose kernels run as one group repeated at least 4 times (every repeated kernel's
count per iteration a multiple of 4) gets the batching advice first: one call on the stacked input replaces
the repeats and removes at least 3/4 of those launches. Two or three repeats are as often two or three
identical layers in sequence, which no batching merges; the timeline cannot tell independent calls from
consecutive layers at any count, so the advice is worded as a condition (a choice of words, not a verdict)."""

MIN_LAUNCHES_FOR_LAUNCH_BOUND = 10
"""A capture is called launch-bound only with at least 10 launches in its steady state: the verdict says
that the host's cost per launch exceeds the GPU's time per kernel, a rate, which a handful of launches
cannot show (one launch after a context creation is one-time work, not a loop). The same count below
which a diagnosis's confidence is capped for too few gaps and kernels."""

GPU_BOUND_RECOVERABLE_SHARE = 0.10
"""A ``gpu_bound`` steady state below GPU_BOUND_BUSY_FRACTION whose largest idle cause holds >= 10% of
its wall time is a fix, not healthy: removing that cause alone speeds it up by >= 1/0.9 = 1.11x, twice
MIN_FINDING_SHARE and above the run-to-run noise of the timeline's wall time (TIMELINE_MIN_NOISE 2%)."""

MIN_FINDING_SHARE = 0.05
"""A secondary cause is listed only when it explains >= 5% of the idle (or busy) time: below that,
run-to-run variation of a capture hides it."""

HOST_LINK_PEAK_BYTES_PER_S = (
    ("GH200", 450e9),
    ("GB200", 450e9),
    ("B200", 63.0e9),
    ("H200", 63.0e9),
    ("H100", 63.0e9),
    ("H800", 63.0e9),
    ("L40", 31.5e9),
    ("L4", 31.5e9),
    ("A100", 31.5e9),
    ("A800", 31.5e9),
    ("A40", 31.5e9),
    ("A30", 31.5e9),
    ("A10", 31.5e9),
    ("RTX 40", 31.5e9),
    ("RTX 30", 31.5e9),
    ("RTX A", 31.5e9),
    ("V100", 15.75e9),
    ("T4", 15.75e9),
    ("RTX 20", 15.75e9),
    ("Quadro", 15.75e9),
)
"""Peak host<->device bandwidth per direction by GPU name (first substring that matches): the floor of a
copy is its bytes over this rate, whatever pinning or overlap does. PCIe x16 per direction: Gen5 32 GT/s
x 16 lanes x 128/130 = 63.0 GB/s (Hopper, and B200's PCIe host link), Gen4 31.5 GB/s (Ampere, Ada),
Gen3 15.75 GB/s (Volta, Turing, older Quadro); Grace Hopper / Grace Blackwell reach the CPU over NVLink-C2C
at 450 GB/s per direction (NVIDIA GH200 datasheet: 900 GB/s total). Measured copies stay below these
(the H200 samples' pinned copies: see data/samples/README.md). An unknown GPU gets no floor."""

TOP_KERNELS = 3
"""Kernels named (with their ncu command) in a gpu_bound diagnosis: the three largest shares of GPU
time, enough to cover most of a typical capture while keeping the output short."""


# ----------------------------------------------------------------------------- data validity
# (the loaders set impossible rows aside: kprof/timeline_model.set_aside_impossible; a kernel launch says
# which values are impossible or out of range: kprof/kernel_model.KernelLaunch.impossible_values and
# odd_values; kprof/diagnose/validity.py judges their share)

DAMAGED_TIME_SHARE = MIN_FINDING_SHARE
"""A timeline is too damaged for a verdict when the rows set aside would have held >= 5% of the
captured wall time, had they been like the kept rows of their table (count x mean duration): the gaps
they leave are then as large as the smallest cause kprof reports (MIN_FINDING_SHARE), so a verdict
built on those gaps could be one they made."""

DAMAGED_ROW_SHARE = DOMINANT_SHARE
"""...or when at least half of the rows of a measured table (GPU work, CUDA calls) are set aside:
what is left is no longer most of the capture, whatever the rows' durations (DOMINANT_SHARE)."""

GPU_OP_MIN_NS = 300
"""A GPU operation (kernel, copy, memset, graph launch) lasts at least 300 ns: the GPU's front end launches at
least one block (or a copy engine one transfer) and signals its completion. Measured on every row of a
nanosecond-resolution capture in the samples, the validation galleries and the corpus (nsys and Kineto, 70,495
GPU operations): the shortest kernel lasted 640 ns (H200, nsys), copy 672 ns, memset 703 ns; on the corpus's A100
and V100, 1,247 ns or more. 300 ns is under half the shortest, so a faster GPU's empty kernel stays above
it; a row of 0 ns (or a few ns) is one whose time was not recorded. Applies only where the file's timestamps have
a resolution finer than this: a Kineto trace in whole microseconds records any operation under 1 us as 0 us (the
corpus's ResNet-50 trace holds 292 such kernels), which is rounding, not damage."""

GPU_QUEUE_SLACK_NS = 1_000_000_000
"""GPU work lies impossibly far from the host only beyond the host events' span plus all GPU work plus
1 s: the longest wait from a launch call to its kernel's start in the samples and the corpus is 121 ms
(a 128-rank job's sampled trace, behind a queue of collectives); 1 s is 8x that, and the rule is there
for rows years away, not for milliseconds."""

NCU_NEGATIVE_TOLERANCE = 0.5
"""An ncu metric below -0.5 (in its own unit) is out of range; above it, a negative value is rounding and is
read as it is. In the 149 launches of the samples, the validation galleries and the corpus (255,648 numeric
values) the only negative values are sm__pipe_tensor_type_..._cycles_active.min.pct_of_peak_sustained_elapsed,
down to -0.040% (23 launches); -0.5 is 12x that. Below it, a metric ncu computes from other counters is one ncu
writes itself (genuine reports elsewhere hold -1.8% there, and -1 and -2102 sectors of an L2 hit count: issue 23;
kprof.kernel_model.ncu_derived) and is set aside with a note; any other metric (a count, a rate, a time) is one
no measurement gives (kprof.kernel_model.KernelLaunch.odd_values)."""

NCU_PCT_OF_PEAK_MAX = 110.0
"""A utilisation bounded by its peak (a count over the peak rate times the elapsed cycles, or the units' total
over their active cycles) above 110% is impossible: no unit runs faster than its peak. Measured over every
pct_of_peak value of the 149 real launches (samples, validation galleries, corpus): the bounded forms reach at
most 99.96% (smsp__issue_inst0.avg.pct_of_peak_sustained_active) and 99.33% on elapsed cycles; ncu's own
overshoot past 100% shows only in the unbounded per-unit maximum over active cycles (100.0098% for a cuBLAS
DGEMM's sm__pipe_tensor_op_dmma_cycles_active.max.pct_of_peak_sustained_active, up to 1,622% on small grids),
which divides one unit's count by the units' mean active cycles. NVIDIA documents values out of range from
replays of short or uneven kernels (Kernel Profiling Guide, "Range and Precision"): 110% leaves 10 points for
that, and still refuses a value 1000x too large (90,840% for an L2 at 90.84%)."""

# ----------------------------------------------------------------------------- kernel
# (read by kprof/facts/ and kprof/rules/kernel/, one module per bottleneck family)

BANDWIDTH_SHARE_AGREEMENT = 0.01
"""A memory level's byte rate is quoted against its peak ("achieved X bandwidth") only when the rate over the peak
is the level's throughput percentage to within 1 point (both print to 0.1 point); otherwise the counter counts other
work than the stage that sets the percentage, and it is quoted under the name of what it counts, without the peak.
Measured over the 136 launches of the samples, the validation galleries and the ESMM corpus: ``dram__bytes`` over
its peak is ``gpu__dram_throughput`` to within 1e-7; the L2 counter the H200 reports (``derived__lts__lts2xbar_bytes``,
bytes L2 returns to the SMs) is a median 15.7 points under ``lts__throughput`` (up to 85); the L1 one
(``derived__l1tex__lsu_writeback_bytes_mem_lgds``, global and local load bytes, no shared memory) a median 20
points under ``l1tex__throughput`` (up to 98.5: blind7 cuda_sgemm_tiled16, 2,101 of 33,450 GB/s at 95.2%)."""

HEALTHY_FRACTION_OF_PEAK = 0.80
"""A kernel whose limiting unit does useful work at >= 80% of that unit's peak is *healthy*.
ncu's own SpeedOfLight rule calls > 80% "high throughput", and the best-known codes sit
about there: STREAM-like copies reach 85-93% of DRAM peak and cuBLAS GEMMs 75-90% of tensor
peak (DRAM refresh, bus turnaround and pipeline fill make 100% unreachable). Inside 1.25x of
the roof, tuning has less to win than doing less work."""

LATENCY_BOUND_FRACTION = 0.60
"""Below 60% of peak on both compute and memory, ncu's SOLBottleneck rule says the kernel is
latency bound ("below 60.0% of peak typically indicate latency issues")."""

MIN_MECHANISM_SAVINGS = 0.05
"""A mechanism is reported (as a finding) only if fixing it would remove >= 5% of the kernel's
time: below that, run-to-run variation under ncu (a few percent) hides it."""

MIN_PRIMARY_SAVINGS = 0.10
"""A mechanism becomes the primary bottleneck (instead of a resource id) when fixing it would
remove >= 10% of the kernel's time."""

SECTOR_BYTES = 32
"""L1/L2 sector size in bytes (every NVIDIA GPU since Maxwell). A warp's 32 x 4-byte coalesced
load touches 128 B = 4 sectors; 8-byte loads 8 sectors; 16-byte loads 16 sectors."""

WARP_SIZE = 32
"""Threads per warp (all NVIDIA GPUs)."""

SHARED_BANKS = 32
SHARED_BANK_BYTES = 4
"""Shared memory has 32 banks x 4 bytes: one wavefront serves 128 B, so a conflict-free 4-byte
warp access needs 1 wavefront per request, 8-byte 2, 16-byte 4."""

ASSUMED_ACCESS_BYTES = 4.0
"""The width of a memory access per thread when the SASS does not give it (a CSV export, no listing): 4 bytes, a
``float`` or ``int``, the narrowest common access, so the ideal sectors or wavefronts per request it gives are the
fewest and an excess is not hidden by a wide guess."""

COALESCING_TOLERANCE = 1.25
"""Sectors (or wavefronts) per request above 1.25x the ideal count as uncoalesced (conflicted);
below that, misaligned starts and partial warps explain the excess."""

DIVERGENCE_ACTIVE_THREADS = 24.0
"""Warp divergence matters when an executed warp instruction has < 24 of 32 threads active
(< 75% SIMT efficiency): above that, loop tails and guards explain the difference."""

CONSTRUCT_MIN_SHARE = 0.05
"""A source construct read from the SASS (:mod:`kprof.facts.constructs`) is named only when its instructions are at
least 5% of the kernel's executed instructions (of the quantity its idiom measures): the same bar as a named source
line (kprof/diagnose/where.py MIN_LINE_SHARE), below which changing it cannot pay."""

OCCUPANCY_LOW_FRACTION = 0.50
"""Occupancy is a candidate limiter only below 50% theoretical occupancy: at or above half of
the warp slots, Hopper/Ampere schedulers usually have an eligible warp (ncu's Occupancy rule
flags the limiter, not a fixed value; 50% is the conservative reading of the CUDA Best
Practices Guide, which notes that higher occupancy does not always improve performance)."""

ISSUE_EXPOSED_LATENCY = 0.60
"""Latency is *exposed* when schedulers issue in fewer than 60% of cycles (same 60% as ncu's
latency rule) while the top stalls are latency stalls (long/short scoreboard, wait)."""

SMALL_GRID_ACTIVE_SM_FRACTION = 0.80
"""A grid is too small when the SMs are busy less than 80% of the elapsed time on average
(sm__cycles_active.avg / elapsed) and the grid has fewer blocks than SMs x resident blocks."""

TENSOR_FIX_TARGET_FRACTION = 0.50
"""What a first tensor-core version of FP32-pipe matrix work is expected to reach: about half the tensor peak of the
input type (the tensor-pipe expectation of no_tensor_cores, and its duration target: FLOPs at this fraction of the
peak, so the two agree). Measured: a register-operand mma.sync loop reaches 59.9% of the BF16 dense peak at a 90%
busy pipe (data/validation/cuda/mma_full_grid); wmma tiles fed from shared memory and Triton's tl.dot at default
settings sit below that loop, cuBLAS at 75-90% above it."""

SMALL_GRID_TARGET_SM_BUSY = 0.90
"""What a grid that fills the GPU reaches: SMs busy about 90% of the elapsed cycles (launch ramp and the last
blocks keep it below 100%). Measured: the same mma_bf16_loop on 528 blocks keeps the SMs busy 94.3% of the time
(data/validation/cuda/mma_full_grid), against 5.4% on 8 blocks. The small-grid target duration is the busy time
spread at this fraction: ``d x busy / 0.9``."""

MATRIX_LIKE_FFMA_SHARE = 0.10
"""FP32 work can be matrix work only when FFMA is >= 10% of the executed (or listed) instructions: a GEMM's
inner loop is FFMA plus operand loads and loop bookkeeping. A naive SGEMM issues about six instructions per
FFMA (two loads, two address increments, compare, branch: 18% FFMA measured in the H200 validation gallery);
tiled kernels list 23-81% (siboehm-style SGEMMs), cuBLAS ~88%. What makes it *matrix* work is the data flow
(MATRIX_LOADED_OPERAND_SHARE, MATRIX_REUSE_MIN), not this share."""

MATRIX_LIKE_MAX_SFU_SHARE = 0.05
"""...and special-function instructions (MUFU: sin, exp, rsqrt) stay under 5%: transcendental-
heavy code is not a matrix product and gains nothing from tensor cores."""

MATRIX_FFMA_OF_FP32 = 0.9
"""A report without SASS shows FP32 matrix work in its counters when FFMA is at least 90% of the FP32 thread
instructions (fadd + fmul + ffma): a matrix product's FP32 work is acc += a * b. N-body, norms and softmax mix in
FADD and FMUL (the blind6 n-body kernel: 38.5% FFMA)."""

TF32_ROUNDING_ERROR = 2.0**-11
"""TF32 keeps 10 of FP32's 23 mantissa bits: each input is rounded with a relative error up to 2^-11 (4.9e-4), while
products are accumulated in FP32 (NVIDIA A100 whitepaper, "TF32"). Measured on the H200 (blind7 lib_sgemm_fp32, a
8192^3 torch.matmul): relative error 2.9e-4 with TF32 against 1.6e-6 in FP32."""

MATRIX_LIKE_MIN_INTENSITY = 10.0
"""FLOP per DRAM byte above which FP32 work is called matrix-like when the report has no FP32
ridge point (peaks) to compare with; elementwise and stencil kernels sit below 10."""

MATRIX_LOADED_OPERAND_SHARE = 0.5
"""Matrix work shows in the SASS data flow: in the k-loop of a matrix product both multiplicands of each FMA
are operands loaded from memory (LDS/LDSM from a shared tile, or LDG), ``acc += A[i][k] * B[k][j]``. In a
Horner polynomial, a transcendental expansion or a dependent FMA chain the multiplicands are computed values
or constants; in ``a * x[i] + y`` one is a constant. At least half of the executed FMAs must have both
multiplicands loaded (measured: 1.00 in every SGEMM of data/samples and the ESMM corpus, from the
naive kernel's 0.83 to cuBLAS's 0.89; 0 in the elementwise, reduction and divergence samples)."""

MATRIX_REUSE_MIN = 2.0
"""...and the loaded operands must be reused: each loaded value feeds >= 2 FMAs in registers (an outer
product: a TM x TN register tile reuses each value TN or TM times), or each global byte feeds >= 2 FMAs via
shared memory (MATRIX_MAX_GLOBAL_BYTES_PER_FMA), or the FP32 intensity is past the ridge (reuse through the
caches). A dot product or a mat-vec loads fresh operands for every FMA and has none of these."""

MATRIX_MAX_GLOBAL_BYTES_PER_FMA = 2.0
"""Bytes per thread loaded from global memory per FMA below which the operands are reused through shared
memory: a 4-byte operand feeding >= 2 FMAs (MATRIX_REUSE_MIN). A 16x16 shared-tiled SGEMM loads 0.5 B/FMA,
a dot product 8 B/FMA."""

REGISTER_TILE_SHARED_LOADS_PER_FFMA = (8 + 8) / 4 / (8 * 8)
"""Shared-memory load instructions per FFMA of the standard register-tiled SGEMM: each thread computes an 8x8
micro-tile of a 128x128x8 block tile and, per k, reads 8 values of A and 8 of B as float4 (4 LDS.128) for 64 FFMAs:
0.0625. (CUTLASS's SIMT SGEMM and the worked "How to optimize a CUDA matmul kernel" series use this construction;
cuBLAS's FP32 kernel on the H200 issues 0.047, blind7 lib_sgemm_fp32.) A 16x16 shared tile with one output per
thread issues 1.25 (one LDS per FFMA plus an LDS.128 per 4)."""

REDUCTION_SHARED_PER_LOAD = 2.0
"""Shared-memory instructions per global load instruction that a warp-shuffle reduction needs at most: the warp
reduces in registers (__shfl_down_sync), one STS per warp writes its partial and one LDS per warp of the block's
last step reads it back, so even at one element per thread a block of W warps issues W + 1 shared instructions per
W loads; with many elements per thread, far fewer. A shared-memory tree issues two loads and a store per level."""

REDUCTION_MAX_OUTPUT_SHARE = 1.0 / 32
"""A kernel reduces when it writes at most one byte to DRAM per 32 it reads (dram__bytes_write / dram__bytes_read):
each output combines at least a warp's worth of inputs. Elementwise, transpose and scan kernels write about what
they read."""

L1_BYTES_PER_CYCLE_PER_SM = 128.0
"""L1/shared-memory bandwidth per SM and cycle on Volta and later (32 banks x 4 B; NVIDIA's Volta, Ampere and
Hopper tuning guides: 128 bytes/clock/SM)."""

FP32_LANES_PER_SM = 128.0
"""FP32 FMA lanes per SM (thread FFMAs per cycle) when the report does not give the peak: GA10x, AD10x and
Hopper have 128 (A100/V100/Turing 64, whose reports carry
``sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained`` and override this)."""

FP_HEAVY_SHARE = 0.5
"""A kernel is FMA-heavy when FP arithmetic is at least half of its executed instructions: its issue slots
carry the math it must do (a cuBLAS SGEMM issues ~80% FFMA), so a busy SM is compute-bound, not
instruction-bound ("most instructions are overhead" would be false)."""

INT_WORK_DATA_MAJORITY = 0.5
"""The integer pipes (ALU, IMAD) do the algorithm's work, not index math, when at least half of the executed integer
instructions have an operand computed from loaded data (SASS data flow): a majority, by definition."""

INT_WORK_MIN_SHARE = FP_HEAVY_SHARE / 2
"""...and those instructions are at least a quarter of all executed ones (half of FP_HEAVY_SHARE: a kernel whose
other half is loads and stores still counts). Measured on the galleries: the 64-bit hash mix64_rounds 0.92, the
shared-memory histograms 0.47, hash_probe 0.42, digit_histogram 0.57; index-math and streaming kernels 0.00-0.16
(stencil5_smem 0.16, torch_index_select_random 0.19 of address math from loaded indices, tree_reduce_sync 0.07)."""

DEPENDENT_LOAD_SHARE = 0.5
"""When at least half of the excess global sectors (or, without ncu's per-instruction counts, of the executed
global loads) come from loads whose address is computed from loaded data (pointer chasing, gathers through
an index array, hash probes), the scattered sectors are the data's, not the indexing's: the lever is keeping
more loads in flight or reordering the data, not making consecutive threads read consecutive addresses."""

TAIL_MIN_WAVES = 1.0
"""A tail effect needs more than one wave: with less, the problem is the grid size."""

ATOMIC_MIN_SHARE = 0.20
"""Atomics are examined as a bottleneck only when >= 20% of global memory requests are atomics
(RED/ATOM); below that, they are bookkeeping next to the real traffic."""

ATOMIC_HOT_SLICE_RATIO = 10.0
"""Contention on few addresses shows as one L2 slice's atomic unit running >= 10x the average
slice (addresses hash across slices, so spread-out atomics load slices evenly; H200 has 96+
slices, so a single hot address gives a ratio near the slice count)."""

L2_REREAD_FACTOR = 2.0
"""L2 at its roof does work the algorithm needs only when it carries each byte about once. ncu flushes the caches
before each replay pass (``--cache-control all``, the default), so every byte a kernel reads reaches L2 from
DRAM once: the L2 sectors read by the SMs over the DRAM sectors read is how often each byte is fetched again
from L2. At >= 2 the L2 traffic is mostly re-reads that shared-memory or register reuse (larger tiles) removes:
a fix, not healthy. (Measured in the H200 validation gallery: 15x for a dilated stencil, 116x for a 16x16-tile
Triton matmul, ~1x for streams.)"""

L2_STREAMING_READ_HIT_RATE = 0.50
"""When fewer than half of the L2 read sectors hit, the L2 is passing a DRAM stream through (every
miss is a DRAM read): an L2 at its roof then means the DRAM path is saturated, and the kernel is
named DRAM bound."""

L2_STREAM_DRAM_SHARE = 0.40
"""An L2 passes a DRAM stream through only when DRAM moves a matching share of the L2's traffic: the DRAM bytes
over 32 x ``lts__t_sectors.sum`` (every L2 sector access) measured 0.60-0.67 on pure streams (triad, copy, softmax,
layer norm on the H200: an L2 sector access per DRAM sector plus the L2's own tag traffic) and up to 0.96 on
gathers; 0.48 on a stencil whose halo hits L2. L2 traffic that never reaches DRAM (repeated stores into the same
lines, spill traffic, uncoalesced stores merged in L2) measured 0.02-0.33 (digit_histogram's local array 0.02,
the blind10 accumulator stored every iteration 0.07, a 32-sector-per-request transpose 0.17, a spill 0.33): a low
hit rate there is not a stream. 0.40 sits between the two groups."""

L2_REWRITE_FACTOR = 4.0
"""The coalesced global store sectors over the most a kernel can write distinct (its DRAM write bytes plus the L2
capacity, in sectors: a line still dirty in L2 when the kernel ends has not reached DRAM yet). At 1 each byte is
stored once; at >= 4 most of the L2's store traffic re-writes lines already written, the signature of an
accumulator kept in global memory (``y[i] += ...`` every iteration). Measured on the H200: 12.3x for the blind10
accumulator stored after every FFMA (3.16x faster with a register accumulator); 0.1-0.9x on every stream, copy and
transpose of the galleries. Uncoalesced stores' extra sectors are that rule's waste and are left out first."""

LOCAL_SPILL_REQUEST_SHARE = 0.5
"""Without the SASS, ncu's ``derived__local_spilling_requests_pct`` (the local-memory requests that are register
spills) tells a spill from a run-time indexed array: it measured 100% on all 7 H200 kernels whose SASS shows spills
(STL after the register limit) and 0% on all 3 whose SASS shows an indexed per-thread array. Half decides."""

OCCUPANCY_MIN_WAVES = 0.99
"""Occupancy can limit only a grid that fills the resident slots it has (>= 1 wave at the current
occupancy, as a grid-stride launch sized to the GPU does); with fewer blocks, the grid is the limit."""

UNIT_TIE_MARGIN = 0.05
"""Units within 5 points of the busiest one (0.05 of peak) count as equally busy: the limiter named is then the
first in priority order (the unit whose work is the program's), and a mechanism that blames a cache (operand
reloads, L2 re-reads) needs its unit within this margin of the busiest. SpeedOfLight percentages of different
units come from different replay passes and nominal peaks, so a few points do not say which one limits; 5 points
is the same line as MIN_MECHANISM_SAVINGS (a judgement, not a measurement)."""

ISSUE_OVER_USEFUL_RATIO = 0.9
"""Instruction issue is overhead (instruction_bound) only when the busiest unit doing useful work runs below 0.9x
the issue rate: when a memory level or FP pipe is within 10% of the issue utilisation, the instructions issued are
that unit's work and issue is only its feed (same 10% as MIN_PRIMARY_SAVINGS)."""

COUNT_MATCH_TOLERANCE = 0.10
"""Two counts that should be equal for a pattern (sectors per request = active lanes: each lane in a sector of
its own; L2 atomic updates = 32 x warp requests: one update per lane, or = requests: one per warp) match within
10%: partial warps and the masked lanes of loop tails move them a few percent, a different pattern moves them by
integer factors."""

DIVERGENCE_TARGET_ACTIVE_THREADS = DIVERGENCE_ACTIVE_THREADS + 4.0
"""What a warp-uniform branch reaches: 28 of 32 active threads per executed instruction (87.5% SIMT efficiency),
above the 24 where divergence starts to count; loop tails and bounds guards keep real kernels below 32."""

DIVERGENCE_INSIDE_FP64_SHARE = 0.5
"""Divergence is a consequence of promoted FP64 math (kprof.rules.kernel.divergence) when at least half of the
divergent branch executions sit on the source lines that run the FP64 instructions: a majority, so that the
branches the FP32 functions would not take carry most of the masked lanes."""

TAIL_TARGET_WAVE_EFFICIENCY = 0.95
"""What a grid sized to whole waves reaches: waves / whole waves >= 0.95 (the last wave at least 95% full, or
enough waves that a partial one weighs less than 5% of the run: the same 5% as MIN_MECHANISM_SAVINGS)."""

OCCUPANCY_ACHIEVED_SHARE = 0.8
"""Achieved occupancy a kernel reaches of its theoretical occupancy once the limiter is freed: the expectation's
target is 80% of the new limit. Blocks start and retire unevenly and the last wave runs partly empty; measured on
the 75 launches of at least one wave in data/samples, the validation galleries and the ESMM corpus: achieved /
theoretical has median 0.92 and lower quartile 0.83 (0.63-0.75 for four launches, 0.20 for a Triton kernel of
tiny blocks), so 0.8 is a target most kernels reach."""

OCCUPANCY_UNEVEN_SHARE = 0.5
"""Wording of a latency-bound mechanism: achieved occupancy below half of the theoretical means blocks start and
finish unevenly (fewer warps resident than the limits allow), far below the 0.83 lower quartile measured for
OCCUPANCY_ACHIEVED_SHARE. It chooses a sentence, not a verdict."""

OCCUPANCY_FEW_WARPS_PCT = 25.0
"""Wording of a latency-bound mechanism: at or below 25% theoretical occupancy (16 of 64 warp slots on Hopper and
Ampere, 4 warps per scheduler) the mechanism says there are too few warps to hide each other's latency. Half of
OCCUPANCY_LOW_FRACTION; it chooses a sentence, not a verdict."""

# Static SASS (``kprof profile sass``, kprof/capture_sass.py): what the compiler emitted, without counters.

STATIC_CONFIDENCE_CAP = 0.35
"""Highest confidence a static finding gets. Static SASS shows what was emitted, never how often it
ran or what it cost (no executed-instruction counts, no stall samples, no memory traffic); a finding
here is a suspect that one ncu capture confirms or clears, so it stays well under the 0.5 that a
measured-but-unexplained counter gets in the kernel stage."""

STATIC_LOCAL_MEMORY_CONFIDENCE = STATIC_CONFIDENCE_CAP
"""LDL/STL in the listing is certain; whether they matter is not (loop or cold path?)."""

STATIC_NO_TENSOR_CORES_CONFIDENCE = 0.25
"""Lower still: an FFMA-heavy listing is matrix-like only by guess; the kernel may not multiply
matrices at all, and only the kernel's author knows."""

STATIC_NO_TENSOR_CORES_FFMA_SHARE = 0.20
"""FFMA share of all static instructions at or above which a kernel without MMA is flagged. Measured on
the H200 machine (nvcc 13.0, sm_90): the tiled SGEMM of data/samples/workloads (``sgemm_smem_tiled``)
is 26% FFMA (112 of 424 instructions: the unrolled inner product among address math, shared-memory
loads and the epilogue); elementwise and reduction kernels sit far below a fifth. Higher than
MATRIX_LIKE_FFMA_SHARE, which applies with counters: there the SASS data flow (loaded, reused
multiplicands) decides, here the share is all there is."""

STATIC_CLEAN_CONFIDENCE = 0.2
"""For a listing with no red flag: it says little about what limits the kernel."""

# Confidence of a kernel diagnosis: an ordinal scale, not a calibrated probability. Each level says what the
# diagnosis rests on; benchmarks/accuracy.py scores the bottleneck and verdict, not these values.

CONFIDENCE_MEASURED = 0.85
"""The counters that define the mechanism are in the report and measured directly, and point at the instructions
responsible where the report has them: sectors or wavefronts per request against ncu's per-instruction ideal,
executed LDL/STL with local traffic, the SMs' measured busy time of a small grid; a unit at its roof doing useful
work (healthy)."""

CONFIDENCE_MEASURED_INFERRED = 0.8
"""Measured, but the saving rests on one inference from the counters: one hot L2 slice means serialized atomics,
masked lanes cost issue slots, FMAs whose multiplicands are loaded and reused are a matrix product."""

CONFIDENCE_CONSISTENT = 0.75
"""Two measurements that agree establish it: latency stalls with a low occupancy limit, loaded bytes per FMA above
what L1 serves with L1 saturated, a tensor path at its own ceiling below the fastest one, an L2 at its roof whose
reads miss to DRAM."""

CONFIDENCE_NO_LINES = 0.7
"""Measured in aggregate without what would place or size it exactly: sectors per request without the SASS, a
small grid without the SMs' busy time, the L2 re-read factor."""

CONFIDENCE_LISTING = 0.65
"""Read from the SASS listing instead of executed counts: LDL/STL listed but local traffic not measured, an FMA
data flow weighed by listed rather than executed instructions."""

CONFIDENCE_PARTIAL = 0.6
"""One input is missing or is ncu's own number: a tail effect without the kernel's share of the step, atomics
without the per-slice activity, the excess quoted by an ncu rule, an instruction mix without source counters."""

CONFIDENCE_RESOURCE = 0.55
"""No mechanism explains the gap and the warp stalls say what the warps wait on; or occupancy limited without the
stall reasons that would confirm the latency is exposed."""

CONFIDENCE_ESTIMATED = 0.5
"""Estimated from a proxy: L1 wavefronts per LSU request standing in for sectors per request (basic-set reports).
Also the most a diagnosis without SpeedOfLight gets."""

CONFIDENCE_RESOURCE_NO_STALLS = 0.4
"""No mechanism explains the gap and the report has no stall reasons to say why."""

CONFIDENCE_INCONCLUSIVE = 0.3
"""Inconclusive: the sections that would decide it were not collected (the next step names them)."""

CONFIDENCE_NO_SOL = 0.2
"""Inconclusive without SpeedOfLight: which unit limits the kernel cannot be told."""

CONFIDENCE_MISSING_PENALTY = 0.15
"""Taken off when a section the judgement needs is missing (the next step names it), or when no_tensor_cores has
no tensor ceiling to bound the gain: one level and a half of this scale."""

CONFIDENCE_NO_SOL_PENALTY = 0.25
"""Taken off a mechanism diagnosed without SpeedOfLight (capped at CONFIDENCE_ESTIMATED): its cost is an upper
bound, not weighed against the unit that limits the kernel."""

# ----------------------------------------------------------------------------- job
# (owned by kprof/diagnose/job/; measured on data/samples/multirank, 2x H200, 6 steps per rank)

STRAGGLER_MIN_EXCESS = 0.25
"""A rank is slow when its compute (non-NCCL kernel time) per step exceeds the typical rank's by more
than 25%. Ranks doing identical work differ by up to 17% in the balanced ``ddp`` sample (median per
step, nsys: 2.66 vs 2.28 ms; PyTorch profiler: 2.45 vs 2.67 ms): 25% is about 1.5x that. The
``ddp_straggler`` sample's slow rank is +68% (4.35 vs 2.58 ms)."""

STRAGGLER_MIN_STEP_SHARE = 0.05
"""...and both the excess and the others' extra wait per step are at least 5% of the median step:
below that the difference is within run-to-run variation and waiting for the rank costs the job
little (MIN_FINDING_SHARE)."""

STRAGGLER_WAIT_MATCH = 0.50
"""The other ranks wait for a slow rank when their exposed NCCL time per step exceeds the slow rank's
by at least half of its compute excess. Physics: a blocking collective completes only when the last
rank joins, so each millisecond a rank is late becomes a millisecond of the others' NCCL kernels
spinning, less what overlapping compute hides (DDP overlaps the all-reduce with the backward pass).
Measured: 0.80x (nsys) and 1.05x (PyTorch profiler) in ``ddp_straggler``; negative in ``ddp`` (there
the rank with more compute waits more, not less)."""

STRAGGLER_MAX_FRACTION = 0.125
"""A straggler is an outlier: at most 1/8 of the ranks are slow (one 8-GPU node of a 64-rank job), and
always at least one. When more ranks are slow, the work itself is split unevenly: load_imbalance."""

LOAD_IMBALANCE_SPREAD = 0.25
"""Compute per step differs across ranks by more than 25% of the typical rank's ((max - min) / typical):
the same line as STRAGGLER_MIN_EXCESS, for a spread rather than an outlier."""

# ----------------------------------------------------------------------------- compare
# (owned by kprof/diagnose/compare/)

NCU_DURATION_NOISE = 0.02
"""Two ncu durations of the same kernel differ beyond noise only when their ratio is beyond 1.02.
Measured on the H200 (data/samples/ncu_noise.csv, from data/samples/measure_ncu_noise.sh): one kernel's
``gpu__time_duration.sum`` under ``ncu --clock-control none``, 3 processes x 3 launches, for 4 kernels of
0.36-2.1 ms: coefficient of variation <= 0.30%, max-min spread <= 0.92% of the mean (max/min ratio
1.0093). 2% is over twice the largest spread and almost 5 standard deviations of the difference of two
single launches (sqrt(2) x 0.30% = 0.42%). ncu's default ``--clock-control base`` locks the clocks and
only narrows the spread, so 2% stays conservative there."""

TIMELINE_NOISE_Z = 3.0
"""A timeline speedup is beyond its noise when it lies more than 3 standard errors from 1 (99.7% two-sided
for a normal spread: with one comparison per fix, a false "improved" should be rare). The standard error
combines, in quadrature, each capture's own uncertainty of its median step (a bootstrap over its steady-state
steps) and the process-to-process term of each side (HOST_PACED_PROCESS_SD)."""

TIMELINE_MIN_NOISE = NCU_DURATION_NOISE
"""Floor of a timeline comparison whose steps are GPU-limited: a step cannot repeat across processes
better than the kernels in it (NCU_DURATION_NOISE). Measured on the H200 (3 processes each under nsys,
data/samples/workloads/timeline): the median GPU step time of gpu_bound varied by 0.10% and of
pair_graph --graph by 0.04% between processes, so 2% is conservative. Also the fallback for a
GPU-limited capture-vs-capture comparison (no steps, hence no dispersion of its own)."""

HOST_PACED_PROCESS_SD = 0.17
"""Process-to-process standard deviation of the host-paced part of a step (the time the GPU idles waiting
on the host: dispatch, a sync's return and the relaunch after it, Python), relative to that part. A step's
GPU work repeats across processes like its kernels (TIMELINE_MIN_NOISE); its host-paced part moves with
the host's speed in each process (CPU clock and core, caches, allocator addresses, a profiler's own
threads). So one capture's median step carries, besides its own standard error, a process term of
``host-paced share x 0.17``, and a comparison of two single captures adds both sides' terms in quadrature
(kprof/diagnose/compare/verdicts.py). Measured on the H200: the standard deviation of ln(median step) over
fresh processes, divided by the step's host-paced share (1 - GPU time per step / median step), pooled over
8 program runs (24 degrees of freedom) = 16.3%, rounded up:
blind9 plain timings (data/validation/blind9/plain_timings.txt, no profiler, 5 or 3 processes each, two
machines): p1_sync_pairs_before 11.4% / 13.4%, p4_d2h_pageable_after 14.4% / 8.1%, s1_item_branch 24.6%
(their GPU time per step from the blind9 captures); three processes each under nsys (the samples'
workloads, data/samples/workloads/timeline): host_launch_bound 3.01 / 3.07 / 4.98 ms 31.4%, pair_graph
(eager) 0.98 / 1.20 / 1.29 ms 15.1%, sync_bound 3.06 / 3.15 / 3.44 ms 14.5% (GPU time per step from the
samples' captures). tests/diagnose/test_compare_noise.py recomputes the pooled value. A fully host-bound
pair (93% host-paced on both sides) gets 3 x sqrt(2) x 0.93 x 0.17 = +-67%, what the widest null spread
below (1.65x) needs; blind9's P1 (38% host-paced before, 3% after) gets +-19.6%, and a null pair of such a
loop (38% on both sides) +-27%, wider than its measured processes' max/min (1.10-1.13x). GPU-limited steps
keep the TIMELINE_MIN_NOISE floor. This is the typical spread, not the worst: a host-limited pair whose change
lies within HOST_PACED_WORST_SPREAD gets a caveat and the number of captures per side that would settle it."""

HOST_PACED_WORST_SPREAD = 0.72
"""The widest spread of a host-paced step part measured between processes of one program on the H200: the
host_launch_bound sample's workload under nsys, 3.01 / 3.07 / 4.98 ms median step with 0.28 ms of GPU work
per step, so its host-paced part moved 2.73 -> 4.70 ms (1.72x) between two of three processes. A comparison
of host-limited captures whose change lies within ``1 + host-paced share x 0.72`` of 1 (the larger share of
the two sides) could be one such process: it carries a caveat and the repeat-the-captures next step, whatever
its verdict (kprof/diagnose/compare/timelines.py)."""

EXPECTATION_MIN_PROGRESS = DOMINANT_SHARE
"""An expectation with a target is met when the metric moved the predicted way by more than the noise
and covered at least half of the predicted distance from its value before to the target (or passed it).
The targets are estimates of what removing one mechanism wins; a fix that delivers more than half of
the predicted move has removed the dominant part of it (DOMINANT_SHARE), less than half means the
mechanism is mostly still there or the prediction was wrong, and the check says how far it got."""
