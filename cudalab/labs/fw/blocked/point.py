"""The explorer's recipe for one point of chapter 04: one blocked kernel (shared tiles, register
tiles or the min-plus product) at one blocking factor and N, through the chapters' own sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import LaunchRefused
from cudalab.labs.fw.points import fw_point
from cudalab.labs.points import PointRecipe


def blocked_variant(point: dict[str, Any], kernel_file: str | Path | None = None) -> tuple[Any, list]:
    """The point's blocked kernel as a sweep variant, and its launches (phase 3 last, the launch that
    does the work; none where the kernel does not build for the point's blocking factor): the one
    place a chapter 04 point becomes a kernel, for the explorer's recipe and the grader's checks
    (``labs.fw.checks``) alike."""
    from cudalab.labs.fw.blocked import kernels, variants

    bf, kernel = point["block_factor"], point["kernel"]
    if kernel == "shared":
        variant = variants.blocking_factor_variants([bf], file=kernel_file)[0]
        listed = lambda: kernels.phase_launches(kernels.SHARED_FILE, kernels.shared_options(bf), bf, kernel_file)
    elif kernel == "registers":
        variant = variants.registers_variants([bf], dpx=[True], tiles=[4], file=kernel_file)[0]
        listed = lambda: kernels.registers_phase_launches(bf, True, 4, kernel_file)
    else:
        variant = variants.minplus_variants([bf], dpx=[True], file=kernel_file)[0]
        listed = lambda: kernels.minplus_phase_launches(bf, True, kernel_file)
    try:
        launches = listed()
    except LaunchRefused:  # a blocking factor the kernel does not build for: the sweep skips it, saying why
        launches = []
    return variant, launches


def _blocked_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    from cudalab.labs.fw.blocked import models

    variant, launches = blocked_variant(point, kernel_file)
    rows = fw_point(variant, point["n"], launches, kernel_file, f"the {point['kernel']} kernel", params or {})
    return models.with_rates(rows) if "time_ms" in rows else rows


POINT = PointRecipe(
    "04_blocking_factor",
    "blocking_factor_sweep",
    {"n": int, "block_factor": int},
    {"n": 2000, "block_factor": 24, "kernel": "shared"},
    "fw_blocked.cu",
    {"kernel": ("shared", "registers", "min-plus")},
    _blocked_point,
    "one blocked kernel at one blocking factor and N",
    files={
        "kernel": {
            "shared": "fw_blocked.cu",
            "registers": "fw_blocked_registers.cu",
            "min-plus": "fw_blocked_minplus.cu",
        }
    },
)
