"""How a graded matrix-multiply point (chapter 05, lab 002's footprint kernel) is checked
(``labs.checks``): the operands that catch wrong kernels, a point's kernel as a ``Trial`` in the
submission's process, and the product computed in float64 in the grader's.

The chapter's own operands (A, B uniform in [-1, 1), ``matmul.operands``) are timed; each term of a
dot product then weighs about 1/n of its scale, so a kernel that loses a few terms at an edge
misses by little more than the tolerance allows, and only where the edge is. The kinds below:

- ``odd n``: n not a multiple of any tile (block edge, footprint, k tile), drawn at the n the
  chapter declares: the edge tiles of C, and the last partial k tile, must be handled. The
  footprint kernel zero-fills its shared tiles past n (``mm_02_footprint.cu``: "any n works"), so
  it supports every n and the declared n is used as it is (a prime);
- ``mixed scale``: each element's magnitude drawn over four decades and its sign at random, rows of
  A and columns of B scaled over six more: in every dot product a few terms dominate, and which
  ones differs from entry to entry, so a term lost, repeated or taken from the wrong row or column
  is visible against that entry's own scale, and values leaking between rows of very different
  size stand out.

The product is judged as the chapter judges it (``matmul.measure`` with ``core.check.compare_close``):
elementwise, ``|C - C_ref| <= matmul.tolerance(n) x (|A||B|)``, here against the float64 product of
the same float32 operands (the chapter's tolerance counts the rounding of two float32 results, so
against float64 it has room to spare). C is poisoned with NaN before every run: an entry never
written fails; A and B are followed by NaN on the device, so an entry made from a value read past
their end fails too (even one multiplied by a zero-filled partner).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cudalab.labs.checks import Checks, InputKind, Point


def _rng(seed: int, n: int, kind: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(n), kind])


def _uniform(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    a = rng.random((n, n), dtype=np.float32) * np.float32(2) - np.float32(1)
    b = rng.random((n, n), dtype=np.float32) * np.float32(2) - np.float32(1)
    return {"a": a, "b": b}


def uniform(point: Point, seed: int) -> dict[str, np.ndarray]:
    """The chapter's kind of operands (``matmul.operands``): A and B uniform in [-1, 1), drawn on the
    host with NumPy so that the grader's process draws the very same ones."""
    n = int(point["n"])
    return _uniform(n, _rng(seed, n, 0))


def odd_n(point: Point, seed: int) -> dict[str, np.ndarray]:
    """Uniform operands as ``uniform``'s, at the n the chapter declares for this kind: one that is a
    multiple of no tile. The footprint kernel handles every n (its shared tiles are zero-filled past
    n), so the declared n is drawn as it is; ``odd_n_ok`` says whether an n suits the kind."""
    n = int(point["n"])
    return _uniform(n, _rng(seed, n, 1))


def tiles(point: Point) -> tuple[int, ...]:
    """The point's tiles: its block edge and footprint (its k tile is the footprint, ``matmul.footprint``'s default)."""
    return (int(point["block_x"]), int(point["footprint"]))


def odd_n_ok(point: Point) -> bool:
    """Whether the point's n is a multiple of none of its tiles (what ``odd n`` must be drawn at)."""
    n = int(point["n"])
    return all(n % t for t in tiles(point))


def mixed_scale(point: Point, seed: int) -> dict[str, np.ndarray]:
    """A and B whose elements are ``+-10^e`` with e uniform in [-2, 2), each row of A and each column
    of B scaled by ``10^f``, f uniform in [-3, 3): elements from 1e-5 to 1e5, and the scale |A||B|
    of C's entries over about twelve decades (all well inside float32's range)."""
    n = int(point["n"])
    rng = _rng(seed, n, 2)

    def operand() -> np.ndarray:
        sign = np.where(rng.random((n, n)) < 0.5, -1.0, 1.0)
        return sign * 10.0 ** rng.uniform(-2, 2, (n, n))

    rows, cols = 10.0 ** rng.uniform(-3, 3, n), 10.0 ** rng.uniform(-3, 3, n)
    a = (operand() * rows[:, None]).astype(np.float32)
    b = (operand() * cols[None, :]).astype(np.float32)
    return {"a": a, "b": b}


KINDS = {
    "uniform": InputKind("A and B uniform in [-1, 1) (the chapter's timed operands)", uniform),
    "odd n": InputKind("A and B uniform in [-1, 1) at an n that is a multiple of no tile", odd_n),
    "mixed scale": InputKind("operands spanning ten decades with mixed signs, rows and columns scaled", mixed_scale),
}


