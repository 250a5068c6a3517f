#!/usr/bin/env bash
# Issue 44, item 2: where the tensor pass's warps wait at K = 32, instruction by instruction.
# Nsight Compute's full set on one pass (the third launch) at N = 4,194,304, D = K = 32, with its
# source counters: $OUT/kmeans_stalls/k32.ncu-rep, details.csv (every section) and sass.csv (each
# SASS instruction with its executed count and warp-stall samples by reason).
#   tools/dev_gpu/kmeans_stalls.sh [K [BUILD]]       (about a minute on an H100)
# BUILD: a build of kmeans_builds.py (with KMEANS_SOURCE) profiled instead of the chapter's pass.
# SKIP: the launches before the one profiled (2 unless set): since km_07 item 12 a pass's cost
# depends on how many objects moved in it, and later passes move fewer.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/dev_gpu/ncu_common.sh
K=${1:-32}
BUILD=${2:-default}
SKIP=${SKIP:-2}
dir="$OUT/kmeans_stalls/$(echo "k$K-$BUILD" | tr -c 'A-Za-z0-9_.\n-' '_')"
mkdir -p "$dir"
PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} timeout 300 "$NCU" --target-processes all \
  --kernel-name kmeans_tensor --launch-skip "$SKIP" --launch-count 1 --set full --import-source no \
  -f -o "$dir/k$K" "$PY" tools/dev_gpu/kmeans_ncu_target.py "$K" "$BUILD" > "$dir/k$K.log" 2>&1
"$NCU" --import "$dir/k$K.ncu-rep" --csv --page details > "$dir/details.csv"
"$NCU" --import "$dir/k$K.ncu-rep" --csv --page source --print-source sass > "$dir/sass.csv" \
  2> "$dir/sass.log" || tail -3 "$dir/sass.log"
ncu_summary "$dir/details.csv" "$dir/k$K.log" \
  'Duration|DRAM Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued Instruction|Achieved Occupancy'
grep -E '"Stall|stall' "$dir/details.csv" | head -40 || true
wc -l "$dir/sass.csv"
