"""Chapter 05's matmul machinery without a GPU: configurations, launch limits, reuse, occupancy, checks."""

import math

import numpy as np
import pandas as pd
import pytest

from cudalab.core.check import compare_close
from cudalab.core.launch import Dim3
from cudalab.labs import matmul as mm

LIMITS = {"threads": 1024, "shared_bytes": 48 * 1024, "registers": 65536}


def test_lab002_footprint_shapes():
    k = mm.footprint(16, 32)
    assert (k.threads, k.results_per_thread, k.grid(100)) == (256, 4, Dim3(4, 4))
    assert k.shared_bytes == 2 * 32 * 32 * 4 and mm.refusal(k, LIMITS) == ""
    assert mm.footprint(16, 48).results_per_thread == 9


@pytest.mark.parametrize(
    "kernel,reason",
    [
        (mm.footprint(32, 48), "footprint 48 is not a multiple of the block edge 32"),
        (mm.footprint(16, 96), "73,728 bytes of shared memory per block exceeds the limit of 49,152"),
        (mm.naive(48), "block 48x48 = 2304 threads exceeds the limit of 1024 threads per block"),
        (mm.register_blocked(128, 128, 8, 8, 6), "not a multiple of the thread tile 8x6"),
        (mm.register_blocked(64, 64, 8, 8, 16), "do not tile as whole warps of 4 x 8 lanes"),
        (mm.register_blocked(128, 128, 6, 8, 8), "TM, TN and BK must be multiples of 4"),
        (mm.register_blocked(256, 256, 16, 8, 8), "bytes of shared memory per block exceeds"),
    ],
)
def test_a_shape_the_gpu_cannot_hold_is_refused_with_the_limit_named(kernel, reason):
    assert reason in mm.refusal(kernel, LIMITS)


def test_limits_come_from_the_device_given():
    k = mm.footprint(16, 64)  # 32 KiB of shared memory, 256 threads
    assert mm.refusal(k, LIMITS) == ""
    assert "exceeds the limit of 16,384" in mm.refusal(k, {**LIMITS, "shared_bytes": 16 * 1024})
    assert "exceeds the limit of 128 threads" in mm.refusal(k, {**LIMITS, "threads": 128})


def test_register_blocked_geometry_and_defines():
    k = mm.register_blocked(128, 64, 16, 8, 4, double_buffer=False)
    assert k.block == Dim3(256, 1) and k.patch == (128, 64) and k.grid(129) == Dim3(3, 2)
    assert "-DBM=128" in k.options() and "-DDOUBLE_BUFFER=0" in k.options()
    assert k.shared_bytes == 16 * (128 + 4 + 64) * 4
    row = {"bm": 128.0, "bn": 64.0, "bk": 16.0, "tm": 8.0, "tn": 4.0, "double_buffer": False}
    again = mm.kernel_from_row(row)  # a CSV round trip gives floats; the defines stay integers
    assert again.options() == k.options()
    assert mm.relabel(k, "x").options() == k.options() and mm.relabel(k, "x").label == "x"


def test_reuse_grows_with_the_footprint():
    tile, fp, reg = (mm.intensity(k) for k in (mm.shared_tile(16), mm.footprint(16, 32), mm.register_blocked()))
    assert tile["fma_per_shared_float"] == 0.5 and fp["fma_per_shared_float"] == 1.0
    assert reg["fma_per_shared_float"] == 4.0  # 8 x 8 results for 8 + 8 floats per k
    assert (tile["fma_per_global_float"], fp["fma_per_global_float"], reg["fma_per_global_float"]) == (8, 16, 64)
    assert mm.intensity(mm.naive(32))["fma_per_global_float"] == 0.5


def test_resident_blocks_names_the_limiting_resource():
    sm = {"threads": 2048, "registers": 65536, "shared_bytes": 228 * 1024, "blocks": 32}
    occ = mm.resident_blocks(256, 127, 16640, sm)  # 127 registers round up to 128 per thread per warp
    assert occ == {"blocks_per_sm": 2, "warps_per_sm": 16, "limited_by": "registers"}
    assert mm.resident_blocks(1024, 32, 8192, sm)["limited_by"] == "threads, registers"
    assert mm.resident_blocks(4, 28, 0, sm)["limited_by"] == "blocks"  # no shared memory: never its limit
    assert mm.resident_blocks(64, 16, 100 * 1024, sm)["blocks_per_sm"] == 2


def test_tolerance_scales_with_sqrt_n():
    assert mm.tolerance(4096) == pytest.approx(2 * mm.tolerance(1024))
    assert mm.tolerance(1) == pytest.approx(8 * 2.0**-24)


