#!/usr/bin/env bash
# Capture the blind6 blind validation gallery (data/validation/blind6) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu for nsys):
#   run(command="source .gpu/env.sh; set -o pipefail; GEN_BUDGET_S=190 GEN_HARD_S=320 bash data/validation/blind6/generate.sh 2>&1 | tee $OUT/blind6.log | tail -c 11000",
#       carry=[".gpu"], timeout_s=350)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind6_files.tar -C data/validation/blind6
#
# Adapted from ../blind5/generate.sh. No parallel compile/check phase (the captures compile what they need;
# each capture's log holds its program's check line). Order: versions; the captures one at a time, most
# important first, mixing timelines and kernels: nsys whole-process captures (-t cuda,nvtx, exported to
# SQLite in the background), a PyTorch-profiler (Kineto) whole-process trace, ncu --set full kernel captures;
# plain timings (no profiler: each kernel and its control, each timeline program and its fix) if time is
# left; pack: every ncu report comes back both gzip'd and as `ncu --csv --page raw` (gzip'd); the gallery
# keeps the report for the CUDA C++ / Triton kernels (source lines) and the raw CSV for the library kernels
# (kind ncu-csv-raw), to stay under its 1.3 MB size budget.
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds
# (each capture's timeout is min(90, M - now)), so the packing always happens. Arguments: optional ids
# to redo only those. Everything runs in a scratch folder laid out like data/validation (workloads/blind6/,
# blind6/), so the commands in commands.tsv are exact relative to it and the source embedded in the
# reports reads /tmp/kprof_val_blind6/workloads/blind6/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind6}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind6" "$WORK/workloads" "$DEST"
cp -r "$REPO/data/validation/workloads/blind6" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind6/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR="$WORK/triton_cache"
W=workloads/blind6
O=blind6
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
cuda() {  # cuda ID WORKLOAD KERNEL: --set full capture of the 4th launch of KERNEL in `kernels.py WORKLOAD`
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" -k "regex:^$3\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$1" python3 $W/kernels.py "$2"
}
cuda   cuda_half_scalar    half_scalar  half_scale
torchk triton_skinny_bm128 skinny_mm triton_skinny.py bm128
nsysc  tl_alloc_churn      alloc_churn.py
torchk lib_bmm16           . libs.py bmm16
cuda   cuda_stencil_halo   stencil_halo stencil5
nsysc  tl_d2h_pageable     d2h_pageable.py
torchk lib_index_add_hot   . libs.py index_add_hot
kineto tl_overlap_pipeline overlap_pipeline.py
cuda   cuda_nbody_tile     nbody_tile   nbody_acc
torchk lib_upsample_nchw   . libs.py upsample_nchw
torchk lib_topk_small      . libs.py topk_small
nsysc  tl_recompile_shapes recompile_shapes.py

# ---------------------------------------------------------------- plain timings (no profiler), if time is left
plain() {  # plain ID SECONDS CMD...: append CMD's output to plain_timings.txt
  local id=$1 lim=$2; shift 2
  want "$id" || return 0
  local left=$((HARD - (SECONDS - T_START) - 15))
  [ $left -gt "$lim" ] && left=$lim
  [ $left -ge 10 ] || { echo "plain $id skipped (GEN_HARD_S)" >> $O/plain_timings.txt; return 0; }
  echo "== plain $id: $*" >> $O/plain_timings.txt
  (cd $W && timeout "$left" "$@") >> $O/plain_timings.txt 2>&1
}
: > $O/plain_timings.txt
log "plain timings"
plain cuda_half_scalar    40 python3 kernels.py --plain half_scalar half_v8 stencil_halo stencil_copy nbody_tile
plain triton_skinny_bm128 40 python3 triton_skinny.py --sanity bm128
plain lib_bmm16           60 python3 libs.py --sanity bmm16 topk_small index_add_hot upsample_nchw
plain tl_alloc_churn      40 python3 alloc_churn.py --time
plain tl_d2h_pageable     50 python3 d2h_pageable.py --time
plain tl_overlap_pipeline 40 python3 overlap_pipeline.py --time
plain tl_recompile_shapes 90 python3 recompile_shapes.py --time
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
  # every report: ncu's raw CSV export (every metric, no SASS/source) and the gzip'd report itself
  ncu --import "$f" --csv --page raw > "$b.raw.csv" 2> /dev/null && gzip -9 -n -f "$b.raw.csv"
  printf '%s\t%s\n' "$b.raw.csv" "ncu --import $f --csv --page raw > $b.raw.csv" >> $O/commands.tsv
  gzip -9 -n -c "$f" > "$f.gz"
  rm -f "$f"
done
mkdir -p $O/lib
mv $O/lib_*.ncu-rep.gz $O/lib/ 2>/dev/null
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind6_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings*.txt 2>/dev/null)
tar -cf "$DEST/blind6_libreps.tar" -C $O/lib . 2>/dev/null
tar -czf "$DEST/blind6_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -ch $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
