"""How a graded vecMax point (chapter 02) is checked (``labs.checks``): the arrays that catch wrong
reductions, a point's kernel as a ``Trial`` in the submission's process, and the maximum computed
in the grader's.

The chapter's own array (n uniform floats in [0, 1)) puts its maximum anywhere and a little below 1,
so a kernel that forgets the last block, the array's last element, or starts its running maximum
at 0 rather than -infinity is right there nearly always. The kinds below are not:

- ``max last``: the maximum is the array's very last element (the end of the last thread's
  segment, where an off-by-one bound stops one short);
- ``all negative``: every value in [-1001, -1): a maximum that starts at 0 (or at ``FLT_MIN``,
  the smallest *positive* float) is wrong;
- ``last block``: the maximum lies among the elements the grid's last block reads (in the last
  round it reads, by the kernel's own index arithmetic: ``vecmax.owners``). Drawn at an n the
  declaration chooses not to be a multiple of the grid's threads, that round is the ragged tail,
  where a kernel that drops its last block, or the part of a round past the last whole one, loses
  the maximum.

The trial reduces exactly as ``vecmax.measure`` does: the kernel writes one partial result per
thread into a buffer poisoned with NaN before every run, and the answer is their maximum and how
many were never written (a thread that writes nothing is wrong, as in the chapter). The array on
the device is followed by a canary (``CANARY``, far above any input value): a kernel that reads
past n finds it, and its maximum says so. Every comparison is exact: a maximum is one of the inputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cudalab.labs.checks import Checks, InputKind, Point

CANARY = np.float32(1e30)  # what the device buffer holds past element n: read only by a kernel that overruns
PEAK = np.float32(2.0)  # the planted maximum of ``max last`` and ``last block`` (every other value is below 1)


def grid_threads(point: Point) -> int:
    """The threads of the point's grid: blocks x threads per block."""
    return int(point["blocks"]) * int(point["threads_per_block"])


def _rng(seed: int, n: int, kind: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(n), kind])


def uniform(point: Point, seed: int) -> np.ndarray:
    """The chapter's kind of array (``vecmax.random_array``: n uniform floats in [0, 1)), drawn on
    the host with NumPy so that the grader's process draws the very same array."""
    n = int(point["n"])
    return _rng(seed, n, 0).random(n, dtype=np.float32)


def max_last(point: Point, seed: int) -> np.ndarray:
    """Uniform floats in [0, 1) with the maximum (``PEAK``) as the last element."""
    n = int(point["n"])
    a = _rng(seed, n, 1).random(n, dtype=np.float32)
    a[-1] = PEAK
    return a


def all_negative(point: Point, seed: int) -> np.ndarray:
    """Every value negative, in [-1001, -1): the maximum is near -1, so a running maximum that
    starts at 0 or at the smallest positive float is wrong."""
    n = int(point["n"])
    return (np.float32(-1.0) - np.float32(1000.0) * _rng(seed, n, 2).random(n, dtype=np.float32)).astype(np.float32)


