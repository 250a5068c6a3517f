"""GPU tests of chapter 05's kernels: every kernel at small odd n against cuBLAS, refusals, TF32."""

import numpy as np
import pytest

from cudalab.core.paths import KERNELS_DIR
from cudalab.labs import matmul as mm

pytestmark = pytest.mark.gpu

ODD_SIZES = [1, 17, 33, 100, 257]
KERNELS = [
    mm.naive(2),
    mm.naive(32),
    mm.naive(32, register=True),
    mm.shared_tile(16),
    mm.shared_tile(32),
    mm.shared_tile(32, unroll=16),
    mm.footprint(16, 32),
    mm.footprint(16, 48),
    mm.footprint(32, 64),
    mm.footprint(16, 32, aligned_copy=True),
    mm.footprint(16, 32, ktile=64),
    mm.register_blocked(),
    mm.register_blocked(double_buffer=False),
    mm.register_blocked(64, 64, 16, 4, 4),
    mm.register_blocked(64, 128, 8, 4, 8),  # a non-square block tile
    mm.register_blocked(128, 64, 16, 8, 4),
]  # and its transpose, with a non-square thread tile
KERNELS += mm.async_search()  # the final step: every shape of its search (cp.async, or plain copies below sm_80)


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def test_cublas_computes_in_full_fp32(cp):
    frame = mm.cublas_precision()
    assert bool(frame["full_fp32"].iloc[0]) and frame["got"].iloc[0] == frame["expected"].iloc[0]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.label)
def test_every_kernel_matches_cublas_at_small_odd_n(cp, kernel):
    frame = mm.sweep([kernel], ODD_SIZES + [128], seed=3, timing={"min_repeats": 1, "max_repeats": 1, "min_total_s": 0})
    rows = frame[frame["kernel"].eq(kernel.label)]
    assert rows["status"].tolist() == ["ok"] * (len(ODD_SIZES) + 1), rows[["n", "status", "reason"]].to_string()
    assert (rows["max_rel_error"] <= rows["tolerance"]).all()


def test_the_check_catches_a_kernel_that_skips_the_last_k(cp, tmp_path):
    src = (
        (KERNELS_DIR / "mm_00_naive.cu")
        .read_text()
        .replace("for (int k = 0; k < n; k++)\n        sum", "for (int k = 0; k < n - 1; k++)\n        sum")
    )
    broken = tmp_path / "mm_00_naive.cu"
    broken.write_text(src)
    wrong = mm.MatmulKernel("skips k = n-1", "naive", str(broken), "mm_naive_register", (16, 16), (16, 16))
    frame = mm.sweep([wrong], [100], seed=1, timing={"min_repeats": 1, "max_repeats": 1, "min_total_s": 0})
    row = frame[frame["kernel"].eq("skips k = n-1")].iloc[0]
    assert row["status"] == "wrong" and np.isnan(row["fraction_of_cublas"])
    assert mm.best(frame) is None  # a wrong kernel is never a best


def test_refused_shapes_are_rows_with_reasons_and_the_rest_runs(cp):
    kernels = [mm.footprint(16, 96), mm.footprint(32, 48), mm.naive(48), mm.footprint(16, 32)]
    frame = mm.sweep(kernels, [64], seed=1, timing={"min_repeats": 1, "max_repeats": 1, "min_total_s": 0})
    status = frame.set_index("kernel")["status"]
    assert [status[k.label] for k in kernels] == ["skipped", "skipped", "skipped", "ok"]
    assert status[mm.CUBLAS] == "ok"
    assert frame.set_index("kernel").loc[kernels[0].label, "reason"].startswith("LaunchRefused: 73,728 bytes")


def test_a_kernel_over_the_register_file_is_refused_at_launch(cp):
    from cudalab.core.errors import LaunchRefused
    from cudalab.core.launch import check_launch

    kern = mm.register_blocked(256, 256, 8, 8, 8)  # 1024 threads x ~128 registers > 65536 per block
    compiled = kern.compile()
    if compiled.max_threads_per_block >= 1024:
        pytest.skip(f"the compiler fitted it in {compiled.num_regs} registers per thread")
    with pytest.raises(LaunchRefused, match="exceeds what this kernel can launch"):
        check_launch(compiled, kern.grid(512), kern.block)


