#!/usr/bin/env bash
# Capture the blind timeline validation gallery (data/validation/timeline) in ONE run on the H200.
#
# From the repo root, through the device tool (carry .gpu, which holds the nsys setup):
#   run(command="source .gpu/env.sh; set -o pipefail; bash data/validation/timeline/generate.sh 2>&1 | tee $OUT/validation_log",
#       carry=[".gpu"], timeout_s=400)
# then, here (files_at is the folder the reply names):
#   tar -xzf <files_at>/validation_timeline.tar.gz -C data/validation/timeline
#   python3 data/validation/timeline/measure.py            # the numbers the labels quote
#
# Arguments: optional entry names to redo only those (NAME: both captures; nsys:NAME or kineto:NAME: one). GEN_BUDGET_S=N (seconds from the start) or
# GEN_DEADLINE=EPOCH_SECONDS: start no capture after that, so the packing still happens.
# Captures run one at a time (one GPU, no other process on it) from a scratch folder laid out as
#   workloads/timeline/ = data/validation/workloads/timeline/, build/ (the two CUDA C++ programs),
#   profiles/ (what comes back),
# so the commands recorded in commands.tsv (and quoted in labels.json) are exact relative to it.
# nsys: whole process, no capture range: nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none
# (nsys's default --cuda-graph-trace=graph). The .nsys-rep is exported to .sqlite (in the background,
# while the next capture runs), gzip -9, and not kept. PyTorch profiler: a separate run of the same
# program with --mode torch (see workloads/timeline/_whole.py).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
if ! command -v nsys >/dev/null 2>&1 && [ -f "$REPO/.gpu/env.sh" ]; then
  source "$REPO/.gpu/env.sh"
fi
WORK=${KPROF_VALIDATION_WORK:-/tmp/kprof_validation_timeline}
DEST=${OUT:-$WORK/out}
ONLY=("$@")

rm -rf "$WORK"
mkdir -p "$WORK/workloads" "$WORK/profiles" "$WORK/build" "$DEST"
cp -r "$REPO/data/validation/workloads/timeline" "$WORK/workloads/"
cd "$WORK" || exit 1
export PYTHONUNBUFFERED=1
: > commands.tsv
FAILED=()
EXPORT_PIDS=()
T_START=$SECONDS

log() { echo "[$(date +%H:%M:%S) +$((SECONDS - T_START))s] $*"; }

want() {  # want NAME [KIND]: selected by no arguments, by NAME, or by KIND:NAME (nsys:x, kineto:x)
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local s
  for s in "${ONLY[@]}"; do [ "$s" = "$1" ] || [ "$s" = "${2:-}:$1" ] && return 0; done
  return 1
}

record() {  # record OUTFILE CMD...
  local out=$1; shift
  local cmd="" a
  for a in "$@"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then cmd+="$a "; else cmd+="'${a//\'/\'\\\'\'}' "; fi
  done
  printf '%s\t%s\n' "$out" "${cmd% }" >> commands.tsv
}

out_of_time() {
  if [ -n "${GEN_DEADLINE:-}" ] && [ "$(date +%s)" -ge "$GEN_DEADLINE" ]; then return 0; fi
  if [ -n "${GEN_BUDGET_S:-}" ] && [ $((SECONDS - T_START)) -ge "$GEN_BUDGET_S" ]; then return 0; fi
  return 1
}

capture() {  # capture LABEL OUTFILE LIMIT_S CMD...: run CMD under a time limit; keep OUTFILE if it appeared
  local label=$1 out=$2 limit=$3; shift 3
  if out_of_time; then
    FAILED+=("$label (skipped: time budget)")
    log "SKIP $label: time budget reached"
    return 1
  fi
  log "BEGIN $label: $*"
  local t0=$SECONDS rc
  timeout "$limit" "$@"
  rc=$?
  if [ ! -s "$out" ]; then
    FAILED+=("$label (rc=$rc, $out missing)")
    log "FAIL $label rc=$rc"
    return 1
  fi
  [ $rc -ne 0 ] && { FAILED+=("$label (rc=$rc, but $out was written: kept)"); log "WARN $label rc=$rc"; }
  record "$out" "$@"
  log "OK $label: $out $(stat -c %s "$out") bytes, $((SECONDS - t0)) s"
}

nsys_whole() {  # nsys_whole NAME LIMIT_S CMD...: whole-process nsys capture, export + gzip in the background
  local name=$1 limit=$2; shift 2
  want "$name" nsys || return 0
  capture "$name:nsys" "profiles/$name.nsys-rep" "$limit" \
    nsys profile -t cuda,nvtx,osrt -s none --cpuctxsw=none -f true -o "profiles/$name" "$@" || return 1
  record "profiles/$name.sqlite" nsys export --type sqlite -o "profiles/$name.sqlite" "profiles/$name.nsys-rep"
  (
    nsys export --type sqlite -o "profiles/$name.sqlite" "profiles/$name.nsys-rep" > "profiles/$name.export.log" 2>&1 \
      && [ -s "profiles/$name.sqlite" ] && gzip -9 -f "profiles/$name.sqlite" && rm -f "profiles/$name.nsys-rep"
  ) &
  EXPORT_PIDS+=("$!")
}

kineto() {  # kineto NAME LIMIT_S PROGRAM [ARGS...]: PyTorch profiler trace of a separate run
  local name=$1 limit=$2; shift 2
  want "$name" kineto || return 0
  capture "$name:torch" "profiles/$name.json.gz" "$limit" python3 "$@" --mode torch --trace "profiles/$name.json.gz"
}

