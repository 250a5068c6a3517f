"""Plans of launches of the blocked kernels: padding, rounds of three phases, and the look-ahead.

The blocked kernels work in the NTHU convention (1073741823 = unreachable, so that a sum of two
never overflows and ``min`` needs no branch) on a matrix padded to a multiple of the blocking
factor BF; padding vertices are unreachable from everything and have a zero diagonal, so they
change no distance. A plan converts the labs' -1 convention in and out around the solve, so that
every blocked kernel is checked by the same harness as chapters 01-03 (``labs.fw.harness``).
Which kernel each phase runs, and how it is built, is ``blocked.kernels``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudalab.core.errors import LaunchRefused
from cudalab.core.gpu import require_cupy
from cudalab.core.launch import Launch
from cudalab.labs.fw import harness as fw
from cudalab.labs.fw.graphs import NO_EDGE, UNREACHABLE

INF = UNREACHABLE


def padded_size(n: int, bf: int) -> int:
    """The smallest multiple of the blocking factor that holds n vertices."""
    return fw.ceil_div(n, bf) * bf


MAX_PADDED = 46340  # the kernels index the matrix with int32: size^2 must stay below 2^31


def require_int32_indexable(size: int) -> None:
    """Refuse, with the reason, a padded matrix whose entries an int32 index cannot reach."""
    if size > MAX_PADDED:
        raise LaunchRefused(
            f"a padded matrix of {size} x {size} has more than 2^31 entries; the blocked kernels "
            f"index it with int32 (at most {MAX_PADDED} vertices after padding)"
        )


def to_blocked(d_lab, bf: int):
    """A device matrix in the labs' convention, padded to a multiple of ``bf`` in NTHU's."""
    cp = require_cupy()
    n = d_lab.shape[0]
    size = padded_size(n, bf)
    require_int32_indexable(size)
    out = cp.full((size, size), INF, dtype=cp.int32)
    out[:n, :n] = cp.where(d_lab < 0, INF, d_lab)
    pad = cp.arange(n, size)
    out[pad, pad] = 0
    return out


def from_blocked(work, n: int):
    """The n x n answer of a padded NTHU-convention matrix, in the labs' convention."""
    cp = require_cupy()
    d = work[:n, :n]
    return cp.where(d >= INF, NO_EDGE, d).astype(cp.int32)


PHASE_GRIDS: dict[str, Callable[[int], tuple[int, ...]]] = {
    "phase 1": lambda rounds: (1, 1),
    "phase 2": lambda rounds: (rounds, 2),  # blockIdx.y 0: pivot row, 1: pivot column
    "phase 3": lambda rounds: (rounds, rounds),
}


def _round_args(work, n: int, r: int) -> tuple:
    return work, np.int32(n), np.int32(r)


@dataclass(frozen=True)
class Phase:
    """One phase of a round: its ``launch`` (labelled with the phase's name, without a grid), the
    kernel compiled from it, its grid for R tiles per side, and its arguments for round r."""

    launch: Launch
    kernel: Any
    grid: Callable[[int], tuple[int, ...]]
    args: Callable[[Any, int, int], tuple] = _round_args

    @property
    def name(self) -> str:
        return self.launch.labels["phase"]


