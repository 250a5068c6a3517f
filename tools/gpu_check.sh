#!/usr/bin/env bash
# The whole GPU-side check in one go, for a GPU node without internet:
# install the offline wheelhouse, build the report for each profile from real measurements
# (recording the results for replay), then run the full test suite, GPU tests included, which
# also replays what was just recorded.
#
#   tools/gpu_check.sh [--quick] [--record] [--no-tests] [PROFILE ...]    (default profiles: h100 gtx680)
#
# Build the wheelhouse first, where pip can reach PyPI and git: make wheelhouse (it also writes
# wheelhouse/source-stamp.json, the commit that recordings made here will name; `make stamp` renews it).
# Everything worth keeping lands in $OUT (default build/gpu-check): logs, the reports and build
# summaries as reports.tar.gz, and the recorded results as results.tar.gz.
# BUILD_ARGS adds options to every build_report.py call (e.g. BUILD_ARGS="--only 00").
# Recordings land in results/<gpu>/<profile>/ with provenance derived from the tree and the stamp.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-check}
mkdir -p "$OUT"
quick= record= tests=1 profiles=()
for a in "$@"; do
  case $a in
    --quick) quick=--quick ;;
    --record) record=--record ;;
    --no-tests) tests= ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) profiles+=("$a") ;;
  esac
done
[ ${#profiles[@]} -gt 0 ] || profiles=(h100 gtx680)

[ -d .git ] || [ -f wheelhouse/source-stamp.json ] || echo "warning: no .git and no wheelhouse/source-stamp.json: recordings will name no commit (run make stamp before sending the tree)"
python3 -m pip install -q --upgrade --no-index --no-compile --find-links wheelhouse --target /tmp/site \
  -r requirements-gpu-node.txt || { echo "wheelhouse install failed (run tools/build_wheelhouse.sh)"; exit 2; }
# Dask (build_report.py --workers, tools/dev_gpu/dask.sh), without dependencies: build_wheelhouse.sh left out
# numpy, pandas and matplotlib's dependencies, which the node has already. A folder of its own: pip's
# --target --upgrade replaces whole top-level folders, so into /tmp/site it would replace share/ and
# with it nbconvert's templates.
if [ -d wheelhouse/dask ]; then
  python3 -m pip install -q --upgrade --no-index \
    --no-deps --no-compile --target /tmp/site-dask wheelhouse/dask/*.whl || echo "warning: the Dask wheels did not install; --workers will not run"
fi
# JUPYTER_PATH: nbconvert's templates sit under the --target folder's share/jupyter.
export PYTHONPATH=/tmp/site:/tmp/site-dask:$PWD JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
# nvcc, cuobjdump (SASS tables) and ncu (chapter 04 counters) live here on most GPU hosts
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c "import cupy, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())" | tee -a "$OUT/gpu.txt"

status=0
for p in "${profiles[@]}"; do
  start=$(date +%s)
  python3 build_report.py --gpu "$p" $quick $record --force --no-pdf --cell-timeout 600 --out "build/report-$p" ${BUILD_ARGS:-} 2>&1 | tee "$OUT/build-$p.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "build $p: $(( $(date +%s) - start )) s wall" | tee -a "$OUT/gpu.txt"
done
if [ -n "$tests" ]; then
  # pytest-timeout (on the GPU image) ends a hung kernel's test instead of the whole call
  python3 -m pytest -q -p no:cacheprovider $(python3 -c "import pytest_timeout" 2>/dev/null && echo --timeout=120) ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
tar czf "$OUT/reports.tar.gz" build/report-*/report.html build/report-*/build.json build/report-*/notebooks build/report-*/data 2>/dev/null
[ -n "$record" ] && tar czf "$OUT/results.tar.gz" results
echo "gpu_check: exit $status"
exit $status
