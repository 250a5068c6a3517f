"""Where the project's files live, resolved from the package so any cwd works."""

from __future__ import annotations

import os
from pathlib import Path

ROOT: Path = Path(__file__).resolve().parent.parent
KERNELS_DIR: Path = ROOT / "kernels_cu"
NOTEBOOKS_DIR: Path = ROOT / "notebooks"
PARAMS_DIR: Path = ROOT / "params"
RESULTS_DIR: Path = ROOT / "results"
BUILD_DIR: Path = ROOT / "build"


def cache_dir() -> Path:
    """A per-user cache for compiled CPU references (override with CUDALAB_CACHE)."""
    base = os.environ.get("CUDALAB_CACHE") or os.environ.get("XDG_CACHE_HOME")
    path = Path(base) / "cudalab" if base else Path.home() / ".cache" / "cudalab"
    path.mkdir(parents=True, exist_ok=True)
    return path
