"""One point of a chapter's main table, measured now: what a recipe is, and the steps recipes share.

A chapter's sweep measures a grid fixed by its parameters; a student exploring it asks for one
configuration the grid did not have (chapter 01's block 24x24 at N = 3000, a tile shape of
chapter 05 at one n, one K of chapter 06). A ``PointRecipe`` says what such a point is (the
axes the user sets, a sensible first one, the kernel file a scratch copy starts from) and
measures it by calling the chapter's own sweep with a grid of that one point: the same harness
(CUDA events, warm-up, repeats, the check against the reference), the same rows (the table's
column names, a ``status`` and ``reason`` per row), and the same reasons for a point the GPU
refuses (a block over the thread limit is skipped as the sweep skips it). There is no second
timing path here.

Each chapter declares its recipe beside its own code, in its kernel family's module (chapter 01's
``labs.fw.points.BLOCK_SIZE``, chapter 06's ``labs.kmeans.point.POINT``), and its notebook hands
it to the explorer (``explore(lab, "block_sweep", point=BLOCK_SIZE)``): nothing here lists the
chapters. A point draws its input as the sweep does, from the chapter's own parameters
(``params``: the notebook's ``seed`` and the rest, as the explorer's ``lab`` holds them).

Each measured row also carries the theoretical occupancy of the point's main launch on the
present GPU (``occupancy_fraction``, ``occupancy_limited_by``), computed from the compiler's
report where nvcc is installed, as the chapter's occupancy table computes it.

``kernel_file`` (a scratch copy of the recipe's ``kernel_file``, ``explore.scratch``) is built
instead of the original through each family's recipes (``Launch.from_copy``); a copy of a file
the point's kernel does not use is refused, so an edit is never silently left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import CudalabError
from cudalab.core.launch import Launch

Measure = Callable[..., pd.DataFrame]


@dataclass(frozen=True)
class PointRecipe:
    """How to measure one point of a chapter's main table.

    ``axes`` are what the user sets (name: type), ``kernel_choices`` the further choices (name:
    the allowed values, the first the default), ``defaults`` a first point over both.
    ``measure(point, kernel_file=None, params={})`` returns the point's rows, shaped like the
    table's, drawn from the chapter's parameters ``params`` (its seed, its iterations, its time
    limit: ``seed_of``, ``timing_of``);
    ``kernel_file`` names the ``kernels_cu`` file a scratch copy starts from ("" where the chapter
    times no kernel of its own). ``about`` says in one line what a point is."""

    chapter: str
    table: str
    axes: dict[str, type]
    defaults: dict[str, Any]
    kernel_file: str
    kernel_choices: dict[str, Any]
    measure: Measure
    about: str = ""
    files: dict[str, str] = field(default_factory=dict)  # kernel file by choice, where a choice picks one

    def kernel_file_for(self, point: dict[str, Any]) -> str:
        """The kernel file the point's kernel is built from (its choice's, where a choice picks one)."""
        for name, by_value in self.files.items():
            value = point.get(name, self.defaults.get(name))
            if str(value) in by_value:
                return by_value[str(value)]
        return self.kernel_file


# ------------------------------------------------------------------------------ shared steps


def occupancy_columns(launch: Launch | None) -> dict[str, Any]:
    """The theoretical occupancy of ``launch`` on the present GPU, as the chapters' occupancy tables
    compute it (``toolchain.occupancy_report``); empty where there is no launch, no nvcc, or the
    compiler's report cannot be had (the measured row says why it has no time either)."""
    if launch is None:
        return {}
    from cudalab.core.gpu import compute_capability
    from cudalab.toolchain.occupancy_report import launch_occupancy

    cc = compute_capability()
    if cc is None:
        return {}
    try:
        frame, _ = launch_occupancy([launch], cc)
    except CudalabError:
        return {}
    row = frame.iloc[0]
    return {"occupancy_fraction": float(row["occupancy_fraction"]), "occupancy_limited_by": str(row["limited_by"])}


def require_used(kernel_file: str | Path | None, launches: Sequence[Launch], what: str) -> None:
    """Refuse a scratch copy that none of the point's ``launches`` builds from: its edits would be
    silently left out of the measurement."""
    if kernel_file is None:
        return
    files = sorted({Path(x.file).name for x in launches})
    if str(kernel_file) not in {x.file for x in launches}:
        raise CudalabError(
            f"{Path(kernel_file).name} is not a kernel file of {what} (it builds from {', '.join(files)}): "
            "choose the kernel this copy belongs to, or copy one of those files"
        )


def with_occupancy(rows: pd.DataFrame, main: Launch | None) -> pd.DataFrame:
    """``rows`` with the occupancy of the point's main launch (``occupancy_columns``), where any."""
    return rows.assign(**occupancy_columns(main)) if len(rows) else rows


def seed_of(params: dict[str, Any]) -> int:
    """The seed a point draws its input with: the chapter's own ``seed`` parameter, as its sweep."""
    if "seed" not in params:
        raise CudalabError("this chapter's parameters have no seed: open the chapter (open_chapter) before measuring")
    return int(params["seed"])


def timing_of(params: dict[str, Any]) -> dict[str, Any]:
    """``time_gpu``'s options for a point: the chapter's per-point time limit (its standard
    parameter ``point_time_limit_s``, which ``measure_now`` passes with the chapter's own)."""
    return {"time_limit_s": params.get("point_time_limit_s")}
