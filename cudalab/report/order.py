"""In which order a Dask build submits its chapters: the longest first, so that the last chapter
to finish is not a long one started late (issue 45).

Chapter 00 measures the ceilings the others read, so where chapters measure it runs first
(``cluster``'s first wave); the others follow by their seconds in the last recorded build of the
profile (``results/build_times/<machine>-<profile>.json``, written by ``tools/bench_build.py``),
its cold build where it has one. A profile with no record takes another profile's record on a
GPU (the same chapters, other sizes: their order is the best guess there is); a chapter no
record names goes first, as a long one would, in chapter order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

BUILD_TIMES = "build_times"


def _chapter_seconds(record: dict) -> dict[str, float]:
    """The chapters' seconds of a record's measured build: the cold one where there is one."""
    builds = record.get("builds") or {}
    for label in ("cold", *builds):
        seconds = (builds.get(label) or {}).get("chapter_seconds") or {}
        if seconds:
            return {str(k): float(v) for k, v in seconds.items()}
    return {}


def recorded_seconds(profile: str, results: Path) -> dict[str, float]:
    """Each chapter's seconds in the newest recorded build of ``profile`` on a GPU; where there is
    none, in the newest of any profile on a GPU; {} without a record."""
    folder = Path(results) / BUILD_TIMES
    records = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        on_gpu = str((record.get("machine") or {}).get("gpu_name", "none")) != "none"
        seconds = _chapter_seconds(record)
        if on_gpu and seconds:
            records.append((record.get("profile") == profile, str(record.get("date_utc", "")), seconds))
    if not records:
        return {}
    return max(records, key=lambda r: (r[0], r[1]))[2]


def longest_first(chapters: Sequence[str], seconds: dict[str, float]) -> list[str]:
    """``chapters`` (ids, in chapter order) as a Dask build submits them: those no record names
    first, in chapter order, then the others by their recorded seconds, longest first."""
    unknown = [c for c in chapters if c not in seconds]
    known = sorted((c for c in chapters if c in seconds), key=lambda c: -seconds[c])
    return [*unknown, *known]
