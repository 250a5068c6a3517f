"""Theoretical occupancy against values worked out by hand from the CUDA Occupancy Calculator's rules.

The rules (include/cuda_occupancy.h, the calculator's spreadsheet), applied by hand below:
  warps per block      = ceil(threads / 32)
  by threads per SM    = max warps per SM // warps per block
  by blocks per SM     = the architecture's resident-block limit
  by registers         = (registers per SM / 4 sub-partitions // regs per warp) * 4 // warps per block,
                         regs per warp = ceil(regs * 32 / 256) * 256
  by shared memory     = shared per SM // ceil((static + dynamic + reserved) / unit) * unit,
                         unit 256 B (reserved 0) up to cc 7.x, 128 B (reserved 1 KiB) from cc 8.0
  occupancy            = blocks * warps per block / max warps per SM
Each expected value is computed in the comment beside it, not by the code under test.
"""

import sys
import types
from dataclasses import replace

import pandas as pd
import pytest

from cudalab.core.errors import ProfileError
from cudalab.core.occupancy import SM_LIMITS, cc_key, occupancy, occupancy_table, resident_blocks, sm_limits
from cudalab.toolchain.nvcc import (
    PtxasUsage,
    compile_arch,
    cuda_tool,
    kernel_base_name,
    kernel_resources_for,
    kernel_resources_for_cc,
    supported_archs,
)

needs_nvcc = pytest.mark.skipif(cuda_tool("nvcc") is None, reason="nvcc is not installed")

# (cc, threads, registers, static shared B, dynamic shared B) -> (blocks per SM, warps per SM, occupancy, limited by)
KNOWN = [
    # ---- cc 3.0 (GTX 680): 64 warps, 16 blocks, 64 K registers, 48 KiB shared, 256 B unit
    # 64 threads = 2 warps: threads 64 // 2 = 32; blocks 16; regs 16 * 32 = 512/warp, 16384 // 512 = 32
    # per sub-partition -> 128 warps // 2 = 64; no shared. min 16 -> 32 warps, 32 / 64 = 50 %
    ("3.0", 64, 16, 0, 0, 16, 32, 0.5, "blocks per SM"),
    # 256 threads = 8 warps: threads 64 // 8 = 8; regs 24 * 32 = 768/warp, 16384 // 768 = 21 -> 84 // 8 = 10
    ("3.0", 256, 24, 0, 0, 8, 64, 1.0, "threads per SM"),
    # 256 threads, 37 regs: 1184 -> 1280/warp, 16384 // 1280 = 12 -> 48 warps // 8 = 6; threads 8
    ("3.0", 256, 37, 0, 0, 6, 48, 0.75, "registers"),
    # 128 threads = 4 warps, 10000 B -> 10240 (40 x 256); 49152 // 10240 = 4; threads 16; regs 32
    ("3.0", 128, 16, 10000, 0, 4, 16, 0.25, "shared memory"),
    # 1024 threads, 63 regs (the most cc 3.0 allows): 2016 -> 2048/warp x 32 warps = 65536, fits a
    # block; 16384 // 2048 = 8 -> 32 warps // 32 = 1 block; threads 64 // 32 = 2
    ("3.0", 1024, 63, 0, 0, 1, 32, 0.5, "registers"),
    # ---- cc 5.2 (GM20x): 64 warps, 32 blocks, 64 K registers, 96 KiB shared per SM, 48 KiB per block
    # 32 threads = 1 warp, 32 regs: threads 64; blocks 32; regs 1024/warp -> 16 per sub -> 64 blocks
    ("5.2", 32, 32, 0, 0, 32, 32, 0.5, "blocks per SM"),
    # 512 threads = 16 warps, 24 regs: threads 64 // 16 = 4; regs 768/warp -> 21 per sub -> 84 // 16 = 5
    ("5.2", 512, 24, 0, 0, 4, 64, 1.0, "threads per SM"),
    # 96 threads = 3 warps, 37 regs: 1280/warp -> 12 per sub -> 48 warps // 3 = 16 (the whole register
    # file without sub-partitions would give 65536 // 3840 = 17); threads 64 // 3 = 21; blocks 32
    ("5.2", 96, 37, 0, 0, 16, 48, 0.75, "registers"),
    # 64 threads = 2 warps, 12000 B -> 12032 (47 x 256); 98304 // 12032 = 8; threads 32; regs 64
    ("5.2", 64, 16, 12000, 0, 8, 16, 0.25, "shared memory"),
    # ---- cc 7.5 (Turing): 32 warps, 16 blocks, 64 K registers, 64 KiB shared per SM and per block
    # 32 threads = 1 warp, 32 regs: threads 32; blocks 16; regs 64
    ("7.5", 32, 32, 0, 0, 16, 16, 0.5, "blocks per SM"),
    # 256 threads = 8 warps, 32 regs: threads 32 // 8 = 4; regs 1024/warp -> 16 per sub -> 64 // 8 = 8
    ("7.5", 256, 32, 0, 0, 4, 32, 1.0, "threads per SM"),
    # 128 threads = 4 warps, 72 regs: 2304/warp, 16384 // 2304 = 7 -> 28 warps // 4 = 7; threads 8
    ("7.5", 128, 72, 0, 0, 7, 28, 0.875, "registers"),
    # 256 threads, 4096 B static + 15904 B dynamic = 20000 -> 20224 (79 x 256); 65536 // 20224 = 3;
    # threads 4; regs 8
    ("7.5", 256, 32, 4096, 15904, 3, 24, 0.75, "shared memory"),
    # the opt-in maximum per block, 64 KiB, launches: 65536 // 65536 = 1 block of 4 warps
    ("7.5", 128, 32, 0, 65536, 1, 4, 0.125, "shared memory"),
    # ---- cc 9.0 (Hopper): 64 warps, 32 blocks, 64 K registers, 228 KiB shared per SM, 227 KiB per
    # block, 128 B unit, 1 KiB reserved per block
    # 32 threads, 32 regs: threads 64; blocks 32; regs 64; shared (0 + 1024) -> 233472 // 1024 = 228
    ("9.0", 32, 32, 0, 0, 32, 32, 0.5, "blocks per SM"),
    # 1024 threads = 32 warps, 16 regs: threads 2; regs 512/warp -> 32 per sub -> 128 // 32 = 4
    ("9.0", 1024, 16, 0, 0, 2, 64, 1.0, "threads per SM"),
    # 256 threads = 8 warps, 128 regs: 4096/warp -> 4 per sub -> 16 warps // 8 = 2; threads 8
    ("9.0", 256, 128, 0, 0, 2, 16, 0.25, "registers"),
    # 128 threads, 114 KiB dynamic = 116736 + 1024 reserved = 117760 (920 x 128); 233472 // 117760 = 1
    # (without the reserved KiB it would be 2); threads 16; regs 16
    ("9.0", 128, 32, 0, 116736, 1, 4, 0.0625, "shared memory"),
    # 128 threads, 48 KiB dynamic: 49152 + 1024 = 50176 (392 x 128); 233472 // 50176 = 4
    ("9.0", 128, 32, 0, 49152, 4, 16, 0.25, "shared memory"),
    # the opt-in maximum, 227 KiB = 232448 B + 1024 = 233472: exactly one block
    ("9.0", 64, 32, 0, 232448, 1, 2, 2 / 64, "shared memory"),
]