class MatmulTrial:
    """The footprint kernel at one block edge and footprint, ready to multiply one pair of n x n
    operands after another: each pair copied into the matrices it reads (each followed by NaN), C
    poisoned with NaN (zeroed for a kernel that accumulates into C), then one launch."""

    def __init__(self, point: Point, kernel_file: str | Path | None) -> None:
        from cudalab.core.errors import LaunchRefused
        from cudalab.core.gpu import require_cupy
        from cudalab.core.launch import allow_shared_memory
        from cudalab.labs import matmul
        from cudalab.labs.points import require_used

        cp = require_cupy()
        self.n = n = int(point["n"])
        self.config = matmul.footprint(int(point["block_x"]), int(point["footprint"])).from_copy(kernel_file)
        require_used(kernel_file, [self.config.launch()], "lab 002's footprint kernel")
        why = matmul.refusal(self.config, matmul.present_limits())
        if why:
            raise LaunchRefused(why)
        self.kernel = self.config.compile()
        self.spec = self.config.launch(n)
        allow_shared_memory(self.kernel, self.spec.dynamic_shared_bytes)
        self.spec.check(self.kernel)
        self.stream = cp.cuda.Stream(non_blocking=True)
        # A and B are each followed by NaN (a footprint of rows and more): a kernel that reads past the
        # end of either (an edge tile without its bound) gets NaN into C, whatever it multiplies it by
        pad = max(4096, 2 * int(point["footprint"]) * n)
        with self.stream:
            self.a_buffer = cp.full(n * n + pad, np.nan, dtype=cp.float32)
            self.b_buffer = cp.full(n * n + pad, np.nan, dtype=cp.float32)
            self.a = self.a_buffer[: n * n].reshape(n, n)
            self.b = self.b_buffer[: n * n].reshape(n, n)
            self.c = cp.full((n, n), np.nan, dtype=cp.float32)
        self.stream.synchronize()
        self.args = (self.a, self.b, self.c, np.int32(n))

    def upload(self, host_input: dict[str, np.ndarray]) -> Any:
        from cudalab.core.gpu import require_cupy

        cp = require_cupy()
        for name in ("a", "b"):
            if host_input[name].shape != (self.n, self.n):
                raise ValueError(f"{name} is {host_input[name].shape} for a trial of n = {self.n:,}")
        with self.stream:
            return cp.asarray(host_input["a"], dtype=np.float32), cp.asarray(host_input["b"], dtype=np.float32)

    def load(self, staged: Any) -> None:
        from cudalab.core.gpu import require_cupy

        cp = require_cupy()
        with self.stream:
            cp.copyto(self.a, staged[0])
            cp.copyto(self.b, staged[1])
            self.c.fill(0 if self.config.zero_c else np.nan)

    def run(self) -> None:
        self.spec(self.args, kernel=self.kernel, stream=self.stream)

    def output(self) -> dict[str, np.ndarray]:
        from cudalab.core.gpu import require_cupy

        with self.stream:
            return {"c": require_cupy().asnumpy(self.c, stream=self.stream, blocking=True)}


def expected(point: Point, operands: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """C = A B in float64 from the float32 operands, and the error scale |A||B| (float64)."""
    a = operands["a"].astype(np.float64)
    b = operands["b"].astype(np.float64)
    return {"c": a @ b, "scale": np.abs(a) @ np.abs(b)}


def tolerance(n: int) -> float:
    """The chapter's tolerance (``matmul.tolerance``): ``8 sqrt(n) 2^-24`` of |A||B|."""
    from cudalab.labs.matmul import tolerance as chapter_tolerance

    return chapter_tolerance(n)


def _span(index: np.ndarray) -> str:
    lo, hi = int(index.min()), int(index.max())
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def verdict(point: Point, got: dict[str, Any], want: dict[str, Any], operands: dict[str, np.ndarray]) -> str:
    """Why ``got`` is not A B within the chapter's tolerance ("" where it is): how many entries are
    off, the worst, the rows and columns they lie in, and how many were never written."""
    c = got.get("c")
    ref, scale = want["c"], want["scale"]
    if c is None or np.asarray(c).shape != ref.shape:
        return f"the product is {None if c is None else np.asarray(c).shape}, not {ref.shape[0]} x {ref.shape[1]}"
    c = np.asarray(c, dtype=np.float64)
    n = ref.shape[0]
    tol = tolerance(n)
    err = np.abs(c - ref) / np.maximum(scale, np.finfo(np.float32).tiny)
    bad = ~(err <= tol)  # NaN (never written) fails
    count = int(bad.sum())
    if not count:
        return ""
    i, j = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf, posinf=np.inf), -1.0))), c.shape)
    rows, cols = np.nonzero(bad)
    unwritten = int(np.isnan(c).sum())
    said = (
        f"{count:,} of {c.size:,} entries of C differ from the float64 product by more than {tol:.2g} x |A||B| "
        f"(worst C[{i}][{j}] = {c[i, j]:.7g}, not {ref[i, j]:.7g}; in rows {_span(rows)}, columns {_span(cols)})"
    )
    if unwritten:
        said += (
            f"; {unwritten:,} entries are NaN: never written, or made from values read past the end of A or B "
            "(NaN there)"
        )
    return said


def small(point: Point) -> Point:
    """The point at two and a half footprints plus one (an n that is a multiple of no tile)."""
    foot = int(point["footprint"])
    return {**point, "n": 2 * foot + foot // 2 + 1}


def _trial(point: Point, kernel_file: str | None, params: dict[str, Any]) -> MatmulTrial:
    return MatmulTrial(point, kernel_file)


def launches(point: Point, cc: str) -> list:
    """The point's one launch (its block width and footprint at its n), known without a GPU."""
    from cudalab.labs import matmul

    return [matmul.footprint(int(point["block_x"]), int(point["footprint"])).launch(int(point["n"]))]


# Chapter 05's footprint points (labs.matmul.FOOTPRINT_POINT).
FOOTPRINT = Checks(
    timed="uniform",
    kinds=KINDS,
    trial=_trial,
    expected=expected,
    verdict=verdict,
    small=small,
    input_axes=("n",),
    launches=launches,
    inputs_only=True,  # the operands and their product read only n
)
