"""The chapter's models of the blocked kernels: bytes, operands per relaxation, and rates.

What a phase-3 thread loads and relaxes per k, by each kernel's source (``operand_model``); the
bytes phase 3 moves over a solve (``traffic_model``, the fallback where the GPU's counters
cannot be read); DRAM bytes per relaxation for the roofline (``bytes_per_relaxation``); and the
rates a sweep's times give (``with_rates``: relaxations per second, GOPS, fraction of the add+min
ceiling). ``kernel_label`` names a sweep row's kernel as the chapter's figures do.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from cudalab.labs.fw import per_k
from cudalab.labs.fw.blocked.plans import padded_size


def shared_loads_per_relaxation(spec: dict[str, Any]) -> float:
    """Ints a phase-3 thread loads from shared memory per relaxation: 2 (d[i][k] and d[k][j]) for
    ``fw_blocked.cu``; 2r / r^2 for an r x r register tile (0.5 at 4 x 4, 0.25 at 8 x 8)."""
    if spec["kind"] == "shared":
        return 2.0
    tile = 8 if spec["kind"] == "minplus" else int(spec.get("tile", 4))
    return 2.0 / tile


def operand_model(kernel: str, bf: int, tile: int = 4) -> dict[str, Any]:
    """What one phase-3 thread does per k, by the kernel's source: cells it owns, ints and
    shared-memory load instructions it needs for them, relaxations it makes, and DRAM bytes per
    relaxation of its tile (8 / BF: each round reads and writes a cell once for BF relaxations).

    ``kernel``: ``shared`` (``fw_blocked.cu``: scalar loads of d[i][k] and d[k][j] per cell),
    ``registers`` (r x r tiles, operands in 16-byte loads) or ``min-plus`` (8 x 8 tiles, the same
    loads, operands staged in chunks by asynchronous copies)."""
    if kernel == "shared":
        cells = (bf // min(bf, 32)) ** 2
        ints, loads = 2 * cells, 2 * cells
    else:
        r = 8 if kernel == "min-plus" else tile
        cells, ints = r * r, 2 * r
        loads = ints // 4
    return {
        "cells_per_thread": cells,
        "ints_per_k": ints,
        "shared_loads_per_k": loads,
        "relaxations_per_k": cells,
        "relaxations_per_shared_load": cells / loads,
        "dram_bytes_per_relaxation": 8.0 / bf,
    }


def kernel_label(row: Any) -> str:
    """A sweep row's kernel as the chapter's figures name it: ``shared``, ``registers 4x4 + DPX``,
    ``min-plus 8x8`` ... (a recording made before the register tile was a column means 4 x 4)."""
    kernel = str(getattr(row, "kernel", ""))
    if kernel.startswith("registers") or kernel.startswith("min-plus"):
        tile = getattr(row, "tile", 4)
        tile = int(tile) if tile is not None and tile == tile else 4
        dpx = str(getattr(row, "dpx", True)) != "False"
        return f"{kernel.split(' ')[0]} {tile}x{tile}" + (" + DPX" if dpx else "")
    return kernel


def operand_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """``operand_model`` of each registers and min-plus variant of a blocking-factor sweep
    (``with_rates`` applied) and of the shared-memory kernel at BF 64, beside its fraction of
    the ceiling at each N (``fraction_at_N``, where it ran correctly). ``attrs["best"]`` maps each
    N to the fastest correct row there."""
    ok = sweep[sweep["status"].eq("ok")]
    rows = []
    for variant, group in ok.groupby("variant", sort=False):
        first = group.iloc[0]
        label = kernel_label(first)
        kind = "shared" if label == "shared" else label.split(" ")[0]
        bf = int(first["block_factor"])
        if kind == "shared" and bf != 64:
            continue
        tile = int(label.split(" ")[1].split("x")[0]) if kind != "shared" else 4
        row = {"variant": variant, "block_factor": bf, **operand_model(kind, bf, tile)}
        row.update({f"fraction_at_{int(n)}": f for n, f in zip(group["n"], group["fraction_of_ceiling"])})
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["best"] = {int(n): g.sort_values("time_ms").iloc[0] for n, g in ok.groupby("n")}
    return out


def traffic_model(n: int, bf: int, shared_loads_per_relaxation: float = 2.0) -> dict[str, float]:
    """Bytes phase 3 moves over a whole solve, by the model stated in chapter 04: per tile and
    round it loads its own tile and the two pivot tiles (3 BF^2 ints) from global memory and
    stores its own (BF^2); it stores the two pivot tiles in shared memory (2 BF^2) and loads
    ``shared_loads_per_relaxation`` ints per relaxation from there (2 for fw_blocked.cu, whose
    threads read d[i][k] and d[k][j] each step; 0.5 for the 4 x 4 register tiles)."""
    size = padded_size(n, bf)
    rounds = size // bf
    tiles = rounds * (rounds - 1) ** 2
    return {
        "global_load_bytes": 4.0 * 3 * bf * bf * tiles,
        "global_store_bytes": 4.0 * bf * bf * tiles,
        "shared_load_bytes": 4.0 * shared_loads_per_relaxation * bf**3 * tiles,
        "shared_store_bytes": 4.0 * 2 * bf * bf * tiles,
        "relaxations": float(bf**3 * tiles),
    }


def bytes_per_relaxation(row: Any) -> float:
    """DRAM bytes per relaxation by the chapter's model, for a row of the ladder or the
    blocking-factor sweep. A per-k kernel reads and writes its own entry once per step (8 B); a
    blocked kernel reads and writes its own BF x BF tile once per round, for BF^3 relaxations
    (8 / BF bytes). In both, what every thread also reads (row and column k, or the two pivot
    tiles) is shared by a whole row or column of threads or tiles and is served by L2."""
    if getattr(row, "kernel_family", "") == "per-k":
        return per_k.BYTES_PER_RELAXATION
    bf = getattr(row, "block_factor", None)
    return 8.0 / float(bf) if bf is not None and bf == bf and bf > 0 else per_k.BYTES_PER_RELAXATION


def roofline_points(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as roofline points: relaxations per byte of the model, relaxations per second."""
    out = frame.copy()
    out["intensity"] = [1.0 / bytes_per_relaxation(r) for r in out.itertuples()]
    out["ops_per_s"] = out["n"].astype(float) ** 3 / (out["time_ms"] / 1e3)
    return out.assign(label=out["variant"])


def with_rates(frame: pd.DataFrame, ceiling_relaxations_per_s: float | None = None) -> pd.DataFrame:
    """Adds relaxations per second (n^3 / time: useful work, padding not counted), GOPS as two
    integer operations (add, min) per relaxation in lab 001's binary giga, and the fraction of the
    add+min ceiling; rows that are not 'ok' get none."""
    out = frame.copy()
    ok = out["status"].eq("ok")
    seconds = out["time_ms"] * 1e-3
    out["relaxations_per_s"] = (out["n"].astype(float) ** 3 / seconds).where(ok)
    out["GOPS_model"] = (2 * out["relaxations_per_s"] / 2**30).where(ok)
    if ceiling_relaxations_per_s:
        out["fraction_of_ceiling"] = out["relaxations_per_s"] / ceiling_relaxations_per_s
    return out
