#!/usr/bin/env bash
# Capture the FINAL held-out blind validation gallery (data/validation/final) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu for nsys):
#   run(command="source .gpu/env.sh; set -o pipefail; GEN_BUDGET_S=175 GEN_HARD_S=205 bash data/validation/final/generate.sh 2>&1 | tee $OUT/final.log",
#       carry=[".gpu"], timeout_s=240)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/final_files.tar -C data/validation/final
# The stored .gz files were then recompressed here with zopfli (15 iterations; identical decompressed
# bytes, checked; 2.68 -> 2.50 MB), as ../heldout did.
#
# Order: versions; compile + check every workload in parallel (CuPy NVRTC cache, Triton cache, cuBLAS
# heuristics; the timings these checks print are NOT valid: the processes share the GPU); then the
# captures one at a time, most important first, mixing timelines and kernels so that a budget cut loses
# the least: nsys whole-process captures (exported to SQLite in the background while the next capture
# runs), PyTorch-profiler (Kineto) whole-process traces, ncu --set full kernel captures; plain timings of
# the CUDA C++ kernels last if time is left; pack.
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds
# (each capture's timeout is min(90, M - now)), so the packing always happens. Arguments: optional ids
# to redo only those. Everything runs in a scratch folder laid out like data/validation (workloads/final/,
# final/), so the commands in commands.tsv are exact relative to it and the source embedded in the
# reports reads /tmp/kprof_val_final/workloads/final/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_final}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/final" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/final" "$WORK/workloads/"
rm -rf "$WORK/workloads/final/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"
W=workloads/final
O=final
: > $O/commands.tsv
FAILED=()
BG=()
T_START=$SECONDS
log() { echo "[$(date +%H:%M:%S) +$((SECONDS - T_START))s] $*"; }

want() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local s
  for s in "${ONLY[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}
out_of_time() { [ -n "${GEN_BUDGET_S:-}" ] && [ $((SECONDS - T_START)) -ge "$GEN_BUDGET_S" ]; }

record() {  # record OUTFILE CMD...: the exact (shell-quoted) command that made OUTFILE
  local out=$1; shift
  local cmd="" a
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
  done
  printf '%s\t%s\n' "$out" "${cmd% }" >> $O/commands.tsv
}

capture() {  # capture ID OUTFILE CMD...
  local id=$1 out=$2; shift 2
  want "$id" || return 0
  if out_of_time; then FAILED+=("$id (skipped: GEN_BUDGET_S=$GEN_BUDGET_S reached)"); log "SKIP $id"; return 1; fi
  local left=$((HARD - (SECONDS - T_START)))
  [ $left -gt 90 ] && left=90
  if [ $left -lt 10 ]; then FAILED+=("$id (skipped: GEN_HARD_S=$HARD)"); log "SKIP $id"; return 1; fi
  log "BEGIN $id (timeout ${left}s)"
  local t0=$SECONDS rc
  timeout "$left" "$@" > "$O/$id.log" 2>&1
  rc=$?
  tail -n 4 "$O/$id.log"
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
    FAILED+=("$id (rc=$rc)"); log "FAIL $id rc=$rc"; tail -n 25 "$O/$id.log"; return 1
  fi
  record "$out" "$@"
  log "OK $id: $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

FULL=(ncu --set full --import-source yes --clock-control none)
cuda() {  # cuda ID KERNEL: --set full capture of the 4th launch of KERNEL in `kernels.py ID`
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" -k "regex:^$2\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$1" python3 $W/kernels.py "$1"
}
torchk() {  # torchk ID REGEX PROGRAM [ARGS]: first matching kernel inside cudaProfilerStart/Stop
  local id=$1 rx=$2; shift 2
  capture "$id" "$O/$id.ncu-rep" "${FULL[@]}" --profile-from-start off -k "regex:$rx" --launch-count 1 \
    -f -o "$O/$id" python3 "$W/$@"
}
kineto() {  # kineto ID PROGRAM: whole-process PyTorch profiler trace
  capture "$1" "$O/$1.json" python3 "$W/$2" --trace "$O/$1.json" && gzip -9 -n -f "$O/$1.json"
}
nsysc() {  # nsysc ID PROGRAM: whole-process nsys capture, exported to SQLite in the background
  local id=$1
  capture "$id" "$O/$id.nsys-rep" nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none -o "$O/$id" \
    python3 "$W/$2" || return 1
  record "$O/$id.sqlite" nsys export --type sqlite -o "$O/$id.sqlite" "$O/$id.nsys-rep"
  ( timeout 120 nsys export --type sqlite -o "$O/$id.sqlite" "$O/$id.nsys-rep" > "$O/$id.export.log" 2>&1 \
      && gzip -9 -n -f "$O/$id.sqlite" && echo "exported $id" ) &
  BG+=($!)
}

# ---------------------------------------------------------------- versions
python3 - > $O/versions.json 2> $O/versions.err <<'PY'
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
     "tools": {"ncu": " ".join(l for l in out("ncu", "--version").splitlines() if "Version" in l),
               "nsys": out("nsys", "--version"),
               "nvcc": out("nvcc", "--version").splitlines()[-1:],
               "python": sys.version.split()[0]}}
