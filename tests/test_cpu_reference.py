import numpy as np
import pytest
from conftest import random_graph

from cudalab.labs.fw.graphs import gen_matrix, gen_matrix_quick, gen_sparse, gen_sparse_quick
from cudalab.labs.fw.reference import floyd_warshall_c, floyd_warshall_numpy


def test_small_graph_by_hand():
    #   0 -> 1 (4), 1 -> 2 (1), 0 -> 2 (7); 2 has no way back
    mat = np.array([[0, 4, 7], [-1, 0, 1], [-1, -1, 0]], dtype=np.int32)
    expected = np.array([[0, 4, 5], [-1, 0, 1], [-1, -1, 0]], dtype=np.int32)
    np.testing.assert_array_equal(floyd_warshall_c(mat), expected)
    np.testing.assert_array_equal(floyd_warshall_numpy(mat), expected)
    assert mat[0, 2] == 7, "the input must not be modified"


@pytest.mark.parametrize("n", [1, 2, 17, 64, 129])
@pytest.mark.parametrize("density", [0.02, 0.3, 1.0])
def test_c_and_numpy_agree(rng, n, density):
    mat = random_graph(rng, n, density, max_weight=1000)
    np.testing.assert_array_equal(floyd_warshall_c(mat), floyd_warshall_numpy(mat))


def test_c_writes_into_given_buffer(rng):
    mat = random_graph(rng, 40, 0.1, 50)
    out = np.full_like(mat, 123)
    assert floyd_warshall_c(mat, out) is out
    np.testing.assert_array_equal(out, floyd_warshall_numpy(mat))


def test_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        floyd_warshall_c(np.zeros((2, 3), dtype=np.int32))


def test_gen_matrix_follows_the_labs_convention():
    mat = gen_matrix(600, seed=1)
    assert mat.dtype == np.int32 and mat.shape == (600, 600)
    assert (np.diag(mat) == 0).all()
    off = mat[~np.eye(600, dtype=bool)]
    assert off.min() == -1 and off.max() == 30
    assert abs((off == -1).mean() - 1 / 32) < 0.005  # GenMatrix: rand() % 32 - 1
    np.testing.assert_array_equal(mat, gen_matrix(600, seed=1))
    assert not np.array_equal(gen_matrix(600, seed=2), mat)
    with pytest.raises(ValueError):
        gen_matrix(0, seed=1)


@pytest.mark.parametrize("p,max_weight", [(0.05, 1000), (0.5, 1), (0.03, 500), (1.0, 30)])
def test_the_quick_sparse_graph_draws_gen_sparse_s_distribution(p, max_weight):
    """The grader's harsh graph (one draw a pair) against the chapters' (a weight and a coin a
    pair): the same edge fraction and the same uniform weights, reproducible by seed."""
    n = 500
    off = ~np.eye(n, dtype=bool)
    quick, slow = gen_sparse_quick(n, 3, p, max_weight), gen_sparse(n, 3, p, max_weight)
    assert quick.dtype == np.int32 and quick.shape == (n, n) and (np.diag(quick) == 0).all()
    for mat in (quick, slow):
        edges = mat[off][mat[off] >= 0]
        assert abs(edges.size / off.sum() - p) < 0.01
        assert edges.min() == 0 and edges.max() == max_weight
        counts = np.bincount(edges, minlength=max_weight + 1) if max_weight < 40 else None
        if counts is not None:  # every weight about equally often
            assert counts.min() > 0.8 * counts.mean()
        else:
            assert abs(edges.mean() - max_weight / 2) < 0.03 * max_weight
    np.testing.assert_array_equal(quick, gen_sparse_quick(n, 3, p, max_weight))
    assert not np.array_equal(quick, gen_sparse_quick(n, 4, p, max_weight))
    with pytest.raises(ValueError, match="edge_probability"):
        gen_sparse_quick(n, 3, 0.0)


def test_the_quick_genmatrix_draws_gen_matrix_s_distribution():
    """The grader's timed graph (a byte of raw bits a pair) against the labs' GenMatrix: -1..30
    uniform off the diagonal, 0 on it, reproducible by seed; other weights fall back to gen_matrix."""
    n = 600
    off = ~np.eye(n, dtype=bool)
    quick = gen_matrix_quick(n, seed=1)
    assert quick.dtype == np.int32 and quick.shape == (n, n) and (np.diag(quick) == 0).all()
    counts = np.bincount(quick[off] + 1, minlength=32)
    assert counts.size == 32 and counts.min() > 0.9 * counts.mean()  # each of the 32 values, equally often
    np.testing.assert_array_equal(quick, gen_matrix_quick(n, seed=1))
    assert not np.array_equal(quick, gen_matrix_quick(n, seed=2))
    np.testing.assert_array_equal(gen_matrix_quick(50, 4, max_weight=40), gen_matrix(50, 4, max_weight=40))
    assert gen_matrix_quick(1, 9).tolist() == [[0]]
    with pytest.raises(ValueError):
        gen_matrix_quick(0, seed=1)
