"""The NTHU hw4 test-case format (lab 001), read, written, generated and checked.

Input:  int32 V, int32 E, then E triples int32 (src, dst, w), little-endian, vertices 0..V-1.
Output: V*V int32 distances, row-major; 1073741823 where j is unreachable from i, 0 on the diagonal.

A malformed file is refused with the problem and where it is (byte offset, edge index), before
any work is done on it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cudalab.core import hostmem
from cudalab.core.errors import CaseFormatError
from cudalab.labs.fw.graphs import NO_EDGE, UNREACHABLE
from cudalab.labs.fw.reference import floyd_warshall_c, floyd_warshall_numpy

__all__ = [
    "CaseFormatError",
    "UNREACHABLE",
    "parse_case",
    "read_case",
    "write_case",
    "generate_case",
    "to_matrix",
    "solve_cpu",
    "solve_numpy",
    "write_output",
    "read_output",
]
HEADER_BYTES = 8
EDGE_BYTES = 12


def parse_case(data: bytes, name: str = "input") -> tuple[int, np.ndarray]:
    """(V, edges as an (E, 3) int32 array) from the bytes of an input file, validated."""
    if len(data) < HEADER_BYTES:
        raise CaseFormatError(f"{name}: truncated header: {len(data)} bytes, need {HEADER_BYTES} (int32 V, int32 E)")
    v, e = (int(x) for x in np.frombuffer(data, dtype="<i4", count=2))
    if v <= 0:
        raise CaseFormatError(f"{name}: V = {v} at offset 0 must be positive")
    if e < 0:
        raise CaseFormatError(f"{name}: E = {e} at offset 4 must not be negative")
    if e > v * v:
        raise CaseFormatError(f"{name}: E = {e} at offset 4 exceeds V*V = {v * v}")
    want = HEADER_BYTES + EDGE_BYTES * e
    if len(data) < want:
        edge = (len(data) - HEADER_BYTES) // EDGE_BYTES
        raise CaseFormatError(
            f"{name}: truncated: E = {e} needs {want} bytes, the file has {len(data)}; "
            f"edge {edge} at offset {HEADER_BYTES + EDGE_BYTES * edge} is incomplete"
        )
    if len(data) > want:
        raise CaseFormatError(f"{name}: {len(data) - want} unexpected bytes after the last edge, at offset {want}")
    edges = np.frombuffer(data, dtype="<i4", count=3 * e, offset=HEADER_BYTES).reshape(e, 3)
    if edges.dtype != np.int32:  # a big-endian host: the file's little-endian ints, converted once
        edges = edges.astype(np.int32)
    return v, validate_edges(v, edges, name)


def validate_edges(v: int, edges: np.ndarray, name: str = "input") -> np.ndarray:
    """The edges, if every vertex is in [0, V) and every weight in [0, UNREACHABLE) with no
    shortest path able to reach UNREACHABLE; else ``CaseFormatError`` naming the first bad edge
    and its byte offset. Whole-array minima and maxima decide; the first bad edge is searched
    for only when there is one, so a valid file of millions of edges is checked in milliseconds."""
    if len(edges) == 0:
        return edges
    # One-dimensional reductions: NumPy reduces a strided column fast, a strided 2-D view slowly.
    lows = [int(edges[:, c].min()) for c in range(3)]
    highs = [int(edges[:, c].max()) for c in range(3)]
    if min(lows[:2]) < 0 or max(highs[:2]) >= v:
        for column, what in ((0, "src"), (1, "dst")):
            bad = np.flatnonzero((edges[:, column] < 0) | (edges[:, column] >= v))
            if bad.size:
                i = int(bad[0])
                raise CaseFormatError(
                    f"{name}: edge {i} at offset {HEADER_BYTES + EDGE_BYTES * i}: {what} "
                    f"{int(edges[i, column])} is not a vertex of [0, {v})"
                )
    weights = edges[:, 2]
    high = highs[2]
    if lows[2] < 0:
        i = int(np.flatnonzero(weights < 0)[0])
        raise CaseFormatError(
            f"{name}: edge {i} at offset {HEADER_BYTES + EDGE_BYTES * i}: negative weight {int(edges[i, 2])}"
        )
    if high >= UNREACHABLE:
        i = int(np.flatnonzero(weights >= UNREACHABLE)[0])
        raise CaseFormatError(
            f"{name}: edge {i} at offset {HEADER_BYTES + EDGE_BYTES * i}: weight {int(edges[i, 2])} is not "
            f"below {UNREACHABLE}, the format's value for 'unreachable'"
        )
    if high * min(v - 1, len(edges)) >= UNREACHABLE:  # only then can the exact bound matter
        longest = longest_path_bound(v, weights)
        if longest >= UNREACHABLE:
            raise CaseFormatError(
                f"{name}: a shortest path could weigh up to {longest:,} (the {min(v - 1, len(edges))} "
                f"heaviest edges in a row), which reaches {UNREACHABLE:,}, the format's value for "
                f"'unreachable': such a distance cannot be written"
            )
    return edges


def longest_path_bound(v: int, weights: np.ndarray) -> int:
    """An upper bound on any shortest distance: a shortest path has at most V-1 edges, so it
    weighs no more than the V-1 heaviest edges together."""
    if v <= 1 or len(weights) == 0:
        return 0
    k = min(v - 1, len(weights))
    return int(np.partition(weights.astype(np.int64), len(weights) - k)[-k:].sum())


def max_weight_for(v: int) -> int:
    """The largest edge weight for which every shortest distance of a V-vertex graph fits the format."""
    return (UNREACHABLE - 1) // max(v - 1, 1)


def matrix_bytes(v: int, copies: int = 1) -> int:
    """Bytes of ``copies`` V x V int32 distance matrices."""
    return copies * 4 * v * v


def read_case(path: str | Path, *, check: bool = True) -> tuple[int, np.ndarray]:
    """(V, edges) of an input file: one read of the whole file (``numpy.fromfile``), then
    whole-array checks; the edges are a view of what was read (no copy). ``check=False`` leaves
    the edges' checks to the caller (``validate_edges``, e.g. on the device); the header and the
    file's size are checked in any case."""
    path = Path(path)
    size = path.stat().st_size
    if size >= HEADER_BYTES and (size - HEADER_BYTES) % EDGE_BYTES == 0:
        raw = np.fromfile(path, dtype="<i4")
        v, e = int(raw[0]), int(raw[1])
        if v > 0 and 0 <= e <= v * v and size == HEADER_BYTES + EDGE_BYTES * e:
            edges = raw[2:].reshape(e, 3)
            edges = edges if edges.dtype == np.int32 else edges.astype(np.int32)
            return v, validate_edges(v, edges, str(path)) if check else edges
    return parse_case(path.read_bytes(), str(path))  # a malformed header or size: the exact complaint


