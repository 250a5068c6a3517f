"""GPU tests: the theoretical occupancy (cudalab.core.occupancy) against the driver's occupancy API.

For several kernels of kernels_cu, block sizes and dynamic shared-memory sizes, the blocks per SM
that ``occupancy(present cc, threads, num_regs, shared_size_bytes, dynamic)`` computes from the
architecture's table must equal ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for the same
compiled function (CuPy: ``cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(func_ptr,
block_size, dynamic_smem_bytes)``, with ``func_ptr`` the ``CUfunction`` of ``RawKernel.kernel.ptr``).
"""

import pytest

from cudalab.core.gpu import attributes
from cudalab.core.kernels import load_kernel
from cudalab.core.occupancy import SM_LIMITS, occupancy, present_cc

pytestmark = pytest.mark.gpu

# a module compiled for these tests alone, so that opting a kernel in to more dynamic shared memory
# changes no kernel that another test (or a chapter) has loaded
OWN = ("-DCUDALAB_OCCUPANCY_TEST=1",)
BLOCK_SIZES = (32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024)
KIB = 1024

# (file, kernel, options, dynamic shared bytes per block to try)
KERNELS = [
    ("fw_basic_2d.cu", "fw_basic_2d", (), (0,)),
    ("fw_coalesced.cu", "fw_coalesced", (), (0,)),
    ("mm_00_naive.cu", "mm_naive_global", (), (0,)),
    ("vecmax_coalescing.cu", "vecmax00", (), (0,)),
    ("fw_shared_tile.cu", "fw_shared_tile", (), (0,)),
    ("mm_01_shared_tile.cu", "mm_shared_tile", ("-DTILE=16",), (0,)),
    ("mm_01_shared_tile.cu", "mm_shared_tile", ("-DTILE=32",), (0,)),
    ("mm_02_footprint.cu", "mm_footprint", (), (0,)),
    ("mm_03_register_blocked.cu", "mm_register_blocked", (), (0,)),
    ("km_00_assign.cu", "find_nearest_cluster", (), (0, 100, 4 * KIB, 12000, 20 * KIB, 40000, 48 * KIB)),
]


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.fixture(scope="module")
def cc():
    key = present_cc()
    if key not in SM_LIMITS:
        pytest.skip(f"compute capability {key} is not in SM_LIMITS")
    return key


def _driver_blocks(cp, kernel, threads, dynamic):
    try:
        return cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, threads, dynamic)
    except AttributeError as exc:
        pytest.skip(f"this CuPy does not expose the occupancy API: {exc}")


def test_the_table_matches_the_present_gpu(cc):
    lim, attrs = SM_LIMITS[cc], attributes()
    seen = {
        "max_threads_per_sm": attrs["MaxThreadsPerMultiProcessor"],
        "max_blocks_per_sm": attrs["MaxBlocksPerMultiprocessor"],
        "registers_per_sm": attrs["MaxRegistersPerMultiprocessor"],
        "max_registers_per_block": attrs["MaxRegistersPerBlock"],
        "max_shared_per_sm": attrs["MaxSharedMemoryPerMultiprocessor"],
        "max_shared_per_block": attrs.get("MaxSharedMemoryPerBlockOptin", lim.max_shared_per_block),
        "reserved_shared_per_block": attrs.get("ReservedSharedMemoryPerBlock", lim.reserved_shared_per_block),
        "max_threads_per_block": attrs["MaxThreadsPerBlock"],
    }
    assert {k: getattr(lim, k) for k in seen} == seen


@pytest.mark.parametrize("filename, name, options, dynamics", KERNELS, ids=lambda v: v if isinstance(v, str) else None)
def test_blocks_per_sm_match_the_driver(cp, cc, filename, name, options, dynamics):
    kernel = load_kernel(filename, name, (*options, *OWN))
    regs, static = kernel.num_regs, kernel.shared_size_bytes
    mismatches, checked = [], 0
    for threads in BLOCK_SIZES:
        if threads > kernel.max_threads_per_block:  # __launch_bounds__ caps it; the driver answers 0
            continue
        for dynamic in dynamics:
            ours = occupancy(cc, threads, regs, static, dynamic)
            driver = _driver_blocks(cp, kernel, threads, dynamic)
            checked += 1
            if ours["blocks_per_sm"] != driver:
                mismatches.append((threads, dynamic, ours["blocks_per_sm"], driver, ours["limited_by"]))
    assert checked
    assert not mismatches, (
        f"{name} ({regs} registers, {static} B static shared) on cc {cc}: "
        f"(threads, dynamic B, ours, driver, limited by) {mismatches}"
    )


def test_opted_in_dynamic_shared_memory_matches_the_driver(cp, cc):
    lim = SM_LIMITS[cc]
    kernel = load_kernel("km_00_assign.cu", "find_nearest_cluster", ("-DCUDALAB_OCCUPANCY_OPTIN=1",))
    static = kernel.shared_size_bytes
    most = lim.max_shared_per_block - static
    if most <= 48 * KIB:
        pytest.skip(f"cc {cc} allows no more than 48 KiB of shared memory per block")
    kernel.max_dynamic_shared_size_bytes = most
    sizes = sorted({48 * KIB + 1, 64 * KIB, 96 * KIB, 113 * KIB, 114 * KIB, most // 2, most // 2 + 1, most} - {0})
    mismatches = []
    for dynamic in (s for s in sizes if s <= most):
        for threads in (128, 256):
            ours = occupancy(cc, threads, kernel.num_regs, static, dynamic)["blocks_per_sm"]
            driver = _driver_blocks(cp, kernel, threads, dynamic)
            if ours != driver:
                mismatches.append((threads, dynamic, ours, driver))
    assert not mismatches, f"(threads, dynamic B, ours, driver): {mismatches}"
