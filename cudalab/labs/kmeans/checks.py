"""How a graded k-means point (chapter 06) is checked (``labs.checks``): the inputs that catch wrong
iterations, a point's variant as a ``Trial`` in the submission's process, and the float64 step in
the grader's.

One timed call is one iteration (assign, then update) from given points and initial centres: its
answer is every point's cluster and the new centres. It is judged as the chapter's correctness check
judges an iteration (``gpu.check_against_float64``): each membership against the float64 nearest
centre (``reference.assign64``'s answer; ties to the lowest index), a disagreement excused only where the
point's two nearest centres are within ``reference.TIE_RTOL`` of each other (a near tie, where
float32 may rightly choose the other); each new centre against the float64 mean of the members the
kernel gave it (``reference.means64``), within ``CENTRE_RTOL`` of the data's largest magnitude; and
an empty cluster keeps its centre (the classic code's rule, ``reference.means64``).

The chapter's own blobs (``reference.blobs``, the first K points as the initial centres) are
timed, at the point's N. Blobs far apart leave few points near a boundary and every cluster full,
so the kinds below ask more:

- ``empty cluster``: two initial centres moved a hundred times the data's spread away, so no point
  is theirs: their clusters empty, and their centres must stay where they were (no 0/0, no zero);
- ``duplicates``: every point repeated 32 times in a row (a warp's objects are one point: its
  lanes add to one cluster at once), with two identical initial centres (an exact tie for every
  point nearer to them: excused either way, but the sums must follow the memberships given);
- ``near ties``: every point placed near the midpoint of two centres, their relative gap drawn
  log-uniformly from 1e-5 to 1e-2: a third within the near-tie rule, the rest close enough that a
  distance computed with less than float32's care (a dropped coordinate, half or TF32 precision)
  picks the wrong one;
- ``last alone``: the last point far from the rest, the last cluster's only member (its initial
  centre beside it): a kernel that leaves the last object out of the sums keeps that centre where it
  was, an error the size of the data's spread, where among a cluster of thousands it would hide
  under the tolerance.

The answers at N = 1 Mi, D = K = 32 (chapter 06's graded points) are computed on the host in float64
in chunks, the distances by a matrix product (``assign64``: about a second an input).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from cudalab.labs.checks import Checks, InputKind, Point
from cudalab.labs.kmeans import reference

CENTRE_RTOL = 1e-4  # gpu.check_against_float64's centre_rtol: a centre's error over the data's largest |x|
FAR = 1000.0  # where an emptied cluster's initial centre is put: 100 x the blobs' spread (10), every coordinate
REPEATS = 32  # ``duplicates``: copies of each point, consecutive (a warp's objects)
TIE_GAPS = (-5.0, -2.0)  # ``near ties``: log10 of the relative gaps drawn


def _sub(seed: int, tag: int) -> int:
    """A seed of its own for a kind (``tag``), from the input's seed."""
    return int(np.random.SeedSequence([int(seed), tag]).generate_state(1, dtype=np.uint64)[0] >> 1)


def _shape(point: Point) -> tuple[int, int, int]:
    return int(point["n"]), int(point["d"]), int(point["k"])


def blobs(point: Point, seed: int) -> dict[str, np.ndarray]:
    """The chapter's input: ``reference.blobs(n, d, k, seed)``, the first K points the initial centres."""
    n, d, k = _shape(point)
    reference.check_k(k, n)
    points = reference.blobs(n, d, k, seed)
    return {"points": points, "centres": points[:k].copy()}


