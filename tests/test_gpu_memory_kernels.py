"""GPU tests for chapters 02 and 03: every kernel against the CPU reference, at N that is not a
multiple of any block or segment; the as-published faulty kernels flagged; vecMax and its trace."""

import numpy as np
import pytest
from conftest import random_graph

from cudalab.core.launch import Launch
from cudalab.labs import vecmax as access_pattern
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.graphs import gen_matrix
from cudalab.labs.fw.reference import floyd_warshall_c

pytestmark = pytest.mark.gpu
SIZES = [1, 2, 33, 100, 257]


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def load(file, name, *options):
    from cudalab.core.kernels import load_kernel

    return load_kernel(file, name, options=options)


def square(kernel, b, shared=0, floor=False):
    grid = (lambda n: (n // b, n // b)) if floor else (lambda n: (fw.ceil_div(n, b), fw.ceil_div(n, b)))
    return fw.Variant(f"{b}x{b}", {}, lambda n: per_k_plan(kernel, grid(n), (b, b), shared))


def per_k_plan(kernel, grid, block, shared=0, **kwargs):
    """A per-k plan of a kernel compiled here, over ``grid`` (its description names no file)."""
    return fw.PerKPlan.over(
        Launch("(compiled by the test)", "kernel", block, dynamic_shared_bytes=shared), grid, kernel, **kwargs
    )


def check(variant, mats):
    for mat in mats:
        got, _ = fw.solve_once(variant, mat)
        np.testing.assert_array_equal(got, floyd_warshall_c(mat), err_msg=f"{variant.label}, n={mat.shape[0]}")


def graphs(rng, n):
    return [random_graph(rng, n, 0.05, 1000), gen_matrix(n, int(rng.integers(1 << 30)))]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("threads", [32, 96, 128, 1024])
def test_coalesced_kernel(cp, rng, n, threads):
    k = load("fw_coalesced.cu", "fw_coalesced")
    check(fw.Variant("c", {}, lambda m: per_k_plan(k, (fw.ceil_div(m * m, threads),), (threads,))), graphs(rng, n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("segment", [1, 2, 3, 8])
def test_segmented_kernel(cp, rng, n, segment):
    k = load("fw_coalesced.cu", "fw_coalesced_segment")
    plan = lambda m: per_k_plan(
        k,
        (fw.ceil_div(m * m, 128 * segment),),
        (128,),
        args=lambda d, kk, nn: (d, np.int32(kk), np.int32(nn), np.int32(segment)),
    )
    check(fw.Variant("s", {}, plan), graphs(rng, n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("tile", [8, 16, 32])
def test_fixed_tile_kernel(cp, rng, n, tile):
    check(square(load("fw_shared_tile.cu", "fw_shared_tile", f"-DTILE={tile}"), tile), graphs(rng, n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("segment", [64, 100, 256, 1024])
def test_fixed_row_segment_kernel(cp, rng, n, segment):
    k = load("fw_shared_row.cu", "fw_shared_row")
    check(fw.Variant("r", {}, lambda m: per_k_plan(k, (m, fw.ceil_div(m, segment)), (1, segment))), graphs(rng, n))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("b", [4, 8, 16, 32])
def test_fixed_kslices_kernel(cp, rng, n, b):
    check(square(load("fw_shared_kslices.cu", "fw_shared_kslices"), b, shared=8 * b), graphs(rng, n))


def test_published_kslices_kernel_is_flagged_by_the_check(cp):
    k = load("fw_shared_kslices.cu", "fw_shared_kslices_published")
    variants = [
        fw.Variant(f"published {b}x{b}", {"published": True}, square(k, b, shared=4 * b, floor=True).plan)
        for b in (8, 16)
    ]
    table = fw.correctness(variants, [96, 100], seed=11)
    sparse = table[table["input"].eq("sparse, heavy weights")]
    assert (sparse["status"] == "wrong").all(), sparse
    assert (sparse["mismatches"] > 0).all() and sparse["reason"].str.contains("differ").all()


def test_published_barrier_kernels_are_checked_at_awkward_n(cp):
    """The tile and row-segment kernels as published call __syncthreads() inside the bounds check:
    undefined where N is not a multiple of the block. Whatever this GPU does, the chapter must get a
    verdict (ok, wrong or skipped) for every point rather than hang or crash, and the fixed kernels
    must be right at the same N."""
    tile = load("fw_shared_tile.cu", "fw_shared_tile_published", "-DTILE=16")
    row = load("fw_shared_row.cu", "fw_shared_row_published")
    variants = [
        square(tile, 16),
        fw.Variant("row 64", {}, lambda m: per_k_plan(row, (m, fw.ceil_div(m, 64)), (1, 64))),
    ]
    table = fw.correctness(variants, [96, 100], seed=5)
    assert set(table["status"]) <= {"ok", "wrong", "skipped"} and len(table) == 8
    print(table[["variant", "n", "input", "status", "mismatches"]].to_string())


def test_vecmax_kernels_match_cupy_max_and_flag_a_wrong_one(cp):
    from cudalab.labs import vecmax

    kernels = {name: load("vecmax_coalescing.cu", name) for name in ("vecmax00", "vecmax01", "vecmax02")}
    configs, ceilings, check = vecmax.sweep(kernels, 1 << 22, [1, 80, 333], [32, 128], seed=3)
    assert (configs["status"] == "ok").all(), configs[["kernel", "blocks", "threads_per_block", "reason"]]
    assert (configs["bandwidth_GBps"] > 0).all() and set(ceilings["ceiling"]) == {"device_to_device_copy", "cupy_max"}
    assert len(check) == 1 and check["status"].iloc[0] in {"ok", "remeasured", "flagged"}
    assert check["back_to_back_time_ms"].iloc[0] > 0
    a = cp.random.default_rng(1).random(1 << 20, dtype=cp.float32)
    a[12345] = 7.0  # a max the kernel must find
    row = vecmax.measure(kernels["vecmax01"], vecmax.launch("vecmax01", 128, blocks=8), a, expected=6.0, timing={})
    assert row["status"] == "wrong" and "cupy.max" in row["reason"]


def test_vecmax02_refuses_a_length_not_multiple_of_4(cp):
    from cudalab.core.launch import LaunchRefused
    from cudalab.labs import vecmax

    with pytest.raises(LaunchRefused, match="float4"):
        vecmax.measure(
            load("vecmax_coalescing.cu", "vecmax02"),
            vecmax.launch("vecmax02", 32, blocks=2),
            cp.ones(1001, cp.float32),
            1.0,
            {},
        )


@pytest.mark.parametrize("kernel", ["vecmax00", "vecmax01", "vecmax02"])
@pytest.mark.parametrize("n,blocks,threads", [(16, 2, 2), (1000, 3, 32), (4096, 4, 64)])
def test_access_pattern_generator_matches_the_traced_kernel(cp, kernel, n, blocks, threads):
    k = load("vecmax_coalescing.cu", kernel, "-DTRACE_ACCESS")
    a = cp.arange(n, dtype=cp.float32)
    owner = cp.full(n, -1, dtype=cp.int32)
    partial = cp.empty(blocks * threads, cp.float32)
    k((blocks,), (threads,), (a, partial, np.int64(n), np.int32(access_pattern.per_thread(n, blocks, threads)), owner))
    np.testing.assert_array_equal(cp.asnumpy(owner), access_pattern.owners(kernel, n, blocks, threads))


def test_synccheck_runs_on_the_barrier_kernels():
    """synccheck gives a verdict on the published barrier (on an H100, 2026-11-23: 0 errors, since
    threads that skip the barrier exit, and exited threads leave it); the fixed kernel has none."""
    from cudalab.labs.fw.per_k import launch, synccheck
    from cudalab.toolchain.nvcc import cuda_tool

    if cuda_tool("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not installed")
    published = synccheck(launch("tile", 16, published=True), 100)
    fixed = synccheck(launch("tile", 16), 100)
    print(published, fixed)
    assert fixed["errors"] == 0, fixed
    assert isinstance(published["errors"], int), published