@pytest.mark.parametrize("cc, threads, regs, static, dynamic, blocks, warps, fraction, limited_by", KNOWN)
def test_known_occupancy(cc, threads, regs, static, dynamic, blocks, warps, fraction, limited_by):
    got = occupancy(cc, threads, regs, static, dynamic)
    assert (got["blocks_per_sm"], got["warps_per_sm"], got["limited_by"]) == (blocks, warps, limited_by), got
    assert got["occupancy"] == pytest.approx(fraction)
    assert got["reason"] == ""


CANNOT_LAUNCH = [
    # more than 1024 threads per block, on every architecture
    ("3.0", 1025, 16, 0, 0, "threads per block"),
    ("9.0", 2048, 16, 0, 0, "threads per block"),
    # cc 3.0 allows 63 registers per thread; 5.2 allows 255
    ("3.0", 64, 64, 0, 0, "registers per thread"),
    ("5.2", 64, 256, 0, 0, "registers per thread"),
    # 1024 threads x 255 regs: 8160 -> 8192/warp x 32 warps = 262144 > 65536 registers per block
    ("5.2", 1024, 255, 0, 0, "registers per block"),
    # 1024 threads x 65 regs: 2080 -> 2304/warp x 32 = 73728 > 65536
    ("9.0", 1024, 65, 0, 0, "registers per block"),
    # 800 threads = 25 warps x 80 regs (2560/warp): 25 x 2560 = 64000 would fit, but the hardware's
    # check rounds the warps up to the 4 sub-partitions: 28 x 2560 = 71680 > 65536
    ("7.5", 800, 80, 0, 0, "registers per block"),
    # shared memory per block beyond the (opt-in) maximum: 48 KiB on 3.0 and 5.2 (even with 96 KiB
    # per SM), 64 KiB on 7.5, 227 KiB on 9.0
    ("3.0", 128, 16, 49153, 0, "shared memory per block"),
    ("5.2", 128, 16, 0, 49153, "shared memory per block"),
    ("7.5", 128, 16, 0, 65537, "shared memory per block"),
    ("9.0", 128, 16, 1024, 231425, "shared memory per block"),
]


@pytest.mark.parametrize("cc, threads, regs, static, dynamic, broken", CANNOT_LAUNCH)
def test_a_block_that_cannot_launch_gets_zero_blocks_and_a_reason(cc, threads, regs, static, dynamic, broken):
    got = occupancy(cc, threads, regs, static, dynamic)
    assert got["blocks_per_sm"] == 0 and got["warps_per_sm"] == 0 and got["occupancy"] == 0
    assert got["limited_by"] == broken
    assert got["reason"].startswith("cannot launch: ") and str(threads if "threads" in broken else "") in got["reason"]


def test_a_register_heavy_block_that_just_fits_launches():
    # 7.5, 896 threads = 28 warps x 2304 regs = 64512 <= 65536 (28 is a multiple of 4 sub-partitions);
    # per SM: 7 warps per sub-partition -> 28 // 28 = 1 block; threads 32 // 28 = 1 too
    got = occupancy("7.5", 896, 72, 0, 0)
    assert got["blocks_per_sm"] == 1 and got["limited_by"] == "threads per SM, registers"


def test_limits_per_resource_and_none_where_unused():
    got = occupancy("3.0", 64, 16, 0)
    assert (got["limit_threads"], got["limit_blocks"], got["limit_registers"], got["limit_shared"]) == (
        32,
        16,
        64,
        None,
    )
    # from cc 8.0 the driver's reserved KiB counts even for a kernel without shared memory
    assert occupancy("9.0", 32, 32, 0)["limit_shared"] == 228
    assert occupancy("9.0", 32, 0, 0)["limit_registers"] is None


