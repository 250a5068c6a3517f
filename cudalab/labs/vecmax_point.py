"""One point of chapter 02's vecMax table, measured now: one kernel of ``vecmax_coalescing.cu`` on
one grid, through the chapter's own ``vecmax.measure`` (CUDA events, the check against
``cupy.max``), built from a copy of the file where one is given (a student's, ``--kernels``).

A module of its own beside ``vecmax``: the recipe adds nothing to how chapter 02 measures its
sweep, so that chapter's recorded data stays decided by ``vecmax`` alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.labs import vecmax
from cudalab.labs.points import PointRecipe, require_used, seed_of, timing_of, with_occupancy


def _vecmax_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    from cudalab.core.gpu import require_cupy

    params = params or {}
    n, kernel = int(point["n"]), str(point["kernel"])
    spec = vecmax.launch(kernel, int(point["threads_per_block"]), int(point["blocks"])).from_copy(kernel_file)
    require_used(kernel_file, [spec], f"the {kernel} kernel")  # a copy of another file: refused before any work
    cp = require_cupy()
    a = vecmax.random_array(n, seed_of(params))
    row = vecmax.measure(spec.compiled(), spec, a, float(cp.max(a)), timing_of(params))
    fields = {"kernel": kernel, "blocks": point["blocks"], "threads_per_block": point["threads_per_block"], "n": n}
    return with_occupancy(pd.DataFrame([{**fields, **row}]), spec)


# Chapter 02's recipe for a student's vecMax (the explorer's chapter 02 recipe is the row-order kernel's).
VECMAX_POINT = PointRecipe(
    "02_coalescing",
    "vecmax",
    {"n": int, "blocks": int, "threads_per_block": int},
    {"n": 1 << 26, "blocks": 1056, "threads_per_block": 256, "kernel": "vecmax02"},
    vecmax.FILE,
    {"kernel": vecmax.KERNELS},
    _vecmax_point,
    "one vecMax kernel on blocks x threads_per_block threads, over n floats",
)