def far_clusters(k: int) -> list[int]:
    """The clusters ``empty cluster`` empties: one in the middle and the last (the one where K >= 2)."""
    if k < 2:
        raise ValueError("an emptied cluster needs K >= 2 (the points must go somewhere)")
    return sorted({k // 2, k - 1})


def empty_cluster(point: Point, seed: int) -> dict[str, np.ndarray]:
    """Blobs whose initial centres are their first K points but for ``far_clusters``, put at +FAR
    and -FAR in every coordinate: no point is nearer to them than to its own blob's centres."""
    n, d, k = _shape(point)
    reference.check_k(k, n)
    points = reference.blobs(n, d, k, _sub(seed, 1))
    centres = points[:k].copy()
    for i, c in enumerate(far_clusters(k)):
        centres[c] = FAR if i % 2 == 0 else -FAR
    return {"points": points, "centres": centres}


def last_alone(point: Point, seed: int) -> dict[str, np.ndarray]:
    """Blobs whose last point is moved to FAR / 2 in every coordinate, far from every other point,
    with the last initial centre one unit from it in every coordinate (the others: the first K - 1
    points): the last cluster's one member is the last point, so its new centre must be that point.
    A kernel that leaves the last object out (an off-by-one bound, a dropped last block: at an N one
    past a whole number of blocks, the last block holds it alone) keeps the centre where it was."""
    n, d, k = _shape(point)
    reference.check_k(k, n)
    if k < 2 or n < k + 1:
        raise ValueError("a lone last point needs K >= 2 and N > K")
    points = reference.blobs(n, d, k, _sub(seed, 4))
    points[-1] = FAR / 2
    centres = points[:k].copy()
    centres[-1] = FAR / 2 + 1.0
    return {"points": points, "centres": centres}


def duplicates(point: Point, seed: int) -> dict[str, np.ndarray]:
    """N points made of N / REPEATS distinct blob points, each repeated REPEATS times in a row (fewer
    where N < REPEATS x K); the initial centres K of the distinct points, the second a copy of the first."""
    n, d, k = _shape(point)
    reference.check_k(k, n)
    repeats = max(1, min(REPEATS, n // k))
    distinct = reference.blobs(-(-n // repeats), d, k, _sub(seed, 2))
    points = np.ascontiguousarray(np.repeat(distinct, repeats, axis=0)[:n])
    centres = distinct[:k].copy()
    if k >= 2:
        centres[1] = centres[0]
    return {"points": points, "centres": centres}


def near_ties(point: Point, seed: int, spread: float = 10.0, sigma: float = 1.0) -> dict[str, np.ndarray]:
    """K centres uniform in [-spread, spread]^D; each point near the midpoint of two of them, a and b
    (b one of a's two nearest, so that no third centre is nearer to the midpoint than they are):
    ``m + t u + w``, u the unit vector from a to b, w Gaussian (``sigma``) across u, t chosen so that
    ``(d_far^2 - d_near^2) / d_far^2`` is the gap drawn (log10 uniform in ``TIE_GAPS``), on a's side
    or b's at random."""
    n, d, k = _shape(point)
    reference.check_k(k, n)
    if k < 2:
        raise ValueError("near ties need K >= 2")
    rng = np.random.default_rng(_sub(seed, 3))
    centres = rng.uniform(-spread, spread, (k, d))
    apart = ((centres[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(apart, np.inf)
    order = np.argsort(apart, axis=1)[:, : min(2, k - 1)]  # each centre's nearest one or two others
    points = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, 1 << 16):  # chunks: a few (chunk, D) doubles at a time
        m = min(n - s, 1 << 16)
        a = rng.integers(0, k, m)
        b = order[a, rng.integers(0, order.shape[1], m)]  # a neighbour: no third centre near the midpoint
        ca, cb = centres[a], centres[b]
        u = cb - ca
        length = np.linalg.norm(u, axis=1)
        u /= length[:, None]
        w = rng.standard_normal((m, d)) * sigma
        w -= (w * u).sum(axis=1)[:, None] * u
        gap = 10.0 ** rng.uniform(*TIE_GAPS, m)
        # d_a^2 - d_b^2 = -2 L t for x = m + t u + w: the gap over the farther one's L^2/4 + |w|^2 (+ O(t^2))
        t = gap * (length**2 / 4 + (w * w).sum(axis=1)) / (2 * length)
        t *= np.where(rng.random(m) < 0.5, -1.0, 1.0)
        points[s : s + m] = (ca + cb) / 2 + t[:, None] * u + w
    return {"points": points, "centres": centres.astype(np.float32)}


KINDS = {
    "blobs": InputKind("the chapter's Gaussian blobs, the first K points as centres (its timed input)", blobs),
    "empty cluster": InputKind(
        "blobs with two initial centres far from every point (their clusters empty)", empty_cluster
    ),
    "duplicates": InputKind("points each repeated 32 times in a row, two initial centres identical", duplicates),
    "near ties": InputKind("points near the midpoints of pairs of centres (near ties and close calls)", near_ties),
    "last alone": InputKind("blobs whose last point is alone in the last cluster, far from the rest", last_alone),
}


# ------------------------------------------------------------------------------ in the submission's process


class _Staged:
    """One input on the device: a ``gpu.Runner`` of its own over it (the kernels' buffers, and the
    fixed-point scale of its data), and the state an iteration starts from, kept apart to copy in."""

    def __init__(self, runner: Any, centres: Any, table: Any, done: Any, host_centres: np.ndarray) -> None:
        self.runner, self.centres, self.table, self.done, self.host_centres = runner, centres, table, done, host_centres


class KmeansTrial:
    """One k-means variant at one N, D and K (``gpu.Runner``'s iteration, stage by stage), ready to
    run one iteration from one input after another.

    ``upload`` builds a ``gpu.Runner`` per input (its kernels compiled once, its buffers, and for the
    fixed-point variants the scale of that input's data, as the chapter's runner chooses it once per
    data set), on the trial's one stream; ``load`` copies the input's points into the transposed
    buffer the kernels read and resets every piece of state an iteration starts from (the initial
    centres and the one-pass kernels' table of them, memberships -1, sums and sizes zero, the
    tensor kernel's flags), as a fresh runner has them, then sweeps the L2 (``vecmax_checks.L2Sweep``);
    ``run`` enqueues the iteration's stages.
    The stages that only read the change count for the host's loop are left out (the answer needs
    none, and a synchronization would stall the timing's hold); the classic host update (variant a)
    waits for its membership, updates on the host and sends the centres back, as the chapter times it."""

    def __init__(self, point: Point, kernel_file: str | Path | None) -> None:
        from cudalab.core.errors import CudalabError, LaunchRefused
        from cudalab.core.gpu import require_cupy
        from cudalab.labs.kmeans import gpu
        from cudalab.labs.points import require_used
        from cudalab.labs.vecmax_checks import L2Sweep

        cp = require_cupy()
        self.n, self.d, self.k = _shape(point)
        self.variant = str(point["variant"])
        if self.variant not in gpu.LADDER:
            raise CudalabError(f"{self.variant}: a graded k-means variant is one of {', '.join(gpu.LADDER)}")
        launches = list(gpu.stage_launches(self.variant, self.n, self.d, self.k, file=kernel_file).values())
        require_used(kernel_file, launches, f"the {self.variant} variant")
        why = gpu.refusal(self.variant, self.d, self.k)
        if why:
            raise LaunchRefused(why)
        self.file = kernel_file
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.sweep = L2Sweep(self.stream)
        self.current: _Staged | None = None

    def upload(self, host_input: dict[str, np.ndarray]) -> _Staged:
        from cudalab.core.gpu import require_cupy
        from cudalab.labs.kmeans import gpu

        cp = require_cupy()
        points, centres = host_input["points"], host_input["centres"]
        if points.shape != (self.n, self.d) or centres.shape != (self.k, self.d):
            raise ValueError(
                f"points {points.shape} and centres {centres.shape} for a trial of N = {self.n:,}, D = {self.d}, K = {self.k}"
            )
        with self.stream:
            problem = gpu.Problem(cp.asarray(points, dtype=np.float32), self.k)
        problem.initial = np.ascontiguousarray(centres, dtype=np.float32)  # the given centres, not the first K points
        cp.cuda.Device().synchronize()  # the problem's buffers, before a runner of another stream reads them
        runner = gpu.Runner(problem, self.variant, self.file)
        cp.cuda.Device().synchronize()  # its own stream's (and the default stream's) setup has run
        runner.stream = self.stream  # every stage reads runner.stream when it runs: all on the trial's stream
        with self.stream:
            start = cp.asarray(problem.initial)
            table = runner.next.copy() if hasattr(runner, "next") else None
            done = runner.done.copy() if hasattr(runner, "done") else None
        self.stream.synchronize()
        return _Staged(runner, start, table, done, problem.initial.copy())

    def load(self, staged: _Staged) -> None:
        r = staged.runner
        with self.stream:
            r.p.xt[...] = r.p.rows.T  # the input, copied into the buffer every kernel reads
            r.centres[...] = staged.centres  # in place: the stages hold these very arrays
            r.membership.fill(-1)
            r.sums.fill(0)
            r.sizes.fill(0)
            r.intermediates.fill(0)
            r.delta.fill(0)
            if staged.table is not None:
                r.next[...] = staged.table
                if self.variant == "fused":
                    r.constants.copy_from_device_async(r.next.data, r.next.nbytes, self.stream)
            if staged.done is not None:
                r.done[...] = staged.done
                r.loop_state.fill(0)
        r.host_centres[...] = staged.host_centres
        self.sweep()  # the copy's lines out of the L2: the iteration reads its points from DRAM
        self.current = staged

    def run(self) -> None:
        if self.current is None:
            raise RuntimeError("run before load")
        r = self.current.runner
        for stage in r.stages:
            if stage.run == r._read_count or stage.run == r._fetch_count:
                continue  # the host loop's change count: no part of the answer
            if not stage.on_device:
                self.stream.synchronize()  # a host stage (variant a's update) waits for what it reads
            stage.run()

    def output(self) -> dict[str, np.ndarray]:
        if self.current is None:
            raise RuntimeError("output before run")
        centres, membership = self.current.runner.result()  # waits for the trial's stream
        return {"membership": membership, "centres": centres}


def _trial(point: Point, kernel_file: str | None, params: dict[str, Any]) -> KmeansTrial:
    return KmeansTrial(point, kernel_file)


# ------------------------------------------------------------------------------ in the grader's process


def assign64(points: np.ndarray, centres: np.ndarray, chunk: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """``reference.assign64``'s answer (each point's nearest centre in float64, ties to the lowest
    index, and the relative gap between its two nearest squared distances), with the distances as
    ``|x|^2 - 2 x.c + |c|^2`` by a float64 matrix product: a second a million points rather than a
    dozen. Its rounding (about 1e-16 of |x|^2 + |c|^2) can only reorder two centres whose distances
    agree to a few parts in 1e13, a near tie by far (``reference.TIE_RTOL``), which the verdict excuses."""
    p = np.asarray(points, dtype=np.float64)
    c = np.asarray(centres, dtype=np.float64)
    norms = (c * c).sum(axis=1)
    membership = np.empty(len(p), dtype=np.int32)
    gap = np.ones(len(p))
    for s in range(0, len(p), chunk):
        x = p[s : s + chunk]
        dist = np.maximum((x * x).sum(axis=1)[:, None] - 2.0 * (x @ c.T) + norms[None, :], 0.0)
        membership[s : s + chunk] = dist.argmin(axis=1)
        if c.shape[0] > 1:
            two = np.partition(dist, 1, axis=1)[:, :2]
            gap[s : s + chunk] = (two[:, 1] - two[:, 0]) / np.maximum(two[:, 1], np.finfo(float).tiny)
    return membership, gap


def expected(point: Point, host_input: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float64 iteration: every point's nearest initial centre and its relative gap to the
    second nearest (``assign64``, ``reference.assign64``'s answer), and the float64 means of those
    memberships, an empty cluster keeping its centre (``reference.means64``)."""
    points, centres = host_input["points"], host_input["centres"]
    membership, gap = assign64(points, centres)
    return {"membership": membership, "gap": gap, "centres": reference.means64(points, membership, centres)}


def verdict(point: Point, got: dict[str, Any], want: dict[str, Any], host_input: dict[str, np.ndarray]) -> str:
    """Why ``got`` is not the iteration ("" where it is): memberships that are no cluster, or differ
    from the float64 nearest centre beyond near ties; else new centres off the float64 means of the
    members given (an empty cluster's: off its initial centre)."""
    points, start = host_input["points"], host_input["centres"]
    n, k = len(points), len(start)
    membership, centres = got.get("membership"), got.get("centres")
    if membership is None or np.asarray(membership).shape != (n,):
        return f"the memberships are {None if membership is None else np.asarray(membership).shape}, not ({n},)"
    if centres is None or np.asarray(centres).shape != start.shape:
        return f"the centres are {None if centres is None else np.asarray(centres).shape}, not {start.shape}"
    membership = np.asarray(membership).astype(np.int64)
    centres = np.asarray(centres, dtype=np.float64)
    outside = (membership < 0) | (membership >= k)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        return (
            f"{int(outside.sum()):,} of {n:,} memberships are no cluster of 0..{k - 1} "
            f"(point {i} is given {membership[i]})"
        )
    nearest, gap = want["membership"], want["gap"]
    differ = membership != nearest
    ties = differ & (gap <= reference.TIE_RTOL)
    wrong = differ & ~ties
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        return (
            f"{int(wrong.sum()):,} of {n:,} points are not in their nearest centre's cluster, beyond near ties "
            f"(point {i} is given cluster {membership[i]}, its nearest is {nearest[i]}; {int(ties.sum()):,} near "
            "ties excused)"
        )
    means = want["centres"] if not differ.any() else reference.means64(points, membership, start)
    scale = float(np.abs(points).max()) or 1.0
    err = np.abs(centres - means) / scale
    off = ~(err <= CENTRE_RTOL)  # NaN fails
    if not off.any():
        return ""
    rows = np.flatnonzero(off.any(axis=1))
    worst = np.nan_to_num(err, nan=np.inf).max(axis=1)
    j = int(rows[np.argmax(worst[rows])])
    sizes = np.bincount(membership, minlength=k)
    count = f"{len(rows)} of {k} new centres"
    if sizes[j] == 0:
        return (
            f"{count} are wrong; cluster {j} has no members, so its centre must stay where it was "
            f"(coordinate 0: {start[j, 0]:.6g}), not move to {centres[j, 0]:.6g}"
        )
    return (
        f"{count} are off the float64 mean of their members by more than {CENTRE_RTOL:g} of the data's "
        f"largest magnitude (cluster {j}, {int(sizes[j]):,} member{'s' if sizes[j] != 1 else ''}: off by "
        f"{worst[j]:.2g} of it)"
    )


def small(point: Point) -> Point:
    """The point at three blocks of 256 objects and a ragged part (and never fewer than K points)."""
    return {**point, "n": max(3 * 256 + 37, 2 * int(point["k"]))}


def launches(point: Point, cc: str) -> list:
    """The launches of one iteration of the point's variant on the GPU of ``cc``: its stages, each
    sized for the shared memory a block may opt in to there. Known without a GPU."""
    from cudalab.core.occupancy import sm_limits
    from cudalab.labs.kmeans import gpu

    optin = sm_limits(cc).max_shared_per_block
    n, d, k = int(point["n"]), int(point["d"]), int(point["k"])
    return list(gpu.stage_launches(str(point["variant"]), n, d, k, optin=optin).values())


# Chapter 06's points (labs.kmeans.point.POINT): one iteration of a variant.
POINT = Checks(
    timed="blobs",
    kinds=KINDS,
    trial=_trial,
    expected=expected,
    verdict=verdict,
    small=small,
    input_axes=("n", "d", "k"),
    launches=launches,
)
