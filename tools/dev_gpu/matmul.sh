#!/usr/bin/env bash
# Chapter 05's final step on the GPU host: every configuration of the search (mm.ASYNC_SEARCH),
# unsplit and with stream-K last waves (mm.stream_k; STREAM_K=0: unsplit only), checked against
# cuBLAS and timed with the project's time_gpu at each n of SIZES (default 4096 3000 4095 2048
# 8192), with cuBLAS (cupy.matmul, FP32: TF32 off, as the chapter verifies) at the same n in the
# same run. Prints a table (fraction of cuBLAS per configuration and n, and the best per n) and
# writes the tidy rows to "$OUT/matmul/search.csv" and the pivot to "$OUT/matmul/fraction_of_cublas.csv".
# Expected: under 120 s on an H100 for the default SIZES, unsplit (12 NVRTC builds in parallel,
# then 65 timed points); about twice that with stream-K.
# SHAPES (optional) replaces the search by the chapter's small-n shape (mm.SMALL_N_SHAPE) and the
# shapes given, each "BM,BN,BK,WM,WN,TM,TN,STAGES,MIN_BLOCKS", separated by spaces.
#
#   OUT=/tmp/out bash tools/dev_gpu/matmul.sh
#   SIZES="1000 1024" SHAPES="64,128,16,32,32,4,8,4,1" OUT=/tmp/out bash tools/dev_gpu/matmul.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/cudalab-out}"
mkdir -p "$OUT/matmul"
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
unset CUPY_TF32 NVIDIA_TF32_OVERRIDE
PYTHONPATH="$PWD" OUT="$OUT" SIZES="${SIZES:-4096 3000 4095 2048 8192}" STREAM_K="${STREAM_K:-1}" SHAPES="${SHAPES:-}" timeout 540 "$PY" - <<'PYEOF'
import os
import time

import pandas as pd

from cudalab.core.kernels import precompile
from cudalab.labs import matmul as mm

t0 = time.perf_counter()
out = os.path.join(os.environ["OUT"], "matmul")
mm.cublas_precision()  # raises if cuBLAS is not full FP32
kernels = mm.async_search()
if os.environ["SHAPES"]:
    keys = ("bm", "bn", "bk", "wm", "wn", "tm", "tn", "stages", "min_blocks")
    kernels = [mm.warptile_async(**mm.SMALL_N_SHAPE)] + [
        mm.warptile_async(**dict(zip(keys, map(int, shape.split(","))))) for shape in os.environ["SHAPES"].split()
    ]
if os.environ["STREAM_K"] == "1":
    kernels += [mm.stream_k(k) for k in kernels]
precompile(k.launch().build for k in kernels if not mm.refusal(k, mm.present_limits()))
print(f"compiled {len(kernels)} configurations in {time.perf_counter() - t0:.1f} s", flush=True)
sizes = [int(n) for n in os.environ["SIZES"].split()]
frame = mm.sweep(kernels, sizes, seed=475, timing={"min_total_s": 0.1}, desc="final step")
frame.to_csv(os.path.join(out, "search.csv"), index=False)
cols = ["n", "kernel", "status", "time_ms", "gflop_per_s", "fraction_of_cublas", "registers_per_thread",
        "spill_bytes_per_thread", "reason"]
with pd.option_context("display.width", 250, "display.max_colwidth", 80, "display.max_rows", 500):
    print(frame[[c for c in cols if c in frame]].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    ok = frame[frame["status"].eq("ok") & ~frame["kernel"].eq(mm.CUBLAS)]
    pivot = ok.pivot_table(index="kernel", columns="n", values="fraction_of_cublas")
    pivot.to_csv(os.path.join(out, "fraction_of_cublas.csv"))
    print("\nfraction of cuBLAS (same n, same run):")
    print(pivot.to_string(float_format=lambda v: f"{v:.3f}"))
    best = ok.sort_values("time_ms").groupby("n").head(1).sort_values("n")
    print("\nbest per n:")
    print(best[["n", "kernel", "time_ms", "cublas_time_ms", "fraction_of_cublas"]].to_string(index=False))
    bad = frame[~frame["status"].isin(["ok", "skipped"])]
    print(f"\n{len(bad)} wrong or failed points" + (":\n" + bad[["n", "kernel", "status", "reason"]].to_string() if len(bad) else ""))
print(f"done in {time.perf_counter() - t0:.1f} s")
PYEOF
