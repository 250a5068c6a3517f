"""The vecMax partial max reduction (lab 002): timing, checking and its two ceilings.

Each configuration is timed (kernel only, CUDA events) on one large random array, its partial
results poisoned with NaN before every run, then reduced and compared with ``cupy.max`` (CUB) on
the same array: max is exact, so the check is equality. Bandwidth is the bytes model (every float
read once) over the median time, set beside two ceilings measured in the same run: a
device-to-device copy and ``cupy.max`` itself.

The second half mirrors the kernels' index arithmetic in Python (which thread reads which
element) for the access-pattern figure; a GPU test runs the kernels compiled with
``-DTRACE_ACCESS`` and checks that both agree, so the figure shows what the kernels really do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from cudalab.core import baseline
from cudalab.core.errors import LaunchRefused
from cudalab.core.gpu import attributes, require_cupy
from cudalab.core.launch import Dim3, Launch, refusal_types, require_memory
from cudalab.core.rates import effective_GBps
from cudalab.core.sweep import run_sweep
from cudalab.core.timing import back_to_back, summarize, time_gpu
from cudalab.labs.bandwidth import copy_ceiling

FLOAT32 = 4
FILE = "vecmax_coalescing.cu"
KERNELS = ("vecmax00", "vecmax01", "vecmax02")


ARGUMENTS = ("array", "partial results", "n", "elements per thread")


def launch(kernel: str, threads: int, blocks: int | None = None) -> Launch:
    """One kernel's launch: a 1D block of ``threads`` (labelled ``block``), no dynamic shared
    memory, over ``blocks`` blocks where given (the number of blocks changes how many SMs work,
    not what one block occupies)."""
    block = Dim3(threads)
    return Launch(
        FILE,
        kernel,
        block,
        grid=None if blocks is None else Dim3(blocks),
        arguments=ARGUMENTS,
        labels={"block": str(block)},
    )


def launches(threads: Sequence[int], kernels: Sequence[str] = KERNELS) -> list[Launch]:
    """The launches ``sweep`` times, per kernel and threads per block (without their grid)."""
    return [launch(k, t) for k in kernels for t in threads]


def reduction_bytes(n: int) -> int:
    """The bytes model: a max reduction reads every float once (its few partial results are negligible)."""
    return FLOAT32 * n


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


def measure(kernel, spec: Launch, a, expected: float, timing: dict[str, Any]) -> dict[str, Any]:
    """Time ``spec`` (a ``launch`` with its grid; ``kernel`` its compiled kernel) on ``a``
    and check its partial results against ``expected`` (``cupy.max``)."""
    cp = require_cupy()
    n = a.size
    blocks, threads = spec.grid.size, spec.threads
    if spec.kernel == "vecmax02" and (n % 4 or a.data.ptr % 16):
        raise LaunchRefused("vecmax02 reads float4: needs n % 4 == 0 and a 16-byte-aligned array")
    spec.check(kernel)
    pt = per_thread(n, blocks, threads)
    partial = cp.empty(blocks * threads, dtype=cp.float32)
    args = (a, partial, np.int64(n), np.int32(pt))
    samples = time_gpu(lambda: spec(args, kernel=kernel), setup=lambda: partial.fill(np.nan), **timing)
    unwritten = int(cp.isnan(partial).sum())
    got = float(partial.max())
    ok = unwritten == 0 and got == expected
    stats = summarize(samples)
    return {
        **stats,
        "per_thread": pt,
        "threads_total": blocks * threads,
        "bandwidth_GBps": float(effective_GBps(reduction_bytes(n), stats["time_ms"])),
        "status": "ok" if ok else "wrong",
        "reason": "" if ok else f"max {got} vs cupy.max {expected}; {unwritten} partial results never written",
    }


def ceilings(a, timing: dict[str, Any] | None = None) -> pd.DataFrame:
    """The two ceilings of this run: a device-to-device copy (bytes read + written) and
    ``cupy.max`` on the same array (bytes read)."""
    cp = require_cupy()
    timing = timing or {}
    copy = copy_ceiling(min(1 << 30, a.nbytes), timing).iloc[0]
    cub = summarize(time_gpu(lambda: cp.max(a), **timing))
    return pd.DataFrame(
        [
            {
                "ceiling": "device_to_device_copy",
                "time_ms": copy["time_ms"],
                "bytes": copy["bytes_counted"],
                "bandwidth_GBps": copy["bandwidth_GBps"],
            },
            {
                "ceiling": "cupy_max",
                "time_ms": cub["time_ms"],
                "bytes": reduction_bytes(a.size),
                "bandwidth_GBps": float(effective_GBps(reduction_bytes(a.size), cub["time_ms"])),
            },
        ]
    )


def sweep(
    kernels: dict[str, Any],
    n: int,
    blocks: Sequence[int],
    threads: Sequence[int],
    seed: int,
    timing: dict[str, Any] | None = None,
    *,
    show_progress: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every kernel at every (blocks, threads); returns (configurations, ceilings, the check of
    ``cupy.max`` against a back-to-back timing: ``check_cupy_max``)."""
    cp = require_cupy()
    timing = timing or {}
    a = random_array(n, seed)
    expected = float(cp.max(a))
    attrs = attributes()
    full = attrs["MultiProcessorCount"] * attrs["MaxThreadsPerMultiProcessor"]
    points = [{"kernel": k, "blocks": b, "threads_per_block": t} for k in kernels for b in blocks for t in threads]

    def one(p):
        spec = launch(p["kernel"], p["threads_per_block"], p["blocks"])
        row = measure(kernels[p["kernel"]], spec, a, expected, timing)
        return {**row, "n": n, "fills_gpu": row["threads_total"] >= full}

    configs = run_sweep(points, one, desc="vecMax", skip_on=refusal_types(), show_progress=show_progress)
    return (configs, *check_cupy_max(a, ceilings(a, timing), timing))


