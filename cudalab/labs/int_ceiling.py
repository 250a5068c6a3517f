"""The int32 add+min ceiling: relaxations per second when nothing but the arithmetic limits.

A relaxation of Floyd-Warshall is ``min(a + b, c)``: one integer add and one min, or a single
DPX instruction on compute capability 9.0. Chapter 00 measures how many of them the GPU issues
per second (``kernels_cu/int_add_min_ceiling.cu``), and chapter 04 judges its blocked kernels as a
fraction of that number. Each result is checked: a chain ``acc = min(acc + x, y)`` from ``acc0``
ends at ``min(acc0 + iters * x, y)`` (x > 0), which NumPy computes in closed form.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.errors import MeasurementError
from cudalab.core.gpu import attributes, require_cupy
from cudalab.core.kernels import load_kernel
from cudalab.core.timing import summarize, time_gpu

CHAINS = 16
KERNELS = {"add + min": "add_min_plain", "DPX __viaddmin_s32": "add_min_dpx"}


def expected_sums(blocks: int, threads: int, iters: int, x: int, y: int) -> np.ndarray:
    """What every thread of the micro-benchmark must store (the sum of its chains)."""
    tid = np.arange(threads, dtype=np.int64)[:, None]
    c = np.arange(CHAINS, dtype=np.int64)[None, :]
    per_thread = np.minimum(tid + c + iters * x, y + c).sum(axis=1).astype(np.int32)
    return np.tile(per_thread, blocks)


# Chains per thread long enough that a launch's ramp and drain (a few microseconds) do not count:
# one wave of about 17 ms on an H100. At 4,096 the launch took 1.08 ms and read 0.4% below this
# (16.36 against 16.43 T/s, one H100, interleaved, docs/tuning-log.md): a ceiling must not be
# lowered by its own timing, and the solves judged by it run for 36-280 ms.
ITERATIONS = 65536


def add_min_ceiling(
    iters: int = ITERATIONS, blocks_per_sm: int = 8, threads: int = 256, timing: dict[str, Any] | None = None
) -> pd.DataFrame:
    """One row per instruction form: relaxations per second, median and spread, and its check.
    ``iters`` add-mins per chain, ``CHAINS`` chains per thread, one wave of ``blocks_per_sm``
    blocks per SM."""
    cp = require_cupy()
    blocks = attributes()["MultiProcessorCount"] * blocks_per_sm
    x, y = 3, iters * 2  # the cap y is reached half-way, so both branches of min are exercised
    want = expected_sums(blocks, threads, iters, x, y)
    relaxations = blocks * threads * CHAINS * iters
    rows = []
    for form, name in KERNELS.items():
        kernel = load_kernel("int_add_min_ceiling.cu", name, options=(f"-DCHAINS={CHAINS}",))
        out = cp.zeros(blocks * threads, dtype=cp.int32)
        args = (out, np.int32(x), np.int32(y), np.int32(iters))
        samples = time_gpu(lambda kernel=kernel, args=args: kernel((blocks,), (threads,), args), **(timing or {}))
        wrong = int((cp.asnumpy(out) != want).sum())
        stats = summarize(samples)
        rows.append(
            {
                "instruction": form,
                "kernel": name,
                "blocks": blocks,
                "threads_per_block": threads,
                "chains_per_thread": CHAINS,
                "iterations": iters,
                "relaxations": relaxations,
                **stats,
                "relaxations_per_s": relaxations / (stats["time_ms"] * 1e-3),
                "relaxations_per_s_q1": relaxations / (stats["time_ms_q3"] * 1e-3),
                "relaxations_per_s_q3": relaxations / (stats["time_ms_q1"] * 1e-3),
                "status": "ok" if wrong == 0 else "wrong",
                "reason": "" if wrong == 0 else f"{wrong} of {out.size} threads stored a wrong sum",
            }
        )
    frame = pd.DataFrame(rows)
    clock_hz = attributes().get("ClockRate", np.nan) * 1e3  # the maximum clock; the GPU may run below it
    frame["relaxations_per_clock_per_sm"] = frame["relaxations_per_s"] / (
        clock_hz * attributes()["MultiProcessorCount"]
    )
    return frame


def ceiling(frame: pd.DataFrame) -> pd.Series:
    """The fastest correct form: the ceiling a Floyd-Warshall kernel on this GPU is judged by."""
    ok = frame[frame["status"].eq("ok")]
    if ok.empty:
        raise MeasurementError("no add+min micro-benchmark produced a correct result")
    return ok.loc[ok["relaxations_per_s"].idxmax()]
