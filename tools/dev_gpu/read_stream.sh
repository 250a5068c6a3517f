#!/usr/bin/env bash
# Issue 26 (4) on a GPU: chapter 00's read-only streaming ceiling (kernels_cu/read_stream.cu) and
# the summary rows that use it. About 3 minutes on an H100 (GPU tests ~20 s; chapters 00, 02 and 04
# of the h100 profile measured ~2 min; the replayed report ~1 min).
#   OUT=/some/dir tools/dev_gpu/read_stream.sh
# Writes under "$OUT/read_stream/": the GPU tests' log, the build's log, chapter 00's ceilings.csv
# and read_stream.csv, and each chapter's summary row (scorecard.json). Nothing is recorded into
# results/ (the coordinator re-records with build_report.py --gpu PROFILE --record).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
dest="${OUT:-build/dev-gpu}/read_stream"
mkdir -p "$dest"
"$PY" -m pytest -q -m gpu tests/test_gpu_read_stream.py tests/test_gpu_memory_kernels.py -k "read_stream or vecmax" \
  >"$dest/gpu_tests.log" 2>&1
echo "gpu tests: exit $?" | tee -a "$dest/summary.txt"
"$PY" build_report.py --gpu h100 --only 00 02 04 --format html --force --out build/dev-gpu-read-stream \
  >"$dest/build.log" 2>&1
echo "build (00 02 04 measured): exit $?" | tee -a "$dest/summary.txt"
data=build/dev-gpu-read-stream/data
cp "$data/00_gpu_capabilities/ceilings.csv" "$data/00_gpu_capabilities/read_stream.csv" "$dest/" 2>/dev/null
for c in 00_gpu_capabilities 02_coalescing 04_blocking_factor; do
  cp "$data/$c/scorecard.json" "$dest/$c.scorecard.json" 2>/dev/null
done
cat "$dest/ceilings.csv" "$dest"/*.scorecard.json >>"$dest/summary.txt" 2>/dev/null
