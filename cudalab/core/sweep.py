"""Running a parameter sweep: one tidy row per point, skips recorded with reasons."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
from tqdm import tqdm

from cudalab.core.errors import MeasurementError


def progress(iterable: Iterable, desc: str, total: int | None = None, *, enabled: bool = True) -> Iterable:
    """A progress bar over ``iterable``, shown where ``enabled``. A chapter run by
    ``build_report.py`` passes its notebook parameter ``progress`` (off there: the build prints a
    line per chapter, and a bar would land in the report as stderr)."""
    return tqdm(iterable, desc=desc, total=total, disable=not enabled, leave=False)


def run_sweep(
    points: Iterable[dict[str, Any]],
    measure: Callable[[dict[str, Any]], dict[str, Any]],
    desc: str = "sweep",
    skip_on: tuple[type[BaseException], ...] = (),
    *,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Measure every point; a point that raises one of ``skip_on`` becomes a row with
    ``status='skipped'`` and the reason, and the sweep goes on. ``show_progress``: a bar over the
    points (``progress``)."""
    points = list(points)
    rows = []
    for point in progress(points, desc=desc, total=len(points), enabled=show_progress):
        try:
            row = {**point, **measure(point)}
            row.setdefault("status", "ok")
            row.setdefault("reason", "")
        except skip_on as exc:
            row = {**point, "status": "skipped", "reason": f"{type(exc).__name__}: {exc}".strip()}
        except Exception:
            raise MeasurementError(f"sweep point {point} failed:\n{traceback.format_exc()}") from None
        rows.append(row)
    return pd.DataFrame(rows)


def whole_numbers(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``frame`` with each of ``columns`` that reads as floats but holds whole numbers only made
    int64 again: a table's column with gaps (the baseline's row) reads as floats, and a block
    width of 16 would be named 16.0 in a legend."""
    for c in columns:
        col = frame[c]
        if pd.api.types.is_float_dtype(col) and col.notna().all() and (col % 1 == 0).all():
            frame = frame.assign(**{c: col.astype("int64")})
    return frame
