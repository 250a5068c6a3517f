"""The explorer's recipe for one point of chapter 06: one k-means variant at one N, D and K,
timed by the chapter's own sweep and checked in float64 as its correctness table checks it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.labs.points import PointRecipe, require_used, seed_of, with_occupancy

# Where the chapter's parameters do not say (a recipe used outside the chapter): its defaults.
ITERATIONS = 5  # timed iterations per variant (after 2 warm-up), chapter 06's `iterations`
CHECK_N = 20000  # points of the float64 check (chapter 06's `check_n`): a point is checked at most at this N


def _kmeans_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    from cudalab.labs.kmeans import chapter as km
    from cudalab.labs.kmeans import gpu

    params = params or {}
    n, d, k, variant = point["n"], point["d"], point["k"], point["variant"]
    seed, iterations = seed_of(params), int(params.get("iterations", ITERATIONS))
    launches = list(gpu.stage_launches(variant, n, d, k, file=kernel_file).values())
    require_used(kernel_file, launches, f"the {variant} variant")
    stages = km.sweep([n], [d], [k], d, k, iterations, seed, variants=[variant], file=kernel_file, show_progress=False)
    if stages["status"].eq("ok").any():
        check_n = min(n, int(params.get("check_n", CHECK_N)))
        check = km.correctness(
            check_n, d, k, seed, iterations, variants=[variant], file=kernel_file, show_progress=False
        )
        wrong = check[check["status"].eq("wrong")]
        if len(wrong):
            why = f"failed the float64 check at N = {int(check['n'].iloc[0]):,}: {wrong['reason'].iloc[0]}"
            stages = stages.assign(status="wrong", reason=why)
    return with_occupancy(stages, launches[0] if launches else None)


def _recipe() -> PointRecipe:
    from cudalab.labs.kmeans.gpu import LADDER

    files = {
        "host_update": "km_00_assign.cu",
        "device_update": "km_01_device_update.cu",
        "shared_buffers": "km_02_shared_buffers.cu",
        "fused": "km_03_fused.cu",
        "tiled": "km_04_tiled.cu",
        "fixed": "km_05_fixed_point.cu",
        "dot": "km_06_dot_assign.cu",
        "tensor": "km_07_tensor_scores.cu",
    }
    return PointRecipe(
        "06_kmeans_device_update",
        "stage_times",
        {"n": int, "d": int, "k": int},
        {"n": 262144, "d": 32, "k": 48, "variant": "tiled"},
        "km_04_tiled.cu",
        {"variant": ("tiled", "fixed", "dot", "tensor", "fused", *LADDER[:3])},
        _kmeans_point,
        "one k-means variant at one N, D and K",
        files={"variant": files},
    )


POINT = _recipe()
