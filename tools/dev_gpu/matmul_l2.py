"""Why cuBLAS gains at n = 1000 in the chapter's timing and ours does not (issue 44, item 1).

Nsight Compute, one launch each with its caches flushed and the clocks as the driver sets them
(``matmul_ncu.sh``), times our small-n stream-K build at 58.6 us and cuBLAS's kernel at 59.6 us
on an H100. Chapter 05's sweep, calls back to back on warm operands, times them at 57.8 us and
50.8 us (0.879 of cuBLAS). So what cuBLAS gains comes from how the calls run, not from its inner
loop. This separates the two things that differ between those measurements, for each contestant
(cuBLAS, ours with stream-K, ours unsplit) at each n:

- ``grouped``: as the chapter times it (``time_gpu``; short calls in groups per event pair);
- ``single``: one call per event pair (a setup that enqueues a one-float fill turns grouping off):
  what a call costs with nothing of the next call beside it;
- ``flushed``: one call per event pair after writing 256 MiB, so the operands come from DRAM,
  as under Nsight Compute.

``grouped`` below ``single`` means consecutive calls overlap or their launch gaps hide; ``single``
below ``flushed``, that the operands' residence in L2 helps. Every timed C is checked against
cuBLAS. Printed, and written to ``$OUT/matmul_l2/times.csv``.

    PYTHONPATH=$PWD OUT=/tmp/out python3 tools/dev_gpu/matmul_l2.py [N ...]   (default 1000 1024)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from cudalab.core.check import compare_close
from cudalab.core.gpu import require_cupy
from cudalab.core.launch import allow_shared_memory
from cudalab.core.timing import summarize, time_gpu
from cudalab.labs import matmul as mm

SEED = 475
FLUSH_BYTES = 256 << 20


def contestants(ops: mm.Operands) -> dict[str, object]:
    """name -> a call that writes ``ops.c``: cuBLAS, and our small-n shape with and without stream-K,
    with and without inward edges."""
    small = mm.warptile_async(**mm.SMALL_N_SHAPE)
    checked = mm.warptile_async(**{**mm.SMALL_N_SHAPE, "inward_edges": 0})  # edge tiles' copies checked
    calls = {"cuBLAS SGEMM": mm.cublas_call(ops)}
    for kernel in (mm.stream_k(small), small, mm.stream_k(checked), checked):
        compiled = kernel.compile()
        spec = kernel.launch(ops.n)
        allow_shared_memory(compiled, spec.dynamic_shared_bytes)
        args = (ops.a, ops.b, ops.c, np.int32(ops.n))
        calls[kernel.label] = lambda spec=spec, compiled=compiled, args=args: spec(args, kernel=compiled)
    return calls


def main(sizes: list[int]) -> pd.DataFrame:
    cp = require_cupy()
    mm.cublas_precision()  # raises where cuBLAS would not compute in full FP32
    flush = cp.empty(FLUSH_BYTES // 4, dtype=cp.float32)
    tiny = cp.empty(1, dtype=cp.float32)
    setups = {"grouped": None, "single": lambda: tiny.fill(0), "flushed": lambda: flush.fill(0)}
    rows = []
    for n in sizes:
        ops = mm.operands(n, SEED)
        for name, call in contestants(ops).items():
            for how, setup in setups.items():
                ops.c.fill(np.nan)
                stats = summarize(time_gpu(call, setup=setup, min_total_s=0.2, max_repeats=200))
                cp.cuda.get_current_stream().synchronize()
                check = compare_close(ops.c, ops.reference, ops.scale, mm.tolerance(n), "cuBLAS", "|A||B|")
                rows.append({"n": n, "kernel": name, "timing": how, **stats, "status": check["status"]})
    frame = pd.DataFrame(rows)
    cublas = frame[frame["kernel"].eq("cuBLAS SGEMM")].set_index(["n", "timing"])["time_ms"]
    frame["fraction_of_cublas"] = [
        cublas[(n, how)] / t for n, how, t in zip(frame["n"], frame["timing"], frame["time_ms"])
    ]
    return frame


if __name__ == "__main__":
    frame = main([int(a) for a in sys.argv[1:]] or [1000, 1024])
    out = Path(os.environ.get("OUT", "build/dev_gpu")) / "matmul_l2"
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "times.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(frame[["n", "kernel", "timing", "time_ms", "time_ms_q1", "time_ms_q3", "status", "fraction_of_cublas"]])
        print(frame.pivot_table(index=["n", "kernel"], columns="timing", values="time_ms").round(5))
