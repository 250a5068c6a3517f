"""Copy bandwidth, as bandwidthTest measures it: pinned host memory, CUDA events.

Host-to-device and device-to-host count the bytes once; device-to-device
counts them twice (each byte is read and written), as bandwidthTest does, so
that number is the DRAM ceiling later chapters compare their kernels with.

A kernel that only reads (chapter 02's vecMax) is not bounded by a copy: DRAM streams reads
faster than it turns between reads and writes. Its ceiling is ``read_stream_sweep``: a read-only
streaming kernel (``kernels_cu/read_stream.cu``) over a few launch grids, each run checked bit for
bit against an XOR reduction of the same array by CuPy; the fastest correct launch is the
read-only ceiling.
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

DIRECTIONS = ("host_to_device", "device_to_host", "device_to_device")
READ_FILE = "read_stream.cu"
READ_KERNEL = "read_stream_xor"
READ_BLOCKS_PER_SM = (1, 2, 4, 8, 16)
READ_THREADS = (256, 512, 1024)
COPY_CEILING = "dram_copy_bandwidth"
READ_CEILING = "dram_read_bandwidth"


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
    sizes_bytes: Sequence[int], directions: Sequence[str] = DIRECTIONS, timing: dict[str, Any] | None = None
) -> pd.DataFrame:
    """One row per (direction, transfer size); sizes that do not fit are skipped."""

    points = [{"direction": d, "transfer_bytes": int(s)} for d in directions for s in sizes_bytes]
    return run_sweep(
        points,
        lambda p: copy_bandwidth(p["direction"], p["transfer_bytes"], timing),
        desc="copy bandwidth",
        skip_on=refusal_types(),
    )


def read_stream_words(nbytes: int = 1 << 31, share: float = 0.3) -> int:
    """The read-only ceiling's array, in 32-bit words: ``nbytes`` (2 GiB, many times any L2), or
    ``share`` of the free GPU memory where that is less; a multiple of 1024 words (16-byte loads)."""
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

    return run_sweep(points, one, desc="read-only stream", skip_on=refusal_types())


def ceilings(bw: pd.DataFrame, spec: pd.DataFrame, read: pd.DataFrame | None = None) -> pd.DataFrame:
    """The memory ceilings later chapters use: device-to-device bandwidth at the largest transfer
    that ran (a kernel that reads and writes), and, where ``read`` (``read_stream_sweep``) is
    given, the fastest correct read-only launch (a kernel that only reads); each with its
    fraction of the theoretical DRAM peak."""
    d2d = bw[bw["direction"].eq("device_to_device") & bw["status"].eq("ok")]
    if d2d.empty:
        raise MeasurementError("no device-to-device copy ran, so there is no memory ceiling")
    top = d2d.loc[d2d["transfer_bytes"].idxmax()]
    peak = float(spec.set_index("key")["value_numeric"].get("peak_dram_bandwidth_GBps", float("nan")))
    rows = [
        {
            "ceiling": COPY_CEILING,
            "value": float(top["bandwidth_GBps"]),
            "unit": "GB/s",
            "transfer_bytes": int(top["transfer_bytes"]),
            "fraction_of_theoretical_peak": float(top["bandwidth_GBps"]) / peak,
            "how": "device-to-device memcpy, bytes read + written, median of repeats",
        }
    ]
    ok = read[read["status"].eq("ok")] if read is not None else pd.DataFrame()
    if len(ok):
        best = ok.loc[ok["bandwidth_GBps"].idxmax()]
        rows.append(
            {
                "ceiling": READ_CEILING,
                "value": float(best["bandwidth_GBps"]),
                "unit": "GB/s",
                "transfer_bytes": int(best["bytes_read"]),
                "fraction_of_theoretical_peak": float(best["bandwidth_GBps"]) / peak,
                "how": f"read-only streaming kernel ({READ_FILE}), bytes read, fastest correct of "
                f"{len(read)} launches ({int(best['blocks'])} x {int(best['threads_per_block'])}), median of repeats",
            }
        )
    return pd.DataFrame(rows)


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