# ---------------------------------------------------------------- versions + builds (in parallel)
log "versions and builds"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
W=workloads/timeline
python3 - > versions.json 2> versions.err <<'PY' &
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
     "tools": {"nsys": (out("nsys", "--version").splitlines() or [""])[-1],
               "nvcc": ([l for l in out("nvcc", "--version").splitlines() if "release" in l] or [""])[-1].strip(),
               "python": sys.version.split()[0]}}
for mod in ("torch", "triton", "cupy", "numpy"):
    try:
        v["tools"][mod] = __import__(mod).__version__
    except Exception as e:  # noqa: BLE001
        v["tools"][mod] = f"unavailable: {e}"
try:
    import torch
    v["tools"]["torch_cuda"] = torch.version.cuda
except Exception:  # noqa: BLE001
    pass
print(json.dumps(v, indent=2))
PY
VPID=$!
BUILD1=("$NVCC" -O2 -lineinfo -arch=sm_90 -o build/one_launch_cudamalloc "$W/one_launch_cudamalloc.cu")
BUILD2=("$NVCC" -O2 -lineinfo -arch=sm_90 -o build/teardown_after_gpu_loop "$W/teardown_after_gpu_loop.cu")
BUILD3=("$NVCC" -cubin -arch=sm_90 -o build/teardown_module.cubin "$W/teardown_module.cu")
if want one_launch_cudamalloc nsys || want teardown_after_gpu_loop nsys; then
  "${BUILD1[@]}" & B1=$!
  "${BUILD2[@]}" & B2=$!
  "${BUILD3[@]}" & B3=$!
  wait $B1 && record build/one_launch_cudamalloc "${BUILD1[@]}" || FAILED+=("build one_launch_cudamalloc")
  wait $B2 && record build/teardown_after_gpu_loop "${BUILD2[@]}" || FAILED+=("build teardown_after_gpu_loop")
  wait $B3 && record build/teardown_module.cubin "${BUILD3[@]}" || FAILED+=("build teardown_module.cubin")
fi
wait $VPID
cat versions.json versions.err

# ---------------------------------------------------------------- nsys, whole process (most important first)
nsys_whole startup_then_gpu_bound       60 python3 $W/startup_then_gpu_bound.py --mode nsys
nsys_whole python_verify_between_steps  60 python3 $W/python_verify_between_steps.py --mode nsys
nsys_whole item_each_step               60 python3 $W/item_each_step.py --mode nsys
nsys_whole item_readback_sync           60 python3 $W/item_readback_sync.py --mode nsys
nsys_whole pageable_copies              60 python3 $W/pageable_copies.py --mode nsys
nsys_whole pinned_copies_7pct           60 python3 $W/pinned_copies_7pct.py --mode nsys
nsys_whole busy73_host_gaps             60 python3 $W/busy73_host_gaps.py --mode nsys
nsys_whole one_launch_cudamalloc        30 build/one_launch_cudamalloc
nsys_whole teardown_after_gpu_loop      60 build/teardown_after_gpu_loop build/teardown_module.cubin
nsys_whole cuda_graph_replay            60 python3 $W/cuda_graph_replay.py --mode nsys
nsys_whole dataloader_numpy             60 python3 $W/dataloader_numpy.py --mode nsys
nsys_whole decode_launch_bound          60 python3 $W/decode_launch_bound.py --mode nsys
nsys_whole side_stream_serialized_copies 60 python3 $W/side_stream_serialized_copies.py --mode nsys
nsys_whole one_shot_inference           60 python3 $W/one_shot_inference.py --mode nsys
nsys_whole triton_autotune_then_loop    90 python3 $W/triton_autotune_then_loop.py --mode nsys

# ---------------------------------------------------------------- PyTorch profiler (separate runs)
kineto item_readback_sync          60 $W/item_readback_sync.py
kineto python_verify_between_steps 60 $W/python_verify_between_steps.py
kineto dataloader_numpy            60 $W/dataloader_numpy.py
kineto decode_launch_bound         60 $W/decode_launch_bound.py
kineto startup_then_gpu_bound      60 $W/startup_then_gpu_bound.py
kineto busy73_host_gaps            60 $W/busy73_host_gaps.py
kineto item_each_step              60 $W/item_each_step.py
kineto one_shot_inference          60 $W/one_shot_inference.py
kineto pinned_copies_7pct          60 $W/pinned_copies_7pct.py
kineto cuda_graph_replay           60 $W/cuda_graph_replay.py
kineto triton_autotune_then_loop   90 $W/triton_autotune_then_loop.py

# ---------------------------------------------------------------- pack
log "waiting for ${#EXPORT_PIDS[@]} exports"
for p in "${EXPORT_PIDS[@]}"; do wait "$p" || FAILED+=("an export (pid $p) failed"); done
ls -l profiles
tar -czf "$DEST/validation_timeline.tar.gz" commands.tsv versions.json \
  $(ls profiles/*.sqlite.gz profiles/*.json.gz profiles/*.export.log 2>/dev/null)
ls -l "$DEST"
log "done in $((SECONDS - T_START)) s"
if [ ${#FAILED[@]} -gt 0 ]; then
  log "FAILED (${#FAILED[@]}):"
  printf '  %s\n' "${FAILED[@]}"
  exit 1
fi
log "all captures succeeded"
