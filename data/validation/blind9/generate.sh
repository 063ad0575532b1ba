#!/usr/bin/env bash
# Capture the blind9 blind validation gallery (data/validation/blind9) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu for nsys):
#   run(command="source .gpu/env.sh; set -o pipefail; GEN_BUDGET_S=200 GEN_HARD_S=265 bash data/validation/blind9/generate.sh 2>&1 | tee $OUT/blind9.log | tail -c 11000",
#       carry=[".gpu"], timeout_s=300)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind9_files.tar -C <scratch>   and keep the files labels.json lists.
# How the stored gallery was made (README.md): call 1 = the command above with no calib.json in the repo (calib.py ran;
# K1's ncu reports and plain timings are from it; its nsys captures ran with nsys's default OS-runtime thresholds, were
# too large and were discarded); call 2 = the same with ids (the nsys captures + the plain runner only, reusing
# workloads/blind9/calib.json):
#   GEN_BUDGET_S=130 GEN_HARD_S=180 bash data/validation/blind9/generate.sh p1_sync_pairs_before p1_sync_pairs_after \
#     p2_mask_before p2_where_after s1_item_branch p4_d2h_pageable_after p3_null_b s2_mask_index s3_gemm_item_end runner
#
# Adapted from ../blind6/generate.sh. Order: versions; calib.py (picks the programs' sizes on this GPU and
# writes workloads/blind9/calib.json, unless the repo already holds one: then that one is reused, so a
# regeneration runs the same sizes); the nsys whole-process captures (-t cuda,nvtx,osrt; exported to
# SQLite in the background at nice 19); the two ncu --set full one-launch captures of K1; then, once the
# exports are done (a quiet host), the plain multi-process timings (plain_runner.py) and K1's plain
# timings; pack.
# OS-runtime tracing: --osrt-threshold=10000 --osrt-backtrace-threshold=1000000000 (calls shorter than
# 10 us are not recorded, no backtraces): with nsys's defaults (1 us, backtraces over 80 us) the ~10,000-16,000
# stat/open/read calls of `import torch` and their backtraces took 170-240 KB gzip'd per capture (call 1 of
# this gallery), which its 1.0 MB budget cannot hold. A probe capture of `python3 -c pass` checks the options
# first; if nsys rejects them, the captures run with -t cuda,nvtx (no OS-runtime trace; logged).
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every step is killed at M seconds, so the
# packing always happens. Arguments: optional ids to redo only those. Everything runs in a scratch folder
# laid out like data/validation (workloads/blind9/, blind9/), so the commands in commands.tsv are exact
# relative to it. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind9}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind9" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/blind9" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind9/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
W=workloads/blind9
O=blind9
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
  local left=$((HARD - (SECONDS - T_START) - 20))
  [ $left -gt 90 ] && left=90
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

