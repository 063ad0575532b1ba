#!/usr/bin/env bash
# Capture the blind8 blind validation gallery (data/validation/blind8) in ONE run on the H200.
#
# From the repo root, through the device tool:
#   run(command="set -o pipefail; GEN_BUDGET_S=230 GEN_HARD_S=300 bash data/validation/blind8/generate.sh 2>&1 | tee $OUT/blind8.log | tail -c 11000",
#       timeout_s=330)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind8_files.tar -C data/validation/blind8
# The kept files came from two calls: the one above (119 s of command time on a fresh machine), then a redo of three
# workloads whose sizes changed in kernels.py (45 s):
#   run(command="set -o pipefail; GEN_BUDGET_S=70 GEN_HARD_S=110 bash data/validation/blind8/generate.sh plain cuda_spill_cap cuda_local_index cuda_atomic_loop 2>&1 | tee $OUT/blind8_redo.log | tail -c 9000",
#       timeout_s=130)
# (a redo writes commands.partial.tsv and plain_timings.partial.txt; merge them by hand).
#
# Adapted from ../blind6/generate.sh (kernels only: no nsys, no Kineto). Order: versions; plain timings of every
# workload and its control (no profiler; this also fills CuPy's kernel cache for the captures); then the ncu
# captures one at a time, most important construct first; pack (each report gzip -9 -n). GEN_BUDGET_S=N: start no
# capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds (each capture's timeout is
# min(60, M - now)), so the packing always happens. Arguments: optional ids to redo only those (their plain
# timings are then skipped unless "plain" is among the arguments). Everything runs in a scratch folder laid out
# like data/validation (workloads/blind8/, blind8/), so the commands in commands.tsv are exact relative to it and
# the source embedded in the reports reads /tmp/kprof_val_blind8/workloads/blind8/*.cu. One failing capture does
# not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind8}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind8" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/blind8" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind8/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
W=workloads/blind8
O=blind8
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
  local left=$((HARD - (SECONDS - T_START)))
  [ $left -gt 60 ] && left=60
  if [ $left -lt 10 ]; then FAILED+=("$id (skipped: GEN_HARD_S=$HARD)"); log "SKIP $id"; return 1; fi
  log "BEGIN $id (timeout ${left}s)"
  local t0=$SECONDS rc
  timeout "$left" "$@" > "$O/$id.log" 2>&1
  rc=$?
  tail -n 3 "$O/$id.log"
  if [ $rc -ne 0 ] || [ ! -s "$out" ]; then
    FAILED+=("$id (rc=$rc)"); log "FAIL $id rc=$rc"; tail -n 25 "$O/$id.log"; return 1
  fi
  record "$out" "$@"
  log "OK $id: $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

FULL=(ncu --set full --import-source yes --clock-control none)
cuda() {  # cuda ID WORKLOAD KERNEL: --set full capture of the 4th launch of KERNEL in `kernels.py WORKLOAD`
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" -k "regex:^$3\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$1" python3 $W/kernels.py "$2"
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
import cupy
v["tools"].update({"cupy": cupy.__version__, "cuda_runtime_cupy": cupy.cuda.runtime.runtimeGetVersion()})
try:
    v["tools"]["nvrtc_cupy"] = list(cupy.cuda.nvrtc.getVersion())
except Exception as e:  # noqa: BLE001
    v["tools"]["nvrtc_cupy"] = f"unavailable: {e}"
print(json.dumps(v, indent=2))
PY
cat $O/versions.json

# ---------------------------------------------------------------- the captures: ID WORKLOAD KERNEL, most important first
CAPS="cuda_idiv_runtime idiv_index idiv_index
cuda_div_tid div_tid div_tid
cuda_div_data div_data div_data
cuda_spill_cap spill_cap spill_cap
cuda_fp64_literal fp64_literal fp64_literal
cuda_local_index local_index local_index
cuda_atomic_loop atomic_loop atomic_loop
cuda_sync_loop sync_loop sync_loop
cuda_alias_reload alias_reload alias_reload
cuda_sinf_large sinf_large sinf_large
cuda_idx64 idx64 idx64
cuda_half_convert half_convert half_convert
cuda_pred_load pred_load pred_load"

# ---------------------------------------------------------------- plain timings (no profiler)
: > $O/plain_timings.txt
if [ ${#ONLY[@]} -eq 0 ] || want plain; then
  log "plain timings"
  NAMES=$(cd $W && python3 kernels.py --list)
  if [ ${#ONLY[@]} -gt 0 ]; then  # a redo: time only the workloads (and their controls) of the ids asked for
    KEEP=""
    while read -r id wl _; do want "$id" && KEEP+=" $wl"; done <<< "$CAPS"
    NAMES=$(for nm in $NAMES; do for wl in $KEEP; do [ "${nm%%@*}" = "$wl" ] && echo "$nm"; done; done)
  fi
  echo "== plain: python3 kernels.py --plain $(echo $NAMES)" >> $O/plain_timings.txt
  (cd $W && timeout 120 python3 kernels.py --plain $NAMES) >> $O/plain_timings.txt 2>&1 || FAILED+=("plain (rc=$?)")
  cat $O/plain_timings.txt
fi

# ---------------------------------------------------------------- captures, most important first
while read -r id wl kn; do cuda "$id" "$wl" "$kn"; done <<< "$CAPS"

# ---------------------------------------------------------------- pack
log "packing"
ls -l $O
for f in $O/*.ncu-rep; do
  [ -e "$f" ] || continue
  gzip -9 -n -f "$f"
done
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind8_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings*.txt 2>/dev/null)
tar -czf "$DEST/blind8_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -cb $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
