#!/usr/bin/env bash
# Regenerate the multi-rank samples (issue 9) in ONE run on the 2-GPU machine (nvidia-h200-x2):
#   run(kind="nvidia-h200-x2", carry=[".gpu"], timeout_s=600,
#       command="source .gpu/env.sh; set -o pipefail; bash data/samples/generate_multirank.sh 2>&1 | tee $OUT/log")
# then here: tar -xzf <files_at>/multirank.tar.gz -C data/samples && python3 data/samples/make_manifest.py
#
# For each variant (ddp: balanced; ddp_straggler: rank 1 does ~4 ms extra GPU work per step) it makes,
# per rank, an nsys capture exported to .sqlite (the .nsys-rep is not kept, to stay small) and a
# PyTorch profiler trace (.json.gz). One process per GPU, started by hand with the torch.distributed
# environment variables, so each rank gets its own capture.
set -uo pipefail
SAMPLES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SAMPLES_DIR/../.." && pwd)
if ! command -v nsys >/dev/null 2>&1 && [ -f "$REPO/.gpu/env.sh" ]; then source "$REPO/.gpu/env.sh"; fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
WORK=${KPROF_SAMPLES_WORK:-/tmp/kprof_multirank}
DEST=${OUT:-$WORK/out}
rm -rf "$WORK"; mkdir -p "$WORK/multirank" "$DEST"
cp -r "$SAMPLES_DIR/workloads" "$WORK/"
cd "$WORK" || exit 1
WORLD=2
PROG=workloads/multirank/ddp_train.py
: > commands.tsv
FAILED=()
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee versions.txt
nsys --version | tee -a versions.txt
python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())" | tee -a versions.txt

launch() {  # launch VARIANT MODE EXTRA_ARGS...: one process per rank, wait for all
  local variant=$1 mode=$2; shift 2
  local port=$((29500 + RANDOM % 1000)) pids=() r
  for ((r = 0; r < WORLD; r++)); do
    local cmd=(python3 "$PROG" --mode "$mode" "$@")
    if [ "$mode" = nsys ]; then
      cmd=(nsys profile -t cuda,nvtx -s none --cpuctxsw=none --capture-range=cudaProfilerApi
           --capture-range-end=stop -f true -o "multirank/${variant}_rank${r}" "${cmd[@]}")
    else
      cmd+=(--trace "multirank/${variant}_rank{rank}.json.gz")
    fi
    printf '%s\t%s\n' "multirank/${variant}_rank${r}.$([ "$mode" = nsys ] && echo sqlite || echo json.gz)" \
      "RANK=$r LOCAL_RANK=$r WORLD_SIZE=$WORLD MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ${cmd[*]}" >> commands.tsv
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$WORLD MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 300 "${cmd[@]}" &
    pids+=($!)
  done
  local ok=0
  for p in "${pids[@]}"; do wait "$p" || ok=1; done
  [ $ok -eq 0 ] || FAILED+=("$variant $mode")
}

for variant in ddp ddp_straggler; do
  extra=()
  [ "$variant" = ddp_straggler ] && extra=(--slow-rank 1 --slow-ms 4)
  echo "== $variant nsys"; launch "$variant" nsys "${extra[@]}"
  for ((r = 0; r < WORLD; r++)); do
    f="multirank/${variant}_rank${r}"
    [ -s "$f.nsys-rep" ] && nsys export --type sqlite --force-overwrite true -o "$f.sqlite" "$f.nsys-rep" >/dev/null \
      || FAILED+=("export $f")
    rm -f "$f.nsys-rep"
  done
  echo "== $variant torch"; launch "$variant" torch "${extra[@]}"
done
cp commands.tsv versions.txt multirank/
ls -la multirank
tar -czf "$DEST/multirank.tar.gz" multirank
if [ ${#FAILED[@]} -gt 0 ]; then printf 'FAILED: %s\n' "${FAILED[@]}"; exit 1; fi
echo "all multirank captures OK"