def test_occupancy_estimate_matches_the_driver(cp):
    kern = mm.register_blocked()
    compiled = kern.compile()
    ours = mm.resident_blocks(kern.threads, compiled.num_regs, compiled.shared_size_bytes, mm.present_sm())
    try:
        driver = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(compiled.kernel.ptr, kern.threads, 0)
    except AttributeError as exc:
        pytest.skip(f"this CuPy does not expose the occupancy API: {exc}")
    assert ours["blocks_per_sm"] == driver


@pytest.mark.parametrize("kernel", mm.async_search()[:6], ids=lambda k: k.label)
def test_the_final_step_matches_cublas_where_tiles_and_float4_rows_do_not_fit(cp, kernel):
    """n = 130 (n % 4 != 0: 4-byte copies of B), 132 (float4 rows, a partial block patch) and
    264 (two block patches of 128, a partial third; more k-tiles than stages)."""
    sizes = [130, 132, 264]
    frame = mm.sweep([kernel], sizes, seed=5, timing={"min_repeats": 1, "max_repeats": 1, "min_total_s": 0})
    rows = frame[frame["kernel"].eq(kernel.label)]
    assert rows["status"].tolist() == ["ok"] * len(sizes), rows[["n", "status", "reason"]].to_string()


@pytest.mark.parametrize(
    "shape",
    [
        dict(zip(mm.ASYNC_SHAPE, (128, 256, 32, 64, 64, 8, 16, 2, 1))),
        dict(zip(mm.ASYNC_SHAPE, (128, 128, 8, 32, 64, 8, 8, 4, 2))),
        mm.SMALL_N_SHAPE,
    ],
    ids=["128x256x32", "128x128x8", "small n"],
)
def test_stream_k_matches_cublas_and_gives_the_same_bits_every_run(cp, shape):
    """n = 130 (n % 4 != 0) and 1000: every tile shared by k steps; 3000: one whole wave on an
    H100, then tiles in stream-K ranges, summed in k order by whichever segment arrives last. The
    same C, bit for bit, on a second and third run."""
    kernel = mm.stream_k(mm.warptile_async(**shape))
    sizes = [130, 1000, 1600, 3000]
    frame = mm.sweep([kernel], sizes, seed=5, timing={"min_repeats": 1, "max_repeats": 1, "min_total_s": 0})
    rows = frame[frame["kernel"].eq(kernel.label)]
    assert rows["status"].tolist() == ["ok"] * len(sizes), rows[["n", "status", "reason"]].to_string()
    compiled, ops = kernel.compile(), mm.operands(3000, 5)
    spec = kernel.launch(3000)
    mm.allow_shared_memory(compiled, spec.dynamic_shared_bytes)
    runs = []
    for _ in range(3):
        ops.c.fill(np.nan)
        spec((ops.a, ops.b, ops.c, np.int32(3000)), kernel=compiled)
        runs.append(cp.asnumpy(ops.c).view(np.int32))
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize("split", [False, True], ids=["whole tiles", "stream-K"])
def test_inward_edges_give_the_bits_of_the_checked_copies(cp, split):
    """mm_04's item 8 (inward edges: an edge tile computes the block that ends at the matrix's
    edge, overlapping its neighbour, and copies unchecked) changes which block computes a cell,
    not its sum: at n = 100 and 130 (off: n < BN, n % 4 != 0), 132, 1000 and 1600 (edge tiles
    moved), C matches cuBLAS and has the bits of the same shape with checked edge tiles."""
    from cudalab.core.check import compare_close

    shapes = [{**mm.SMALL_N_SHAPE, "inward_edges": on} for on in (0, 1)]
    kernels = [mm.stream_k(mm.warptile_async(**s)) if split else mm.warptile_async(**s) for s in shapes]
    for n in (100, 130, 132, 1000, 1600):
        ops = mm.operands(n, 5)
        out = []
        for kernel in kernels:
            compiled, spec = kernel.compile(), kernel.launch(n)
            mm.allow_shared_memory(compiled, spec.dynamic_shared_bytes)
            ops.c.fill(np.nan)
            spec((ops.a, ops.b, ops.c, np.int32(n)), kernel=compiled)
            out.append(cp.asnumpy(ops.c))
            check = compare_close(ops.c, ops.reference, ops.scale, mm.tolerance(n), "cuBLAS", "|A||B|")
            assert check["status"] == "ok", (n, kernel.label, check)
        assert np.array_equal(out[0].view(np.int32), out[1].view(np.int32)), n
