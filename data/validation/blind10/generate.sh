#!/usr/bin/env bash
# Capture the blind10 blind validation gallery (data/validation/blind10) in ONE run on the H200.
#
# From the repo root, through the device tool:
#   run(command="set -o pipefail; GEN_BUDGET_S=150 GEN_HARD_S=240 bash data/validation/blind10/generate.sh 2>&1 | tee $OUT/blind10.log | tail -c 11000",
#       timeout_s=260)      (107 s of command time on a fresh machine)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind10_files.tar -C <scratch>   and keep the files labels.json lists
#
# Adapted from ../blind6/generate.sh (kernels only: no nsys, no Kineto). Order: versions; the eight
# ncu --set full --import-source yes captures one at a time, in the gallery's priority order; plain
# timings (no profiler: each kernel and its controls) if time is left; pack: every report comes back
# gzip'd and as `ncu --csv --page raw` (gzip'd), and its gzip size is printed with the running total
# (the gallery keeps full reports in priority order while they fit its 0.50 MB budget, raw CSVs after:
# see README.md for which).
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds
# (each capture's timeout is min(60, M - now)), so the packing always happens. Arguments: optional ids
# to redo only those. Everything runs in a scratch folder laid out like data/validation (workloads/blind10/,
# blind10/), so the commands in commands.tsv are exact relative to it and the source embedded in the
# reports reads /tmp/kprof_val_blind10/workloads/blind10/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind10}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind10" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/blind10" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind10/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"
W=workloads/blind10
O=blind10
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
triton_k() {  # triton_k ID KERNEL PROGRAM NAME: first KERNEL launch inside cudaProfilerStart/Stop
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" --profile-from-start off -k "regex:^$2\$" --launch-count 1 \
    -f -o "$O/$1" python3 "$W/$3" "$4"
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

# ---------------------------------------------------------------- captures, in priority order
cuda     cuda_bucket_mod      bloom_mod    bloom_sig
cuda     cuda_lane_branch     lane_branch  rgb_tone
cuda     cuda_regcap_spill    reg_cap      dist_tile
cuda     cuda_fp64_acc        fp64_acc     feat_proj
cuda     cuda_atomic_bins     joint_hist   joint_hist
cuda     cuda_alias_reload    alias_acc    mix_apply
triton_k triton_runtime_div   causal_rowbias triton_rowbias.py causal_rowbias
cuda     cuda_size_t_loop     size_t_loop  pitch_copy

# ---------------------------------------------------------------- plain timings (no profiler), if time is left
plain() {  # plain ID SECONDS CMD...: append CMD's output to plain_timings.txt
  local id=$1 lim=$2; shift 2
  want "$id" || return 0
  local left=$((HARD - (SECONDS - T_START) - 20))
  [ $left -gt "$lim" ] && left=$lim
  [ $left -ge 10 ] || { echo "plain $id skipped (GEN_HARD_S)" >> $O/plain_timings.txt; return 0; }
  echo "== plain $id: $*" >> $O/plain_timings.txt
  (cd $W && timeout "$left" "$@") >> $O/plain_timings.txt 2>&1
}
: > $O/plain_timings.txt
log "plain timings"
plain cuda_all 60 python3 kernels.py --plain bloom_mod lane_branch reg_cap fp64_acc joint_hist alias_acc size_t_loop
plain triton_runtime_div 40 python3 triton_rowbias.py --sanity causal_rowbias
grep -v -E "UserWarning|_warn_once" $O/plain_timings.txt

# ---------------------------------------------------------------- pack
log "packing"
total=0
for id in cuda_bucket_mod cuda_lane_branch cuda_regcap_spill cuda_fp64_acc cuda_atomic_bins cuda_alias_reload \
          triton_runtime_div cuda_size_t_loop; do
  f=$O/$id.ncu-rep
  [ -e "$f" ] || continue
  ncu --import "$f" --csv --page raw > "$O/$id.raw.csv" 2> /dev/null && gzip -9 -n -f "$O/$id.raw.csv"
  printf '%s\t%s\n' "$O/$id.raw.csv" "ncu --import $f --csv --page raw > $O/$id.raw.csv" >> $O/commands.tsv
  gzip -9 -n -c "$f" > "$f.gz"
  sz=$(stat -c %s "$f.gz"); total=$((total + sz))
  echo "SIZE $id.ncu-rep.gz $sz bytes (raw csv $(stat -c %s "$O/$id.raw.csv.gz" 2>/dev/null) bytes); running total of reports $total bytes"
  rm -f "$f"
done
[ $total -gt 500000 ] && echo "SIZE total $total > 500000: the packing keeps full reports in priority order while they fit, raw CSVs for the rest"
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind10_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings*.txt 2>/dev/null)
tar -czf "$DEST/blind10_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
