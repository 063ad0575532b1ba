#!/usr/bin/env bash
# Measure how much a kernel's duration varies between ncu replays, processes and launches on the H200,
# so that `kprof compare` can cite a measured noise threshold for durations taken under ncu.
# Run on the GPU machine from the repo root; writes ncu_noise.csv (kernel, process, launch, ns) to $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
WORK=/tmp/kprof_noise; rm -rf $WORK; mkdir -p $WORK; cp -r data/samples/workloads $WORK/
cd $WORK/workloads/kernels || exit 1
DEST=${OUT:-$WORK}
echo "kernel,process,launch,gpu__time_duration_ns" > "$DEST/ncu_noise.csv"
for spec in "dram_bandwidth_bound.py:stream_triad" "small_grid.py:few_blocks_reduce" \
            "pair_transpose.py:transpose" "no_tensor_cores.py:sgemm_smem_tiled"; do
  prog=${spec%%:*}; kern=${spec##*:}
  for proc in 1 2 3; do
    ncu --clock-control none --metrics gpu__time_duration.sum -k "regex:^${kern}$" --launch-skip 1 \
        --launch-count 3 --csv python3 "$prog" 2>/dev/null \
      | python3 -c "
import csv, sys
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith('\"'))]
hdr = rows[0]; i_id = hdr.index('ID'); i_v = hdr.index('Metric Value'); i_u = hdr.index('Metric Unit')
scale = {'ns': 1, 'nsecond': 1, 'us': 1e3, 'usecond': 1e3, 'ms': 1e6, 'msecond': 1e6}
for r in rows[1:]:
    print(f'$kern,$proc,{r[i_id]},{float(r[i_v].replace(\",\", \"\")) * scale.get(r[i_u], 1):.0f}')
" >> "$DEST/ncu_noise.csv"
  done
done
cat "$DEST/ncu_noise.csv"