def test_a_dropped_product_term_fails_the_check_and_rounding_passes():
    rng = np.random.default_rng(0)
    n = 257
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    fp32 = (a @ b).astype(np.float64)  # a float32 product with its own summation order
    assert compare_close(fp32, exact, scale, mm.tolerance(n))["status"] == "ok"
    dropped = fp32 - np.outer(a[:, -1], b[-1, :])  # the last k never added: the classic edge bug
    check = compare_close(dropped, exact, scale, mm.tolerance(n), "cuBLAS", "|A||B|")
    assert check["status"] == "wrong" and check["mismatches"] > n * n // 2
    assert "x |A||B|" in check["reason"]
    nan = fp32.copy()
    nan[3, 4] = np.nan  # an entry the kernel never wrote
    assert compare_close(nan, exact, scale, mm.tolerance(n))["mismatches"] == 1


def test_tuning_grid_is_the_cross_product():
    grid = mm.tuning_grid([64, 128], [8, 16], [4, 8])
    assert len(grid) == 2 * 2 * 2 * 2 * 2 and len({k.label for k in grid}) == len(grid)


def test_fp32_peak_of_a_spec():
    from cudalab.labs.capabilities import fp32_peak_GFLOPs

    assert fp32_peak_GFLOPs(
        {"cuda_cores_per_multiprocessor": 128, "multiprocessors": 132, "gpu_clock_MHz": 1980}
    ) == pytest.approx(66908.16)
    assert math.isnan(fp32_peak_GFLOPs({"multiprocessors": 8}))


def test_a_footprint_beyond_the_register_file_is_refused_before_compiling():
    assert "needs at least 288 registers per thread, over the 255" in mm.refusal(
        mm.register_blocked(128, 128, 8, 16, 16), LIMITS
    )
    why = mm.refusal(mm.register_blocked(256, 256, 8, 8, 8), LIMITS)  # 1024 threads: 64 registers each
    assert "needs at least 80 registers per thread, over the 64 it can have (1024 threads share 65,536" in why
    assert mm.refusal(mm.register_blocked(128, 256, 8, 8, 16), LIMITS) == ""  # 152 of 255: the H100's best


# ------------------------------------------------------------------ the final step: warp tiles + cp.async

H100_LIMITS = {**LIMITS, "dynamic_shared_bytes": 227 * 1024}


def test_warptile_async_geometry_defines_and_dynamic_shared_memory():
    k = mm.warptile_async(128, 256, 8, 64, 64, 8, 16, stages=3)
    assert k.threads == 2 * 4 * 32 and k.grid(4095) == Dim3(16, 32)
    assert dict(k.defines) == {
        "BM": 128, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "TM": 8, "TN": 16, "STAGES": 3, "MIN_BLOCKS": 1
    }  # fmt: skip
    assert k.shared_bytes == 3 * 8 * (128 + 4 + 256) * 4
    launch = k.launch(4096)
    assert launch.dynamic_shared_bytes == k.shared_bytes and "-DSTAGES=3" in launch.options
    assert mm.register_blocked().launch(4096).dynamic_shared_bytes == 0


def test_the_last_waves_are_shared_out_by_k_steps_as_the_kernel_computes_it():
    base = mm.warptile_async(128, 256, 32, 64, 64, 8, 16, stages=2)
    split = mm.stream_k(base, sm_count=132)
    assert dict(split.defines)["SPLIT_WAVE"] == 132 and "stream-K" in split.label
    # n = 3000: 24 x 12 = 288 tiles, two full waves of 132 and 24 more; the last 24 and one full
    # wave before them (156 tiles, 94 k tiles each) go to 132 stream-K blocks; 132 tiles stay whole
    plan = mm.split_plan(3000, 128, 256, 32, 132)
    assert {k: plan[k] for k in ("tiles", "whole", "shared", "blocks", "items")} == {
        "tiles": 288, "whole": 132, "shared": 156, "blocks": 132, "items": 264
    }  # fmt: skip
    assert plan["wave_fill"] == pytest.approx(288 / (3 * 132)) and split.grid(3000) == Dim3(264)
    # n = 1000: 32 tiles, fewer than a wave: all shared by 132 blocks of 7-8 k tiles each
    assert mm.split_plan(1000, 128, 256, 32, 132)["items"] == 132
    # tiles that fill whole waves (11 x 11 of them, a wave of 121): nothing shared, one item per tile
    assert mm.split_plan(128 * 11, 128, 128, 8, 121)["shared"] == 0
    # never fewer than SK_MIN k tiles a block, and never a block per tile or fewer: then unsplit
    assert mm.split_plan(257, 128, 256, 32, 132)["blocks"] == 6 * 9 // mm.SK_MIN
    assert mm.split_plan(64, 128, 256, 32, 132)["items"] == 1 == mm.split_plan(64, 128, 256, 32, 132)["tiles"]
    # a recorded row names it back; no wave (no GPU to size it for) leaves the kernel as it was
    assert mm.kernel_from_row({"family": split.family, **split.fields}) == split
    assert mm.kernel_from_row({"family": base.family, **base.fields, "wave": float("nan")}) == base
    assert mm.stream_k(base, sm_count=0) == base


