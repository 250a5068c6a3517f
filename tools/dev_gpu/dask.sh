#!/usr/bin/env bash
# build_report.py --workers 1 on the GPU host: the h100 profile's chapters (CHAPTERS, default 00)
# measured through dask_cuda.LocalCUDACluster (one worker, pinned by CUDA_VISIBLE_DEVICES) and
# recorded into a temporary results folder (never the repository's results/), then the same
# chapters built serially (both --force, each with empty kernel caches, as a cold build on a new machine). Checks: the Dask build exits 0 and its log names LocalCUDACluster; each
# chapter's provenance (in the build and in the recording) names the GPU by name and by a UUID that
# nvidia-smi lists, and the worker's CUDA_VISIBLE_DEVICES; build.json names the worker; and, where
# the serial build takes a minute or more, the Dask build takes at most 1.1x its wall time (for
# chapter 00 alone, ~10 s, the cluster's start of a few seconds is more than 10%: printed only).
# Writes logs, provenance.json, build.json and timings.txt to "$OUT/dask/"; exit 1 if a check fails.
# Expected: about 1 minute for chapter 00; CHAPTERS="00 01 02 03 04 05 06" (the whole h100 build,
# ~250 s serially) about 9 minutes.
#
#   OUT=/tmp/out bash tools/dev_gpu/dask.sh
#   OUT=/tmp/out CHAPTERS="00 01 02 03 04 05 06" bash tools/dev_gpu/dask.sh     (the 1.1x check)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/cudalab-out}"
mkdir -p "$OUT/dask"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
export PYTHONUNBUFFERED=1 PATH=$PATH:/usr/local/cuda/bin
# on a node without the Python packages (as tools/gpu_check.sh does): install them from wheelhouse/
if ! PYTHONPATH=/tmp/site:/tmp/site-dask:$PWD "$PY" -c "import papermill, dask_cuda" 2>/dev/null && [ -d wheelhouse/dask ]; then
  "$PY" -m pip install -q --upgrade --no-index --no-compile --find-links wheelhouse --target /tmp/site \
    -r requirements-gpu-node.txt
  "$PY" -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site-dask wheelhouse/dask/*.whl  # not /tmp/site: pip would replace its share/
fi
if [ -d /tmp/site ]; then
  export PYTHONPATH=/tmp/site:/tmp/site-dask:$PWD JUPYTER_PATH=/tmp/site/share/jupyter
else
  export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
fi
PROFILE=${PROFILE:-h100}
CHAPTERS=${CHAPTERS:-00}
tmp=$(mktemp -d)
res="$tmp/results"
build() {  # name, extra args...
  local name=$1; shift
  local t0=$(date +%s%N)
  # cold, as on a new machine: empty CuPy kernel and compiler-report caches for each build
  CUPY_CACHE_DIR="$tmp/$name-cupy-cache" CUDALAB_CACHE_DIR="$tmp/$name-cudalab-cache" "$PY" build_report.py --gpu "$PROFILE" --only $CHAPTERS --force --format html --out "$tmp/$name" "$@" \
    >"$OUT/dask/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  local s=$(( ms / 1000 )).$(printf %03d $(( ms % 1000 )))
  echo "$name: exit $rc, $s s wall" | tee -a "$OUT/dask/timings.txt"
  echo "$s" >"$tmp/$name.s"
  return $rc
}
status=0
: >"$OUT/dask/timings.txt"
build dask --workers 1 --record --results "$res" || status=1
build serial || status=1
cp "$tmp/dask/build.json" "$OUT/dask/build.json" 2>/dev/null
prov=$(ls "$tmp"/dask/data/*/provenance.json 2>/dev/null | head -1)
[ -n "$prov" ] && cp "$prov" "$OUT/dask/provenance.json"
nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader >"$OUT/dask/nvidia-smi.txt"
OUT="$OUT" TMP="$tmp" RES="$res" "$PY" - <<'PYEOF' || status=1
import json, os, pathlib, sys
out, tmp, res = pathlib.Path(os.environ["OUT"]) / "dask", pathlib.Path(os.environ["TMP"]), pathlib.Path(os.environ["RES"])
problems = []
log = (out / "dask.log").read_text()
if "LocalCUDACluster" not in log:
    problems.append("the Dask build's log does not name LocalCUDACluster")
smi = (out / "nvidia-smi.txt").read_text()
uuids = [line.split(",")[-1].strip() for line in smi.splitlines() if line.strip()]
recorded = sorted(res.glob("*/*/*/provenance.json"))
if not recorded:
    problems.append(f"nothing recorded under {res}")
for p in sorted((tmp / "dask" / "data").glob("*/provenance.json")) + recorded:
    prov = json.loads(p.read_text())
    print(f"{p.relative_to(tmp)}: gpu_name={prov.get('gpu_name')!r} gpu_uuid={prov.get('gpu_uuid')!r} "
          f"cuda_visible_devices={prov.get('cuda_visible_devices')!r}")
    if not prov.get("gpu_name"):
        problems.append(f"{p}: no gpu_name")
    if prov.get("gpu_uuid") not in uuids:
        problems.append(f"{p}: gpu_uuid {prov.get('gpu_uuid')!r} is not one nvidia-smi lists ({uuids})")
    if prov.get("cuda_visible_devices") is None:
        problems.append(f"{p}: no CUDA_VISIBLE_DEVICES recorded (dask_cuda sets it)")
chapters = json.loads((out / "build.json").read_text())["chapters"]
for cid, c in chapters.items():
    if not c.get("ok") or not c.get("worker"):
        problems.append(f"build.json: {cid} ok={c.get('ok')} worker={c.get('worker')!r} {c.get('error', '')[:300]}")
dask_s, serial_s = float((tmp / "dask.s").read_text()), float((tmp / "serial.s").read_text())
ratio = dask_s / serial_s
enforced = serial_s >= 60
print(f"--workers 1 / serial (both cold): {dask_s:.1f} s / {serial_s:.1f} s = {ratio:.2f}x "
      f"(limit 1.10x{'' if enforced else ', not enforced for a build under 60 s'})")
(out / "timings.txt").open("a").write(f"ratio dask/serial: {ratio:.3f}\n")
if enforced and ratio > 1.10:
    problems.append(f"the Dask build took {ratio:.2f}x the serial build")
for p in problems:
    print("FAIL:", p)
print("dask.sh:", "FAILED" if problems else "all checks passed")
sys.exit(1 if problems else 0)
PYEOF
rm -rf "$tmp"
echo "tools/dev_gpu/dask.sh: exit $status"
exit $status
