#!/usr/bin/env bash
# Issue 25 req. 2 on the GPU host: the min-plus kernels (today's best, BF 64 and 128) and the async
# min-plus candidates (fw_blocked_minplus_async.cu, BF 64 with 2/3/4 stages, BF 128 with 2/3) at
# N = 8192 and 16384, beside the int32 add+min ceiling of the same run, as a fraction of it.
# Correctness: every timed solve is checked against CuPy's min-plus Floyd-Warshall at its own N
# (16384 included), and every configuration at N = 33, 130, 1000 (not multiples of BF: padding)
# on two input kinds against the course's C reference.
# Writes $OUT/fw/{fw_candidates,correctness,ceiling}.csv. Expected: about 90-120 s on an H100
# (most of it the first compile of each build and the CuPy reference at 16384).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/out}"
mkdir -p "$OUT/fw"
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/fw/gpu.txt" || true
timeout 170 "$PY" tools/dev_gpu/fw_candidates.py "$OUT" "$@" 2>&1 | tee "$OUT/fw/log.txt"
