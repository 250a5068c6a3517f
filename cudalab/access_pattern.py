"""Which thread reads which element: the vecMax kernels' index arithmetic, in Python.

The functions mirror ``kernels_cu/vecmax_coalescing.cu`` line for line; a GPU test runs the same
kernels compiled with ``-DTRACE_ACCESS`` (each records the reader of every element) and checks
that both agree, so the figure shows what the kernels really do.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns


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
    return pd.DataFrame({"kernel": kernel, "element": np.arange(n), "blockIdx_x": np.where(owner >= 0, owner // threads, -1),
                         "threadIdx_x": np.where(owner >= 0, owner % threads, -1), "step": step})


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
