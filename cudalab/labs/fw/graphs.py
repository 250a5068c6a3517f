"""Floyd-Warshall inputs and their conventions.

The labs' convention: an n x n int32 matrix, -1 (``NO_EDGE``) where there is no edge, 0 on the
diagonal. The NTHU convention of lab 001 and the blocked kernels: ``UNREACHABLE`` = 2^30 - 1
instead, so that a sum of two still fits in an int32 and ``min`` needs no branch.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

UNREACHABLE = 1073741823  # 2**30 - 1
NO_EDGE = -1


def gen_matrix(n: int, seed: int, max_weight: int = 30) -> np.ndarray:
    """A random graph in the labs' convention (their GenMatrix: ``rand() % 32 - 1``):
    weights 0..max_weight, -1 (no edge) with probability 1/(max_weight+2), zero diagonal."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    rng = np.random.default_rng([seed, n])
    mat = rng.integers(-1, max_weight + 1, size=(n, n), dtype=np.int32)
    np.fill_diagonal(mat, 0)
    return mat


def gen_sparse(n: int, seed: int, edge_probability: float = 0.05, max_weight: int = 1000) -> np.ndarray:
    """A harsher graph than the labs': sparse, heavy weights, so shortest paths are long and
    many pairs unreachable. The labs' GenMatrix graphs have so many zero-weight edges that most
    distances collapse to 0 or 1, which lets some wrong kernels pass."""
    rng = np.random.default_rng([seed, n, 1])
    mat = rng.integers(0, max_weight + 1, size=(n, n), dtype=np.int32)
    mat[rng.random((n, n)) >= edge_probability] = NO_EDGE
    np.fill_diagonal(mat, 0)
    return mat


INPUTS: dict[str, Callable[[int, int], np.ndarray]] = {"lab GenMatrix": gen_matrix, "sparse, heavy weights": gen_sparse}