def check_cupy_max(a, table: pd.DataFrame, timing: dict[str, Any] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Check the ceilings' ``cupy.max`` median against 50 back-to-back calls on the same array in
    this run (``core.baseline.check``: re-measured once if more than 3% off, else flagged).
    Returns the ceilings (``cupy_max`` replaced by an agreeing re-measurement, a
    ``baseline_check`` column saying the verdict) and the check's one-row table."""
    cp = require_cupy()
    timing = timing or {}
    at = table["ceiling"].eq("cupy_max")
    row = baseline.check(
        "cupy.max",
        {"n": int(a.size)},
        float(table.loc[at, "time_ms"].iloc[0]),
        lambda: summarize(time_gpu(lambda: cp.max(a), **timing))["time_ms"],
        lambda: back_to_back(lambda: cp.max(a), calls=baseline.CALLS),
    )
    out = table.copy()
    if row["status"] == baseline.REMEASURED:
        out.loc[at, "time_ms"] = row["time_ms"]
        out.loc[at, "bandwidth_GBps"] = float(effective_GBps(reduction_bytes(a.size), row["time_ms"]))
    out["baseline_check"] = ""
    out.loc[at, "baseline_check"] = row["status"]
    return out, pd.DataFrame([row])


# --------------------------------------------------------------- access pattern (lab 002 Figures 1-2)


def per_thread(n: int, blocks: int, threads: int) -> int:
    """Elements per thread when ``blocks x threads`` threads share ``n`` (the last may get fewer)."""
    return -(-n // (blocks * threads))


def owners(kernel: str, n: int, blocks: int, threads: int) -> np.ndarray:
    """For each element, the global id (blockIdx.x * blockDim.x + threadIdx.x) of its reader; -1 if none."""
    owner = np.full(n, -1, dtype=np.int64)
    pt = per_thread(n, blocks, threads)
    for b in range(blocks):
        for t in range(threads):
            gid = b * threads + t
            if kernel == "vecmax00":  # a contiguous segment per thread
                start = gid * pt
                idx = np.arange(start, min(start + pt, n))
            elif kernel == "vecmax01":  # threads interleave inside the block's chunk
                block_start = b * threads * pt
                idx = np.arange(block_start + t, min(block_start + threads * pt, n), threads)
            elif kernel == "vecmax02":  # the whole grid interleaves, 4 floats (one float4) at a time
                quads = np.arange(gid, n // 4, blocks * threads)
                idx = (4 * quads[:, None] + np.arange(4)).ravel()
            else:
                raise ValueError(f"unknown kernel {kernel!r}")
            owner[idx] = gid
    return owner


def pattern_frame(kernel: str, n: int, blocks: int, threads: int) -> pd.DataFrame:
    """A tidy table in the layout of lab 002's Figures 1 and 2: element, blockIdx.x, threadIdx.x,
    and the order in which the reading thread visits it (its loop step)."""
    owner = owners(kernel, n, blocks, threads)
    step = np.zeros(n, dtype=int)
    seen: dict[int, int] = {}
    for e, g in enumerate(owner):
        if g >= 0:
            step[e] = seen.get(int(g), 0)
            seen[int(g)] = step[e] + 1
    return pd.DataFrame(
        {
            "kernel": kernel,
            "element": np.arange(n),
            "blockIdx_x": np.where(owner >= 0, owner // threads, -1),
            "threadIdx_x": np.where(owner >= 0, owner % threads, -1),
            "step": step,
        }
    )


def plot_pattern(frame: pd.DataFrame, ax=None, title: str = ""):
    """One row of cells per element, coloured by the reading thread, labelled block.thread, with
    the thread's loop step underneath: consecutive elements read in the same step coalesce."""
    ax = ax or plt.subplots(figsize=(max(6, len(frame) * 0.45), 1.6))[1]
    threads = int(frame["threadIdx_x"].max()) + 1
    gid = frame["blockIdx_x"] * threads + frame["threadIdx_x"]
    colors = sns.color_palette("tab20", int(gid.max()) + 1)
    for e, (b, t, g, s) in enumerate(zip(frame["blockIdx_x"], frame["threadIdx_x"], gid, frame["step"])):
        ax.add_patch(plt.Rectangle((e, 0), 1, 1, color=colors[g] if g >= 0 else "white", ec="white"))
        ax.text(e + 0.5, 0.62, f"b{b}.t{t}", ha="center", va="center", fontsize=7)
        ax.text(e + 0.5, 0.25, f"step {s}", ha="center", va="center", fontsize=6, color="0.25")
    ax.set(xlim=(0, len(frame)), ylim=(0, 1), yticks=[], xlabel="element index", title=title)
    ax.set_xticks(np.arange(len(frame)) + 0.5, [str(e) for e in frame["element"]], fontsize=7)
    ax.grid(False)
    return ax


@dataclass(frozen=True)
class ReadVerdict:
    """The best vecMax configuration against the read-only streaming ceiling of chapter 00."""

    fraction: float | None  # of the ceiling; None where no fraction can be quoted
    prose: str  # for the chapter's findings
    ceiling: str  # for the scorecard row: which ceiling, and why there is no fraction where there is none


def against_read_ceiling(best: pd.Series, ceilings: Mapping[str, float]) -> ReadVerdict:
    """Judge ``best`` (a row of the sweep: ``bandwidth_GBps``, ``time_ms``, ``time_ms_q3``,
    ``fraction_of_copy``) against chapter 00's read-only streaming ceiling (``LabHandle.ceilings``).

    vecMax only reads, so its bound is a read-only stream, not the copy (read + write). A fraction
    above 1 is never quoted: where the kernel's slower quartile stays within the ceiling's faster
    quartile (``dram_read_fast_Bps``), the two measured the same bound and the kernel is called at
    the ceiling, both rates given; beyond that spread, chapter 00's kernel did not find the bound,
    and the row says so."""
    read = ceilings.get("dram_read_Bps")
    gbps = float(best["bandwidth_GBps"])
    if not read:
        return ReadVerdict(
            None,
            f"{float(best['fraction_of_copy']):.1%} of the copy ceiling (which moves its bytes twice, read and "
            "write; this run's chapter 00 has no read-only ceiling)",
            "the read-only streaming ceiling (vecMax): not recorded by this run's chapter 00",
        )
    fraction = gbps * 1e9 / read
    named = f"the read-only streaming ceiling (vecMax; chapter 00, {read / 1e9:.0f} GB/s)"
    if fraction <= 1:
        return ReadVerdict(
            fraction, f"{fraction:.1%} of the read-only streaming ceiling (chapter 00, {read / 1e9:.0f} GB/s)", named
        )
    slow_Bps = gbps * 1e9 * float(best["time_ms"]) / float(best["time_ms_q3"])
    if slow_Bps <= ceilings.get("dram_read_fast_Bps", read):
        said = (
            f"at the read-only streaming ceiling: {gbps:.0f} GB/s against chapter 00's {read / 1e9:.0f} GB/s, the "
            "same bound within the two measurements' interquartile spread"
        )
        return ReadVerdict(None, said, f"vecMax {said}")
    said = (
        f"above chapter 00's read-only streaming ceiling ({gbps:.0f} against {read / 1e9:.0f} GB/s, beyond both "
        "measurements' spread), so that kernel did not find the bound"
    )
    return ReadVerdict(None, said, f"the read-only streaming ceiling (vecMax): {said}")
