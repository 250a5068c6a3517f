#!/usr/bin/env bash
# Re-record chapters on a GPU host after a change made them stale (make check-recordings lists them):
# install the offline wheelhouse, measure the chapters for every profile named and record them for
# replay, on every GPU of the host at once (build_report.py --workers N) where it has several.
#
#   OUT=/tmp/out tools/dev_gpu/rerecord.sh PROFILES [CHAPTER ...]
#
#   PROFILES  comma-separated: h100 on an H100 host, h200 on an H200; the lab profiles (gtx680,
#             maxwell_team5, rtx2080) on either (a replay takes the newest recording)
#   CHAPTER   numbers (04 05); none: every chapter. Chapter 00 is measured too where another is,
#             since the others read its ceilings.
#
# Writes to $OUT: rerecord.log (the build's log), results.tgz (results/<gpu>/ as recorded here:
# unpack it in the checkout with `tar xzf results.tgz`), and topology.txt: the host's GPUs, CPUs
# and NUMA nodes, and the CPUs dask_cuda pins each GPU's worker to (issue 45's question, whether a
# chapter under --workers has fewer cores than a serial one). Run `make stamp` before the tree
# travels, so that the recordings name the commit.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-build/rerecord}"
mkdir -p "$OUT"
[ $# -ge 1 ] || { sed -n 2,17p "$0"; exit 2; }
profiles=$1
shift
only=()
[ $# -gt 0 ] && only=(--only "$@")

python3 -m pip install -q --no-index --no-compile --find-links wheelhouse --target /tmp/site \
  -r requirements-gpu-node.txt || { echo "wheelhouse install failed (make wheelhouse)"; exit 2; }
[ -d wheelhouse/dask ] && python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-dask \
  wheelhouse/dask/*.whl
export PYTHONPATH=/tmp/site:/tmp/site-dask:$PWD JUPYTER_PATH=/tmp/site/share/jupyter PYTHONUNBUFFERED=1
export PATH=$PATH:/usr/local/cuda/bin

gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
{
  nvidia-smi --query-gpu=index,name,uuid,clocks.max.sm --format=csv
  nvidia-smi topo -m
  lscpu | grep -Ei '^(CPU\(s\)|Model name|Socket|NUMA)'
  python3 -c "
from dask_cuda.utils import get_cpu_affinity
for i in range($gpus):
    cpus = get_cpu_affinity(i)
    print(f'dask_cuda pins GPU {i} worker to {len(cpus)} CPUs: {cpus[0]}..{cpus[-1]}')
" 2>&1
} > "$OUT/topology.txt" 2>&1
cat "$OUT/topology.txt"

workers=()
[ "$gpus" -gt 1 ] && workers=(--workers "$gpus")
start=$(date +%s)
python3 build_report.py --gpu "$profiles" "${only[@]}" "${workers[@]}" --record --force --format html \
  --out /tmp/rerecord-report 2>&1 | tee "$OUT/rerecord.log"
status=${PIPESTATUS[0]}
echo "re-recorded $profiles ${*:-every chapter} on $gpus GPU(s) in $(( $(date +%s) - start )) s, exit status $status" \
  | tee -a "$OUT/rerecord.log"
tar czf "$OUT/results.tgz" --exclude=results/build_times results/*/
python3 tools/check_recordings.py 2>&1 | tail -3 | tee -a "$OUT/rerecord.log"
exit "$status"
