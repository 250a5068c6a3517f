#!/usr/bin/env bash
# Record chapters on a GPU node in slices that fit one call of a time-limited GPU lease:
#
#   tools/gpu_session.sh [--parallel] "PROFILE:CHAPTER,CHAPTER" ["PROFILE:CHAPTER,..." ...] [-- PYTEST_ARGS]
#
# Installs the offline wheelhouse (make wheelhouse, here, first: it also writes the source stamp),
# builds each profile's listed chapters with --record, then packs results/ and the build logs into
# $OUT (default build/gpu-session). Anything after -- runs as a GPU pytest afterwards, bounded by
# PYTEST_SECONDS (default 280), so that a slow suite never costs the recordings.
#
# --parallel (a host with several GPUs): the slices run at once, slice i alone on GPU i (each a
# serial single-profile build, as on a one-GPU host; CUDA_VISIBLE_DEVICES), each bounded by
# SLICE_SECONDS (default 540), so that one slow slice cannot cost the others their packing.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-session}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
python3 -m pip install -q --upgrade --no-index --no-compile --find-links wheelhouse --target /tmp/site \
  -r requirements-gpu-node.txt || { echo "wheelhouse install failed (make wheelhouse)"; exit 2; }
export PYTHONPATH=/tmp/site:$PWD JUPYTER_PATH=/tmp/site/share/jupyter
status=0 slices=() pytest_args=() parallel=0
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; pytest_args=("$@"); break; fi
  if [ "$1" = "--parallel" ]; then parallel=1; shift; continue; fi
  slices+=("$1"); shift
done
if [ "$parallel" = 1 ]; then
  gpus=$(nvidia-smi -L | wc -l)
  [ "${#slices[@]}" -le "$gpus" ] || { echo "--parallel: ${#slices[@]} slices for $gpus GPUs"; exit 2; }
  pids=()
  for i in "${!slices[@]}"; do
    s=${slices[$i]} profile=${slices[$i]%%:*} chapters=${slices[$i]#*:}
    ( start=$(date +%s)
      CUDA_VISIBLE_DEVICES=$i timeout "${SLICE_SECONDS:-540}" python3 build_report.py --gpu "$profile" \
        --only ${chapters//,/ } --record --force --no-pdf --cell-timeout 500 --out "build/session-$profile" \
        > "$OUT/build-$profile.log" 2>&1
      rc=$?
      echo "slice $s on GPU $i: exit $rc, $(( $(date +%s) - start )) s" >> "$OUT/build-$profile.log"
      exit $rc ) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  tail -n 3 "$OUT"/build-*.log
  tar czf "$OUT/results.tgz" results
  slices=()
fi
for s in "${slices[@]}"; do
  profile=${s%%:*} chapters=${s#*:}
  start=$(date +%s)
  python3 build_report.py --gpu "$profile" --only ${chapters//,/ } --record --force --no-pdf --cell-timeout 550 \
    --out "build/session-$profile" 2>&1 | grep --line-buffered -v "WARNING | Kernel is running over TCP" | tee -a "$OUT/build.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "slice $s: $(( $(date +%s) - start )) s" | tee -a "$OUT/build.log"
  # Packed after every slice, not once at the end: a lease that runs out during a later slice
  # must not cost the recordings the earlier ones finished.
  tar czf "$OUT/results.tgz.part" results && mv "$OUT/results.tgz.part" "$OUT/results.tgz"
done
[ -f "$OUT/results.tgz" ] || tar czf "$OUT/results.tgz" results
tar czf "$OUT/builds.tgz" build/session-*/build.json build/session-*/notebooks 2>/dev/null
if [ ${#pytest_args[@]} -gt 0 ]; then
  timeout "${PYTEST_SECONDS:-280}" python3 -m pytest -p no:cacheprovider "${pytest_args[@]}" 2>&1 | tee "$OUT/pytest.log" | tail -40
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
echo "gpu_session: exit $status"
exit $status
