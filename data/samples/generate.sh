#!/usr/bin/env bash
# Regenerate every profile under data/samples in ONE run on the GPU machine (one NVIDIA H200).
#
# From the repo root, through the device tool (carry .gpu, which holds the nsys setup):
#   run(command="source .gpu/env.sh; set -o pipefail; bash data/samples/generate.sh 2>&1 | tee $OUT/log",
#       carry=[".gpu"], timeout_s=600)
# then, here (files_at is the folder the reply names):
#   for t in <files_at>/samples_*.tar.gz; do tar -xzf "$t" -C data/samples; done
#   python3 data/samples/make_manifest.py
#
# Arguments: optional sample names (e.g. `small_grid pair_graph_after`) to redo only those.
# GEN_BUDGET_S=N (optional): skip the remaining captures after N seconds so packing still happens.
# Every capture runs from a scratch folder laid out like data/samples (workloads/, ncu/, timeline/),
# so the commands recorded in commands.tsv (and copied into manifest.json) are exact and relative.
# One failing capture does not stop the others; failures are listed at the end (exit status 1).
set -uo pipefail

SAMPLES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SAMPLES_DIR/../.." && pwd)
if ! command -v nsys >/dev/null 2>&1 && [ -f "$REPO/.gpu/env.sh" ]; then
  source "$REPO/.gpu/env.sh"
fi
WORK=${KPROF_SAMPLES_WORK:-/tmp/kprof_samples}
DEST=${OUT:-$WORK/out}
ONLY=("$@")

rm -rf "$WORK"
mkdir -p "$WORK/ncu" "$WORK/timeline" "$DEST"
cp -r "$SAMPLES_DIR/workloads" "$WORK/"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"  # Triton kernels compiled from these paths only
: > commands.tsv
FAILED=()
T_START=$SECONDS

log() { echo "[$(date +%H:%M:%S) +$((SECONDS - T_START))s] $*"; }

