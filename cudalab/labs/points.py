"""One point of a chapter's main table, measured now: a recipe per chapter.

A chapter's sweep measures a grid fixed by its parameters; a student exploring it asks for one
configuration the grid did not have (chapter 01's block 24x24 at N = 3000, a tile shape of
chapter 05 at one n, one K of chapter 06). A ``PointRecipe`` says what such a point is (the
axes the user sets, a sensible first one, the kernel file a scratch copy starts from) and
measures it by calling the chapter's own sweep with a grid of that one point: the same harness
(CUDA events, warm-up, repeats, the check against the reference), the same rows (the table's
column names, a ``status`` and ``reason`` per row), and the same reasons for a point the GPU
refuses (a block over the thread limit is skipped as the sweep skips it). There is no second
timing path here.

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

from cudalab.core.errors import CudalabError, LaunchRefused
from cudalab.core.launch import Launch

Measure = Callable[..., pd.DataFrame]

# The seeds the chapters' parameters cells declare: a point draws its input as the sweep does.
SEEDS = {
    "01_block_size": 2016,
    "02_coalescing": 2016,
    "03_shared_memory": 2016,
    "04_blocking_factor": 2020,
    "05_matmul_footprint": 475,
    "06_kmeans_device_update": 2011,
}
KMEANS_ITERATIONS = 5  # timed iterations per variant (after 2 warm-up), as chapter 06's parameter
KMEANS_CHECK_N = 20000  # points of chapter 06's float64 check (its check_n): a point is checked at most at this N


@dataclass(frozen=True)
class PointRecipe:
    """How to measure one point of a chapter's main table.

    ``axes`` are what the user sets (name: type), ``kernel_choices`` the further choices (name:
    the allowed values, the first the default), ``defaults`` a first point over both.
    ``measure(point, kernel_file=None)`` returns the point's rows, shaped like the table's;
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


def _with_occupancy(rows: pd.DataFrame, main: Launch | None) -> pd.DataFrame:
    return rows.assign(**occupancy_columns(main)) if len(rows) else rows


def _fw_point(chapter: str, variant, n: int, launches: Sequence[Launch], kernel_file, what: str) -> pd.DataFrame:
    """One Floyd-Warshall variant at one n through ``labs.fw.harness.sweep`` (its reference checked
    by CuPy's min-plus solve on the GPU, as the sweep does beyond ``cpu_max_n``)."""
    from cudalab.labs.fw import harness as fw

    if launches:
        require_used(kernel_file, launches, what)
    gpu, _ = fw.sweep([variant], [n], seed=SEEDS[chapter], cpu_max_n=0, desc=f"{chapter} point")
    return _with_occupancy(gpu, launches[-1] if launches else None)


# ------------------------------------------------------------------------------ 00: copy bandwidth


def _copy_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.labs import bandwidth

    if kernel_file is not None:
        raise CudalabError("chapter 00 times the CUDA runtime's copies (cudaMemcpy): it has no kernel to edit")
    return bandwidth.bandwidth_sweep([point["transfer_bytes"]], directions=[point["direction"]])


# ------------------------------------------------------------------------------ 01-03: per-k kernels


def _block_size_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.core.gpu import attributes
    from cudalab.core.kernels import kernel_resources
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    b, n = point["block_edge"], point["n"]
    spec = per_k.launch("basic", b, file=kernel_file)
    variant = fw.Variant(f"{b}x{b}", {"block_edge": b, "threads_per_block": b * b}, per_k.basic(b, file=kernel_file))
    rows = _fw_point("01_block_size", variant, n, [spec], kernel_file, "the basic kernel")
    return rows.assign(**kernel_resources(spec.compiled()), l2_cache_bytes=attributes()["L2CacheSize"])


def _coalescing_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    n, t, s, kernel = point["n"], point["threads_per_block"], point["segment_size"], point["kernel"]
    if kernel == "coalesced":
        if s != 1:
            raise CudalabError(
                f"the coalesced kernel relaxes one entry per thread (segment_size 1, not {s}); "
                "choose coalesced_segment for segments"
            )
        label, spec, plan = f"coalesced {t}", per_k.launch("coalesced", t, file=kernel_file), per_k.coalesced
        variant = fw.Variant(label, {"kernel": kernel, "threads_per_block": t, "segment_size": 1}, plan(t, kernel_file))
    else:
        label = f"segment {s}" + ("" if t == 128 else f", {t} threads")  # the chapter's segments run 128 threads
        spec = per_k.launch("segment", s, t, file=kernel_file)
        fields = {"kernel": kernel, "threads_per_block": t, "segment_size": s}
        variant = fw.Variant(label, fields, per_k.segment(s, t, kernel_file))
    return _fw_point("02_coalescing", variant, n, [spec], kernel_file, f"the {kernel} kernel")


