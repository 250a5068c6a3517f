"""Where the project's files live, resolved from the package so any working directory works.

cudalab runs from a checkout (``make`` installs it editable): the kernels, notebooks, profiles and
recordings sit beside the package, not inside it. ``require_checkout`` says so plainly where
they are missing (a plain ``pip install .`` copies the package alone).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR: Path = Path(__file__).resolve().parent.parent
ROOT: Path = PACKAGE_DIR.parent
KERNELS_DIR: Path = ROOT / "kernels_cu"
NOTEBOOKS_DIR: Path = ROOT / "notebooks"
PARAMS_DIR: Path = ROOT / "params"
RESULTS_DIR: Path = ROOT / "results"
BUILD_DIR: Path = ROOT / "build"
# Scratch copies of kernels that a student edits beside the notebooks (cudalab.explore.scratch):
# not the project's source, so no fingerprint covers them.
SCRATCH_DIR: Path = NOTEBOOKS_DIR / "scratch"
# Written from git by tools/stamp_source.py (make wheelhouse), read where the tree has no .git.
SOURCE_STAMP: Path = ROOT / "wheelhouse" / "source-stamp.json"


def require_checkout() -> None:
    """Raise a clear error unless the kernels, notebooks and profiles are beside the package."""
    from cudalab.core.errors import CudalabError

    missing = [p.name for p in (KERNELS_DIR, NOTEBOOKS_DIR, PARAMS_DIR) if not p.is_dir()]
    if missing:
        raise CudalabError(
            f"cudalab runs from a checkout of its repository ({', '.join(missing)} not found "
            f"beside {PACKAGE_DIR}); clone it and use `make report` (an editable install)"
        )


def cache_dir() -> Path:
    """A per-user cache for compiled CPU references (override with CUDALAB_CACHE)."""
    base = os.environ.get("CUDALAB_CACHE") or os.environ.get("XDG_CACHE_HOME")
    path = Path(base) / "cudalab" if base else Path.home() / ".cache" / "cudalab"
    path.mkdir(parents=True, exist_ok=True)
    return path
