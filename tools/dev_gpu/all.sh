#!/usr/bin/env bash
# Every dev_gpu check in one GPU call (a lease allows 600 s a command): installs the offline
# wheelhouse, then runs each topic under its own time limit, so that one slow topic never costs
# the others. What each writes lands under "$OUT/<topic>/"; the console of each under "$OUT/logs/".
#   OUT=/tmp/out tools/dev_gpu/all.sh [topic ...]   (topics: fair_timing fw matmul kmeans gpu_tests; also kmeans_dot,
#   kmeans_real_data, and issue 44's probes fw_lanes, kmeans_ncu, matmul_ncu, matmul_l2)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/dev_gpu}
mkdir -p "$OUT/logs"
export PATH=$PATH:/usr/local/cuda/bin PYTHONUNBUFFERED=1
python3 -m pip install -q --upgrade --no-index --no-compile --find-links wheelhouse --target /tmp/site \
  -r requirements-gpu-node.txt || echo "wheelhouse install failed (make wheelhouse)"
export PYTHONPATH=/tmp/site:$PWD JUPYTER_PATH=/tmp/site/share/jupyter PYTHON=python3 PY=python3 OUT
topics=("$@")
[ ${#topics[@]} -gt 0 ] || topics=(fair_timing matmul kmeans gpu_tests)
declare -A limit=([fair_timing]=100 [matmul]=110 [kmeans]=110 [kmeans_dot]=100 [kmeans_real_data]=420 [dask]=120
  [fw_lanes]=150 [kmeans_ncu]=150 [matmul_ncu]=200 [matmul_l2]=150 [gpu_tests]=${GPU_TESTS_S:-300})
for t in "${topics[@]}"; do
  start=$(date +%s)
  if [ "$t" = gpu_tests ]; then
    timeout "${limit[$t]}" python3 -m pytest -q -p no:cacheprovider -m gpu >"$OUT/logs/$t.log" 2>&1
  elif [ -f "tools/dev_gpu/$t.py" ]; then
    timeout "${limit[$t]:-120}" python3 "tools/dev_gpu/$t.py" >"$OUT/logs/$t.log" 2>&1
  else
    timeout "${limit[$t]:-120}" bash "tools/dev_gpu/$t.sh" >"$OUT/logs/$t.log" 2>&1
  fi
  echo "$t: exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/logs/summary.txt"
done