_SHARED_RECIPES = {  # chapter 03's kernel column: (per-k recipe, how its variant is labelled)
    "shared_tile": ("tile", lambda b, v: f"tile {b}x{b} ({v})"),
    "shared_row": ("row_segment", lambda b, v: f"row segment {b} ({v})"),
    "shared_kslices": ("kslices", lambda b, v: f"k-slices {b}x{b} ({v})"),
    "basic": ("basic", lambda b, v: f"basic {b}x{b}"),
}


def _shared_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    n, b, kernel, published = point["n"], point["block"], point["kernel"], bool(point["published"])
    recipe, label = _SHARED_RECIPES[kernel]
    version = "published" if published else "fixed"
    if recipe == "basic":
        spec, plan = per_k.launch("basic", b, file=kernel_file), per_k.basic(b, kernel_file)
        published = True  # the basic kernel is as published (the chapter's table says so)
    else:
        spec = per_k.launch(recipe, b, published=published, file=kernel_file)
        plan = getattr(per_k, recipe)(b, published, kernel_file)
    variant = fw.Variant(label(b, version), {"kernel": kernel, "block": b, "published": published}, plan)
    return _fw_point("03_shared_memory", variant, n, [spec], kernel_file, f"the {kernel} kernel")


# ------------------------------------------------------------------------------ 04: blocked kernels


def _blocked_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.labs.fw.blocked import kernels, models, variants

    n, bf, kernel = point["n"], point["block_factor"], point["kernel"]
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
        launches = listed()  # phase 3 last: the launch that does the work
    except LaunchRefused:  # a blocking factor the kernel does not build for: the sweep skips it, saying why
        launches = []
    rows = _fw_point("04_blocking_factor", variant, n, launches, kernel_file, f"the {kernel} kernel")
    return models.with_rates(rows) if "time_ms" in rows else rows


# ------------------------------------------------------------------------------ 05: matmul footprints


def _footprint_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.labs import matmul as mm

    n, b, foot = point["n"], point["block_x"], point["footprint"]
    kernel = mm.footprint(b, foot).from_copy(kernel_file)
    require_used(kernel_file, [kernel.launch()], "lab 002's footprint kernel")
    if not mm.refusal(kernel, mm.present_limits()):
        kernel.compile()  # a copy that does not compile says where, here (the sweep would only mark it failed)
    frame = mm.sweep([kernel], [n], seed=SEEDS["05_matmul_footprint"], desc="footprint point")
    rows = frame[~frame["kernel"].eq(mm.CUBLAS)].reset_index(drop=True)  # cuBLAS: in its columns, same run
    return _with_occupancy(rows, kernel.launch(n))


# ------------------------------------------------------------------------------ 06: k-means


def _kmeans_point(point: dict[str, Any], kernel_file: str | Path | None = None) -> pd.DataFrame:
    from cudalab.labs.kmeans import chapter as km
    from cudalab.labs.kmeans import gpu

    n, d, k, variant = point["n"], point["d"], point["k"], point["variant"]
    seed = SEEDS["06_kmeans_device_update"]
    launches = list(gpu.stage_launches(variant, n, d, k, file=kernel_file).values())
    require_used(kernel_file, launches, f"the {variant} variant")
    stages = km.sweep([n], [d], [k], d, k, KMEANS_ITERATIONS, seed, variants=[variant], file=kernel_file)
    if stages["status"].eq("ok").any():
        check = km.correctness(
            min(n, KMEANS_CHECK_N), d, k, seed, KMEANS_ITERATIONS, variants=[variant], file=kernel_file
        )
        wrong = check[check["status"].eq("wrong")]
        if len(wrong):
            why = f"failed the float64 check at N = {int(check['n'].iloc[0]):,}: {wrong['reason'].iloc[0]}"
            stages = stages.assign(status="wrong", reason=why)
    return _with_occupancy(stages, launches[0] if launches else None)