want() {  # want NAME: true when NAME is selected (no arguments = everything)
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local s
  for s in "${ONLY[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

record() {  # record OUTFILE CMD...: remember the exact (shell-quoted) command that made OUTFILE
  local out=$1; shift
  local cmd="" a
  for a in "$@"; do  # quote only what needs it, the way a person would type it
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
  done
  printf '%s\t%s\n' "$out" "${cmd% }" >> commands.tsv
}

over_budget() {  # GEN_BUDGET_S (optional): skip captures once this many seconds have passed
  if [ -n "${GEN_BUDGET_S:-}" ] && [ $((SECONDS - T_START)) -ge "$GEN_BUDGET_S" ]; then
    FAILED+=("$1 (skipped: GEN_BUDGET_S=$GEN_BUDGET_S reached)")
    log "SKIP $1: time budget reached"
    return 0
  fi
  return 1
}

capture() {  # capture LABEL OUTFILE CMD...: run CMD with a time limit and check that OUTFILE appeared
  local label=$1 out=$2; shift 2
  over_budget "$label" && return 1
  log "BEGIN $label: $*"
  local t0=$SECONDS rc
  timeout 240 "$@"
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
    FAILED+=("$label (rc=$rc, $out missing or empty)")
    log "FAIL $label rc=$rc"
    return 1
  fi
  record "$out" "$@"
  log "OK $label: $out $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

capture_sh() {  # capture_sh LABEL OUTFILE 'SHELL COMMAND' (for commands with a redirection)
  local label=$1 out=$2 cmd=$3
  over_budget "$label" && return 1
  log "BEGIN $label: $cmd"
  local t0=$SECONDS rc
  timeout 240 bash -c "$cmd"
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
    FAILED+=("$label (rc=$rc, $out missing or empty)")
    log "FAIL $label rc=$rc"
    return 1
  fi
  printf '%s\t%s\n' "$out" "$cmd" >> commands.tsv
  log "OK $label: $out $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------- tool versions
log "versions"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
{
  echo "### ncu --version"; ncu --version
  echo "### nsys --version"; nsys --version
  echo "### nvidia-smi --query-gpu=name,driver_version --format=csv"
  nvidia-smi --query-gpu=name,driver_version --format=csv
  echo "### nvcc --version"; "$NVCC" --version
  echo "### python3"
  python3 -c 'import sys, torch, cupy; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda); print("cupy", cupy.__version__, "cuda runtime", cupy.cuda.runtime.runtimeGetVersion())'
} > versions.txt 2>&1
cat versions.txt
NVCC="$NVCC" python3 - > versions.json <<'PY'
import json, os, subprocess, sys

def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001 - record what failed, keep going
        return f"unavailable: {e}"

def last_line(text, key=""):
    lines = [l.strip() for l in text.splitlines() if key in l]
    return lines[-1] if lines else text

smi = out("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader").splitlines()
name, driver = ([s.strip() for s in smi[0].split(",")] + ["", ""])[:2] if smi else ("", "")
import datetime
v = {"generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
     "gpu": {"name": name, "driver": driver},
     "tools": {"ncu": last_line(out("ncu", "--version"), "Version"),
               "nsys": last_line(out("nsys", "--version")),
               "nvcc": last_line(out(os.environ["NVCC"], "--version"), "release"),
               "python": sys.version.split()[0]}}
try:
    import torch
    v["tools"]["torch"] = torch.__version__
    v["tools"]["torch_cuda"] = torch.version.cuda
except Exception as e:  # noqa: BLE001
    v["tools"]["torch"] = f"unavailable: {e}"
try:
    import cupy
    v["tools"]["cupy"] = cupy.__version__
except Exception as e:  # noqa: BLE001
    v["tools"]["cupy"] = f"unavailable: {e}"
print(json.dumps(v, indent=2))
PY
cat versions.json

# ---------------------------------------------------------------- kernel samples (Nsight Compute)
# One launch each: the programs run WARMUP=3 launches, then the profiled one.
NCU=(ncu --set full --import-source yes --clock-control none)
ncu_sample() {  # ncu_sample NAME REGEX PROGRAM [ARGS...]
  local name=$1 regex=$2; shift 2
  want "$name" || return 0
  capture "$name" "ncu/$name.ncu-rep" "${NCU[@]}" -k "regex:$regex" --launch-skip 3 --launch-count 1 \
    -f -o "ncu/$name" python3 "$@" || return 0
}
K=workloads/kernels
ncu_sample uncoalesced_global_access '^strided_gather$'      $K/uncoalesced_global_access.py
ncu_sample shared_bank_conflicts     '^batched_matvec_smem$' $K/shared_bank_conflicts.py
ncu_sample local_memory_spill        '^per_thread_table$'    $K/local_memory_spill.py
ncu_sample atomic_contention         '^global_sum_4bins$'    $K/atomic_contention.py
ncu_sample warp_divergence           '^lane_dependent_math$' $K/warp_divergence.py
ncu_sample small_grid                '^few_blocks_reduce$'   $K/small_grid.py
ncu_sample occupancy_limited         '^lut_scale_stream$'    $K/occupancy_limited.py
ncu_sample no_tensor_cores           '^sgemm_smem_tiled$'    $K/no_tensor_cores.py
ncu_sample dram_bandwidth_bound      '^stream_triad$'        $K/dram_bandwidth_bound.py
ncu_sample tensor_core_bound         'nvjet|xmma|gemm|cutlass' $K/tensor_core_bound.py
ncu_sample pair_transpose_before     '^transpose$'           $K/pair_transpose.py
ncu_sample pair_transpose_after      '^transpose$'           $K/pair_transpose.py --after
ncu_sample pair_smem_column_sum_before '^smem_column_sum$'   $K/pair_smem_column_sum.py
ncu_sample pair_smem_column_sum_after  '^smem_column_sum$'   $K/pair_smem_column_sum.py --after
ncu_sample long_kernel_one_line      '^fused_epilogue$'     $K/long_kernel_one_line.py
# Triton (Python line info kept by default) and PyTorch eager samples (issue 14)
ncu_sample triton_fp32_ieee_dot      'matmul_fp32_ieee'      $K/triton_fp32_ieee_dot.py
ncu_sample triton_bf16_dot           'matmul_bf16'           $K/triton_bf16_dot.py
ncu_sample torch_permute_copy        'elementwise_kernel'    $K/torch_permute_copy.py

# CSV exports of two reports (for kprof's CSV loader)
for name in uncoalesced_global_access shared_bank_conflicts; do
  want "$name" || continue
  [ -s "ncu/$name.ncu-rep" ] || continue
  capture_sh "$name:csv-raw" "ncu/$name.raw.csv" \
    "ncu --import ncu/$name.ncu-rep --csv --page raw > ncu/$name.raw.csv"
  capture_sh "$name:csv-details" "ncu/$name.details.csv" \
    "ncu --import ncu/$name.ncu-rep --csv --page details > ncu/$name.details.csv"
done

# Every report is kept gzip-compressed (NAME.ncu-rep.gz; kprof reads it as it is): ~7x smaller, and the
# working tree that travels to the GPU is capped at 64 MiB. Compressed after the CSV exports, which read
# the plain reports; the `gzip -9 -n` is recorded in the report's command.
for f in ncu/*.ncu-rep; do
  [ -s "$f" ] || continue
  gzip -9 -n -f "$f" && sed -i "s#^$f\t\(.*\)\$#$f.gz\t\1 \&\& gzip -9 -n $f#" commands.tsv
done

# ---------------------------------------------------------------- timeline samples
# timeline_sample: nsys captures only the steady state (the program brackets it with
# cudaProfilerStart/Stop); timeline_whole_sample: nsys captures the whole process (no capture range).
# The torch.profiler trace comes from a second run of the same program (CUPTI has one owner).
NSYS=(nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none --capture-range=cudaProfilerApi
      --capture-range-end=stop -f true)
timeline_sample() {  # timeline_sample NAME 'EXTRA NSYS FLAGS' PROGRAM [ARGS...]
  local name=$1 extra=$2; shift 2
  want "$name" || return 0
  local -a ex=()
  [ -n "$extra" ] && read -r -a ex <<< "$extra"
  if ! capture "$name:nsys" "timeline/$name.nsys-rep" "${NSYS[@]}" ${ex[@]+"${ex[@]}"} -o "timeline/$name" \
      python3 "$@" --mode nsys; then
    log "retrying $name without --capture-range (whole program captured)"
    capture "$name:nsys-whole" "timeline/$name.nsys-rep" nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none \
      -f true ${ex[@]+"${ex[@]}"} -o "timeline/$name" python3 "$@" --mode nsys
  fi
  if [ -s "timeline/$name.nsys-rep" ]; then
    capture "$name:sqlite" "timeline/$name.sqlite" nsys export --type sqlite -o "timeline/$name.sqlite" \
      "timeline/$name.nsys-rep" && gz_sqlite "$name"
  fi
  capture "$name:torch" "timeline/$name.json.gz" python3 "$@" --mode torch --trace "timeline/$name.json.gz"
}
# The issue-13 samples keep their .sqlite export gzip-compressed (kprof reads .sqlite.gz; a whole-process
# export is ~2 MB raw, ~0.6 MB compressed, and the working tree that travels to the GPU is capped at 64 MiB).
SQLITE_GZ=" host_compute_bound pinned_unoverlapped_copies whole_process_launch_bound teardown_after_loop "
gz_sqlite() {  # gz_sqlite NAME: gzip timeline/NAME.sqlite when NAME is in SQLITE_GZ, and record it
  local name=$1 f="timeline/$1.sqlite"
  [[ "$SQLITE_GZ" == *" $name "* ]] && [ -s "$f" ] || return 0
  gzip -9 -n -f "$f" && sed -i "s#^$f\t\(.*\)\$#$f.gz\t\1 \&\& gzip -9 -n $f#" commands.tsv
}
timeline_whole_sample() {  # timeline_whole_sample NAME PROGRAM [ARGS...]: the WHOLE process, no capture range
  local name=$1; shift
  want "$name" || return 0
  capture "$name:nsys" "timeline/$name.nsys-rep" nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none \
    -f true -o "timeline/$name" python3 "$@" --mode nsys
  if [ -s "timeline/$name.nsys-rep" ]; then
    capture "$name:sqlite" "timeline/$name.sqlite" nsys export --type sqlite -o "timeline/$name.sqlite" \
      "timeline/$name.nsys-rep" && gz_sqlite "$name"
  fi
  capture "$name:torch" "timeline/$name.json.gz" python3 "$@" --mode torch --trace "timeline/$name.json.gz"
}
T=workloads/timeline
timeline_sample host_launch_bound "" $T/host_launch_bound.py
timeline_sample sync_bound        "" $T/sync_bound.py
timeline_sample transfer_bound    "" $T/transfer_bound.py
timeline_sample gpu_bound         "" $T/gpu_bound.py
timeline_sample pair_graph_before "" $T/pair_graph.py
timeline_sample pair_graph_after  "--cuda-graph-trace=graph" $T/pair_graph.py --graph
timeline_sample host_compute_bound "" $T/host_compute_bound.py
timeline_sample pinned_unoverlapped_copies "" $T/pinned_unoverlapped_copies.py
# whole-process captures (issue 13): start-up and teardown are in the capture
timeline_whole_sample whole_process_launch_bound $T/whole_process_launch_bound.py
timeline_whole_sample teardown_after_loop $T/teardown_after_loop.py

# ---------------------------------------------------------------- pack for the trip back
log "files:"
ls -l ncu timeline
du -sh ncu timeline
if [ ${#ONLY[@]} -gt 0 ]; then
  # A partial run must not replace the full run's records when unpacked: ship them under other
  # names; make_manifest.py lays them over commands.tsv / versions.json and removes them.
  mv commands.tsv commands.partial.tsv; mv versions.json versions.partial.json; rm -f versions.txt
fi
python3 - "$DEST" <<'PY'
# Greedy packing into tarballs of at most ~15 MB (uncompressed) each: the device returns at most
# 8 files of 16 MB. Paths inside are relative to data/samples.
import os, sys, tarfile
dest = sys.argv[1]
files = ["versions.txt", "versions.json", "commands.tsv", "commands.partial.tsv", "versions.partial.json"]
for d in ("ncu", "timeline"):
    files += [os.path.join(d, f) for f in sorted(os.listdir(d))]
files = [f for f in files if os.path.isfile(f)]
limit, groups = 15 * 2**20, []
for f in sorted(files, key=os.path.getsize, reverse=True):
    size = os.path.getsize(f)
    for g in groups:
        if g[0] + size <= limit:
            g[0] += size; g[1].append(f); break
    else:
        groups.append([size, [f]])
for i, (size, members) in enumerate(groups, 1):
    path = os.path.join(dest, f"samples_{i}.tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for f in sorted(members):
            t.add(f)
    print(f"{path}: {len(members)} files, {size} bytes raw, {os.path.getsize(path)} bytes packed")
if len(groups) > 7:
    print("WARNING: more than 7 tarballs; not all will come back")
PY

log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"
  printf '  %s\n' "${FAILED[@]}"
  exit 1
fi
log "all captures succeeded"
