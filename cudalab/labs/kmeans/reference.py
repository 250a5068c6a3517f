"""K-means on the CPU: the classic sequential code (in C, exactly), a float64 reference step that
the GPU variants are checked against, and seeded Gaussian blobs to cluster.

The classic algorithm (Liao's seq_kmeans): the initial centres are the first K objects; each
object goes to the nearest centre by squared Euclidean distance, ties to the lowest index; the new
centres are the means of their members, and an empty cluster keeps its centre; repeat while the
fraction of objects that changed membership exceeds the threshold (default 0.001), at most 500
times more.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from cudalab.core.errors import CaseFormatError
from cudalab.toolchain import cc

SOURCE = Path(__file__).parent / "c" / "kmeans_seq.c"
THRESHOLD = 0.001
MAX_LOOP = 500
# Two centres whose squared distances to a point differ by less than this fraction of the nearer
# one are a near tie: float32 and float64 may rightly pick differently (counted, not failed).
TIE_RTOL = 1e-4

_F = ctypes.POINTER(ctypes.c_float)
_I = ctypes.POINTER(ctypes.c_int)


@cache
def _library() -> ctypes.CDLL:
    dll = cc.shared_library(SOURCE)
    dll.seq_kmeans.argtypes = [
        _F,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_float,
        ctypes.c_int,
        _F,
        _I,
        _F,
        _I,
    ]
    dll.seq_kmeans.restype = ctypes.c_int
    dll.host_update.argtypes = [_F, ctypes.c_int, ctypes.c_int, ctypes.c_int, _I, _F, _F, _I]
    dll.host_update.restype = None
    return dll


def build_description() -> str:
    return cc.build_description(SOURCE)


def check_k(k: int, n: int, where: str = "") -> None:
    """K must be between 1 and the number of objects (the first K objects are the initial centres)."""
    at = f"{where}: " if where else ""
    if k <= 0:
        raise CaseFormatError(f"{at}K = {k} clusters; K must be at least 1")
    if k > n:
        raise CaseFormatError(f"{at}K = {k} clusters but only {n} objects; K cannot exceed N")


@dataclass
class Result:
    centres: np.ndarray  # (K, D) float32
    membership: np.ndarray  # (N,) int32
    iterations: int


def classic(points: np.ndarray, k: int, threshold: float = THRESHOLD, max_loop: int = MAX_LOOP) -> Result:
    """The classic sequential k-means, bit for bit (compiled C, float32)."""
    objects = np.ascontiguousarray(points, dtype=np.float32)
    n, d = objects.shape
    check_k(k, n)
    centres = objects[:k].copy()
    membership = np.empty(n, dtype=np.int32)
    sums = np.empty((k, d), dtype=np.float32)
    sizes = np.empty(k, dtype=np.int32)
    iterations = _library().seq_kmeans(
        objects.ctypes.data_as(_F),
        d,
        n,
        k,
        ctypes.c_float(threshold),
        max_loop,
        centres.ctypes.data_as(_F),
        membership.ctypes.data_as(_I),
        sums.ctypes.data_as(_F),
        sizes.ctypes.data_as(_I),
    )
    return Result(centres, membership, int(iterations))


def host_update(points: np.ndarray, membership: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """New centres from a membership, as the classic CUDA code updates them on the host (float32
    sums in object order; an empty cluster keeps its centre). ``centres`` is updated in place."""
    n, d = points.shape
    k = centres.shape[0]
    sums = np.empty((k, d), dtype=np.float32)
    sizes = np.empty(k, dtype=np.int32)
    _library().host_update(
        points.ctypes.data_as(_F),
        d,
        n,
        k,
        membership.ctypes.data_as(_I),
        centres.ctypes.data_as(_F),
        sums.ctypes.data_as(_F),
        sizes.ctypes.data_as(_I),
    )
    return centres


def assign64(points: np.ndarray, centres: np.ndarray, chunk: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centre of every point in float64 (ties to the lowest index), and each point's
    relative gap between its two nearest squared distances (1 where K = 1)."""
    p = np.asarray(points, dtype=np.float64)
    c = np.asarray(centres, dtype=np.float64)
    membership = np.empty(len(p), dtype=np.int32)
    gap = np.ones(len(p))
    for s in range(0, len(p), chunk):
        dist = ((p[s : s + chunk, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        membership[s : s + chunk] = dist.argmin(axis=1)
        if c.shape[0] > 1:
            two = np.partition(dist, 1, axis=1)[:, :2]
            gap[s : s + chunk] = (two[:, 1] - two[:, 0]) / np.maximum(two[:, 1], np.finfo(float).tiny)
    return membership, gap


def means64(points: np.ndarray, membership: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The float64 means of each cluster's members; an empty cluster keeps its centre."""
    k, d = centres.shape
    counts = np.bincount(membership, minlength=k).astype(np.float64)
    sums = np.zeros((k, d))
    np.add.at(sums, membership, np.asarray(points, dtype=np.float64))
    out = np.asarray(centres, dtype=np.float64).copy()
    full = counts > 0
    out[full] = sums[full] / counts[full, None]
    return out


def blobs(n: int, d: int, k: int, seed: int, spread: float = 10.0, sigma: float = 1.0) -> np.ndarray:
    """``n`` float32 points in ``d`` dimensions around ``k`` centres drawn uniformly in
    [-spread, spread]^d, each point Gaussian (``sigma``) around a centre picked at random."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-spread, spread, (k, d)).astype(np.float32)
    labels = rng.integers(0, k, n)
    points = rng.standard_normal((n, d), dtype=np.float32)
    points *= np.float32(sigma)
    points += centres[labels]
    return points
