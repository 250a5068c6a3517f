import os

import numpy as np
import pytest

from cudalab.gpu import gpu_available


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device (or no CuPy) here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    """A fresh random generator per test; its seed is printed so a failure can be replayed."""
    seed = int(os.environ.get("CUDALAB_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"{request.node.name}: seed {seed} (set CUDALAB_TEST_SEED to replay)")
    return np.random.default_rng(seed)


def random_graph(rng, n: int, edge_probability: float, max_weight: int) -> np.ndarray:
    """A harsher graph than the labs' (sparse, heavy weights): long paths and unreachable pairs."""
    mat = rng.integers(0, max_weight + 1, size=(n, n), dtype=np.int32)
    mat[rng.random((n, n)) >= edge_probability] = -1
    np.fill_diagonal(mat, 0)
    return mat
