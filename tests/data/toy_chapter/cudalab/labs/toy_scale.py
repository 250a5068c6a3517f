"""A toy chapter's kernel family (tests/test_new_chapter.py): ``kernels_cu/toy_07_scale.cu`` timed
over n, and the explorer's recipe for one point. Added to a copy of the checkout, as a new
chapter's family module is added beside the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.kernels import load_kernel
from cudalab.core.timing import summarize, time_gpu
from cudalab.labs.points import PointRecipe, seed_of


def sweep(sizes: list[int], seed: int) -> pd.DataFrame:
    """``scale`` at each n: its median time (CUDA events) and whether y = 2 x came out."""
    import cupy as cp

    kernel = load_kernel("toy_07_scale.cu", "scale")
    rows = []
    for n in sizes:
        x = cp.random.default_rng(seed).random(n, dtype=cp.float32)
        y = cp.empty_like(x)
        launch = lambda n=n, x=x, y=y: kernel(((n + 255) // 256,), (256,), (x, y, cp.float32(2.0), cp.int32(n)))
        times = summarize(time_gpu(launch))
        ok = bool(cp.allclose(y, 2 * x))
        rows.append({"n": n, "kernel": "scale", **times, "status": "ok" if ok else "wrong", "reason": ""})
    return pd.DataFrame(rows)


def _point(point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None):
    return sweep([point["n"]], seed_of(params or {}))


POINT = PointRecipe(
    "07_toy_scale",
    "scale_sweep",
    {"n": int},
    {"n": 3000, "kernel": "scale"},
    "toy_07_scale.cu",
    {"kernel": ("scale",)},
    _point,
    "the scale kernel at one n",
)
