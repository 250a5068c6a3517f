"""Copy bandwidth, as bandwidthTest measures it: pinned host memory, CUDA events.

Host-to-device and device-to-host count the bytes once; device-to-device
counts them twice (each byte is read and written), as bandwidthTest does, so
that number is the DRAM ceiling later chapters compare their kernels with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.errors import MeasurementError
from cudalab.core.gpu import require_cupy
from cudalab.core.launch import refusal_types, require_memory
from cudalab.core.sweep import run_sweep
from cudalab.core.timing import summarize, time_gpu
from cudalab.labs.points import PointRecipe, timing_of

DIRECTIONS = ("host_to_device", "device_to_host", "device_to_device")


def _buffers(nbytes: int, with_host: bool, seed: int = 0):
    """Random (never zero) source data on the device, and a pinned host buffer if the copy needs one."""
    cp = require_cupy()
    import cupyx

    dev_a = cp.random.default_rng(seed).integers(0, 256, nbytes, dtype=cp.uint8) if nbytes else cp.empty(0, cp.uint8)
    host = None
    if with_host:
        host = cupyx.empty_pinned((nbytes,), dtype=np.uint8)
        dev_a.get(out=host)
    return host, dev_a, cp.empty(nbytes, dtype=cp.uint8)


def copy_bandwidth(direction: str, nbytes: int, timing: dict[str, Any] | None = None) -> dict[str, Any]:
    """Median bandwidth of one memcpy of ``nbytes`` in ``direction``."""
    cp = require_cupy()
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}")
    require_memory(3 * nbytes, f"a {nbytes}-byte copy")
    rt = cp.cuda.runtime
    host, dev_a, dev_b = _buffers(nbytes, with_host=direction != "device_to_device")
    stream = cp.cuda.Stream(non_blocking=True)
    if direction == "host_to_device":
        src, dst, kind = host.ctypes.data, dev_b.data.ptr, rt.memcpyHostToDevice
    elif direction == "device_to_host":
        src, dst, kind = dev_a.data.ptr, host.ctypes.data, rt.memcpyDeviceToHost
    else:
        src, dst, kind = dev_a.data.ptr, dev_b.data.ptr, rt.memcpyDeviceToDevice
    samples = time_gpu(lambda: rt.memcpyAsync(dst, src, nbytes, kind, stream.ptr), stream=stream, **(timing or {}))
    counted = 2 * nbytes if direction == "device_to_device" else nbytes
    stats = summarize(samples)
    # GB/s from the median time; the quartiles of time give the spread in bandwidth.
    return {
        **stats,
        "bytes_counted": counted,
        "bandwidth_GBps": counted / (stats["time_ms"] * 1e-3) / 1e9,
        "bandwidth_GBps_q1": counted / (stats["time_ms_q3"] * 1e-3) / 1e9,
        "bandwidth_GBps_q3": counted / (stats["time_ms_q1"] * 1e-3) / 1e9,
    }


def bandwidth_sweep(
    sizes_bytes: Sequence[int],
    directions: Sequence[str] = DIRECTIONS,
    timing: dict[str, Any] | None = None,
    *,
    show_progress: bool = True,
) -> pd.DataFrame:
    """One row per (direction, transfer size); sizes that do not fit are skipped. ``timing``:
    ``time_gpu``'s options (``Chapter.timing`` carries the chapter's time limit)."""

    points = [{"direction": d, "transfer_bytes": int(s)} for d in directions for s in sizes_bytes]
    return run_sweep(
        points,
        lambda p: copy_bandwidth(p["direction"], p["transfer_bytes"], timing),
        desc="copy bandwidth",
        skip_on=refusal_types(),
        show_progress=show_progress,
    )


def ceilings(bw: pd.DataFrame, spec: pd.DataFrame) -> pd.DataFrame:
    """The memory ceiling later chapters use: device-to-device bandwidth at the largest
    transfer that ran, with its fraction of the theoretical DRAM peak."""
    d2d = bw[bw["direction"].eq("device_to_device") & bw["status"].eq("ok")]
    if d2d.empty:
        raise MeasurementError("no device-to-device copy ran, so there is no memory ceiling")
    top = d2d.loc[d2d["transfer_bytes"].idxmax()]
    peak = float(spec.set_index("key")["value_numeric"].get("peak_dram_bandwidth_GBps", float("nan")))
    return pd.DataFrame(
        [
            {
                "ceiling": "dram_copy_bandwidth",
                "value": float(top["bandwidth_GBps"]),
                "unit": "GB/s",
                "transfer_bytes": int(top["transfer_bytes"]),
                "fraction_of_theoretical_peak": float(top["bandwidth_GBps"]) / peak,
                "how": "device-to-device memcpy, bytes read + written, median of repeats",
            }
        ]
    )


def copy_ceiling(nbytes: int = 1 << 30, timing: dict[str, Any] | None = None) -> pd.DataFrame:
    """The device-to-device copy ceiling, measured now (for chapters that compare with it in the same run)."""
    cp = require_cupy()
    free = cp.cuda.runtime.memGetInfo()[0]
    nbytes = min(nbytes, int(free * 0.3) // 4096 * 4096)
    return pd.DataFrame([{"ceiling": "device_to_device_copy", **copy_bandwidth("device_to_device", nbytes, timing)}])


def from_bandwidthtest_MBps(mbps):
    """GB/s (10^9 bytes/s) from the MB/s that the CUDA samples' bandwidthTest printed: it computes
    ``1024 * bytes / (ms * 2^20)``, i.e. 1 MB = 1,024,000 bytes, so 1 MB/s = 0.001024 GB/s."""
    return mbps * 1.024e6 / 1e9


# ------------------------------------------------------------------------------ the explorer's point


def _copy_point(point: dict[str, Any], kernel_file: str | None = None, params: dict[str, Any] | None = None):
    if kernel_file is not None:
        raise MeasurementError("chapter 00 times the CUDA runtime's copies (cudaMemcpy): it has no kernel to edit")
    return bandwidth_sweep(
        [point["transfer_bytes"]], [point["direction"]], timing=timing_of(params or {}), show_progress=False
    )


# Chapter 00's recipe for the explorer: one copy size, one direction.
COPY_POINT = PointRecipe(
    "00_gpu_capabilities",
    "copy_bandwidth",
    {"transfer_bytes": int},
    {"transfer_bytes": 4 << 20, "direction": DIRECTIONS[2]},
    "",
    {"direction": DIRECTIONS[2:] + DIRECTIONS[:2]},
    _copy_point,
    "one copy size in one direction (cudaMemcpy, no kernel of ours)",
)
