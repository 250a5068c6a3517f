"""The vecMax partial max reduction (lab 002): timing, checking and its two ceilings.

Each configuration is timed (kernel only, CUDA events) on one large random array, its partial
results poisoned with NaN before every run, then reduced and compared with ``cupy.max`` (CUB) on
the same array: max is exact, so the check is equality. Bandwidth is the bytes model (every float
read once) over the median time, set beside two ceilings measured in the same run: a
device-to-device copy and ``cupy.max`` itself.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from cudalab.access_pattern import per_thread
from cudalab.bandwidth import copy_ceiling
from cudalab.bytes_model import effective_GBps, reduction_bytes
from cudalab.gpu import attributes, require_cupy
from cudalab.launch import LaunchRefused, check_launch, launch, refusal_types, require_memory
from cudalab.sweep import run_sweep
from cudalab.timing import summarize, time_gpu


def fitting_size(n: int, share: float = 0.6) -> int:
    """``n``, or the largest multiple of 1024 floats that fits in ``share`` of the free GPU memory."""
    cp = require_cupy()
    free = cp.cuda.runtime.memGetInfo()[0]
    return int(min(n, share * free // 4) // 1024 * 1024)


def random_array(n: int, seed: int):
    """n uniform floats in [0, 1) on the device, drawn on the device (fast even for 1e9)."""
    cp = require_cupy()
    require_memory(reduction_bytes(n) + (1 << 28), f"an array of {n:,} floats")
    return cp.random.default_rng(seed).random(n, dtype=cp.float32)


def measure(kernel, name: str, a, blocks: int, threads: int, expected: float, timing: dict[str, Any]) -> dict[str, Any]:
    cp = require_cupy()
    n = a.size
    if name == "vecmax02" and (n % 4 or a.data.ptr % 16):
        raise LaunchRefused("vecmax02 reads float4: needs n % 4 == 0 and a 16-byte-aligned array")
    check_launch(kernel, blocks, threads)
    pt = per_thread(n, blocks, threads)
    partial = cp.empty(blocks * threads, dtype=cp.float32)
    args = (a, partial, np.int64(n), np.int32(pt))
    samples = time_gpu(lambda: launch(kernel, (blocks,), (threads,), args), setup=lambda: partial.fill(np.nan), **timing)
    unwritten = int(cp.isnan(partial).sum())
    got = float(partial.max())
    ok = unwritten == 0 and got == expected
    stats = summarize(samples)
    return {**stats, "per_thread": pt, "threads_total": blocks * threads,
            "bandwidth_GBps": float(effective_GBps(reduction_bytes(n), stats["time_ms"])),
            "status": "ok" if ok else "wrong",
            "reason": "" if ok else f"max {got} vs cupy.max {expected}; {unwritten} partial results never written"}


def ceilings(a, timing: dict[str, Any] | None = None) -> pd.DataFrame:
    """The two ceilings of this run: a device-to-device copy (bytes read + written) and
    ``cupy.max`` on the same array (bytes read)."""
    cp = require_cupy()
    timing = timing or {}
    copy = copy_ceiling(min(1 << 30, a.nbytes), timing).iloc[0]
    cub = summarize(time_gpu(lambda: cp.max(a), **timing))
    return pd.DataFrame([
        {"ceiling": "device_to_device_copy", "time_ms": copy["time_ms"], "bytes": copy["bytes_counted"],
         "bandwidth_GBps": copy["bandwidth_GBps"]},
        {"ceiling": "cupy_max", "time_ms": cub["time_ms"], "bytes": reduction_bytes(a.size),
         "bandwidth_GBps": float(effective_GBps(reduction_bytes(a.size), cub["time_ms"]))},
    ])


def sweep(kernels: dict[str, Any], n: int, blocks: Sequence[int], threads: Sequence[int], seed: int,
          timing: dict[str, Any] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every kernel at every (blocks, threads); returns (configurations, ceilings)."""
    cp = require_cupy()
    timing = timing or {}
    a = random_array(n, seed)
    expected = float(cp.max(a))
    attrs = attributes()
    full = attrs["MultiProcessorCount"] * attrs["MaxThreadsPerMultiProcessor"]
    points = [{"kernel": k, "blocks": b, "threads_per_block": t} for k in kernels for b in blocks for t in threads]

    def one(p):
        row = measure(kernels[p["kernel"]], p["kernel"], a, p["blocks"], p["threads_per_block"], expected, timing)
        return {**row, "n": n, "fills_gpu": row["threads_total"] >= full}

    configs = run_sweep(points, one, desc="vecMax", skip_on=refusal_types())
    return configs, ceilings(a, timing)
