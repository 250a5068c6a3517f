"""Launch recipes of the per-k Floyd-Warshall kernels (chapters 01-03), one per kernel, here only.

A per-k kernel relaxes the whole matrix through one vertex k per launch; the host loops over k.
Each recipe returns a plan factory: given n, the ``PerKLaunch`` (kernel, grid, block, arguments,
dynamic shared memory) of one solve. Notebooks give each its label and the columns they sweep;
the recipe itself exists once.

| recipe | kernel file | thread mapping |
|---|---|---|
| ``basic(b)`` | fw_basic_2d.cu | a b x b block per b x b tile of the matrix (lab 000 §2.1) |
| ``coalesced(t)`` | fw_coalesced.cu | one thread per entry, row order, t per block (lab 000 §2.2) |
| ``segment(s, t)`` | fw_coalesced.cu | s consecutive entries per thread (lab 000 §2.3) |
| ``tile(t, published)`` | fw_shared_tile.cu | lab 000 §2.4's shared tile, TILE = t |
| ``row_segment(s, published)`` | fw_shared_row.cu | lab 000 §2.5: a row segment of s threads shares d[i][k] |
| ``kslices(b, published)`` | fw_shared_kslices.cu | team 5 (lab 003 §4): row k and column k in shared memory |
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from cudalab.core.kernels import load_kernel
from cudalab.labs.fw.harness import PerKLaunch, ceil_div
from cudalab.toolchain import sanitizer

PlanFactory = Callable[[int], PerKLaunch]
INT32 = 4


def _square(kernel: Any, b: int, shared_mem: int = 0, floor: bool = False) -> PlanFactory:
    """A b x b block per b x b tile; ``floor`` drops the partial tiles (as team 5's launch did)."""
    def plan(n: int) -> PerKLaunch:
        grid = (n // b, n // b) if floor else (ceil_div(n, b), ceil_div(n, b))
        return PerKLaunch(kernel, grid, (b, b), shared_mem=shared_mem)
    return plan


def basic(b: int) -> PlanFactory:
    """The basic kernel with b x b threads per block: chapter 01's subject, everyone's yardstick."""
    return _square(load_kernel("fw_basic_2d.cu", "fw_basic_2d"), b)


def coalesced(threads: int) -> PlanFactory:
    """One thread per entry in row order, ``threads`` per block: consecutive threads, consecutive j."""
    kernel = load_kernel("fw_coalesced.cu", "fw_coalesced")
    return lambda n: PerKLaunch(kernel, (ceil_div(n * n, threads),), (threads,))


def segment(s: int, threads: int) -> PlanFactory:
    """Each thread relaxes ``s`` consecutive entries of a row; ``threads`` per block."""
    kernel = load_kernel("fw_coalesced.cu", "fw_coalesced_segment")
    return lambda n: PerKLaunch(kernel, (ceil_div(n * n, threads * s),), (threads,),
                                args=lambda m, k, n: (m, np.int32(k), np.int32(n), np.int32(s)))


def _name(base: str, published: bool) -> str:
    return f"{base}_published" if published else base


def tile(t: int, published: bool = False) -> PlanFactory:
    """Lab 000's shared tile of t x t threads (``-DTILE=t``), as published or with the barrier fixed."""
    return _square(load_kernel("fw_shared_tile.cu", _name("fw_shared_tile", published), options=(f"-DTILE={t}",)), t)


def row_segment(s: int, published: bool = False) -> PlanFactory:
    """Lab 000's row segment: s threads of one row share d[i][k] through shared memory."""
    kernel = load_kernel("fw_shared_row.cu", _name("fw_shared_row", published))
    return lambda n: PerKLaunch(kernel, (n, ceil_div(n, s)), (1, s))


def kslices(b: int, published: bool = False) -> PlanFactory:
    """Team 5's k-slices on b x b blocks. As published: one shared array of b ints for both the
    row and the column slice, and a floor grid that skips the partial tiles; fixed: two arrays
    and a ceil grid."""
    kernel = load_kernel("fw_shared_kslices.cu", _name("fw_shared_kslices", published))
    return _square(kernel, b, shared_mem=INT32 * b if published else 2 * INT32 * b, floor=published)


# --------------------------------------------------------------- bytes model


def step_bytes(n: int) -> int:
    """One per-k step: read and write every d[i][j] once (row k and column k, n entries each,
    are read too: negligible beside n^2, and counted)."""
    return INT32 * (2 * n * n + 2 * n)


def solve_bytes(n: int) -> int:
    """A whole solve: n steps."""
    return n * step_bytes(n)


# --------------------------------------------------------------- barrier check


def synccheck(file: str, kernel: str, block: tuple[int, int], n: int, options: Sequence[str] = (),
              timeout_s: int = 300) -> dict[str, Any]:
    """compute-sanitizer's synccheck of one step (k = n/2) of a per-k kernel on a ceil grid over
    a sparse graph: a row with the number of barrier errors (None where it could not run)."""
    row = {"file": file, "kernel": kernel, "block": f"{block[0]}x{block[1]}", "n": n, "options": " ".join(options)}
    target = ["-m", "cudalab.labs.fw._sanitizer_target", file, kernel, str(block[0]), str(block[1]), str(n), *options]
    return {**row, **sanitizer.synccheck(target, timeout_s)}


def synccheck_table(cases: Sequence[tuple[str, str, tuple[int, int], int, Sequence[str]]]) -> pd.DataFrame:
    return pd.DataFrame([synccheck(*case) for case in cases])


# A per-k kernel reads d[i][j] and writes it once per step; d[i][k] and d[k][j] are shared by a
# row or column of threads and come from cache: 8 bytes of DRAM traffic per relaxation.
BYTES_PER_RELAXATION = 8.0


def roofline_points(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as roofline points: relaxations per byte (``BYTES_PER_RELAXATION``) and the
    relaxations per second achieved, n^3 over the time of a solve."""
    return frame.assign(label=frame["variant"], intensity=1.0 / BYTES_PER_RELAXATION,
                        ops_per_s=frame["n"].astype(float) ** 3 / (frame["time_ms"] / 1e3))
