#!/usr/bin/env bash
# Capture the CUDA C++ validation gallery (group `cuda`) in ONE run on the GPU machine (one H200).
#
# From the repo root, through the device tool:
#   run(command="set -o pipefail; GEN_BUDGET_S=240 bash data/validation/cuda/generate.sh 2>&1 | tee $OUT/log_cuda",
#       timeout_s=330)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/cuda_validation.tar -C data/validation/cuda
#
# Arguments: optional capture ids (e.g. `triad_f4 list_walk`) to redo only those.
# GEN_BUDGET_S=N (optional): skip the remaining captures after N seconds so packing still happens.
# Every capture runs in a scratch folder laid out like data/validation (workloads/cuda/, cuda/), so the
# commands recorded in commands.tsv are exact relative to it, and the kernel source embedded in the
# reports reads /tmp/kprof_val_cuda/workloads/cuda/*.cu. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_cuda}
DEST=${OUT:-$WORK/out}
ONLY=("$@")

rm -rf "$WORK"
mkdir -p "$WORK/cuda" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/cuda" "$WORK/workloads/"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
: > cuda/commands.tsv
FAILED=()
T_START=$SECONDS
log() { echo "[$(date +%H:%M:%S) +$((SECONDS - T_START))s] $*"; }

want() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local s
  for s in "${ONLY[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

record() {  # record OUTFILE CMD...: the exact (shell-quoted) command that made OUTFILE
  local out=$1; shift
  local cmd="" a
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
  done
  printf '%s\t%s\n' "$out" "${cmd% }" >> cuda/commands.tsv
}

capture() {  # capture ID OUTFILE CMD...
  local id=$1 out=$2; shift 2
  want "$id" || return 0
  if [ -n "${GEN_BUDGET_S:-}" ] && [ $((SECONDS - T_START)) -ge "$GEN_BUDGET_S" ]; then
    FAILED+=("$id (skipped: GEN_BUDGET_S=$GEN_BUDGET_S reached)"); log "SKIP $id"; return 1
  fi
  log "BEGIN $id"
  local t0=$SECONDS rc
  timeout 120 "$@" > "cuda/$id.log" 2>&1
  rc=$?
  tail -n 4 "cuda/$id.log"
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
    FAILED+=("$id (rc=$rc)"); log "FAIL $id rc=$rc"; tail -n 30 "cuda/$id.log"; return 1
  fi
  record "$out" "$@"
  log "OK $id: $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

G=workloads/cuda/gallery.py
FULL=(ncu --set full --import-source yes --clock-control none)
full() {  # full ID KERNEL WORKLOAD: --set full capture of the 4th launch of KERNEL
  capture "$1" "cuda/$1.ncu-rep" "${FULL[@]}" -k "regex:^$2\$" --launch-skip 3 --launch-count 1 \
    -f -o "cuda/$1" python3 "$G" "$3"
}

# ---------------------------------------------------------------- versions
{
  echo "### ncu --version"; ncu --version
  echo "### nvidia-smi"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "### nvcc --version"; nvcc --version | tail -n 2
  python3 -c 'import sys, cupy; print("python", sys.version.split()[0]); print("cupy", cupy.__version__, "cuda runtime", cupy.cuda.runtime.runtimeGetVersion())'
} > cuda/versions.txt 2>&1
cat cuda/versions.txt

# ---------------------------------------------------------------- compile + sanity run (no profiler)
# Compile every kernel in parallel (fills CuPy's kernel cache, so the captures do not pay NVRTC), then one
# sequential run of all workloads for plain (unprofiled) timings of the 4th launch.
if [ ${#ONLY[@]} -eq 0 ]; then
  log "compile (parallel)"
  python3 "$G" --list | xargs -P 8 -I{} sh -c "python3 $G {} > cuda/sanity_{}.log 2>&1 || echo 'SANITY FAIL {}'"
  log "sanity run (sequential, plain timings)"
  timeout 120 python3 "$G" --all 2>&1 | tee cuda/plain_timings.txt | grep -v '^$'
  log "sanity done"
fi

# ---------------------------------------------------------------- --set full captures (issue 12 classes first)
full mma_small_grid          mma_bf16_loop           mma_small_grid
full triad_f4                triad_f4                triad_f4
full triad_tail              triad_tail              triad_tail
full horner_poly             horner_poly             horner_poly
full special_functions       special_functions       special_functions
full fma_chain               fma_chain               fma_chain
full sgemm_smem              sgemm_smem              sgemm_smem
full sgemm_regtile           sgemm_regtile           sgemm_regtile
full list_walk               list_walk               list_walk
full hash_probe              hash_probe              hash_probe
full column_read             column_read             column_read
full fused_epilogue          fused_epilogue          fused_epilogue
full smem_transpose_conflict smem_transpose          smem_transpose_conflict

# partial reports (issue 12 point 6): the same kernels with fewer sections / a custom metric list
capture smem_transpose_conflict_partial cuda/smem_transpose_conflict_partial.ncu-rep \
  ncu --section MemoryWorkloadAnalysis_Tables --section SourceCounters --import-source yes --clock-control none \
  -k 'regex:^smem_transpose$' --launch-skip 3 --launch-count 1 -f -o cuda/smem_transpose_conflict_partial \
  python3 "$G" smem_transpose_conflict
capture column_read_basic cuda/column_read_basic.ncu-rep \
  ncu --set basic --clock-control none -k 'regex:^column_read$' --launch-skip 3 --launch-count 1 \
  -f -o cuda/column_read_basic python3 "$G" column_read
capture digit_histogram_metrics cuda/digit_histogram_metrics.ncu-rep \
  ncu --metrics l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_local_op_st.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,smsp__sass_inst_executed_op_global_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,gpu__time_duration.sum \
  --clock-control none -k 'regex:^digit_histogram$' --launch-skip 3 --launch-count 1 \
  -f -o cuda/digit_histogram_metrics python3 "$G" digit_histogram

full smem_transpose_padded   smem_transpose          smem_transpose_padded
full digit_histogram         digit_histogram         digit_histogram
full strided_copy_6d         strided_copy_6d         strided_copy_6d
full block_fma_work          block_fma_work          block_fma_work
full sum_atomic_each         sum_atomic_each         sum_atomic_each
full even_odd_paths          even_odd_paths          even_odd_paths
full chunk_reverse           chunk_reverse           chunk_reverse
full sgemm_naive             sgemm_naive             sgemm_naive
full particle_charge_density particle_charge_density particle_charge_density
full dilated_sum             dilated_sum             dilated_sum
full triad_f2                triad_f2                triad_f2
full sum_atomic_per_warp     sum_atomic_per_warp     sum_atomic_per_warp
full mma_full_grid           mma_bf16_loop           mma_full_grid

# ---------------------------------------------------------------- pack: gzip -9 each report, one tar back
log "packing"
ls -l cuda/*.ncu-rep 2>/dev/null
ls cuda/*.ncu-rep 2>/dev/null | xargs -r -P 16 -n 1 gzip -9 -f
[ ${#ONLY[@]} -gt 0 ] && mv cuda/commands.tsv cuda/commands.partial.tsv
tar -cf "$DEST/cuda_validation.tar" -C cuda $(cd cuda && ls *.ncu-rep.gz *.tsv versions.txt plain_timings.txt 2>/dev/null)
tar -czf "$DEST/cuda_logs.tar.gz" -C cuda $(cd cuda && ls *.log 2>/dev/null)
ls -l "$DEST"
du -ch cuda/*.ncu-rep.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
