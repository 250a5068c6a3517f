"""The read-only streaming ceiling: how fast a kernel can read DRAM when it writes (almost) nothing.

A kernel that only reads (chapter 02's vecMax) is not bounded by a copy (``bandwidth``): DRAM
streams reads faster than it turns between reads and writes. Its ceiling is ``read_stream_sweep``:
the kernel of ``kernels_cu/read_stream.cu`` over a few launch grids, each run checked bit for bit
against an XOR reduction of the same array by CuPy; the fastest correct launch is the ceiling
(``with_read_ceiling``: a row of chapter 00's ``ceilings`` table after the copy's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.gpu import require_cupy
from cudalab.core.launch import refusal_types, require_memory
from cudalab.core.sweep import run_sweep
from cudalab.core.timing import summarize, time_gpu

READ_FILE = "read_stream.cu"
READ_KERNEL = "read_stream_xor"
READ_BLOCKS_PER_SM = (1, 2, 4, 8, 16)
READ_THREADS = (256, 512, 1024)
READ_CEILING = "dram_read_bandwidth"


def read_stream_words(nbytes: int = 1 << 33, share: float = 0.3) -> int:
    """The read-only ceiling's array, in 32-bit words: ``nbytes``, or ``share`` of the free GPU
    memory where that is less; a multiple of 1024 words (16-byte loads).

    8 GiB: many times any L2, and more than the largest array a later chapter reads (chapter 02's
    vecMax, 5.12 GB), so that the ramp-up and tail of one launch weigh less in the ceiling than in
    the kernel it bounds. At 2 GiB an H200 reads the array in 0.49 ms, and those few microseconds
    put vecMax's 5.12 GB pass above the ceiling (4460 vs 4427 GB/s)."""
    cp = require_cupy()
    free = cp.cuda.runtime.memGetInfo()[0]
    return int(min(nbytes, share * free) // 4 // 1024 * 1024)


def xor_reference(a) -> int:
    """The XOR of every 32-bit word of ``a`` by a CuPy reduction (CUB), the kernel's reference."""
    cp = require_cupy()
    xor = cp.ReductionKernel("uint32 x", "uint32 y", "x", "a ^ b", "y = a", "0", "cudalab_xor_reference")
    return int(xor(a))


def read_stream_sweep(
    words: int,
    blocks_per_sm: Sequence[int] = READ_BLOCKS_PER_SM,
    threads: Sequence[int] = READ_THREADS,
    seed: int = 0,
    timing: dict[str, Any] | None = None,
    *,
    show_progress: bool = True,
) -> pd.DataFrame:
    """The read-only streaming kernel on ``words`` random 32-bit words at every (blocks, threads):
    one row per launch with its median time, the bytes it read and its bandwidth; a launch whose
    XOR differs from ``xor_reference`` is marked ``wrong`` (and never counted as the ceiling)."""
    cp = require_cupy()
    from cudalab.core.gpu import attributes
    from cudalab.core.kernels import load_kernel

    if words % 4:
        raise ValueError("the read-only kernel loads 16 bytes at a time: words must be a multiple of 4")
    require_memory(4 * words + (1 << 26), f"a read-only stream of {4 * words:,} bytes")
    kernel = load_kernel(READ_FILE, READ_KERNEL)
    a = cp.random.default_rng(seed).random(words, dtype=cp.float32).view(cp.uint32)  # random bits, drawn on the device
    expected = xor_reference(a)
    sms = attributes()["MultiProcessorCount"]
    points = [{"blocks": sms * k, "threads_per_block": t} for k in blocks_per_sm for t in threads]

    def one(p: dict[str, Any]) -> dict[str, Any]:
        blocks, tpb = p["blocks"], p["threads_per_block"]
        partial = cp.empty(blocks * tpb, dtype=cp.uint32)
        # a distinct poison per thread before every run: a thread that writes nothing leaves its
        # poison in the XOR (a single constant would cancel in pairs)
        poison = cp.arange(1, blocks * tpb + 1, dtype=cp.uint32) * np.uint32(2654435761)
        args = (a, partial, np.int64(words))
        samples = time_gpu(
            lambda: kernel((blocks,), (tpb,), args),
            setup=lambda: partial.__setitem__(Ellipsis, poison),
            **(timing or {}),
        )
        got = int(xor_reference(partial))
        stats = summarize(samples)
        ok = got == expected
        return {
            **stats,
            "bytes_read": 4 * words,
            "bandwidth_GBps": 4 * words / (stats["time_ms"] * 1e-3) / 1e9,
            "status": "ok" if ok else "wrong",
            "reason": "" if ok else f"XOR {got:#010x} vs the CuPy reduction's {expected:#010x}",
        }

    return run_sweep(points, one, desc="read-only stream", skip_on=refusal_types(), show_progress=show_progress)


def with_read_ceiling(ceilings: pd.DataFrame, read: pd.DataFrame | None, spec: pd.DataFrame) -> pd.DataFrame:
    """Chapter 00's ``ceilings`` (the copy's row, ``bandwidth.ceilings``) and, after it, the ceiling
    of kernels that only read: the fastest correct launch of ``read_stream_sweep`` with its
    fraction of the theoretical DRAM peak. Unchanged where ``read`` is None (a recording made
    before chapter 00 measured it) or no launch was correct."""
    ok = read[read["status"].eq("ok")] if read is not None else pd.DataFrame()
    if not len(ok):
        return ceilings
    best = ok.loc[ok["bandwidth_GBps"].idxmax()]
    peak = float(spec.set_index("key")["value_numeric"].get("peak_dram_bandwidth_GBps", float("nan")))
    row = {
        "ceiling": READ_CEILING,
        "value": float(best["bandwidth_GBps"]),
        "unit": "GB/s",
        "transfer_bytes": int(best["bytes_read"]),
        "fraction_of_theoretical_peak": float(best["bandwidth_GBps"]) / peak,
        "how": f"read-only streaming kernel ({READ_FILE}), bytes read, fastest correct of "
        f"{len(read)} launches ({int(best['blocks'])} x {int(best['threads_per_block'])}), median of repeats",
    }
    return pd.concat([ceilings, pd.DataFrame([row])], ignore_index=True)
