"""Where recordings live, and which one a replay reads.

A recording is ``results/<gpu-slug>/<profile>/``: one folder per chapter (its tables, its
``provenance.json`` and ``summary.json``) and ``recordings.json``, the log of the builds that wrote
them. Keyed by GPU and profile, so the same profile recorded on an H100 and an H200 sits side by
side and neither overwrites the other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from cudalab.core.errors import NoRecordedResults
from cudalab.core.paths import RESULTS_DIR

RECORDINGS = "recordings.json"
PROVENANCE = "provenance.json"
SUMMARY = "summary.json"
SCORECARD = "scorecard.json"  # the chapter's row of the report's summary page
ANSWERS = "answers.json"  # model answers to the chapter's discussion questions, from this run's data


def gpu_slug(gpu_name: str) -> str:
    """A folder name for a GPU: 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    slug = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")
    return slug or "unknown-gpu"


@dataclass(frozen=True)
class Recording:
    """One profile as recorded on one GPU."""

    path: Path
    gpu: str  # the folder name (slug)
    gpu_name: str  # as the recording names it
    profile: str
    latest_utc: str  # when its newest chapter was recorded

    def describe(self) -> str:
        return (
            f"{self.profile} on {self.gpu_name} (results/{self.gpu}/{self.profile}, newest chapter {self.latest_utc})"
        )


def _read(path: Path) -> Recording:
    log = json.loads((path / RECORDINGS).read_text()) if (path / RECORDINGS).is_file() else {}
    chapters = log.get("chapters", {})
    dates = [c.get("build", {}).get("built_utc", "") for c in chapters.values()]
    names = [c.get("gpu_name") for c in chapters.values() if c.get("gpu_name")]
    return Recording(
        path,
        path.parent.name,
        log.get("gpu_name") or (names[0] if names else path.parent.name),
        path.name,
        max(dates, default=""),
    )


def all_recordings(results: Path = RESULTS_DIR) -> list[Recording]:
    """Every recording under ``results``, sorted by GPU and profile."""
    if not results.is_dir():
        return []
    return [_read(p) for p in sorted(results.glob("*/*")) if p.is_dir() and (p / RECORDINGS).is_file()]


def find(profile: str, results: Path = RESULTS_DIR, gpu: str | None = None) -> tuple[Recording, str]:
    """The recording a replay of ``profile`` reads, and a sentence saying why that one.

    ``gpu`` picks by GPU (its folder name, or any part of its name, case-insensitive); without it,
    the only recording of the profile, or the newest of several."""
    mine = [r for r in all_recordings(results) if r.profile == profile]
    have = ", ".join(f"{r.profile} on {r.gpu}" for r in all_recordings(results)) or "none"
    if gpu:
        want = gpu.lower()
        mine = [r for r in mine if want == r.gpu or want in r.gpu_name.lower() or gpu_slug(gpu) in r.gpu]
    if not mine:
        on = f" on a GPU matching {gpu!r}" if gpu else ""
        raise NoRecordedResults(
            f"no recorded results for profile {profile!r}{on} in {results}; recorded: {have}. "
            f"Record them on a GPU host with `python build_report.py --gpu {profile} --record`"
        )
    newest = max(mine, key=lambda r: r.latest_utc)
    if len(mine) == 1:
        return newest, f"the recording of {newest.describe()}"
    others = ", ".join(r.gpu for r in mine if r is not newest)
    return newest, (
        f"the newest of {len(mine)} recordings of {profile!r}: {newest.describe()} "
        f"(also recorded on {others}; choose with --from GPU)"
    )


def differing_parameters(recorded: dict, requested: dict) -> list[tuple[str, object, object]]:
    """(name, requested value, recorded value) of each requested parameter that a recorded chapter
    (its ``provenance.json``, ``recorded``) was made with another value of; one it did not record
    (a notebook default) is not compared."""
    then = recorded.get("parameters") or {}
    return [(k, v, then[k]) for k, v in requested.items() if k in then and then[k] != v]


def not_shown(chapter_dir: Path, requested: dict) -> list[str]:
    """Each requested parameter that a recorded chapter was made with another value of: in a
    replay it cannot take effect, and the build and the notebook say so."""
    path = chapter_dir / PROVENANCE
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    return [
        f"{k} = {v!r} requested, recorded with {then!r}" for k, v, then in differing_parameters(recorded, requested)
    ]
