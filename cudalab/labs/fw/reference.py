"""The sequential CPU Floyd-Warshall that speedups are measured against.

The labs compared against a compiled sequential C loop (their ST_APSP), so
that is what runs here: ``c/floyd_warshall.c`` built once with the system C
compiler and called through ctypes. ``floyd_warshall_numpy`` is a second,
independent implementation used to test it; ``floyd_warshall_cupy`` checks
results on the GPU where n is too large for the CPU.
"""

from __future__ import annotations

import ctypes
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from cudalab.core.gpu import require_cupy
from cudalab.labs.fw.graphs import NO_EDGE, UNREACHABLE
from cudalab.toolchain import cc

SOURCE = Path(__file__).parent / "c" / "floyd_warshall.c"


def build_description() -> str:
    """How the CPU reference was compiled, for the report."""
    return cc.build_description(SOURCE)


@cache
def _library() -> ctypes.CDLL:
    dll = cc.shared_library(SOURCE)
    dll.st_apsp.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_size_t]
    dll.st_apsp.restype = None
    return dll


def _check(mat: np.ndarray) -> np.ndarray:
    if mat.ndim != 2 or mat.shape[0] != mat.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {mat.shape}")
    return np.ascontiguousarray(mat, dtype=np.int32)


def floyd_warshall_c(mat: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """All-pairs shortest paths with the compiled sequential loop (-1 = no path)."""
    src = _check(mat)
    result = src.copy() if out is None else out
    if out is not None:
        np.copyto(result, src)
    _library().st_apsp(result.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), result.shape[0])
    return result


def floyd_warshall_numpy(mat: np.ndarray) -> np.ndarray:
    """Vectorized min-plus Floyd-Warshall (O(n^3) work, O(n) Python steps); for tests."""
    d = _check(mat)
    d = np.where(d < 0, UNREACHABLE, d).astype(np.int64)
    for k in range(d.shape[0]):
        np.minimum(d, d[:, k, None] + d[None, k, :], out=d)
    return np.where(d >= UNREACHABLE, -1, d).astype(np.int32)


@cache
def _relax_through_k():
    cp = require_cupy()
    return cp.ElementwiseKernel("int32 dik, int32 dkj", "int32 d", "d = min(d, dik + dkj)", "cudalab_reference_relax")


def floyd_warshall_cupy(d_mat) -> Any:
    """Reference on the GPU through CuPy's own elementwise kernels (min-plus on int32,
    unreachable = 2**30-1 so that two of them still fit in an int32). Each step k is one fused
    elementwise kernel over the matrix, fed copies of row and column k (which step k leaves
    unchanged, the diagonal being 0): one read and one write of the matrix per k."""
    cp = require_cupy()
    inf = UNREACHABLE
    d = cp.where(d_mat < 0, inf, d_mat).astype(cp.int32)
    relax = _relax_through_k()
    for k in range(d.shape[0]):
        relax(d[:, k].copy()[:, None], d[k].copy()[None, :], d)
    return cp.where(d >= inf, NO_EDGE, d).astype(cp.int32)
