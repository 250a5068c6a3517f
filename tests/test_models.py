"""Bytes models, the access-pattern generator and launch-shape parameter names (no GPU needed)."""

import numpy as np
import pytest

from cudalab.chapter.profiles import _merge, launch_shape
from cudalab.core.rates import effective_GBps
from cudalab.labs.fw.per_k import solve_bytes as floyd_warshall_bytes
from cudalab.labs.fw.per_k import step_bytes as floyd_warshall_step_bytes
from cudalab.labs.vecmax import owners, pattern_frame, per_thread, reduction_bytes


def test_floyd_warshall_bytes_read_and_write_every_entry_each_step():
    assert floyd_warshall_step_bytes(1000) == 4 * (2 * 1000**2 + 2 * 1000)
    assert floyd_warshall_bytes(1000) == 1000 * floyd_warshall_step_bytes(1000)


def test_reduction_reads_every_float_once_and_bandwidth_units():
    assert reduction_bytes(1_280_000_000) == 5_120_000_000
    assert effective_GBps(5_120_000_000, 2.0) == pytest.approx(2560.0)


def test_kernel00_matches_lab_002_figure_1():
    # 16 elements, 2 blocks of 2 threads: each thread reads 4 consecutive elements
    frame = pattern_frame("vecmax00", 16, 2, 2)
    assert frame["blockIdx_x"].tolist() == [0] * 8 + [1] * 8
    assert frame["threadIdx_x"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1] * 2
    assert frame["step"].tolist() == [0, 1, 2, 3] * 4


def test_kernel01_matches_lab_002_figure_2():
    frame = pattern_frame("vecmax01", 16, 2, 2)
    assert frame["blockIdx_x"].tolist() == [0] * 8 + [1] * 8
    assert frame["threadIdx_x"].tolist() == [0, 1] * 8
    assert frame["step"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3] * 2


def test_kernel02_interleaves_the_whole_grid_in_float4s():
    o = owners("vecmax02", 32, 2, 2)
    assert o[:16].tolist() == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert o[16:].tolist() == o[:16].tolist()


@pytest.mark.parametrize("kernel", ["vecmax00", "vecmax01"])
@pytest.mark.parametrize("n,blocks,threads", [(1000, 3, 7), (17, 2, 4), (4096, 8, 32), (5, 4, 4)])
def test_every_element_is_read_exactly_once(kernel, n, blocks, threads):
    o = owners(kernel, n, blocks, threads)
    assert (o >= 0).all() and o.max() < blocks * threads
    counts = np.bincount(o, minlength=blocks * threads)
    assert counts.max() <= per_thread(n, blocks, threads)


def test_unknown_kernel():
    with pytest.raises(ValueError):
        owners("vecmax99", 8, 1, 1)


@pytest.mark.parametrize(
    "name,threads",
    [
        ("block_sizes", 256),
        ("tile_edges", 256),
        ("kslice_edges", 256),
        ("threads_per_block", 16),
        ("row_segment_threads", 16),
        ("vecmax_threads", 16),
    ],
)
def test_launch_shape_names(name, threads):
    _, count = launch_shape(name)
    assert count(16) == threads


def test_non_shape_names_are_not_checked():
    assert launch_shape("sizes") is None and launch_shape("segment_sizes") is None


def test_extends_never_blends_two_devices_or_two_published_tables():
    base = {
        "device": {"name": "A", "multiprocessors": 8},
        "chapters": {
            "c": {"params": {"x": 1}, "published": {"t1": {"source": "s", "gpu": "A", "note": "n", "rows": []}}}
        },
    }
    over = {
        "device": {"name": "B"},
        "chapters": {"c": {"published": {"t1": {"source": "s2", "gpu": "B", "rows": [1]}}}},
    }
    merged = _merge(base, over)
    assert merged["device"] == {"name": "B"}
    assert merged["chapters"]["c"]["published"]["t1"] == {"source": "s2", "gpu": "B", "rows": [1]}
    assert merged["chapters"]["c"]["params"] == {"x": 1}