import cupy, torch, triton
v["tools"].update({"torch": torch.__version__, "torch_cuda": torch.version.cuda, "triton": triton.__version__,
                   "cupy": cupy.__version__, "cuda_runtime_cupy": cupy.cuda.runtime.runtimeGetVersion()})
print(json.dumps(v, indent=2))
PY
cat $O/versions.json

# ---------------------------------------------------------------- compile + check (parallel; timings invalid)
if [ ${#ONLY[@]} -eq 0 ]; then
  log "compile + check (parallel; the timings printed here are not valid: the GPU is shared)"
  {
    (cd $W && python3 kernels.py --list) | sed 's/^/kernels.py /'
    echo "triton_transpose.py"; echo "torch_layer_norm.py"
    echo "cublas_fp16.py 4095 4097 4093"; echo "cublas_fp16.py 4096 4096 4096"
  } | xargs -P 10 -I{} sh -c "cd $W && timeout 60 python3 {} > \"../../$O/check_\$(echo '{}' | tr ' ./' '___').log\" 2>&1 || echo 'CHECK FAIL {}'"
  grep -h "check:" $O/check_*.log
  log "compile + check done"
fi

# ---------------------------------------------------------------- captures, most important first
nsysc  tokenize_feed        tokenize_feed.py
kineto pageable_batches     pageable_batches.py
cuda   matvec_cols          matvec_cols
cuda   sort_cols_1024       sort_cols_1024
cuda   class_sum_atomic     class_sum_atomic
cuda   scale_vec4_offset1   scale_vec4
torchk cublas_fp16_odd      'gemm|Gemm|nvjet|xmma|cutlass|sm90|sm80|Kernel' cublas_fp16.py 4095 4097 4093
nsysc  sync_each_gemm       sync_each_gemm.py
kineto conv_gpu_bound       conv_gpu_bound.py
cuda   matvec_rows          matvec_rows
torchk triton_transpose     transpose_kernel triton_transpose.py
torchk torch_layer_norm     'layer_norm' torch_layer_norm.py
torchk cublas_fp16_aligned  'gemm|Gemm|nvjet|xmma|cutlass|sm90|sm80|Kernel' cublas_fp16.py 4096 4096 4096

# ---------------------------------------------------------------- plain timings (no profiler), if time is left
if [ ${#ONLY[@]} -eq 0 ] && ! out_of_time; then
  log "plain timings"
  (cd $W && timeout 30 python3 kernels.py --all) > $O/plain_timings.txt 2>&1
  cat $O/plain_timings.txt
fi

# ---------------------------------------------------------------- pack
log "waiting for the nsys exports"
for p in "${BG[@]}"; do wait "$p"; done
cat $O/*.export.log 2>/dev/null | tail -n 6
log "packing"
ls -l $O
for f in $O/*.ncu-rep; do
  [ -e "$f" ] || continue
  b=${f%.ncu-rep}
  case "$(basename "$b")" in
    # PyTorch's and cuBLAS's reports embed the library's whole module (0.4-4 MB gzip'd): only ncu's raw
    # CSV export is kept for them (kind ncu-csv-raw: every metric, no SASS/source)
    torch_*|cublas_*)
      ncu --import "$f" --csv --page raw > "$b.raw.csv" 2> /dev/null && gzip -9 -n -f "$b.raw.csv" && rm -f "$f"
      printf '%s\t%s\n' "$b.raw.csv" "ncu --import $f --csv --page raw > $b.raw.csv" >> $O/commands.tsv ;;
  esac
done
ls $O/*.ncu-rep 2>/dev/null | xargs -r -P 16 -n 1 gzip -9 -n -f
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv
tar -cf "$DEST/final_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings.txt 2>/dev/null)
tar -czf "$DEST/final_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -ch $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