# ------------------------------------------------------------------------------ the recipes


def _recipes() -> dict[str, PointRecipe]:
    from cudalab.labs.bandwidth import DIRECTIONS
    from cudalab.labs.kmeans.gpu import LADDER

    km_files = {
        "host_update": "km_00_assign.cu",
        "device_update": "km_01_device_update.cu",
        "shared_buffers": "km_02_shared_buffers.cu",
        "fused": "km_03_fused.cu",
        "tiled": "km_04_tiled.cu",
        "fixed": "km_05_fixed_point.cu",
        "dot": "km_06_dot_assign.cu",
        "tensor": "km_07_tensor_scores.cu",
    }
    recipes = [
        PointRecipe(
            "00_gpu_capabilities",
            "copy_bandwidth",
            {"transfer_bytes": int},
            {"transfer_bytes": 4 << 20, "direction": DIRECTIONS[2]},
            "",
            {"direction": DIRECTIONS[2:] + DIRECTIONS[:2]},
            _copy_point,
            "one copy size in one direction (cudaMemcpy, no kernel of ours)",
        ),
        PointRecipe(
            "01_block_size",
            "block_sweep",
            {"n": int, "block_edge": int},
            {"n": 3000, "block_edge": 24},
            "fw_basic_2d.cu",
            {},
            _block_size_point,
            "the basic kernel on block_edge x block_edge threads at one N",
        ),
        PointRecipe(
            "02_coalescing",
            "fw_sweep",
            {"n": int, "threads_per_block": int, "segment_size": int},
            {"n": 1024, "threads_per_block": 192, "segment_size": 1, "kernel": "coalesced"},
            "fw_coalesced.cu",
            {"kernel": ("coalesced", "coalesced_segment")},
            _coalescing_point,
            "the coalesced kernel (one entry per thread) or its segmented form at one N",
        ),
        PointRecipe(
            "03_shared_memory",
            "shared_sweep",
            {"n": int, "block": int},
            {"n": 1024, "block": 24, "kernel": "shared_tile", "published": False},
            "fw_shared_tile.cu",
            {"kernel": tuple(_SHARED_RECIPES), "published": (False, True)},
            _shared_point,
            "one shared-memory kernel at one block (tile edge, row segment, k-slice edge) and N",
            files={
                "kernel": {
                    "shared_tile": "fw_shared_tile.cu",
                    "shared_row": "fw_shared_row.cu",
                    "shared_kslices": "fw_shared_kslices.cu",
                    "basic": "fw_basic_2d.cu",
                }
            },
        ),
        PointRecipe(
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
        ),
        PointRecipe(
            "05_matmul_footprint",
            "footprint_sweep",
            {"n": int, "block_x": int, "footprint": int},
            {"n": 1024, "block_x": 8, "footprint": 40},
            "mm_02_footprint.cu",
            {},
            _footprint_point,
            "lab 002's footprint kernel: block_x x block_x threads, a footprint x footprint patch, at one n",
        ),
        PointRecipe(
            "06_kmeans_device_update",
            "stage_times",
            {"n": int, "d": int, "k": int},
            {"n": 262144, "d": 32, "k": 48, "variant": "tiled"},
            "km_04_tiled.cu",
            {"variant": ("tiled", "fixed", "dot", "tensor", "fused", *LADDER[:3])},
            _kmeans_point,
            "one k-means variant at one N, D and K",
            files={"variant": km_files},
        ),
    ]
    return {r.chapter: r for r in recipes}


def recipes() -> dict[str, PointRecipe]:
    """Every chapter's recipe, by chapter id."""
    return _recipes()


def recipe(chapter_id: str) -> PointRecipe:
    """The recipe of ``chapter_id`` ("01_block_size", or its number "01"); ``CudalabError`` naming
    the chapters that have one otherwise."""
    known = _recipes()
    if chapter_id in known:
        return known[chapter_id]
    by_number = [r for c, r in known.items() if c.split("_")[0] == str(chapter_id)]
    if len(by_number) == 1:
        return by_number[0]
    raise CudalabError(f"no point recipe for chapter {chapter_id!r}; chapters with one: {', '.join(known)}")