def test_sm_limits_match_the_programming_guide_table():
    for cc in ("3.0", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0"):
        assert cc in SM_LIMITS
    for lim in SM_LIMITS.values():
        assert lim.max_warps_per_sm * 32 == lim.max_threads_per_sm
        assert lim.register_allocation_unit == 256 and lim.register_allocation_granularity == "warp"
        assert lim.max_shared_per_block <= lim.max_shared_per_sm
    k, kib = SM_LIMITS["3.0"], 1024
    assert (
        k.max_threads_per_sm,
        k.max_blocks_per_sm,
        k.registers_per_sm,
        k.max_registers_per_thread,
        k.max_shared_per_sm,
        k.shared_allocation_unit,
        k.reserved_shared_per_block,
    ) == (2048, 16, 65536, 63, 48 * kib, 256, 0)
    assert SM_LIMITS["3.7"].registers_per_sm == 128 * kib and SM_LIMITS["3.7"].max_shared_per_sm == 112 * kib
    assert SM_LIMITS["5.2"].max_shared_per_sm == 96 * kib and SM_LIMITS["5.2"].max_blocks_per_sm == 32
    assert SM_LIMITS["6.0"].warp_allocation_granularity == 2
    t = SM_LIMITS["7.5"]
    assert (t.max_threads_per_sm, t.max_blocks_per_sm, t.max_shared_per_sm, t.max_shared_per_block) == (
        1024,
        16,
        64 * kib,
        64 * kib,
    )
    assert (SM_LIMITS["8.6"].max_threads_per_sm, SM_LIMITS["8.9"].max_blocks_per_sm) == (1536, 24)
    h = SM_LIMITS["9.0"]
    assert (
        h.max_threads_per_sm,
        h.max_blocks_per_sm,
        h.max_shared_per_sm,
        h.max_shared_per_block,
        h.shared_allocation_unit,
        h.reserved_shared_per_block,
    ) == (2048, 32, 228 * kib, 227 * kib, 128, kib)


def test_compute_capability_spellings():
    assert cc_key("sm_90") == cc_key((9, 0)) == cc_key(9.0) == cc_key("9.0") == "9.0"
    assert cc_key("sm_90a") == "9.0" and cc_key("compute_75") == "7.5"
    assert sm_limits((7, 5)).max_threads_per_sm == 1024
    with pytest.raises(ProfileError, match="5.x"):
        occupancy("5.x", 128, 32, 0)


def test_occupancy_table_is_tidy_and_carries_the_configuration():
    rows = [
        ("fw_basic_2d", 64, 16, 0),
        ("tiled", 128, 16, 10000, 0),
        {"kernel": "big", "config": "32x32", "threads": 1025, "registers": 16},
    ]
    frame = occupancy_table(rows, "3.0")
    assert list(frame["kernel"]) == ["fw_basic_2d", "tiled", "big"]
    assert list(frame["blocks_per_sm"]) == [16, 4, 0]
    assert list(frame["limited_by"]) == ["blocks per SM", "shared memory", "threads per block"]
    assert list(frame["occupancy_fraction"]) == [0.5, 0.25, 0.0]
    assert frame["config"].iloc[2] == "32x32"
    for column in (
        "threads_per_block",
        "registers_per_thread",
        "shared_bytes_per_block",
        "warps_per_sm",
        "blocks_limit_registers",
        "blocks_limit_shared",
        "reason",
        "compute_capability",
    ):
        assert column in frame.columns
    assert frame["blocks_limit_shared"].isna().tolist() == [True, False, True]  # big uses no shared memory
    assert occupancy_table([], "9.0").empty


def test_resident_blocks_still_answers_for_the_present_sm():
    sm = {"threads": 2048, "registers": 65536, "shared_bytes": 233472, "blocks": 32}
    assert resident_blocks(256, 128, 0, sm) == {"blocks_per_sm": 2, "warps_per_sm": 16, "limited_by": "registers"}


# ---- which architecture the registers come from


def test_compile_arch_maps_old_gpus_to_the_oldest_supported_arch_with_a_note():
    cuda13 = (75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121)
    arch, note = compile_arch("3.0", supported=cuda13)
    assert arch == "sm_75" and "oldest" in note and "sm_75" in note and "3.0" in note
    assert compile_arch("5.2", supported=cuda13)[0] == "sm_75"
    assert compile_arch("7.5", supported=cuda13) == ("sm_75", "")
    assert compile_arch((9, 0), supported=cuda13) == ("sm_90", "")
    arch, note = compile_arch("8.7", supported=(75, 80, 86, 90))
    assert arch == "sm_86" and "nearest" in note
    with pytest.raises(ProfileError):
        compile_arch("5.x", supported=cuda13)


@needs_nvcc
def test_compile_arch_with_the_installed_nvcc():
    oldest = supported_archs()[0]
    arch, note = compile_arch("3.0")
    assert arch == f"sm_{oldest}" and "CUDA" in note and "oldest" in note


def test_kernel_base_name_demangles_simple_names():
    assert kernel_base_name("fw_basic_2d") == "fw_basic_2d"
    assert kernel_base_name("_Z3barPfi") == "bar"
    assert kernel_base_name("_Z3fooILi3EEvPi") == "foo"
    assert kernel_base_name("_ZN2ns3fooEv") == "ns::foo"


@needs_nvcc
def test_kernel_resources_for_names_each_kernel_with_its_registers():
    got = kernel_resources_for("fw_basic_2d.cu", "sm_90")
    assert set(got) == {"fw_basic_2d"}
    assert got["fw_basic_2d"].registers > 0 and got["fw_basic_2d"].arch == "sm_90"
    assert kernel_resources_for("fw_basic_2d.cu", "sm_90") is not got  # a fresh dict, from the cached compile
    tiles = kernel_resources_for("mm_01_shared_tile.cu", "sm_75", ("-DTILE=16",))
    assert tiles["mm_shared_tile"].shared_bytes == 2 * 16 * 16 * 4


@needs_nvcc
def test_resources_for_an_old_gpu_are_capped_at_its_register_limit():
    # mm_register_blocked's __launch_bounds__ lets ptxas use more than 63 registers on sm_75 (127 with
    # CUDA 13.0); cc 3.0's compiler would have capped it at 63
    plain = kernel_resources_for("mm_03_register_blocked.cu", compile_arch("3.0")[0])["mm_register_blocked"]
    got, note = kernel_resources_for_cc("mm_03_register_blocked.cu", "3.0")
    assert got["mm_register_blocked"].registers == min(plain.registers, 63)
    assert "oldest" in note and ("capped" in note) == (plain.registers > 63)
    same, note = kernel_resources_for_cc("mm_03_register_blocked.cu", "9.0")
    assert note == "" and same["mm_register_blocked"].arch == "sm_90"


# ---- every chapter's launch configurations (issue 13, item 4): listed by the labs modules the
# notebooks call, compiled for the lab GPU's and an H100's architecture, each with its binding limit

from cudalab.chapter.occupancy import binding_summary, chapter_gpus, occupancy_styled  # noqa: E402
from cudalab.core.launch import Dim3, Launch  # noqa: E402
from cudalab.labs import matmul as mm  # noqa: E402
from cudalab.labs import vecmax  # noqa: E402
from cudalab.labs.fw import per_k  # noqa: E402
from cudalab.labs.fw.blocked import kernels as blocked_kernels  # noqa: E402
from cudalab.labs.fw.blocked import variants as blocked_variants  # noqa: E402
from cudalab.labs.fw.blocked.ladder import OPTIMIZATION_STEPS  # noqa: E402
from cudalab.labs.kmeans import chapter as km  # noqa: E402
from cudalab.labs.kmeans import gpu as km_gpu  # noqa: E402
from cudalab.toolchain.occupancy_report import distinct_launches, occupancy_by_gpu  # noqa: E402

CHAPTERS = [
    "01_block_size",
    "02_coalescing",
    "03_shared_memory",
    "04_blocking_factor",
    "05_matmul_footprint",
    "06_kmeans_device_update",
]
# what each notebook's occupancy cell calls, so that the lists below are the notebooks' own
NOTEBOOK_CALLS = {
    "01_block_size": ["per_k.launch("],
    "02_coalescing": ["per_k.launch(", "vecmax.launches("],
    "03_shared_memory": ["per_k.launch("],
    "04_blocking_factor": ["variants.launches("],
    "05_matmul_footprint": ["mm.launches("],
    "06_kmeans_device_update": ["km_gpu.launches("],
}


def _chapter_params(chapter: str) -> dict:
    """The notebook's parameters cell, overlaid with the gtx680 profile's values for the chapter."""
    import ast

    import papermill

    from cudalab.chapter.catalog import chapter as find
    from cudalab.chapter.profiles import load_profile

    defaults = {
        name: ast.literal_eval(p["default"]) for name, p in papermill.inspect_notebook(str(find(chapter).path)).items()
    }
    return {**defaults, **load_profile("gtx680").chapter_params(chapter)}


def _chapter_launches(chapter: str, p: dict):
    """The launches the chapter's occupancy cell lists, built the same way from its parameters."""
    if chapter == "01_block_size":
        return [per_k.launch("basic", b) for b in p["block_sizes"]]
    if chapter == "02_coalescing":
        return (
            [per_k.launch("basic", 16)]
            + [per_k.launch("coalesced", t) for t in p["threads_per_block"]]
            + [per_k.launch("segment", s, p["segment_threads"]) for s in p["segment_sizes"]]
            + vecmax.launches(p["vecmax_threads"])
        )
    if chapter == "03_shared_memory":
        out = [per_k.launch("basic", b) for b in p["kslice_edges"]]
        for published in (True, False):
            out += [per_k.launch("tile", t, published=published) for t in p["tile_edges"]]
            out += [per_k.launch("row_segment", s, published=published) for s in p["row_segment_threads"]]
            out += [per_k.launch("kslices", b, published=published) for b in p["kslice_edges"]]
        return out
    if chapter == "04_blocking_factor":
        return blocked_variants.launches(
            p["block_factors"],
            p["expert_block_factors"],
            dpx=(True, False),
            basic_block_edge=16,
            tiles=p.get("expert_tiles", [4]),
        )
    if chapter == "05_matmul_footprint":
        ladder = [
            mm.naive(2),
            mm.naive(32),
            mm.naive(32, register=True),
            mm.shared_tile(32),
            mm.shared_tile(32, unroll=16),
            mm.shared_tile(16),
            mm.footprint(16, 32),
            mm.register_blocked(double_buffer=False),
            mm.register_blocked(),
        ]
        footprints = [mm.footprint(b, f) for b in p["footprint_blocks"] for f in p["footprints"]]
        footprints += [mm.footprint(16, 32, aligned_copy=True), mm.footprint(16, 32, ktile=64)]
        return mm.launches(
            ladder + footprints + mm.tuning_grid(p["tune_tiles"], p["tune_depths"], p["tune_thread_tiles"])
        )
    configs = km.configurations(p["sizes"], p["dims"], p["clusters"], p["base_d"], p["base_k"])
    configs += [(p["check_n"], p["base_d"], p["base_k"])]
    return lambda cc: km_gpu.launches(configs, cc)


# Chapters 04-06 build 15, 45 and 20-31 kernels at two architectures each (nvcc, about 140 CPU-s):
# in make test-full; make test compiles chapters 01-03's launches and every kernel file at sm_90.
HEAVY_LAUNCHES = ("04_blocking_factor", "05_matmul_footprint", "06_kmeans_device_update")


@needs_nvcc
@pytest.mark.parametrize(
    "chapter", [pytest.param(c, marks=pytest.mark.full) if c in HEAVY_LAUNCHES else c for c in CHAPTERS]
)
def test_every_launch_of_every_chapter_compiles_and_gets_an_occupancy(chapter):
    from cudalab.chapter.catalog import chapter as find

    code = "".join(
        "".join(c["source"])
        for c in __import__("json").loads(find(chapter).path.read_text())["cells"]
        if c["cell_type"] == "code"
    )
    assert "lab.occupancy(" in code and all(call in code for call in NOTEBOOK_CALLS[chapter])
    launches = _chapter_launches(chapter, _chapter_params(chapter))
    occ, notes = occupancy_by_gpu(launches, {"lab GPU": "3.0", "this run": "9.0"})
    listed = {cc: distinct_launches(launches(cc) if callable(launches) else launches) for cc in ("3.0", "9.0")}
    assert all(listed.values())
    assert len(occ) == sum(len(v) for v in listed.values())
    assert list(occ.groupby("compute_capability").size().reindex(["3.0", "9.0"])) == [
        len(listed["3.0"]),
        len(listed["9.0"]),
    ]
    assert occ["limited_by"].notna().all() and occ["limited_by"].str.len().gt(0).all()
    assert occ[["registers_per_thread", "blocks_per_sm", "occupancy_fraction"]].notna().all().all()
    assert occ["registers_per_thread"].gt(0).all()
    assert notes[0].startswith("registers and shared memory from sm_75, the oldest architecture CUDA"), notes


def test_per_k_launch_is_what_each_recipe_launches():
    basic = per_k.launch("basic", 16)
    assert isinstance(basic, Launch)
    assert (basic.file, basic.kernel, basic.options, basic.block, basic.grid) == (
        "fw_basic_2d.cu",
        "fw_basic_2d",
        (),
        Dim3(16, 16),
        None,
    )
    assert (basic.threads, basic.dynamic_shared_bytes, basic.labels, basic.tunables) == (
        256,
        0,
        {"block": "16x16"},
        {"block_edge": 16},
    )
    assert per_k.launch("segment", 4, 128).threads == 128
    assert per_k.launch("segment", 4, 128).tunables == {"segment_size": 4, "threads": 128}
    assert per_k.launch("tile", 8).options == ("-DTILE=8",)
    assert per_k.launch("tile", 8, published=True).kernel == "fw_shared_tile_published"
    row = per_k.launch("row_segment", 64)
    assert (row.labels["block"], row.threads) == ("1x64", 64)
    # team 5's k-slices: one array of b ints as published, two when fixed
    assert per_k.launch("kslices", 16, published=True).dynamic_shared_bytes == 4 * 16
    assert per_k.launch("kslices", 16).dynamic_shared_bytes == 2 * 4 * 16
    with pytest.raises(ValueError):
        per_k.launch("diagonal", 16)


def test_vecmax_launches_cover_each_kernel_and_block():
    got = vecmax.launches([128, 1024])
    assert [(g.kernel, g.threads) for g in got] == [(k, t) for k in vecmax.KERNELS for t in (128, 1024)]
    assert {g.file for g in got} == {vecmax.FILE} and all(g.dynamic_shared_bytes == 0 for g in got)
    assert [g.labels for g in got[:2]] == [{"block": "128"}, {"block": "1024"}] and got[0].block == Dim3(128)
    timed = vecmax.launch("vecmax01", 256, blocks=80)
    assert (timed.grid, timed.block, timed.build) == (Dim3(80), Dim3(256), (vecmax.FILE, ()))


def _non_fw_launches() -> dict[str, list]:
    """Every non-Floyd-Warshall family's ``launches()``, on a small grid of its configurations."""
    return {
        "vecmax": vecmax.launches([128, 256]),
        "matmul": mm.launches([mm.naive(16), mm.shared_tile(16), mm.footprint(16, 32), mm.register_blocked()]),
        "kmeans": km_gpu.launches([(65536, 32, 32)], "9.0"),
    }


def test_every_non_fw_family_launches_typed_launches():
    for family, launches in _non_fw_launches().items():
        assert launches and all(isinstance(g, Launch) for g in launches), family
        assert all(isinstance(g.block, Dim3) and g.grid is None for g in launches), family
        assert all(g.labels.get("block") for g in launches), f"{family}: the occupancy tables key on the block"


@needs_nvcc
def test_the_occupancy_computation_takes_every_non_fw_familys_launches():
    for family, launches in _non_fw_launches().items():
        occ, _ = occupancy_by_gpu(launches, {"here": "9.0"})
        assert len(occ) == len(distinct_launches(launches)), family
        assert set(launches[0].labels) <= set(occ.columns) and occ["registers_per_thread"].gt(0).all(), family


def test_blocked_launches_follow_the_plans():
    got = blocked_variants.launches([8], [64], dpx=(True,))
    assert all(isinstance(g, Launch) and g.grid is None for g in got)
    assert len(got) == 3 * len(OPTIMIZATION_STEPS) + 3 + 3 + 1
    by = {(g.labels["variant"], g.labels["phase"]): g for g in got}
    assert all(list(g.labels) == ["variant", "phase", "block"] and g.labels["block"] == str(g.block) for g in got)
    # fw_blocked.cu at BF 8: 8 x 8 threads, one BF^2 int tile in phase 1, two in phases 2-3
    assert (by[("shared BF 8", "phase 1")].threads, by[("shared BF 8", "phase 1")].dynamic_shared_bytes) == (
        64,
        256,
    )
    assert by[("shared BF 8", "phase 3")].dynamic_shared_bytes == 512
    # BF 64 runs 32 x 32 threads (4 cells each); step 7 adds the register cap
    assert by[("6. Large blocking factor", "phase 3")].threads == 1024
    assert "--maxrregcount=22" in by[("7. Occupancy optimization", "phase 2")].options
    # the registers kernel's phase 3: (BF/4)^2 threads, ((BF + 4) + BF) * BF ints
    reg = by[("registers BF 64 + DPX", "phase 3")]
    assert (reg.file, reg.threads, reg.dynamic_shared_bytes) == (
        blocked_kernels.REGISTERS_FILE,
        256,
        4 * (68 + 64) * 64,
    )
    assert by[("registers BF 64 + DPX", "phase 1")].kernel == "fw_blocked_phase1"
    assert by[("basic 16x16 (chapter 01)", "per k")].threads == 256
    assert by[("1. GPU baseline", "phase 2")].kernel == "fw_blocked_global"
    assert by[("registers BF 64 + DPX", "phase 3")].tunables == {"block_factor": 64, "dpx": True, "tile": 4}
    assert by[("shared BF 8", "phase 3")].labels["block"] == "8x8"


def test_matmul_launches_leave_out_what_the_sweep_refuses():
    kernels = [mm.naive(2), mm.footprint(16, 32), mm.footprint(32, 48), mm.footprint(16, 96), mm.register_blocked()]
    got = mm.launches(kernels)
    # 32 x 32 threads cannot tile a 48 footprint; a 96 footprint's 72 KiB of static shared memory cannot compile
    assert [g.labels["config"] for g in got] == [kernels[0].label, kernels[1].label, kernels[4].label]
    assert (got[0].threads, got[0].labels["block"], got[0].options) == (4, "2x2", ())
    assert got[1].options == ("-DBLOCK=16", "-DFOOT=32", "-DKTILE=32")
    # the register-blocked block is 1D; the chapter's tables name both edges, as recorded
    assert (got[2].threads, got[2].block, got[2].labels["block"], got[2].dynamic_shared_bytes) == (
        256,
        Dim3(256),
        "256x1",
        0,
    )
    assert got[2].tunables["BM"] == 128 and kernels[4].launch(1000).grid == Dim3(8, 8)


def test_kmeans_launches_take_the_gpus_shared_memory():
    lab, h100 = km_gpu.launches([(65536, 32, 32)], "3.0"), km_gpu.launches([(65536, 32, 32)], "9.0")
    fused = lambda got: next(g for g in got if g.kernel == "kmeans_fused")
    # 48 KiB per block: 128 threads; an H100 block may opt in to 227 KiB: 256 threads' warp sums
    assert (fused(lab).threads, fused(lab).dynamic_shared_bytes) == (128, 4 * 32 * 129 + 4 * 4 * 32 * 33)
    assert (fused(h100).threads, fused(h100).dynamic_shared_bytes) == (256, 4 * 32 * 257 + 4 * 8 * 32 * 33)
    # the tiled kernel's tiles and sums do not fit in 48 KiB: refused on the lab GPU, listed on the H100
    assert not any(g.kernel == "kmeans_tiled" for g in lab) and any(g.kernel == "kmeans_tiled" for g in h100)
    delta = next(g for g in lab if g.kernel == "compute_delta")
    assert (delta.labels["shape"], delta.threads, delta.dynamic_shared_bytes) == ("N = 65,536", 512, 4 * 512)
    assert list(delta.labels) == ["variant", "stage", "shape", "block"], "the recorded table's column order"
    assign = next(g for g in lab if g.kernel == "find_nearest_cluster")
    assert assign.dynamic_shared_bytes == 4 * (32 * 32 + km_gpu.THREADS)
    assert {g.labels["variant"] for g in h100} == {km_gpu.VARIANTS[v] for v in (*km_gpu.LADDER, "exact")}
    exact = [g for g in h100 if g.labels["variant"] == km_gpu.VARIANTS["exact"]]
    assert [g.kernel for g in exact] == ["assign_in_order", "compute_delta", "average_in_order"]
    assert {g.labels["shape"] for g in exact} == {"any", "N = 65,536"}


def test_distinct_launches_merge_one_build_listed_twice():
    a = Launch("f.cu", "k", Dim3(32, 32), options=("-DBF=32",), labels={"variant": "5. min", "phase": "phase 1"})
    b = a.relabel(variant="shared BF 32")
    c = replace(a, options=("-DBF=64",))
    got = distinct_launches([a, b, c, b])
    assert [g.labels["variant"] for g in got] == ["5. min; shared BF 32", "5. min"]
    assert got[0].labels["phase"] == "phase 1" and got[0].options == ("-DBF=32",)


def test_chapter_gpus_and_an_empty_table():
    class Device:
        name, compute_capability = "GeForce GTX 680", "3.0"

    assert chapter_gpus(Device(), {"gpu_name": "H100", "compute_capability": "9.0"}) == {
        "GeForce GTX 680 (lab GPU)": "3.0",
        "H100 (this run)": "9.0",
    }
    assert chapter_gpus(None, {}) == {}
    # a profile GPU no lab ran on (the h200 profile's H200) is not a lab GPU: listed only where it differs
    from cudalab.chapter.profiles import open_profile

    h200 = open_profile("h200").device
    assert chapter_gpus(h200, {"gpu_name": "NVIDIA H200", "compute_capability": "9.0"}) == {
        "NVIDIA H200 (this run)": "9.0"
    }
    assert chapter_gpus(h200, {"gpu_name": "Some GPU", "compute_capability": "8.0"}) == {
        "NVIDIA H200 (the profile's GPU, no lab ran on it)": "9.0",
        "Some GPU (this run)": "8.0",
    }
    assert "GeForce GTX 680 (lab GPU)" in chapter_gpus(open_profile("gtx680").device, {})
    occ, notes = occupancy_by_gpu([], {})
    assert occ.empty and notes == []


def _basic(edge: int) -> Launch:
    """Chapter 01's kernel over an edge x edge block, labelled as its table names it."""
    block = Dim3.square(edge)
    return Launch("fw_basic_2d.cu", "fw_basic_2d", block, labels={"block": str(block)})


@needs_nvcc
def test_occupancy_by_gpu_table_and_summary():
    launches = [_basic(b) for b in (4, 32)]
    occ, notes = occupancy_by_gpu(launches, {"lab": "3.0", "here": "9.0"})
    assert list(occ["gpu"]) == ["lab", "lab", "here", "here"]
    assert list(occ["blocks_per_sm"]) == [16, 2, 32, 2]  # 4x4: the block cap (16, 32); 32x32: 2048 threads / 1024
    html = occupancy_styled(occ, notes, ["block"]).to_html()
    assert "limited by" in html and "shared bytes" not in html  # no shared memory, no column
    assert "blocks / SM" in html and "occupancy" in html
    text = binding_summary(occ, "block")
    assert "4x4: 16 blocks (25% of the warps), limited by blocks per SM" in text
    short = binding_summary(occ, "block", per_launch=False)
    assert "1 of 2 limited by blocks per SM (25% of the warps)" in short


@needs_nvcc
def test_occupancy_section_records_its_table_and_replays_it_without_compiling(tmp_path, monkeypatch):
    """Measured once through the chapter's ``table`` (a CSV round trip, as ``lab.table`` does),
    the section replays from the recording without calling the compiler; a recording without the
    table is computed."""
    import cudalab.chapter.occupancy as report
    from cudalab.core.errors import NoRecordedResults

    launches = [_basic(b) for b in (8, 16)]
    gpus = {"lab GPU": "3.0", "this run": "9.0"}

    def measure_table(name, compute, *, axes, dtype=None):
        frame = compute()
        assert set(axes) <= set(frame.columns)
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        return frame

    def replay_table(name, compute, *, axes, dtype=None):
        path = tmp_path / f"{name}.csv"
        if not path.is_file():
            raise NoRecordedResults(name)
        return pd.read_csv(path, dtype=dtype)

    measured = report.occupancy_section(launches, gpus, ["block"], table=measure_table)
    monkeypatch.setattr(report, "occupancy_by_gpu", lambda *a, **k: pytest.fail("the replay compiled"))
    replayed = report.occupancy_section(launches, gpus, ["block"], table=replay_table)
    pd.testing.assert_frame_equal(measured.reset_index(drop=True), replayed.reset_index(drop=True), check_dtype=False)
    assert replayed["compute_capability"].tolist() == ["3.0", "3.0", "9.0", "9.0"]
    (tmp_path / "occupancy.csv").unlink()
    monkeypatch.undo()
    assert len(report.occupancy_section(launches, gpus, ["block"], table=replay_table)) == 4


def test_the_chapter_handle_replays_its_recorded_occupancy_table(tmp_path, monkeypatch):
    """``lab.occupancy`` reads the recorded table ``occupancy`` (its text columns kept as text)
    without compiling, for the profile's lab GPU and the recording's GPU."""
    import json

    import cudalab.chapter.occupancy as section
    from cudalab.chapter.handle import Chapter
    from cudalab.chapter.profiles import load_profile

    recorded = tmp_path / "recorded" / "01_block_size"
    recorded.mkdir(parents=True)
    (recorded / "provenance.json").write_text(json.dumps({"gpu_name": "H100", "compute_capability": "9.0"}))
    rows = [
        {"gpu": gpu, "block": "16x16", "kernel": "fw_basic_2d", "threads_per_block": 256, "registers_per_thread": 12}
        | {"shared_bytes_per_block": 0, "blocks_per_sm": blocks, "warps_per_sm": 8 * blocks}
        | {"occupancy_fraction": 1.0, "limited_by": "threads per SM", "compute_capability": cc, "notes": ""}
        for gpu, cc, blocks in (("GeForce GTX 680 (lab GPU)", "3.0", 8), ("H100 (this run)", "9.0", 8))
    ]
    pd.DataFrame(rows).to_csv(recorded / "occupancy.csv", index=False)
    lab = Chapter("01_block_size", load_profile("gtx680"), "replay", tmp_path / "data", recorded.parent)
    lab._start()
    seen = {}
    real_chapter_gpus = section.chapter_gpus
    monkeypatch.setattr(section, "chapter_gpus", lambda *a: seen.setdefault("gpus", real_chapter_gpus(*a)))
    monkeypatch.setattr(section, "occupancy_by_gpu", lambda *a, **k: pytest.fail("the replay compiled"))
    occ = lab.occupancy([_basic(16)], ["block"], per_launch=True)
    assert seen["gpus"] == {"GeForce GTX 680 (lab GPU)": "3.0", "H100 (this run)": "9.0"}
    assert occ["compute_capability"].tolist() == ["3.0", "9.0"] and (lab.out_dir / "occupancy.csv").is_file()


@needs_nvcc
def test_compile_ahead_leaves_the_occupancy_table_nothing_to_compile(monkeypatch, tmp_path):
    # a chapter's precompile (``Chapter.precompile``) makes every compile its occupancy section will
    # need, beside the NVRTC builds: afterwards the table is computed without running nvcc once
    from cudalab.chapter import occupancy as chapter_occupancy
    from cudalab.core import kernels
    from cudalab.toolchain import nvcc, occupancy_report

    monkeypatch.setenv("CUDALAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(occupancy_report, "present_key", lambda: None)  # no GPU: every architecture from nvcc
    nvcc._resources.cache_clear()
    nvrtc_builds = []
    monkeypatch.setattr(kernels, "precompile", lambda builds: nvrtc_builds.extend(builds) or len(builds))
    launches = mm.launches(mm.tuning_grid([128], [8], [8])) + [per_k.launch("basic", 16), per_k.launch("basic", 16)]
    gpus = {"GeForce GTX 680 (lab GPU)": "3.0", "NVIDIA H100 80GB HBM3 (this run)": "9.0"}

    assert chapter_occupancy.compile_ahead(launches, gpus) == len(nvrtc_builds) == 2  # one build per (file, options)
    assert sorted(nvrtc_builds) == sorted({launch.build for launch in launches})
    assert len(list(tmp_path.glob("ptxas/*.json"))) == 2 * 2  # each build on sm_75 and sm_90

    def no_nvcc(*args, **kwargs):
        raise AssertionError("the occupancy table compiled again")

    monkeypatch.setattr(nvcc, "nvcc_check", no_nvcc)
    nvcc._resources.cache_clear()  # the disk cache alone must answer, as in a later cell
    occ, _ = occupancy_by_gpu(launches, gpus)
    assert len(occ) == 2 * 2 and occ["registers_per_thread"].gt(0).all()


class _LoadedModule:
    """A stand-in for a ``cupy.RawModule`` this process compiled: its kernels' attributes."""

    def __init__(self, **kernels):
        self.kernels = kernels

    def get_function(self, name):
        if name not in self.kernels:
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: {name}")
        regs, shared = self.kernels[name]
        return types.SimpleNamespace(num_regs=regs, shared_size_bytes=shared)


def test_the_gpu_present_reads_the_kernels_as_loaded_and_compiles_nothing_for_them(monkeypatch):
    # on the architecture of the GPU present, a build this process loaded (NVRTC's, the code timed)
    # gives its registers and static shared memory: nvcc compiles it for no second time
    from cudalab.chapter.occupancy import notes_of
    from cudalab.toolchain import occupancy_report

    launch = _basic(16)
    monkeypatch.setattr(occupancy_report, "present_key", lambda: "9.0")
    monkeypatch.setattr(occupancy_report, "loaded_module", lambda f, o: _LoadedModule(**{launch.kernel: (40, 1024)}))
    monkeypatch.setattr(
        occupancy_report, "kernel_resources_for_cc", lambda *a: pytest.fail("nvcc compiled a loaded build")
    )
    occ, notes = occupancy_report.launch_occupancy([launch], "9.0")
    assert occ[["registers_per_thread", "shared_bytes_per_block"]].iloc[0].tolist() == [40, 1024]
    assert notes == [occupancy_report.LOADED_NOTE.format(cc="9.0")]
    assert notes_of(notes, "9.0", ["3.0", "9.0"]) == notes and notes_of(notes, "3.0", ["3.0", "9.0"]) == []


def test_a_build_not_loaded_or_another_architecture_comes_from_the_compilers_report(monkeypatch):
    from cudalab.toolchain import occupancy_report

    launch = _basic(16)
    asked = []

    def report(file, key, options):
        asked.append(key)
        return {launch.kernel: PtxasUsage(launch.kernel, "sm_x", 30, 0, 0, 0, 0)}, ""

    monkeypatch.setattr(occupancy_report, "kernel_resources_for_cc", report)
    monkeypatch.setattr(occupancy_report, "present_key", lambda: "9.0")
    monkeypatch.setattr(occupancy_report, "loaded_module", lambda f, o: None)  # never loaded here
    occ, notes = occupancy_report.launch_occupancy([launch], "9.0")
    assert occ["registers_per_thread"].tolist() == [30]
    assert notes == [
        "compute capability 9.0: 1 of 1 launches from the compiler's report (ptxas -v), since this run did "
        f"not load their builds ({launch.kernel} {' '.join(launch.options)})".replace(" )", ")")
    ]
    monkeypatch.setattr(occupancy_report, "loaded_module", lambda f, o: _LoadedModule(other=(40, 0)))
    assert occupancy_report.launch_occupancy([launch], "9.0")[0]["registers_per_thread"].tolist() == [30]
    monkeypatch.setattr(occupancy_report, "loaded_module", lambda f, o: _LoadedModule(**{launch.kernel: (40, 0)}))
    occ, notes = occupancy_report.launch_occupancy([launch], "8.0")  # another architecture: no note
    assert occ["registers_per_thread"].tolist() == [30] and notes == []
    assert asked == ["9.0", "9.0", "8.0"]


def test_compile_ahead_asks_nvcc_only_for_the_other_architectures(monkeypatch):
    # the chapter's precompile loads every build on the GPU present; reports only for the lab's GPU
    from cudalab.chapter import occupancy as chapter_occupancy
    from cudalab.core import kernels
    from cudalab.toolchain import nvcc, occupancy_report

    asked = []
    monkeypatch.setattr(kernels, "precompile", lambda builds: len(list(builds)))
    monkeypatch.setattr(nvcc, "kernel_resources_for_cc", lambda file, key, options: asked.append(key))
    monkeypatch.setattr(occupancy_report, "present_key", lambda: "9.0")
    launches = [_basic(16), _basic(32)]
    assert chapter_occupancy.compile_ahead(launches, {"GTX 680 (lab GPU)": "3.0", "H100 (this run)": "9.0"}) == 1
    assert asked == ["3.0"]
    asked.clear()
    assert chapter_occupancy.compile_ahead(launches, {"H100 (lab GPU)": "9.0", "H100 (this run)": "9.0"}) == 1
    assert asked == []


def test_prefetch_skips_the_builds_loaded_on_the_gpu_present(monkeypatch):
    """Which builds _prefetch hands the compiler: the other GPUs' only. The deliberate bugs this
    catches: compiling the present GPU's loaded build again (its ``loaded_usage`` test dropped), or
    skipping another GPU's build; what nvcc reports is tested where it compiles (above)."""
    from cudalab.toolchain import occupancy_report

    asked = []
    launch = _basic(16)
    monkeypatch.setattr(occupancy_report, "kernel_resources_for_cc", lambda file, key, options: asked.append(key))
    monkeypatch.setattr(occupancy_report, "present_key", lambda: "9.0")
    monkeypatch.setattr(occupancy_report, "loaded_module", lambda f, o: _LoadedModule(**{launch.kernel: (40, 0)}))
    occupancy_report._prefetch({"3.0": [launch], "9.0": [launch], "8.0": [launch]})
    assert sorted(asked) == ["3.0", "8.0"]


def test_loaded_module_never_compiles(monkeypatch):
    from cudalab.core import kernels

    monkeypatch.setattr(kernels, "_modules", {})
    assert kernels.loaded_module("mm_01_shared_tile.cu", ("-DTILE=16",)) is None
    path = kernels.kernel_path("mm_01_shared_tile.cu")
    kernels._modules[kernels._module_key(path, ("-DTILE=16",))] = "the module"
    assert kernels.loaded_module("mm_01_shared_tile.cu", ("-DTILE=16",)) == "the module"
    assert kernels.loaded_module("mm_01_shared_tile.cu", ("-DTILE=32",)) is None


@pytest.mark.gpu
def test_on_a_gpu_the_table_gives_the_registers_of_the_kernel_that_was_timed(monkeypatch, tmp_path):
    # the occupancy table and a chapter's measured rows (``registers_per_thread`` from the compiled
    # kernel, as chapter 05 records them) agree, since both read the one NVRTC build
    from cudalab.core import gpu, kernels
    from cudalab.toolchain import occupancy_report

    if not gpu.gpu_available():
        pytest.skip("needs a GPU")
    monkeypatch.setenv("CUDALAB_CACHE_DIR", str(tmp_path))
    launch = mm.launches(mm.tuning_grid([128], [8], [8]))[0]
    kernel = kernels.load_module(*launch.build).get_function(launch.kernel)
    key = occupancy_report.present_key()
    monkeypatch.setattr(
        occupancy_report, "kernel_resources_for_cc", lambda *a: pytest.fail("nvcc compiled a loaded build")
    )
    occ, notes = occupancy_report.launch_occupancy([launch], key)
    assert occ["registers_per_thread"].tolist() == [kernel.num_regs]
    assert notes == [occupancy_report.LOADED_NOTE.format(cc=key)]


@pytest.mark.gpu
def test_on_a_gpu_a_chapters_precompile_leaves_its_own_architecture_nothing_for_nvcc(monkeypatch, tmp_path):
    # chapter 05's flow on the GPU present: its precompile (NVRTC), then its occupancy table, with
    # nvcc forbidden for the present architecture; its notes would name any build not loaded
    from cudalab.chapter import occupancy as chapter_occupancy
    from cudalab.core import gpu
    from cudalab.toolchain import occupancy_report

    if not gpu.gpu_available():
        pytest.skip("needs a GPU")
    monkeypatch.setenv("CUDALAB_CACHE_DIR", str(tmp_path))
    key = occupancy_report.present_key()
    launches = mm.launches(mm.tuning_grid([128], [8, 16], [8]) + mm.async_search()[:3])
    gpus = {"this run": key}
    assert chapter_occupancy.compile_ahead(launches, gpus) == len({launch.build for launch in launches})
    monkeypatch.setattr(occupancy_report, "kernel_resources_for_cc", lambda *a: pytest.fail(f"nvcc compiled {a} again"))
    occ, notes = occupancy_report.occupancy_by_gpu(launches, gpus)
    assert len(occ) == len(occupancy_report.distinct_launches(launches)) and occ["registers_per_thread"].gt(0).all()
    assert notes == [occupancy_report.LOADED_NOTE.format(cc=key)]
    assert not list(tmp_path.glob("ptxas/*.json"))


@needs_nvcc
def test_compile_ahead_leaves_a_failing_build_to_its_first_use(monkeypatch, tmp_path):
    """A build that does not compile is compiled (by nvcc, for the lab GPU's table), fails, and is
    left for its first use to report; compile_ahead returns. The deliberate bug this catches:
    compile_ahead letting the compiler's error out (its ``except CudalabError`` removed), which
    would stop the chapter before any point, the good ones included."""
    from cudalab.chapter import occupancy as chapter_occupancy
    from cudalab.core import kernels
    from cudalab.core.errors import CudalabError
    from cudalab.toolchain import nvcc, occupancy_report

    monkeypatch.setenv("CUDALAB_CACHE_DIR", str(tmp_path))
    handed, failed = [], []
    real = nvcc.kernel_resources_for_cc

    def compiled(file, key, options):
        try:
            return real(file, key, options)
        except CudalabError as exc:
            failed.append((file, key, str(exc)))
            raise

    monkeypatch.setattr(nvcc, "kernel_resources_for_cc", compiled)
    monkeypatch.setattr(kernels, "precompile", lambda builds: handed.extend(builds) or len(handed))
    monkeypatch.setattr(occupancy_report, "present_key", lambda: None)
    broken = Launch("mm_01_shared_tile.cu", "mm_shared_tile", Dim3.of(16), options=("-DTILE=not_a_number",))
    assert chapter_occupancy.compile_ahead([broken], {"H100 (this run)": "9.0", "odd": "x.y"}) == 1
    assert handed == [broken.build], "this GPU's build is handed to NVRTC's precompile"
    assert [(f, k) for f, k, _ in failed] == [("mm_01_shared_tile.cu", "9.0")], "nvcc compiled it, and it failed"
    assert "not_a_number" in failed[0][2]
    with pytest.raises(CudalabError):  # its first use says why, as the chapter shows it
        real("mm_01_shared_tile.cu", "9.0", broken.options)


def test_one_gpus_table_names_it_in_the_caption_and_each_note_goes_to_the_gpu_it_concerns():
    from cudalab.chapter.occupancy import notes_of

    occ = pd.DataFrame(
        {
            "gpu": ["GeForce GTX 680 (lab GPU)"] * 2,
            "compute_capability": ["3.0"] * 2,
            "block": ["4x4", "32x32"],
            "threads_per_block": [16, 1024],
            "registers_per_thread": [18, 18],
            "shared_bytes_per_block": [0, 0],
            "blocks_per_sm": [16, 2],
            "warps_per_sm": [16, 64],
            "occupancy_fraction": [0.25, 1.0],
            "limited_by": ["blocks per SM", "threads per SM"],
        }
    )
    html = occupancy_styled(occ, [], ["block"]).to_html()
    assert "on GeForce GTX 680 (lab GPU), cc 3.0" in html and ">GPU<" not in html
    notes = [
        "registers from sm_75, the oldest architecture CUDA 13.0 compiles for (the GPU is compute capability 3.0)",
        "k capped at the 63 registers per thread that compute capability 3.0 allows",
        "a note on every GPU",
    ]
    assert notes_of(notes, "3.0", ["3.0", "9.0"]) == notes
    assert notes_of(notes, "9.0", ["3.0", "9.0"]) == ["a note on every GPU"]


def test_compile_ahead_warms_the_checks_kernels_on_the_callers_gpu_beside_the_builds(monkeypatch):
    # CuPy's kernels for core.check's checks compile in the precompile's pool, on the device the
    # chapter uses; without a device nothing is warmed. The deliberate bugs this catches: warming on
    # another device than the chapter's, or asking for a device where there is none. That the warm-up
    # compiles CuPy's kernel is a GPU test's (test_gpu_warm_checks.py)
    from cudalab.chapter import occupancy as chapter_occupancy
    from cudalab.core import kernels
    from cudalab.toolchain import occupancy_report

    warmed = []
    monkeypatch.setattr(kernels, "precompile", lambda builds: len(list(builds)))
    monkeypatch.setattr(occupancy_report, "present_key", lambda: "9.0")
    monkeypatch.setattr(chapter_occupancy, "warm_checks", warmed.append)
    monkeypatch.setattr(chapter_occupancy, "_current_device", lambda: 1)
    assert chapter_occupancy.compile_ahead([_basic(16)], {"H100 (this run)": "9.0"}) == 1
    assert warmed == [1]
    monkeypatch.setattr(chapter_occupancy, "_current_device", lambda: None)
    chapter_occupancy.compile_ahead([_basic(16)], {"H100 (this run)": "9.0"})
    assert warmed == [1]


def test_a_failing_warm_up_is_left_to_the_checks_themselves(monkeypatch):
    from cudalab.chapter import occupancy as chapter_occupancy

    monkeypatch.setitem(sys.modules, "cupy", None)  # import fails, as without CuPy
    chapter_occupancy.warm_checks(0)  # says nothing, raises nothing
