#!/usr/bin/env bash
# Capture the blind4 blind validation gallery (data/validation/blind4) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu for nsys):
#   run(command="source .gpu/env.sh; set -o pipefail; GEN_BUDGET_S=330 GEN_HARD_S=390 bash data/validation/blind4/generate.sh 2>&1 | tee $OUT/blind4.log | tail -c 11000",
#       carry=[".gpu"], timeout_s=460)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind4_files.tar -C data/validation/blind4
#
# A copy of ../final/generate.sh with this gallery's workloads. Order: versions; compile + check every
# workload in parallel (CuPy NVRTC cache, Triton cache, Inductor FX-graph cache for the torch.compile
# programs, cuBLAS heuristics; the timings these checks print are NOT valid: the processes share the GPU);
# then the captures one at a time, most important first, mixing timelines and kernels so that a budget cut
# loses the least: nsys whole-process captures (exported to SQLite in the background while the next capture
# runs), a PyTorch-profiler (Kineto) whole-process trace, ncu --set full kernel captures; plain timings
# (the controls: FP32 Mish, a fitted shared-memory buffer, reversed row order, the good Triton config, the
# graph-break-free model, the loader alone) if time is left; pack.
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds
# (each capture's timeout is min(90, M - now)), so the packing always happens. Arguments: optional ids
# to redo only those. Everything runs in a scratch folder laid out like data/validation (workloads/blind4/,
# blind4/), so the commands in commands.tsv are exact relative to it and the source embedded in the
# reports reads /tmp/kprof_val_blind4/workloads/blind4/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind4}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind4" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/blind4" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind4/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"
W=workloads/blind4
O=blind4
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
  want "$id" || return 0
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
    echo "triton_mm.py poor"; echo "triton_mm.py good"; echo "scaled_mm_fp8.py"; echo "int_mm_int8.py"
    echo "compile_graph_break.py"; echo "compile_graph_break.py --fixed --time"; echo "per_sample_loop.py --time"
    echo "pinned_overlap.py"
  } | xargs -P 16 -I{} sh -c "cd $W && timeout 150 python3 {} > \"../../$O/check_\$(echo '{}' | tr ' ./-' '____').log\" 2>&1 || echo 'CHECK FAIL {}'"
  grep -h "check:" $O/check_*.log
  grep -h -E "Error|error:|Traceback" $O/check_*.log | head -n 20
  log "compile + check done"
fi

# ---------------------------------------------------------------- captures, most important first
nsysc  compile_graph_break  compile_graph_break.py
cuda   mish_fp64            mish_fp64
nsysc  pinned_overlap       pinned_overlap.py
cuda   poly_smem_lowocc     poly_eval
cuda   embag_lowocc         embag_sum
kineto loader_workers       loader_workers.py
cuda   causal_tail          causal_decay
cuda   embag_fit            embag_sum
torchk triton_mm_poor       matmul_kernel triton_mm.py poor
torchk lib_fp8_scaled_mm    'gemm|Gemm|nvjet|xmma|cutlass|sm90|sm89|Kernel' scaled_mm_fp8.py
cuda   poly_x8_lowocc       poly_eval_x8
kineto per_sample_loop      per_sample_loop.py
torchk lib_int8_int_mm      'gemm|Gemm|nvjet|xmma|cutlass|sm90|sm80|Kernel|imma|igemm' int_mm_int8.py
torchk triton_mm_good       matmul_kernel triton_mm.py good

# ---------------------------------------------------------------- plain timings (no profiler), if time is left
# one line per capture id: the control runs beside it (with ids given, only theirs)
plain() {  # plain ID CMD...: append CMD's output to plain_timings.txt
  local id=$1; shift
  want "$id" || return 0
  [ $((SECONDS - T_START)) -lt $((HARD - 25)) ] || { echo "plain $id skipped (GEN_HARD_S)" >> $O/plain_timings.txt; return 0; }
  (cd $W && timeout 40 "$@") >> $O/plain_timings.txt 2>&1
}
: > $O/plain_timings.txt
log "plain timings"
plain mish_fp64          python3 kernels.py --plain mish_fp64 mish_fp32
plain poly_smem_lowocc   python3 kernels.py --plain poly_smem_lowocc poly_smem_fit
plain poly_x8_lowocc     python3 kernels.py --plain poly_x8_lowocc poly_x8_fit
plain embag_lowocc       python3 kernels.py --plain embag_lowocc embag_fit
plain causal_tail        python3 kernels.py --plain causal_tail causal_reversed
plain triton_mm_poor     python3 triton_mm.py poor --sanity
plain triton_mm_good     python3 triton_mm.py good --sanity
plain lib_fp8_scaled_mm  python3 scaled_mm_fp8.py --sanity
plain lib_int8_int_mm    python3 int_mm_int8.py --sanity
plain compile_graph_break python3 compile_graph_break.py --time
plain compile_graph_break python3 compile_graph_break.py --time --fixed
plain per_sample_loop    python3 per_sample_loop.py --time
plain loader_workers     python3 loader_workers.py --loader-only
cat $O/plain_timings.txt

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
    # cuBLASLt's reports embed the library's whole module (0.4-4 MB gzip'd): only ncu's raw
    # CSV export is kept for them (kind ncu-csv-raw: every metric, no SASS/source)
    lib_*)
      ncu --import "$f" --csv --page raw > "$b.raw.csv" 2> /dev/null && gzip -9 -n -f "$b.raw.csv" && rm -f "$f"
      printf '%s\t%s\n' "$b.raw.csv" "ncu --import $f --csv --page raw > $b.raw.csv" >> $O/commands.tsv ;;
  esac
done
ls $O/*.ncu-rep 2>/dev/null | xargs -r -P 16 -n 1 gzip -9 -n -f
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind4_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings*.txt 2>/dev/null)
tar -czf "$DEST/blind4_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -ch $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
