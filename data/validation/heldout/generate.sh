#!/usr/bin/env bash
# Capture the HELD-OUT blind validation gallery (data/validation/heldout) in ONE run on the H200.
#
# From the repo root, through the device tool:
#   run(command="set -o pipefail; GEN_BUDGET_S=240 bash data/validation/heldout/generate.sh 2>&1 | tee $OUT/heldout.log",
#       timeout_s=400)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/heldout_files.tar -C data/validation/heldout
# The stored .gz files were then recompressed here with zopfli (identical decompressed bytes, ~8%
# smaller) to fit the gallery's size budget; see README.md.
#
# Order: versions; compile + check every CUDA C++ workload (in parallel: fills CuPy's kernel cache);
# the four PyTorch-profiler (Kineto) whole-process traces, one at a time with nothing else on the GPU;
# the Nsight Compute captures, most important first; plain (unprofiled) timings last; pack.
# GEN_BUDGET_S=N: start no trace or capture after N seconds (the plain timings are skipped too),
# so the packing still happens. Arguments: optional ids to redo only those.
# Everything runs in a scratch folder laid out like data/validation (workloads/heldout/, heldout/),
# so the commands recorded in commands.tsv are exact relative to it and the source embedded in the
# reports reads /tmp/kprof_val_heldout/workloads/heldout/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_heldout}
DEST=${OUT:-$WORK/out}
ONLY=("$@")

rm -rf "$WORK"
mkdir -p "$WORK/heldout" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/heldout" "$WORK/workloads/"
rm -rf "$WORK/workloads/heldout/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"
W=workloads/heldout
O=heldout
: > $O/commands.tsv
FAILED=()
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
  log "BEGIN $id"
  local t0=$SECONDS rc
  timeout 120 "$@" > "$O/$id.log" 2>&1
  rc=$?
  tail -n 5 "$O/$id.log"
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
    FAILED+=("$id (rc=$rc)"); log "FAIL $id rc=$rc"; tail -n 30 "$O/$id.log"; return 1
  fi
  record "$out" "$@"
  log "OK $id: $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

FULL=(ncu --set full --import-source yes --clock-control none)
cuda() {  # cuda ID KERNEL: --set full capture of the 4th launch of KERNEL in `kernels.py ID`
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" -k "regex:^$2\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$1" python3 $W/kernels.py "$1"
}
torchk() {  # torchk ID REGEX PROGRAM: first matching kernel inside cudaProfilerStart/Stop
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" --profile-from-start off -k "regex:$2" --launch-count 1 \
    -f -o "$O/$1" python3 "$W/$3"
}
kineto() {  # kineto ID PROGRAM: whole-process PyTorch profiler trace
  capture "$1" "$O/$1.json" python3 "$W/$2" --trace "$O/$1.json"
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
               "nvcc": out("nvcc", "--version").splitlines()[-1:],
               "python": sys.version.split()[0]}}
import cupy, torch, triton
v["tools"].update({"torch": torch.__version__, "torch_cuda": torch.version.cuda, "triton": triton.__version__,
                   "cupy": cupy.__version__, "cuda_runtime_cupy": cupy.cuda.runtime.runtimeGetVersion()})
print(json.dumps(v, indent=2))
PY
cat $O/versions.json

# ---------------------------------------------------------------- compile + check CUDA C++ (parallel)
if [ ${#ONLY[@]} -eq 0 ]; then
  log "compile + check (parallel)"
  (cd $W && python3 kernels.py --list) | xargs -P 6 -I{} sh -c "cd $W && python3 kernels.py {} > ../../$O/check_{}.log 2>&1 || echo 'CHECK FAIL {}'"
  grep -h "check:" $O/check_*.log
  log "compile done"
fi

# ---------------------------------------------------------------- Kineto whole-process traces
kineto loader_cpu_augment   loader_cpu_augment.py
kineto launch_small_ops     launch_small_ops.py
kineto item_pagerank        item_pagerank.py
kineto gpu_bound_mlp        gpu_bound_mlp.py

# ---------------------------------------------------------------- ncu captures, most important first
cuda   tree_reduce_sync   tree_reduce_sync
cuda   hist_smem_skewed   hist_smem
cuda   gather_sorted      gather_sorted
cuda   persistent_sum     persistent_sum
cuda   duffing_rk4        duffing_rk4
torchk triton_layernorm_masked layernorm_kernel triton_layernorm_masked.py
torchk cublas_bmm_tiny    'gemm|Gemm|nvjet|xmma|cutlass|sm90|sm80|Kernel' cublas_bmm_tiny.py
cuda   stencil5_smem      stencil5_smem
# torch_embedding_rows is NOT in the gallery: in the one capture run its regex '[Ii]ndex|embedding' matched
# no kernel (F.embedding launched at::native::vectorized_gather_kernel<16, long>), and no redo was made.
# torchk torch_embedding_rows 'vectorized_gather_kernel' torch_embedding_rows.py
cuda   mix64_rounds       mix64_rounds
cuda   axpy_bf16x2        axpy_bf16x2
cuda   rownorm_warp       rownorm_warp
torchk torch_cumsum_rows  '[Ss]can' torch_cumsum_rows.py
torchk torch_sort_rows    '[Ss]ort' torch_sort_rows.py
cuda   hist_smem_uniform  hist_smem

# ---------------------------------------------------------------- plain timings (no profiler), if time is left
if [ ${#ONLY[@]} -eq 0 ] && ! out_of_time; then
  log "plain timings"
  (cd $W && timeout 60 python3 kernels.py --all) > $O/plain_timings.txt 2>&1
  (cd $W && timeout 60 python3 _tsanity.py) >> $O/plain_timings.txt 2>&1
  cat $O/plain_timings.txt
fi

# ---------------------------------------------------------------- pack
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
# (the first run gzip'd versions.json too, and kept the library .ncu-rep files: both fixed since)
ls $O/*.ncu-rep $O/loader_cpu_augment.json $O/launch_small_ops.json $O/item_pagerank.json $O/gpu_bound_mlp.json \
  2>/dev/null | xargs -r -P 16 -n 1 gzip -9 -n -f
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv
tar -cf "$DEST/heldout_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings.txt 2>/dev/null)
tar -czf "$DEST/heldout_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -ch $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