@dataclass
class BlockedPlan:
    """Rounds r = 0..R-1 of the phases, on a matrix padded to a multiple of ``bf``."""

    bf: int
    phases: tuple[Phase, ...]

    def prepare(self, d_input):
        return to_blocked(d_input, self.bf)

    def sized(self, work) -> list[Launch]:
        """Each phase's launch over its grid for ``work`` (once per solve, not per round)."""
        rounds = work.shape[0] // self.bf
        return [p.launch.with_grid(p.grid(rounds)) for p in self.phases]

    def launches(self, work) -> Iterator[fw.Step | fw.LanesMeet]:
        n = work.shape[0]
        sized = list(zip(self.phases, self.sized(work)))
        for r in range(n // self.bf):
            for p, launch in sized:
                yield fw.Step(launch, p.kernel, p.args(work, n, r))

    def finish(self, work, n: int):
        return from_blocked(work, n)


@dataclass
class LookaheadPlan(BlockedPlan):
    """The min-plus kernel's rounds (``fw_blocked_minplus.cu``), whose phases 2 and 3 compute output
    tiles of ``tile`` cells per side (S = bf / tile of them per side of a pivot block: grids count
    tiles), with a look-ahead: round r's phase 3 first relaxes the tiles of strips r + 1 on a second
    lane, which then runs round r + 1's phases 1 and 2 there, beside the rest of round r's phase 3
    on the first lane. The serial phases 1 and 2, which fill one SM and 2(R - 1) S tiles, no longer
    leave the GPU waiting between rounds. ``lookahead=False`` runs each round's three phases in turn.

    Order: phases 1 and 2 of a round read only tiles that the look-ahead part has finished, and
    the rest of a round's phase 3 reads pivot strips that phase 2 finished before the lanes met.
    Phase 3's last argument says which part it relaxes: 0 all, 1 the look-ahead's strips r + 1
    (on a grid of R S x 2 S), 2 the rest.

    ``inner``: where phase 1's one-block kernel cannot hold the pivot block (BF 256, 512), the phases
    of a build with BF = ``inner_bf`` (None: ``tile``) that close it instead, as a blocked solve of
    its bf / inner_bf sub-rounds: each kernel is handed the pivot block's first cell as its matrix
    (rows still n apart).

    The second lane is a stream of the highest priority, so that its blocks are dispatched as
    SMs free up rather than after the running phase 3. A CUDA graph drops that priority (CuPy
    instantiates graphs without node priorities), so from ``PLAIN_LAUNCHES_FROM`` vertices on,
    where a round is long enough for Python's launches to keep ahead of the GPU, the solve is
    launched plainly instead of captured."""

    tile: int = 64
    inner: tuple[Phase, ...] | None = None
    lookahead: bool = True
    inner_bf: int | None = None

    PLAIN_LAUNCHES_FROM = 4096

    def capture(self, work) -> bool:
        """Whether the solver should capture this solve in a CUDA graph."""
        return not self.lookahead or work.shape[0] < self.PLAIN_LAUNCHES_FROM

    def closing(self, work, r: int, lane: int = 0) -> Iterator[fw.Step]:
        """Phase 1 of round r: the pivot block closed, by its kernel or by ``inner``'s blocked solve."""
        n = work.shape[0]
        if self.inner is None:
            p1 = self.phases[0]
            yield fw.Step(p1.launch.with_grid(p1.grid(n // self.bf)), p1.kernel, p1.args(work, n, r), lane=lane)
            return
        sub = self.bf // (self.inner_bf or self.tile)  # the inner solve's rounds
        corner = work[r * self.bf :, r * self.bf :]  # a kernel gets a view's first cell; rows are still n apart
        for q in range(sub):
            for p in self.inner:
                yield fw.Step(p.launch.with_grid(p.grid(sub)), p.kernel, p.args(corner, n, q), lane=lane)

    def launches(self, work) -> Iterator[fw.Step | fw.LanesMeet]:
        n = work.shape[0]
        rounds, per_side = n // self.bf, n // self.tile
        (_, p2, p3), (_, l2, l3) = self.phases, self.sized(work)
        ahead = p3.launch.with_grid((per_side, 2 * (self.bf // self.tile)))

        def part(r: int, which: int) -> tuple:
            return work, np.int32(n), np.int32(r), np.int32(which)

        if not self.lookahead:
            for r in range(rounds):
                yield from self.closing(work, r)
                yield fw.Step(l2, p2.kernel, p2.args(work, n, r))
                yield fw.Step(l3, p3.kernel, part(r, 0))
            return
        yield fw.LANES_MEET
        yield from self.closing(work, 0, lane=1)
        yield fw.Step(l2, p2.kernel, p2.args(work, n, 0), lane=1)
        for r in range(rounds):
            yield fw.LANES_MEET
            if r + 1 == rounds:
                yield fw.Step(l3, p3.kernel, part(r, 0))
                break
            yield fw.Step(l3, p3.kernel, part(r, 2))
            yield fw.Step(ahead, p3.kernel, part(r, 1), lane=1)
            yield from self.closing(work, r + 1, lane=1)
            yield fw.Step(l2, p2.kernel, p2.args(work, n, r + 1), lane=1)
        yield fw.LANES_MEET