def test_the_wave_table_sets_the_unsplit_grids_fill_beside_both_fractions():
    shape = {"bm": 128, "bn": 256, "bk": 32}
    frame = pd.DataFrame(
        [
            {"n": 1000, "kernel": "a", "status": "ok", "fraction_of_cublas": 0.3, "wave": 0, **shape},
            {"n": 1000, "kernel": "b", "status": "ok", "fraction_of_cublas": 0.8, "wave": 132, **shape},
            {"n": 2048, "kernel": "a", "status": "ok", "fraction_of_cublas": 0.9, "wave": 0, **shape},
            {"n": 2048, "kernel": "b", "status": "wrong", "fraction_of_cublas": 0.95, "wave": 132, **shape},
        ]
    )
    waves = mm.wave_table(frame, "a", "b").set_index("what")["value"]
    # n = 1000: 8 x 4 = 32 tiles in a wave of 132; n = 2048 is left out (its split row is wrong)
    assert waves.to_dict() == {"wave fill, unsplit grid": 32 / 132, "a: of cuBLAS": 0.3, "b: of cuBLAS": 0.8}
    assert mm.wave_table(frame[frame["kernel"].eq("a")], "a", "b").empty


def test_the_small_n_patch_is_sound_and_not_among_the_searched_shapes():
    small = mm.warptile_async(**mm.SMALL_N_SHAPE)
    assert mm.refusal(small, H100_LIMITS) == "" and mm.refusal(mm.stream_k(small, sm_count=132), H100_LIMITS) == ""
    assert mm.SMALL_N_SHAPE not in mm.ASYNC_SEARCH
    # n = 1000 on 132 SMs, two blocks each: 16 x 8 = 128 tiles of 63 k tiles, shared by 264 blocks
    assert mm.split_plan(1000, 64, 128, 16, 264)["items"] == 264


def test_the_search_is_a_dozen_sound_shapes_and_rows_name_them_back():
    kernels = mm.async_search()
    assert 1 <= len(kernels) <= 12 and len({k.label for k in kernels}) == len(kernels)
    for k in kernels:
        assert mm.refusal(k, H100_LIMITS) == "", k.label
        assert mm.kernel_from_row({"family": k.family, **k.fields}) == k


@pytest.mark.parametrize(
    "kernel,reason",
    [
        (mm.warptile_async(128, 128, 8, 32, 32, 8, 8), "does not split into warp tiles"),
        (mm.warptile_async(128, 128, 8, 32, 64, 8, 8, stages=1), "STAGES at least 2"),
        (mm.warptile_async(64, 64, 4, 32, 32, 8, 4), "do not share the 64x4 and 4x64 tiles' copies evenly"),
        (mm.warptile_async(128, 256, 32, 64, 64, 8, 16, stages=5), "exceeds this GPU's limit of 232,448 per block"),
        (mm.warptile_async(128, 256, 8, 64, 64, 16, 16), "does not split into warp tiles"),
        (mm.warptile_async(128, 128, 8, 64, 64, 8, 16, min_blocks=4), "4 x 128 threads share 65,536"),
    ],
)
def test_a_final_step_shape_the_gpu_cannot_hold_is_refused_with_the_limit_named(kernel, reason):
    assert reason in mm.refusal(kernel, H100_LIMITS)


def test_dynamic_shared_memory_beyond_48k_needs_the_opt_in_limit():
    k = mm.warptile_async(128, 256, 16, 64, 64, 8, 16, stages=2)  # 49,664 bytes
    assert k.shared_bytes > 48 * 1024
    assert "exceeds this GPU's limit of 49,152" in mm.refusal(k, mm.COMMON_LIMITS)
    assert mm.refusal(k, H100_LIMITS) == ""


def test_finalists_are_the_fastest_correct_one_per_block_patch_and_depth():
    import pandas as pd

    a, b = (mm.warptile_async(**s) for s in mm.ASYNC_SEARCH[:2])  # 128x128, BK 8 and 16
    c, d = (mm.warptile_async(**s) for s in mm.ASYNC_SEARCH[4:6])  # 128x256x16, 2 and 3 stages
    rows = [
        {**a.row(), "status": "ok", "time_ms": 3.0},
        {**b.row(), "status": "ok", "time_ms": 2.0},
        {**c.row(), "status": "ok", "time_ms": 2.7},  # slower than d, its patch and depth: left out
        {**d.row(), "status": "ok", "time_ms": 2.5},
        {**mm.warptile_async(**mm.ASYNC_SEARCH[9]).row(), "status": "wrong", "time_ms": 1.0},
        {"kernel": mm.CUBLAS, "family": "cublas", "status": "ok", "time_ms": 1.5},
    ]
    picked = mm.finalists(pd.DataFrame(rows))
    assert [k.label for k in picked] == [b.label, d.label, a.label]
    assert [k.label for k in mm.finalists(pd.DataFrame(rows), count=2)] == [b.label, d.label]
