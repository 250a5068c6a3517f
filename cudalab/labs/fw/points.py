"""The explorer's recipes for one point of chapters 01-03 (the per-k Floyd-Warshall kernels), and
the step every Floyd-Warshall point shares (chapter 04's too): one variant at one N through the
chapters' own sweep (``labs.fw.harness.sweep``), checked as the sweep checks it.

Each recipe is declared here, beside the family's code, and handed to the explorer by its
chapter's notebook (``explore(lab, "block_sweep", point=BLOCK_SIZE)``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.errors import CudalabError
from cudalab.core.launch import Launch
from cudalab.labs.points import PointRecipe, require_used, seed_of, timing_of, with_occupancy


def fw_point(
    variant: Any, n: int, launches: Sequence[Launch], kernel_file: str | Path | None, what: str, params: dict[str, Any]
) -> pd.DataFrame:
    """One Floyd-Warshall variant at one n through ``labs.fw.harness.sweep`` (its reference checked
    by CuPy's min-plus solve on the GPU, as the sweep does beyond ``cpu_max_n``), with the
    occupancy of its last launch (the one that does the work). ``params``: the chapter's (its seed
    and time limit)."""
    from cudalab.labs.fw import harness as fw

    if launches:
        require_used(kernel_file, launches, what)
    gpu, _ = fw.sweep(
        [variant], [n], seed=seed_of(params), cpu_max_n=0, timing=timing_of(params), desc="point", show_progress=False
    )
    return with_occupancy(gpu, launches[-1] if launches else None)


# ------------------------------------------------------------------------------ 01: block size


def block_size_variant(point: dict[str, Any], kernel_file: str | Path | None = None) -> tuple[Any, list[Launch]]:
    """Chapter 01's point as a sweep variant (the basic kernel on block_edge x block_edge threads)
    and its launch: for the explorer's recipe and the grader's checks (``labs.fw.checks``)."""
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    b = point["block_edge"]
    spec = per_k.launch("basic", b, file=kernel_file)
    variant = fw.Variant(f"{b}x{b}", {"block_edge": b, "threads_per_block": b * b}, per_k.basic(b, file=kernel_file))
    return variant, [spec]


def _block_size_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    from cudalab.core.gpu import attributes
    from cudalab.core.kernels import kernel_resources

    variant, (spec,) = block_size_variant(point, kernel_file)
    rows = fw_point(variant, point["n"], [spec], kernel_file, "the basic kernel", params or {})
    return rows.assign(**kernel_resources(spec.compiled()), l2_cache_bytes=attributes()["L2CacheSize"])


BLOCK_SIZE = PointRecipe(
    "01_block_size",
    "block_sweep",
    {"n": int, "block_edge": int},
    {"n": 3000, "block_edge": 24},
    "fw_basic_2d.cu",
    {},
    _block_size_point,
    "the basic kernel on block_edge x block_edge threads at one N",
)


# ------------------------------------------------------------------------------ 02: coalescing


def coalescing_variant(point: dict[str, Any], kernel_file: str | Path | None = None) -> tuple[Any, list[Launch]]:
    """Chapter 02's row-order point as a sweep variant and its launch (see ``block_size_variant``)."""
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    t, s, kernel = point["threads_per_block"], point["segment_size"], point["kernel"]
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
    return variant, [spec]


def _coalescing_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    variant, specs = coalescing_variant(point, kernel_file)
    return fw_point(variant, point["n"], specs, kernel_file, f"the {point['kernel']} kernel", params or {})


COALESCING = PointRecipe(
    "02_coalescing",
    "fw_sweep",
    {"n": int, "threads_per_block": int, "segment_size": int},
    {"n": 1024, "threads_per_block": 192, "segment_size": 1, "kernel": "coalesced"},
    "fw_coalesced.cu",
    {"kernel": ("coalesced", "coalesced_segment")},
    _coalescing_point,
    "the coalesced kernel (one entry per thread) or its segmented form at one N",
)


# ------------------------------------------------------------------------------ 03: shared memory

_SHARED_RECIPES = {  # chapter 03's kernel column: (per-k recipe, how its variant is labelled)
    "shared_tile": ("tile", lambda b, v: f"tile {b}x{b} ({v})"),
    "shared_row": ("row_segment", lambda b, v: f"row segment {b} ({v})"),
    "shared_kslices": ("kslices", lambda b, v: f"k-slices {b}x{b} ({v})"),
    "basic": ("basic", lambda b, v: f"basic {b}x{b}"),
}


def shared_variant(point: dict[str, Any], kernel_file: str | Path | None = None) -> tuple[Any, list[Launch]]:
    """Chapter 03's point as a sweep variant and its launch (see ``block_size_variant``)."""
    from cudalab.labs.fw import harness as fw
    from cudalab.labs.fw import per_k

    b, kernel, published = point["block"], point["kernel"], bool(point["published"])
    recipe, label = _SHARED_RECIPES[kernel]
    version = "published" if published else "fixed"
    if recipe == "basic":
        spec, plan = per_k.launch("basic", b, file=kernel_file), per_k.basic(b, kernel_file)
        published = True  # the basic kernel is as published (the chapter's table says so)
    else:
        spec = per_k.launch(recipe, b, published=published, file=kernel_file)
        plan = getattr(per_k, recipe)(b, published, kernel_file)
    variant = fw.Variant(label(b, version), {"kernel": kernel, "block": b, "published": published}, plan)
    return variant, [spec]


def _shared_point(
    point: dict[str, Any], kernel_file: str | Path | None = None, params: dict[str, Any] | None = None
) -> pd.DataFrame:
    variant, specs = shared_variant(point, kernel_file)
    return fw_point(variant, point["n"], specs, kernel_file, f"the {point['kernel']} kernel", params or {})


SHARED_MEMORY = PointRecipe(
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
)