def write_case(path: str | Path, v: int, edges: np.ndarray) -> None:
    edges = np.asarray(edges, dtype="<i4").reshape(-1, 3)
    Path(path).write_bytes(np.array([v, len(edges)], dtype="<i4").tobytes() + edges.tobytes())


def generate_case(v: int, density: float, seed: int, max_weight: int = 1000) -> np.ndarray:
    """Random distinct directed edges (no self-loops): about ``density * V * (V-1)`` of them,
    weights 0..max_weight."""
    if v <= 0 or not 0 <= density <= 1:
        raise CaseFormatError(f"need V > 0 and 0 <= density <= 1, got V = {v}, density = {density}")
    if not 0 <= max_weight <= max_weight_for(v):
        raise CaseFormatError(
            f"max weight {max_weight} is outside 0..{max_weight_for(v):,}: with V = {v} a shortest path "
            f"could then weigh {UNREACHABLE:,} or more, which the format reads as 'unreachable'"
        )
    rng = np.random.default_rng([seed, v])
    pairs = v * (v - 1)
    m = int(round(density * pairs))
    if m == 0:
        return np.empty((0, 3), dtype=np.int32)
    flat = (
        rng.choice(pairs, size=m, replace=False)
        if pairs < 50_000_000 or m > pairs // 4
        else _sparse_pairs(rng, pairs, m)
    )
    src, rest = np.divmod(flat, v - 1)
    dst = rest + (rest >= src)  # skip the diagonal
    w = rng.integers(0, max_weight + 1, size=len(flat))
    return np.stack([src, dst, w], axis=1).astype(np.int32)


def _sparse_pairs(rng: np.random.Generator, pairs: int, m: int) -> np.ndarray:
    """``m`` distinct pair indices of ``0 .. pairs - 1``, each equally likely, in increasing order,
    where a permutation of all the pairs would not fit in memory (V = 12,000 has 144 M): draws
    with about 10% to spare until ``m`` are distinct, then ``m`` of those at random. (Keeping the
    ``m`` smallest would leave the last sources without edges: 7% of them at V = 12,000.)"""
    found = np.empty(0, dtype=np.int64)
    while len(found) < m:
        found = np.sort(np.concatenate([found, rng.integers(0, pairs, size=int((m - len(found)) * 1.1) + 16)]))
        found = found[np.concatenate(([True], found[1:] != found[:-1]))]  # sorted: a repeat sits beside its twin
    return np.sort(found[rng.choice(len(found), size=m, replace=False)])


def to_matrix(v: int, edges: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The V x V distance matrix before any relaxation (shortest edge where edges repeat).

    ``out``, if given, is filled instead: it may be larger than V x V (a padded matrix), and its
    extra vertices come out unreachable with a zero diagonal."""
    dist = np.full((v, v), UNREACHABLE, dtype=np.int32) if out is None else out
    dist.fill(UNREACHABLE)
    if len(edges):
        np.minimum.at(dist, (edges[:, 0], edges[:, 1]), edges[:, 2])
    np.fill_diagonal(dist, 0)
    return dist


def solve_in_labs_convention(v: int, edges: np.ndarray, solve) -> np.ndarray:
    """Run a solver of the labs' -1-means-no-edge convention on a case, answer in NTHU's."""
    hostmem.require(
        matrix_bytes(v, 5), f"V = {v:,} (the distance matrix and its conversions, {v:,} x {v:,} int32 each)"
    )
    dist = to_matrix(v, edges)
    out = solve(np.where(dist == UNREACHABLE, NO_EDGE, dist).astype(np.int32))
    return np.where(out < 0, UNREACHABLE, out).astype(np.int32)


def solve_cpu(v: int, edges: np.ndarray) -> np.ndarray:
    """All-pairs shortest paths with the course's sequential C Floyd-Warshall."""
    return solve_in_labs_convention(v, edges, floyd_warshall_c)


def solve_numpy(v: int, edges: np.ndarray) -> np.ndarray:
    """The same answer from an independent implementation (vectorized min-plus), for checking."""
    return solve_in_labs_convention(v, edges, floyd_warshall_numpy)


def write_output(path: str | Path, dist: np.ndarray) -> None:
    Path(path).write_bytes(np.ascontiguousarray(dist, dtype="<i4").tobytes())


def read_output(path: str | Path, v: int) -> np.ndarray:
    data = Path(path).read_bytes()
    if len(data) != 4 * v * v:
        raise CaseFormatError(f"{path}: an output for V = {v} has {4 * v * v} bytes, this file {len(data)}")
    return np.frombuffer(data, dtype="<i4").reshape(v, v).astype(np.int32)
