"""How a graded Floyd-Warshall point is checked (``labs.checks``): the inputs that catch wrong
kernels, a point's kernel as a ``Trial`` in the submission's process, and the answer computed in
the grader's.

Why the labs' own input is not enough: GenMatrix draws weights 0..30 with a zero-weight edge out
of almost every vertex, so every distance collapses to 0 within the first few hundred k-steps; at
n = 3000 the correct answer is the all-zero matrix. A kernel that stops after a tenth of its rounds,
or writes zeros, is right there. The kinds below are not:

- ``sparse``: 5% of the pairs joined, weights up to 1000: paths of several heavy hops;
- ``unreachable``: a random order of the vertices, edges only forward along it and few of them,
  so most pairs (more than half) are unreachable, and the answer keeps ``-1`` where it must;
- ``chain``: a path through every vertex in a random order, weight 1 a hop, beside heavier
  shortcuts: a shortest path may need n - 1 hops, so every k-step matters, in its order.

Each kind is drawn at the graded point's n unless the chapter's declaration gives another (n = 1,
n below one tile, n not a multiple of any tile: the padding must not leak into the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from cudalab.labs.checks import Checks, InputKind, Point
from cudalab.labs.fw.graphs import NO_EDGE, gen_matrix_quick, gen_sparse_quick

CPU_ANSWER_MAX_N = 1024  # up to here the grader's answer is the sequential C code's; above, CuPy's on its GPU


def gen_unreachable(n: int, seed: int, max_weight: int = 1000) -> np.ndarray:
    """A random DAG in a random vertex order, about three edges out of a vertex: most pairs are
    unreachable (no path either way for many), the rest reached over long heavy paths."""
    rng = np.random.default_rng([seed, n, 2])
    order = rng.permutation(n)
    mat = np.full((n, n), NO_EDGE, dtype=np.int32)
    if n > 1:
        edges = max(1, 3 * n)
        a, b = rng.integers(0, n, size=(2, edges))
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keep = lo < hi
        mat[order[lo[keep]], order[hi[keep]]] = rng.integers(1, max_weight + 1, size=int(keep.sum()), dtype=np.int32)
    np.fill_diagonal(mat, 0)
    return mat


def gen_chain(n: int, seed: int, max_weight: int = 1000) -> np.ndarray:
    """A path through every vertex in a random order (weight 1 a hop) beside a few heavy random
    shortcuts that are never shorter: the distance from the path's first vertex to its last is
    n - 1 hops, so a kernel that skips or reorders k-steps gets it wrong."""
    rng = np.random.default_rng([seed, n, 3])
    order = rng.permutation(n)
    mat = np.full((n, n), NO_EDGE, dtype=np.int32)
    mat[order[:-1], order[1:]] = 1
    shortcuts = max(1, n // 4)
    a, b = rng.integers(0, n, size=(2, shortcuts))
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    span = np.abs(pos[a] - pos[b])
    weight = np.maximum(span, 1) + rng.integers(1, max_weight + 1, size=shortcuts)
    keep = a != b
    mat[a[keep], b[keep]] = np.minimum(weight[keep], np.iinfo(np.int32).max // 4).astype(np.int32)
    np.fill_diagonal(mat, 0)
    return mat


KINDS = {
    "lab GenMatrix": InputKind(
        "the labs' GenMatrix graph (the chapter's timed input)", lambda p, s: gen_matrix_quick(p["n"], s)
    ),
    "sparse": InputKind("a sparse graph with heavy weights", lambda p, s: gen_sparse_quick(p["n"], s)),
    "unreachable": InputKind("a sparse DAG where most pairs are unreachable", lambda p, s: gen_unreachable(p["n"], s)),
    "chain": InputKind("a chain of n - 1 hops beside heavier shortcuts", lambda p, s: gen_chain(p["n"], s)),
}


class FwTrial:
    """A Floyd-Warshall variant ready to solve one n x n input after another on one work matrix:
    the plan's launches captured once (``harness.Solver``), each input copied in before a run."""

    def __init__(self, variant: Any, n: int) -> None:
        from cudalab.core.gpu import require_cupy
        from cudalab.labs.fw.harness import Solver

        cp = require_cupy()
        self.n, self.plan = n, variant.plan(n)
        self.stream = cp.cuda.Stream(non_blocking=True)
        with self.stream:
            self.work = self.plan.prepare(cp.zeros((n, n), dtype=cp.int32)).copy()
            self.solver = Solver(self.plan, self.work, stream=self.stream)

    def upload(self, host_input: np.ndarray) -> Any:
        from cudalab.core.gpu import require_cupy

        cp = require_cupy()
        with self.stream:
            staged = self.plan.prepare(cp.asarray(host_input))
            return staged.copy() if staged is not None else staged

    def load(self, staged: Any) -> None:
        from cudalab.core.gpu import require_cupy

        with self.stream:
            require_cupy().copyto(self.work, staged)

    def run(self) -> None:
        self.solver.run()

    def output(self) -> dict[str, np.ndarray]:
        from cudalab.core.gpu import require_cupy

        cp = require_cupy()
        with self.stream:
            answer = self.plan.finish(self.work, self.n)
            return {"distances": cp.asnumpy(answer, stream=self.stream, blocking=True)}


def expected(point: Point, mat: np.ndarray) -> dict[str, np.ndarray]:
    """The shortest distances of ``mat`` (labs' convention), by the sequential C code where it is
    quick, else by the grouped min-plus solve on the grader's GPU (``reference.floyd_warshall_strips``;
    the C code where there is none)."""
    from cudalab.labs.fw.reference import floyd_warshall_c, floyd_warshall_strips

    if mat.shape[0] > CPU_ANSWER_MAX_N:
        try:
            from cudalab.core.gpu import gpu_available, require_cupy

            if gpu_available():
                cp = require_cupy()
                return {"distances": cp.asnumpy(floyd_warshall_strips(cp.asarray(mat)))}
        except ImportError:
            pass
    return {"distances": floyd_warshall_c(mat)}