def last_block_element(kernel: str, n: int, blocks: int, threads: int, rng: np.random.Generator) -> int:
    """An element read by the highest-numbered block that reads any, in the last round it reads,
    following ``vecmax.owners``' index arithmetic: vecmax00 and vecmax01 give each block one chunk
    of ``threads x per_thread`` consecutive elements (the last busy block's chunk ends the array);
    vecmax02 strides the whole grid over float4s, so the last block reads the quads
    ``(blocks - 1) x threads ..`` of each round (the last such round is the ragged one where n is
    not a multiple of 4 x the grid's threads)."""
    total = blocks * threads
    if kernel == "vecmax02":
        n4 = n // 4
        first = (blocks - 1) * threads  # the last block's first quad of a round
        if n4 > first:
            rounds = (n4 - 1 - first) // total  # the last round in which the last block reads a quad
            lo = rounds * total + first
            quad = int(rng.integers(lo, min(lo + threads, n4)))
            return 4 * quad + int(rng.integers(0, 4))
        return int(rng.integers(0, 4 * n4)) if n4 else n - 1  # the last block reads nothing: any read element
    per_thread = -(-n // total)
    chunk = threads * per_thread
    lo = (n - 1) // chunk * chunk  # the last busy block's chunk
    return int(rng.integers(lo, n))


def last_block(point: Point, seed: int) -> np.ndarray:
    """Uniform floats in [0, 1) with the maximum among the elements the grid's last block reads
    (``last_block_element``)."""
    n = int(point["n"])
    rng = _rng(seed, n, 3)
    a = rng.random(n, dtype=np.float32)
    kernel = str(point.get("kernel", "vecmax00"))
    a[last_block_element(kernel, n, int(point["blocks"]), int(point["threads_per_block"]), rng)] = PEAK
    return a


KINDS = {
    "uniform": InputKind("n uniform floats in [0, 1) (the chapter's timed array)", uniform),
    "max last": InputKind("an array whose maximum is its last element", max_last),
    "all negative": InputKind("an array of negative values only (the maximum near -1)", all_negative),
    "last block": InputKind("an array whose maximum lies in the part the grid's last block reads", last_block),
}


class L2Sweep:
    """A read of a buffer twice the size of the GPU's L2 cache, enqueued on ``stream`` after an input is
    copied in (the untimed setup): the copy's dirty lines are written back and the input's own lines
    evicted before the timed call, which then reads its input from DRAM, as the chapter's repeated
    calls over one array larger than the L2 do, and pays no write-back of the setup's copy."""

    def __init__(self, stream: Any) -> None:
        from cudalab.core.gpu import attributes, require_cupy

        cp = require_cupy()
        self.stream = stream
        words = max(2 * int(attributes().get("L2CacheSize", 0) or 0), 64 << 20) // 4
        with stream:
            self.buffer = cp.zeros(words, dtype=cp.float32)
            self.out = cp.zeros((), dtype=cp.float32)

    def __call__(self) -> None:
        from cudalab.core.gpu import require_cupy

        with self.stream:
            require_cupy().sum(self.buffer, out=self.out)


class VecmaxTrial:
    """One vecMax kernel on one grid, ready to reduce one n-float array after another: each input
    copied into the array the kernel reads (followed by ``CANARY``), the partial results poisoned
    with NaN and the L2 swept (``L2Sweep``), then one launch; the answer is reduced as
    ``vecmax.measure`` reduces it."""

    def __init__(self, point: Point, kernel_file: str | Path | None) -> None:
        from cudalab.core.errors import LaunchRefused
        from cudalab.core.gpu import require_cupy
        from cudalab.labs import vecmax
        from cudalab.labs.points import require_used

        cp = require_cupy()
        self.n, kernel = int(point["n"]), str(point["kernel"])
        blocks, threads = int(point["blocks"]), int(point["threads_per_block"])
        self.spec = vecmax.launch(kernel, threads, blocks).from_copy(kernel_file)
        require_used(kernel_file, [self.spec], f"the {kernel} kernel")
        self.kernel = self.spec.compiled()
        self.spec.check(self.kernel)
        self.stream = cp.cuda.Stream(non_blocking=True)
        # past n: one float4 per thread of the grid and more, so that a kernel with no bound at
        # all (a whole extra round) reads the canary, never memory that is not the array's
        self.pad = 4 * blocks * threads + 1024
        with self.stream:
            self.a = cp.full(self.n + self.pad, CANARY, dtype=cp.float32)
            self.partial = cp.full(blocks * threads, np.nan, dtype=cp.float32)
        self.sweep = L2Sweep(self.stream)
        self.stream.synchronize()
        if kernel == "vecmax02" and (self.n % 4 or self.a.data.ptr % 16):
            raise LaunchRefused("vecmax02 reads float4: needs n % 4 == 0 and a 16-byte-aligned array")
        self.args = (self.a, self.partial, np.int64(self.n), np.int32(vecmax.per_thread(self.n, blocks, threads)))

    def upload(self, host_input: np.ndarray) -> Any:
        from cudalab.core.gpu import require_cupy

        if host_input.shape != (self.n,):
            raise ValueError(f"an array of {host_input.shape} floats for a trial of n = {self.n:,}")
        with self.stream:
            return require_cupy().asarray(host_input, dtype=np.float32)

    def load(self, staged: Any) -> None:
        with self.stream:
            self.a[: self.n] = staged
            self.a[self.n :] = CANARY  # a kernel that wrote into its input has its canary back
            self.partial.fill(np.nan)
        self.sweep()

    def run(self) -> None:
        self.spec(self.args, kernel=self.kernel, stream=self.stream)

    def output(self) -> dict[str, np.ndarray]:
        from cudalab.core.gpu import require_cupy

        cp = require_cupy()
        with self.stream:
            unwritten = cp.isnan(self.partial).sum()
            written = cp.where(cp.isnan(self.partial), -cp.inf, self.partial).max()
            both = cp.stack([unwritten.astype(cp.float64), written.astype(cp.float64)])
            unwritten_n, top = cp.asnumpy(both, stream=self.stream, blocking=True)
        return {
            "max": np.float32(top),  # the largest partial result written (-inf where none was)
            "unwritten": np.int64(unwritten_n),  # partial results still NaN after the run
            "partials": np.int64(self.partial.size),
        }


def expected(point: Point, a: np.ndarray) -> dict[str, np.ndarray]:
    """The maximum of the array, on the host."""
    return {"max": np.float32(a.max())}


def verdict(point: Point, got: dict[str, Any], want: dict[str, Any], a: np.ndarray) -> str:
    """Why ``got`` is not the array's maximum ("" where it is): partial results never written, or the
    maximum it gives against the right one (and where that lies, and what a likely cause is)."""
    unwritten = int(np.asarray(got.get("unwritten", 0)))
    partials = int(np.asarray(got.get("partials", 0)))
    if unwritten:
        return (
            f"{unwritten:,} of the {partials:,} partial results were never written (still NaN after the run): every "
            "thread must write its own, -infinity where it read nothing"
        )
    mx = got.get("max")
    if mx is None or np.asarray(mx).shape != ():
        return "the answer holds no maximum"
    top, right = np.float32(np.asarray(mx)), np.float32(want["max"])
    if top == right:
        return ""
    where = int(np.flatnonzero(a == right)[0]) if a.size else -1
    said = f"the maximum is {top:.9g}, not {right:.9g} (element {where:,} of {a.size:,})"
    if top == CANARY:
        said += f"; {float(CANARY):g} is what the buffer holds past element n - 1: the kernel reads beyond the array"
    elif right < 0 <= top:
        said += "; every value is negative: does the running maximum start at 0 rather than -infinity?"
    elif top < right:
        said += "; the kernel missed part of the array"
    return said


def small(point: Point) -> Point:
    """The point at two and a half rounds of its grid (a multiple of 4: vecmax02's float4s)."""
    total = grid_threads(point)
    return {**point, "n": (2 * total + total // 2) // 4 * 4 + 4}


def _trial(point: Point, kernel_file: str | None, params: dict[str, Any]) -> VecmaxTrial:
    return VecmaxTrial(point, kernel_file)


def launches(point: Point, cc: str) -> list:
    """The point's one launch (its kernel, threads per block and blocks), known without a GPU."""
    from cudalab.labs import vecmax

    return [vecmax.launch(str(point["kernel"]), int(point["threads_per_block"]), int(point["blocks"]))]


# Chapter 02's vecMax points (labs.vecmax_point.VECMAX_POINT).
VECMAX = Checks(
    timed="uniform",
    kinds=KINDS,
    trial=_trial,
    expected=expected,
    verdict=verdict,
    small=small,
    input_axes=("n",),
    launches=launches,
)
