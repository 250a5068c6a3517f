#!/usr/bin/env bash
# Which of CuPy's own kernels each chapter compiles, and when, in a cold serial build (issue 45):
# CuPy compiles its reductions and elementwise kernels on first use, a cold build's chapters share
# one kernel cache, so whichever chapter uses one first pays for it (4.5 s for the first sum of a
# check on an H100 host, docs/tuning-log.md). This builds the h100 profile serially with empty
# caches and CUPY_CACHE_SAVE_CUDA_SOURCE=1, then lists the cache's kernels by the time they were
# written, beside each chapter's cells' start times (the executed notebooks), so a kernel can be
# put to the chapter that compiled it.
#   OUT=/tmp/out tools/dev_gpu/cold_cupy_kernels.sh [PROFILE]     (about 5 minutes on an H100)
# Writes $OUT/cold_cupy/{kernels.txt,build.log,notebooks.tgz}.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/cudalab-out}"
mkdir -p "$OUT/cold_cupy"
python3 -m pip install -q --no-index --no-compile --find-links wheelhouse --target /tmp/site -r requirements-gpu-node.txt \
  || { echo "wheelhouse install failed (make wheelhouse)"; exit 2; }
export PYTHONPATH=/tmp/site:$PWD JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
export CUPY_CACHE_DIR=/tmp/cold-cupy CUDALAB_CACHE_DIR=/tmp/cold-cudalab CUPY_CACHE_SAVE_CUDA_SOURCE=1
rm -rf "$CUPY_CACHE_DIR" "$CUDALAB_CACHE_DIR" /tmp/cold-report
python3 build_report.py --gpu "${1:-h100}" --force --format html --out /tmp/cold-report 2>&1 | tee "$OUT/cold_cupy/build.log" | tail -12
python3 - "$CUPY_CACHE_DIR" > "$OUT/cold_cupy/kernels.txt" <<'PY'
import datetime as dt
import pathlib
import re
import sys

rows = []
for f in pathlib.Path(sys.argv[1]).rglob("*.cu"):
    text = f.read_text(errors="replace")
    names = ",".join(dict.fromkeys(re.findall(r"__global__\s+void\s+(\w+)", text)))
    rows.append((f.stat().st_mtime, names[:160], len(text)))
for t, names, size in sorted(rows):
    print(dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3], f"{size:>7}", names)
PY
echo "$(wc -l < "$OUT/cold_cupy/kernels.txt") kernel sources in the cache"
(cd /tmp/cold-report && find . -name '*.ipynb' | tar czf "$OUT/cold_cupy/notebooks.tgz" -T -)
