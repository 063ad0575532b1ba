#!/usr/bin/env bash
# Regenerate data/validation/lib (group `lib`: Triton, PyTorch eager and library kernels) in ONE run
# on the GPU machine (one NVIDIA H200). From the repo root, through the device tool:
#   run(command="set -o pipefail; GEN_BUDGET_S=220 bash data/validation/lib/generate.sh 2>&1 | tee $OUT/lib.log",
#       timeout_s=400)
# then, here (files_at is the folder the reply names):
#   tar -xzf <files_at>/lib_validation.tar.gz -C .
# which lays down data/validation/lib/*.ncu-rep.gz, *.raw.csv.gz, commands.tsv, versions.json, sanity.log.
#
# Arguments: optional capture names to redo only those. GEN_BUDGET_S=N: skip captures after N
# seconds so that packing still happens. A failing capture does not stop the others.
#
# Captures run in a scratch folder laid out like the repo root (data/validation/workloads/lib/...),
# so the commands in commands.tsv are exact relative to the repo root, and the Python source paths
# embedded in the Triton reports read /tmp/kprof_validation/data/validation/workloads/lib/....
# Each program runs its operation 3 times (warm-up: Triton JIT, cuBLAS/cuDNN heuristics), then once
# between cudaProfilerStart/Stop; ncu --profile-from-start off -k regex:NAME --launch-count 1
# profiles the first matching kernel of that call.
set -uo pipefail

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SRC_DIR/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_validation}
DEST=${OUT:-$WORK/out}
ONLY=("$@")

rm -rf "$WORK"
mkdir -p "$WORK/data/validation/lib" "$WORK/data/validation/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/lib" "$WORK/data/validation/workloads/"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"   # never reuse kernels compiled from another path
W=data/validation/workloads/lib
O=data/validation/lib
: > "$O/commands.tsv"
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
  printf '%s\t%s\n' "$out" "${cmd% }" >> "$O/commands.tsv"
}

# cap NAME REGEX 'NCU SECTION FLAGS' PROGRAM [ARGS...]
cap() {
  local name=$1 regex=$2 flags=$3; shift 3
  want "$name" || return 0
  if [ -n "${GEN_BUDGET_S:-}" ] && [ $((SECONDS - T_START)) -ge "$GEN_BUDGET_S" ]; then
    FAILED+=("$name (skipped: GEN_BUDGET_S=$GEN_BUDGET_S reached)"); log "SKIP $name"; return 0
  fi
  local -a fl
  read -r -a fl <<< "$flags"
  local -a cmd=(ncu "${fl[@]}" --clock-control none --profile-from-start off -k "regex:$regex"
                --launch-count 1 -f -o "$O/$name" python3 "$@")
  log "BEGIN $name: ${cmd[*]}"
  local t0=$SECONDS rc
  timeout 120 "${cmd[@]}"
  rc=$?
  if [ $rc -ne 0 ] || [ ! -s "$O/$name.ncu-rep" ]; then
    FAILED+=("$name (rc=$rc)"); log "FAIL $name rc=$rc"; return 0
  fi
  record "$O/$name.ncu-rep" "${cmd[@]}"
  if [[ " $CSV_ONLY " == *" $name "* ]]; then
    # too large to keep (the library's whole module is embedded): keep ncu's raw CSV export instead
    ncu --import "$O/$name.ncu-rep" --csv --page raw > "$O/$name.raw.csv"
    printf '%s\t%s\n' "$O/$name.raw.csv" "ncu --import $O/$name.ncu-rep --csv --page raw > $O/$name.raw.csv" >> "$O/commands.tsv"
    gzip -9 -n -f "$O/$name.raw.csv"
    rm -f "$O/$name.ncu-rep"
    log "OK $name: $(stat -c %s "$O/$name.raw.csv.gz") bytes gz (raw CSV), $((SECONDS - t0)) s"
    return 0
  fi
  gzip -9 -n -f "$O/$name.ncu-rep"
  log "OK $name: $(stat -c %s "$O/$name.ncu-rep.gz") bytes gz, $((SECONDS - t0)) s"
}
# Reports of these embed a large library module (4.5 MB gzip'd for the cuBLAS SGEMM, 1.4-1.8 MB for
# the others): only their `ncu --csv --page raw` export is kept (kind ncu-csv-raw; no SASS/source).
CSV_ONLY="cublas_sgemm_fp32 cublas_gemm_tf32 cublas_dgemm_fp64 cudnn_conv_bf16 torch_sum_dim"

