#!/usr/bin/env bash
# GPU validation of fair timing (issue 25, requirement 1), about 2 minutes on an H100:
# the stream hold and time_gpu's batches (tests/test_timing_gpu.py), the vecMax check
# (tests/test_gpu_memory_kernels.py -k vecmax), and chapter 05's size sweep with its cuBLAS
# check at n = 1024 and 4096 (the figures the issue quotes). Writes under "$OUT/fair_timing/".
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-build/dev_gpu}
dest="$OUT/fair_timing"
mkdir -p "$dest"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PY:-python3}
$PY -m pytest -q -s -m gpu tests/test_timing_gpu.py \
  tests/test_gpu_memory_kernels.py::test_vecmax_kernels_match_cupy_max_and_flag_a_wrong_one 2>&1 | tee "$dest/pytest.log"
rc=${PIPESTATUS[0]}
$PY - <<'PY' 2>&1 | tee "$dest/cublas_check.log"
import os
from cudalab.labs import matmul as mm
from cudalab.core import baseline
frame, check = mm.check_cublas(mm.sweep([], [256, 1024, 4096], seed=2016, desc="cuBLAS"), seed=2016)
out = os.path.join(os.environ.get("OUT", "build/dev_gpu"), "fair_timing")
frame.to_csv(os.path.join(out, "cublas_sweep.csv"), index=False)
check.to_csv(os.path.join(out, "cublas_check.csv"), index=False)
print(frame[["n", "time_ms", "time_ms_q1", "time_ms_q3", "gflop_per_s", "repeats", "baseline_check"]].to_string())
print(baseline.markdown(check))
PY
exit $rc
