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
def _relax_through_group():
    cp = require_cupy()
    return cp.ElementwiseKernel(
        "raw int32 cols, raw int32 rows, int32 b, int32 n",
        "int32 d",
        """
        const ptrdiff_t r = i / n, c = i % n;
        int best = d;
        for (int m = 0; m < b; ++m) best = min(best, cols[r * b + m] + rows[(ptrdiff_t)m * n + c]);
        d = best;
        """,
        "cudalab_reference_relax_group",
    )


def floyd_warshall_cupy(d_mat, group: int = 16) -> Any:
    """Reference on the GPU through CuPy's own array operations (min-plus on int32, unreachable =
    2**30-1 so that two of them still fit in an int32; the diagonal is 0).

    Floyd-Warshall's step k adds one candidate, d[i][k] + d[k][j], to every entry, with row and
    column k as they stand after the steps before; so ``group`` steps at once are
    d[i][j] = min(d[i][j], min over m of col_m[i] + row_m[j]), where col_m and row_m are column
    and row k0 + m after steps k0 .. k0 + m - 1. Those come from running the group's steps on the
    group's own columns and rows (an N x group strip each, every step k the textbook update on
    them), then one elementwise pass applies the group to the whole matrix: it is read and
    written once per ``group`` steps instead of once per step."""
    cp = require_cupy()
    inf = UNREACHABLE
    d = cp.where(d_mat < 0, inf, d_mat).astype(cp.int32)
    n = d.shape[0]
    relax = _relax_through_group()
    for k0 in range(0, n, group):
        ks = slice(k0, min(k0 + group, n))
        b = ks.stop - k0
        col, row = d[:, ks].copy(), d[ks, :].copy()  # the group's columns (n x b) and rows (b x n)
        cols, rows = cp.empty_like(col), cp.empty_like(row)
        for m in range(b):
            cols[:, m], rows[m] = col[:, m], row[m]  # column and row k0 + m as step k0 + m reads them
            cp.minimum(col, col[:, m, None] + row[m, None, ks], out=col)
            cp.minimum(row, col[ks, m, None] + row[m, None, :], out=row)
        relax(cols, rows, np.int32(b), np.int32(n), d)
    return cp.where(d >= inf, NO_EDGE, d).astype(cp.int32)


@cache
def _strip_step():
    cp = require_cupy()
    return cp.RawKernel(
        r"""
extern "C" __global__ void cudalab_reference_strip_step(
    int* col, int* row, int* cols, int* rows, long long n, int b, int k0, int m) {
  // step k = k0 + m on the group's strips, col (n x b) and row (b x n). Column and row k do not
  // change in step k (d[k][k] = 0, weights >= 0), so every thread reads them as they stand and
  // none writes them: the thread that owns an entry of them copies it to cols or rows instead.
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long strip = n * b;
  if (i < strip) {
    const long long r = i / b;
    const int c = (int)(i % b);
    const int ik = col[r * b + m];
    if (c == m) { cols[i] = ik; return; }
    const int cand = ik + row[(long long)m * n + k0 + c];
    if (cand < col[i]) col[i] = cand;
  } else if (i < 2 * strip) {
    i -= strip;
    const long long r = i / n, c = i % n;
    const int kj = row[(long long)m * n + c];
    if (r == m) { rows[i] = kj; return; }
    const int cand = col[(k0 + r) * b + m] + kj;
    if (cand < row[i]) row[i] = cand;
  }
}
""",
        "cudalab_reference_strip_step",
    )


def floyd_warshall_strips(d_mat, group: int = 32) -> Any:
    """``floyd_warshall_cupy``'s grouped solve with each step on the group's strips one kernel
    launch, not six CuPy operations: at n = 16384 that is 16,384 launches a solve instead of about
    100,000, which made the grader's reference answers seconds each. The grader's reference
    (``checks.expected``); the chapters' own checks keep ``floyd_warshall_cupy`` until their
    recordings are next renewed (a change to what they reach makes them stale)."""
    cp = require_cupy()
    inf = UNREACHABLE
    d = cp.where(d_mat < 0, inf, d_mat).astype(cp.int32)
    n = d.shape[0]
    relax, step, threads = _relax_through_group(), _strip_step(), 256
    for k0 in range(0, n, group):
        ks = slice(k0, min(k0 + group, n))
        b = ks.stop - k0
        col, row = cp.ascontiguousarray(d[:, ks]), cp.ascontiguousarray(d[ks, :])  # n x b and b x n
        cols, rows = cp.empty_like(col), cp.empty_like(row)
        blocks = (2 * n * b + threads - 1) // threads
        for m in range(b):
            step((blocks,), (threads,), (col, row, cols, rows, np.int64(n), np.int32(b), np.int32(k0), np.int32(m)))
        relax(cols, rows, np.int32(b), np.int32(n), d)
    return cp.where(d >= inf, NO_EDGE, d).astype(cp.int32)