def verdict(point: Point, got: dict[str, Any], want: dict[str, Any], mat: np.ndarray) -> str:
    """Why ``got`` is not the shortest distances ("" where it is): its shape, or how many entries
    differ, with one of them and how many were unreachable but given a distance (or the reverse)."""
    a, b = np.asarray(got.get("distances")), want["distances"]
    if a.shape != b.shape:
        return f"the answer is {a.shape}, not {b.shape}"
    if _equal(a, b):
        return ""
    wrong = a != b
    count = int(wrong.sum())
    if not count:
        return ""
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    lost = int((wrong & (b == NO_EDGE)).sum())
    said = f"; {lost:,} unreachable pairs given a distance" if lost else ""
    return f"{count:,} of {b.size:,} distances differ (d[{i}][{j}] = {a[i, j]}, not {b[i, j]}){said}"


EQUAL_CHUNK = 1 << 22  # elements compared at once: a slice that stays in cache, no n x n array of bools


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` (one shape) hold the same values, slice by slice: a right answer at
    n = 16384 (1 GiB) is judged about three times faster than through one n x n comparison, and a
    wrong one stops at its first wrong slice (``verdict`` then says how it differs)."""
    if a.dtype != b.dtype:
        return bool(np.array_equal(a, b))
    flat_a, flat_b = np.ravel(a), np.ravel(b)
    return all(
        np.array_equal(flat_a[i : i + EQUAL_CHUNK], flat_b[i : i + EQUAL_CHUNK])
        for i in range(0, flat_a.size, EQUAL_CHUNK)
    )


def tile(point: Point) -> int:
    """The point's tile edge: its blocking factor, block edge or block, its ladder step's blocking
    factor (chapter 04's ``LADDER``), else 32."""
    for axis in ("block_factor", "block_edge", "block"):
        if axis in point:
            return int(point[axis])
    if "variant" in point:
        from cudalab.labs.fw.blocked.point import ladder_step

        return ladder_step(point).bf
    return 32


def kit(
    variant_of: Callable[[Point, str | None], tuple[Any, list]], launches_of: Callable[[Point, str], list]
) -> Checks:
    """The checks of a Floyd-Warshall point whose kernel ``variant_of(point, kernel_file)`` builds
    (on a GPU), and whose launches ``launches_of(point, cc)`` lists without one."""

    def trial(point: Point, kernel_file: str | None, params: dict[str, Any]) -> FwTrial:
        variant, _ = variant_of(point, kernel_file)
        return FwTrial(variant, int(point["n"]))

    return Checks(
        timed="lab GenMatrix",
        kinds=KINDS,
        trial=trial,
        expected=expected,
        verdict=verdict,
        small=lambda p: {**p, "n": 3 * tile(p)},
        input_axes=("n",),
        launches=launches_of,
        inputs_only=True,  # a graph and its distances read only n
    )


def _per_k(name: str) -> Callable[[Point, str | None], tuple[Any, list]]:
    def variant_of(point: Point, kernel_file: str | Path | None) -> tuple[Any, list]:
        from cudalab.labs.fw import points

        return getattr(points, name)(point, kernel_file)

    return variant_of


def _blocked(point: Point, kernel_file: str | Path | None) -> tuple[Any, list]:
    from cudalab.labs.fw.blocked.point import blocked_variant

    return blocked_variant(point, kernel_file)


# ---- each point's launches, known without a GPU (a grade's compile-only builds)


def _block_size_launches(point: Point, cc: str) -> list:
    from cudalab.labs.fw import per_k

    return [per_k.launch("basic", int(point["block_edge"]))]


def _coalescing_launches(point: Point, cc: str) -> list:
    from cudalab.labs.fw import per_k

    t, s = int(point["threads_per_block"]), int(point["segment_size"])
    return [per_k.launch("coalesced", t)] if point["kernel"] == "coalesced" else [per_k.launch("segment", s, t)]


def _shared_launches(point: Point, cc: str) -> list:
    from cudalab.labs.fw import per_k
    from cudalab.labs.fw.points import _SHARED_RECIPES

    recipe, b = _SHARED_RECIPES[point["kernel"]][0], int(point["block"])
    if recipe == "basic":
        return [per_k.launch("basic", b)]
    return [per_k.launch(recipe, b, published=bool(point["published"]))]


def _blocked_launches(point: Point, cc: str) -> list:
    return list(_blocked(point, None)[1])


def _ladder(point: Point, kernel_file: str | Path | None) -> tuple[Any, list]:
    from cudalab.labs.fw.blocked.point import ladder_variant

    return ladder_variant(point, kernel_file)


def _ladder_launches(point: Point, cc: str) -> list:
    return list(_ladder(point, None)[1])


BLOCK_SIZE = kit(_per_k("block_size_variant"), _block_size_launches)  # chapter 01's basic kernel (02's, 04's)
COALESCING = kit(_per_k("coalescing_variant"), _coalescing_launches)  # chapter 02's row-order kernels
SHARED_MEMORY = kit(_per_k("shared_variant"), _shared_launches)  # chapter 03's shared-memory kernels
BLOCKED = kit(_blocked, _blocked_launches)  # chapter 04's blocked kernels
LADDER = kit(_ladder, _ladder_launches)  # chapter 04's ladder: lab 001's steps, each a build
