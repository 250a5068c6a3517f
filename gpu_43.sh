#!/usr/bin/env bash
# Issue 43 on the GPU: the grading tests (fixture class, k-means cases), then a student's measured
# build with five files touching chapters 01-06.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
python3 -m pip install -q --no-index --no-compile --find-links wheelhouse --target /tmp/site -r requirements-gpu-node.txt > $OUT/pip.log 2>&1
export PYTHONPATH=/tmp/site:$PWD JUPYTER_PATH=/tmp/site/share/jupyter
nvidia-smi --query-gpu=name,uuid --format=csv > $OUT/gpu.txt
t0=$(date +%s)
timeout 260 python3 -m pytest -q -s -p no:cacheprovider tests/test_gpu_grading.py -m gpu > $OUT/pytest.log 2>&1
echo "pytest rc=$? in $(( $(date +%s) - t0 )) s" >> $OUT/pytest.log
# a student's folder: reference copies of three files, a wrong k-means update, a vecMax copy
mkdir -p /tmp/student
for f in vecmax_coalescing.cu fw_blocked_minplus.cu fw_basic_2d.cu mm_02_footprint.cu; do cp kernels_cu/$f /tmp/student/; done
sed 's|if (size > 0) centres\[i\] = sums\[i\] / size;|if (size > 0) centres[i] = sums[i] / (size + 1);|' kernels_cu/km_01_device_update.cu > /tmp/student/km_01_device_update.cu
t1=$(date +%s)
timeout 320 python3 build_report.py --kernels /tmp/student --gpu h100 --quick --no-pdf --out $OUT/yours > $OUT/build.log 2>&1
echo "build rc=$? in $(( $(date +%s) - t1 )) s" >> $OUT/build.log
tail -3 $OUT/pytest.log $OUT/build.log
