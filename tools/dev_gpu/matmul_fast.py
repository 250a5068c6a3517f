"""Inward edges (mm_04's item 8) on the larger shapes too, at every n of chapter 05's size sweep
(issue 44, item 1: the chapter gives them to its small-n patch only).

The kernels the size sweep sets beside cuBLAS on an H100 (its finalists' shapes, unsplit and with
stream-K, and the small-n patch with stream-K), each built with inward edges and without, timed in one ``mm.sweep`` (the chapter's timing, every C checked against
cuBLAS, cuBLAS timed at the same n in the same run). Prints the fraction of cuBLAS per kernel and
n, and the best of each build per n; writes the tidy rows to ``$OUT/matmul_fast/sweep.csv``.

    PYTHONPATH=$PWD OUT=/tmp/out python3 tools/dev_gpu/matmul_fast.py
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd

from cudalab.core.kernels import precompile
from cudalab.labs import matmul as mm

SIZES = (1000, 1024, 1600, 2048, 3000, 4095, 4096, 6144, 8192)
FINALIST_SHAPES = (  # the shapes of the recorded H100 size sweep's finalists
    {"bm": 128, "bn": 256, "bk": 32, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 3, "min_blocks": 1},
    {"bm": 128, "bn": 256, "bk": 16, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 2, "min_blocks": 1},
    {"bm": 128, "bn": 128, "bk": 16, "wm": 64, "wn": 64, "tm": 8, "tn": 16, "stages": 3, "min_blocks": 1},
)


def main() -> pd.DataFrame:
    out = Path(os.environ.get("OUT", "/tmp/cudalab-out")) / "matmul_fast"
    out.mkdir(parents=True, exist_ok=True)
    mm.cublas_precision()  # raises if cuBLAS is not full FP32
    shapes = [*FINALIST_SHAPES, mm.SMALL_N_SHAPE]
    kernels = [
        kernel
        for s in shapes
        for on in (0, 1)
        for kernel in (
            mm.warptile_async(**{**s, "inward_edges": on}),
            mm.stream_k(mm.warptile_async(**{**s, "inward_edges": on})),
        )
    ]
    t0 = time.perf_counter()
    precompile(k.launch().build for k in kernels if not mm.refusal(k, mm.present_limits()))
    print(f"compiled {len(kernels)} builds in {time.perf_counter() - t0:.1f} s", flush=True)
    frame = mm.sweep(kernels, list(SIZES), seed=475, timing={"min_total_s": 0.1}, desc="inward edges")
    frame.to_csv(out / "sweep.csv", index=False)
    ours = frame[~frame["kernel"].eq(mm.CUBLAS)].copy()
    ours["build"] = ours["kernel"].str.contains("inward edges").map({True: "inward edges", False: "checked edges"})
    bad = ours[~ours["status"].isin(["ok", "skipped"])]
    with pd.option_context("display.width", 250, "display.max_colwidth", 90, "display.max_rows", 500):
        ok = ours[ours["status"].eq("ok")]
        print(
            ok.pivot_table(index="kernel", columns="n", values="fraction_of_cublas").to_string(
                float_format="{:.3f}".format
            )
        )
        print("\nbest of each build per n (fraction of cuBLAS, same run):")
        print(
            ok.groupby(["n", "build"])["fraction_of_cublas"]
            .max()
            .unstack("build")
            .to_string(float_format="{:.3f}".format)
        )
        print(
            f"\n{len(bad)} wrong or failed points"
            + (":\n" + bad[["n", "kernel", "status", "reason"]].to_string() if len(bad) else "")
        )
    return frame


if __name__ == "__main__":
    main()
