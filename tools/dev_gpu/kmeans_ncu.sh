#!/usr/bin/env bash
# Issue 44, item 2 on the GPU host: why the tensor pass (km_07, kmeans_tensor) takes 0.233 ms at
# N = 4,194,304, D = K = 32 and 0.200 ms at K = 8 (chapter 06's stage times, H100), against a
# read floor of 0.18 ms. Nsight Compute reads one pass at each K (the third launch, after two
# warm-up iterations): speed of light (DRAM and SM throughput), memory workload, warp stall
# reasons, pipe utilization, occupancy and launch statistics. Under ncu the clocks are locked
# (base clock): compare the two K with each other, not with the chapter's times.
# Writes $OUT/kmeans_ncu/k8.csv, k32.csv (ncu --csv --page details) and a few lines of summary.
#   tools/dev_gpu/kmeans_ncu.sh        (about a minute on an H100)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/dev_gpu/ncu_common.sh
mkdir -p "$OUT/kmeans_ncu"
for K in 8 32; do
  PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} timeout 240 "$NCU" --target-processes all \
    --kernel-name kmeans_tensor --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --section SchedulerStats \
    --csv --page details "$PY" tools/dev_gpu/kmeans_ncu_target.py "$K" > "$OUT/kmeans_ncu/k$K.csv" 2> "$OUT/kmeans_ncu/k$K.log"
  echo "== K = $K"
  ncu_summary "$OUT/kmeans_ncu/k$K.csv" "$OUT/kmeans_ncu/k$K.log" \
    'Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per Thread|Issue Slots Busy|No Eligible|Warp Cycles Per Issued Instruction'
done
