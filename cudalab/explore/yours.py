"""The "your measurements" table: every point a student measured, kept beside the chapter's data.

One tidy CSV per table, ``<lab.out_dir>/your_measurements_<table>.csv``, with the table's own
columns plus where each row came from, derived by code, never typed: when it was measured, on
which GPU (name and compute capability), at which commit of the project, from which kernel file
(its ``core.kernels.source_digest``: the file and the headers it includes) and whether that file
was a scratch copy. New rows are appended; earlier ones are kept.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

import pandas as pd

from cudalab.core.files import atomic_write
from cudalab.core.gpu import compute_capability, gpu_name
from cudalab.core.kernels import source_digest
from cudalab.core.paths import KERNELS_DIR
from cudalab.core.provenance import commit_state

PROVENANCE_COLUMNS = (
    "measured_utc",
    "gpu_name",
    "compute_capability",
    "git_commit",
    "git_dirty",
    "kernel_file",
    "kernel_source_digest",
    "scratch_copy",
)


def path(lab: Any, table: str) -> Path:
    """Where the chapter's measured points of ``table`` are kept."""
    return Path(lab.out_dir) / f"your_measurements_{table}.csv"


def provenance(kernel_file: str | Path | None) -> dict[str, Any]:
    """Where a row measured now comes from (``PROVENANCE_COLUMNS``); ``kernel_file`` is the file
    its kernel was built from ("" where the chapter times no kernel of its own)."""
    state = commit_state()
    file = Path(kernel_file) if kernel_file else None
    scratch = file is not None and file.resolve().parent != KERNELS_DIR.resolve()
    return {
        "measured_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "gpu_name": gpu_name() or "",
        "compute_capability": compute_capability() or "",
        "git_commit": state.get("git_commit", ""),
        "git_dirty": state.get("git_dirty"),
        "kernel_file": str(file) if scratch else (f"kernels_cu/{file.name}" if file else ""),
        "kernel_source_digest": source_digest(file) if file is not None and file.is_file() else "",
        "scratch_copy": scratch,
    }


def append(lab: Any, table: str, rows: pd.DataFrame, *, kernel_file: Path | None) -> Path:
    """Add ``rows`` (with their provenance) to the table's CSV, after the rows already there, and
    return its path. Rows of different columns (a skipped point has no time) share one header;
    provenance columns the rows carry already are kept."""
    target = path(lab, table)
    new = rows.assign(**{k: v for k, v in provenance(kernel_file).items() if k not in rows})
    old = load(lab, table)
    frame = pd.concat([old, new], ignore_index=True) if len(old) else new
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, lambda tmp: frame.to_csv(tmp, index=False))
    return target


def load(lab: Any, table: str) -> pd.DataFrame:
    """The points measured so far for ``table`` (an empty frame where none yet)."""
    target = path(lab, table)
    if not target.is_file() or target.stat().st_size == 0:
        return pd.DataFrame()
    return pd.read_csv(target, dtype={"compute_capability": str, "reason": str, "git_commit": str})
