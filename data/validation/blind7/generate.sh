#!/usr/bin/env bash
# Capture the blind7 blind validation gallery (data/validation/blind7) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu for nsys):
#   run(command="source .gpu/env.sh; set -o pipefail; GEN_BUDGET_S=200 GEN_HARD_S=270 bash data/validation/blind7/generate.sh 2>&1 | tee $OUT/blind7.log | tail -c 11000",
#       carry=[".gpu"], timeout_s=300)
# then, here (files_at is the folder the reply names):
#   tar -xf <files_at>/blind7_files.tar -C <scratch>   (keep the files labels.json lists)
# The gallery's files came from one call with GEN_BUDGET_S=155 GEN_HARD_S=220 (216 s of command time on a fresh
# machine): at that budget the last capture, tl_compile_steps, was skipped; 200/270 should leave room for it.
#
# Adapted from ../blind6/generate.sh. Order: versions; the captures one at a time, most important first:
# ncu --set full kernel captures of the CUDA C++ kernels and their twins, the cuBLAS FP32 GEMM, the four
# partial captures (a section or a metric subset, never --set full), nsys whole-process captures
# (-t cuda,nvtx,osrt, exported to SQLite in the background); a SASS summary of every .cu file (cuobjdump);
# plain timings (no profiler) if time is left; pack: every ncu report comes back gzip'd and as
# `ncu --csv --page raw` (gzip'd).
# GEN_BUDGET_S=N: start no capture after N seconds. GEN_HARD_S=M: every capture is killed at M seconds
# (each capture's timeout is min(90, M - now)), so the packing always happens. Arguments: optional ids to
# redo only those. Everything runs in a scratch folder laid out like data/validation (workloads/blind7/,
# blind7/), so the commands in commands.tsv are exact relative to it and the source embedded in the reports
# reads /tmp/kprof_val_blind7/workloads/blind7/*. One failing capture does not stop the others.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${KPROF_VAL_WORK:-/tmp/kprof_val_blind7}
DEST=${OUT:-$WORK/out}
ONLY=("$@")
HARD=${GEN_HARD_S:-100000}

rm -rf "$WORK"
mkdir -p "$WORK/blind7" "$WORK/workloads" "$WORK/build" "$DEST"
cp -r "$REPO/data/validation/workloads/blind7" "$WORK/workloads/"
rm -rf "$WORK/workloads/blind7/__pycache__"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
W=workloads/blind7
O=blind7
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

