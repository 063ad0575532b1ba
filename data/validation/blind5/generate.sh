#!/usr/bin/env bash
# Capture the blind5 blind validation gallery (data/validation/blind5) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu for nsys):
#   run(command="source .gpu/env.sh; set -o pipefail; GEN_BUDGET_S=250 GEN_HARD_S=330 bash data/validation/blind5/generate.sh 2>&1 | tee $OUT/blind5.log | tail -c 11000",
#       carry=[".gpu"], timeout_s=380)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind5_files.tar -C data/validation/blind5
#
# Adapted from ../blind4/generate.sh. No parallel compile/check phase (the captures compile what they need;
# each capture's log holds its program's check line). Order: versions; the captures one at a time, most
# important first, mixing timelines and kernels: nsys whole-process captures (-t cuda,nvtx, exported to
# SQLite in the background), a PyTorch-profiler (Kineto) whole-process trace, ncu --set full kernel captures;
# plain timings (no profiler: each kernel and its control, each timeline program and its fix) if time is
# left; pack. A report whose gzip is over 450 KB (library kernels embed their module) is replaced by
# `ncu --csv --page raw` (kind ncu-csv-raw), gzip'd.
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds
# (each capture's timeout is min(90, M - now)), so the packing always happens. Arguments: optional ids
# to redo only those. Everything runs in a scratch folder laid out like data/validation (workloads/blind5/,
# blind5/), so the commands in commands.tsv are exact relative to it and the source embedded in the
# reports reads /tmp/kprof_val_blind5/workloads/blind5/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind5}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind5" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/blind5" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind5/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"
W=workloads/blind5
O=blind5
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
  want "$1" || return 0
  capture "$1" "$O/$1.json" python3 "$W/$2" --trace "$O/$1.json" && gzip -9 -n -f "$O/$1.json"
}
nsysc() {  # nsysc ID PROGRAM: whole-process nsys capture, exported to SQLite in the background
  local id=$1
  want "$id" || return 0
  capture "$id" "$O/$id.nsys-rep" nsys profile -t cuda,nvtx -s none --cpuctxsw=none -o "$O/$id" \
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


# ---------------------------------------------------------------- captures, most important first
cumsum_capture() {  # the scan kernel of torch.cumsum (not CUB's init kernel): lookahead regex, else skip 1 in the window
  want lib_cumsum || return 0
  torchk lib_cumsum '^(?!.*Init).*[Ss]can' cumsum_cub.py && return 0
  FAILED=("${FAILED[@]:0:${#FAILED[@]}-1}")
  capture lib_cumsum "$O/lib_cumsum.ncu-rep" "${FULL[@]}" --profile-from-start off -k regex:. --launch-skip 1 \
    --launch-count 1 -f -o "$O/lib_cumsum" python3 "$W/cumsum_cub.py"
}
nsysc  adam_foreach_off   adam_foreach_off.py
cuda   hist_skewed        hist256
cuda   spmv_scalar        spmv_csr_scalar
torchk triton_affine_flat affine_flat triton_affine.py flat
kineto numpy_preproc      numpy_preproc.py
cuda   mix12_regs         mix12
torchk sdpa_flash         'flash|fmha|attention|attn|sdpa|cudnn|sm90' sdpa_flash.py
nsysc  periodic_log_sync  periodic_log_sync.py
cuda   hash_rounds        hash_rounds
torchk depthwise_nchw     'depthwise|conv|Conv' depthwise_conv.py nchw
cumsum_capture

# ---------------------------------------------------------------- plain timings (no profiler), if time is left
plain() {  # plain ID CMD...: append CMD's output to plain_timings.txt
  local id=$1; shift
  want "$id" || return 0
  [ $((SECONDS - T_START)) -lt $((HARD - 20)) ] || { echo "plain $id skipped (GEN_HARD_S)" >> $O/plain_timings.txt; return 0; }
  (cd $W && timeout 45 "$@") >> $O/plain_timings.txt 2>&1
}
: > $O/plain_timings.txt
log "plain timings"
plain hist_skewed        python3 kernels.py --plain hist_skewed hist_uniform spmv_scalar spmv_vector mix12_regs mix12_const hash_rounds
plain triton_affine_flat python3 triton_affine.py flat --sanity
plain triton_affine_flat python3 triton_affine.py rows --sanity
plain depthwise_nchw     python3 depthwise_conv.py nchw --sanity
plain depthwise_nchw     python3 depthwise_conv.py cl --sanity
plain sdpa_flash         python3 sdpa_flash.py --sanity
plain lib_cumsum         python3 cumsum_cub.py --sanity
plain adam_foreach_off   python3 adam_foreach_off.py --time
plain numpy_preproc      python3 numpy_preproc.py --time
plain periodic_log_sync  python3 periodic_log_sync.py --time
plain periodic_log_sync  python3 periodic_log_sync.py --time --no-log
grep -v -E "UserWarning|_warn_once" $O/plain_timings.txt

# ---------------------------------------------------------------- pack
log "waiting for the nsys exports"
for p in "${BG[@]}"; do wait "$p"; done
cat $O/*.export.log 2>/dev/null | tail -n 6
log "packing"
ls -l $O
for f in $O/*.ncu-rep; do
  [ -e "$f" ] || continue
  b=${f%.ncu-rep}
  gzip -9 -n -c "$f" > "$f.gz"
  if [ "$(stat -c %s "$f.gz")" -gt 450000 ]; then
    # the report embeds a big library module: keep ncu's raw CSV export instead (every metric, no SASS/source)
    ncu --import "$f" --csv --page raw > "$b.raw.csv" 2> /dev/null && gzip -9 -n -f "$b.raw.csv" && rm -f "$f.gz"
    printf '%s\t%s\n' "$b.raw.csv" "ncu --import $f --csv --page raw > $b.raw.csv" >> $O/commands.tsv
  fi
  rm -f "$f"
done
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind5_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings*.txt 2>/dev/null)
tar -czf "$DEST/blind5_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -ch $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
