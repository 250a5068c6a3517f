"""Launch recipes of the per-k Floyd-Warshall kernels (chapters 01-03), one per kernel, here only.

A per-k kernel relaxes the whole matrix through one vertex k per launch; the host loops over k.
``launch(recipe, ...)`` describes what a recipe compiles and how it launches, without a GPU (a
``core.launch.Launch``: the chapters' occupancy tables and parallel compile take it); each recipe
below builds its plan factory from that one description: given n, the ``PerKPlan`` (the launch
over its grid for n, the kernel compiled once, the arguments of each k) of one solve. Notebooks
give each its label and the columns they sweep; the recipe itself exists once.

| recipe | kernel file | thread mapping |
|---|---|---|
| ``basic(edge)`` | fw_basic_2d.cu | an edge x edge block per edge x edge tile of the matrix (lab 000 §2.1) |
| ``coalesced(threads)`` | fw_coalesced.cu | one thread per entry, row order (lab 000 §2.2) |
| ``segment(s, threads)`` | fw_coalesced.cu | s consecutive entries per thread (lab 000 §2.3) |
| ``tile(edge, published)`` | fw_shared_tile.cu | lab 000 §2.4's shared tile, TILE = edge |
| ``row_segment(s, published)`` | fw_shared_row.cu | lab 000 §2.5: a row segment of s threads shares d[i][k] |
| ``kslices(edge, published)`` | fw_shared_kslices.cu | team 5 (lab 003 §4): row k and column k in shared memory |

The bytes model of a per-k solve and the barrier check of its kernels (compute-sanitizer's
synccheck) follow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cudalab.core.launch import Dim3, Launch
from cudalab.labs.fw.harness import PerKPlan, ceil_div
from cudalab.toolchain import sanitizer

PlanFactory = Callable[[int], PerKPlan]
INT32 = 4


def launch(recipe: str, *args: int, published: bool = False, file: str | Path | None = None) -> Launch:
    """What a recipe compiles and how it launches, without compiling anything (no GPU needed): a
    ``Launch`` without its grid (that depends on n), labelled with its block shape (``block``,
    e.g. "16x16", as the chapters' tables show it), its recipe's arguments as ``tunables``. The
    recipes below build their plans from it, so what an occupancy table lists is what the
    chapters time.

    ``launch("basic", edge)``, ``("coalesced", threads)``, ``("segment", s, threads)``,
    ``("tile", edge, published=)``, ``("row_segment", s, published=)``,
    ``("kslices", edge, published=)``. ``file``: a copy of the recipe's kernel file to build
    instead (``Launch.from_copy``: a scratch copy being edited)."""
    copy, options, shared = file, (), 0  # (``file`` names the recipe's own file below)
    if recipe == "basic":
        (edge,) = args
        file, kernel, block, tunables = "fw_basic_2d.cu", "fw_basic_2d", Dim3.square(edge), {"block_edge": edge}
    elif recipe == "coalesced":
        (threads,) = args
        file, kernel, block, tunables = "fw_coalesced.cu", "fw_coalesced", Dim3(threads), {"threads": threads}
    elif recipe == "segment":
        s, threads = args
        file, kernel, block = "fw_coalesced.cu", "fw_coalesced_segment", Dim3(threads)
        tunables = {"segment_size": s, "threads": threads}
    elif recipe == "tile":
        (edge,) = args
        file, kernel, block = "fw_shared_tile.cu", _name("fw_shared_tile", published), Dim3.square(edge)
        options, tunables = (f"-DTILE={edge}",), {"tile_edge": edge}
    elif recipe == "row_segment":
        (s,) = args
        file, kernel, block = "fw_shared_row.cu", _name("fw_shared_row", published), Dim3(1, s)
        tunables = {"segment_threads": s}
    elif recipe == "kslices":
        (edge,) = args
        file, kernel, block = "fw_shared_kslices.cu", _name("fw_shared_kslices", published), Dim3.square(edge)
        shared, tunables = (INT32 * edge if published else 2 * INT32 * edge), {"block_edge": edge}
    else:
        raise ValueError(f"unknown per-k recipe {recipe!r}")
    if recipe in ("tile", "row_segment", "kslices"):
        tunables["published"] = published
    return Launch(
        file,
        kernel,
        block,
        options=options,
        dynamic_shared_bytes=shared,
        arguments=("matrix", "k", "n") + (("segment_size",) if recipe == "segment" else ()),
        tunables=tunables,
        labels={"block": str(block)},
    ).from_copy(copy)


def _square(spec: Launch, floor: bool = False) -> PlanFactory:
    """An edge x edge block per edge x edge tile; ``floor`` drops the partial tiles (as team 5's
    launch did)."""
    kernel, edge = spec.compiled(), spec.block.edge

    def plan(n: int) -> PerKPlan:
        tiles = n // edge if floor else ceil_div(n, edge)
        return PerKPlan.over(spec, (tiles, tiles), kernel)

    return plan


def basic(edge: int, file: str | Path | None = None) -> PlanFactory:
    """The basic kernel with edge x edge threads per block: chapter 01's subject, everyone's yardstick.
    ``file``, here and in the recipes below: a copy of the kernel file to build instead (``launch``)."""
    return _square(launch("basic", edge, file=file))


def coalesced(threads: int, file: str | Path | None = None) -> PlanFactory:
    """One thread per entry in row order, ``threads`` per block: consecutive threads, consecutive j."""
    spec = launch("coalesced", threads, file=file)
    kernel = spec.compiled()
    return lambda n: PerKPlan.over(spec, (ceil_div(n * n, threads),), kernel)


def segment(s: int, threads: int, file: str | Path | None = None) -> PlanFactory:
    """Each thread relaxes ``s`` consecutive entries of a row; ``threads`` per block."""
    spec = launch("segment", s, threads, file=file)
    kernel = spec.compiled()
    return lambda n: PerKPlan.over(
        spec,
        (ceil_div(n * n, threads * s),),
        kernel,
        args=lambda m, k, n: (m, np.int32(k), np.int32(n), np.int32(s)),
    )


def _name(base: str, published: bool) -> str:
    return f"{base}_published" if published else base


def tile(edge: int, published: bool = False, file: str | Path | None = None) -> PlanFactory:
    """Lab 000's shared tile of edge x edge threads (``-DTILE=edge``), as published or with the
    barrier fixed."""
    return _square(launch("tile", edge, published=published, file=file))


def row_segment(s: int, published: bool = False, file: str | Path | None = None) -> PlanFactory:
    """Lab 000's row segment: s threads of one row share d[i][k] through shared memory."""
    spec = launch("row_segment", s, published=published, file=file)
    kernel = spec.compiled()
    return lambda n: PerKPlan.over(spec, (n, ceil_div(n, s)), kernel)


def kslices(edge: int, published: bool = False, file: str | Path | None = None) -> PlanFactory:
    """Team 5's k-slices on edge x edge blocks. As published: one shared array of edge ints for
    both the row and the column slice, and a floor grid that skips the partial tiles; fixed: two
    arrays and a ceil grid."""
    return _square(launch("kslices", edge, published=published, file=file), floor=published)


# --------------------------------------------------------------- bytes model


def step_bytes(n: int) -> int:
    """One per-k step: read and write every d[i][j] once (row k and column k, n entries each,
    are read too: negligible beside n^2, and counted)."""
    return INT32 * (2 * n * n + 2 * n)


def solve_bytes(n: int) -> int:
    """A whole solve: n steps."""
    return n * step_bytes(n)


# --------------------------------------------------------------- barrier check


def synccheck(launch: Launch, n: int, timeout_s: int = 300) -> dict[str, Any]:
    """compute-sanitizer's synccheck of one step (k = n/2) of a per-k kernel's ``launch`` (a 2D
    block) on a ceil grid over a sparse graph: a row with the number of barrier errors (None
    where it could not run)."""
    block = launch.block
    row = {"file": launch.file, "kernel": launch.kernel, "block": f"{block.x}x{block.y}", "n": n}
    row["options"] = " ".join(launch.options)
    target = ["-m", "cudalab.labs.fw._sanitizer_target", launch.file, launch.kernel, str(block.x), str(block.y), str(n)]
    return {**row, **sanitizer.synccheck(target + list(launch.options), timeout_s)}


def synccheck_table(launches: Sequence[Launch], n: int) -> pd.DataFrame:
    """``synccheck`` of each launch at ``n``."""
    return pd.DataFrame([synccheck(launch, n) for launch in launches])


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


# --------------------------------------------------------------- chapter 03: gains over the basic kernel


def shared_results(gpu: pd.DataFrame, cpu: pd.DataFrame, copy_GBps: float) -> pd.DataFrame:
    """Chapter 03's sweep with its comparisons: the speedup over the CPU (``with_speedups``), over
    the basic 16x16 kernel, over the basic kernel on the same block (correct rows only), the
    effective bandwidth of a solve (``solve_bytes``) and its fraction of the copy ceiling
    ``copy_GBps`` measured in the same run."""
    from cudalab.core.rates import effective_GBps
    from cudalab.labs.fw.scaling import speedup_over, with_speedups

    results = with_speedups(gpu, cpu)
    results["speedup_vs_basic16"] = speedup_over(results, results[results["variant"].eq("basic 16x16")])
    basic_same = results[results["kernel"].eq("basic")].set_index(["n", "block"])["time_ms"]
    results["speedup_vs_basic_same_block"] = (
        results.set_index(["n", "block"]).index.map(basic_same) / results["time_ms"]
    ).where(results["status"].eq("ok"))
    results["effective_GBps"] = effective_GBps(results["n"].map(solve_bytes), results["time_ms"])
    results["fraction_of_copy"] = results["effective_GBps"] / copy_GBps
    return results


def gain_over_lab_basic(published: dict[str, pd.DataFrame | None], at: pd.DataFrame, ours: str) -> pd.DataFrame:
    """Each shared-memory kernel's gain over its own lab's basic kernel, one row per (source,
    kernel, block, n): the labs' from their published speedups over the CPU (lab 000 against its
    basic 16x16, lab 003 against the basic kernel on the same block and n), ours (source
    ``ours``) from this run's rows ``at`` (k-slices against the basic kernel on the same block,
    the others against basic 16x16, as the labs did). ``config`` names the kernel and block."""
    rows = []
    for name, pub in published.items():
        if pub is None:
            continue
        basic = pub[pub["kernel"].eq("basic")]
        key = ["n", "block"] if name == "lab003" else ["n"]
        ref = basic[basic["block"].eq(16)] if name == "lab000" else basic
        base = ref.set_index(key)["speedup_vs_cpu"]
        for r in pub[~pub["kernel"].eq("basic")].to_dict("records"):
            b = base.get(tuple(r[k] for k in key) if len(key) > 1 else r["n"])
            if b is not None and not np.isnan(b):
                rows.append(
                    {
                        "kernel": r["kernel"],
                        "block": r["block"],
                        "n": r["n"],
                        "ratio": r["speedup_vs_cpu"] / b,
                        "source": pub.attrs["label"],
                    }
                )
    for r in at[~at["kernel"].eq("basic")].to_dict("records"):
        same_block = r["kernel"] == "shared_kslices"
        ratio = r["speedup_vs_basic_same_block"] if same_block else r["speedup_vs_basic16"]
        rows.append({"kernel": r["kernel"], "block": r["block"], "n": r["n"], "ratio": ratio, "source": ours})
    ratios = pd.DataFrame(rows, columns=["kernel", "block", "n", "ratio", "source"])
    return ratios.assign(
        config=ratios["kernel"].str.replace("shared_", "") + " " + ratios["block"].astype(int).astype(str)
    )