# ---------------------------------------------------------------- versions
python3 - > $O/versions.json 2> $O/versions.err <<'PY'
import datetime, json, subprocess, sys
def out(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"
smi = out("nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem", "--format=csv,noheader").splitlines()
f = ([s.strip() for s in smi[0].split(",")] + ["", "", "", ""])[:4] if smi else ["", "", "", ""]
v = {"generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
     "gpu": {"name": f[0], "driver": f[1], "clocks_at_start": {"sm": f[2], "mem": f[3]}},
     "tools": {"ncu": " ".join(l for l in out("ncu", "--version").splitlines() if "Version" in l),
               "nsys": out("nsys", "--version"),
               "nvcc": out("nvcc", "--version").splitlines()[-1:],
               "python": sys.version.split()[0]}}
import cupy, torch
v["tools"].update({"torch": torch.__version__, "torch_cuda": torch.version.cuda,
                   "cupy": cupy.__version__, "cuda_runtime_cupy": cupy.cuda.runtime.runtimeGetVersion()})
print(json.dumps(v, indent=2))
PY
cat $O/versions.json

# ---------------------------------------------------------------- calibration (sizes for this GPU)
if [ -s "$W/calib.json" ]; then
  log "reusing the repo's $W/calib.json"
else
  log "calib.py"
  timeout 60 python3 $W/calib.py > $O/calib.log 2>&1 || { FAILED+=("calib (rc=$?): defaults used"); rm -f $W/calib.json; }
  cat $O/calib.log | tail -n 40
fi
[ -s "$W/calib.json" ] && cp $W/calib.json $O/calib.json

# ---------------------------------------------------------------- nsys whole-process captures
NSYS_X=(--osrt-threshold=10000 --osrt-backtrace-threshold=1000000000)
TRACE=cuda,nvtx,osrt
nsys profile --help 2>&1 | grep -i -E "osrt" | head -n 8
probe() { rm -f /tmp/b9_probe.nsys-rep; nsys profile -t "$TRACE" -s none --cpuctxsw=none "$@" -f true -o /tmp/b9_probe \
  python3 -c "pass" > $O/nsys_probe.log 2>&1 && [ -s /tmp/b9_probe.nsys-rep ]; }
if probe "${NSYS_X[@]}"; then log "nsys accepts ${NSYS_X[*]}"
elif NSYS_X=(--osrt-threshold=10000); probe "${NSYS_X[@]}"; then log "nsys accepts only ${NSYS_X[*]}"
else NSYS_X=(); TRACE=cuda,nvtx; log "nsys rejects the OS-runtime thresholds: captures WITHOUT osrt (-t $TRACE), see README"; fi
nsysc() {  # nsysc ID PROGRAM: whole-process nsys capture, exported to SQLite in the background
  local id=$1
  want "$id" || return 0
  capture "$id" "$O/$id.nsys-rep" nsys profile -t "$TRACE" -s none --cpuctxsw=none "${NSYS_X[@]}" \
    -o "$O/$id" python3 "$W/$2" || return 1
  record "$O/$id.sqlite" nsys export --type sqlite -o "$O/$id.sqlite" "$O/$id.nsys-rep"
  ( nice -n 19 timeout 150 nsys export --type sqlite -o "$O/$id.sqlite" "$O/$id.nsys-rep" > "$O/$id.export.log" 2>&1 \
      && gzip -9 -n -f "$O/$id.sqlite" && echo "exported $id" ) &
  BG+=($!)
}
nsysc p1_sync_pairs_before p1_sync_pairs_before.py
nsysc p1_sync_pairs_after  p1_sync_pairs_after.py
nsysc p2_mask_before       p2_mask_before.py
nsysc p2_where_after       p2_where_after.py
nsysc s1_item_branch       s1_item_branch.py
nsysc p4_d2h_pageable_after p4_d2h_pageable_after.py
nsysc p3_null_b            p1_sync_pairs_after.py
nsysc s2_mask_index        s2_mask_index.py
nsysc s3_gemm_item_end     s3_gemm_item_end.py

# ---------------------------------------------------------------- ncu one-launch captures (K1)
FULL=(ncu --set full --import-source yes --clock-control none)
k1() {  # k1 ID KERNEL VARIANT: the 4th launch of KERNEL in `k1_copy.py VARIANT`
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" -k "regex:^$2\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$1" python3 $W/k1_copy.py "$3"
}
k1 k1_copy_strided_v1   copy_strided_v1   v1
k1 k1_copy_coalesced_v2 copy_coalesced_v2 v2

# ---------------------------------------------------------------- plain timings (no profiler), on a quiet host
log "waiting for the nsys exports"
for p in "${BG[@]}"; do wait "$p"; done
cat $O/*.export.log 2>/dev/null | grep -v -E "^$" | tail -n 8
plain() {  # plain ID SECONDS CMD...: append CMD's output to plain_timings.txt
  local id=$1 lim=$2; shift 2
  want "$id" || return 0
  local left=$((HARD - (SECONDS - T_START) - 12))
  [ $left -gt "$lim" ] && left=$lim
  [ $left -ge 10 ] || { echo "plain $id skipped (GEN_HARD_S)" >> $O/plain_timings.txt; FAILED+=("plain $id (skipped)"); return 0; }
  echo "== plain $id: (cd $W && $*)" >> $O/plain_timings.txt
  log "plain $id (timeout ${left}s)"
  (cd $W && timeout "$left" "$@") >> $O/plain_timings.txt 2>&1 || FAILED+=("plain $id (rc=$?)")
}
: > $O/plain_timings.txt
[ -s "$O/calib.json" ] && { echo "== calib.py (sizes used by every program): $(python3 -c "import json;d=json.load(open('$O/calib.json'));print({k:v for k,v in d.items() if k!='candidates'})")"; grep -E "^(p1|p2|p4|s1) " $O/calib.log 2>/dev/null; } >> $O/plain_timings.txt
plain k1     30 python3 k1_copy.py --plain
plain runner 120 python3 plain_runner.py --rounds 5 --single-rounds 3
grep -v -E "^\{" $O/plain_timings.txt | tail -n 40

# ---------------------------------------------------------------- pack
log "packing"
ls -l $O
for f in $O/*.ncu-rep; do
  [ -e "$f" ] || continue
  b=${f%.ncu-rep}
  ncu --import "$f" --csv --page raw > "$b.raw.csv" 2> /dev/null && gzip -9 -n -f "$b.raw.csv"
  printf '%s\t%s\n' "$b.raw.csv" "ncu --import $f --csv --page raw > $b.raw.csv" >> $O/commands.tsv
  gzip -9 -n -c "$f" > "$f.gz"
  rm -f "$f"
done
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind9_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json calib.json plain_timings*.txt 2>/dev/null)
tar -czf "$DEST/blind9_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
(cd $O && ls -l *.gz)
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
