"""Chapter 04's point recipes, through the chapters' own sweep: ``POINT`` (the explorer's and the
grader's), one blocked kernel (shared tiles, register tiles or the min-plus product) at one
blocking factor and N; ``LADDER``, one step of lab 001's optimization ladder at one N (its
``ladder`` table), so that a student's ``fw_blocked.cu`` is measured at each step built from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import CudalabError, LaunchRefused
from cudalab.labs.fw.blocked.ladder import OPTIMIZATION_STEPS, LadderStep
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


def _solved(built: tuple[Any, list], n: int, kernel_file: str | Path | None, what: str, params: dict | None):
    """A built variant and its launches (``blocked_variant``, ``ladder_variant``) timed at ``n``
    through the chapters' sweep, with the chapter's rates: a point's rows."""
    from cudalab.labs.fw.blocked import models

    variant, launches = built
    rows = fw_point(variant, n, launches, kernel_file, what, params or {})
    return models.with_rates(rows) if "time_ms" in rows else rows


def _blocked_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    built = blocked_variant(point, kernel_file)
    return _solved(built, point["n"], kernel_file, f"the {point['kernel']} kernel", params)


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


def ladder_step(point: dict[str, Any]) -> LadderStep:
    """The ladder step a point names by its label (``variant``: "5. Modify if-branch to min")."""
    for step in OPTIMIZATION_STEPS:
        if step.label == point["variant"]:
            return step
    known = ", ".join(repr(s.label) for s in OPTIMIZATION_STEPS)
    raise CudalabError(f"no step {point['variant']!r} in lab 001's ladder (its steps: {known})")


def ladder_variant(point: dict[str, Any], kernel_file: str | Path | None = None) -> tuple[Any, list]:
    """A ladder step as a sweep variant, built as the chapter builds it (its file, options and
    blocking factor), from ``kernel_file`` where given: a copy of the step's own file (a student's
    ``fw_blocked.cu`` builds steps 4-7; a copy of another file is refused), and its launches."""
    from cudalab.labs.fw.blocked import kernels

    step = ladder_step(point)
    if kernel_file is not None and Path(kernel_file).name != step.file:  # never the reference's, silently
        raise CudalabError(f"ladder step {step.label!r} builds {step.file}, not {Path(kernel_file).name}")
    copy = kernel_file
    variant = kernels.variant(
        step.label,
        lambda: kernels.plan_for_build(step.file, step.options, step.bf, copy),
        step=step.step,
        lab_step=step.name,
        change=step.change,
        block_factor=step.bf,
    )
    return variant, kernels.phase_launches(step.file, step.options, step.bf, copy)


def _ladder_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    built = ladder_variant(point, kernel_file)
    return _solved(built, point["n"], kernel_file, f"ladder step {point['variant']!r}", params)


LADDER = PointRecipe(
    "04_blocking_factor",
    "ladder",
    {"n": int},
    {"n": 3000, "variant": OPTIMIZATION_STEPS[-1].label},
    "fw_blocked.cu",
    {"variant": tuple(s.label for s in OPTIMIZATION_STEPS)},
    _ladder_point,
    "one step of lab 001's optimization ladder at one N",
    files={"variant": {s.label: s.file for s in OPTIMIZATION_STEPS}},
)