# the torch.compile timelines' OS-runtime rows are trimmed after the export (size budget; see trim_osrt.py)
TRIM_IDS="tl_compile_oneshot tl_compile_steps"
BASE=(ncu --import-source yes --clock-control none)
FULL=("${BASE[@]}" --set full)
cuda() {  # cuda ID WORKLOAD KERNEL: --set full capture of the 4th launch of KERNEL in `kernels.py WORKLOAD`
  capture "$1" "$O/$1.ncu-rep" "${FULL[@]}" -k "regex:^$3\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$1" python3 $W/kernels.py "$2"
}
part() {  # part ID WORKLOAD KERNEL NCU-SUBSET-ARGS...: the same launch, captured with a subset only
  local id=$1 wl=$2 k=$3; shift 3
  capture "$id" "$O/$id.ncu-rep" "${BASE[@]}" "$@" -k "regex:^$k\$" --launch-skip 3 --launch-count 1 \
    -f -o "$O/$id" python3 $W/kernels.py "$wl"
}
torchk() {  # torchk ID REGEX PROGRAM [ARGS]: first matching kernel inside cudaProfilerStart/Stop
  local id=$1 rx=$2; shift 2
  capture "$id" "$O/$id.ncu-rep" "${FULL[@]}" --profile-from-start off -k "regex:$rx" --launch-count 1 \
    -f -o "$O/$id" python3 "$W/$@"
}
nsysc() {  # nsysc ID [VAR=VALUE ...] CMD...: whole-process nsys capture (env VAR=VALUE nsys profile ... CMD),
           # exported to SQLite in the background
  local id=$1; shift
  want "$id" || return 0
  local envs=()
  while [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
  capture "$id" "$O/$id.nsys-rep" env "${envs[@]}" nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none \
    -o "$O/$id" "$@" || return 1
  record "$O/$id.sqlite" nsys export --type sqlite -o "$O/$id.sqlite" "$O/$id.nsys-rep"
  local trim=true
  case " $TRIM_IDS " in *" $id "*)
    trim="python3 $HERE/trim_osrt.py $O/$id.sqlite 10000"
    printf '%s\t%s\n' "$O/$id.sqlite" "$trim (after the export)" >> $O/commands.tsv ;;
  esac
  ( timeout 150 nsys export --type sqlite -o "$O/$id.sqlite" "$O/$id.nsys-rep" > "$O/$id.export.log" 2>&1 \
      && $trim >> "$O/$id.export.log" 2>&1 && gzip -9 -n -f "$O/$id.sqlite" && echo "exported $id" ) &
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
# the one-shot CUDA C++ program, built here (nvcc 13.0 of the image; runtime linked statically)
( nvcc -arch=sm_90 -lineinfo -o build/managed_touch $W/managed_touch.cu > $O/build_managed.log 2>&1 \
    && echo "built managed_touch" ) &
BUILD=$!

# ---------------------------------------------------------------- captures, most important first
cuda   cuda_sgemm_tiled16 sgemm16     sgemm_tiled16
cuda   cuda_sgemm_reg8x8  sgemm_reg   sgemm_reg8x8
cuda   cuda_rmsnorm_2pass rms2pass    rmsnorm_2pass
cuda   cuda_rmsnorm_1pass rms1pass    rmsnorm_1pass
cuda   cuda_reduce_tree   reduce_tree reduce_tree
cuda   cuda_reduce_shfl   reduce_shfl reduce_shfl
torchk lib_sgemm_fp32     'gemm|xmma|cutlass|nvjet|sgemm' libs.py sgemm8192
part   part_bank_conflict32 transpose32 transpose32 --section MemoryWorkloadAnalysis_Tables
SECTOR_METRICS=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
if ! part part_sector25 stride4 strided_scale --metrics "$SECTOR_METRICS"; then  # fallback: the plainest names
  want part_sector25 && FAILED=("${FAILED[@]:0:${#FAILED[@]}-1}")
  part part_sector25 stride4 strided_scale --metrics \
    l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,dram__bytes_read.sum,gpu__time_duration.sum,launch__grid_size,launch__block_size
fi
part   part_branch_div    branch_div  branch_div --section SourceCounters
part   part_daxpy_sol     daxpy       daxpy      --section SpeedOfLight
wait $BUILD
nsysc  tl_compile_oneshot TORCHINDUCTOR_CACHE_DIR=$WORK/cache_a TRITON_CACHE_DIR=$WORK/cache_a/triton \
       python3 $W/compile_mlp.py
nsysc  tl_managed_oneshot build/managed_touch
nsysc  tl_compile_steps   TORCHINDUCTOR_CACHE_DIR=$WORK/cache_c TRITON_CACHE_DIR=$WORK/cache_c/triton \
       python3 $W/compile_mlp.py --steps 200

# ---------------------------------------------------------------- SASS summary (instruction mix of each .cu)
if [ ${#ONLY[@]} -eq 0 ]; then
  log "SASS summary"
  SP=()
  for f in $W/*.cu; do
    b=$(basename $f .cu); [ "$b" = managed_touch ] && continue
    ( nvcc -arch=sm_90 -cubin -lineinfo -DD=16384 -Xptxas -v -o build/$b.cubin $f > build/$b.ptxas 2>&1 \
        && cuobjdump --dump-sass build/$b.cubin > build/$b.sass 2>/dev/null ) &
    SP+=($!)
  done
  for p in "${SP[@]}"; do wait "$p"; done
  for f in $W/*.cu; do
    b=$(basename $f .cu); [ -s build/$b.sass ] || continue
    printf '%s: %s; SASS ops: %s\n' "$b" "$(grep -o 'Used [0-9]* registers' build/$b.ptxas | head -1)" \
      "$(grep -E '/\*[0-9a-f]{4}\*/' build/$b.sass | sed -E 's#^\s*/\*[0-9a-f]+\*/\s*##; s#^@!?U?P[0-9T]+\s+##' \
         | awk '{print $1}' | sed 's/;//' | sort | uniq -c | sort -rn | head -14 | awk '{printf "%s=%s ", $2, $1}')"
  done > $O/sass_summary.txt 2>&1
  cat $O/sass_summary.txt
fi

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
plain cuda_sgemm_tiled16 60 python3 kernels.py --plain sgemm16 sgemm_reg rms2pass rms1pass reduce_tree reduce_shfl
plain lib_sgemm_fp32     60 python3 libs.py --sanity sgemm8192 sgemm4096
plain part_bank_conflict32 45 python3 kernels.py --plain transpose32 transpose33 stride4 stride2 stride1 branch_div branch_sorted daxpy
plain tl_managed_oneshot 20 bash -c "../../build/managed_touch; ../../build/managed_touch --device"
# the timeline programs: eager one-shot (no compile), and the compiled programs again on the caches their
# capture left (warm: Inductor's FX-graph and Triton caches hit)
plain tl_compile_oneshot 40 bash -c "python3 compile_mlp.py --eager; TORCHINDUCTOR_CACHE_DIR=$WORK/cache_a TRITON_CACHE_DIR=$WORK/cache_a/triton python3 compile_mlp.py"
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
  # every report: ncu's raw CSV export (every metric it holds, no SASS/source) and the gzip'd report itself
  ncu --import "$f" --csv --page raw > "$b.raw.csv" 2> /dev/null && gzip -9 -n -f "$b.raw.csv"
  printf '%s\t%s\n' "$b.raw.csv" "ncu --import $f --csv --page raw > $b.raw.csv" >> $O/commands.tsv
  gzip -9 -n -c "$f" > "$f.gz"
  rm -f "$f"
done
mkdir -p $O/lib
mv $O/lib_*.ncu-rep.gz $O/lib/ 2>/dev/null
[ ${#ONLY[@]} -gt 0 ] && mv $O/commands.tsv $O/commands.partial.tsv && mv $O/plain_timings.txt $O/plain_timings.partial.txt
tar -cf "$DEST/blind7_files.tar" -C $O $(cd $O && ls *.gz *.tsv versions.json plain_timings*.txt sass_summary.txt 2>/dev/null)
tar -cf "$DEST/blind7_libreps.tar" -C $O/lib . 2>/dev/null
tar -czf "$DEST/blind7_logs.tar.gz" -C $O $(cd $O && ls *.log versions.err 2>/dev/null)
ls -l "$DEST"
du -ch $O/*.gz 2>/dev/null | tail -n 1
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"; printf '  %s\n' "${FAILED[@]}"; exit 1
fi
log "all captures succeeded"
