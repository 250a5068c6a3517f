"""Running a parameter sweep: one tidy row per point, skips recorded with reasons."""

from __future__ import annotations

import os
import traceback
from typing import Any, Callable, Iterable

import pandas as pd
from tqdm import tqdm


def progress(iterable: Iterable, desc: str, total: int | None = None) -> Iterable:
    """A progress bar for long sweeps; quiet when build_report runs the notebook
    (it shows its own progress), unless CUDALAB_PROGRESS=1."""
    batch = os.environ.get("CUDALAB_BATCH") == "1" and os.environ.get("CUDALAB_PROGRESS") != "1"
    return tqdm(iterable, desc=desc, total=total, disable=batch, leave=False)


def run_sweep(points: Iterable[dict[str, Any]], measure: Callable[[dict[str, Any]], dict[str, Any]],
              desc: str = "sweep", skip_on: tuple[type[BaseException], ...] = ()) -> pd.DataFrame:
    """Measure every point; a point that raises one of ``skip_on`` becomes a row with
    ``status='skipped'`` and the reason, and the sweep goes on."""
    points = list(points)
    rows = []
    for point in progress(points, desc=desc, total=len(points)):
        try:
            row = {**point, **measure(point)}
            row.setdefault("status", "ok")
            row.setdefault("reason", "")
        except skip_on as exc:
            row = {**point, "status": "skipped", "reason": f"{type(exc).__name__}: {exc}".strip()}
        except Exception:
            raise RuntimeError(f"sweep point {point} failed:\n{traceback.format_exc()}") from None
        rows.append(row)
    return pd.DataFrame(rows)
