"""The classic k-means file formats (Northwestern's parallel k-means, the base of lab 004).

Input, binary: int32 N, int32 D, then N*D float32, row-major (native little-endian).
Input, text: one object per line, an id then D values, separated by blanks (blank lines skipped).
Output: ``<prefix>.cluster_centres``, a line per cluster, its index then D values ("%f "), and
``<prefix>.membership``, a line per object, its index then its cluster.

Every reader checks what it reads and names the file and the byte offset or line of the first
problem: wrong sizes, a truncated file, NaN or infinite values, a line with the wrong number of
values. ``CaseFormatError`` is raised for any of them; nothing is returned half-read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cudalab.core.errors import CaseFormatError
from cudalab.core.files import atomic_write

HEADER = np.dtype("<i4")
VALUE = np.dtype("<f4")
MAX_VALUES = 1 << 34  # 64 GiB of float32: refuse a header before allocating for it


def _check_shape(path: Path, n: int, d: int) -> None:
    if n <= 0:
        raise CaseFormatError(f"{path}: the header gives N = {n} objects; N must be at least 1")
    if d <= 0:
        raise CaseFormatError(f"{path}: the header gives D = {d} coordinates; D must be at least 1")
    if n * d > MAX_VALUES:
        raise CaseFormatError(
            f"{path}: the header gives N x D = {n} x {d} = {n * d:,} values "
            f"({4 * n * d / 2**30:.1f} GiB), more than this reader accepts"
        )


def _check_finite(path: Path, points: np.ndarray, where) -> None:
    bad = ~np.isfinite(points)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise CaseFormatError(
            f"{path}: {where(i, j)}: value {points[i, j]} is not a finite number ({int(bad.sum())} such values in all)"
        )


def read_binary(path: str | Path) -> np.ndarray:
    """The (N, D) float32 objects of a classic binary input file."""
    path = Path(path)
    size = path.stat().st_size
    if size < 8:
        raise CaseFormatError(f"{path}: {size} bytes; a binary input starts with two int32 (N, D), 8 bytes")
    with open(path, "rb") as f:
        n, d = (int(v) for v in np.frombuffer(f.read(8), dtype=HEADER))
        _check_shape(path, n, d)
        expected = 8 + 4 * n * d
        if size != expected:
            whole = (size - 8) // (4 * d)
            what = (
                f"truncated: the data ends inside object {whole} (byte offset {size})"
                if size < expected
                else f"{size - expected} bytes follow the last object (from byte offset {expected})"
            )
            raise CaseFormatError(
                f"{path}: the header gives N = {n}, D = {d}, so the file should be "
                f"{expected:,} bytes; it is {size:,}: {what}"
            )
        points = np.fromfile(f, dtype=VALUE, count=n * d).reshape(n, d).astype(np.float32, copy=False)
    _check_finite(path, points, lambda i, j: f"object {i}, coordinate {j} (byte offset {8 + 4 * (i * d + j)})")
    return points


def read_text(path: str | Path) -> np.ndarray:
    """The (N, D) float32 objects of a classic text input file (an id, then D values per line)."""
    path = Path(path)
    rows: list[list[float]] = []
    d = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if d is None:
                d = len(fields) - 1
                if d <= 0:
                    raise CaseFormatError(
                        f"{path}:{lineno}: an object is an id followed by its coordinates; "
                        f"this line has {len(fields)} field(s)"
                    )
            if len(fields) - 1 != d:
                raise CaseFormatError(f"{path}:{lineno}: {len(fields) - 1} values where the first object has {d}")
            try:
                rows.append([float(v) for v in fields[1:]])
            except ValueError:
                bad = next(v for v in fields[1:] if not _is_float(v))
                hint = "" if bad.isprintable() and "\ufffd" not in bad else " (a binary file? read it with -b)"
                raise CaseFormatError(f"{path}:{lineno}: {ascii(bad[:24])} is not a number{hint}") from None
    if not rows:
        raise CaseFormatError(f"{path}: no objects (the file is empty or blank)")
    points = np.asarray(rows, dtype=np.float64)
    _check_finite(path, points, lambda i, j: f"object {i}, coordinate {j}")
    with np.errstate(over="ignore"):
        as32 = points.astype(np.float32)
    _check_finite(path, as32, lambda i, j: f"object {i}, coordinate {j} (beyond float32's range)")
    return as32


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def read(path: str | Path, binary: bool) -> np.ndarray:
    """A classic input file, binary (``-b``) or text."""
    path = Path(path)
    if path.is_dir():
        raise CaseFormatError(f"{path}: a folder, not a file")
    if not path.is_file():
        raise CaseFormatError(f"{path}: no such file")
    return read_binary(path) if binary else read_text(path)


def write_binary(path: str | Path, points: np.ndarray) -> None:
    points = np.ascontiguousarray(points, dtype=VALUE)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.array(points.shape, dtype=HEADER).tofile(f)
            points.tofile(f)

    atomic_write(Path(path), write)


def write_text(path: str | Path, points: np.ndarray) -> None:
    """One line per object: its index, then its values with 6 decimals."""

    def write(tmp: Path) -> None:
        with open(tmp, "w") as f:
            for i, row in enumerate(np.asarray(points, dtype=np.float32)):
                f.write(f"{i} " + " ".join(f"{v:f}" for v in row) + "\n")

    atomic_write(Path(path), write)


def write_outputs(prefix: str | Path, centres: np.ndarray, membership: np.ndarray) -> tuple[Path, Path]:
    """``<prefix>.cluster_centres`` and ``<prefix>.membership``, as the classic code prints them."""
    prefix = Path(prefix)
    centres_path = prefix.with_name(prefix.name + ".cluster_centres")
    membership_path = prefix.with_name(prefix.name + ".membership")

    def centres_file(tmp: Path) -> None:
        with open(tmp, "w") as f:
            for i, row in enumerate(np.asarray(centres, dtype=np.float32)):
                f.write(f"{i} " + "".join(f"{v:f} " for v in row) + "\n")

    def membership_file(tmp: Path) -> None:
        with open(tmp, "w") as f:
            f.writelines(f"{i} {int(c)}\n" for i, c in enumerate(membership))

    atomic_write(centres_path, centres_file)
    atomic_write(membership_path, membership_file)
    return centres_path, membership_path


def read_centres(path: str | Path) -> np.ndarray:
    """A ``.cluster_centres`` file back as (K, D) float32 (for tests and comparisons)."""
    rows = [line.split()[1:] for line in Path(path).read_text().splitlines() if line.strip()]
    return np.asarray(rows, dtype=np.float32)


def read_membership(path: str | Path) -> np.ndarray:
    rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    return np.asarray([int(r[1]) for r in rows], dtype=np.int32)
