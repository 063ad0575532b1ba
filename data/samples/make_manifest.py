#!/usr/bin/env python3
"""Write data/samples/manifest.json from the sample files that are present (stdlib only).

Run it after unpacking what generate.sh produced:

    for t in <files_at>/samples_*.tar.gz; do tar -xzf "$t" -C data/samples; done
    python3 data/samples/make_manifest.py

What each sample shows (bottleneck id from the DESIGN.md vocabulary, verdict, description, pair) is
written down in SAMPLES below; the tool versions and GPU come from versions.json, the exact capture
commands from commands.tsv (both written by generate.sh), and bytes/sha256 from the files themselves.
A sample whose file is missing is reported on stderr and left out; the exit status is then 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
K = "workloads/kernels"
T = "workloads/timeline"


def _pair(name: str | None, role: str | None) -> dict | None:
    return {"name": name, "role": role} if name else None


# (sample id, workload, bottleneck, verdict, description, pair name, pair role)
KERNEL_SAMPLES = [
    ("uncoalesced_global_access", f"{K}/uncoalesced_global_access.py", "uncoalesced_global_access", "fix",
     "CuPy kernel strided_gather: each thread reads in[i*32] (4-byte loads 128 bytes apart), so every lane "
     "of a warp touches its own 32-byte sector: 32 sectors per load request instead of 4, so the memory "
     "system moves 8x the bytes the kernel uses and DRAM is busy with wasted sectors.", None, None),
    ("shared_bank_conflicts", f"{K}/shared_bank_conflicts.py", "shared_bank_conflicts", "fix",
     "CuPy kernel batched_matvec_smem: batched 32x32 mat-vec where lane r sums row r of a shared tile[32][32], "
     "so each warp-wide shared load reads one tile column (32 addresses in one bank, a 32-way conflict); "
     "the kernel saturates the shared-memory pipe while DRAM idles.", None, None),
    ("local_memory_spill", f"{K}/local_memory_spill.py", "local_memory_spill", "fix",
     "CuPy kernel per_thread_table: a 64-float per-thread array indexed with data-dependent indices is placed "
     "in local memory by ptxas (256-byte stack frame, 0 bytes of register spills: dynamic indexing, not "
     "-maxrregcount), so every table access is a local load/store through L1/L2.", None, None),
    ("atomic_contention", f"{K}/atomic_contention.py", "atomic_contention", "fix",
     "CuPy kernel global_sum_4bins: 4M threads each atomicAdd one float into one of 4 global accumulators; "
     "all 1M L2 reduction requests land on one L2 slice and serialize, so the kernel runs for ms with SM, "
     "DRAM and average L2 throughput near 0% while one slice is hot.", None, None),
    ("warp_divergence", f"{K}/warp_divergence.py", "warp_divergence", "fix",
     "CuPy kernel lane_dependent_math: an 8-way switch on threadIdx.x % 8, each case a 256-step loop of "
     "different math, so the 8 paths of every warp run one after another with 4 of 32 lanes active "
     "(about 4 threads per executed instruction).", None, None),
    ("small_grid", f"{K}/small_grid.py", "small_grid", "fix",
     "CuPy kernel few_blocks_reduce: a 16M-float (64 MB) grid-stride reduction launched as 8 blocks of 128 "
     "threads on the 132-SM H200: 124 SMs idle, 0.004 waves, and too few warps to keep DRAM busy.",
     None, None),
    ("occupancy_limited", f"{K}/occupancy_limited.py", "occupancy_limited", "fix",
     "CuPy kernel lut_scale_stream: 48 KB of static shared memory per 64-thread block limits an SM to 4 blocks "
     "(8 warps, 12.5% theoretical occupancy); each thread keeps one global load in flight (loop not "
     "unrolled), so DRAM latency is exposed and bandwidth use stays near 10%.", None, None),
    ("no_tensor_cores", f"{K}/no_tensor_cores.py", "no_tensor_cores", "fix",
     "CuPy kernel sgemm_smem_tiled: a textbook 16x16 shared-memory tiled FP32 matmul, 2048^3; all math is "
     "FFMA on the FP32 pipes (tensor pipe ~0%), limited by shared-memory traffic, far below what the tensor "
     "cores (TF32/bf16 via cuBLAS) reach for the same product.", None, None),
    ("tensor_core_bound", f"{K}/tensor_core_bound.py", "tensor_core_bound", "healthy",
     "torch.matmul of two 8192x8192 bf16 matrices: cuBLAS runs an nvjet_sm90 tensor-core kernel with the "
     "tensor pipe ~97% active; occupancy (~15%) and registers (168/thread) look alarming but the kernel is "
     "at its roofline (regex nvjet|xmma|gemm|cutlass).", None, None),
    ("dram_bandwidth_bound", f"{K}/dram_bandwidth_bound.py", "dram_bandwidth_bound", "healthy",
     "CuPy kernel stream_triad: a = b + s*c with float4 loads/stores over three 512 MB arrays (1.5 GB moved); "
     "nothing to do but move bytes, and it runs at ~91% of peak DRAM throughput: the advice is to move "
     "fewer bytes, not to tune.", None, None),
    ("pair_transpose_before", f"{K}/pair_transpose.py", "uncoalesced_global_access", "fix",
     "CuPy kernel transpose (naive, TILED=0) of an 8192x8192 float matrix: reads are coalesced but each "
     "warp's stores go to 32 different rows (32 sectors per store request instead of 4), L2 absorbs the "
     "partial writes and the kernel takes ~7x longer than the tiled version.", "pair_transpose", "before"),
    ("pair_transpose_after", f"{K}/pair_transpose.py", "dram_bandwidth_bound", "healthy",
     "Same kernel name transpose, same grid/block, fixed (TILED=1, run with --after): the tile is staged through "
     "shared memory tile[32][33] so loads and stores are both 4 sectors per request; ~75% of peak DRAM "
     "(the triad sample reaches ~91%) with no mechanism left to fix.", "pair_transpose", "after"),
    ("pair_smem_column_sum_before", f"{K}/pair_smem_column_sum.py", "shared_bank_conflicts", "fix",
     "CuPy kernel smem_column_sum (PAD=0): per 32x32 block each warp stores one input row transposed into a "
     "shared tile[32][32] (a column write: 32-way bank conflict, ~32 wavefronts per shared store), then "
     "reduces columns with shuffles; the shared-memory pipe, not DRAM, limits it.",
     "pair_smem_column_sum", "before"),
    ("pair_smem_column_sum_after", f"{K}/pair_smem_column_sum.py", "latency_bound", "fix",
     "Same kernel name smem_column_sum, same grid/block, fixed (PAD=1, run with --after): tile[32][33] makes "
     "the column store conflict-free (~1.1 wavefronts per store) and the kernel ~1.7x faster; what remains "
     "is latency (one 4-byte load per thread in flight, ~21% of peak DRAM), not bank conflicts.",
     "pair_smem_column_sum", "after"),
    ("long_kernel_one_line", f"{K}/long_kernel_one_line.py", "uncoalesced_global_access", "fix",
     "CuPy kernel fused_epilogue (56 lines: six global loads, three global stores, a GELU, a shuffle + shared-memory block "
     "reduction) over a 4096x4096 float matrix; its one problem sits on ONE line: the positional table is "
     "stored transposed and read as pos_t[col * rows + row] (long_kernel_one_line.cu:22), so neighbouring "
     "lanes are 16 KB apart and that load needs 32 sectors per request where the other 4-byte loads need 4. "
     "For issue 14 (the source line of a mechanism).", None, None),
]

# (sample, pages kept). generate.sh exports both pages of both samples; the raw page of
# shared_bank_conflicts (164 KB) is not kept, so that data/samples stays under 30 MB.
CSV_SAMPLES = [("uncoalesced_global_access", ("raw", "details")), ("shared_bank_conflicts", ("details",))]

# Triton and PyTorch eager samples (issue 14): not CuPy. Triton 3.6.0 keeps Python line info by default, so
# the two Triton reports embed their .py file (--import-source yes); PyTorch's kernels carry no line info.
KERNEL_SAMPLES += [
    ("triton_fp32_ieee_dot", f"{K}/triton_fp32_ieee_dot.py", "no_tensor_cores", "fix",
     "Triton kernel matmul_fp32_ieee: 2048^3 FP32 with tl.dot(a, b, acc, input_precision=\"ieee\") (block "
     "128x128x32, 8 warps, 3 stages). Exact FP32 products cannot use the tensor cores, so Triton lowers tl.dot to "
     "FFMA: tensor pipe ~0%, FFMA ~90% of executed instructions, all on line 39 (the tl.dot), FMA pipe ~63% of "
     "peak. input_precision=\"tf32\" (or bf16 inputs) would put the product on the tensor cores (HGMMA).",
     None, None),
    ("triton_bf16_dot", f"{K}/triton_bf16_dot.py", "tensor_core_bound", "healthy",
     "Triton kernel matmul_bf16: 4096^3 BF16 (FP32 accumulate), block 128x128x64, 4 warps, 4 stages, grouped "
     "program order: Triton emits HGMMA (warpgroup MMA) fed by cp.async; tensor pipe ~80% of elapsed cycles over "
     "7.8 waves (~690 TFLOP/s under ncu). Occupancy 6% (226 registers, one 4-warp block per SM) is the design.",
     None, None),
    ("torch_permute_copy", f"{K}/torch_permute_copy.py", "uncoalesced_global_access", "fix",
     "PyTorch eager x.t().contiguous() of an 8192x8192 float matrix: TensorIterator's generic copy "
     "(elementwise_kernel<128, 2>) writes the output contiguously, so the 32 lanes of a warp read elements 32 KB "
     "apart: 32 sectors per load request (stores 4), L2 ~96% busy with the excess sectors while DRAM moves only "
     "the tensors' bytes (~24%). The fix is at the call site (consume the transposed view, or a tiled transpose).",
     None, None),
]

TIMELINE_SAMPLES = [
    ("host_launch_bound", f"{T}/host_launch_bound.py", "host_launch_bound", "fix",
     "Unfused per-parameter SGD-with-momentum update over 100 tensors of 4096 floats: 300 tiny elementwise "
     "kernels (~1 us each) per step dispatched one Python call at a time, so the GPU is busy only ~6% of the "
     "captured steady state and idles between launches.", None, None),
    ("sync_bound", f"{T}/sync_bound.py", "sync_bound", "fix",
     "32 iterations per step of one 1024^3 FP32 matmul (~45 us on the GPU) followed by y[0, 0].item(): a "
     "4-byte device-to-host copy and a blocking sync after every kernel. The host is blocked in the sync for "
     "most of each iteration and the GPU idles after every sync while Python launches the next matmul (GPU "
     "busy ~60% in the nsys capture, 99% of the idle time right after a sync); without the read-back the "
     "host (~10 us per launch) would stay ahead of the GPU.", None, None),
    ("transfer_bound", f"{T}/transfer_bound.py", "transfer_bound", "fix",
     "Each step copies two 32 MB pageable (not pinned) CPU tensors to the GPU with .to('cuda') and does a few "
     "microseconds of compute on them: pageable H2D memcpys at ~6.6 GB/s take ~92% of the capture, kernels "
     "<1%.", None, None),
    ("gpu_bound", f"{T}/gpu_bound.py", "gpu_bound", "healthy",
     "8 back-to-back 4096^3 bf16 matmuls per step with no host synchronization: the host enqueues far ahead "
     "and the GPU runs nvjet tensor-core GEMMs (~170 us each) continuously (~95% busy over the capture); the "
     "time is in kernels that are themselves near their roofline.", None, None),
    ("pair_graph_before", f"{T}/pair_graph.py", "host_launch_bound", "fix",
     "Launch-bound step, eager: 25 x (sin, mul, add) on a 1024-float tensor plus a device copy, i.e. 75 "
     "~1 us kernels and a memcpy dispatched from Python per step; GPU busy ~6% of the capture.",
     "pair_graph", "before"),
    ("pair_graph_after", f"{T}/pair_graph.py", "gpu_bound", "healthy",
     "The same step captured once in a torch.cuda.CUDAGraph and replayed (run with --graph): one "
     "cudaGraphLaunch per step, GPU busy ~92%. Captured with nsys's default --cuda-graph-trace=graph (given "
     "explicitly), so the kernels appear only as one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row per replay, not in "
     "CUPTI_ACTIVITY_KIND_KERNEL; the PyTorch trace lists the graph's kernels individually.",
     "pair_graph", "after"),
    # issue 13: numbers from data/validation/timeline/measure.py (steady-state window = whole loop iterations
    # between the GPU start of iteration 2 (0 for the capture-range samples) and of the last iteration).
    ("host_compute_bound", f"{T}/host_compute_bound.py", "host_compute_bound", "fix",
     "A training step starved by its DataLoader (num_workers=0): each batch of 64 3x64x64 images is made and "
     "augmented in numpy in the main process (crop, flip, 3x3 blur via np.roll, jitter, normalisation), then "
     "copied pageable to the GPU; the small CNN needs ~1 ms of GPU work. nsys (steady state, 9 steps of 63.8 "
     "ms): GPU busy 1.4%, 98.6% of the idle time outside any CUDA API call, one gap >1 ms per step (max 60.7 ms). In "
     "the PyTorch trace the gaps lie inside 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__' "
     "(92.9% of the idle time). Fix: DataLoader workers + pin_memory + prefetch, or GPU augmentation.",
     None, None),
    ("pinned_unoverlapped_copies", f"{T}/pinned_unoverlapped_copies.py", "transfer_bound", "fix",
     "Each step copies a 64 MiB pinned batch to the GPU with non_blocking=True on the default stream, then "
     "runs an FP32 GEMM (2048x8192 @ 8192x2048, TF32 off) on it: copy engine and SMs take turns. Steady "
     "state (9 steps of 2.56 ms): copies 47.5% (pinned H2D at 55.2 GB/s), kernels 52.1%, 0 ms of overlap, "
     "GPU busy 99.6%. Memory is already pinned: the fix is overlap (copy stream + two buffers + events), "
     "bounded by the copy's 47.5% share (step -> ~1.34 ms, the GEMM's time).", None, None),
    ("whole_process_launch_bound", f"{T}/whole_process_launch_bound.py", "host_launch_bound", "fix",
     "WHOLE-PROCESS capture (no capture range) of a short training run: a 13-layer width-256 MLP, batch 64, "
     "SGD with momentum (foreach=False), 25 steps of ~185 tiny kernels (mean 2.0 us). Start-up (interpreter, "
     "imports, context, lazy loading, the optimizer's first import of torch._dynamo) is 90.1% of the 11.4 s "
     "capture and process exit 8.8%; the loop's steady state (22 steps of 5.67 ms) has GPU busy 6.5% with "
     "4070 launches in 125 ms: the loop is launch-bound and that, not start-up, is the capture's verdict "
     "(start-up is a finding with its share).", None, None),
    ("teardown_after_loop", f"{T}/teardown_after_loop.py", "gpu_bound", "healthy",
     "WHOLE-PROCESS capture of a short GPU-bound loop (40 steps of three 512-768 MiB elementwise kernels, "
     "GPU busy 99.0%, 0.50 ms per step) followed by a long teardown: 1503 cudaFree (empty_cache of 1500 "
     "12 MiB segments, 106.8 ms) and cudaDeviceReset (67.8 ms), then interpreter exit; the teardown after "
     "the loop is 742 ms (10.6% of the capture), start-up 89.1%, the loop 1.3%. The frees synchronize, but "
     "they are one-time teardown, not a sync problem of the loop. The PyTorch trace covers the frees "
     "(cudaFree x1503, 99.6 ms, 20.5% of the trace) but not the reset (run after the profiler stops).",
     None, None),
]

M = "workloads/multirank"
# Multi-rank jobs (issue 9): 2 ranks on the 2-GPU machine, made by generate_multirank.sh. Listed under
# "jobs" (not "files"), because what they show is a property of the job, not of one rank's capture.
# The numbers in the descriptions were read from the .sqlite files (kernel intervals, NCCL kernels by name).
JOB_SAMPLES = [
    ("ddp", "gpu_bound", "healthy", None,
     "Balanced data-parallel MLP training (6 Linear 4096x4096 bf16 layers, batch 2048 per rank, DDP all-reduce "
     "over NCCL), 6 steady-state steps per rank. No straggler: compute kernels 15.7 ms (rank 0) and 14.2 ms "
     "(rank 1); NCCL kernels 11.6 and 12.3 ms, of which 4.1 and 9.1 ms are not overlapped with compute."),
    ("ddp_straggler", "straggler", "fix", [1],
     "The same job with rank 1 doing ~4 ms of extra matmuls per step (--slow-rank 1 --slow-ms 4): rank 1's "
     "compute kernels take 26.1 ms against rank 0's 15.6 ms, and rank 0 waits inside NCCL all-reduce "
     "kernels (46.3 ms of NCCL time, 37.1 ms of it not overlapped with compute, against 5.7 ms on rank 1)."),
]
JOB_FILES = [("nsys-sqlite", ".sqlite"), ("kineto", ".json.gz")]

# The tools that made (and can re-make) each kind of file; the full list is in the manifest's top-level "tools".
_KERNEL_TOOLS = {"ncu", "nvcc", "python", "torch", "torch_cuda", "cupy"}
TOOLS_BY_KIND = {
    "ncu-rep": _KERNEL_TOOLS,
    "ncu-csv-raw": _KERNEL_TOOLS,
    "ncu-csv-details": _KERNEL_TOOLS,
    "nsys-rep": {"nsys", "python", "torch", "torch_cuda"},
    "nsys-sqlite": {"nsys", "python", "torch", "torch_cuda"},
    "kineto": {"python", "torch", "torch_cuda"},
}

TIMELINE_FILES = [("nsys-rep", ".nsys-rep"), ("nsys-sqlite", ".sqlite"), ("kineto", ".json.gz")]
# Timeline samples whose SQLite export is stored gzip-compressed (generate.sh's SQLITE_GZ): size only.
SQLITE_GZ = {"host_compute_bound", "pinned_unoverlapped_copies", "whole_process_launch_bound", "teardown_after_loop"}


def _report(sid: str) -> str:
    """A kernel sample's report: ``ncu/SID.ncu-rep.gz`` as generate.sh stores it (gzip -9 -n), or a plain
    ``ncu/SID.ncu-rep`` where only that is present (an unpacked capture that was not compressed)."""
    gz = f"ncu/{sid}.ncu-rep.gz"
    plain = gz.removesuffix(".gz")
    if not os.path.isfile(os.path.join(HERE, gz)) and os.path.isfile(os.path.join(HERE, plain)):
        return plain
    return gz


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _commands() -> dict[str, str]:
    cmds: dict[str, str] = {}
    path = os.path.join(HERE, "commands.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "\t" in line:
                    out, cmd = line.rstrip("\n").split("\t", 1)
                    cmds[out] = cmd
    return cmds


def _merge_partial_run() -> None:
    """Lay a partial run's records (generate.sh NAME ...) over the full run's, then drop them."""
    partial = os.path.join(HERE, "commands.partial.tsv")
    if os.path.exists(partial):
        merged = _commands()
        with open(partial) as f:
            for line in f:
                if "\t" in line:
                    out, cmd = line.rstrip("\n").split("\t", 1)
                    merged[out] = cmd
        with open(os.path.join(HERE, "commands.tsv"), "w") as f:
            for out, cmd in merged.items():
                f.write(f"{out}\t{cmd}\n")
        os.remove(partial)
    vpartial = os.path.join(HERE, "versions.partial.json")
    if os.path.exists(vpartial):
        # Tools and GPU must be those of the full run; a partial run on other versions is refused.
        with open(os.path.join(HERE, "versions.json")) as f:
            full = json.load(f)
        with open(vpartial) as f:
            part = json.load(f)
        if part.get("tools") != full.get("tools") or part.get("gpu") != full.get("gpu"):
            raise SystemExit("versions.partial.json: the partial run used other tools or another GPU; "
                             "regenerate everything")
        os.remove(vpartial)


def main() -> int:
    _merge_partial_run()
    with open(os.path.join(HERE, "versions.json")) as f:
        versions = json.load(f)
    gpu = f"{versions['gpu']['name']} (driver {versions['gpu']['driver']})"
    tools = versions["tools"]
    cmds = _commands()
    entries: list[dict] = []
    missing: list[str] = []

    def add(file: str, kind: str, workload: str, bottleneck: str, verdict: str, description: str,
            pair: dict | None) -> None:
        path = os.path.join(HERE, file)
        if not os.path.isfile(path):
            missing.append(file)
            return
        entries.append({
            "file": file,
            "kind": kind,
            "workload": workload,
            "shows": {"bottleneck": bottleneck, "verdict": verdict},
            "description": description,
            "pair": pair,
            "gpu": gpu,
            "tools": {k: v for k, v in tools.items() if k in TOOLS_BY_KIND[kind]},
            "capture_command": cmds.get(file),
            "bytes": os.path.getsize(path),
            "sha256": _sha256(path),
        })

    by_id = {}
    for sid, workload, bottleneck, verdict, desc, pname, prole in KERNEL_SAMPLES:
        by_id[sid] = (workload, bottleneck, verdict, desc)
        rep = _report(sid)
        add(rep, "ncu-rep", workload, bottleneck, verdict, desc + (" gzip -9." if rep.endswith(".gz") else ""),
            _pair(pname, prole))
    for sid, pages in CSV_SAMPLES:
        workload, bottleneck, verdict, desc = by_id[sid]
        for page in pages:
            kind, suffix = f"ncu-csv-{page}", f".{page}.csv"
            add(f"ncu/{sid}{suffix}", kind, workload, bottleneck, verdict,
                f"CSV export (--page {page}) of ncu/{sid}.ncu-rep (see the entry of {_report(sid)}).", None)
    for sid, workload, bottleneck, verdict, desc, pname, prole in TIMELINE_SAMPLES:
        for kind, suffix in TIMELINE_FILES:
            d = desc if kind != "nsys-sqlite" else f"SQLite export of timeline/{sid}.nsys-rep (see that entry)."
            if kind == "nsys-sqlite" and sid in SQLITE_GZ:
                suffix, d = ".sqlite.gz", d[:-1] + ", gzip -9."
            add(f"timeline/{sid}{suffix}", kind, workload, bottleneck, verdict, d, _pair(pname, prole))

    jobs: list[dict] = []
    mr_versions = os.path.join(HERE, "multirank", "versions.txt")
    mr_tools = open(mr_versions).read().strip().splitlines() if os.path.exists(mr_versions) else []
    mr_cmds: dict[str, str] = {}
    mr_cmd_path = os.path.join(HERE, "multirank", "commands.tsv")
    if os.path.exists(mr_cmd_path):
        with open(mr_cmd_path) as f:
            for line in f:
                if "\t" in line:
                    out, cmd = line.rstrip("\n").split("\t", 1)
                    mr_cmds[out] = cmd
    for job, bottleneck, verdict, slow_ranks, desc in JOB_SAMPLES:
        files = []
        for rank in range(2):
            for kind, suffix in JOB_FILES:
                rel = f"multirank/{job}_rank{rank}{suffix}"
                path = os.path.join(HERE, rel)
                if not os.path.isfile(path):
                    missing.append(rel)
                    continue
                files.append({
                    "file": rel, "kind": kind, "rank": rank, "capture_command": mr_cmds.get(rel),
                    "bytes": os.path.getsize(path), "sha256": _sha256(path),
                })
        jobs.append({
            "job": job, "ranks": 2, "workload": f"{M}/ddp_train.py",
            "shows": {"bottleneck": bottleneck, "verdict": verdict, "slow_ranks": slow_ranks},
            "description": desc, "gpu": "2x NVIDIA H200 (driver 580.159.04), one host",
            "tools": mr_tools, "generator": "generate_multirank.sh", "files": files,
        })

    manifest = {
        "generated": versions.get("generated"),
        "gpu": gpu,
        "tools": tools,
        "notes": (
            "Captured by generate.sh on one NVIDIA H200. capture_command is exact and relative to a folder "
            "laid out like data/samples (workloads/, ncu/, timeline/). ncu: --set full, one launch after 3 "
            "warm-up launches, --clock-control none; durations inside ncu reports are replayed, serialized "
            "times. nsys: only the steady state (cudaProfilerStart/Stop around the recorded steps, "
            "--capture-range=cudaProfilerApi), with one NVTX range 'step N' per iteration, except "
            "whole_process_launch_bound and teardown_after_loop, which capture the whole process (no capture "
            "range; their PyTorch traces run from before the first CUDA call to the end, ProfilerStep#0 being "
            "the start-up); the PyTorch profiler traces come from a separate run of the same program "
            "(schedule wait=0, warmup=2, active=N, ProfilerStep#N per step)."
        ),
        "files": entries,
        "jobs": jobs,
    }
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    n_job_files = sum(len(j["files"]) for j in jobs)
    print(f"manifest.json: {len(entries)} files, {sum(e['bytes'] for e in entries)} bytes; "
          f"{len(jobs)} jobs with {n_job_files} files")
    for m in missing:
        print(f"missing: {m}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
