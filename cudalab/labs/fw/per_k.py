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

``launch(recipe, *args)`` says what a recipe compiles and how it launches without a GPU (the
chapters' occupancy tables); every recipe builds its launch from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.kernels import load_kernel
from cudalab.labs.fw.harness import PerKLaunch, ceil_div
from cudalab.toolchain import sanitizer

PlanFactory = Callable[[int], PerKLaunch]
INT32 = 4


def launch(recipe: str, *args: int, published: bool = False) -> dict[str, Any]:
    """What a recipe compiles and how it launches, without compiling anything (no GPU needed):
    ``block`` (its shape, e.g. "16x16"), ``file``, ``kernel``, ``options``, ``threads`` per block and
    ``dynamic_shared_bytes``, as ``toolchain.occupancy_report`` takes a launch. The recipes below
    build their launches from it, so what an occupancy table lists is what the chapters time.

    ``launch("basic", b)``, ``("coalesced", t)``, ``("segment", s, t)``, ``("tile", t, published=)``,
    ``("row_segment", s, published=)``, ``("kslices", b, published=)``."""
    options: tuple[str, ...] = ()
    shared = 0
    if recipe == "basic":
        (b,) = args
        file, kernel, block = "fw_basic_2d.cu", "fw_basic_2d", (b, b)
    elif recipe == "coalesced":
        (t,) = args
        file, kernel, block = "fw_coalesced.cu", "fw_coalesced", (t,)
    elif recipe == "segment":
        _, t = args
        file, kernel, block = "fw_coalesced.cu", "fw_coalesced_segment", (t,)
    elif recipe == "tile":
        (t,) = args
        file, kernel, block, options = "fw_shared_tile.cu", _name("fw_shared_tile", published), (t, t), (f"-DTILE={t}",)
    elif recipe == "row_segment":
        (s,) = args
        file, kernel, block = "fw_shared_row.cu", _name("fw_shared_row", published), (1, s)
    elif recipe == "kslices":
        (b,) = args
        file, kernel, block = "fw_shared_kslices.cu", _name("fw_shared_kslices", published), (b, b)
        shared = INT32 * b if published else 2 * INT32 * b
    else:
        raise ValueError(f"unknown per-k recipe {recipe!r}")
    return {
        "block": "x".join(map(str, block)),
        "file": file,
        "kernel": kernel,
        "options": options,
        "threads": int(np.prod(block)),
        "dynamic_shared_bytes": shared,
    }


def _shape(spec: dict[str, Any]) -> tuple[int, ...]:
    return tuple(int(edge) for edge in spec["block"].split("x"))


def _compiled(spec: dict[str, Any]) -> Any:
    return load_kernel(spec["file"], spec["kernel"], options=spec["options"])


def _square(spec: dict[str, Any], floor: bool = False) -> PlanFactory:
    """A b x b block per b x b tile; ``floor`` drops the partial tiles (as team 5's launch did)."""
    kernel, block = _compiled(spec), _shape(spec)
    b = block[0]

    def plan(n: int) -> PerKLaunch:
        grid = (n // b, n // b) if floor else (ceil_div(n, b), ceil_div(n, b))
        return PerKLaunch(kernel, grid, block, shared_mem=spec["dynamic_shared_bytes"])

    return plan


def basic(b: int) -> PlanFactory:
    """The basic kernel with b x b threads per block: chapter 01's subject, everyone's yardstick."""
    return _square(launch("basic", b))


def coalesced(threads: int) -> PlanFactory:
    """One thread per entry in row order, ``threads`` per block: consecutive threads, consecutive j."""
    spec = launch("coalesced", threads)
    kernel = _compiled(spec)
    return lambda n: PerKLaunch(kernel, (ceil_div(n * n, threads),), _shape(spec))


def segment(s: int, threads: int) -> PlanFactory:
    """Each thread relaxes ``s`` consecutive entries of a row; ``threads`` per block."""
    spec = launch("segment", s, threads)
    kernel = _compiled(spec)
    return lambda n: PerKLaunch(
        kernel,
        (ceil_div(n * n, threads * s),),
        _shape(spec),
        args=lambda m, k, n: (m, np.int32(k), np.int32(n), np.int32(s)),
    )


def _name(base: str, published: bool) -> str:
    return f"{base}_published" if published else base


def tile(t: int, published: bool = False) -> PlanFactory:
    """Lab 000's shared tile of t x t threads (``-DTILE=t``), as published or with the barrier fixed."""
    return _square(launch("tile", t, published=published))


def row_segment(s: int, published: bool = False) -> PlanFactory:
    """Lab 000's row segment: s threads of one row share d[i][k] through shared memory."""
    spec = launch("row_segment", s, published=published)
    kernel = _compiled(spec)
    return lambda n: PerKLaunch(kernel, (n, ceil_div(n, s)), _shape(spec))


def kslices(b: int, published: bool = False) -> PlanFactory:
    """Team 5's k-slices on b x b blocks. As published: one shared array of b ints for both the
    row and the column slice, and a floor grid that skips the partial tiles; fixed: two arrays
    and a ceil grid."""
    return _square(launch("kslices", b, published=published), floor=published)


# --------------------------------------------------------------- bytes model


def step_bytes(n: int) -> int:
    """One per-k step: read and write every d[i][j] once (row k and column k, n entries each,
    are read too: negligible beside n^2, and counted)."""
    return INT32 * (2 * n * n + 2 * n)


def solve_bytes(n: int) -> int:
    """A whole solve: n steps."""
    return n * step_bytes(n)


# --------------------------------------------------------------- barrier check


def synccheck(
    file: str, kernel: str, block: tuple[int, int], n: int, options: Sequence[str] = (), timeout_s: int = 300
) -> dict[str, Any]:
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
    return frame.assign(
        label=frame["variant"],
        intensity=1.0 / BYTES_PER_RELAXATION,
        ops_per_s=frame["n"].astype(float) ** 3 / (frame["time_ms"] / 1e3),
    )