FULL="--set full --import-source yes"
GEMM='gemm|nvjet|xmma|cutlass|sm90|sm80|Kernel'
# most important first (the budget guard cuts from the end)
cap triton_matmul_fp32_ieee  matmul_fp32_ieee_kernel "$FULL" $W/triton_matmul_fp32_ieee.py
cap triton_matmul_bf16       matmul_bf16_kernel      "$FULL" $W/triton_matmul_bf16.py
cap cublas_sgemm_fp32        "$GEMM"                 "$FULL" $W/cublas_gemm.py fp32 4096 4096 4096
cap cublas_gemm_bf16_small   "$GEMM"                 "$FULL" $W/cublas_gemm.py bf16 512 512 1024
cap torch_permute_copy       elementwise_kernel      "$FULL" $W/torch_permute_copy.py
cap torch_index_select_random 'scatter_gather|index'                "$FULL" $W/torch_index_select_random.py
cap torch_softmax_few_rows   SoftMax                 "$FULL" $W/torch_softmax_few_rows.py
cap cublas_gemm_tf32         "$GEMM"                 "$FULL" $W/cublas_gemm.py tf32 4096 4096 4096
cap cublas_dgemm_fp64        "$GEMM"                 "$FULL" $W/cublas_gemm.py fp64 3072 3072 3072
cap cudnn_conv_bf16          'fprop|conv|implicit|xmma|cutlass|nvjet|gemm|sm90' "$FULL" $W/cudnn_conv_bf16.py
cap sdpa_flash_bf16          flash                   "$FULL" $W/sdpa_flash_bf16.py
cap triton_softmax           softmax_kernel          "$FULL" $W/triton_softmax.py
cap torch_add                elementwise             "$FULL" $W/torch_add.py
cap torch_sum_dim            reduce_kernel           "$FULL" $W/torch_sum_dim.py
cap cublas_gemm_bf16         "$GEMM"                 "$FULL" $W/cublas_gemm.py bf16 4096 4096 4096
cap triton_add_tiny_block    add_tiny_block_kernel   "$FULL" $W/triton_add_tiny_block.py
cap triton_matmul_bf16_tiny_tile matmul_bf16_kernel  "$FULL" $W/triton_matmul_bf16.py --config tiny
# partial reports (issue 12 point 6)
# (a cuBLAS SGEMM with --set basic was captured too, but its report is 3.9 MB gzip'd: not kept)
cap torch_add_sol_only       elementwise             "--section SpeedOfLight" $W/torch_add.py
PERMUTE_METRICS=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
cap torch_permute_copy_metrics elementwise_kernel    "--metrics $PERMUTE_METRICS" $W/torch_permute_copy.py

# ---------------------------------------------------------------- versions, then sanity (no profiler)
log "versions"
python3 - > "$O/versions.json" <<'PY'
import datetime, json, subprocess, sys
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"
smi = out("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader").splitlines()
name, driver = ([s.strip() for s in smi[0].split(",")] + ["", ""])[:2] if smi else ("", "")
v = {"generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
     "gpu": {"name": name, "driver": driver},
     "tools": {"ncu": [l for l in out("ncu", "--version").splitlines() if "Version" in l][-1:],
               "python": sys.version.split()[0]}}
import torch, triton
v["tools"]["torch"] = torch.__version__
v["tools"]["torch_cuda"] = torch.version.cuda
v["tools"]["cudnn"] = torch.backends.cudnn.version()
v["tools"]["triton"] = triton.__version__
print(json.dumps(v, indent=2))
PY
cat "$O/versions.json"
if [ ${#ONLY[@]} -eq 0 ] && { [ -z "${GEN_BUDGET_S:-}" ] || [ $((SECONDS - T_START)) -lt $((GEN_BUDGET_S + 40)) ]; }; then
  log "sanity"
  (cd $W && timeout 60 python3 _sanity.py) > "$O/sanity.log" 2>&1
  log "sanity rc=$?"
  cat "$O/sanity.log"
fi

log "files:"; ls -l "$O"
tar -czf "$DEST/lib_validation.tar.gz" "$O"
ls -l "$DEST/lib_validation.tar.gz"
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
